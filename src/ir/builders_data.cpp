// src/ir/builders_data.cpp -- (placeholder)
