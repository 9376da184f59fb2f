// src/ir/builders_elementwise.cpp -- (placeholder)
