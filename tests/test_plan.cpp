// tests/test_plan.cpp -- how the JIT partitions graphs (jit/plan.hpp): which nodes fuse into one
// element-wise kernel, which run as row kernels, and which fall back to the runtime kernels.
// (What the kernels compute is checked against the interpreter in test_backends.cpp.)
#include "../jit/plan.hpp"

#include <rlx/ir/graph.hpp> // not rlx.hpp: its rlx::jit() would clash with namespace rlx::jit

#include <doctest/doctest.h>

using namespace rlx::ir;
using rlx::jit::make_plan;
using rlx::jit::Step;

namespace {

std::size_t count(const rlx::jit::Plan& p, Step::Kind k) {
  std::size_t n = 0;
  for (const Step& s : p.steps) n += s.kind == k;
  return n;
}

} // namespace

TEST_CASE("plan: independent element-wise chains over the same elements fuse into one kernel") {
  Graph g("chains");
  NodeId x = g.input("x", Shape({1000}, DType::F32));
  NodeId half = g.constant(0.5, DType::F32);
  NodeId a = g.tanh(g.mul(x, half));
  NodeId b = g.add_inferred(Op(OpKind::Sigmoid), {x});
  NodeId c = g.mul(x, x);
  g.set_outputs({g.add(g.mul(a, b), c)});
  rlx::jit::Plan p = make_plan(g);
  REQUIRE(p.kernels.size() == 1);
  CHECK(p.kernels[0].nodes.size() == 6);
  CHECK(p.kernels[0].outputs.size() == 1);
  CHECK(count(p, Step::Kind::Runtime) == 0);
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
  rlx::jit::Plan p = make_plan(g);
  CHECK(count(p, Step::Kind::Row) == 4);
  CHECK(count(p, Step::Kind::Runtime) == 2);
  for (const Step& st : p.steps)
    if (st.kind == Step::Kind::Runtime) CHECK((st.node == mid || st.node == s0));
}

TEST_CASE("plan: integer reductions and reductions of mixed dtypes stay on the runtime kernels") {
  Graph g("ints");
  NodeId x = g.input("x", Shape({4, 8}, DType::I32));
  g.set_outputs({g.sum(x, {1}, false)});
  rlx::jit::Plan p = make_plan(g);
  CHECK(count(p, Step::Kind::Row) == 0);
  CHECK(count(p, Step::Kind::Runtime) == 1);
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
  rlx::jit::Plan p = make_plan(g);
  CHECK(p.steps.size() == 2); // two kernels ([3, 2] and [2, 3]); no movement steps
  CHECK(count(p, Step::Kind::Runtime) == 0);
  for (const rlx::jit::EwKernel& k : p.kernels) {
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
  rlx::jit::Plan p = make_plan(g);
  CHECK(count(p, Step::Kind::Runtime) == 1);
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
  rlx::jit::Plan p = make_plan(g);
  REQUIRE(p.steps.size() == 2);
  CHECK(p.steps[0].kind == Step::Kind::Row);
  CHECK(p.steps[1].kind == Step::Kind::Runtime); // a broadcast residual: the runtime kernel
}

TEST_CASE("plan: a row op computes an element-wise operand that nothing else reads") {
  Graph g("attention scores");
  NodeId s = g.input("scores", Shape({2, 4, 6, 6}, DType::F32));
  NodeId mask = g.input("mask", Shape({2, 1, 1, 6}, DType::F32));
  NodeId scaled = g.add(g.mul(s, g.constant(0.125, DType::F32)), mask);
  g.set_outputs({g.softmax(scaled, -1, Shape({2, 4, 6, 6}, DType::F32))});
  rlx::jit::Plan p = make_plan(g);
  REQUIRE(p.kernels.size() == 1);
  CHECK(p.kernels[0].row_prologue);
  REQUIRE(p.steps.size() == 1); // the kernel has no step of its own
  CHECK(p.steps[0].kind == Step::Kind::Row);
  CHECK(p.steps[0].prologue);
  CHECK(p.steps[0].kernel == 0);
}

TEST_CASE("plan: an element-wise result read elsewhere too stays a kernel of its own") {
  Graph g("shared");
  NodeId x = g.input("x", Shape({4, 8}, DType::F32));
  NodeId e = g.tanh(g.mul(x, x));
  NodeId r = g.sum(e, {1}, false);
  g.set_outputs({r, e}); // e is also an output
  rlx::jit::Plan p = make_plan(g);
  REQUIRE(p.kernels.size() == 1);
  CHECK_FALSE(p.kernels[0].row_prologue);
  CHECK(count(p, Step::Kind::Native) == 1);
  CHECK(count(p, Step::Kind::Row) == 1);
  for (const Step& st : p.steps) CHECK_FALSE(st.prologue);
}

TEST_CASE("plan: a prologue operand that varies across a row's elements by a stride is refused") {
  // The sum's rows are y[i, :, :] (32 elements); b repeats each of its 8 values across axis 1,
  // so along a row it is neither contiguous nor one element: the kernel runs on its own.
  Graph g("strided");
  NodeId x = g.input("x", Shape({4, 8}, DType::F32));
  NodeId b = g.input("b", Shape({4, 1, 8}, DType::F32));
  NodeId y = g.add(x, b); // [4, 4, 8]
  g.set_outputs({g.sum(y, {1, 2}, false)});
  rlx::jit::Plan p = make_plan(g);
  REQUIRE(p.kernels.size() == 1);
  CHECK_FALSE(p.kernels[0].row_prologue);
  CHECK(count(p, Step::Kind::Native) == 1);
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
  rlx::jit::Plan p = make_plan(g);
  REQUIRE(p.steps.size() == 1);
  CHECK(p.steps[0].kind == Step::Kind::Row);
  CHECK(p.steps[0].prologue);
}
