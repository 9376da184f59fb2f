// tests/test_random.cpp -- rlx::random (include/rlx/random.hpp): keys, determinism, and each
// distribution against its law. Random draws have no fixture to equal, so the checks are
// statistical with thresholds derived independently: Kolmogorov-Smirnov distances against the
// exact CDF (std::erf, std::exp) with the asymptotic critical value sqrt(ln(2/alpha) / (2n)),
// and chi-square statistics against scipy.stats.chi2.isf(1e-6, df) (the constants below). At
// alpha = 1e-6 a correct generator fails one check in a million runs; the streams are fixed, so
// a run either always passes or always fails.
#include "support/backends.hpp"
#include "support/check_error.hpp"

#include <rlx/random.hpp>
#include <rlx/rlx.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <numeric>
#include <set>
#include <vector>

namespace {

using rlx::DType;
using rlx::ErrorKind;
using rlx::Tensor;
using rlx::test::check_error;
using rlx::test::on_both_backends;
namespace random = rlx::random;

// scipy.stats.chi2.isf(1e-6, df) for the degrees of freedom used here.
constexpr double kChi2Df2 = 27.631021115928547;
constexpr double kChi2Df3 = 30.664849706213598;
constexpr double kChi2Df6 = 38.25833637720969;
constexpr double kChi2Df23 = 70.54955713688595;

/// The Kolmogorov-Smirnov distance between the sample and a CDF.
double ks_distance(std::vector<double> v, const std::function<double(double)>& cdf) {
  std::sort(v.begin(), v.end());
  double n = double(v.size()), d = 0;
  for (std::size_t i = 0; i < v.size(); ++i) {
    double f = cdf(v[i]);
    d = std::max({d, f - double(i) / n, double(i + 1) / n - f});
  }
  return d;
}

/// The asymptotic KS critical value at alpha = 1e-6 for n samples.
double ks_critical(std::size_t n) { return std::sqrt(std::log(2.0 / 1e-6) / (2.0 * double(n))); }

/// Pearson's chi-square of observed counts against expected probabilities.
double chi_square(const std::vector<int64_t>& counts, const std::vector<double>& p) {
  double n = double(std::accumulate(counts.begin(), counts.end(), int64_t(0))), x = 0;
  for (std::size_t i = 0; i < counts.size(); ++i) {
    double e = n * p[i];
    x += (double(counts[i]) - e) * (double(counts[i]) - e) / e;
  }
  return x;
}

std::vector<int64_t> histogram_of(const std::vector<int64_t>& v, int64_t bins) {
  std::vector<int64_t> c(std::size_t(bins), 0);
  for (int64_t x : v) {
    REQUIRE(x >= 0);
    REQUIRE(x < bins);
    ++c[std::size_t(x)];
  }
  return c;
}

TEST_CASE("a key gives the same values every time and rand is uniform with the seed as key") {
  Tensor a = random::uniform(random::Key(7), {1000});
  Tensor b = random::uniform(7, {1000});
  CHECK(a.to_vector<float>() == b.to_vector<float>());
  CHECK(rlx::rand({1000}, 7).to_vector<float>() == a.to_vector<float>());
  CHECK(rlx::randn({999}, 3, DType::F64).to_vector<double>() ==
        random::normal(3, {999}, 0.0, 1.0, DType::F64).to_vector<double>());
  CHECK(random::uniform(8, {1000}).to_vector<float>() != a.to_vector<float>());
}

TEST_CASE("split and fold_in give distinct, reproducible, uncorrelated streams") {
  random::Key k(42);
  std::vector<random::Key> ks = random::split(k, 8);
  REQUIRE(ks.size() == 8);
  CHECK(ks == random::split(k, 8));
  std::set<uint64_t> seen{k.value};
  for (auto c : ks) seen.insert(c.value);
  CHECK(seen.size() == 9);
  auto [a, b] = random::split2(k);
  CHECK(a == ks[0]);
  CHECK(b == ks[1]);
  CHECK(random::fold_in(k, 1) == random::fold_in(k, 1));
  CHECK(random::fold_in(k, 1) != random::fold_in(k, 2));
  CHECK(random::fold_in(k, 1) != k);
  // Neighbouring children are uncorrelated: the sample correlation of 20000 pairs of standard
  // normals is within 6 standard errors (1/sqrt(n)) of zero.
  auto x = random::normal(ks[0], {20000}, 0, 1, DType::F64).to_vector<double>();
  auto y = random::normal(ks[1], {20000}, 0, 1, DType::F64).to_vector<double>();
  double r = 0;
  for (std::size_t i = 0; i < x.size(); ++i) r += x[i] * y[i];
  CHECK(std::abs(r / double(x.size())) < 6.0 / std::sqrt(double(x.size())));
  check_error([&] { (void)random::split(k, -1); }, ErrorKind::Value, "random::split");
}

TEST_CASE("uniform follows U(lo, hi) and stays below hi after rounding") {
  for (DType t : {DType::F32, DType::F64}) {
    CAPTURE(t);
    auto v = random::uniform(11, {20000}, -2.0, 3.0, t).to_vector<double>();
    for (double x : v) {
      REQUIRE(x >= -2.0);
      REQUIRE(x < 3.0);
    }
    CHECK(ks_distance(v, [](double x) { return (x + 2.0) / 5.0; }) < ks_critical(v.size()));
  }
  // [1, 1 + 2^-23) holds one f32, 1: draws that round up to hi are moved below it.
  auto narrow = random::uniform(5, {4096}, 1.0, 1.0 + 0x1.0p-23, DType::F32).to_vector<double>();
  for (double x : narrow) CHECK(x == 1.0);
  CHECK(random::uniform(5, {0}).numel() == 0);
}

TEST_CASE("normal follows N(mu, sigma) by the Kolmogorov-Smirnov distance") {
  for (DType t : {DType::F32, DType::F64}) {
    CAPTURE(t);
    auto v = random::normal(13, {20001}, 1.5, 2.0, t).to_vector<double>();
    auto cdf = [](double x) { return 0.5 * std::erfc(-(x - 1.5) / (2.0 * std::sqrt(2.0))); };
    CHECK(ks_distance(v, cdf) < ks_critical(v.size()));
  }
}

TEST_CASE("gumbel and exponential follow their laws") {
  auto g = random::gumbel(17, {20000}, DType::F64).to_vector<double>();
  CHECK(ks_distance(g, [](double x) { return std::exp(-std::exp(-x)); }) < ks_critical(g.size()));
  auto e = random::exponential(19, {20000}).to_vector<double>();
  for (double x : e) REQUIRE(std::isfinite(x));
  CHECK(ks_distance(e, [](double x) { return x < 0 ? 0.0 : 1.0 - std::exp(-x); }) <
        ks_critical(e.size()));
}

TEST_CASE("randint is uniform over [lo, hi) without modulo bias, in the asked dtype") {
  auto v = random::randint(23, -3, 4, {70000}).to_vector<int64_t>();
  for (int64_t& x : v) x += 3;
  CHECK(chi_square(histogram_of(v, 7), std::vector<double>(7, 1.0 / 7)) < kChi2Df6);
  // A range of 3 * 2^62 makes plain modulo visibly biased: its top third would be drawn half as
  // often as the rest. Counts of the three thirds must be equal.
  const int64_t lo = std::numeric_limits<int64_t>::min(), third = int64_t(1) << 62;
  const int64_t hi = lo + third + third + third; // 3 * 2^62 alone would overflow
  auto w = random::randint(29, lo, hi, {30000}).to_vector<int64_t>();
  std::vector<int64_t> thirds(3, 0);
  for (int64_t x : w) ++thirds[std::size_t((uint64_t(x) - uint64_t(lo)) / uint64_t(third))];
  CHECK(chi_square(thirds, {1.0 / 3, 1.0 / 3, 1.0 / 3}) < kChi2Df2);
  Tensor small = random::randint(31, 0, 100, {5, 4}, DType::U8);
  CHECK(small.dtype() == DType::U8);
  CHECK(small.sizes() == rlx::Dims{5, 4});
  check_error([] { (void)random::randint(1, 0, 300, {2}, DType::U8); }, ErrorKind::Value,
              "does not fit u8");
  check_error([] { (void)random::randint(1, 5, 5, {2}); }, ErrorKind::Value, "lo < hi");
  check_error([] { (void)random::randint(1, 0, 5, {2}, DType::F32); }, ErrorKind::Type,
              "integer dtype");
}

TEST_CASE("permutation orders 0..n-1 with every ordering equally likely") {
  auto p = random::permutation(37, 1000).to_vector<int64_t>();
  std::vector<int64_t> sorted = p;
  std::sort(sorted.begin(), sorted.end());
  std::vector<int64_t> iota(1000);
  std::iota(iota.begin(), iota.end(), int64_t(0));
  CHECK(sorted == iota);
  CHECK(p != iota);
  // The 24 orderings of 4 elements over 24000 keys.
  std::map<std::vector<int64_t>, int64_t> seen;
  for (uint64_t t = 0; t < 24000; ++t)
    ++seen[random::permutation(random::fold_in(41, t), 4).to_vector<int64_t>()];
  REQUIRE(seen.size() == 24);
  std::vector<int64_t> counts;
  for (auto& [order, c] : seen) counts.push_back(c);
  CHECK(chi_square(counts, std::vector<double>(24, 1.0 / 24)) < kChi2Df23);
  // Shuffling an array moves whole rows along the axis.
  Tensor x = rlx::arange(0, 12, 1, DType::F32).reshape({4, 3});
  auto rows = random::permutation(43, x, 0).to_vector<float>();
  auto order = random::permutation(43, 4).to_vector<int64_t>();
  for (int64_t r = 0; r < 4; ++r)
    for (int64_t c = 0; c < 3; ++c)
      CHECK(rows[std::size_t(r * 3 + c)] == float(order[std::size_t(r)] * 3 + c));
}

TEST_CASE("choice samples with and without replacement, with weights, on both backends") {
  // Without replacement: distinct.
  auto d = random::choice(47, 50, {7, 7}, false).to_vector<int64_t>();
  CHECK(std::set<int64_t>(d.begin(), d.end()).size() == 49);
  check_error([] { (void)random::choice(1, 5, {6}, false); }, ErrorKind::Value,
              "without replacement");
  on_both_backends([] {
    // With weights and replacement: frequencies follow p (normalized), zero weight never drawn.
    Tensor p = rlx::tensor({2.f, 0.f, 1.f, 1.f});
    auto v = random::choice(53, 4, {40000}, true, p).to_vector<int64_t>();
    auto counts = histogram_of(v, 4);
    CHECK(counts[1] == 0);
    CHECK(chi_square({counts[0], counts[2], counts[3]}, {0.5, 0.25, 0.25}) < kChi2Df2);
    // The weights may be traced inside rlx::jit.
    auto f = rlx::jit([](Tensor w) { return random::choice(53, 4, {40000}, true, w); });
    CHECK(f(p).to_vector<int64_t>() == v);
  });
  // With weights and without replacement: distinct, zero weights never drawn, and the first
  // draw follows p.
  Tensor q = rlx::tensor({0.f, 1.f, 2.f, 3.f, 4.f});
  std::vector<int64_t> first(5, 0);
  for (uint64_t t = 0; t < 5000; ++t) {
    auto s = random::choice(random::fold_in(59, t), 5, {4}, false, q).to_vector<int64_t>();
    REQUIRE(std::set<int64_t>(s.begin(), s.end()).size() == 4);
    REQUIRE(std::find(s.begin(), s.end(), 0) == s.end());
    ++first[std::size_t(s[0])];
  }
  CHECK(first[0] == 0);
  CHECK(chi_square({first[1], first[2], first[3], first[4]}, {0.1, 0.2, 0.3, 0.4}) < kChi2Df3);
  // Choosing from an array takes its rows.
  Tensor a = rlx::tensor({10.f, 20.f, 30.f});
  auto picked = random::choice(61, a, {100}).to_vector<float>();
  for (float x : picked) CHECK((x == 10.f || x == 20.f || x == 30.f));
  check_error([] { (void)random::choice(1, 3, {2}, true, rlx::tensor({1.f, 2.f})); },
              ErrorKind::Shape, "test_random.cpp");
}

TEST_CASE("bernoulli draws true with probability p, scalar or per element") {
  auto v = random::bernoulli(67, 0.3, {20000}).to_vector<bool>();
  int64_t ones = std::count(v.begin(), v.end(), true);
  CHECK(chi_square({ones, int64_t(v.size()) - ones}, {0.3, 0.7}) < kChi2Df2);
  check_error([] { (void)random::bernoulli(1, 1.5, {2}); }, ErrorKind::Value, "random::bernoulli");
  on_both_backends([] {
    Tensor p = rlx::tensor({0.f, 1.f, 0.25f}).reshape({3, 1}).expand({3, 20000});
    auto b = random::bernoulli(71, p).to_vector<bool>();
    int64_t row[3] = {0, 0, 0};
    for (std::size_t i = 0; i < b.size(); ++i) row[i / 20000] += b[i];
    CHECK(row[0] == 0);
    CHECK(row[1] == 20000);
    CHECK(chi_square({row[2], 20000 - row[2]}, {0.25, 0.75}) < kChi2Df2);
  });
}

TEST_CASE("categorical draws softmax(logits) on both backends and inside jit") {
  on_both_backends([] {
    Tensor logits =
        rlx::tensor({0.f, std::log(2.f), std::log(3.f), -1e30f}).reshape({1, 4}).expand({30000, 4});
    auto s = random::categorical(73, logits).to_vector<int64_t>();
    auto counts = histogram_of(s, 4);
    CHECK(counts[3] == 0);
    CHECK(chi_square({counts[0], counts[1], counts[2]}, {1.0 / 6, 2.0 / 6, 3.0 / 6}) < kChi2Df2);
    auto f = rlx::jit([](Tensor l) { return random::categorical(73, l, 1); });
    CHECK(f(logits).to_vector<int64_t>() == s);
  });
}

TEST_CASE("bad requests name the function and the caller's line") {
  check_error([] { (void)random::uniform(1, {2}, 1.0, 0.0); }, ErrorKind::Value, "test_random.cpp");
  check_error([] { (void)random::normal(1, {2}, 0.0, -1.0); }, ErrorKind::Value, "random::normal");
  check_error([] { (void)random::uniform(1, {-2}); }, ErrorKind::Shape, "random::uniform");
  check_error([] { (void)random::normal(1, {2}, 0, 1, DType::I32); }, ErrorKind::Type,
              "needs a float dtype");
  check_error([] { (void)rlx::rand({2}, 0, DType::I32); }, ErrorKind::Type, "rand: needs");
  check_error([] { (void)random::categorical(1, rlx::tensor({1, 2})); }, ErrorKind::Type,
              "random::categorical");
}

// ---- Tensor keys: draws recorded as `random` ops (the same counter RNG, so the same bits).

/// Whether a and b hold the same values of the same dtype, compared exactly (i64 keys too).
bool same_values(const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype() || a.shape() != b.shape()) return false;
  switch (a.dtype()) {
  case DType::F32:
    return a.to_vector<float>() == b.to_vector<float>();
  case DType::F64:
    return a.to_vector<double>() == b.to_vector<double>();
  case DType::I32:
    return a.to_vector<int32_t>() == b.to_vector<int32_t>();
  default:
    return a.cast(DType::I64).to_vector<int64_t>() == b.cast(DType::I64).to_vector<int64_t>();
  }
}

