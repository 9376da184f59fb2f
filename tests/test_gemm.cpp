// tests/test_gemm.cpp -- the JIT's GEMM (jit/gemm.hpp, kernels generated with asmjit), on
// every ISA this host runs (AVX-512 and AVX2 here) and in f32 and f64: called directly against
// a double-precision reference loop, for every edge shape (1, primes, non-multiples of the
// register tiles, several depth and row blocks), transposed operands, batches with broadcast
// batch offsets, the bias/relu/residual epilogues and threads, through the blocked path and the
// kernels specialized for a whole small product, writing nothing outside C; then through the
// JIT plan against the interpreter.
#include "../jit/gemm.hpp"
#include "../jit/lower.hpp"

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
using rlx::Buffer;
using rlx::jit::GemmIsa;

namespace {

constexpr int64_t kGuard = 40;

template <class T> std::vector<T> random_values(std::size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<T> u(-1, 1);
  std::vector<T> v(n);
  for (T& x : v) x = u(rng);
  return v;
}

/// The ISAs this host runs, best first.
std::vector<GemmIsa> host_isas() {
  GemmIsa host = rlx::jit::gemm_host_isa();
  if (host == GemmIsa::Avx512) return {GemmIsa::Avx512, GemmIsa::Avx2};
  if (host == GemmIsa::Avx2) return {GemmIsa::Avx2};
  return {};
}
const char* isa_name(GemmIsa isa) { return isa == GemmIsa::Avx512 ? "AVX-512" : "AVX2"; }

struct Problem {
  int64_t batches = 1, m = 1, n = 1, k = 1;
  bool ta = false, tb = false; ///< A stored as [k, m] / B stored as [n, k]
  bool bias = false, relu = false, residual = false;
  bool broadcast_b = false; ///< every batch reads the same B
  int threads = 1;
  GemmIsa isa = GemmIsa::Avx512;
  bool small = false; ///< through gemm_small_kernel (when it gives one)
};

std::string describe(const Problem& p) {
  return std::string(isa_name(p.isa)) + " " + std::to_string(p.batches) + " x " +
         std::to_string(p.m) + "x" + std::to_string(p.k) + " @ " + std::to_string(p.k) + "x" +
         std::to_string(p.n) + (p.ta ? " A^T" : "") + (p.tb ? " B^T" : "") +
         (p.bias ? " +bias" : "") + (p.relu ? " relu" : "") + (p.residual ? " +residual" : "") +
         (p.broadcast_b ? " shared B" : "") + (p.small ? " small" : "") + " threads " +
         std::to_string(p.threads);
}

struct Outcome {
  int64_t bad = 0;         ///< elements off the reference, plus guard elements overwritten
  bool small_used = false; ///< a small kernel ran
};

/// Runs the GEMM in T and counts the elements of C off the reference (with the bound of a dot
/// product in T: (k + 3) ulps of the sum of |a_i b_i|, the bias and the residual), plus guard
/// elements overwritten.
template <class T> Outcome check(const Problem& p) {
  constexpr T kSentinel = T(-7777);
  const double ulp = sizeof(T) == 4 ? 0x1p-24 : 0x1p-53;
  int64_t bb = p.broadcast_b ? 1 : p.batches;
  std::vector<T> a = random_values<T>(std::size_t(p.batches * p.m * p.k), 1);
  std::vector<T> b = random_values<T>(std::size_t(bb * p.k * p.n), 2);
  std::vector<T> bias = random_values<T>(std::size_t(p.n), 3);
  std::vector<T> res = random_values<T>(std::size_t(p.batches * p.m * p.n), 4);
  std::vector<T> c(std::size_t(p.batches * p.m * p.n + 2 * kGuard), kSentinel);
  std::vector<int64_t> a_off, b_off;
  for (int64_t t = 0; t < p.batches; ++t) {
    a_off.push_back(t * p.m * p.k);
    b_off.push_back(p.broadcast_b ? 0 : t * p.k * p.n);
  }
  rlx::jit::GemmCallT<T> call;
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
  call.residual = p.residual ? res.data() : nullptr;
  call.isa = p.isa;
  if (p.small) call.small = rlx::jit::gemm_small_kernel(call, p.bias, p.residual);
  if constexpr (sizeof(T) == 4)
    rlx::jit::sgemm(call, p.threads);
  else
    rlx::jit::dgemm(call, p.threads);
  Outcome out;
  out.small_used = call.small != nullptr;
  for (int64_t g = 0; g < kGuard; ++g) {
    out.bad += c[std::size_t(g)] != kSentinel;
    out.bad += c[c.size() - 1 - std::size_t(g)] != kSentinel;
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
        std::size_t at = std::size_t((t * p.m + i) * p.n + j);
        if (p.residual) {
          sum += res[at];
          mag += std::fabs(res[at]);
        }
        double got = c[std::size_t(kGuard) + at];
        double bound = double(p.k + 3) * ulp * mag + 1e-300;
        out.bad += !(std::fabs(got - sum) <= bound);
      }
  return out;
}

/// check<float> and check<double> on every ISA of the host (and with a small kernel when
/// `small`); returns the elements off and counts the small kernels that ran.
int64_t check_all(Problem p, int64_t* small_runs = nullptr) {
  int64_t bad = 0;
  for (GemmIsa isa : host_isas()) {
    p.isa = isa;
    Outcome f = check<float>(p), d = check<double>(p);
    if (f.bad || d.bad) MESSAGE(describe(p) << ": f32 off " << f.bad << ", f64 off " << d.bad);
    bad += f.bad + d.bad;
    if (small_runs) *small_runs += f.small_used + d.small_used;
  }
  return bad;
}

} // namespace

