// tests/test_attention.cpp -- attention on the JIT (jit/attention.cpp: the GEMM for Q Kᵀ and
// for the weights times V, the masked softmax between) against the interpreter: every mask kind,
// broadcast masks, a scale and a logit softcap, odd sizes around the GEMM's register tile,
// queries aligned to the end of the keys, q/k/v as separate tensors and as narrows of one fused
// QKV tensor (read in place, no copy), masked keys whose values are not finite; and the
// executable's arena: two threads at once, and results that stay valid after the next call.
#include "support/compare.hpp"

#include <doctest/doctest.h>

#include <random>
#include <string>
#include <thread>
#include <vector>

using namespace rlx;
using namespace rlx::ir;
using rlx::Buffer;

namespace {

Buffer random_buffer(const std::vector<int64_t>& dims, uint32_t seed, double lo = -1.0,
                     double hi = 1.0) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(lo, hi);
  Buffer b(Shape::of(dims, DType::F32));
  for (int64_t i = 0; i < b.numel(); ++i) b.set_f64(i, u(rng));
  return b;
}

/// Whether this host runs matmul on the generated GEMM (so attention runs natively too).
bool host_has_gemm() {
  Graph g("probe");
  NodeId a = g.input("a", Shape({2, 2}, DType::F32));
  g.set_outputs({g.mm(a, a)});
  return compile(g, Backend::Jit)->describe().find("gemm ") != std::string::npos;
}

struct Layout {
  bool fused_qkv = false; ///< q, k, v are narrows of one [B, S, 3W] tensor
  bool computed = false;  ///< ... computed by a kernel (tanh) rather than fed
};

struct Problem {
  std::string name;
  AttentionAttrs attrs;
  int64_t batch, sq, sk;
  std::vector<int64_t> mask_dims{}; ///< Custom / Bias
  Layout layout{};
};

/// The problem's graph and leaves (graph order); the mask's values come from `mask_values`
/// when given.
struct Built {
  Graph g{"attention"};
  std::vector<Buffer> leaves;
};

Built build(const Problem& p, uint32_t seed, const std::vector<double>& mask_values = {}) {
  Built b;
  Graph& g = b.g;
  int64_t w = p.attrs.num_heads * p.attrs.head_dim;
  NodeId q, k, v;
  if (p.layout.fused_qkv) {
    NodeId x = g.input("qkv", Shape({p.batch, p.sq, 3 * w}, DType::F32));
    b.leaves.push_back(random_buffer({p.batch, p.sq, 3 * w}, seed));
    if (p.layout.computed) x = g.tanh(x);
    q = g.narrow_(x, 2, 0, w), k = g.narrow_(x, 2, w, w), v = g.narrow_(x, 2, 2 * w, w);
  } else {
    q = g.input("q", Shape({p.batch, p.sq, w}, DType::F32));
    k = g.input("k", Shape({p.batch, p.sk, w}, DType::F32));
    v = g.input("v", Shape({p.batch, p.sk, w}, DType::F32));
    b.leaves.push_back(random_buffer({p.batch, p.sq, w}, seed));
    b.leaves.push_back(random_buffer({p.batch, p.sk, w}, seed + 1));
    b.leaves.push_back(random_buffer({p.batch, p.sk, w}, seed + 2));
  }
  std::vector<NodeId> ins{q, k, v};
  if (!p.mask_dims.empty()) {
    ins.push_back(g.input("mask", Shape::of(p.mask_dims, DType::F32)));
    Buffer m = p.attrs.mask == MaskType::Custom ? random_buffer(p.mask_dims, seed + 3, 0, 1)
                                                : random_buffer(p.mask_dims, seed + 3, -2, 2);
    if (p.attrs.mask == MaskType::Custom)
      for (int64_t i = 0; i < m.numel(); ++i) m.set_f64(i, m.get_f64(i) < 0.35 ? 0.0 : 1.0);
    for (std::size_t i = 0; i < mask_values.size(); ++i) m.set_f64(int64_t(i), mask_values[i]);
    b.leaves.push_back(m);
  }
  g.set_outputs({g.add_inferred(Op(OpKind::Attention, p.attrs), ins)});
  return b;
}

/// Runs both backends and compares; returns the JIT's plan.
std::string jit_matches_interpreter(const Built& b) {
  test::RunResult want = test::run_on(Backend::Interp, b.g, b.leaves);
  test::RunResult got = test::run_on(Backend::Jit, b.g, b.leaves, true);
  REQUIRE_MESSAGE(!want.error, *want.error);
  test::Comparison c = test::compare_runs(b.g, want, got, "jit");
  CHECK_MESSAGE(c.problems.empty(), c.problems);
  return compile(b.g, Backend::Jit)->describe();
}

