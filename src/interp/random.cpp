// src/interp/random.cpp -- the Random family's kernels (random, sample) and the counter-based
// draws they share with rlx::random's host path (src/support/counter_rng.hpp): one function per
// value, so a host key and a traced key with the same bits give the same values on every backend
// (the JIT runs these kernels as interpreter steps) and every thread count.
#include "kernels.hpp"
#include "support/counter_rng.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>
#include <numeric>
#include <vector>

namespace rlx::rng {

namespace {

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

/// Stores v, kept below hi in the buffer's dtype: rounding lo + (hi - lo) u to f32 may reach hi.
void store_below(Buffer& b, int64_t i, double v, double lo, double hi) {
  b.set_f64(i, v);
  if (b.get_f64(i) < hi || !(hi > lo)) return;
  if (b.dtype() == ir::DType::F64)
    b.set_f64(i, std::nextafter(hi, lo));
  else
    b.set_f64(i, double(std::nextafter(float(hi), float(lo))));
  if (b.get_f64(i) < lo) b.set_f64(i, lo); // [lo, hi) holds no value of a narrow dtype
}

/// HF's TopPLogitsWarper on one row of scaled logits: the tokens whose ascending cumulative
/// probability stays at or below 1 - top_p are dropped, the most likely token never. Ties sort
/// by id, which torch leaves unspecified.
void keep_nucleus(const std::vector<double>& s, std::vector<char>& keep, double top_p) {
  const std::size_t v = s.size();
  double top = -std::numeric_limits<double>::infinity();
  for (std::size_t j = 0; j < v; ++j)
    if (keep[j]) top = std::max(top, s[j]);
  std::vector<double> p(v, 0.0);
  double total = 0;
  for (std::size_t j = 0; j < v; ++j)
    if (keep[j] && std::isfinite(s[j])) total += p[j] = std::exp(s[j] - top);
  if (!(total > 0)) return; // every kept logit is -inf (or NaN): nothing to rank
  for (double& x : p) x /= total;
  std::vector<std::size_t> order(v);
  std::iota(order.begin(), order.end(), std::size_t(0));
  std::sort(order.begin(), order.end(),
            [&](std::size_t a, std::size_t b) { return p[a] < p[b] || (p[a] == p[b] && a < b); });
  double cum = 0;
  for (std::size_t r = 0; r + 1 < v; ++r) {
    cum += p[order[r]];
    if (cum <= 1.0 - top_p) keep[order[r]] = 0;
  }
}

} // namespace

double gumbel(uint64_t key, uint64_t i) { return -std::log(-std::log(open_unit(key, i))); }

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

Buffer draw(const ir::RandomAttrs& a, uint64_t key, const ir::Shape& out) {
  Buffer b(out);
  const int64_t n = b.numel();
  switch (a.dist) {
  case ir::RandomDist::Uniform:
    for (int64_t i = 0; i < n; ++i)
      store_below(b, i, a.lo + (a.hi - a.lo) * unit(key, uint64_t(i)), a.lo, a.hi);
    break;
  case ir::RandomDist::Normal:
    for (int64_t i = 0; i < n; ++i) b.set_f64(i, a.lo + a.hi * standard_normal(key, uint64_t(i)));
    break;
  case ir::RandomDist::Gumbel:
    for (int64_t i = 0; i < n; ++i) b.set_f64(i, gumbel(key, uint64_t(i)));
    break;
  case ir::RandomDist::Exponential:
    for (int64_t i = 0; i < n; ++i) b.set_f64(i, -std::log(open_unit(key, uint64_t(i))));
    break;
  case ir::RandomDist::Bernoulli:
    for (int64_t i = 0; i < n; ++i) b.set_f64(i, unit(key, uint64_t(i)) < a.lo ? 1 : 0);
    break;
  case ir::RandomDist::Randint: {
    const uint64_t m = uint64_t(a.ihi) - uint64_t(a.ilo); // < 2^64 since ilo < ihi
    for (int64_t i = 0; i < n; ++i)
      b.set_i64(i, int64_t(uint64_t(a.ilo) + below(key, uint64_t(i), m)));
    break;
  }
  case ir::RandomDist::Permutation: {
    std::vector<int64_t> v = shuffled_prefix(key, a.ihi, n);
    for (int64_t i = 0; i < n; ++i) b.set_i64(i, v[std::size_t(i)]);
    break;
  }
  case ir::RandomDist::Split:
    for (int64_t i = 0; i < n; ++i) b.set_i64(i, int64_t(split_child(key, uint64_t(i))));
    break;
  case ir::RandomDist::FoldIn:
    b.set_i64(0, int64_t(fold_in(key, uint64_t(a.ilo))));
    break;
  }
  return b;
}

Buffer sample_rows(const Buffer& logits, const ir::SampleAttrs& a, uint64_t key) {
  const int64_t rows = logits.shape().sizes()[0], v = logits.shape().sizes()[1];
  Buffer out(ir::Shape::of(std::vector<int64_t>{rows}, ir::DType::F32));
  std::vector<double> s(static_cast<std::size_t>(v));
  std::vector<char> keep(static_cast<std::size_t>(v));
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t j = 0; j < v; ++j) s[std::size_t(j)] = logits.get_f64(r * v + j);
    int64_t pick = 0;
    if (a.temperature == 0.0f) { // greedy: the first largest logit
      for (int64_t j = 1; j < v; ++j)
        if (s[std::size_t(j)] > s[std::size_t(pick)]) pick = j;
      out.set_f64(r, double(pick));
      continue;
    }
    for (double& x : s) x /= double(a.temperature);
    std::fill(keep.begin(), keep.end(), char(1));
    if (a.top_k > 0 && a.top_k < v) { // HF's TopKLogitsWarper: below the k-th largest goes
      std::vector<double> sorted = s;
      std::nth_element(sorted.begin(), sorted.begin() + (a.top_k - 1), sorted.end(),
                       std::greater<>());
      const double kth = sorted[std::size_t(a.top_k - 1)];
      for (int64_t j = 0; j < v; ++j)
        if (s[std::size_t(j)] < kth) keep[std::size_t(j)] = 0;
    }
    if (a.top_p < 1.0f) keep_nucleus(s, keep, double(a.top_p));
    // Gumbel-max: argmax of s + g over the kept tokens is distributed as their softmax. The
    // counter is the element's flat index, as random::categorical's.
    double best = -std::numeric_limits<double>::infinity();
    bool first = true;
    for (int64_t j = 0; j < v; ++j) {
      if (!keep[std::size_t(j)]) continue;
      double x = s[std::size_t(j)] + gumbel(key, uint64_t(r * v + j));
      if (first || x > best) {
        best = x;
        pick = j;
        first = false;
      }
    }
    out.set_f64(r, double(pick));
  }
  return out;
}

} // namespace rlx::rng

namespace rlx::interp::detail {

RLX_KERNEL(Random) {
  return rng::draw(n.op.attrs<ir::RandomAttrs>(), uint64_t(in[0]->get_i64(0)), n.shape);
}

RLX_KERNEL(Sample) {
  const auto& a = n.op.attrs<ir::SampleAttrs>();
  uint64_t key = in.size() > 1 ? uint64_t(in[1]->get_i64(0)) : uint64_t(a.seed);
  return rng::sample_rows(*in[0], a, key);
}

} // namespace rlx::interp::detail