TEST_CASE("the host runs the generated GEMM on AVX-512 or AVX2, and both can be forced") {
  if (!rlx::jit::gemm_supported()) {
    MESSAGE("no AVX2 or AVX-512: the JIT keeps matmul on the runtime kernels");
    return;
  }
  GemmIsa host = rlx::jit::gemm_host_isa();
  CHECK(rlx::jit::gemm_isa() == host);
  rlx::jit::set_gemm_isa(GemmIsa::Avx2);
  CHECK(rlx::jit::gemm_isa() == GemmIsa::Avx2);
  rlx::jit::set_gemm_isa(GemmIsa::None);
  CHECK(rlx::jit::gemm_isa() == host);
  if (host == GemmIsa::Avx2) CHECK_THROWS_AS(rlx::jit::set_gemm_isa(GemmIsa::Avx512), rlx::Error);
}

TEST_CASE("the generated GEMM matches a double reference at every edge shape") {
  if (!rlx::jit::gemm_supported()) return;
  // 1, primes, the tile sizes and their neighbours (6 and 14 rows, 8/16/32 columns).
  const std::vector<int64_t> sizes = {1, 2, 5, 6, 7, 13, 14, 15, 16, 17, 31, 32, 33, 47};
  int64_t cases = 0;
  for (int64_t m : sizes)
    for (int64_t n : sizes)
      for (int64_t k : {int64_t(1), int64_t(3), int64_t(17), int64_t(64)}) {
        Problem p;
        p.m = m;
        p.n = n;
        p.k = k;
        CHECK(check_all(p) == 0);
        ++cases;
      }
  CHECK(cases == 14 * 14 * 4);
}

TEST_CASE("kernels specialized for a whole small product match the reference at every edge "
          "shape") {
  if (!rlx::jit::gemm_supported()) return;
  const std::vector<int64_t> sizes = {1, 2, 5, 7, 8, 13, 16, 17, 29, 32, 33, 64};
  int64_t small_runs = 0, cases = 0;
  for (int64_t m : sizes)
    for (int64_t n : sizes)
      for (int64_t k : {int64_t(0), int64_t(1), int64_t(3), int64_t(16), int64_t(37)}) {
        Problem p;
        p.m = m;
        p.n = n;
        p.k = k;
        p.small = true;
        p.bias = (m + n) % 2 == 0;
        p.relu = (m + k) % 3 == 0;
        p.residual = (n + k) % 2 == 1;
        CHECK(check_all(p, &small_runs) == 0);
        ++cases;
      }
  // Every one of these fits in L1: each ran as a small kernel, in both types, on every ISA.
  CHECK(small_runs == cases * 2 * int64_t(host_isas().size()));
}

TEST_CASE("small kernels read transposed A, and leave a transposed B to the blocked path") {
  if (!rlx::jit::gemm_supported()) return;
  int64_t small_runs = 0;
  for (Problem p : {Problem{1, 15, 33, 19}, Problem{2, 31, 17, 26}, Problem{1, 9, 1, 5}}) {
    p.ta = true;
    p.small = true;
    CHECK(check_all(p, &small_runs) == 0);
  }
  CHECK(small_runs == 3 * 2 * int64_t(host_isas().size()));
  small_runs = 0;
  Problem p{1, 15, 33, 19};
  p.tb = true;
  p.small = true;
  CHECK(check_all(p, &small_runs) == 0);
  CHECK(small_runs == 0);
}