/// Every distribution drawn from a Tensor key, and the host key with the same bits.
std::vector<std::pair<Tensor, Tensor>> traced_and_host_draws(uint64_t bits) {
  random::Key host(bits);
  random::Key traced(random::key_data(host));
  REQUIRE(traced.is_tensor());
  std::vector<std::pair<Tensor, Tensor>> out;
  auto both = [&](const std::function<Tensor(random::Key)>& f) {
    out.emplace_back(f(traced), f(host));
  };
  both([](random::Key k) { return random::uniform(k, {4, 5}, -1.0, 3.0); });
  both([](random::Key k) { return random::uniform(k, {7}, 0.0, 1.0, DType::F64); });
  both([](random::Key k) { return random::normal(k, {9}, 2.0, 0.5, DType::F64); });
  both([](random::Key k) { return random::randint(k, -3, 1000, {11}, DType::I32); });
  both([](random::Key k) { return random::permutation(k, 13); });
  both([](random::Key k) { return random::choice(k, 20, {2, 3}, false); });
  both([](random::Key k) {
    return random::choice(k, 5, {8}, true, rlx::tensor({1.f, 2.f, 0.f, 3.f, 4.f}));
  });
  both([](random::Key k) { return random::bernoulli(k, 0.3, {3, 4}); });
  both([](random::Key k) { return random::gumbel(k, {6}, DType::F64); });
  both([](random::Key k) { return random::exponential(k, {6}); });
  both([](random::Key k) { return random::categorical(k, rlx::zeros({3, 5})); });
  both([](random::Key k) { return random::key_data(random::fold_in(k, 77)); });
  both([](random::Key k) { return random::key_data(random::split(k, 3)[2]); });
  both([](random::Key k) {
    return random::uniform(random::split2(random::fold_in(k, 5)).second, {3});
  });
  return out;
}

