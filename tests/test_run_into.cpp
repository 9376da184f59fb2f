// tests/test_run_into.cpp -- Executable::run_into and Executable::bind: a call into buffers the
// caller owns computes what run returns (and what a plain double-precision loop computes), on
// both backends, again and again; bad arguments and outputs overlapping leaves or each other are
// rlx::Errors naming the call, the shapes and the caller's line.
#include "support/backends.hpp"
#include "support/check_error.hpp"
#include "support/random.hpp"

#include <rlx/all.hpp>

#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

using rlx::Backend;
using rlx::Buffer;
using rlx::ErrorKind;
namespace ir = rlx::ir;
namespace test = rlx::test;

namespace {

ir::Shape f32(std::initializer_list<ir::Dim> dims) { return ir::Shape(dims, ir::DType::F32); }

/// C = A B of f32[n, n] operands.
ir::Graph gemm_graph(int64_t n) {
  ir::Graph g("gemm");
  ir::NodeId a = g.input("a", f32({n, n}));
  ir::NodeId b = g.input("b", f32({n, n}));
  g.set_outputs({g.matmul(a, b, f32({n, n}))});
  return g;
}

/// tanh(x) * y + x over f32[n].
ir::Graph elementwise_graph(int64_t n) {
  ir::Graph g("elementwise");
  ir::NodeId x = g.input("x", f32({n}));
  ir::NodeId y = g.input("y", f32({n}));
  g.set_outputs({g.add(g.mul(g.tanh(x), y), x)});
  return g;
}

/// Buffers of the outputs' shapes, filled with a value no output has, so that an output the
/// call leaves unwritten is seen.
std::vector<Buffer> output_buffers(const ir::Graph& g) {
  std::vector<Buffer> outs;
  for (ir::NodeId o : g.outputs) {
    Buffer b(g.shape(o));
    for (int64_t i = 0; i < b.numel(); ++i) b.set_f64(i, 1234.5);
    outs.push_back(std::move(b));
  }
  return outs;
}

template <class T> std::vector<T*> pointers(std::vector<Buffer>& buffers) {
  std::vector<T*> out;
  for (Buffer& b : buffers) out.push_back(&b);
  return out;
}

/// The executable of g on the default backend, with random leaves.
struct Call {
  std::shared_ptr<const rlx::Executable> exe;
  std::vector<Buffer> leaves;
  explicit Call(const ir::Graph& g, uint64_t seed = 1)
      : exe(rlx::compile(g, rlx::default_backend())) {
    for (const ir::Node& n : g.nodes())
      if (ir::has_trait(n.op.kind(), ir::kFed))
        leaves.push_back(test::random_buffer(n.shape, seed++));
  }
  std::vector<const Buffer*> leaf_ptrs() { return pointers<const Buffer>(leaves); }
};

/// run_into's outputs, and a bound call's (run twice), equal run's bit for bit.
void check_like_run(const ir::Graph& g) {
  Call c(g);
  CHECK(c.exe->backend() == rlx::default_backend());
  std::vector<Buffer> want = c.exe->run(c.leaf_ptrs());
  std::vector<Buffer> into = output_buffers(g);
  c.exe->run_into(c.leaf_ptrs(), pointers<Buffer>(into));
  std::vector<Buffer> bound = output_buffers(g);
  std::unique_ptr<rlx::BoundCall> call = c.exe->bind(c.leaf_ptrs(), pointers<Buffer>(bound));
  for (int twice = 0; twice < 2; ++twice) {
    call->run();
    REQUIRE(want.size() == g.outputs.size());
    for (std::size_t o = 0; o < want.size(); ++o) {
      CAPTURE(o);
      CHECK(into[o] == want[o]);
      CHECK(bound[o] == want[o]);
    }
  }
}

/// |got - want| within 1e-5 relative to the size of the terms (f32 rounding of k products).
void check_matmul(const Buffer& a, const Buffer& b, const Buffer& c, int64_t n) {
  int64_t bad = 0;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double want = 0, scale = 0;
      for (int64_t q = 0; q < n; ++q) {
        double t = a.get_f64(i * n + q) * b.get_f64(q * n + j);
        want += t;
        scale += std::fabs(t);
      }
      if (std::fabs(c.get_f64(i * n + j) - want) > 1e-6 * scale + 1e-7) ++bad;
    }
  CHECK(bad == 0);
}

