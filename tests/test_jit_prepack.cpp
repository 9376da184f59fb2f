// tests/test_jit_prepack.cpp -- operands the JIT packs once per executable: a GEMM step's B that
// is a constant of the graph (a weight baked by param_specialize) and q_matmul's constant w.
// The JIT must agree with the interpreter on the first run and every later one, from two
// threads running a fresh executable at once, on each GEMM ISA of the host; it must give the
// same bits as the same graph with the weight fed (packed on every call), pack each constant
// once per step and ISA, and read a fed weight anew on every call (no cache on its address).
#include "../jit/gemm.hpp"
#include "../jit/gemm_step.hpp"
#include "../jit/qgemm.hpp"

#include <rlx/interp.hpp>
#include <rlx/ir/graph.hpp> // not rlx.hpp: its rlx::jit() would clash with namespace rlx::jit
#include <rlx/memory.hpp>
#include <rlx/passes.hpp>
#include <rlx/runtime.hpp>

#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <latch>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

using namespace rlx::ir;
using rlx::Buffer;
using rlx::jit::GemmIsa;

namespace {

std::vector<GemmIsa> host_isas() {
  GemmIsa host = rlx::jit::gemm_host_isa();
  if (host == GemmIsa::Avx512) return {GemmIsa::Avx512, GemmIsa::Avx2};
  if (host == GemmIsa::Avx2) return {GemmIsa::Avx2};
  return {};
}

/// Forces an ISA for a scope, back to the host's best afterwards (also when a check throws).
struct ForceIsa {
  explicit ForceIsa(GemmIsa isa) { rlx::jit::set_gemm_isa(isa); }
  ~ForceIsa() { rlx::jit::set_gemm_isa(GemmIsa::None); }
};

Buffer random_buffer(const std::vector<int64_t>& dims, DType dtype, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(-1, 1);
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  std::vector<double> v(static_cast<std::size_t>(n));
  for (double& x : v) x = u(rng);
  return Buffer::from_f64(Shape::of(dims, dtype), v);
}

/// Executables are cached by the graph's text: a name of its own gives a fresh one.
std::string fresh_name(const std::string& what) {
  static int next = 0;
  return what + "_" + std::to_string(next++);
}

/// One product with a weight "w": the graph with w fed (a Param) and with w baked into a
/// constant, its leaves (x, then w, then the rest) and the contraction's depth.
struct Case {
  std::string name;
  std::vector<int64_t> x, w; ///< shapes; w is read transposed when `transposed`
  bool transposed = false, bias = false, gelu = false;
  DType dtype = DType::F32;
};

struct Built {
  Graph fed, baked, magnitude; ///< magnitude: |x| @ |w| (+ |bias|, + |r|), the error's scale
  std::vector<Buffer> fed_leaves, baked_leaves;
  int64_t k = 0;
};

NodeId abs_of(Graph& g, NodeId x) { return g.activation(Activation::Abs, x, g.shape(x)); }

Built build(const Case& c, uint32_t seed) {
  Built b;
  b.k = c.transposed ? c.w.back() : c.w[c.w.size() - 2];
  std::vector<int64_t> out = c.x;
  out.back() = c.transposed ? c.w[c.w.size() - 2] : c.w.back();
  Buffer w = random_buffer(c.w, c.dtype, seed + 1);
  std::vector<Buffer> rest;
  auto make = [&](bool magnitude) {
    Graph g(fresh_name(c.name));
    rest.clear();
    NodeId x = g.input("x", Shape::of(c.x, c.dtype));
    NodeId wp = g.param("w", Shape::of(c.w, c.dtype));
    if (magnitude) x = abs_of(g, x), wp = abs_of(g, wp);
    NodeId rhs = c.transposed ? g.transpose_(wp, {1, 0}) : wp;
    NodeId y = g.mm(x, rhs);
    if (c.bias) {
      NodeId bias = g.input("bias", Shape({out.back()}, c.dtype));
      rest.push_back(random_buffer({out.back()}, c.dtype, seed + 2));
      y = g.add(y, magnitude ? abs_of(g, bias) : bias);
    }
    if (c.gelu && !magnitude) y = g.gelu(y);
    g.set_outputs({y});
    return g;
  };
  b.fed = make(false);
  b.magnitude = make(true);
  b.baked = b.fed;
  b.baked.name = fresh_name(c.name + "_baked");
  rlx::passes::PassOptions opts;
  opts.params["w"] = w;
  CHECK(rlx::passes::param_specialize(b.baked, opts));
  Buffer x = random_buffer(c.x, c.dtype, seed);
  b.fed_leaves = {x, w};
  b.baked_leaves = {x};
  for (const Buffer& r : rest) {
    b.fed_leaves.push_back(r);
    b.baked_leaves.push_back(r);
  }
  return b;
}

std::vector<const Buffer*> pointers(const std::vector<Buffer>& v) {
  std::vector<const Buffer*> p;
  for (const Buffer& b : v) p.push_back(&b);
  return p;
}

/// Elements of `got` off the interpreter's result by more than a dot product's rounding in the
/// type ((k + 3) ulps of the magnitude) plus, after gelu, its f32 tolerance.
int64_t off_interpreter(const Built& b, const Case& c, const Buffer& got) {
  std::vector<double> want =
      rlx::compile(b.fed, rlx::Backend::Interp)->run(pointers(b.fed_leaves))[0].to_f64();
  std::vector<double> mag =
      rlx::compile(b.magnitude, rlx::Backend::Interp)->run(pointers(b.fed_leaves))[0].to_f64();
  std::vector<double> v = got.to_f64();
  REQUIRE(v.size() == want.size());
  const bool f64 = c.dtype == DType::F64;
  const double ulp = f64 ? 0x1p-53 : 0x1p-24, rel = f64 ? 1e-13 : 2e-5, abs = f64 ? 1e-14 : 1e-6;
  int64_t bad = 0;
  for (std::size_t i = 0; i < v.size(); ++i) {
    double bound = 1.2 * double(b.k + 3) * ulp * mag[i] + rel * std::fabs(want[i]) + abs;
    bad += !(std::fabs(v[i] - want[i]) <= bound);
  }
  return bad;
}

bool same_bits(const Buffer& a, const Buffer& b) {
  return a.shape() == b.shape() && a.bytes().size() == b.bytes().size() &&
         std::memcmp(a.bytes().data(), b.bytes().data(), a.bytes().size()) == 0;
}

std::vector<Case> cases() {
  return {
      // Batches sharing B ([B, S, D] @ [D, N]), rows past the direct-B limit, two depth blocks.
      {"linear", {3, 50, 400}, {400, 90}},
      {"linear_bias_gelu", {2, 37, 170}, {170, 95}, false, true, true},
      // 60 rows: the blocked path would read a fed B in place; a packed one is read packed.
      {"bert_small_rows", {4, 15, 96}, {96, 200}, false, true},
      // Over constant_fold's limit (65536 elements), so the transpose stays and is read strided.
      {"transposed", {2, 60, 300}, {260, 300}, true},
      {"f64", {2, 40, 130}, {130, 33}, false, true, false, DType::F64},
  };
}

} // namespace

