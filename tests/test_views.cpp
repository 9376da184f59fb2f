// tests/test_views.cpp -- narrows and slices that are contiguous ranges of their operand at a
// 64-byte aligned offset run as View steps of the JIT (a pointer addition, no copy) when only
// kernels read them; the JIT agrees with the interpreter through element-wise, row, GEMM and
// library readers, views of views, and a view whose root's arena slot must outlive the view's
// last reader. Views the caller receives or the interpreter's kernels read stay copies.
#include "support/compare.hpp"

#include <doctest/doctest.h>

#include <random>
#include <string>
#include <vector>

using namespace rlx;
using namespace rlx::ir;
using rlx::Buffer;

namespace {

Buffer random_buffer(const Shape& s, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  Buffer b(s);
  for (int64_t i = 0; i < b.numel(); ++i) b.set_f64(i, u(rng));
  return b;
}

/// Runs g on both backends with random leaves; returns the JIT's plan.
std::string jit_matches_interpreter(const Graph& g, uint32_t seed) {
  std::vector<Buffer> leaves;
  for (NodeId id : test::leaf_ids(g)) leaves.push_back(random_buffer(g.shape(id), seed++));
  test::RunResult want = test::run_on(Backend::Interp, g, leaves);
  test::RunResult got = test::run_on(Backend::Jit, g, leaves, true);
  REQUIRE_MESSAGE(!want.error, *want.error);
  test::Comparison c = test::compare_runs(g, want, got, "jit");
  CHECK_MESSAGE(c.problems.empty(), c.problems);
  return compile(g, Backend::Jit)->describe();
}

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

const Shape kX({4, 16, 8}, DType::F32); // one [16, 8] f32 block is 512 bytes

} // namespace

TEST_CASE("a narrow along the leading axis that kernels read is a view, not a copy") {
  Graph g("views");
  NodeId x = g.input("x", kX);
  NodeId y = g.tanh(x);
  NodeId a = g.narrow_(y, 0, 1, 2); // element-wise reader
  NodeId b = g.softmax(g.narrow_(y, 0, 2, 2), -1, Shape({2, 16, 8}, DType::F32)); // row
  NodeId w = g.input("w", Shape({8, 5}, DType::F32));
  NodeId c = g.mm(g.narrow_(y, 0, 3, 1), w);            // GEMM reader: reads y at an offset
  NodeId d = g.narrow_(g.narrow_(y, 0, 1, 3), 0, 1, 2); // a view of a view
  g.set_outputs({g.mul(a, d), b, c});
  std::string plan = jit_matches_interpreter(g, 1);
  CHECK_MESSAGE(count(plan, "view %") == 4, plan);
  CHECK_MESSAGE(plan.find("interp ") == std::string::npos, plan);
}

TEST_CASE("a slice of a contiguous range is a view; unaligned, returned or interpreted ones copy") {
  Graph g("copies");
  NodeId x = g.input("x", Shape({1, 32, 16}, DType::F32));
  NodeId y = g.exp(x);
  NodeId s = g.slice(y, 1, 4, 8); // rows 4..12 of one batch: 256 bytes in
  NodeId out1 = g.mul(s, s);
  NodeId z = g.tanh(g.input("z", Shape({4, 3, 5}, DType::F32)));
  NodeId unaligned = g.mul(g.narrow_(z, 0, 1, 2), g.narrow_(z, 0, 2, 2)); // 60 and 120 bytes in
  NodeId returned = g.narrow_(y, 1, 0, 16);                               // the caller's buffer
  // cumsum over a leading axis runs on the interpreter (the JIT's row kernels scan the last).
  NodeId interpreted = g.cumsum(g.narrow_(y, 1, 16, 16), 1, false, Shape({1, 16, 16}, DType::F32));
  g.set_outputs({out1, unaligned, returned, interpreted});
  std::string plan = jit_matches_interpreter(g, 7);
  CHECK_MESSAGE(count(plan, "view %") == 1, plan);
  // Copies: the two unaligned narrows, the returned one, the one cumsum reads; and cumsum.
  CHECK_MESSAGE(count(plan, "interp %") == 5, plan);
}

TEST_CASE("a view keeps its root alive until the view's last reader") {
  // y is read only through v, at the very end; the row steps between make values as large as
  // y, which would take y's arena slot if its lifetime ended at the view.
  Graph g("lifetime");
  NodeId x = g.input("x", kX);
  NodeId y = g.tanh(x);
  NodeId v = g.narrow_(y, 0, 1, 2);
  NodeId s1 = g.softmax(g.exp(x), -1, kX);
  NodeId s2 = g.softmax(g.mul(s1, s1), -1, kX);
  NodeId s3 = g.softmax(g.mul(s2, s2), -1, kX);
  g.set_outputs({g.mul(v, g.narrow_(s3, 0, 0, 2))});
  std::string plan = jit_matches_interpreter(g, 3);
  CHECK_MESSAGE(count(plan, "view %") == 2, plan);
}
