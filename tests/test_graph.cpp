// tests/test_graph.cpp -- RLX's Graph API: construction, queries, builders and their errors.
#include "support/check_error.hpp"
#include "support/example_graphs.hpp"

#include <rlx/all.hpp>

#include <sstream>

using namespace rlx;
using namespace rlx::ir;

TEST_CASE("graph: RLX's example builds five nodes and prints them") {
  Graph g = rlx::test::bert_qkv_graph();
  CHECK(g.len() == 5);
  CHECK_FALSE(g.is_empty());
  std::ostringstream os;
  os << g;
  CHECK(os.str() == "graph @bert_layer {\n"
                    "  %0 = input(\"hidden\") : [4, 15, 384] f32\n"
                    "  %1 = param(\"qkv_weight\") : [384, 1152] f32\n"
                    "  %2 = param(\"qkv_bias\") : [1152] f32\n"
                    "  %3 = matmul(%0, %1) : [4, 15, 1152] f32\n"
                    "  %4 = add(%3, %2) : [4, 15, 1152] f32\n"
                    "  return %4\n"
                    "}\n");
}

TEST_CASE("graph: queries find users, names and orders") {
  Graph g = rlx::test::bert_qkv_graph();
  CHECK(g.users(NodeId(0)) == std::vector{NodeId(3)});
  CHECK(g.use_count(NodeId(3)) == 1);
  CHECK(g.use_count(NodeId(4)) == 0);
  CHECK(g.node_id_by_name("qkv_bias") == NodeId(2));
  CHECK(g.input_id("hidden") == NodeId(0));
  CHECK_FALSE(g.input_id("qkv_weight").has_value());
  CHECK(g.param_id("qkv_weight") == NodeId(1));
  CHECK_FALSE(g.node_id_by_name("nope").has_value());
  CHECK(g.topo_order() == std::vector{NodeId(0), NodeId(1), NodeId(2), NodeId(3), NodeId(4)});
  CHECK(g.reverse_topo().front() == NodeId(4));
  CHECK(g.shape(NodeId(3)) == Shape({4, 15, 1152}, DType::F32));
  CHECK(g.node(NodeId(4)).op.kind() == OpKind::Add);
  CHECK(g.nodes().size() == 5);
  CHECK(g.outputs == std::vector{NodeId(4)});
}

TEST_CASE("graph: a multiply-used node counts every use") {
  Graph g("sq");
  auto x = g.input("x", Shape({3}, DType::F32));
  auto y = g.binary(BinaryOp::Mul, x, x, Shape({3}, DType::F32));
  CHECK(g.use_count(x) == 2);
  CHECK(g.users(x) == std::vector{y});
}

TEST_CASE("graph: copies are deep and compare equal until changed") {
  Graph g = rlx::test::bert_qkv_graph();
  Graph h = g;
  CHECK(h == g);
  h.node_mut(NodeId(0)).shape = Shape({2, 15, 384}, DType::F32);
  CHECK_FALSE(h == g);
  Graph k = g;
  k.set_inputs(NodeId(4), {NodeId(3), NodeId(3)});
  CHECK_FALSE(k == g);
  CHECK(k.node(NodeId(4)).inputs == std::vector{NodeId(3), NodeId(3)});
  Graph m = g;
  m.nodes_mut()[1].name = "label";
  CHECK_FALSE(m == g);
  Graph n = g;
  n.name = "other";
  CHECK_FALSE(n == g);
}

TEST_CASE("graph: dynamic dims are reported") {
  Graph g("dyn");
  auto x = g.input("x", Shape({Dim::dynamic(sym::kBatch), Dim::dynamic(sym::kSeq), 8}, DType::F32));
  g.activation(Activation::Relu, x, g.shape(x));
  CHECK(g.has_dynamic_dims());
  CHECK(g.dynamic_symbols() == std::vector<uint32_t>{sym::kBatch, sym::kSeq});
  CHECK_FALSE(rlx::test::bert_qkv_graph().has_dynamic_dims());
  CHECK(rlx::test::bert_qkv_graph().dynamic_symbols().empty());
}

TEST_CASE("graph: inspect annotates counts, users and outputs") {
  std::string s = rlx::test::bert_qkv_graph().inspect();
  INFO(s);
  CHECK(s.find("graph @bert_layer (5 nodes, 1 outputs") != std::string::npos);
  CHECK(s.find("param=2") != std::string::npos);
  CHECK(s.find("%4 = add(%3, %2) : [4, 15, 1152] f32   // output") != std::string::npos);
  // Provenance: the line that built each node, in the file that builds the example graph.
  CHECK(s.find("example_graphs.hpp:") != std::string::npos);
}

TEST_CASE("builders: matmul names both shapes and the caller's line when K differs") {
  Graph g("bad");
  auto a = g.input("a", Shape({2, 3}, DType::F32));
  auto b = g.input("b", Shape({4, 5}, DType::F32));
  std::string msg =
      test::check_error([&] { g.matmul(a, b, Shape({2, 5}, DType::F32)); }, ErrorKind::Shape,
                        "matmul: contracting dims differ: f32[2,3] @ f32[4,5] (3 != 4)");
  CHECK(msg.find("test_graph.cpp:") != std::string::npos);
  CHECK(g.len() == 2); // nothing was appended
}

