// src/ir/graph_ext.cpp -- (placeholder)
