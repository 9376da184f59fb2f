// tests/test_gemm.cpp -- the JIT's f32 GEMM (jit/gemm.hpp, micro-kernels generated with asmjit):
// called directly against a double-precision reference loop, for every edge shape (1, primes,
// non-multiples of the 14 x 32 register tile, several depth and row blocks), transposed
// operands, batches with broadcast batch offsets, the bias/relu/activation epilogues and
// threads, writing nothing outside C; then through the JIT plan against the interpreter.
#include "../jit/gemm.hpp"
#include "../jit/plan.hpp"

#include <rlx/interp.hpp>
#include <rlx/ir/graph.hpp> // not rlx.hpp: its rlx::jit() would clash with namespace rlx::jit
#include <rlx/runtime.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

using namespace rlx::ir;
using rlx::interp::Buffer;
using rlx::jit::GemmCall;

namespace {

constexpr float kSentinel = -7777.0f;
constexpr int64_t kGuard = 40;

std::vector<float> random_floats(std::size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = u(rng);
  return v;
}

struct Problem {
  int64_t batches = 1, m = 1, n = 1, k = 1;
  bool ta = false, tb = false; ///< A stored as [k, m] / B stored as [n, k]
  bool bias = false, relu = false;
  bool broadcast_b = false; ///< every batch reads the same B
  int threads = 1;
};

std::string describe(const Problem& p) {
  return std::to_string(p.batches) + " x " + std::to_string(p.m) + "x" + std::to_string(p.k) +
         " @ " + std::to_string(p.k) + "x" + std::to_string(p.n) + (p.ta ? " A^T" : "") +
         (p.tb ? " B^T" : "") + (p.bias ? " +bias" : "") + (p.relu ? " relu" : "") +
         (p.broadcast_b ? " shared B" : "") + " threads " + std::to_string(p.threads);
}

/// Runs the GEMM and returns how many elements of C are off the reference (with the bound of
/// an f32 dot product: (k + 2) ulps of the sum of |a_i b_i|), plus guard elements overwritten.
int64_t check(const Problem& p) {
  int64_t bb = p.broadcast_b ? 1 : p.batches;
  std::vector<float> a = random_floats(std::size_t(p.batches * p.m * p.k), 1);
  std::vector<float> b = random_floats(std::size_t(bb * p.k * p.n), 2);
  std::vector<float> bias = random_floats(std::size_t(p.n), 3);
  std::vector<float> c(std::size_t(p.batches * p.m * p.n + 2 * kGuard), kSentinel);
  std::vector<int64_t> a_off, b_off;
  for (int64_t t = 0; t < p.batches; ++t) {
    a_off.push_back(t * p.m * p.k);
    b_off.push_back(p.broadcast_b ? 0 : t * p.k * p.n);
  }
  GemmCall call;
  call.batches = p.batches;
  call.m = p.m;
  call.n = p.n;
  call.k = p.k;
  call.a = {a.data(), p.ta ? 1 : p.k, p.ta ? p.m : 1};
  call.b = {b.data(), p.tb ? 1 : p.n, p.tb ? p.k : 1};
  call.a_off = a_off.data();
  call.b_off = b_off.data();
  call.c = c.data() + kGuard;
  call.bias = p.bias ? bias.data() : nullptr;
  call.relu = p.relu;
  rlx::jit::sgemm(call, p.threads);
  int64_t bad = 0;
  for (int64_t g = 0; g < kGuard; ++g) {
    bad += c[std::size_t(g)] != kSentinel;
    bad += c[c.size() - 1 - std::size_t(g)] != kSentinel;
  }
  for (int64_t t = 0; t < p.batches; ++t)
    for (int64_t i = 0; i < p.m; ++i)
      for (int64_t j = 0; j < p.n; ++j) {
        double sum = 0, mag = 0;
        for (int64_t q = 0; q < p.k; ++q) {
          double x = a[std::size_t(a_off[std::size_t(t)] + (p.ta ? q * p.m + i : i * p.k + q))];
          double y = b[std::size_t(b_off[std::size_t(t)] + (p.tb ? j * p.k + q : q * p.n + j))];
          sum += x * y;
          mag += std::fabs(x * y);
        }
        if (p.bias) {
          sum += bias[std::size_t(j)];
          mag += std::fabs(bias[std::size_t(j)]);
        }
        if (p.relu) sum = std::max(sum, 0.0);
        double got = c[std::size_t(kGuard + (t * p.m + i) * p.n + j)];
        double bound = double(p.k + 2) * 0x1p-24 * mag + 1e-30;
        bad += !(std::fabs(got - sum) <= bound);
      }
  return bad;
}

} // namespace