std::string line_of(int line) { return "test_run_into.cpp:" + std::to_string(line) + ")"; }

} // namespace

TEST_CASE("run_into and a bound call compute a 16, 32 and 64 square product as run and a "
          "double-precision loop do") {
  test::on_both_backends([] {
    for (int64_t n : {16, 32, 64}) {
      CAPTURE(n);
      ir::Graph g = gemm_graph(n);
      check_like_run(g);
      Call c(g, uint64_t(n));
      std::vector<Buffer> into = output_buffers(g), bound = output_buffers(g);
      c.exe->run_into(c.leaf_ptrs(), pointers<Buffer>(into));
      check_matmul(c.leaves[0], c.leaves[1], into[0], n);
      auto call = c.exe->bind(c.leaf_ptrs(), pointers<Buffer>(bound));
      call->run();
      check_matmul(c.leaves[0], c.leaves[1], bound[0], n);
    }
  });
}

TEST_CASE("products with a bias and relu, a residual, batches and f64 run into buffers as run "
          "computes them") {
  test::on_both_backends([] {
    {
      ir::Graph g("bias_relu");
      ir::NodeId x = g.input("x", f32({12, 20}));
      ir::NodeId w = g.param("w", f32({20, 24}));
      ir::NodeId b = g.param("b", f32({24}));
      g.set_outputs({g.fused_matmul_bias_act(x, w, b, ir::Activation::Relu, f32({12, 24}))});
      check_like_run(g);
    }
    {
      ir::Graph g("bias_tanh"); // the activation as an epilogue kernel, not in the small kernel
      ir::NodeId x = g.input("x", f32({12, 20}));
      ir::NodeId w = g.param("w", f32({20, 24}));
      ir::NodeId b = g.param("b", f32({24}));
      g.set_outputs({g.fused_matmul_bias_act(x, w, b, ir::Activation::Tanh, f32({12, 24}))});
      check_like_run(g);
    }
    {
      ir::Graph g("residual"); // add(x @ w, r): the residual added in the product's store
      ir::NodeId x = g.input("x", f32({16, 16}));
      ir::NodeId w = g.param("w", f32({16, 16}));
      ir::NodeId r = g.input("r", f32({16, 16}));
      g.set_outputs({g.add(g.matmul(x, w, f32({16, 16})), r)});
      check_like_run(g);
    }
    {
      ir::Graph g("batched"); // three batches of their own B: one small kernel call per batch
      ir::NodeId x = g.input("x", f32({3, 8, 8}));
      ir::NodeId w = g.input("w", f32({3, 8, 8}));
      g.set_outputs({g.matmul(x, w, f32({3, 8, 8}))});
      check_like_run(g);
    }
    {
      ir::Graph g("f64");
      ir::Shape s({16, 16}, ir::DType::F64);
      ir::NodeId a = g.input("a", s);
      ir::NodeId b = g.input("b", s);
      g.set_outputs({g.matmul(a, b, s)});
      check_like_run(g);
      Call c(g);
      Buffer out = Buffer::uninitialized(s);
      std::vector<Buffer*> outs = {&out};
      c.exe->bind(c.leaf_ptrs(), outs)->run();
      check_matmul(c.leaves[0], c.leaves[1], out, 16);
    }
  });
}

TEST_CASE("outputs of no elements run into empty buffers") {
  test::on_both_backends([] {
    ir::Graph g("empty");
    ir::NodeId x = g.input("x", f32({0, 3}));
    ir::NodeId y = g.input("y", f32({4}));
    g.set_outputs({g.tanh(x), g.neg(y)});
    check_like_run(g);
  });
}

