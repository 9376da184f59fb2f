// include/rlx/random.hpp -- rlx::random: random tensors from explicit keys, as jax.random.
//
//   rlx::random::Key key(42);                        // or pass the seed itself: uniform(42, ...)
//   auto [k1, k2] = rlx::random::split2(key);        // independent streams
//   Tensor w = rlx::random::normal(k1, {784, 128}, 0.0, 0.05);
//   Tensor order = rlx::random::permutation(k2, 60000);
//
// A key names a stream; the same key and request give the same values on every machine, every
// backend and every thread count (each element hashes its own counter: splitmix64, see
// src/support/counter_rng.hpp). Nothing is global: reusing a key reuses its values, as in JAX;
// split or fold_in to get new ones.
//
// A key is either a host value (a seed: draws are computed when the call is made, a constant of
// any trace) or a Tensor, an i64 scalar holding the key's 64 bits (jax.random.key_data /
// wrap_key_data): draws, splits and fold_ins of a Tensor key record `random` ops, so inside
// rlx::jit a key passed as an argument gives fresh values each call without recompiling:
//
//   auto step = rlx::jit([](Tensor x, Tensor key) { return rlx::nn::dropout(x, 0.5, key); });
//   step(x, rlx::random::key_data(rlx::random::fold_in(base, i)));
//
// Host and Tensor keys with the same bits give the same values, bit for bit.
#pragma once

#include "rlx/tensor.hpp"

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

namespace rlx::random {

/// A PRNG key (jax.random.PRNGKey). Constructible from a seed, so every function also takes a
/// plain integer seed, and from an i64 scalar Tensor (a traced key inside rlx::jit).
struct Key {
  uint64_t value = 0; ///< the key's bits when `tensor` is undefined
  Tensor tensor;      ///< defined: the key is this i64 scalar (its value known when run)
  Key() = default;
  Key(uint64_t seed); // NOLINT: implicit, so a seed is a key
  Key(Tensor key);    // NOLINT: implicit, so a traced key is a key
  /// Whether the key is a Tensor (draws from it are recorded ops).
  bool is_tensor() const { return tensor.defined(); }
  /// Host keys compare by value; a Tensor key equals no key (its value is not known here).
  friend bool operator==(const Key& a, const Key& b) {
    return !a.is_tensor() && !b.is_tensor() && a.value == b.value;
  }
};

/// The key's bits as an i64 scalar tensor (jax.random.key_data): a host key's value, or a
/// Tensor key itself. Pass it into rlx::jit; Key(tensor) wraps it back.
Tensor key_data(const Key& k, Loc loc = Loc::current());

/// n keys independent of k and of each other (jax.random.split).
std::vector<Key> split(Key k, int64_t n = 2, Loc loc = Loc::current());
/// split(k, 2) as a pair, for structured bindings.
std::pair<Key, Key> split2(Key k, Loc loc = Loc::current());
/// A key derived from k and an integer (jax.random.fold_in): one stream per step or per rank.
Key fold_in(Key k, uint64_t data, Loc loc = Loc::current());

/// Uniform in [lo, hi) (numpy's uniform, jax's minval/maxval); a float dtype.
Tensor uniform(Key k, Dims sizes, double lo = 0.0, double hi = 1.0, DType dtype = DType::F32,
               Loc loc = Loc::current());
/// Normal with mean mu and standard deviation sigma; a float dtype.
Tensor normal(Key k, Dims sizes, double mu = 0.0, double sigma = 1.0, DType dtype = DType::F32,
              Loc loc = Loc::current());
/// Integers uniform in [lo, hi) (numpy's integers / torch.randint), without modulo bias.
Tensor randint(Key k, int64_t lo, int64_t hi, Dims sizes, DType dtype = DType::I64,
               Loc loc = Loc::current());
/// A random ordering of 0..n-1 (i64), every ordering equally likely.
Tensor permutation(Key k, int64_t n, Loc loc = Loc::current());
/// x with its entries along axis shuffled (numpy's permutation of an array).
Tensor permutation(Key k, const Tensor& x, int64_t axis = 0, Loc loc = Loc::current());
/// Samples of 0..n-1 (i64), with or without replacement; `p` are probabilities of the n
/// choices (normalized by their sum). Without replacement and with p, the key must be a host
/// key and p's values known (the draws are sequential on the host).
Tensor choice(Key k, int64_t n, Dims sizes, bool replace = true,
              std::optional<Tensor> p = std::nullopt, Loc loc = Loc::current());
/// Samples of the entries of a along axis 0 (numpy's choice of an array).
Tensor choice(Key k, const Tensor& a, Dims sizes, bool replace = true,
              std::optional<Tensor> p = std::nullopt, Loc loc = Loc::current());
/// True with probability p (bool), sizes given / p's shape.
Tensor bernoulli(Key k, double p, Dims sizes, Loc loc = Loc::current());
Tensor bernoulli(Key k, const Tensor& p, Loc loc = Loc::current());
/// Standard Gumbel and exponential (rate 1) values; a float dtype.
Tensor gumbel(Key k, Dims sizes, DType dtype = DType::F32, Loc loc = Loc::current());
Tensor exponential(Key k, Dims sizes, DType dtype = DType::F32, Loc loc = Loc::current());
/// Indices drawn with probabilities softmax(logits) along axis (jax.random.categorical), i64,
/// the axis removed; by the Gumbel-max trick, so logits may be traced.
Tensor categorical(Key k, const Tensor& logits, int64_t axis = -1, Loc loc = Loc::current());

} // namespace rlx::random

namespace rlx::nn {

/// torch.nn.functional.dropout: in training, each element is zeroed with probability p and the
/// others scaled by 1 / (1 - p) (p = 1 zeroes everything); otherwise x itself. The mask is
/// random::bernoulli(key, 1 - p, x's sizes), so a Tensor key works inside rlx::jit.
Tensor dropout(const Tensor& x, double p, random::Key key, bool training = true,
               Loc loc = Loc::current());

} // namespace rlx::nn