TEST_CASE("the generated GEMM matches a double reference at every edge shape") {
  if (!rlx::jit::gemm_supported()) {
    MESSAGE("no AVX-512F: the JIT keeps matmul on the runtime kernels");
    return;
  }
  // 1, primes, the tile sizes and their neighbours (14 rows, 16/32 columns).
  const std::vector<int64_t> sizes = {1, 2, 5, 13, 14, 15, 16, 17, 29, 31, 32, 33, 47};
  int64_t cases = 0;
  for (int64_t m : sizes)
    for (int64_t n : sizes)
      for (int64_t k : {int64_t(1), int64_t(3), int64_t(17), int64_t(64)}) {
        Problem p;
        p.m = m;
        p.n = n;
        p.k = k;
        INFO(describe(p));
        CHECK(check(p) == 0);
        ++cases;
      }
  CHECK(cases == 13 * 13 * 4);
}

TEST_CASE("the GEMM spans several depth, row and column blocks") {
  if (!rlx::jit::gemm_supported()) return;
  for (Problem p : {Problem{1, 3, 5, 601}, Problem{1, 350, 40, 300}, Problem{1, 29, 2085, 7},
                    Problem{1, 60, 97, 384}}) {
    INFO(describe(p));
    CHECK(check(p) == 0);
  }
}

TEST_CASE("transposed operands are read through their strides") {
  if (!rlx::jit::gemm_supported()) return;
  for (bool ta : {false, true})
    for (bool tb : {false, true})
      for (Problem p : {Problem{1, 1, 1, 1}, Problem{1, 15, 33, 19}, Problem{1, 31, 17, 260}}) {
        p.ta = ta;
        p.tb = tb;
        INFO(describe(p));
        CHECK(check(p) == 0);
      }
}

TEST_CASE("batches read their own or a shared B") {
  if (!rlx::jit::gemm_supported()) return;
  for (bool shared : {false, true})
    for (int threads : {1, 2}) {
      Problem p{5, 15, 20, 9};
      p.broadcast_b = shared;
      p.threads = threads;
      INFO(describe(p));
      CHECK(check(p) == 0);
    }
}

TEST_CASE("bias and relu are applied in the store, also across depth blocks") {
  if (!rlx::jit::gemm_supported()) return;
  for (int64_t k : {int64_t(7), int64_t(700)})
    for (bool relu : {false, true}) {
      Problem p{1, 17, 37, k};
      p.bias = true;
      p.relu = relu;
      INFO(describe(p));
      CHECK(check(p) == 0);
    }
}

TEST_CASE("two threads split rows or columns and compute the same product") {
  if (!rlx::jit::gemm_supported()) return;
  for (Problem p : {Problem{1, 60, 200, 70}, Problem{1, 200, 20, 33}, Problem{1, 3, 3, 3}}) {
    p.threads = 2;
    p.bias = true;
    INFO(describe(p));
    CHECK(check(p) == 0);
  }
}

namespace {

/// A graph over leaves of the given shapes; `magnitude` asks for the same contraction over the
/// absolute values without the activation (the scale of its rounding error).
using Builder = std::function<NodeId(Graph&, const std::vector<NodeId>&, bool magnitude)>;

/// Runs the graph on the JIT and the interpreter; the JIT's result may differ by (k + 2) f32 ulps
/// of the magnitude (plus the activation's own tolerance). Returns the JIT's plan.
std::string jit_matches_interpreter(const std::vector<std::vector<int64_t>>& shapes, int64_t k,
                                    const Builder& build) {
  auto make = [&](bool magnitude) {
    Graph g("gemm_case");
    std::vector<NodeId> leaves;
    for (std::size_t i = 0; i < shapes.size(); ++i)
      leaves.push_back(g.input("x" + std::to_string(i), Shape::of(shapes[i], DType::F32)));
    g.set_outputs({build(g, leaves, magnitude)});
    return g;
  };
  std::vector<Buffer> feeds;
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    int64_t n = 1;
    for (int64_t d : shapes[i]) n *= d;
    std::vector<float> v = random_floats(std::size_t(n), uint32_t(10 + i));
    feeds.push_back(Buffer::f32(shapes[i], v));
  }
  std::vector<const Buffer*> leaves;
  for (const Buffer& b : feeds) leaves.push_back(&b);
  Graph g = make(false);
  auto jit = rlx::compile(g, rlx::Backend::Jit);
  std::vector<float> got = jit->run(leaves)[0].to_f32();
  std::vector<double> want = rlx::compile(g, rlx::Backend::Interp)->run(leaves)[0].to_f64();
  std::vector<double> mag = rlx::compile(make(true), rlx::Backend::Interp)->run(leaves)[0].to_f64();
  REQUIRE(got.size() == want.size());
  int64_t bad = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    double bound = 1.2 * double(k + 2) * 0x1p-24 * mag[i] + 2e-5 * std::fabs(want[i]) + 1e-6;
    bad += !(std::fabs(double(got[i]) - want[i]) <= bound);
  }
  CHECK(bad == 0);
  return jit->describe();
}