TEST_CASE("the GEMM spans several depth, row and column blocks") {
  if (!rlx::jit::gemm_supported()) return;
  for (Problem p : {Problem{1, 3, 5, 601}, Problem{1, 350, 40, 300}, Problem{1, 29, 2085, 7},
                    Problem{1, 60, 97, 384}})
    CHECK(check_all(p) == 0);
}

TEST_CASE("transposed operands are read through their strides") {
  if (!rlx::jit::gemm_supported()) return;
  for (bool ta : {false, true})
    for (bool tb : {false, true})
      for (Problem p : {Problem{1, 1, 1, 1}, Problem{1, 15, 33, 19}, Problem{1, 31, 17, 260}}) {
        p.ta = ta;
        p.tb = tb;
        CHECK(check_all(p) == 0);
      }
}

TEST_CASE("batches read their own or a shared B") {
  if (!rlx::jit::gemm_supported()) return;
  for (bool shared : {false, true})
    for (int threads : {1, 2})
      for (bool small : {false, true}) {
        Problem p{5, 15, 20, 9};
        p.broadcast_b = shared;
        p.threads = threads;
        p.small = small;
        CHECK(check_all(p) == 0);
      }
}

TEST_CASE("bias, relu and a residual are applied in the store, also across depth blocks") {
  if (!rlx::jit::gemm_supported()) return;
  for (int64_t k : {int64_t(7), int64_t(700)})
    for (bool relu : {false, true})
      for (bool residual : {false, true}) {
        Problem p{1, 17, 37, k};
        p.bias = true;
        p.relu = relu;
        p.residual = residual;
        CHECK(check_all(p) == 0);
      }
}

TEST_CASE("two threads split rows or columns and compute the same product") {
  if (!rlx::jit::gemm_supported()) return;
  for (Problem p : {Problem{1, 60, 200, 70}, Problem{1, 200, 20, 33}, Problem{1, 3, 3, 3}}) {
    p.threads = 2;
    p.bias = true;
    p.residual = true;
    CHECK(check_all(p) == 0);
  }
}

namespace {

/// A graph over leaves of the given shapes; `magnitude` asks for the same contraction over the
/// absolute values without the activation (the scale of its rounding error).
using Builder = std::function<NodeId(Graph&, const std::vector<NodeId>&, bool magnitude)>;

/// Runs the graph on the JIT and the interpreter; the JIT's result may differ by (k + 3) ulps
/// of the magnitude (plus the activation's own tolerance). Returns the JIT's plan.
std::string jit_matches_interpreter(const std::vector<std::vector<int64_t>>& shapes, int64_t k,
                                    const Builder& build, DType dtype = DType::F32) {
  auto make = [&](bool magnitude) {
    Graph g("gemm_case");
    std::vector<NodeId> leaves;
    for (std::size_t i = 0; i < shapes.size(); ++i)
      leaves.push_back(g.input("x" + std::to_string(i), Shape::of(shapes[i], dtype)));
    g.set_outputs({build(g, leaves, magnitude)});
    return g;
  };
  std::vector<Buffer> feeds;
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    int64_t n = 1;
    for (int64_t d : shapes[i]) n *= d;
    std::vector<double> v = random_values<double>(std::size_t(n), uint32_t(10 + i));
    feeds.push_back(Buffer::from_f64(Shape::of(shapes[i], dtype), v));
  }
  std::vector<const Buffer*> leaves;
  for (const Buffer& b : feeds) leaves.push_back(&b);
  Graph g = make(false);
  auto jit = rlx::compile(g, rlx::Backend::Jit);
  std::vector<double> got = jit->run(leaves)[0].to_f64();
  std::vector<double> want = rlx::compile(g, rlx::Backend::Interp)->run(leaves)[0].to_f64();
  std::vector<double> mag = rlx::compile(make(true), rlx::Backend::Interp)->run(leaves)[0].to_f64();
  REQUIRE(got.size() == want.size());
  const double ulp = dtype == DType::F64 ? 0x1p-53 : 0x1p-24;
  const double rel = dtype == DType::F64 ? 1e-13 : 2e-5, abs = dtype == DType::F64 ? 1e-14 : 1e-6;
  int64_t bad = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    double bound = 1.2 * double(k + 3) * ulp * mag[i] + rel * std::fabs(want[i]) + abs;
    bad += !(std::fabs(got[i] - want[i]) <= bound);
  }
  CHECK(bad == 0);
  return jit->describe();
}