TEST_CASE("run_into and a bound call compute an element-wise graph as run and std::tanh do") {
  test::on_both_backends([] {
    for (int64_t n : {1, 37, 100000}) { // one chunk, and a kernel split over the pool
      CAPTURE(n);
      ir::Graph g = elementwise_graph(n);
      check_like_run(g);
      Call c(g);
      std::vector<Buffer> out = output_buffers(g);
      c.exe->bind(c.leaf_ptrs(), pointers<Buffer>(out))->run();
      int64_t bad = 0;
      for (int64_t i = 0; i < n; ++i) {
        double x = c.leaves[0].get_f64(i), y = c.leaves[1].get_f64(i);
        double want = std::tanh(x) * y + x;
        if (std::fabs(out[0].get_f64(i) - want) > 1e-6 * (std::fabs(want) + 1)) ++bad;
      }
      CHECK(bad == 0);
    }
  });
}

TEST_CASE("several outputs: a kernel's, a product's, a leaf, a constant and one output twice") {
  test::on_both_backends([] {
    ir::Graph g("several");
    ir::NodeId x = g.input("x", f32({8, 8}));
    ir::NodeId w = g.param("w", f32({8, 8}));
    ir::NodeId s = g.add(x, w);
    ir::NodeId p = g.matmul(s, w, f32({8, 8}));
    ir::NodeId k = g.constant(2.5, ir::DType::F32);
    g.set_outputs({s, p, x, k, p, g.mul(p, k)});
    check_like_run(g);
  });
}

TEST_CASE("a bound call runs row kernels, views, library steps and products in one plan") {
  test::on_both_backends([] {
    ir::Graph g("mixed");
    ir::NodeId x = g.input("x", f32({32, 64}));
    ir::NodeId w = g.param("w", f32({64, 16}));
    ir::NodeId s = g.softmax(g.mul(x, g.constant(2.0, ir::DType::F32)), -1, f32({32, 64}));
    ir::NodeId top = g.narrow_(s, 0, 0, 16); // a view: rows 0..15 of s, in place
    ir::NodeId p = g.matmul(g.tanh(top), w, f32({16, 16}));
    ir::NodeId spectrum = g.fft(g.add(x, x), false);
    g.set_outputs({p, g.sum(spectrum, {1}, false)});
    Call c(g);
    if (c.exe->backend() == Backend::Jit) {
      std::string plan = c.exe->describe();
      INFO(plan);
      CHECK(plan.find("interp") == std::string::npos); // so the bound call binds every step
      CHECK(plan.find("fftw") != std::string::npos);
      CHECK(plan.find("view") != std::string::npos);
      CHECK(plan.find("row") != std::string::npos);
      CHECK(plan.find("gemm") != std::string::npos);
    }
    check_like_run(g);
  });
}

TEST_CASE("the JIT's run_into and bound call allocate no buffer for their results") {
  if (!rlx::backend_available(Backend::Jit)) return;
  ir::Graph g = elementwise_graph(1 << 16); // 256 KiB: a pooled buffer when run returns it
  auto exe = rlx::compile(g, Backend::Jit);
  Buffer x = test::random_buffer(f32({1 << 16}), 1), y = test::random_buffer(f32({1 << 16}), 2);
  std::vector<const Buffer*> leaves = {&x, &y};
  Buffer out = Buffer::uninitialized(f32({1 << 16}));
  std::vector<Buffer*> outs = {&out};
  auto handed_out = [] {
    rlx::MemoryStats m = rlx::memory_stats();
    return m.reuses + m.fresh;
  };
  uint64_t before = handed_out();
  Buffer want = exe->run(leaves)[0];
  CHECK(handed_out() > before); // what the count sees: run's result
  before = handed_out();
  exe->run_into(leaves, outs);
  auto call = exe->bind(leaves, outs);
  uint64_t bound = handed_out();
  call->run();
  call->run();
  CHECK(handed_out() == bound);
  CHECK(bound == before);
  CHECK(out == want);
}

TEST_CASE("an interpreter step reading an output computed into the caller's buffer reads it") {
  test::on_both_backends([] {
    ir::Graph g("interp_reader");
    ir::NodeId x = g.input("x", f32({4, 6}));
    ir::NodeId y = g.mul(x, x);
    g.set_outputs({y, g.cumsum(y, 1, false, f32({4, 6})), g.argsort(y)});
    Call c(g);
    if (c.exe->backend() == Backend::Jit)
      CHECK(c.exe->describe().find("interp") != std::string::npos);
    check_like_run(g);
  });
}

