// tests/test_respecialize.cpp -- SymbolicExecutable: a new size of a dynamic dim binds the
// graph the pipeline optimized once, and computes what a compile from scratch computes.
#include "support/compare.hpp"
#include "support/random.hpp"

#include <rlx/all.hpp>

#include <doctest/doctest.h>

#include <functional>
#include <vector>

using rlx::Backend;
using rlx::Tensor;
namespace ir = rlx::ir;
namespace test = rlx::test;

namespace {

/// The symbolic graph rlx::jit traces for `fn` called once on `args` with `dims` dynamic.
ir::Graph traced(const std::function<Tensor(Tensor, Tensor)>& fn, std::vector<Tensor> args,
                 std::vector<rlx::DynamicDim> dims) {
  auto f = rlx::jit([&](Tensor a, Tensor b) { return fn(a, b); },
                    rlx::JitOptions{.dynamic_dims = std::move(dims), .backend = Backend::Interp});
  f(args[0], args[1]);
  std::optional<ir::Graph> g = f.last_graph();
  REQUIRE(g.has_value());
  REQUIRE(g->has_dynamic_dims());
  return *g;
}

/// Random values for the leaves of `bound`, seeded from `seed` on (advanced).
std::vector<test::Buffer> random_leaves(const ir::Graph& bound, uint64_t& seed) {
  std::vector<test::Buffer> leaves;
  for (ir::NodeId id : test::leaf_ids(bound))
    leaves.push_back(test::random_buffer(bound.shape(id), seed++));
  return leaves;
}

std::vector<const test::Buffer*> pointers(const std::vector<test::Buffer>& buffers) {
  std::vector<const test::Buffer*> out;
  for (const test::Buffer& b : buffers) out.push_back(&b);
  return out;
}

struct Counts {
  int64_t pipelines = 0, respecialized = 0;
};

/// For each binding, on `backend`: the SymbolicExecutable's executable gives exactly what
/// compile(graph.bind(binding)) gives, and what the interpreter gives within the backends'
/// tolerance. Returns the pipelines and reuses counted by the specialize calls alone.
Counts check_bindings(const ir::Graph& graph, Backend backend,
                      const std::vector<ir::DimBinding>& bindings, bool* reuses) {
  rlx::clear_cache();
  std::shared_ptr<const rlx::SymbolicExecutable> sym = rlx::compile_symbolic(graph, backend);
  CHECK(sym->backend() == backend);
  Counts counts;
  uint64_t seed = 1;
  for (const ir::DimBinding& b : bindings) {
    rlx::CacheStats before = rlx::cache_stats();
    std::shared_ptr<const rlx::Executable> exe = sym->specialize(b);
    rlx::CacheStats after = rlx::cache_stats();
    counts.pipelines += after.pipelines - before.pipelines;
    counts.respecialized += after.respecialized - before.respecialized;

    ir::Graph bound = graph.bind(b);
    std::vector<test::Buffer> leaves = random_leaves(bound, seed);
    std::vector<const test::Buffer*> ptrs = pointers(leaves);
    std::vector<test::Buffer> got = exe->run(ptrs);
    std::vector<test::Buffer> fresh = rlx::compile(bound, backend)->run(ptrs);
    std::vector<test::Buffer> want = rlx::compile(bound, Backend::Interp)->run(ptrs);
    REQUIRE(got.size() == bound.outputs.size());
    REQUIRE(fresh.size() == got.size());
    REQUIRE(want.size() == got.size());
    for (std::size_t o = 0; o < got.size(); ++o) {
      std::string context = "output " + std::to_string(o) + " of @" + bound.name + " on " +
                            std::string(rlx::enum_name(backend));
      CHECK(got[o].shape() == bound.shape(bound.outputs[o]));
      test::check_buffers_close(fresh[o], got[o], test::Tolerance{}, context + " (from scratch)");
      test::check_buffers_close(want[o], got[o], test::output_tolerance(bound, bound.outputs[o]),
                                context + " (interpreter)");
    }
  }
  *reuses = sym->reuses_pipeline();
  return counts;
}

std::vector<ir::DimBinding> sizes(const char* name, std::vector<int64_t> ns) {
  std::vector<ir::DimBinding> out;
  for (int64_t n : ns) {
    ir::DimBinding b;
    b.set(ir::symbol_id(name), n);
    out.push_back(b);
  }
  return out;
}

std::vector<Backend> backends() {
  std::vector<Backend> out{Backend::Interp};
  if (rlx::backend_available(Backend::Jit)) out.push_back(Backend::Jit);
  return out;
}

/// Every backend reuses the pipeline from the second binding on: two pipelines in all (the first
/// bound graph and the symbolic one), and one reuse per later binding.
void check_reused(const ir::Graph& g, const std::vector<ir::DimBinding>& bindings) {
  for (Backend backend : backends()) {
    CAPTURE(rlx::enum_name(backend));
    bool reuses = false;
    Counts c = check_bindings(g, backend, bindings, &reuses);
    CHECK(reuses);
    CHECK(c.pipelines == 2);
    CHECK(c.respecialized == int64_t(bindings.size()) - 1);
  }
}

} // namespace

