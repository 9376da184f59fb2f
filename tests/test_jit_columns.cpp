// tests/test_jit_columns.cpp -- the JIT's column steps (jit/column_step.cpp): reduce_sum and
// reduce_mean over leading axes of f32 and f64 (a bias's gradient: the sum over [B, S] of
// [B, S, D]) accumulate each column in double, rows in order, so they equal both a plain double
// loop written here and the interpreter bit for bit: over several leading-axis shapes, odd sizes,
// size-1 axes among the reduced ones, more columns than one pass of accumulators holds, one and
// two threads, and a dynamic leading dim. Reductions of other layouts are not column steps.
#include "support/random.hpp"

#include <rlx/all.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

using rlx::Backend;
using rlx::Buffer;
using rlx::Tensor;
namespace ir = rlx::ir;
namespace test = rlx::test;

namespace {

struct Case {
  std::vector<int64_t> sizes;
  std::vector<int64_t> axes;
  bool mean = false, keep_dim = false;
  ir::DType dtype = ir::DType::F32;
};

/// The reduction of one input as a graph.
ir::Graph reduction(const Case& c) {
  ir::Graph g("columns");
  ir::NodeId x = g.input("x", ir::Shape::of(c.sizes, c.dtype));
  g.set_outputs({c.mean ? g.mean(x, c.axes, c.keep_dim) : g.sum(x, c.axes, c.keep_dim)});
  return g;
}

/// The sum (or mean) over the case's leading axes, written out: every column adds its rows in
/// order in double, then rounds to the dtype.
std::vector<double> by_hand(const Case& c, const Buffer& x) {
  int64_t rows = 1, cols = 1, rank = int64_t(c.sizes.size());
  for (int64_t a = 0; a < rank; ++a) {
    bool reduced = std::any_of(c.axes.begin(), c.axes.end(),
                               [&](int64_t r) { return (r < 0 ? r + rank : r) == a; });
    (reduced ? rows : cols) *= c.sizes[std::size_t(a)];
  }
  std::vector<double> out(std::size_t(cols), 0.0);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < cols; ++j) out[std::size_t(j)] += x.get_f64(r * cols + j);
  Buffer rounded(ir::Shape::of(std::vector<int64_t>{cols}, c.dtype));
  for (int64_t j = 0; j < cols; ++j)
    rounded.set_f64(j, c.mean ? out[std::size_t(j)] / double(rows) : out[std::size_t(j)]);
  return rounded.to_f64();
}

/// Whether the JIT's plan of g computes its output with a column step.
bool has_column_step(const ir::Graph& g) {
  for (const ir::LirStep& step : rlx::plan_for(g, Backend::Jit).steps)
    if (step.rule->name() == "column") return true;
  return false;
}

bool same_bytes(const Buffer& a, const Buffer& b) {
  return a.shape() == b.shape() && a.bytes().size() == b.bytes().size() &&
         std::memcmp(a.bytes().data(), b.bytes().data(), a.bytes().size()) == 0;
}

void check_case(const Case& c, uint64_t seed) {
  ir::Graph g = reduction(c);
  Buffer x = test::random_buffer(ir::Shape::of(c.sizes, c.dtype), seed);
  std::vector<const Buffer*> leaves{&x};
  Buffer jit = rlx::compile(g, Backend::Jit)->run(leaves)[0];
  Buffer interp = rlx::compile(g, Backend::Interp)->run(leaves)[0];
  CHECK(has_column_step(g));
  CHECK(same_bytes(jit, interp));
  CHECK(jit.to_f64() == by_hand(c, x));
}

} // namespace

TEST_CASE("column sums and means over leading axes equal a double loop and the interpreter bit "
          "for bit") {
  const std::vector<Case> cases = {
      {{3, 5, 7}, {0, 1}},                                   // the bias gradient's layout
      {{3, 5, 7}, {0, 1}, false, true},                      // keep_dim
      {{3, 5, 7}, {-3, -2}, true},                           // negative axes, mean
      {{2, 1, 9, 33}, {0, 2}, false, false, ir::DType::F64}, // a size-1 axis between
      {{1000, 17}, {0}, true, true},                         // many rows
      {{4, 3, 600}, {0, 1}, false, false, ir::DType::F64},   // more than one pass of columns
      {{7, 2, 3, 5}, {0, 1}, true, false, ir::DType::F32},   // two kept axes
  };
  uint64_t seed = 1;
  for (const Case& c : cases) {
    CAPTURE(seed);
    check_case(c, seed++);
  }
}

TEST_CASE("a column sum split over two threads equals the one-thread result and the interpreter") {
  struct Restore {
    int threads = rlx::num_threads();
    ~Restore() { rlx::set_num_threads(threads); }
  } restore;
  Case c{{16, 64, 1111}, {0, 1}};
  rlx::set_num_threads(2);
  check_case(c, 11);
  c.dtype = ir::DType::F64;
  c.mean = true;
  check_case(c, 12);
}

TEST_CASE("a column sum over a dynamic leading dim matches the interpreter at every size") {
  auto body = [](Tensor x) { return x.sum({0, 1}); };
  rlx::JitOptions dims{.dynamic_dims = {{0, 0, "n"}}, .backend = Backend::Jit};
  auto got = rlx::jit(body, dims);
  dims.backend = Backend::Interp;
  auto want = rlx::jit(body, dims);
  for (int64_t n = 1; n <= 9; ++n) {
    CAPTURE(n);
    Tensor x(test::random_buffer(ir::Shape::of(std::vector<int64_t>{n, 3, 35}, ir::DType::F32),
                                 uint64_t(n)));
    CHECK(same_bytes(got(x).buffer(), want(x).buffer()));
  }
  std::optional<ir::Graph> g = got.last_graph();
  REQUIRE(g.has_value());
  ir::DimBinding b;
  b.set(ir::symbol_id("n"), 4);
  CHECK(has_column_step(g->bind(b)));
}

TEST_CASE("reductions over trailing or interleaved axes, and of other dtypes, are not column "
          "steps, and still equal the interpreter") {
  const std::vector<Case> others = {
      {{5, 7}, {1}},       // a row sum: the row kernels'
      {{4, 6, 8}, {0, 2}}, // reduced, kept, reduced
      {{6, 1}, {0}},       // one column: a full sum
  };
  uint64_t seed = 20;
  for (const Case& c : others) {
    ir::Graph g = reduction(c);
    CHECK_FALSE(has_column_step(g));
    Buffer x = test::random_buffer(ir::Shape::of(c.sizes, c.dtype), seed++);
    std::vector<const Buffer*> leaves{&x};
    CHECK(rlx::compile(g, Backend::Jit)->run(leaves)[0].to_f64() ==
          rlx::compile(g, Backend::Interp)->run(leaves)[0].to_f64());
  }
  Case ints{{3, 4}, {0}, false, false, ir::DType::I32};
  CHECK_FALSE(has_column_step(reduction(ints)));
}