TEST_CASE("a bound call computes from the leaves' current elements on every run") {
  test::on_both_backends([] {
    ir::Graph g = gemm_graph(16);
    Call c(g);
    std::vector<Buffer> out = output_buffers(g);
    auto call = c.exe->bind(c.leaf_ptrs(), pointers<Buffer>(out));
    for (uint64_t round = 0; round < 4; ++round) {
      CAPTURE(round);
      for (std::size_t k = 0; k < c.leaves.size(); ++k) {
        Buffer fresh = test::random_buffer(c.leaves[k].shape(), 100 + 10 * round + k);
        std::memcpy(c.leaves[k].bytes().data(), fresh.bytes().data(), fresh.bytes().size());
      }
      call->run();
      CHECK(out[0] == c.exe->run(c.leaf_ptrs())[0]);
      check_matmul(c.leaves[0], c.leaves[1], out[0], 16);
    }
  });
}

TEST_CASE("two bound calls of one executable keep their own buffers") {
  test::on_both_backends([] {
    ir::Graph g = elementwise_graph(64);
    Call c1(g, 1), c2(g, 7);
    std::vector<Buffer> o1 = output_buffers(g), o2 = output_buffers(g);
    auto b1 = c1.exe->bind(c1.leaf_ptrs(), pointers<Buffer>(o1));
    auto b2 = c1.exe->bind(c2.leaf_ptrs(), pointers<Buffer>(o2));
    b1->run();
    b2->run();
    b1->run();
    CHECK(o1[0] == c1.exe->run(c1.leaf_ptrs())[0]);
    CHECK(o2[0] == c1.exe->run(c2.leaf_ptrs())[0]);
    CHECK(o1[0] != o2[0]);
  });
}

TEST_CASE("a bound call keeps its executable alive after the caller and the cache drop it") {
  test::on_both_backends([] {
    ir::Graph g = gemm_graph(32);
    Call c(g);
    std::vector<Buffer> want = c.exe->run(c.leaf_ptrs());
    std::vector<Buffer> out = output_buffers(g);
    auto call = c.exe->bind(c.leaf_ptrs(), pointers<Buffer>(out));
    std::weak_ptr<const rlx::Executable> weak = c.exe;
    c.exe.reset();
    rlx::clear_cache();
    CHECK_FALSE(weak.expired());
    call->run();
    CHECK(out[0] == want[0]);
    call.reset();
    CHECK(weak.expired());
  });
}

TEST_CASE("run_into and bind take braced lists of buffers") {
  test::on_both_backends([] {
    ir::Graph g = elementwise_graph(5);
    Call c(g);
    Buffer out = Buffer::uninitialized(f32({5}));
    c.exe->run_into({&c.leaves[0], &c.leaves[1]}, {&out});
    Buffer bound = Buffer::uninitialized(f32({5}));
    c.exe->bind({&c.leaves[0], &c.leaves[1]}, {&bound})->run();
    Buffer want = c.exe->run(c.leaf_ptrs())[0];
    CHECK(out == want);
    CHECK(bound == want);
  });
}

TEST_CASE("outputs over the caller's own bytes (Buffer::external) are written in place") {
  test::on_both_backends([] {
    ir::Graph g = gemm_graph(16);
    Call c(g);
    alignas(64) static float c_bytes[16 * 16];
    std::fill(std::begin(c_bytes), std::end(c_bytes), -7.0f);
    Buffer out = Buffer::external(f32({16, 16}), reinterpret_cast<std::byte*>(c_bytes), nullptr);
    std::vector<Buffer*> outs = {&out};
    c.exe->bind(c.leaf_ptrs(), outs)->run();
    Buffer want = c.exe->run(c.leaf_ptrs())[0];
    CHECK(std::memcmp(c_bytes, want.bytes().data(), sizeof c_bytes) == 0);
  });
}

