// src/ir/builders_nn.cpp -- (placeholder)