TEST_CASE("respecialize: softmax then a row sum over a dynamic batch runs the pipeline twice "
          "for five sizes") {
  ir::Graph g = traced([](Tensor t, Tensor) { return rlx::softmax(t, -1).sum(-1); },
                       {rlx::randn({3, 16}, 1), rlx::randn({1}, 2)}, {{0, 0, "batch"}});
  check_reused(g, sizes("batch", {3, 5, 1, 8, 33}));
}

TEST_CASE("respecialize: a product with a broadcast bias and an activation matches a fresh "
          "compile at every size") {
  ir::Graph g = traced(
      [](Tensor x, Tensor w) {
        return (rlx::matmul(x, w) + rlx::full({8}, 0.25f)).relu() * rlx::tanh(x.sum(-1, true));
      },
      {rlx::randn({4, 16}, 1), rlx::randn({16, 8}, 2)}, {{0, 0, "b"}});
  check_reused(g, sizes("b", {4, 2, 7, 1, 64}));
}

TEST_CASE("respecialize: one dynamic dim on two axes of two arguments, with broadcasting and "
          "reductions") {
  ir::Graph g = traced(
      [](Tensor x, Tensor y) {
        Tensor z = rlx::softmax(x * y + 0.1f, -1);
        return rlx::exp(z - z.mean(0, true)).sum(0) + y.sum(0);
      },
      {rlx::randn({5, 6}, 1), rlx::randn({1, 6}, 2)}, {{0, 1, "n"}, {1, 1, "n"}});
  check_reused(g, sizes("n", {6, 3, 17, 1, 40}));
}

TEST_CASE("respecialize: two dynamic dims, each on its own axis, bound together") {
  ir::Graph g = traced([](Tensor x, Tensor y) { return rlx::matmul(x, y).softmax(-1); },
                       {rlx::randn({3, 4}, 1), rlx::randn({4, 5}, 2)}, {{0, 0, "m"}, {1, 1, "k"}});
  std::vector<ir::DimBinding> bindings;
  for (auto [m, k] : std::vector<std::pair<int64_t, int64_t>>{{3, 5}, {2, 9}, {7, 1}, {16, 3}}) {
    ir::DimBinding b;
    b.set(ir::symbol_id("m"), m);
    b.set(ir::symbol_id("k"), k);
    bindings.push_back(b);
  }
  check_reused(g, bindings);
}

TEST_CASE("respecialize: a convolution the JIT makes a product only at static sizes is "
          "compiled from scratch per binding there, and still matches") {
  ir::Graph g("conv");
  ir::Dim batch = ir::Dim::dynamic(ir::symbol_id("batch"));
  ir::NodeId x = g.input("x", ir::Shape({batch, 3, 6, 6}, ir::DType::F32));
  ir::NodeId w = g.input("w", ir::Shape({4, 3, 3, 3}, ir::DType::F32));
  ir::NodeId y =
      g.add_node(ir::Op(ir::OpKind::Conv2d, ir::Conv2dAttrs{{3, 3}, {1, 1}, {0, 0}, {1, 1}, 1}),
                 {x, w}, ir::Shape({batch, 4, 4, 4}, ir::DType::F32));
  g.set_outputs({g.relu(y)});
  std::vector<ir::DimBinding> bindings = sizes("batch", {3, 1, 6, 2});
  for (Backend backend : backends()) {
    CAPTURE(rlx::enum_name(backend));
    bool reuses = true;
    Counts c = check_bindings(g, backend, bindings, &reuses);
    // conv_as_matmul (where the JIT's GEMM runs) needs static shapes: it rewrites each bound
    // graph but not the symbolic one. The interpreter keeps its convolutions: reused.
    bool lowered = false;
    for (const ir::Node& n : rlx::compile(g.bind(bindings[0]), backend)->graph().nodes())
      lowered |= n.op.kind() == ir::OpKind::Im2Col;
    CHECK(reuses == !lowered);
    CHECK(c.pipelines == (lowered ? int64_t(bindings.size()) + 1 : 2));
    CHECK(c.respecialized == (lowered ? 0 : int64_t(bindings.size()) - 1));
    if (backend == Backend::Interp) CHECK_FALSE(lowered);
  }
}

