// tests/test_jit_row_sizes.cpp -- the JIT's row kernels (reductions over trailing axes, softmax,
// the norms and cumsum over the last axis, with their fused element-wise prologues) take the row
// length at run time: a sweep over the sizes of a dynamic last dim compiles at most two kernels
// per fused region (one for the first length, the generic one for all others), and rows of every
// length compute what the interpreter computes, with the length read at run time
// (ExtentPolicy::Generic) and compiled in (the first length, and Specialize).
#include "support/backends.hpp"
#include "support/compare.hpp"
#include "support/random.hpp"

#include <rlx/all.hpp>

#include <doctest/doctest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

using rlx::Backend;
using rlx::Tensor;
namespace ir = rlx::ir;
namespace test = rlx::test;

namespace {

/// Values uniform in [-1, 1) of the given sizes and dtype, as a leaf.
Tensor random(std::vector<int64_t> sizes, ir::DType t, uint64_t seed) {
  return Tensor(test::random_buffer(ir::Shape::of(sizes, t), seed));
}

/// Kernels that got new machine code (compiled here, or loaded from the disk cache, which the
/// test setups keep between runs) since `before`.
int64_t new_code_since(const rlx::CacheStats& before) {
  rlx::CacheStats now = rlx::cache_stats();
  return (now.kernels_compiled - before.kernels_compiled) + (now.disk_hits - before.disk_hits);
}

/// The plan's element-wise and row kernels for the graph `f` last traced, bound to n = `n`.
template <class F> int64_t native_steps(const F& f, int64_t n) {
  std::optional<ir::Graph> g = f.last_graph();
  REQUIRE(g.has_value());
  REQUIRE(g->has_dynamic_dims());
  ir::DimBinding b;
  b.set(ir::symbol_id("n"), n);
  int64_t native = 0;
  for (const ir::LirStep& step : rlx::plan_for(g->bind(b), Backend::Jit).steps)
    native += step.rule->name() == "kernel" || step.rule->name() == "row";
  return native;
}

using Call = std::function<Tensor(const std::vector<Tensor>&)>;

/// Calls `got` and `want` (a jitted function on the JIT and on the interpreter) on args(n) for
/// n = 1..100, checks each result, and counts the kernels that got new code.
int64_t sweep(const Call& got, const Call& want,
              const std::function<std::vector<Tensor>(int64_t)>& args, double depth) {
  rlx::CacheStats before = rlx::cache_stats();
  for (int64_t n = 1; n <= 100; ++n) {
    CAPTURE(n);
    std::vector<Tensor> a = args(n);
    test::check_buffers_close(want(a).buffer(), got(a).buffer(),
                              test::backend_tolerance(ir::DType::F32) * depth,
                              "n = " + std::to_string(n));
  }
  return new_code_since(before);
}

rlx::JitOptions on(Backend backend, std::vector<rlx::DynamicDim> dims) {
  return rlx::JitOptions{.dynamic_dims = std::move(dims), .backend = backend};
}

} // namespace

// The sweeps come first: the kernels they count are new to this process.

TEST_CASE("a sum over a dynamic last dim of a fused element-wise chain compiles at most two "
          "kernels over 100 sizes") {
  Backend other = test::other_backend();
  auto body = [](Tensor x) {
    return (rlx::tanh(x * 0.5f + 0.1f) * rlx::sigmoid(x) + x * x).sum(-1);
  };
  auto got = rlx::jit(body, on(other, {{0, 1, "n"}}));
  auto want = rlx::jit(body, on(Backend::Interp, {{0, 1, "n"}}));
  // mul, add, tanh, sigmoid, mul, add, sum: 6 computing ops on the longest path.
  int64_t made =
      sweep([&](const std::vector<Tensor>& a) { return got(a[0]); },
            [&](const std::vector<Tensor>& a) { return want(a[0]); },
            [](int64_t n) { return std::vector<Tensor>{random({4, n}, ir::DType::F32, 1)}; }, 6);
  if (other != Backend::Jit) return;
  CHECK(native_steps(got, 37) == 1); // one fused region: the chain is the sum's prologue
  CHECK(made >= 1);
  CHECK(made <= 2);
}