TEST_CASE("builders: a declared shape that disagrees with the operands is an error") {
  Graph g("bad");
  auto x = g.input("x", Shape({4, 15, 384}, DType::F32));
  auto w = g.param("w", Shape({384, 1152}, DType::F32));
  test::check_error([&] { g.matmul(x, w, Shape({4, 15, 1000}, DType::F32)); }, ErrorKind::Shape,
                    "matmul: declared output f32[4,15,1000] does not match f32[4,15,1152]");
  test::check_error([&] { g.binary(BinaryOp::Add, x, w, Shape({4, 15, 384}, DType::F32)); },
                    ErrorKind::Shape,
                    "add: shapes do not broadcast: f32[4,15,384] vs f32[384,1152]");
  test::check_error([&] { g.binary(BinaryOp::Lt, x, x, Shape({4, 15, 384}, DType::F32)); },
                    ErrorKind::Shape,
                    "declared output f32[4,15,384] does not match bool[4,15,384]");
  auto i = g.input("i", Shape({3}, DType::I32));
  test::check_error([&] { g.activation(Activation::Exp, i, Shape({3}, DType::I32)); },
                    ErrorKind::Type, "exp: needs a floating-point operand, got i32[3]");
}

TEST_CASE("builders: a fused residual norm whose residual or bias has another dtype than x is a "
          "type error") {
  // Regression: an i32 residual verified, then both backends rejected the graph at run time.
  Graph g("bad");
  auto x = g.input("x", Shape({2, 4}, DType::F32));
  auto r = g.input("r", Shape({2, 4}, DType::I32));
  auto gamma = g.input("gamma", Shape({4}, DType::F32));
  auto beta = g.input("beta", Shape({4}, DType::F32));
  test::check_error(
      [&] {
        g.fused_residual_ln(x, r, std::nullopt, gamma, beta, 1e-5f, Shape({2, 4}, DType::F32));
      },
      ErrorKind::Type,
      "fused_residual_ln: the residual must have x's dtype, got f32[2,4], i32[2,4], f32[4], "
      "f32[4]");
  test::check_error(
      [&] { g.fused_residual_rms_norm(x, x, r, gamma, beta, 1e-5f, Shape({2, 4}, DType::F32)); },
      ErrorKind::Type, "fused_residual_rms_norm: the bias must have x's dtype");
  CHECK(g.len() == 4); // nothing was appended
}

TEST_CASE("builders: bad node ids and arities are user errors, not crashes") {
  Graph g("bad");
  auto x = g.input("x", Shape({3}, DType::F32));
  test::check_error([&] { g.binary(BinaryOp::Add, x, NodeId(7), Shape({3}, DType::F32)); },
                    ErrorKind::Value, "operand %7 is not in graph @bad");
  test::check_error([&] { (void)g.node(NodeId(9)); }, ErrorKind::Value, "node %9 is not in graph");
  test::check_error([&] { g.set_outputs({NodeId(1)}); }, ErrorKind::Value, "set_outputs");
  test::check_error([&] { g.add_node(Op(OpKind::Add), {x}, Shape({3}, DType::F32)); },
                    ErrorKind::Value, "add: takes 2 inputs, got 1");
  test::check_error([&] { g.add_node(Op(OpKind::Concat), {}, Shape({3}, DType::F32)); },
                    ErrorKind::Value, "concat: takes at least one input");
}

TEST_CASE("op: attributes must be the kind's struct") {
  CHECK_THROWS_AS(Op(OpKind::Add, ReduceAttrs{}), InternalError);
  Op r(OpKind::ReduceSum, ReduceAttrs{{1}, true});
  CHECK(r.attrs<ReduceAttrs>().keep_dim);
  CHECK_THROWS_AS((void)r.attrs<NormAttrs>(), InternalError);
  CHECK(Op(OpKind::ReduceSum) != r);
  CHECK(Op(OpKind::ReduceSum, ReduceAttrs{{1}, true}) == r);
}

TEST_CASE("builders: attention masks and rope tables of the wrong shape fail at build time") {
  Graph g("att");
  auto q = g.input("q", Shape({2, 3, 8}, DType::F32));
  auto bad_mask = g.input("m", Shape({2, 4}, DType::F32));
  test::check_error([&] { g.attention(q, q, q, bad_mask, 2, 4, Shape({2, 3, 8}, DType::F32)); },
                    ErrorKind::Shape, "attention: shapes do not broadcast: f32[2,3] vs f32[2,4]");
  auto bad_bias = g.input("b", Shape({2, 3, 3, 3}, DType::F32));
  test::check_error(
      [&] { g.attention_bias(q, q, q, bad_bias, 2, 4, Shape({2, 3, 8}, DType::F32)); },
      ErrorKind::Shape, "attention: shapes do not broadcast: f32[2,2,3,3] vs f32[2,3,3,3]");
  auto cos = g.input("cos", Shape({3, 4}, DType::F32));
  test::check_error([&] { g.rope(q, cos, cos, 4); }, ErrorKind::Shape,
                    "rope: cos ([seq, n_rot/2]) must have 6 elements, got f32[3,4]");
}