TEST_CASE("respecialize: rlx::jit over six sizes runs the compile pipeline twice and reuses "
          "it for the rest") {
  for (Backend backend : backends()) {
    CAPTURE(rlx::enum_name(backend));
    rlx::clear_cache();
    auto f = rlx::jit([](Tensor t) { return rlx::softmax(t, -1).sum(-1); },
                      rlx::JitOptions{.dynamic_dims = {{0, 0, "batch"}}, .backend = backend});
    std::vector<Tensor> xs;
    for (int64_t n : {3, 5, 7, 9, 11, 5, 3}) xs.push_back(rlx::randn({n, 16}, uint64_t(n)));
    rlx::eval(xs);
    rlx::CacheStats before = rlx::cache_stats();
    std::vector<Tensor> outs;
    for (const Tensor& x : xs) outs.push_back(f(x));
    rlx::CacheStats after = rlx::cache_stats();
    CHECK(f.stats().traces == 1);
    CHECK(f.stats().compiles == 5);
    CHECK(f.stats().cache_hits == 2);
    CHECK(after.respecialized - before.respecialized == 4);
    CHECK(after.pipelines - before.pipelines == 2);
    for (std::size_t k = 0; k < xs.size(); ++k) {
      std::vector<float> got = outs[k].to_vector<float>();
      std::vector<float> want = rlx::softmax(xs[k], -1).sum(-1).to_vector<float>();
      REQUIRE(got.size() == want.size());
      for (std::size_t i = 0; i < got.size(); ++i) CHECK(got[i] == doctest::Approx(want[i]));
    }
  }
}

TEST_CASE("respecialize: a new size of a dynamic dim lowers no kernel again, and the kernels "
          "found compute what fresh ones do") {
  if (!rlx::backend_available(Backend::Jit)) return;
  // Element-wise kernels, row kernels with element-wise prologues: nothing broadcasts along the
  // dynamic dim, so no code depends on the size, and after the first size each kernel of a new
  // size is found by its emission key. (A kernel reading an operand broadcast along it holds
  // its extents and is lowered per size.)
  ir::Graph g = traced(
      [](Tensor x, Tensor y) {
        Tensor z = rlx::tanh(x * 0.5f + 0.1f) * rlx::sigmoid(x) + x * y;
        return rlx::softmax(z * 2.0f, -1).sum(-1) + rlx::exp(z).mean(-1);
      },
      {rlx::randn({3, 16}, 1), rlx::randn({3, 16}, 2)}, {{0, 0, "batch"}, {1, 0, "batch"}});
  std::shared_ptr<const rlx::SymbolicExecutable> sym = rlx::compile_symbolic(g, Backend::Jit);
  uint64_t seed = 10;
  for (int64_t n : {4, 6, 9, 2, 31, 64}) {
    ir::DimBinding b;
    b.set(ir::symbol_id("batch"), n);
    rlx::CacheStats before = rlx::cache_stats();
    std::shared_ptr<const rlx::Executable> exe = sym->specialize(b);
    rlx::CacheStats after = rlx::cache_stats();
    CAPTURE(n);
    ir::Graph bound = g.bind(b);
    int64_t native = 0; // the plan's element-wise and row kernels
    for (const ir::LirStep& step : rlx::plan_for(bound, Backend::Jit).steps)
      native += step.rule->name() == "kernel" || step.rule->name() == "row";
    if (n != 4) { // the first size lowers its kernels; every later one finds all of them
      CHECK(native >= 3);
      CHECK(after.kernels_reused - before.kernels_reused == native);
      CHECK(after.kernels_compiled == before.kernels_compiled);
    }
    std::vector<test::Buffer> leaves = random_leaves(bound, seed);
    std::vector<const test::Buffer*> ptrs = pointers(leaves);
    std::vector<test::Buffer> got = exe->run(ptrs);
    std::vector<test::Buffer> want = rlx::compile(bound, Backend::Interp)->run(ptrs);
    REQUIRE(got.size() == want.size());
    for (std::size_t o = 0; o < got.size(); ++o)
      test::check_buffers_close(want[o], got[o], test::output_tolerance(bound, bound.outputs[o]),
                                "output " + std::to_string(o));
  }
}