TEST_CASE("softmax over a dynamic last dim compiles at most two kernels over 100 sizes") {
  Backend other = test::other_backend();
  auto body = [](Tensor x) { return rlx::softmax(x, -1); };
  auto got = rlx::jit(body, on(other, {{0, 1, "n"}}));
  auto want = rlx::jit(body, on(Backend::Interp, {{0, 1, "n"}}));
  int64_t made =
      sweep([&](const std::vector<Tensor>& a) { return got(a[0]); },
            [&](const std::vector<Tensor>& a) { return want(a[0]); },
            [](int64_t n) { return std::vector<Tensor>{random({4, n}, ir::DType::F32, 2)}; }, 1);
  if (other != Backend::Jit) return;
  CHECK(native_steps(got, 37) == 1);
  CHECK(made >= 1);
  CHECK(made <= 2);
}

TEST_CASE("an exclusive cumsum over a dynamic last dim of x * 0.5 + 0.25 compiles at most two "
          "kernels over 100 sizes") {
  Backend other = test::other_backend();
  auto body = [](Tensor x) { return rlx::cumsum(x * 0.5f + 0.25f, -1, true); };
  auto got = rlx::jit(body, on(other, {{0, 1, "n"}}));
  auto want = rlx::jit(body, on(Backend::Interp, {{0, 1, "n"}}));
  // The scan keeps the interpreter's order of additions: the same bits for the same inputs.
  int64_t made =
      sweep([&](const std::vector<Tensor>& a) { return got(a[0]); },
            [&](const std::vector<Tensor>& a) { return want(a[0]); },
            [](int64_t n) { return std::vector<Tensor>{random({4, n}, ir::DType::F32, 6)}; }, 3);
  if (other != Backend::Jit) return;
  CHECK(native_steps(got, 37) == 1); // one fused region: the chain is the scan's prologue
  CHECK(made >= 1);
  CHECK(made <= 2);
}

TEST_CASE("a layer norm over a dynamic last dim compiles at most two kernels over 100 sizes") {
  Backend other = test::other_backend();
  auto body = [](Tensor x, Tensor gamma, Tensor beta) { return rlx::layer_norm(x, gamma, beta); };
  std::vector<rlx::DynamicDim> dims = {{0, 1, "n"}, {1, 0, "n"}, {2, 0, "n"}};
  auto got = rlx::jit(body, on(other, dims));
  auto want = rlx::jit(body, on(Backend::Interp, dims));
  int64_t made = sweep([&](const std::vector<Tensor>& a) { return got(a[0], a[1], a[2]); },
                       [&](const std::vector<Tensor>& a) { return want(a[0], a[1], a[2]); },
                       [](int64_t n) {
                         return std::vector<Tensor>{random({4, n}, ir::DType::F32, 3),
                                                    random({n}, ir::DType::F32, 4),
                                                    random({n}, ir::DType::F32, 5)};
                       },
                       1);
  if (other != Backend::Jit) return;
  CHECK(native_steps(got, 37) == 1);
  CHECK(made >= 1);
  CHECK(made <= 2);
}