TEST_CASE("a GEMM step packs a constant B once and agrees with the interpreter on every run") {
  if (!rlx::jit::gemm_supported()) return;
  uint32_t seed = 100;
  for (const Case& c : cases()) {
    INFO(c.name);
    Built b = build(c, seed += 10);
    for (GemmIsa isa : host_isas()) {
      ForceIsa force(isa);
      INFO(int(isa));
      auto baked = rlx::compile(b.baked, rlx::Backend::Jit);
      auto fed = rlx::compile(b.fed, rlx::Backend::Jit);
      CHECK(baked->describe().find("gemm ") != std::string::npos);
      Buffer want = fed->run(pointers(b.fed_leaves))[0];
      CHECK(off_interpreter(b, c, want) == 0);
      int64_t packs = rlx::jit::gemm_constant_b_packs();
      for (int run = 0; run < 3; ++run) {
        CAPTURE(run);
        Buffer got = baked->run(pointers(b.baked_leaves))[0];
        CHECK(same_bits(got, want));
        CHECK(off_interpreter(b, c, got) == 0);
      }
      CHECK(rlx::jit::gemm_constant_b_packs() - packs == 1);
    }
  }
}

TEST_CASE("two threads running a fresh executable at once pack its constant B once") {
  if (!rlx::jit::gemm_supported()) return;
  Case c{"two_threads", {4, 40, 200}, {200, 300}, false, true};
  Built b = build(c, 7);
  Buffer want = rlx::compile(b.fed, rlx::Backend::Jit)->run(pointers(b.fed_leaves))[0];
  CHECK(off_interpreter(b, c, want) == 0);
  auto baked = rlx::compile(b.baked, rlx::Backend::Jit);
  int64_t packs = rlx::jit::gemm_constant_b_packs();
  std::latch start(2);
  std::vector<std::vector<Buffer>> got(2);
  auto body = [&](std::size_t t) {
    start.arrive_and_wait();
    for (int run = 0; run < 4; ++run) got[t].push_back(baked->run(pointers(b.baked_leaves))[0]);
  };
  std::thread a(body, 0), other(body, 1);
  a.join();
  other.join();
  CHECK(rlx::jit::gemm_constant_b_packs() - packs == 1);
  for (const auto& runs : got) {
    REQUIRE(runs.size() == 4);
    for (const Buffer& r : runs) CHECK(same_bits(r, want));
  }
}