TEST_CASE("a Tensor key draws the host key's values bit for bit, for every function") {
  on_both_backends([] {
    for (uint64_t bits : {uint64_t(0), uint64_t(42), ~uint64_t(0) - 6}) {
      CAPTURE(bits);
      auto draws = traced_and_host_draws(bits);
      for (std::size_t i = 0; i < draws.size(); ++i) {
        CAPTURE(i);
        const auto& [traced, host] = draws[i];
        REQUIRE(traced.shape() == host.shape());
        CHECK(same_values(traced, host));
      }
    }
  });
}

TEST_CASE("inside rlx::jit a key argument draws afresh each call without recompiling") {
  on_both_backends([] {
    auto f = rlx::jit([](Tensor key) {
      random::Key k(key);
      return std::make_tuple(random::normal(k, {64}),
                             random::key_data(random::fold_in(random::split(k, 2)[1], 3)));
    });
    std::set<std::vector<float>> seen;
    for (uint64_t s = 0; s < 4; ++s) {
      auto [draw, child] = f(random::key_data(s));
      std::vector<float> v = draw.to_vector<float>();
      CHECK(v == random::normal(s, {64}).to_vector<float>());
      CHECK(child.item<int64_t>() == int64_t(random::fold_in(random::split(s, 2)[1], 3).value));
      seen.insert(v);
    }
    CHECK(seen.size() == 4);
    CHECK(f.stats().traces == 1);
    CHECK(f.stats().compiles == 1);
  });
}

