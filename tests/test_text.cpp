// tests/test_text.cpp -- text IR printing and exact round trips for every op kind.
#include "support/all_ops.hpp"
#include "support/check_error.hpp"

#include <rlx/all.hpp>

#include <cmath>

using namespace rlx;
using namespace rlx::ir;

TEST_CASE("text: a graph with every op kind round-trips exactly") {
  Graph g = test::all_ops_graph();
  std::string text = to_text(g);
  INFO(text);
  Graph back = parse_text(text);
  CHECK(back == g);
  CHECK(to_text(back) == text); // printing is a fixed point after one round
  // Every kind of the table is really in the graph.
  std::vector<bool> seen(kNumOps, false);
  for (const Node& n : g.nodes()) seen[static_cast<std::size_t>(n.op.kind())] = true;
  for (std::size_t k = 0; k < kNumOps; ++k) {
    INFO(op_name(OpKind(k)));
    CHECK(seen[k]);
  }
}

TEST_CASE("text: every op kind round-trips alone, with default attributes") {
  for (std::size_t k = 0; k < kNumOps; ++k) {
    OpKind kind = static_cast<OpKind>(k);
    INFO(op_name(kind));
    Graph g("one");
    std::vector<NodeId> ins;
    int arity = op_info(kind).arity;
    for (int i = 0; i < (arity < 0 ? 3 : arity); ++i)
      ins.push_back(g.input("x" + std::to_string(i), Shape({2, 3}, DType::F32)));
    g.set_outputs({g.add_node(Op(kind), ins, Shape({2}, DType::F64))});
    CHECK(parse_text(to_text(g)) == g);
  }
}

TEST_CASE("text: attributes equal to their defaults are omitted") {
  Graph g("attrs");
  auto x = g.input("x", Shape({2, 3}, DType::F32));
  g.add_node(Op(OpKind::ReduceSum, ReduceAttrs{{1}, false}), {x}, Shape({2}, DType::F32));
  g.add_node(Op(OpKind::ReduceMax, ReduceAttrs{{0, -1}, true}), {x}, Shape({1, 1}, DType::F32));
  g.add_node(Op(OpKind::LayerNorm, NormAttrs{-1, 1e-5f}), {x, x, x}, Shape({2, 3}, DType::F32));
  g.add_node(Op(OpKind::Attention, AttentionAttrs{2, 4, MaskType::Causal, 0, 0.5f, std::nullopt}),
             {x, x, x}, Shape({2, 3}, DType::F32));
  g.add_node(Op(OpKind::Clamp, ClampAttrs{0.0, 6.0}), {x}, Shape({2, 3}, DType::F32));
  g.add_node(Op(OpKind::Constant, ConstantAttrs{Bytes{{0x00, 0x00, 0x80, 0x3f}}}), {},
             Shape::scalar(DType::F32));
  std::string t = to_text(g);
  INFO(t);
  CHECK(t.find("%1 = reduce_sum(%0, axes=[1]) : [2] f32") != std::string::npos);
  CHECK(t.find("%2 = reduce_max(%0, axes=[0, -1], keep_dim=true) : [1, 1] f32") !=
        std::string::npos);
  CHECK(t.find("%3 = layer_norm(%0, %0, %0) : [2, 3] f32") != std::string::npos);
  CHECK(
      t.find("%4 = attention(%0, %0, %0, num_heads=2, head_dim=4, mask=Causal, score_scale=0.5)") !=
      std::string::npos);
  CHECK(t.find("%5 = clamp(%0, min=0.0, max=6.0)") != std::string::npos);
  CHECK(t.find("%6 = constant(data=x\"0000803f\") : [] f32") != std::string::npos);
  CHECK(parse_text(t) == g);
}

TEST_CASE("text: hand-written IR with comments, gaps in ids and defaults parses") {
  Graph g = parse_text(R"(
    // a comment line
    graph @hand {
      %10 = input("x") : [?batch, 4] f32     // dynamic batch
      %20 = param("w") : [4, 2] f32
      %7 = matmul(%10, %20) : [?batch, 2] f32 #"proj"
      %8 = reduce_sum(%7, keep_dim=true, axes=[-1]) : [?batch, 1] f32
      return %8, %7
    }
  )");
  CHECK(g.name == "hand");
  CHECK(g.len() == 4);
  CHECK(g.outputs == std::vector{NodeId(3), NodeId(2)});
  CHECK(g.node(NodeId(2)).name == std::optional<std::string>("proj"));
  CHECK(g.node(NodeId(2)).inputs == std::vector{NodeId(0), NodeId(1)});
  CHECK(g.shape(NodeId(0)).dim(0) == Dim::dynamic(sym::kBatch));
  CHECK(g.node(NodeId(3)).op.attrs<ReduceAttrs>().axes == Ints{-1});
  CHECK(g.node(NodeId(3)).op.attrs<ReduceAttrs>().keep_dim);
  verify(g);
}

TEST_CASE("text: graph names and strings that are not identifiers are quoted") {
  Graph g("my graph \"2\"");
  g.set_outputs({g.input("a\tb\\c\x01 \xc3\xa9", Shape({1}, DType::U8))});
  std::string t = to_text(g);
  INFO(t);
  CHECK(t.rfind("graph @\"my graph \\\"2\\\"\" {", 0) == 0);
  CHECK(t.find("input(\"a\\tb\\\\c\\x01 \xc3\xa9\")") != std::string::npos);
  CHECK(parse_text(t) == g);
}

TEST_CASE("text: strings that are not valid UTF-8 survive through \\x escapes") {
  Graph g("bytes");
  g.input(std::string("bad\xff\xfe utf8\xc3", 11), Shape({1}, DType::F32));
  std::string t = to_text(g);
  CHECK(t.find("\\xff\\xfe") != std::string::npos);
  CHECK(parse_text(t) == g);
}

TEST_CASE("text: float attributes keep their exact values") {
  Graph g("floats");
  auto x = g.input("x", Shape({2}, DType::F32));
  for (double v : {0.1, -0.0, 1e-300, 1.7976931348623157e308, 5e-324, -2.5, 3.0})
    g.add_node(Op(OpKind::Clamp, ClampAttrs{v, kInf}), {x}, Shape({2}, DType::F32));
  for (float v : {0.1f, 1e-12f, 3.4028235e38f, 1.17549435e-38f, 1e-45f})
    g.add_node(Op(OpKind::LayerNorm, NormAttrs{0, v}), {x, x, x}, Shape({2}, DType::F32));
  Graph back = parse_text(to_text(g));
  CHECK(back == g);
  CHECK(std::signbit(back.node(NodeId(2)).op.attrs<ClampAttrs>().min));
}

TEST_CASE("text: parsed nodes carry no source location (regression: the parser's own line)") {
  Graph g = parse_text("graph @g {\n  %0 = input(\"x\") : [2] f32\n  %1 = relu(%0) : [2] f32\n"
                       "  return %1\n}\n");
  for (const Node& n : g.nodes()) CHECK_FALSE(n.loc.known());
  CHECK(g.inspect().find("text_parse") == std::string::npos);
}
