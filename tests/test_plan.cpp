// tests/test_plan.cpp -- how the plan the JIT runs splits graphs (src/lir/, the JIT's step
// policy): which nodes fuse into one element-wise kernel, which run as row kernels, and which
// fall back to the interpreter's kernels. (What the kernels compute is checked against the
// interpreter in test_backends.cpp.)
#include <rlx/ir/lir.hpp>
#include <rlx/runtime.hpp>

#include <doctest/doctest.h>

using namespace rlx::ir;

namespace {

using Plan = LirModule;

/// The plan the JIT makes of g as it is (no passes).
Plan make_plan(const Graph& g) { return plan_lir(g, rlx::plan_options(rlx::Backend::Jit)); }

std::size_t count(const Plan& p, std::string_view rule) {
  std::size_t n = 0;
  for (const LirStep& s : p.steps) n += s.rule->name() == rule;
  return n;
}

bool has_prologue(const LirStep& s) { return s.rule->name() == "row" && s.kernel != kNoKernel; }

} // namespace

TEST_CASE("plan: independent element-wise chains over the same elements fuse into one kernel") {
  Graph g("chains");
  NodeId x = g.input("x", Shape({1000}, DType::F32));
  NodeId half = g.constant(0.5, DType::F32);
  NodeId a = g.tanh(g.mul(x, half));
  NodeId b = g.add_inferred(Op(OpKind::Sigmoid), {x});
  NodeId c = g.mul(x, x);
  g.set_outputs({g.add(g.mul(a, b), c)});
  Plan p = make_plan(g);
  REQUIRE(p.kernels.size() == 1);
  CHECK(p.kernels[0].nodes.size() == 6);
  CHECK(p.kernels[0].outputs.size() == 1);
  CHECK(count(p, "interp") == 0);
}

TEST_CASE("plan: softmax and norms over the last axis and trailing reductions are row kernels") {
  Graph g("rows");
  NodeId x = g.input("x", Shape({4, 6, 8}, DType::F32));
  NodeId s = g.softmax(x, -1, Shape({4, 6, 8}, DType::F32));
  NodeId r = g.sum(s, {1, 2}, false);
  NodeId m = g.add_inferred(Op(OpKind::ReduceMax, ReduceAttrs{{-1}, true}), {x});
  // Not trailing: the middle axis alone, and softmax over axis 0, run on the runtime kernels.
  NodeId mid = g.sum(x, {1}, false);
  NodeId s0 = g.softmax(x, 0, Shape({4, 6, 8}, DType::F32));
  NodeId ln = g.add_inferred(
      Op(OpKind::LayerNorm, NormAttrs{-1, 1e-5f}),
      {x, g.input("gamma", Shape({8}, DType::F32)), g.input("beta", Shape({8}, DType::F32))});
  g.set_outputs({r, m, mid, s0, ln});
  Plan p = make_plan(g);
  CHECK(count(p, "row") == 4);
  CHECK(count(p, "interp") == 2);
  for (const LirStep& st : p.steps)
    if (st.rule->name() == "interp") CHECK((st.node == mid || st.node == s0));
}

TEST_CASE("plan: integer reductions and reductions of mixed dtypes stay on the runtime kernels") {
  Graph g("ints");
  NodeId x = g.input("x", Shape({4, 8}, DType::I32));
  g.set_outputs({g.sum(x, {1}, false)});
  Plan p = make_plan(g);
  CHECK(count(p, "row") == 0);
  CHECK(count(p, "interp") == 1);
}

TEST_CASE("plan: reshapes and expands read only by kernels fold into the kernels' indexing") {
  Graph g("views");
  NodeId x = g.input("x", Shape({2, 3}, DType::F32));
  NodeId b = g.input("b", Shape({3}, DType::F32));
  NodeId flat = g.add_inferred(Op(OpKind::Reshape, ReshapeAttrs{{6}}), {x});
  NodeId again = g.add_inferred(Op(OpKind::Reshape, ReshapeAttrs{{3, 2}}), {flat});
  NodeId wide = g.add_inferred(Op(OpKind::Expand, ExpandAttrs{{2, 3}}), {b});
  NodeId y = g.add(g.tanh(again), again);
  NodeId z = g.mul(x, wide);
  g.set_outputs({y, z});
  Plan p = make_plan(g);
  CHECK(p.steps.size() == 2); // two kernels ([3, 2] and [2, 3]); no movement steps
  CHECK(count(p, "interp") == 0);
  for (const FusedKernel& k : p.kernels) {
    REQUIRE(k.buffers.size() == k.inputs.size());
    for (std::size_t j = 0; j < k.inputs.size(); ++j) {
      if (k.inputs[j] == again) {
        CHECK(k.buffers[j] == x); // through both reshapes
        CHECK(k.read_shapes[j].sizes() == std::vector<int64_t>{3, 2});
      }
      if (k.inputs[j] == wide) {
        CHECK(k.buffers[j] == b); // the broadcast is the kernel's
        CHECK(k.read_shapes[j].sizes() == std::vector<int64_t>{3});
      }
    }
  }
}