TEST_CASE("a host key inside rlx::jit stays a constant of the trace") {
  auto f = rlx::jit([](Tensor x) { return x + random::uniform(7, {3}); });
  std::vector<float> want = random::uniform(7, {3}).to_vector<float>();
  CHECK(f(rlx::zeros({3})).to_vector<float>() == want);
  CHECK(f(rlx::zeros({3})).to_vector<float>() == want);
}

TEST_CASE("dropout zeroes a p fraction, scales the rest by 1 / (1 - p), and is x in eval") {
  on_both_backends([] {
    Tensor x = rlx::ones({100000});
    std::vector<float> y = rlx::nn::dropout(x, 0.25, 3).to_vector<float>();
    int64_t zeros = std::count(y.begin(), y.end(), 0.0f);
    int64_t kept = std::count(y.begin(), y.end(), float(1 / 0.75));
    CHECK(zeros + kept == 100000);
    // Binomial(1e5, 0.25): sd 137; 6 sd is far beyond any fixed stream's luck.
    CHECK(std::abs(double(zeros) - 25000.0) < 6 * 137);
    CHECK(rlx::nn::dropout(x, 0.25, 3, false).to_vector<float>() == x.to_vector<float>());
    CHECK(rlx::nn::dropout(x, 1.0, 3).sum().item<float>() == 0.0f);
    CHECK(rlx::nn::dropout(x, 0.0, 3).to_vector<float>() == x.to_vector<float>());
  });
  check_error([] { (void)rlx::nn::dropout(rlx::ones({2}), 1.5, 3); }, ErrorKind::Value,
              "nn::dropout: p must be in [0, 1]");
}