namespace {

/// The leaves a row case reads: x and r of [rows, len], g, b and bias of [len], v of [rows, 1].
struct Leaves {
  Tensor x, r, g, b, bias, v;
};

Leaves leaves(int64_t rows, int64_t len, ir::DType t, uint64_t seed) {
  return Leaves{random({rows, len}, t, seed), random({rows, len}, t, seed + 1),
                random({len}, t, seed + 2),   random({len}, t, seed + 3),
                random({len}, t, seed + 4),   random({rows, 1}, t, seed + 5)};
}

/// The plan's steps for graph g on the JIT, by rule name.
std::map<std::string, int> step_counts(const ir::Graph& g) {
  std::map<std::string, int> counts;
  for (const ir::LirStep& step : rlx::plan_for(g, Backend::Jit).steps)
    ++counts[std::string(step.rule->name())];
  return counts;
}

struct RowCase {
  std::string name;
  int depth; ///< computing ops on the longest path (as test::output_tolerance counts them)
  std::function<Tensor(const Leaves&)> fn;
};

/// Every row kind the lowering handles, alone and with prologues whose operands run along the
/// row (x, r), repeat per row (g: a [len] vector broadcast over the rows), are one per row (v)
/// or are one value (constants).
std::vector<RowCase> row_cases() {
  using L = const Leaves&;
  return {
      {"sum", 1, [](L l) { return l.x.sum(-1); }},
      {"mean", 1, [](L l) { return l.x.mean(-1); }},
      {"max", 1, [](L l) { return l.x.max(-1); }},
      {"min", 1, [](L l) { return l.x.min(-1); }},
      {"sum over two trailing axes", 1,
       [](L l) {
         int64_t rows = l.x.sizes()[0], len = l.x.sizes()[1];
         return l.x.reshape({rows, 1, len}).sum({1, 2});
       }},
      {"softmax", 1, [](L l) { return rlx::softmax(l.x, -1); }},
      {"layer_norm", 1, [](L l) { return rlx::layer_norm(l.x, l.g, l.b); }},
      {"rms_norm", 1, [](L l) { return rlx::rms_norm(l.x, l.g); }},
      {"rms_norm with beta", 1, [](L l) { return rlx::rms_norm(l.x, l.g, l.b); }},
      {"residual layer_norm", 1, [](L l) { return rlx::residual_layer_norm(l.x, l.r, l.g, l.b); }},
      {"residual layer_norm with bias", 1,
       [](L l) { return rlx::residual_layer_norm(l.x, l.r, l.g, l.b, l.bias); }},
      {"residual rms_norm", 1, [](L l) { return rlx::residual_rms_norm(l.x, l.r, l.g); }},
      {"residual rms_norm with beta and bias", 1,
       [](L l) { return rlx::residual_rms_norm(l.x, l.r, l.g, l.b, l.bias); }},
      {"cumsum", 1, [](L l) { return rlx::cumsum(l.x, -1); }},
      {"exclusive cumsum", 1, [](L l) { return rlx::cumsum(l.x, -1, true); }},
      {"cumsum of x * g + v", 3, [](L l) { return rlx::cumsum(l.x * l.g + l.v, -1); }},
      {"sum of an element-wise chain", 6,
       [](L l) { return (rlx::tanh(l.x * 0.5f + 0.1f) * rlx::sigmoid(l.x) + l.x * l.x).sum(-1); }},
      {"max of x * g + v", 3, [](L l) { return (l.x * l.g + l.v).max(-1); }},
      {"mean of x * v", 2, [](L l) { return (l.x * l.v).mean(-1); }},
      {"sum of exp(x - max)", 4, [](L l) { return rlx::exp(l.x - l.x.max(-1, true)).sum(-1); }},
      {"softmax of x * 0.125 + r", 3, [](L l) { return rlx::softmax(l.x * 0.125f + l.r, -1); }},
      {"layer_norm of tanh(x + g)", 3,
       [](L l) { return rlx::layer_norm(rlx::tanh(l.x + l.g), l.g, l.b); }},
      {"rms_norm of x - v", 2, [](L l) { return rlx::rms_norm(l.x - l.v, l.g); }},
      // Prologues costly enough to be kept on the stack between the passes (lower_rows.cpp:
      // kCheapPrologue); sin's vector form branches to a slow path.
      {"softmax of tanh(x) * 4", 2, [](L l) { return rlx::softmax(rlx::tanh(l.x) * 4.0f, -1); }},
      {"softmax of sin(x) + r", 2, [](L l) { return rlx::softmax(rlx::sin(l.x) + l.r, -1); }},
      {"rms_norm of sin(x) + r", 2,
       [](L l) { return rlx::rms_norm(rlx::sin(l.x) + l.r, l.g, l.b); }},
      // atan's f32 form calls libm lane by lane: the kernel is emitted again without the
      // vector prologue.
      {"softmax of atan(x)", 2, [](L l) { return rlx::softmax(rlx::atan(l.x), -1); }},
      {"layer_norm of atan(x)", 2, [](L l) { return rlx::layer_norm(rlx::atan(l.x), l.g, l.b); }},
  };
}

/// Every case on rows of odd lengths (shorter than a vector, one either side of a vector's
/// multiple, a layer's width, longer than the fused residual norms' scratch row), on the
/// interpreter and on the JIT under the current extent policy.
void check_odd_lengths(ir::DType t) {
  const int64_t rows = 3;
  for (int64_t len : {1, 2, 7, 15, 16, 17, 31, 768, 1000, 1023, 4097}) {
    CAPTURE(len);
    Leaves l = leaves(rows, len, t, uint64_t(len) * 10);
    for (const RowCase& c : row_cases()) {
      CAPTURE(c.name);
      std::vector<rlx::Buffer> results;
      test::on_both_backends([&] { results.push_back(c.fn(l).buffer()); });
      REQUIRE(results.size() == 2);
      test::check_buffers_close(results[0], results[1], test::backend_tolerance(t) * c.depth,
                                c.name + " of " + std::string(ir::dtype_name(t)) + " rows of " +
                                    std::to_string(len));
    }
  }
}

/// Runs body under `policy`, restoring the policy after.
void with_policy(rlx::ExtentPolicy policy, const std::function<void()>& body) {
  struct Restore {
    rlx::ExtentPolicy saved = rlx::extent_policy();
    ~Restore() { rlx::set_extent_policy(saved); }
  } restore;
  rlx::set_extent_policy(policy);
  body();
}

} // namespace

