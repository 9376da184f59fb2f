// src/io/npy.cpp -- (placeholder)