std::vector<Problem> problems() {
  using M = MaskType;
  return {
      {"no mask, odd sizes", {3, 5, M::None}, 2, 7, 11},
      {"no mask, one head of 64, rows past the register tile", {1, 64, M::None}, 1, 130, 130},
      {"causal, queries at the end of the keys", {2, 17, M::Causal}, 3, 5, 9},
      {"causal, more queries than keys (leading rows fully masked)", {2, 4, M::Causal}, 1, 9, 4},
      {"sliding window 3", {4, 8, M::SlidingWindow, 3}, 1, 13, 13},
      {"custom mask [B, Sk], one batch fully masked", {2, 6, M::Custom}, 3, 6, 10, {3, 10}},
      {"custom mask broadcast [1, Sk]", {3, 7, M::Custom}, 2, 5, 33, {1, 33}},
      {"bias [B, H, Sq, Sk] with a scale and a softcap",
       {3, 4, M::Bias, 0, 0.7f, 1.5f},
       2,
       6,
       7,
       {2, 3, 6, 7}},
      {"bias broadcast [1, 1, Sq, Sk]", {2, 9, M::Bias}, 2, 15, 15, {1, 1, 15, 15}},
      {"bias broadcast [B, 1, 1, Sk]", {2, 3, M::Bias}, 2, 4, 19, {2, 1, 1, 19}},
      {"softcap alone", {3, 5, M::None, 0, std::nullopt, 30.0f}, 1, 7, 9},
      {"BERT-like heads, custom mask", {12, 32, M::Custom}, 2, 40, 40, {2, 40}},
      {"fused QKV fed, custom mask", {4, 8, M::Custom}, 2, 15, 15, {2, 15}, {true, false}},
      {"fused QKV computed by a kernel, causal", {3, 16, M::Causal}, 2, 21, 21, {}, {true, true}},
  };
}

} // namespace

TEST_CASE("the JIT's attention agrees with the interpreter on every mask kind and odd sizes") {
  bool native = host_has_gemm();
  uint32_t seed = 11;
  for (const Problem& p : problems()) {
    INFO(p.name);
    std::string plan = jit_matches_interpreter(build(p, seed += 10));
    if (native) CHECK_MESSAGE(plan.find("attention %") != std::string::npos, plan);
    // The narrows of a fused QKV tensor are read in place: no step copies them.
    if (native && p.layout.fused_qkv)
      CHECK_MESSAGE(plan.find("interp ") == std::string::npos, plan);
  }
}

TEST_CASE("a masked key whose value is inf or NaN is skipped, as the interpreter skips it") {
  Problem p{"custom", {2, 4, MaskType::Custom}, 2, 3, 6, {2, 6}};
  Built b = build(p, 5, {1, 1, 0, 1, 0, 1, /* batch 1 */ 0, 0, 0, 0, 0, 0});
  Buffer& v = b.leaves[2];
  v.set_f64(2 * 8 + 3, std::numeric_limits<double>::infinity()); // batch 0, key 2 (masked)
  v.set_f64(4 * 8 + 6, std::nan(""));                            // batch 0, key 4 (masked)
  v.set_f64((6 + 1) * 8, std::nan(""));                          // batch 1: all keys masked
  jit_matches_interpreter(b);
  Problem c{"causal", {1, 8, MaskType::Causal}, 1, 4, 4};
  Built bc = build(c, 7);
  bc.leaves[2].set_f64(3 * 8 + 1,
                       std::numeric_limits<double>::infinity()); // only the last query sees key 3
  jit_matches_interpreter(bc);
  // A bias of -inf on every key of query 0: that row is zeros, whatever the values are.
  double inf = std::numeric_limits<double>::infinity();
  Problem bias{"bias", {1, 8, MaskType::Bias}, 1, 3, 4, {1, 1, 3, 4}};
  Built bb = build(bias, 9, {-inf, -inf, -inf, -inf});
  bb.leaves[2].set_f64(2 * 8 + 5, inf);
  jit_matches_interpreter(bb);
}

TEST_CASE("one executable runs from two threads at once and its results outlive the next call") {
  Problem p{"fused", {4, 8, MaskType::Custom}, 2, 15, 15, {2, 15}, {true, true}};
  Built a = build(p, 21), b = build(p, 31);
  auto exe = compile(a.g, Backend::Jit);
  auto run = [&](const Built& x) {
    std::vector<const Buffer*> ptrs;
    for (const Buffer& l : x.leaves) ptrs.push_back(&l);
    return exe->run(ptrs)[0];
  };
  Buffer want_a = run(a), want_b = run(b);
  REQUIRE(want_a != want_b);
  Buffer kept = run(a), copy = kept;
  run(b); // the arena is reused: what the first call returned must not change
  CHECK(kept == copy);
  std::vector<Buffer> got_a(50), got_b(50);
  std::thread t1([&] {
    for (Buffer& r : got_a) r = run(a);
  });
  std::thread t2([&] {
    for (Buffer& r : got_b) r = run(b);
  });
  t1.join();
  t2.join();
  for (std::size_t i = 0; i < got_a.size(); ++i) {
    CHECK(got_a[i] == want_a);
    CHECK(got_b[i] == want_b);
  }
}