TEST_CASE("row kernels with the length read at run time equal the interpreter on rows of odd "
          "lengths, f32 and f64") {
  test::other_backend(); // fails the test when there is nothing to compare with
  with_policy(rlx::ExtentPolicy::Generic, [] {
    for (ir::DType t : {ir::DType::F32, ir::DType::F64}) {
      CAPTURE(t);
      check_odd_lengths(t);
    }
  });
}

TEST_CASE("row kernels compiled for their length equal the interpreter on rows of odd lengths, "
          "f32 and f64") {
  test::other_backend();
  with_policy(rlx::ExtentPolicy::Specialize, [] {
    for (ir::DType t : {ir::DType::F32, ir::DType::F64}) {
      CAPTURE(t);
      check_odd_lengths(t);
    }
  });
}

TEST_CASE("the odd-length cases run as row kernels, their element-wise work as prologues") {
  // So the comparisons above test the row lowering and its prologues: every case is one row
  // step (exp(x - max) two: the max, then the sum whose prologue reads the max once per row),
  // with no element-wise kernel and no interpreter step (but the rms norms without a beta: the
  // zeros they get for it are an expand of a constant, an interpreter step).
  if (test::other_backend() != Backend::Jit) return;
  for (ir::DType t : {ir::DType::F32, ir::DType::F64}) {
    CAPTURE(t);
    Leaves l = leaves(3, 17, t, 1);
    for (const RowCase& c : row_cases()) {
      CAPTURE(c.name);
      auto f = rlx::jit([&](Tensor x, Tensor r, Tensor g, Tensor b, Tensor bias,
                            Tensor v) { return c.fn(Leaves{x, r, g, b, bias, v}); },
                        rlx::JitOptions{.backend = Backend::Jit});
      f(l.x, l.r, l.g, l.b, l.bias, l.v);
      std::optional<ir::Graph> g = f.last_graph();
      REQUIRE(g.has_value());
      std::map<std::string, int> steps = step_counts(*g);
      CHECK(steps["row"] == (c.name == "sum of exp(x - max)" ? 2 : 1));
      CHECK(steps["kernel"] == 0);
      bool zero_beta =
          c.name == "rms_norm" || c.name == "residual rms_norm" || c.name == "rms_norm of x - v";
      CHECK(steps["interp"] == (zero_beta ? 1 : 0));
    }
  }
}