NodeId abs_of(Graph& g, NodeId x) { return g.activation(Activation::Abs, x, g.shape(x)); }

} // namespace

TEST_CASE("the JIT runs f32 matmul as a GEMM step, batched and broadcast, like the interpreter") {
  if (!rlx::jit::gemm_supported()) return;
  auto mm = [](Graph& g, const std::vector<NodeId>& x, bool magnitude) {
    return magnitude ? g.mm(abs_of(g, x[0]), abs_of(g, x[1])) : g.mm(x[0], x[1]);
  };
  for (auto shapes : std::vector<std::vector<std::vector<int64_t>>>{
           {{2, 15, 40}, {40, 50}},    // batches sharing B
           {{2, 3, 7, 9}, {3, 9, 11}}, // broadcast batch dims
           {{1, 5, 19}, {4, 19, 33}},  // broadcast A
           {{23}, {23, 17}},           // a vector times a matrix
           {{6, 23}, {23}},            // a matrix times a vector
           {{61, 384}, {384, 129}}}) { // several depth blocks
    INFO(shapes[0].size() << "-d lhs, " << shapes[1].size() << "-d rhs");
    int64_t k = shapes[0].back();
    std::string plan = jit_matches_interpreter(shapes, k, mm);
    CHECK(plan.find("gemm ") != std::string::npos);
    CHECK(plan.find("runtime ") == std::string::npos);
  }
}

TEST_CASE("a transpose of the last two axes folds into the GEMM's packing") {
  if (!rlx::jit::gemm_supported()) return;
  // q @ k^T as in attention, and x^T @ w.
  auto qk = [](Graph& g, const std::vector<NodeId>& x, bool magnitude) {
    NodeId q = magnitude ? abs_of(g, x[0]) : x[0], k = magnitude ? abs_of(g, x[1]) : x[1];
    return g.mm(q, g.transpose_(k, {0, 2, 1}));
  };
  std::string plan = jit_matches_interpreter({{3, 17, 20}, {3, 29, 20}}, 20, qk);
  CHECK(plan.find("gemm ") != std::string::npos);
  CHECK(plan.find("runtime ") == std::string::npos); // the transpose has no step
  auto at = [](Graph& g, const std::vector<NodeId>& x, bool magnitude) {
    NodeId a = magnitude ? abs_of(g, x[0]) : x[0], b = magnitude ? abs_of(g, x[1]) : x[1];
    return g.mm(g.transpose_(a, {-1, -2}), b);
  };
  plan = jit_matches_interpreter({{31, 15}, {31, 34}}, 31, at);
  CHECK(plan.find("runtime ") == std::string::npos);
}

TEST_CASE("fused_matmul_bias_act applies its bias and activation in the GEMM's epilogue") {
  if (!rlx::jit::gemm_supported()) return;
  for (std::optional<Activation> act :
       {std::optional<Activation>{}, std::optional<Activation>{Activation::Relu},
        std::optional<Activation>{Activation::Gelu}, std::optional<Activation>{Activation::Tanh}}) {
    INFO((act ? std::string(rlx::enum_name(*act)) : std::string("no activation")));
    auto fused = [&](Graph& g, const std::vector<NodeId>& x, bool magnitude) {
      Shape out = Shape({2, 15, 37}, DType::F32);
      if (magnitude)
        return g.fused_matmul_bias_act(abs_of(g, x[0]), abs_of(g, x[1]), abs_of(g, x[2]),
                                       std::nullopt, out);
      return g.fused_matmul_bias_act(x[0], x[1], x[2], act, out);
    };
    std::string plan = jit_matches_interpreter({{2, 15, 500}, {500, 37}, {37}}, 500, fused);
    CHECK(plan.find("gemm ") != std::string::npos);
    CHECK(plan.find("runtime ") == std::string::npos);
  }
}

TEST_CASE("the GEMM step gives the same result on one and two threads") {
  if (!rlx::jit::gemm_supported()) return;
  int before = rlx::num_threads();
  auto mm = [](Graph& g, const std::vector<NodeId>& x, bool magnitude) {
    return magnitude ? g.mm(abs_of(g, x[0]), abs_of(g, x[1])) : g.mm(x[0], x[1]);
  };
  for (int threads : {1, 2}) {
    rlx::set_num_threads(threads);
    jit_matches_interpreter({{60, 96}, {96, 300}}, 96, mm);
    jit_matches_interpreter({{4, 60, 32}, {4, 32, 20}}, 32, mm);
  }
  rlx::set_num_threads(before);
}