TEST_CASE("a jitted training step with dropout matches the eager step and compiles once") {
  on_both_backends([] {
    Tensor x = random::normal(1, {32, 4}), y = random::normal(2, {32, 1});
    auto loss = [](Tensor w, Tensor xb, Tensor yb, Tensor key) {
      Tensor h = rlx::nn::dropout(xb, 0.5, random::Key(key));
      return rlx::square(rlx::matmul(h, w) - yb).mean();
    };
    auto step = rlx::jit([&](Tensor w, Tensor xb, Tensor yb, Tensor key) {
      return w - rlx::grad(loss)(w, xb, yb, key) * 0.1f;
    });
    Tensor w = rlx::zeros({4, 1});
    for (uint64_t i = 0; i < 3; ++i) {
      Tensor key = random::key_data(random::fold_in(9, i));
      Tensor eager = w - rlx::grad(loss)(w, x, y, key) * 0.1f;
      Tensor next = step(w, x, y, key);
      CHECK(rlx::allclose(next, eager, 1e-6, 1e-7));
      CHECK_FALSE(rlx::allclose(next, w));
      w = next;
    }
    // Two keys, two masks: the same step from the same w differs.
    Tensor a = step(w, x, y, random::key_data(100)), b = step(w, x, y, random::key_data(101));
    CHECK_FALSE(same_values(a, b));
    CHECK(step.stats().traces == 1);
    CHECK(step.stats().compiles == 1);
  });
}

TEST_CASE("a key that is not an i64 scalar is an rlx::Error naming random and the line") {
  std::string msg = check_error([] { (void)random::uniform(random::Key(rlx::zeros({2})), {3}); },
                                ErrorKind::Type, "random: the key must be an i64 scalar");
  CHECK(msg.find("test_random.cpp") != std::string::npos);
  check_error(
      [] {
        (void)random::choice(random::Key(random::key_data(1)), 4, {2}, false,
                             rlx::tensor({1.f, 1.f, 1.f, 1.f}));
      },
      ErrorKind::Value, "a host key");
}

} // namespace