/// How often `what` occurs in `text`.
std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

/// Whether the plan has a step "<kind> ..." whose node is op `op`.
bool has_step(const std::string& plan, const std::string& kind, const std::string& op) {
  std::size_t at = 0;
  while ((at = plan.find(": " + kind + " ", at)) != std::string::npos) {
    std::size_t end = plan.find('\n', at);
    if (plan.substr(at, end - at).find("= " + op + " ") != std::string::npos ||
        plan.substr(at, end - at).find("= " + op + "(") != std::string::npos)
      return true;
    at = end;
  }
  return false;
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
    CHECK(plan.find("interp ") == std::string::npos);
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
  CHECK(plan.find("interp ") == std::string::npos); // the transpose has no step
  auto at = [](Graph& g, const std::vector<NodeId>& x, bool magnitude) {
    NodeId a = magnitude ? abs_of(g, x[0]) : x[0], b = magnitude ? abs_of(g, x[1]) : x[1];
    return g.mm(g.transpose_(a, {-1, -2}), b);
  };
  plan = jit_matches_interpreter({{31, 15}, {31, 34}}, 31, at);
  CHECK(plan.find("interp ") == std::string::npos);
}

TEST_CASE("GEMM steps read the heads of a fused QKV projection and reversed rows in place") {
  if (!rlx::jit::gemm_supported()) return;
  // x [2, 5, 24]: q, k, v of 2 heads of 4 as slices of its last axis, split and transposed as
  // attention does; the context merged back ([2, 5, 8], not one stride per axis: a copy), times
  // rows 9, 8, ..., 2 of x as [10, 24] (a slice of step -1).
  auto attend = [](Graph& g, const std::vector<NodeId>& in, bool magnitude) {
    NodeId x = magnitude ? abs_of(g, in[0]) : in[0];
    auto heads = [&](int64_t start, std::vector<int64_t> perm) {
      return g.transpose_(g.reshape_(g.slice(x, 2, start, 8), {2, 5, 2, 4}), perm);
    };
    NodeId q = heads(0, {0, 2, 1, 3}), kt = heads(8, {0, 2, 3, 1}), v = heads(16, {0, 2, 1, 3});
    NodeId ctx = g.mm(g.mm(q, kt), v); // [2, 2, 5, 4]
    NodeId merged = g.reshape_(g.transpose_(ctx, {0, 2, 1, 3}), {2, 5, 8});
    return g.mm(merged, g.slice(g.reshape_(x, {10, 24}), 0, 9, 8, -1));
  };
  std::string plan = jit_matches_interpreter({{2, 5, 24}}, 24, attend);
  INFO(plan);
  CHECK(count(plan, ": gemm ") == 3);
  CHECK_FALSE(has_step(plan, "interp", "slice"));
  CHECK_FALSE(has_step(plan, "interp", "reshape"));
  CHECK(count(plan, ": interp ") == 1); // the merge of the heads
  CHECK(has_step(plan, "interp", "transpose"));
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
    CHECK(plan.find("interp ") == std::string::npos);
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

TEST_CASE("the JIT runs f64 matmul and fused_matmul_bias_act as GEMM steps, on every ISA") {
  if (!rlx::jit::gemm_supported()) return;
  auto mm = [](Graph& g, const std::vector<NodeId>& x, bool magnitude) {
    return magnitude ? g.mm(abs_of(g, x[0]), abs_of(g, x[1])) : g.mm(x[0], x[1]);
  };
  auto fused = [](Graph& g, const std::vector<NodeId>& x, bool magnitude) {
    Shape out = Shape({2, 15, 37}, DType::F64);
    if (magnitude)
      return g.fused_matmul_bias_act(abs_of(g, x[0]), abs_of(g, x[1]), abs_of(g, x[2]),
                                     std::nullopt, out);
    return g.fused_matmul_bias_act(x[0], x[1], x[2], Activation::Gelu, out);
  };
  for (GemmIsa isa : host_isas()) {
    INFO(isa_name(isa));
    rlx::jit::set_gemm_isa(isa);
    for (auto shapes : std::vector<std::vector<std::vector<int64_t>>>{
             {{2, 15, 40}, {40, 50}}, {{2, 3, 7, 9}, {3, 9, 11}}, {{61, 400}, {400, 129}}}) {
      std::string plan = jit_matches_interpreter(shapes, shapes[0].back(), mm, DType::F64);
      CHECK(plan.find("gemm ") != std::string::npos);
      CHECK(plan.find("interp ") == std::string::npos);
    }
    std::string plan =
        jit_matches_interpreter({{2, 15, 500}, {500, 37}, {37}}, 500, fused, DType::F64);
    CHECK(plan.find("gemm ") != std::string::npos);
    CHECK(plan.find("interp ") == std::string::npos);
  }
  rlx::jit::set_gemm_isa(GemmIsa::None);
}

TEST_CASE("the JIT's GEMM steps match the interpreter with the AVX2 kernels forced") {
  if (!rlx::jit::gemm_supported()) return;
  rlx::jit::set_gemm_isa(GemmIsa::Avx2);
  auto mm = [](Graph& g, const std::vector<NodeId>& x, bool magnitude) {
    return magnitude ? g.mm(abs_of(g, x[0]), abs_of(g, x[1])) : g.mm(x[0], x[1]);
  };
  for (auto shapes : std::vector<std::vector<std::vector<int64_t>>>{
           {{2, 15, 40}, {40, 50}}, {{23}, {23, 17}}, {{6, 23}, {23}}, {{61, 384}, {384, 129}}})
    jit_matches_interpreter(shapes, shapes[0].back(), mm);
  rlx::jit::set_gemm_isa(GemmIsa::None);
}

TEST_CASE("add(product, residual) runs as one GEMM step with the residual added in the store") {
  if (!rlx::jit::gemm_supported()) return;
  for (DType dtype : {DType::F32, DType::F64})
    for (bool relu : {false, true})
      for (bool residual_first : {false, true})
        for (int64_t k : {int64_t(20), int64_t(500)}) { // the small kernel, then depth blocks
          INFO((dtype == DType::F64 ? "f64" : "f32") << (relu ? " relu" : "") << " k " << k);
          auto fused = [&](Graph& g, const std::vector<NodeId>& x, bool magnitude) {
            Shape out = Shape({2, 15, 37}, dtype);
            if (magnitude) {
              NodeId p = g.fused_matmul_bias_act(abs_of(g, x[0]), abs_of(g, x[1]), abs_of(g, x[2]),
                                                 std::nullopt, out);
              return g.add(p, abs_of(g, x[3]));
            }
            std::optional<Activation> act;
            if (relu) act = Activation::Relu;
            NodeId p = g.fused_matmul_bias_act(x[0], x[1], x[2], act, out);
            return residual_first ? g.add(x[3], p) : g.add(p, x[3]);
          };
          std::string plan =
              jit_matches_interpreter({{2, 15, k}, {k, 37}, {37}, {2, 15, 37}}, k, fused, dtype);
          CHECK(has_step(plan, "gemm", "add"));
          CHECK(plan.find("interp ") == std::string::npos);
          CHECK(plan.find(": kernel ") == std::string::npos); // no element-wise step for the add
        }
  // With an activation the GEMM runs as a kernel after the product, and the residual after it.
  auto gelu = [](Graph& g, const std::vector<NodeId>& x, bool magnitude) {
    Shape out = Shape({20, 33}, DType::F32);
    if (magnitude)
      return g.add(g.fused_matmul_bias_act(abs_of(g, x[0]), abs_of(g, x[1]), abs_of(g, x[2]),
                                           std::nullopt, out),
                   abs_of(g, x[3]));
    return g.add(g.fused_matmul_bias_act(x[0], x[1], x[2], Activation::Gelu, out), x[3]);
  };
  for (int64_t k : {int64_t(9), int64_t(700)}) {
    std::string plan = jit_matches_interpreter({{20, k}, {k, 33}, {33}, {20, 33}}, k, gelu);
    CHECK(has_step(plan, "gemm", "add"));
  }
  // A product read by another node too keeps its own step (its value must exist).
  auto shared = [](Graph& g, const std::vector<NodeId>& x, bool magnitude) {
    NodeId a = magnitude ? abs_of(g, x[0]) : x[0], b = magnitude ? abs_of(g, x[1]) : x[1];
    NodeId p = g.mm(a, b);
    return g.mul(g.add(p, magnitude ? abs_of(g, x[2]) : x[2]), p);
  };
  std::string plan = jit_matches_interpreter({{7, 5}, {5, 9}, {7, 9}}, 5, shared);
  CHECK(has_step(plan, "gemm", "matmul"));
  CHECK(!has_step(plan, "gemm", "add"));
}
