// src/frontend/random.cpp -- rlx::random: keys, and random tensors drawn from them.
//
// Every value is a pure function of (key, element counter): splitmix64's finalizer hashes the
// pair, so results do not depend on the order, the thread or the machine that computes them.
// Key-only draws fill a host buffer when called (a constant of the graph, like rlx::rand); the
// draws that take Tensors (bernoulli with a probability tensor, choice with weights,
// categorical) combine such a constant with recorded ops, so their Tensor operands may be traced.
#include "rlx/random.hpp"
#include "frontend/impl.hpp"
#include "frontend/ops.hpp"

#include <cmath>
#include <limits>
#include <numbers>
#include <numeric>

namespace rlx::random {

namespace {

/// splitmix64's finalizer: a bijection of 64-bit words that mixes every input bit into every
/// output bit.
uint64_t mix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

/// 64 random bits for counter i of the stream named by key.
uint64_t bits(uint64_t key, uint64_t i) { return mix(mix(key) ^ i); }

/// Uniform in [0, 1) from 53 random bits.
double unit(uint64_t key, uint64_t i) { return double(bits(key, i) >> 11) * 0x1.0p-53; }

/// Uniform in (0, 1): neither end, so logarithms of it and of 1 - it are finite.
double open_unit(uint64_t key, uint64_t i) {
  return (double(bits(key, i) >> 11) + 0.5) * 0x1.0p-53;
}

/// The stream of a rejection sampler's attempt `round` (round 0 is the key's own stream).
uint64_t round_key(uint64_t key, uint64_t round) {
  return round == 0 ? key : mix(key ^ (round * 0xD1B54A32D192ED03ull));
}

/// Uniform in [0, m) (m > 0) for counter i, without modulo bias: a draw below 2^64 mod m is
/// rejected and the counter is drawn again from the next round's stream.
uint64_t below(uint64_t key, uint64_t i, uint64_t m) {
  const uint64_t reject_under = (0 - m) % m; // 2^64 mod m
  for (uint64_t round = 0;; ++round) {
    uint64_t r = bits(round_key(key, round), i);
    if (r >= reject_under) return r % m;
  }
}

Tensor computed(Buffer b, const Loc& loc) {
  return Tensor(rlx::detail::make_computed(std::move(b), loc));
}

/// A zeroed buffer of sizes and dtype after checking the request (float dtypes only when
/// `floats`).
Buffer checked_buffer(const Dims& sizes, DType dtype, bool floats, std::string_view what,
                      const Loc& loc) {
  rlx::detail::check_sizes(sizes, dtype, what, loc);
  if (floats && !ir::is_float(dtype))
    fail(ErrorKind::Type, what, ": needs a float dtype, got ", ir::dtype_name(dtype),
         rlx::detail::at_loc(loc));
  return Buffer(Shape::of(sizes, dtype));
}

/// Stores v, kept below hi in the buffer's dtype: rounding lo + (hi - lo) u to f32 may reach hi.
void store_below(Buffer& b, int64_t i, double v, double lo, double hi) {
  b.set_f64(i, v);
  if (b.get_f64(i) < hi || !(hi > lo)) return;
  if (b.dtype() == DType::F64)
    b.set_f64(i, std::nextafter(hi, lo));
  else
    b.set_f64(i, double(std::nextafter(float(hi), float(lo))));
  if (b.get_f64(i) < lo) b.set_f64(i, lo); // [lo, hi) holds no value of a narrow dtype
}

/// A standard normal value for counter i: Box-Muller on pairs, element 2j the cosine branch of
/// pair j and element 2j+1 its sine branch.
double standard_normal(uint64_t key, uint64_t i) {
  uint64_t pair = i / 2;
  double u1 = 1.0 - unit(key, 2 * pair); // (0, 1]
  double u2 = unit(key, 2 * pair + 1);
  double r = std::sqrt(-2.0 * std::log(u1));
  double angle = 2.0 * std::numbers::pi * u2;
  return r * (i % 2 == 0 ? std::cos(angle) : std::sin(angle));
}

/// The product of sizes (checked already).
int64_t count_of(const Dims& sizes) {
  return std::accumulate(sizes.begin(), sizes.end(), int64_t(1), std::multiplies<>());
}

/// The first k entries of a uniformly random ordering of 0..n-1 (Fisher-Yates, forward).
std::vector<int64_t> shuffled_prefix(uint64_t key, int64_t n, int64_t k) {
  std::vector<int64_t> v(static_cast<std::size_t>(n));
  std::iota(v.begin(), v.end(), int64_t(0));
  for (int64_t i = 0; i < k && i + 1 < n; ++i) {
    auto j = i + int64_t(below(key, uint64_t(i), uint64_t(n - i)));
    std::swap(v[std::size_t(i)], v[std::size_t(j)]);
  }
  v.resize(std::size_t(k));
  return v;
}

Tensor i64_tensor(const std::vector<int64_t>& v, const Dims& sizes, const Loc& loc) {
  return computed(Buffer::from_i64(Shape::of(sizes, DType::I64), v), loc);
}

/// p as a 1-D float tensor of n weights, or an rlx::Error naming `what`.
Tensor checked_weights(const Tensor& p, int64_t n, std::string_view what, const Loc& loc) {
  if (p.ndim() != 1 || p.size(0, loc) != n)
    fail(ErrorKind::Shape, what, ": p must be 1-D with one weight per choice (", n, "), got ",
         ir::short_str(p.shape()), rlx::detail::at_loc(loc));
  return p.cast(rlx::detail::float_dtype(p.dtype()), loc);
}

} // namespace

Key::Key(uint64_t seed) : value(seed) {}

std::vector<Key> split(Key k, int64_t n, Loc loc) {
  if (n < 0)
    fail(ErrorKind::Value, "random::split: n must be non-negative, got ", n,
         rlx::detail::at_loc(loc));
  std::vector<Key> out;
  out.reserve(std::size_t(n));
  // Children hash the parent with their index in a domain of their own (the constant), so a
  // child's stream is neither its parent's nor a seed's.
  for (int64_t i = 0; i < n; ++i)
    out.emplace_back(mix(k.value ^ 0x243F6A8885A308D3ull) ^ mix(uint64_t(i) + 1));
  return out;
}

std::pair<Key, Key> split2(Key k) {
  std::vector<Key> ks = split(k, 2);
  return {ks[0], ks[1]};
}

Key fold_in(Key k, uint64_t data) { return Key(mix(mix(k.value ^ 0x13198A2E03707344ull) ^ data)); }

Tensor uniform(Key k, Dims sizes, double lo, double hi, DType dtype, Loc loc) {
  if (!(std::isfinite(lo) && std::isfinite(hi) && lo <= hi))
    fail(ErrorKind::Value, "random::uniform: needs finite lo <= hi, got [", lo, ", ", hi, ")",
         rlx::detail::at_loc(loc));
  Buffer b = checked_buffer(sizes, dtype, true, "random::uniform", loc);
  for (int64_t i = 0; i < b.numel(); ++i)
    store_below(b, i, lo + (hi - lo) * unit(k.value, uint64_t(i)), lo, hi);
  return computed(std::move(b), loc);
}

Tensor normal(Key k, Dims sizes, double mu, double sigma, DType dtype, Loc loc) {
  if (!(std::isfinite(mu) && std::isfinite(sigma) && sigma >= 0))
    fail(ErrorKind::Value, "random::normal: needs a finite mu and sigma >= 0, got (", mu, ", ",
         sigma, ")", rlx::detail::at_loc(loc));
  Buffer b = checked_buffer(sizes, dtype, true, "random::normal", loc);
  for (int64_t i = 0; i < b.numel(); ++i)
    b.set_f64(i, mu + sigma * standard_normal(k.value, uint64_t(i)));
  return computed(std::move(b), loc);
}

Tensor randint(Key k, int64_t lo, int64_t hi, Dims sizes, DType dtype, Loc loc) {
  if (lo >= hi)
    fail(ErrorKind::Value, "random::randint: needs lo < hi, got [", lo, ", ", hi, ")",
         rlx::detail::at_loc(loc));
  if (!ir::is_int(dtype))
    fail(ErrorKind::Type, "random::randint: needs an integer dtype, got ", ir::dtype_name(dtype),
         rlx::detail::at_loc(loc));
  Buffer b = checked_buffer(sizes, dtype, false, "random::randint", loc);
  Buffer range(Shape::of(std::vector<int64_t>{2}, dtype)); // do lo and hi - 1 fit the dtype?
  range.set_i64(0, lo);
  range.set_i64(1, hi - 1);
  if (range.get_i64(0) != lo || range.get_i64(1) != hi - 1)
    fail(ErrorKind::Value, "random::randint: [", lo, ", ", hi, ") does not fit ",
         ir::dtype_name(dtype), rlx::detail::at_loc(loc));
  const uint64_t m = uint64_t(hi) - uint64_t(lo); // < 2^64 since lo < hi
  for (int64_t i = 0; i < b.numel(); ++i)
    b.set_i64(i, int64_t(uint64_t(lo) + below(k.value, uint64_t(i), m)));
  return computed(std::move(b), loc);
}

Tensor permutation(Key k, int64_t n, Loc loc) {
  if (n < 0)
    fail(ErrorKind::Value, "random::permutation: n must be non-negative, got ", n,
         rlx::detail::at_loc(loc));
  rlx::detail::check_sizes({n}, DType::I64, "random::permutation", loc);
  return i64_tensor(shuffled_prefix(k.value, n, n), {n}, loc);
}

Tensor permutation(Key k, const Tensor& x, int64_t axis, Loc loc) {
  int64_t ax = rlx::detail::norm_axis(axis, x.ndim(), "random::permutation", x.shape(), loc);
  return take(x, permutation(k, x.size(ax, loc), loc), ax, loc);
}

Tensor choice(Key k, int64_t n, Dims sizes, bool replace, std::optional<Tensor> p, Loc loc) {
  rlx::detail::check_sizes(sizes, DType::I64, "random::choice", loc);
  const int64_t count = count_of(sizes);
  if (n <= 0 && count > 0)
    fail(ErrorKind::Value, "random::choice: cannot take ", count, " samples from ", n, " choices",
         rlx::detail::at_loc(loc));
  if (!replace && count > n)
    fail(ErrorKind::Value, "random::choice: cannot take ", count, " samples from ", n,
         " choices without replacement", rlx::detail::at_loc(loc));
  if (!p) {
    if (replace) return randint(k, 0, std::max<int64_t>(n, 1), sizes, DType::I64, loc);
    return i64_tensor(shuffled_prefix(k.value, n, count), sizes, loc);
  }
  Tensor w = checked_weights(*p, n, "random::choice", loc);
  if (replace) {
    // Inverse CDF: the sample is the number of cumulative weights (all but the last) that the
    // uniform draw reaches. u < 1 keeps it below n even when the sum rounds.
    Tensor cdf = cumsum(w, 0, false, loc) / w.sum({}, false, loc);
    Tensor inner = slice(cdf, 0, 0, n - 1, 1, loc);
    Dims usizes = sizes;
    usizes.push_back(1);
    Tensor u = uniform(k, usizes, 0.0, 1.0, w.dtype(), loc);
    return sum((u >= inner).cast(DType::I64, loc), {-1}, false, loc);
  }
  // Without replacement: one draw at a time from the weights left, which needs the weights'
  // values on the host.
  if (w.is_traced())
    fail(ErrorKind::Value,
         "random::choice: weights without replacement need their values on the host; inside "
         "rlx::jit pass them as an argument of a call outside the trace",
         rlx::detail::at_loc(loc));
  std::vector<double> left = w.to_vector<double>(loc);
  for (double x : left)
    if (!(x >= 0) || !std::isfinite(x))
      fail(ErrorKind::Value, "random::choice: weights must be finite and non-negative",
           rlx::detail::at_loc(loc));
  std::vector<int64_t> out(static_cast<std::size_t>(count));
  for (int64_t s = 0; s < count; ++s) {
    double total = std::accumulate(left.begin(), left.end(), 0.0);
    if (!(total > 0))
      fail(ErrorKind::Value, "random::choice: only ", s, " choices have nonzero weight, ", count,
           " samples were asked without replacement", rlx::detail::at_loc(loc));
    double target = unit(k.value, uint64_t(s)) * total;
    int64_t pick = 0;
    double acc = 0;
    for (int64_t j = 0; j < n; ++j) { // the last nonzero weight takes any rounding leftover
      if (left[std::size_t(j)] <= 0) continue;
      pick = j;
      acc += left[std::size_t(j)];
      if (target < acc) break;
    }
    out[std::size_t(s)] = pick;
    left[std::size_t(pick)] = 0;
  }
  return i64_tensor(out, sizes, loc);
}

Tensor choice(Key k, const Tensor& a, Dims sizes, bool replace, std::optional<Tensor> p, Loc loc) {
  if (a.ndim() == 0)
    fail(ErrorKind::Shape, "random::choice: a must have at least one axis, got ",
         ir::short_str(a.shape()), rlx::detail::at_loc(loc));
  return take(a, choice(k, a.size(0, loc), std::move(sizes), replace, std::move(p), loc), 0, loc);
}

Tensor bernoulli(Key k, double p, Dims sizes, Loc loc) {
  if (!(p >= 0 && p <= 1))
    fail(ErrorKind::Value, "random::bernoulli: p must be in [0, 1], got ", p,
         rlx::detail::at_loc(loc));
  Buffer b = checked_buffer(sizes, DType::Bool, false, "random::bernoulli", loc);
  for (int64_t i = 0; i < b.numel(); ++i) b.set_f64(i, unit(k.value, uint64_t(i)) < p ? 1 : 0);
  return computed(std::move(b), loc);
}

Tensor bernoulli(Key k, const Tensor& p, Loc loc) {
  DType t = p.dtype() == DType::F64 ? DType::F64 : DType::F32;
  if (!ir::is_float(p.dtype()))
    fail(ErrorKind::Type, "random::bernoulli: p must be a float tensor, got ",
         ir::short_str(p.shape()), rlx::detail::at_loc(loc));
  return uniform(k, p.sizes(loc), 0.0, 1.0, t, loc) < p;
}

Tensor gumbel(Key k, Dims sizes, DType dtype, Loc loc) {
  Buffer b = checked_buffer(sizes, dtype, true, "random::gumbel", loc);
  for (int64_t i = 0; i < b.numel(); ++i)
    b.set_f64(i, -std::log(-std::log(open_unit(k.value, uint64_t(i)))));
  return computed(std::move(b), loc);
}

Tensor exponential(Key k, Dims sizes, DType dtype, Loc loc) {
  Buffer b = checked_buffer(sizes, dtype, true, "random::exponential", loc);
  for (int64_t i = 0; i < b.numel(); ++i) b.set_f64(i, -std::log(open_unit(k.value, uint64_t(i))));
  return computed(std::move(b), loc);
}

Tensor categorical(Key k, const Tensor& logits, int64_t axis, Loc loc) {
  if (!ir::is_float(logits.dtype()))
    fail(ErrorKind::Type, "random::categorical: logits must be a float tensor, got ",
         ir::short_str(logits.shape()), rlx::detail::at_loc(loc));
  int64_t ax =
      rlx::detail::norm_axis(axis, logits.ndim(), "random::categorical", logits.shape(), loc);
  // Gumbel-max: argmax(logits + g) is distributed as softmax(logits).
  Tensor g =
      gumbel(k, logits.sizes(loc), logits.dtype() == DType::F64 ? DType::F64 : DType::F32, loc);
  return argmax(logits + g, ax, false, loc);
}

} // namespace rlx::random