TEST_CASE("row kernels whose prologue reads operands repeated per row or one per row reuse their "
          "code across row lengths") {
  // x * g + v, tanh(x + g), x - v: g is the row's [len] vector, v one value per row; both are
  // placed by class, so a new length finds the kernel (lengths 2 to 4096: a length of one makes
  // every operand one element per row, and longer rows keep no scratch).
  if (test::other_backend() != Backend::Jit) return;
  with_policy(rlx::ExtentPolicy::Generic, [] {
    for (ir::DType t : {ir::DType::F32, ir::DType::F64}) {
      CAPTURE(t);
      for (const RowCase& c : row_cases()) {
        if (c.name != "max of x * g + v" && c.name != "layer_norm of tanh(x + g)" &&
            c.name != "rms_norm of x - v")
          continue;
        CAPTURE(c.name);
        // The first length gets a kernel compiled for it, the second the generic one.
        for (int64_t len : {9, 10})
          test::on_both_backends([&] { (void)c.fn(leaves(3, len, t, 5)).buffer(); });
        rlx::CacheStats before = rlx::cache_stats();
        for (int64_t len : {2, 15, 16, 17, 31, 1000, 1023, 4096}) {
          CAPTURE(len);
          Leaves l = leaves(5, len, t, uint64_t(len));
          std::vector<rlx::Buffer> results;
          test::on_both_backends([&] { results.push_back(c.fn(l).buffer()); });
          REQUIRE(results.size() == 2);
          test::check_buffers_close(results[0], results[1], test::backend_tolerance(t) * c.depth,
                                    c.name);
        }
        CHECK(new_code_since(before) == 0);
      }
    }
  });
}

TEST_CASE("softmax rows with a NaN, infinities or values deep in exp's underflow equal the "
          "interpreter") {
  // The JIT's f32 softmax takes its rows' maximum leaving NaN out and computes exp for x - max
  // <= 0 only (lower_rows.cpp): a NaN must still reach its whole row, in the vector part of a
  // row and in its tail, and subnormal and zero results must come out as the interpreter's.
  test::other_backend();
  for (int64_t len : {70, 1000}) {
    CAPTURE(len);
    const float nan = std::numeric_limits<float>::quiet_NaN();
    const float inf = std::numeric_limits<float>::infinity();
    std::vector<float> x(std::size_t(6 * len));
    for (int64_t j = 0; j < len; ++j) {
      float v = float((j * 37) % 23) / 11.0f - 1.0f;
      for (int64_t r = 0; r < 6; ++r) x[std::size_t(r * len + j)] = v;
      x[std::size_t(2 * len + j)] = -inf;
      x[std::size_t(4 * len + j)] = -150.0f * float(j) / float(len); // exp from 1 down to 0
    }
    x[3] = nan;                             // row 0: a NaN in the vector part
    x[std::size_t(len + len - 2)] = nan;    // row 1: a NaN in the tail
    x[std::size_t(3 * len + 10)] = inf;     // row 3: one +inf
    x[std::size_t(5 * len + len / 2)] = 40; // row 5: one large value
    Tensor xt(rlx::Buffer::f32({6, len}, x));
    std::vector<rlx::Buffer> results;
    test::on_both_backends([&] { results.push_back(rlx::softmax(xt, -1).buffer()); });
    REQUIRE(results.size() == 2);
    test::check_buffers_close(results[0], results[1], test::backend_tolerance(ir::DType::F32),
                              "softmax of special rows");
    for (const rlx::Buffer& got : results) {
      for (int64_t j = 0; j < len; ++j) {
        CAPTURE(j);
        CHECK(std::isnan(got.get_f64(j)));           // the row with a NaN
        CHECK(std::isnan(got.get_f64(len + j)));     // the row with a NaN in its tail
        CHECK(std::isnan(got.get_f64(2 * len + j))); // -inf - -inf
        CHECK(got.get_f64(4 * len + j) >= 0);
      }
      CHECK(got.get_f64(4 * len + len - 1) == 0); // exp(-150) underflows
    }
  }
}

