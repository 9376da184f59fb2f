// src/support/counter_rng.hpp -- the counter-based random numbers of rlx::random and of the IR's
// Random family: element i of a draw from key k is a pure function of (k, i), so the host draw
// (src/frontend/random.cpp), the interpreter's kernel and the JIT (which runs that kernel) give
// the same bits whatever order or thread computes them. Both sides call draw() and
// sample_rows() below (src/interp/random.cpp), never a copy of them.
#pragma once

#include "rlx/buffer.hpp"
#include "rlx/ir/attrs.hpp"

#include <cstdint>

namespace rlx::rng {

/// splitmix64's finalizer: a bijection of 64-bit words that mixes every input bit into every
/// output bit.
inline uint64_t mix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

/// 64 random bits for counter i of the stream named by key.
inline uint64_t bits(uint64_t key, uint64_t i) { return mix(mix(key) ^ i); }

/// Uniform in [0, 1) from 53 random bits.
inline double unit(uint64_t key, uint64_t i) { return double(bits(key, i) >> 11) * 0x1.0p-53; }

/// Uniform in (0, 1): neither end, so logarithms of it and of 1 - it are finite.
inline double open_unit(uint64_t key, uint64_t i) {
  return (double(bits(key, i) >> 11) + 0.5) * 0x1.0p-53;
}

/// Child i of key (jax.random.split): the parent hashed in a domain of its own (the constant),
/// so a child's stream is neither its parent's nor a seed's.
inline uint64_t split_child(uint64_t key, uint64_t i) {
  return mix(key ^ 0x243F6A8885A308D3ull) ^ mix(i + 1);
}

/// The key derived from key and data (jax.random.fold_in).
inline uint64_t fold_in(uint64_t key, uint64_t data) {
  return mix(mix(key ^ 0x13198A2E03707344ull) ^ data);
}

/// Element i of a standard Gumbel draw.
double gumbel(uint64_t key, uint64_t i);

/// A node of kind random's value for key: a buffer of `out`'s shape filled as attrs ask (the
/// shape rule has checked them).
Buffer draw(const ir::RandomAttrs& attrs, uint64_t key, const ir::Shape& out);

/// The first k entries of a uniformly random ordering of 0..n-1 (Fisher-Yates, forward).
std::vector<int64_t> shuffled_prefix(uint64_t key, int64_t n, int64_t k);

/// sample's value: one f32 id per row of logits [B, V] (semantics in ops.def), keyed by key.
Buffer sample_rows(const Buffer& logits, const ir::SampleAttrs& attrs, uint64_t key);

} // namespace rlx::rng
