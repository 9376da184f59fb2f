// tests/test_kernels.cpp -- the native element-wise kernels' calling convention (jit/lower.hpp):
// a call on [begin, end) writes exactly those output elements, whatever the range's length and
// alignment (vector kernels run full vectors, shift the last one back to the row's end and run
// rows shorter than a vector in padded copies), over rows of every length.
#include "../jit/lower.hpp"

#include <rlx/ir/graph.hpp> // not rlx.hpp: its rlx::jit() would clash with namespace rlx::jit
#include <rlx/runtime.hpp>

#include <doctest/doctest.h>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

using namespace rlx::ir;

namespace {

constexpr int64_t kGuard = 48; // sentinel elements on each side of every buffer
constexpr float kSentinel = -12345.0f;

/// y[r, c] = x[r, c] * 2 + b[c] over [rows, cols], compiled as one kernel: contiguous x, a
/// row-broadcast b (cols > 1) or a scalar-like b (cols == 1: one row spans everything).
struct Case {
  int64_t rows, cols;
  rlx::jit::NativeKernel kernel;
  std::vector<char> operand; ///< per kernel operand: 'x', 'b' or 'c' (an inlined constant)
};

Case compile(int64_t rows, int64_t cols) {
  Graph g("k");
  NodeId x = g.input("x", Shape({rows, cols}, DType::F32));
  NodeId b = g.input("b", Shape({cols}, DType::F32));
  g.set_outputs({g.add(g.mul(x, g.constant(2.0, DType::F32)), b)});
  LirModule plan = plan_lir(g, rlx::plan_options(rlx::Backend::Jit));
  REQUIRE(plan.kernels.size() == 1);
  const FusedKernel& k = plan.kernels[0];
  std::vector<char> operand;
  for (NodeId in : k.inputs) operand.push_back(in == x ? 'x' : in == b ? 'b' : 'c');
  return {rows, cols, rlx::jit::lower_elementwise(plan.mir, k, "range_kernel"), operand};
}

/// n floats set to kSentinel with kGuard more on each side; the first of the n is 64-byte
/// aligned, as the executables' buffers are (kernels may rely on it).
struct Guarded {
  std::vector<float> storage;
  float* data; ///< the first of the n
  explicit Guarded(int64_t n) : storage(std::size_t(n + 2 * kGuard + 16), kSentinel) {
    float* p = storage.data() + kGuard;
    while (reinterpret_cast<uintptr_t>(p) % 64 != 0) ++p;
    data = p;
  }
  float& operator[](int64_t i) { return data[i]; } ///< i in [-kGuard, n + kGuard)
};

/// Calls the kernel on [begin, end) over guarded buffers; returns the first problem found.
std::string run_range(const Case& c, int64_t begin, int64_t end) {
  int64_t n = c.rows * c.cols;
  Guarded x(n), b(c.cols), y(n);
  for (int64_t i = 0; i < n; ++i) x[i] = float(i % 97) - 40.0f;
  for (int64_t i = 0; i < c.cols; ++i) b[i] = float(i % 13) * 0.25f;
  std::vector<void*> bufs;
  for (char o : c.operand) bufs.push_back(o == 'x' ? x.data : o == 'b' ? b.data : nullptr);
  bufs.push_back(y.data);
  c.kernel.fn(bufs.data(), begin, end);
  for (int64_t i = -kGuard; i < n + kGuard; ++i) {
    float got = y[i];
    bool inside = i >= begin && i < end;
    float want = inside ? x[i] * 2.0f + b[i % c.cols] : kSentinel;
    if (got != want)
      return "shape [" + std::to_string(c.rows) + ", " + std::to_string(c.cols) + "], range [" +
             std::to_string(begin) + ", " + std::to_string(end) + "): element " +
             std::to_string(i) + " is " + std::to_string(got) + ", want " + std::to_string(want);
  }
  return "";
}

} // namespace

TEST_CASE("kernels: a call writes exactly the elements of its range, for rows of any length") {
  // Row lengths around the vector widths (4, 8, 16 lanes) and their multiples; one-row kernels
  // (cols == 1 broadcasts nothing along rows: the whole range is one row).
  for (auto [rows, cols] : std::vector<std::pair<int64_t, int64_t>>{{1, 1},
                                                                    {3, 1},
                                                                    {1, 5},
                                                                    {4, 7},
                                                                    {3, 15},
                                                                    {2, 16},
                                                                    {3, 17},
                                                                    {2, 31},
                                                                    {2, 33},
                                                                    {1, 64},
                                                                    {2, 100},
                                                                    {37, 1},
                                                                    {64, 1},
                                                                    {300, 1}}) {
    Case c = compile(rows, cols);
    REQUIRE(bool(c.kernel.fn));
    int64_t n = rows * cols;
    std::vector<int64_t> cuts{0, 1, 5, 15, 16, 17, 31, 33, n / 2, n - 17, n - 16, n - 1, n};
    for (int64_t begin : cuts)
      for (int64_t end : cuts) {
        if (begin < 0 || end > n || begin >= end) continue;
        std::string problem = run_range(c, begin, end);
        INFO(problem);
        CHECK(problem.empty());
      }
  }
}

TEST_CASE("kernels: outputs larger than the caches stream and still write exactly their range") {
  // Streaming stores are opt-in (RLX_STREAM_STORES=1, read at each lowering).
  struct Stream {
    Stream() { ::setenv("RLX_STREAM_STORES", "1", 1); }
    ~Stream() { ::unsetenv("RLX_STREAM_STORES"); }
  } on;
  // 17 MiB of f32 output: above lower_elementwise's streaming threshold (16 MiB), in one row
  // (cols == 1) and in rows of 4096. Streaming kernels take ranges in 16-element blocks, as the
  // executable calls them.
  for (auto [rows, cols] :
       std::vector<std::pair<int64_t, int64_t>>{{int64_t(17) << 18, 1}, {1088, 4096}}) {
    Case c = compile(rows, cols);
    int64_t n = rows * cols;
    for (auto [begin, end] : std::vector<std::pair<int64_t, int64_t>>{
             {0, n}, {16, n - 32}, {16, n / 2}, {n / 2 + 16, n}}) {
      std::string problem = run_range(c, begin, end);
      INFO(problem);
      CHECK(problem.empty());
    }
  }
}