TEST_CASE("wrong leaves and outputs are errors naming the call, both shapes and the line") {
  test::on_both_backends([] {
    ir::Graph g = gemm_graph(4);
    Call c(g);
    std::vector<Buffer> outs = output_buffers(g);
    std::vector<Buffer*> out_ptrs = pointers<Buffer>(outs);
    Buffer wrong_dims = Buffer::uninitialized(f32({4, 5}));
    Buffer wrong_dtype = Buffer::uninitialized(ir::Shape({4, 4}, ir::DType::F64));
    const Buffer* a = &c.leaves[0];
    std::vector<const Buffer*> one = {a}, bad_leaf = {a, &wrong_dims}, null_leaf = {a, nullptr};
    std::string m;
    int line = __LINE__ + 1;
    m = test::check_error([&] { c.exe->run_into(one, out_ptrs); }, ErrorKind::Runtime,
                          "Executable::run_into: 1 leaf buffers for graph @gemm with 2 inputs");
    CHECK(m.find(line_of(line)) != std::string::npos);
    line = __LINE__ + 1;
    m = test::check_error([&] { c.exe->bind(bad_leaf, out_ptrs); }, ErrorKind::Runtime,
                          "Executable::bind: input \"b\" is f32[4,5] but graph @gemm expects "
                          "f32[4,4]");
    CHECK(m.find(line_of(line)) != std::string::npos);
    test::check_error([&] { c.exe->run_into(null_leaf, out_ptrs); }, ErrorKind::Runtime,
                      "Executable::run_into: missing input \"b\" (f32[4,4])");
    std::vector<Buffer*> two_outs = {&outs[0], &outs[0]}, none;
    test::check_error([&] { c.exe->run_into(c.leaf_ptrs(), two_outs); }, ErrorKind::Runtime,
                      "Executable::run_into: 2 output buffers for graph @gemm with 1 outputs");
    test::check_error([&] { c.exe->bind(c.leaf_ptrs(), none); }, ErrorKind::Runtime,
                      "Executable::bind: 0 output buffers");
    std::vector<Buffer*> dims_out = {&wrong_dims}, dtype_out = {&wrong_dtype}, null_out = {nullptr};
    line = __LINE__ + 1;
    m = test::check_error([&] { c.exe->run_into(c.leaf_ptrs(), dims_out); }, ErrorKind::Runtime,
                          "Executable::run_into: output 0 is f32[4,5] but graph @gemm makes "
                          "f32[4,4]");
    CHECK(m.find(line_of(line)) != std::string::npos);
    test::check_error([&] { c.exe->bind(c.leaf_ptrs(), dtype_out); }, ErrorKind::Runtime,
                      "Executable::bind: output 0 is f64[4,4] but graph @gemm makes f32[4,4]");
    test::check_error([&] { c.exe->run_into(c.leaf_ptrs(), null_out); }, ErrorKind::Runtime,
                      "Executable::run_into: missing output 0 (f32[4,4])");
    // Nothing was written by a refused call.
    for (int64_t i = 0; i < outs[0].numel(); ++i) REQUIRE(outs[0].get_f64(i) == 1234.5);
  });
}

TEST_CASE("an output sharing bytes with a leaf or another output is refused") {
  test::on_both_backends([] {
    ir::Graph g = gemm_graph(16);
    Call c(g);
    // The product written into its own operand: refused, not computed from half-written rows.
    std::vector<Buffer*> into_a = {&c.leaves[0]};
    const std::string msg = "Executable::run_into: output 0 (f32[16,16]) shares memory with "
                            "input \"a\" of graph @gemm";
    int line = __LINE__ + 2;
    std::string m =
        test::check_error([&] { c.exe->run_into(c.leaf_ptrs(), into_a); }, ErrorKind::Runtime, msg);
    CHECK(m.find(line_of(line)) != std::string::npos);
    // Part of a leaf's bytes (an external buffer 64 bytes into b's).
    Buffer inside = Buffer::external(f32({16, 16}), c.leaves[1].bytes().data() + 64, nullptr);
    std::vector<Buffer*> into_b = {&inside};
    test::check_error([&] { c.exe->bind(c.leaf_ptrs(), into_b); }, ErrorKind::Runtime,
                      "Executable::bind: output 0 (f32[16,16]) shares memory with input \"b\"");
    // Two outputs over the same bytes.
    ir::Graph two("two");
    ir::NodeId x = two.input("x", f32({8}));
    two.set_outputs({two.tanh(x), two.neg(x)});
    Call t(two);
    Buffer o = Buffer::uninitialized(f32({8}));
    Buffer alias = Buffer::external(f32({8}), o.bytes().data(), nullptr);
    std::vector<Buffer*> same = {&o, &alias};
    test::check_error([&] { t.exe->run_into(t.leaf_ptrs(), same); }, ErrorKind::Runtime,
                      "Executable::run_into: output 1 (f32[8]) shares memory with output 0");
    // Distinct buffers of the same values are fine.
    Buffer copy = c.leaves[0];
    Buffer out = Buffer::uninitialized(f32({16, 16}));
    std::vector<const Buffer*> leaves = {&copy, &c.leaves[1]};
    std::vector<Buffer*> outs = {&out};
    c.exe->run_into(leaves, outs);
    CHECK(out == c.exe->run(c.leaf_ptrs())[0]);
  });
}

