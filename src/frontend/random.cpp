// src/frontend/random.cpp -- rlx::random: keys, and random tensors drawn from them.
//
// Every value is a pure function of (key, element counter) (src/support/counter_rng.hpp), so
// results do not depend on the order, the thread or the machine that computes them. A host key's
// draw fills a buffer when called (a constant of any trace, like rlx::rand); a Tensor key's draw
// records a `random` node whose kernel calls the same rng::draw, so the two agree bit for bit.
// The draws that take Tensors (bernoulli with a probability tensor, choice with weights,
// categorical) combine such draws with recorded ops, so their Tensor operands may be traced too.
#include "rlx/random.hpp"
#include "frontend/impl.hpp"
#include "frontend/ops.hpp"
#include "rlx/apply.hpp"
#include "support/counter_rng.hpp"

#include <cmath>
#include <limits>
#include <numeric>

namespace rlx::random {

namespace {

Tensor computed(Buffer b, const Loc& loc) {
  return Tensor(rlx::detail::make_computed(std::move(b), loc));
}

/// The draw attrs ask for from key k: on the host for a host key, a recorded random node for a
/// Tensor key (its shape rule checks the key; the caller has checked the rest, naming itself).
Tensor drawn(const Key& k, const ir::RandomAttrs& a, const Loc& loc) {
  if (!k.is_tensor()) return computed(rng::draw(a, k.value, Shape::of(a.sizes, a.dtype)), loc);
  return apply(
      {k.tensor},
      [&](ir::Graph& g, std::span<const ir::NodeId> ids) {
        return g.add_inferred(ir::Op(ir::OpKind::Random, a), {ids[0]}, loc);
      },
      loc);
}

ir::RandomAttrs attrs_of(ir::RandomDist dist, const Dims& sizes, DType dtype) {
  ir::RandomAttrs a;
  a.dist = dist;
  a.sizes = sizes;
  a.dtype = dtype;
  return a;
}

/// Checks sizes and dtype (float dtypes only when `floats`), naming `what`.
void check_request(const Dims& sizes, DType dtype, bool floats, std::string_view what,
                   const Loc& loc) {
  rlx::detail::check_sizes(sizes, dtype, what, loc);
  if (floats && !ir::is_float(dtype))
    fail(ErrorKind::Type, what, ": needs a float dtype, got ", ir::dtype_name(dtype),
         rlx::detail::at_loc(loc));
}

/// The product of sizes (checked already).
int64_t count_of(const Dims& sizes) {
  return std::accumulate(sizes.begin(), sizes.end(), int64_t(1), std::multiplies<>());
}

/// The first `count` entries of a random ordering of 0..n-1, shaped as sizes.
Tensor shuffled(const Key& k, int64_t n, const Dims& sizes, const Loc& loc) {
  ir::RandomAttrs a = attrs_of(ir::RandomDist::Permutation, {count_of(sizes)}, DType::I64);
  a.ihi = n;
  Tensor flat = drawn(k, a, loc);
  return sizes.size() == 1 ? flat : reshape(flat, sizes, loc);
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
Key::Key(Tensor key) : tensor(std::move(key)) {}

Tensor key_data(const Key& k, Loc loc) {
  if (k.is_tensor()) return k.tensor;
  return i64_tensor({int64_t(k.value)}, {}, loc);
}

std::vector<Key> split(Key k, int64_t n, Loc loc) {
  if (n < 0)
    fail(ErrorKind::Value, "random::split: n must be non-negative, got ", n,
         rlx::detail::at_loc(loc));
  std::vector<Key> out;
  out.reserve(std::size_t(n));
  if (!k.is_tensor()) {
    for (int64_t i = 0; i < n; ++i) out.emplace_back(rng::split_child(k.value, uint64_t(i)));
    return out;
  }
  Tensor children = drawn(k, attrs_of(ir::RandomDist::Split, {n}, DType::I64), loc);
  for (int64_t i = 0; i < n; ++i) out.emplace_back(children[{i, loc}]);
  return out;
}

std::pair<Key, Key> split2(Key k, Loc loc) {
  std::vector<Key> ks = split(std::move(k), 2, loc);
  return {ks[0], ks[1]};
}

Key fold_in(Key k, uint64_t data, Loc loc) {
  if (!k.is_tensor()) return Key(rng::fold_in(k.value, data));
  ir::RandomAttrs a = attrs_of(ir::RandomDist::FoldIn, {}, DType::I64);
  a.ilo = int64_t(data);
  return Key(drawn(k, a, loc));
}

Tensor uniform(Key k, Dims sizes, double lo, double hi, DType dtype, Loc loc) {
  if (!(std::isfinite(lo) && std::isfinite(hi) && lo <= hi))
    fail(ErrorKind::Value, "random::uniform: needs finite lo <= hi, got [", lo, ", ", hi, ")",
         rlx::detail::at_loc(loc));
  check_request(sizes, dtype, true, "random::uniform", loc);
  ir::RandomAttrs a = attrs_of(ir::RandomDist::Uniform, sizes, dtype);
  a.lo = lo;
  a.hi = hi;
  return drawn(k, a, loc);
}

Tensor normal(Key k, Dims sizes, double mu, double sigma, DType dtype, Loc loc) {
  if (!(std::isfinite(mu) && std::isfinite(sigma) && sigma >= 0))
    fail(ErrorKind::Value, "random::normal: needs a finite mu and sigma >= 0, got (", mu, ", ",
         sigma, ")", rlx::detail::at_loc(loc));
  check_request(sizes, dtype, true, "random::normal", loc);
  ir::RandomAttrs a = attrs_of(ir::RandomDist::Normal, sizes, dtype);
  a.lo = mu;
  a.hi = sigma;
  return drawn(k, a, loc);
}

Tensor randint(Key k, int64_t lo, int64_t hi, Dims sizes, DType dtype, Loc loc) {
  if (lo >= hi)
    fail(ErrorKind::Value, "random::randint: needs lo < hi, got [", lo, ", ", hi, ")",
         rlx::detail::at_loc(loc));
  if (!ir::is_int(dtype))
    fail(ErrorKind::Type, "random::randint: needs an integer dtype, got ", ir::dtype_name(dtype),
         rlx::detail::at_loc(loc));
  check_request(sizes, dtype, false, "random::randint", loc);
  Buffer range(Shape::of(std::vector<int64_t>{2}, dtype)); // do lo and hi - 1 fit the dtype?
  range.set_i64(0, lo);
  range.set_i64(1, hi - 1);
  if (range.get_i64(0) != lo || range.get_i64(1) != hi - 1)
    fail(ErrorKind::Value, "random::randint: [", lo, ", ", hi, ") does not fit ",
         ir::dtype_name(dtype), rlx::detail::at_loc(loc));
  ir::RandomAttrs a = attrs_of(ir::RandomDist::Randint, sizes, dtype);
  a.ilo = lo;
  a.ihi = hi;
  return drawn(k, a, loc);
}

Tensor permutation(Key k, int64_t n, Loc loc) {
  if (n < 0)
    fail(ErrorKind::Value, "random::permutation: n must be non-negative, got ", n,
         rlx::detail::at_loc(loc));
  rlx::detail::check_sizes({n}, DType::I64, "random::permutation", loc);
  return shuffled(k, n, {n}, loc);
}

Tensor permutation(Key k, const Tensor& x, int64_t axis, Loc loc) {
  int64_t ax = rlx::detail::norm_axis(axis, x.ndim(), "random::permutation", x.shape(), loc);
  return take(x, permutation(std::move(k), x.size(ax, loc), loc), ax, loc);
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
    return shuffled(k, n, sizes, loc);
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
  // values and the key on the host.
  if (w.is_traced() || k.is_tensor())
    fail(ErrorKind::Value,
         "random::choice: weights without replacement need their values and a host key; inside "
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
    double target = rng::unit(k.value, uint64_t(s)) * total;
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
  return take(a, choice(std::move(k), a.size(0, loc), std::move(sizes), replace, std::move(p), loc),
              0, loc);
}

Tensor bernoulli(Key k, double p, Dims sizes, Loc loc) {
  if (!(p >= 0 && p <= 1))
    fail(ErrorKind::Value, "random::bernoulli: p must be in [0, 1], got ", p,
         rlx::detail::at_loc(loc));
  check_request(sizes, DType::Bool, false, "random::bernoulli", loc);
  ir::RandomAttrs a = attrs_of(ir::RandomDist::Bernoulli, sizes, DType::Bool);
  a.lo = p;
  return drawn(k, a, loc);
}

Tensor bernoulli(Key k, const Tensor& p, Loc loc) {
  DType t = p.dtype() == DType::F64 ? DType::F64 : DType::F32;
  if (!ir::is_float(p.dtype()))
    fail(ErrorKind::Type, "random::bernoulli: p must be a float tensor, got ",
         ir::short_str(p.shape()), rlx::detail::at_loc(loc));
  return uniform(std::move(k), p.sizes(loc), 0.0, 1.0, t, loc) < p;
}

Tensor gumbel(Key k, Dims sizes, DType dtype, Loc loc) {
  check_request(sizes, dtype, true, "random::gumbel", loc);
  return drawn(k, attrs_of(ir::RandomDist::Gumbel, sizes, dtype), loc);
}

Tensor exponential(Key k, Dims sizes, DType dtype, Loc loc) {
  check_request(sizes, dtype, true, "random::exponential", loc);
  return drawn(k, attrs_of(ir::RandomDist::Exponential, sizes, dtype), loc);
}

Tensor categorical(Key k, const Tensor& logits, int64_t axis, Loc loc) {
  if (!ir::is_float(logits.dtype()))
    fail(ErrorKind::Type, "random::categorical: logits must be a float tensor, got ",
         ir::short_str(logits.shape()), rlx::detail::at_loc(loc));
  int64_t ax =
      rlx::detail::norm_axis(axis, logits.ndim(), "random::categorical", logits.shape(), loc);
  // Gumbel-max: argmax(logits + g) is distributed as softmax(logits).
  Tensor g = gumbel(std::move(k), logits.sizes(loc),
                    logits.dtype() == DType::F64 ? DType::F64 : DType::F32, loc);
  return argmax(logits + g, ax, false, loc);
}

} // namespace rlx::random

namespace rlx::nn {

Tensor dropout(const Tensor& x, double p, random::Key key, bool training, Loc loc) {
  if (!(p >= 0 && p <= 1))
    fail(ErrorKind::Value, "nn::dropout: p must be in [0, 1], got ", p, rlx::detail::at_loc(loc));
  if (!ir::is_float(x.dtype()))
    fail(ErrorKind::Type, "nn::dropout: needs a float tensor, got ", ir::short_str(x.shape()),
         rlx::detail::at_loc(loc));
  if (!training || p == 0) return x;
  Tensor keep = random::bernoulli(std::move(key), 1.0 - p, x.sizes(loc), loc);
  if (p == 1) return where(keep, x, 0.0, loc); // all dropped; 1 / (1 - p) would be inf
  return where(keep, x * (1.0 / (1.0 - p)), 0.0, loc);
}

} // namespace rlx::nn