namespace {

/// f32[rows, len] with element (r, j) = value(r, j) rounded to f32.
Tensor f32_rows(int64_t rows, int64_t len, const std::function<double(int64_t, int64_t)>& value) {
  std::vector<float> x(std::size_t(rows * len));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < len; ++j) x[std::size_t(r * len + j)] = float(value(r, j));
  return Tensor(rlx::Buffer::f32({rows, len}, x));
}

/// A value in [-1, 1) for (r, j): a Weyl sequence, no two neighbours alike.
double noise(int64_t r, int64_t j) {
  double u = double(r * 7919 + j) * 0.6180339887498949;
  return 2 * (u - std::floor(u)) - 1;
}

/// The layer norm of f32 rows as a textbook f32 loop computes it: the mean as one f32 sum,
/// the variance of x - mean in f32, y = (x - mean) / sqrt(var + eps) * gamma + beta in f32.
rlx::Buffer f32_loop_layer_norm(const rlx::Buffer& x, const rlx::Buffer& g, const rlx::Buffer& b,
                                float eps) {
  int64_t len = x.shape().sizes().back(), rows = x.numel() / len;
  std::vector<float> y(std::size_t(x.numel()));
  for (int64_t r = 0; r < rows; ++r) {
    auto at = [&](int64_t j) { return float(x.get_f64(r * len + j)); };
    float mean = 0, var = 0;
    for (int64_t j = 0; j < len; ++j) mean += at(j);
    mean /= float(len);
    for (int64_t j = 0; j < len; ++j) var += (at(j) - mean) * (at(j) - mean);
    float inv = 1.0f / std::sqrt(var / float(len) + eps);
    for (int64_t j = 0; j < len; ++j)
      y[std::size_t(r * len + j)] =
          (at(j) - mean) * inv * float(g.get_f64(j)) + float(b.get_f64(j));
  }
  return rlx::Buffer::f32(x.shape().sizes(), y);
}

} // namespace

TEST_CASE("f32 layer norms of rows whose mean is far larger than their spread equal the "
          "interpreter, where an f32 mean does not") {
  // The JIT's f32 layer norm computes in f32 (lower_rows.cpp): the mean of x - x[0], corrected
  // by the second pass's sum of the centered values. These rows lose 4 to 6 digits when
  // centered: a mean summed and rounded in f32 is off by up to half an ulp of 1e4 (5e-4) on a
  // spread of 0.6, 40 times the tolerance, as the textbook loop's results show. The rows: noise
  // on the offset; the same with an outlier as the first element (the shift); a spread of 1e-2
  // (a few ulps of the offset, so eps matters); a constant row (y = beta).
  test::other_backend();
  for (rlx::ExtentPolicy policy : {rlx::ExtentPolicy::Specialize, rlx::ExtentPolicy::Generic}) {
    CAPTURE(int(policy));
    with_policy(policy, [] {
      for (double offset : {1e4, -3e5, 1e6}) {
        for (int64_t len : {7, 17, 768, 1000}) {
          CAPTURE(offset);
          CAPTURE(len);
          Tensor x = f32_rows(4, len, [&](int64_t r, int64_t j) {
            double v = noise(r, j);
            if (r == 1 && j == 0) v = 64;
            if (r == 2) v *= 1e-2;
            if (r == 3) v = 0;
            return offset + v;
          });
          Tensor g = random({len}, ir::DType::F32, 7) + 1.5f, b = random({len}, ir::DType::F32, 8);
          std::vector<rlx::Buffer> results;
          test::on_both_backends([&] { results.push_back(rlx::layer_norm(x, g, b).buffer()); });
          REQUIRE(results.size() == 2);
          test::Tolerance tol = test::backend_tolerance(ir::DType::F32);
          test::check_buffers_close(results[0], results[1], tol, "layer norm of offset rows");
          rlx::Buffer loop = f32_loop_layer_norm(x.buffer(), g.buffer(), b.buffer(), 1e-5f);
          CHECK_FALSE(test::mismatch_report(results[0], loop, tol).empty());
        }
      }
    });
  }
}