TEST_CASE("a graph with dynamic dims needs a binding; each specialized executable runs into "
          "buffers") {
  test::on_both_backends([] {
    ir::Graph g("dynamic");
    ir::Shape s({ir::Dim::dynamic("n"), ir::Dim(3)}, ir::DType::F32);
    ir::NodeId x = g.input("x", s);
    g.set_outputs({g.mul(g.tanh(x), x)});
    test::check_error([&] { (void)rlx::compile(g, rlx::default_backend()); }, ErrorKind::Bind,
                      "has dynamic dims; bind them first");
    auto sym = rlx::compile_symbolic(g, rlx::default_backend());
    for (int64_t n : {2, 5, 9}) {
      CAPTURE(n);
      auto exe = sym->specialize({{ir::symbol_id("n"), n}});
      Buffer in = test::random_buffer(f32({n, 3}), uint64_t(n));
      Buffer out = Buffer::uninitialized(f32({n, 3}));
      exe->bind({&in}, {&out})->run();
      Buffer want = exe->run(std::vector<const Buffer*>{&in})[0];
      CHECK(out == want);
      for (int64_t i = 0; i < 3 * n; ++i)
        CHECK(std::fabs(out.get_f64(i) - std::tanh(in.get_f64(i)) * in.get_f64(i)) <= 1e-6);
      // The size of another binding is the wrong shape here.
      Buffer other = Buffer::uninitialized(f32({n + 1, 3}));
      test::check_error([&] { exe->run_into({&in}, {&other}); }, ErrorKind::Runtime,
                        "output 0 is f32[" + std::to_string(n + 1) + ",3]");
    }
  });
}

TEST_CASE("a bound call of several steps stops at a safe point between them on an interrupt") {
  test::on_both_backends([] {
    ir::Graph g("steps");
    ir::NodeId x = g.input("x", f32({16, 16}));
    ir::NodeId s = g.softmax(x, -1, f32({16, 16}));
    g.set_outputs({g.matmul(s, x, f32({16, 16}))});
    Call c(g);
    std::vector<Buffer> out = output_buffers(g);
    auto call = c.exe->bind(c.leaf_ptrs(), pointers<Buffer>(out));
    rlx::request_interrupt();
    test::check_error([&] { call->run(); }, ErrorKind::Interrupted, "interrupted in");
    rlx::clear_interrupt();
    call->run();
    CHECK(out[0] == c.exe->run(c.leaf_ptrs())[0]);
  });
}

TEST_CASE("the JIT's bound call of one small product is one kernel call, with no safe point "
          "to stop at") {
  if (!rlx::backend_available(Backend::Jit)) return;
  ir::Graph g = gemm_graph(16);
  auto exe = rlx::compile(g, Backend::Jit);
  Buffer a = test::random_buffer(f32({16, 16}), 1), b = test::random_buffer(f32({16, 16}), 2);
  Buffer out = Buffer::uninitialized(f32({16, 16}));
  auto call = exe->bind({&a, &b}, {&out});
  rlx::request_interrupt();
  call->run(); // completes: it has no step boundary to stop at
  CHECK(rlx::interrupt_requested());
  rlx::clear_interrupt();
  CHECK(out == exe->run(std::vector<const Buffer*>{&a, &b})[0]);
}
