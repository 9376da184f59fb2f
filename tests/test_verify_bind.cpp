// tests/test_verify_bind.cpp -- verify() finds each broken invariant; bind() specializes shapes.
#include "support/check_error.hpp"

#include <rlx/all.hpp>

using namespace rlx;
using namespace rlx::ir;

namespace {
Graph small() {
  Graph g("small");
  auto x = g.input("x", Shape({2, 3}, DType::F32));
  auto w = g.param("w", Shape({3, 4}, DType::F32));
  auto y = g.matmul(x, w, Shape({2, 4}, DType::F32));
  g.set_outputs({g.activation(Activation::Relu, y, Shape({2, 4}, DType::F32))});
  return g;
}

Graph dynamic_graph() {
  Graph g("dyn");
  Shape hs({Dim::dynamic(sym::kBatch), Dim::dynamic(sym::kSeq), 8}, DType::F32);
  auto x = g.input("x", hs);
  auto w = g.param("w", Shape({8, 4}, DType::F32));
  auto y =
      g.matmul(x, w, Shape({Dim::dynamic(sym::kBatch), Dim::dynamic(sym::kSeq), 4}, DType::F32));
  auto r = g.add_node(Op(OpKind::Reshape, ReshapeAttrs{{-1, 4}}), {y},
                      Shape({Dim::dynamic(sym::kRows), 4}, DType::F32));
  g.set_outputs({r});
  return g;
}
} // namespace

TEST_CASE("verify: a well-formed graph has no problems") {
  CHECK(verify_all(small()).empty());
  CHECK_NOTHROW(verify(small()));
  CHECK(verify_all(dynamic_graph()).empty());
}

TEST_CASE("verify: a forward reference is reported as a cycle risk") {
  Graph g = small();
  g.set_inputs(NodeId(2), {NodeId(0), NodeId(3)});
  test::check_error([&] { verify(g); }, ErrorKind::Verify,
                    "verify: graph @small: %2 (matmul): input %3 does not precede it");
}

TEST_CASE("verify: a shape that disagrees with the shape rule names the node") {
  Graph g = small();
  g.node_mut(NodeId(3)).shape = Shape({2, 5}, DType::F32);
  test::check_error([&] { verify(g); }, ErrorKind::Verify,
                    "%3 (relu): shape f32[2,5] does not match f32[2,4] inferred from its operands");
  Graph h = small();
  h.node_mut(NodeId(1)).shape = Shape({4, 4}, DType::F32);
  test::check_error([&] { verify(h); }, ErrorKind::Verify,
                    "%2 (matmul): matmul: contracting dims differ: f32[2,3] @ f32[4,4] (3 != 4)");
}

TEST_CASE("verify: wrong arity, bad outputs and duplicate names are found") {
  Graph g = small();
  g.set_inputs(NodeId(3), {NodeId(2), NodeId(2)});
  test::check_error([&] { verify(g); }, ErrorKind::Verify, "%3 (relu): takes 1 inputs, has 2");
  Graph h = small();
  h.outputs.push_back(NodeId(17));
  test::check_error([&] { verify(h); }, ErrorKind::Verify,
                    "output 1 is %17, which is not in the graph");
  Graph d = small();
  d.input("x", Shape({1}, DType::F32));
  test::check_error([&] { verify(d); }, ErrorKind::Verify, "name \"x\" is already used by %0");
  Graph c("c");
  c.add_node(Op(OpKind::Constant, ConstantAttrs{Bytes{{1, 2, 3}}}), {}, Shape({2}, DType::F32));
  test::check_error([&] { verify(c); }, ErrorKind::Verify,
                    "holds 3 bytes, its shape f32[2] needs 8");
  Graph m = small();
  m.nodes_mut()[2].id = NodeId(7);
  test::check_error([&] { verify(m); }, ErrorKind::Verify, "node at position 2 has id %7");
}

TEST_CASE("verify: all problems are listed, not just the first") {
  Graph g = small();
  g.node_mut(NodeId(3)).shape = Shape({9}, DType::F32);
  g.outputs.push_back(NodeId(40));
  auto problems = verify_all(g);
  CHECK(problems.size() == 2);
  test::check_error([&] { verify(g); }, ErrorKind::Verify, "(and 1 more)");
}

TEST_CASE("bind: symbols become sizes everywhere") {
  Graph g = dynamic_graph();
  Graph b = g.bind(DimBinding::batch_seq(2, 5));
  CHECK_FALSE(b.has_dynamic_dims());
  CHECK(b.shape(NodeId(0)) == Shape({2, 5, 8}, DType::F32));
  CHECK(b.shape(NodeId(2)) == Shape({2, 5, 4}, DType::F32));
  CHECK(b.shape(NodeId(3)) == Shape({10, 4}, DType::F32));
  CHECK(verify_all(b).empty());
  CHECK(g.has_dynamic_dims()); // the original is untouched
  CHECK(b.len() == g.len());
  CHECK(b.outputs == g.outputs);
}

TEST_CASE("bind: an unbound symbol is an error naming it") {
  DimBinding only_batch;
  only_batch.set(sym::kBatch, 2);
  test::check_error([&] { dynamic_graph().bind(only_batch); }, ErrorKind::Bind,
                    "bind: symbol ?seq is not bound (graph @dyn uses it at %0 (input)");
}

TEST_CASE("bind: sizes that break a shape rule are inconsistent") {
  // rows must equal batch * seq for the reshape.
  DimBinding b = DimBinding::batch_seq(2, 5);
  b.set(sym::kRows, 11);
  test::check_error([&] { dynamic_graph().bind(b); }, ErrorKind::Bind,
                    "is inconsistent at %3 (reshape)");
  // Two symbols added together must get the same size.
  Graph g("two");
  auto a = g.input("a", Shape({Dim::dynamic("bind_sym_a")}, DType::F32));
  auto c = g.input("c", Shape({Dim::dynamic("bind_sym_c")}, DType::F32));
  g.binary(BinaryOp::Add, a, c, Shape({Dim::dynamic("bind_sym_c")}, DType::F32));
  DimBinding ok;
  ok.set("bind_sym_a", 4).set("bind_sym_c", 4);
  CHECK(g.bind(ok).shape(NodeId(2)) == Shape({4}, DType::F32));
  DimBinding bad;
  bad.set("bind_sym_a", 3).set("bind_sym_c", 4);
  test::check_error([&] { g.bind(bad); }, ErrorKind::Bind,
                    "add: shapes do not broadcast: f32[3] vs f32[4]");
}

TEST_CASE("bind: a static graph binds to itself") {
  Graph g = small();
  CHECK(g.bind(DimBinding{}) == g);
}