TEST_CASE("f32 layer and rms norms of rows with an inf, a NaN or squares beyond f32's range "
          "equal the interpreter") {
  // Rows whose f32 sums overflow (an inf or NaN among them too) or whose var + eps is below
  // 2^-100, where the f32 squares of its deviations underflow, take the f64 passes
  // (lower_rows.cpp). Row 0 holds an inf, row 1 a NaN in its tail, row 2 values of 1e25
  // (squares overflow f32), row 3 values of 1e-25 (squares underflow; eps 0 leaves nothing
  // else), row 4 ordinary values (the f32 passes beside the others).
  test::other_backend();
  const double inf = std::numeric_limits<double>::infinity();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (int64_t len : {17, 768}) {
    CAPTURE(len);
    Tensor x = f32_rows(5, len, [&](int64_t r, int64_t j) {
      double v = noise(r, j);
      if (r == 0 && j == 3) return inf;
      if (r == 1 && j == len - 2) return nan;
      return r == 2 ? v * 1e25 : r == 3 ? v * 1e-25 : v;
    });
    Tensor g = random({len}, ir::DType::F32, 9) + 1.5f, b = random({len}, ir::DType::F32, 10);
    for (double eps : {1e-5, 0.0}) {
      CAPTURE(eps);
      for (bool rms : {false, true}) {
        CAPTURE(rms);
        std::vector<rlx::Buffer> results;
        test::on_both_backends([&] {
          results.push_back(
              (rms ? rlx::rms_norm(x, g, b, eps) : rlx::layer_norm(x, g, b, eps)).buffer());
        });
        REQUIRE(results.size() == 2);
        test::check_buffers_close(results[0], results[1], test::backend_tolerance(ir::DType::F32),
                                  "norm of special rows");
        const rlx::Buffer& got = results[1];
        for (int64_t j = 0; j < len; ++j) {
          CAPTURE(j);
          // layer norm: inf - inf in the centering; rms norm: x / inf, the inf itself NaN.
          CHECK(std::isnan(got.get_f64(j)) == (!rms || j == 3));
          CHECK(std::isnan(got.get_f64(len + j))); // the NaN reaches the whole row
          for (int64_t r = 2; r < 5; ++r) CHECK(std::isfinite(got.get_f64(r * len + j)));
        }
      }
    }
  }
}

TEST_CASE("layer and rms norms with gamma one and beta zero equal the interpreter on rows of "
          "1, 7, 16, 17, 768 and 1000, f32 and f64") {
  // Without gamma and beta the output is the normalized row itself (no beta to hide its
  // error): y = (x - mean) / sqrt(var + eps).
  test::other_backend();
  for (ir::DType t : {ir::DType::F32, ir::DType::F64}) {
    for (int64_t len : {1, 7, 16, 17, 768, 1000}) {
      CAPTURE(t);
      CAPTURE(len);
      Tensor x = random({5, len}, t, uint64_t(len) + 40);
      std::vector<double> one(std::size_t(len), 1.0), zero(std::size_t(len), 0.0);
      Tensor g(rlx::Buffer::from_f64(ir::Shape::of(std::vector<int64_t>{len}, t), one));
      Tensor b(rlx::Buffer::from_f64(ir::Shape::of(std::vector<int64_t>{len}, t), zero));
      for (bool rms : {false, true}) {
        CAPTURE(rms);
        std::vector<rlx::Buffer> results;
        test::on_both_backends([&] {
          results.push_back((rms ? rlx::rms_norm(x, g, b) : rlx::layer_norm(x, g, b)).buffer());
        });
        REQUIRE(results.size() == 2);
        test::check_buffers_close(results[0], results[1], test::backend_tolerance(t),
                                  "norm without gamma and beta");
      }
    }
  }
}