TEST_CASE("plan: a reshape that is also an output or a runtime operand keeps its step") {
  Graph g("kept");
  NodeId x = g.input("x", Shape({2, 3}, DType::F32));
  NodeId r = g.add_inferred(Op(OpKind::Reshape, ReshapeAttrs{{6}}), {x});
  g.set_outputs({r, g.add(r, r)});
  Plan p = make_plan(g);
  CHECK(count(p, "interp") == 1);
  REQUIRE(p.kernels.size() == 1);
  CHECK(p.kernels[0].buffers == std::vector<NodeId>{x}); // the kernel still reads x directly
}

TEST_CASE("plan: fused residual norms are row kernels when the residual has x's shape") {
  Graph g("residual");
  Shape row({8}, DType::F32);
  NodeId x = g.input("x", Shape({4, 8}, DType::F32));
  NodeId same = g.input("r", Shape({4, 8}, DType::F32));
  NodeId bcast = g.input("r1", Shape({8}, DType::F32));
  NodeId gamma = g.input("gamma", row), beta = g.input("beta", row);
  NodeId a = g.add_inferred(Op(OpKind::FusedResidualLN, FusedResidualNormAttrs{false, 1e-5f}),
                            {x, same, gamma, beta});
  NodeId b = g.add_inferred(Op(OpKind::FusedResidualRmsNorm, FusedResidualNormAttrs{false, 1e-5f}),
                            {x, bcast, gamma, beta});
  g.set_outputs({a, b});
  Plan p = make_plan(g);
  REQUIRE(p.steps.size() == 2);
  CHECK(p.steps[0].rule->name() == "row");
  CHECK(p.steps[1].rule->name() == "interp"); // a broadcast residual: the runtime kernel
}

TEST_CASE("plan: a row op computes an element-wise operand that nothing else reads") {
  Graph g("attention scores");
  NodeId s = g.input("scores", Shape({2, 4, 6, 6}, DType::F32));
  NodeId mask = g.input("mask", Shape({2, 1, 1, 6}, DType::F32));
  NodeId scaled = g.add(g.mul(s, g.constant(0.125, DType::F32)), mask);
  g.set_outputs({g.softmax(scaled, -1, Shape({2, 4, 6, 6}, DType::F32))});
  Plan p = make_plan(g);
  REQUIRE(p.kernels.size() == 1);
  CHECK(p.kernels[0].row_prologue);
  REQUIRE(p.steps.size() == 1); // the kernel has no step of its own
  CHECK(p.steps[0].rule->name() == "row");
  CHECK(has_prologue(p.steps[0]));
  CHECK(p.steps[0].kernel == 0);
}

TEST_CASE("plan: an element-wise result read elsewhere too stays a kernel of its own") {
  Graph g("shared");
  NodeId x = g.input("x", Shape({4, 8}, DType::F32));
  NodeId e = g.tanh(g.mul(x, x));
  NodeId r = g.sum(e, {1}, false);
  g.set_outputs({r, e}); // e is also an output
  Plan p = make_plan(g);
  REQUIRE(p.kernels.size() == 1);
  CHECK_FALSE(p.kernels[0].row_prologue);
  CHECK(count(p, "kernel") == 1);
  CHECK(count(p, "row") == 1);
  for (const LirStep& st : p.steps) CHECK_FALSE(has_prologue(st));
}

TEST_CASE("plan: a prologue operand that varies across a row's elements by a stride is refused") {
  // The sum's rows are y[i, :, :] (32 elements); b repeats each of its 8 values across axis 1,
  // so along a row it is neither contiguous nor one element: the kernel runs on its own.
  Graph g("strided");
  NodeId x = g.input("x", Shape({4, 8}, DType::F32));
  NodeId b = g.input("b", Shape({4, 1, 8}, DType::F32));
  NodeId y = g.add(x, b); // [4, 4, 8]
  g.set_outputs({g.sum(y, {1, 2}, false)});
  Plan p = make_plan(g);
  REQUIRE(p.kernels.size() == 1);
  CHECK_FALSE(p.kernels[0].row_prologue);
  CHECK(count(p, "kernel") == 1);
}

TEST_CASE("plan: a fused residual norm computes its element-wise x as its prologue") {
  Graph g("residual prologue");
  Shape row({8}, DType::F32);
  NodeId x = g.input("x", Shape({4, 8}, DType::F32));
  NodeId r = g.input("r", Shape({4, 8}, DType::F32));
  NodeId gamma = g.input("gamma", row), beta = g.input("beta", row);
  NodeId t = g.add_inferred(Op(OpKind::Tanh), {x});
  g.set_outputs({g.add_inferred(Op(OpKind::FusedResidualLN, FusedResidualNormAttrs{false, 1e-5f}),
                                {t, r, gamma, beta})});
  Plan p = make_plan(g);
  REQUIRE(p.steps.size() == 1);
  CHECK(p.steps[0].rule->name() == "row");
  CHECK(has_prologue(p.steps[0]));
}