TEST_CASE("a weight fed as a param is read anew on every call, also when its bytes change") {
  if (!rlx::jit::gemm_supported()) return;
  Case c{"fed_changes", {2, 50, 120}, {120, 70}};
  Built b = build(c, 21);
  auto fed = rlx::compile(b.fed, rlx::Backend::Jit);
  int64_t packs = rlx::jit::gemm_constant_b_packs();
  Buffer first = fed->run(pointers(b.fed_leaves))[0];
  CHECK(off_interpreter(b, c, first) == 0);
  // The same Buffer object, at the same address, with other values.
  Buffer& w = b.fed_leaves[1];
  for (int64_t i = 0; i < w.numel(); ++i) w.set_f64(i, 0.5 - w.get_f64(i));
  Buffer second = fed->run(pointers(b.fed_leaves))[0];
  CHECK_FALSE(same_bits(first, second));
  CHECK(off_interpreter(b, c, second) == 0);
  CHECK(rlx::jit::gemm_constant_b_packs() == packs);
}

TEST_CASE("a constant B that differs between batches is read per batch, unpacked") {
  if (!rlx::jit::gemm_supported()) return;
  Case c{"batched_b", {3, 100, 128}, {3, 128, 100}};
  Built b = build(c, 31);
  auto baked = rlx::compile(b.baked, rlx::Backend::Jit);
  int64_t packs = rlx::jit::gemm_constant_b_packs();
  for (int run = 0; run < 2; ++run)
    CHECK(off_interpreter(b, c, baked->run(pointers(b.baked_leaves))[0]) == 0);
  CHECK(rlx::jit::gemm_constant_b_packs() == packs);
}

TEST_CASE("q_matmul packs a constant w once and keeps the interpreter's bits") {
  // x i8 [2, 7, 45] (K not a multiple of 4, rows past one tile), w i8 [45, 70] baked, bias i32.
  Graph g(fresh_name("q_matmul"));
  NodeId x = g.input("x", Shape({2, 7, 45}, DType::I8));
  NodeId w = g.param("w", Shape({45, 70}, DType::I8));
  NodeId bias = g.input("bias", Shape({70}, DType::I32));
  g.set_outputs({g.q_matmul(x, w, bias, 3, -2, 5, 0.0123f, Shape({2, 7, 70}, DType::I8))});
  std::mt19937 rng(5);
  auto ints = [&](std::vector<int64_t> dims, DType dtype, int lo, int hi) {
    std::uniform_int_distribution<int> u(lo, hi);
    int64_t n = 1;
    for (int64_t d : dims) n *= d;
    std::vector<int64_t> v(static_cast<std::size_t>(n));
    for (int64_t& e : v) e = u(rng);
    return Buffer::from_i64(Shape::of(dims, dtype), v);
  };
  Buffer xv = ints({2, 7, 45}, DType::I8, -128, 127), wv = ints({45, 70}, DType::I8, -128, 127),
         bv = ints({70}, DType::I32, -5000, 5000);
  std::vector<const Buffer*> fed = {&xv, &wv, &bv}, leaves = {&xv, &bv};
  Buffer want = rlx::compile(g, rlx::Backend::Interp)->run(fed)[0];
  Graph baked = g;
  baked.name = fresh_name("q_matmul_baked");
  rlx::passes::PassOptions opts;
  opts.params["w"] = wv;
  REQUIRE(rlx::passes::param_specialize(baked, opts));
  auto exe = rlx::compile(baked, rlx::Backend::Jit);
  bool native = exe->describe().find("qgemm") != std::string::npos;
  int64_t packs = rlx::jit::qgemm_constant_w_packs();
  std::latch start(2);
  std::vector<std::vector<Buffer>> got(2);
  auto body = [&](std::size_t t) {
    start.arrive_and_wait();
    for (int run = 0; run < 3; ++run) got[t].push_back(exe->run(leaves)[0]);
  };
  std::thread a(body, 0), other(body, 1);
  a.join();
  other.join();
  for (const auto& runs : got)
    for (const Buffer& r : runs) CHECK(same_bits(r, want));
  // Hosts without AVX-512 VNNI run the interpreter's kernel, which packs nothing.
  CHECK(rlx::jit::qgemm_constant_w_packs() - packs == (native ? 1 : 0));
}

TEST_CASE("a constant B the memory limit has no room to copy is packed per call instead") {
  if (!rlx::jit::gemm_supported()) return;
  Case c{"no_room", {2, 50, 512}, {512, 1024}};
  Built b = build(c, 41);
  Buffer want = rlx::compile(b.fed, rlx::Backend::Jit)->run(pointers(b.fed_leaves))[0];
  auto baked = rlx::compile(b.baked, rlx::Backend::Jit);
  std::vector<const Buffer*> leaves = pointers(b.baked_leaves);
  int64_t packs = rlx::jit::gemm_constant_b_packs();
  // Room for the result (400 KB) but not for a 2 MiB copy of B.
  const std::size_t limit = rlx::memory_limit();
  rlx::set_memory_limit(rlx::memory_stats().bytes_live + (1 << 20));
  std::optional<Buffer> got;
  try {
    got = baked->run(leaves)[0];
  } catch (...) {
    rlx::set_memory_limit(limit);
    throw;
  }
  rlx::set_memory_limit(limit);
  CHECK(rlx::jit::gemm_constant_b_packs() == packs);
  REQUIRE(got);
  CHECK(same_bits(*got, want));
  CHECK(same_bits(baked->run(leaves)[0], want));
}
