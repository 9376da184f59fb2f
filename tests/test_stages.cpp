// tests/test_stages.cpp -- HIR blocks, GraphModule's stage conversions, the stage dumps, DOT
// export and element-wise regions.
#include "support/random_graph.hpp"

#include <rlx/all.hpp>

#include <doctest/doctest.h>

#include <string>
#include <vector>

using namespace rlx;
using namespace rlx::ir;
using rlx::Buffer;
using rlx::test::Rng;

namespace {

Shape f32(std::vector<int64_t> dims) { return Shape::of(dims, DType::F32); }

std::map<OpKind, int> kind_counts(const Graph& g) {
  std::map<OpKind, int> c;
  for (const Node& n : g.nodes()) c[n.op.kind()]++;
  return c;
}

/// Deterministic values in [-1, 1) for every Input and Param of g, by name.
std::pair<interp::Feed, interp::Feed> feeds_for(const Graph& g, uint64_t seed) {
  Rng rng(seed);
  interp::Feed inputs, params;
  for (const Node& n : g.nodes()) {
    OpKind k = n.op.kind();
    if (k != OpKind::Input && k != OpKind::Param) continue;
    Buffer b(n.shape);
    for (int64_t i = 0; i < b.numel(); ++i) b.set_f64(i, rng.uniform(-1, 1));
    (k == OpKind::Input ? inputs : params)[n.op.attrs<LeafAttrs>().name] = b;
  }
  return {inputs, params};
}

double max_abs_diff(const Buffer& a, const Buffer& b) {
  double worst = 0;
  for (int64_t i = 0; i < a.numel(); ++i)
    worst = std::max(worst, std::fabs(a.get_f64(i) - b.get_f64(i)));
  return worst;
}

/// A small transformer block in HIR: attention with rope and a padding mask, a residual
/// layer norm, a SwiGLU FFN, a residual RMS norm, a GELU head and a shared projection pair.
HirModule transformer_block(FusionPolicy policy) {
  constexpr int64_t B = 2, S = 5, Dm = 16, H = 2, Dh = 8, F = 24;
  HirModule m("block", policy);
  HirNodeId x = m.input("x", f32({B, S, Dm}));      // h0
  HirNodeId mask = m.input("mask", f32({B, S}));    // h1
  HirNodeId cos = m.input("cos", f32({S, Dh / 2})); // h2
  HirNodeId sin = m.input("sin", f32({S, Dh / 2})); // h3
  // Parameters h4 .. h21, in this order.
  std::map<std::string, HirNodeId> p;
  for (auto [name, dims] :
       std::vector<std::pair<std::string, std::vector<int64_t>>>{{"wq", {Dm, Dm}},
                                                                 {"wk", {Dm, Dm}},
                                                                 {"wv", {Dm, Dm}},
                                                                 {"bv", {Dm}},
                                                                 {"wo", {Dm, Dm}},
                                                                 {"bo", {Dm}},
                                                                 {"g1", {Dm}},
                                                                 {"b1", {Dm}},
                                                                 {"up", {Dm, F}},
                                                                 {"gate", {Dm, F}},
                                                                 {"down", {F, Dm}},
                                                                 {"bias2", {Dm}},
                                                                 {"g2", {Dm}},
                                                                 {"b2", {Dm}},
                                                                 {"wh", {Dm, Dm}},
                                                                 {"bh", {Dm}},
                                                                 {"g3", {Dm}},
                                                                 {"b3", {Dm}}})
    p[name] = m.param(name, f32(dims));
  auto [q, k] = m.shared_linear_pair(x, p["wq"], p["wk"]);                              // h22, h23
  HirNodeId v = m.linear(x, p["wv"], p["bv"], std::nullopt);                            // h24
  HirNodeId qr = m.rope(q, cos, sin, Dh, Dh);                                           // h25
  HirNodeId kr = m.rope(k, cos, sin, Dh, Dh);                                           // h26
  HirNodeId ctx = m.attention(qr, kr, v, mask, H, Dh, MaskKind::custom());              // h27
  HirNodeId attn = m.linear(ctx, p["wo"], p["bo"], std::nullopt);                       // h28
  HirNodeId x1 = m.residual_layer_norm(attn, x, std::nullopt, p["g1"], p["b1"], 1e-5f); // h29
  HirNodeId ff = m.swiglu(x1, p["up"], p["gate"], p["down"]);                           // h30
  HirNodeId x2 = m.residual_rms_norm(ff, x1, p["bias2"], p["g2"], p["b2"], 1e-6f);      // h31
  HirNodeId head = m.linear(x2, p["wh"], p["bh"], Activation::Gelu);                    // h32
  HirNodeId ln = m.layer_norm(head, p["g3"], p["b3"], 1e-5f);                           // h33
  m.set_outputs({m.mir(Op(OpKind::Softmax, AxisAttrs{-1}), {ln}), x1});                 // h34
  return m;
}

} // namespace

TEST_CASE("HIR blocks record their output shapes and print as a block-level dump") {
  HirModule m = transformer_block(FusionPolicy::Fusable);
  CHECK(m.len() == 35);
  CHECK(m.node(HirNodeId(27)).shape == f32({2, 5, 16}));
  std::string text = m.to_string();
  INFO(text);
  CHECK(text.find("hir @block (fusable) {") == 0);
  CHECK(text.find("  h0 = input(\"x\") : [2, 5, 16] f32\n") != std::string::npos);
  CHECK(text.find("  h23 = shared_linear_pair(h0, h4, h5, slot=1) : [2, 5, 16] f32\n") !=
        std::string::npos);
  CHECK(text.find("  h27 = attention(h25, h26, h24, h1, h=2, d=8, mask=Custom) : [2, 5, 16] f32") !=
        std::string::npos);
  CHECK(text.find("  h31 = residual_rms_norm(h30, h29, h15, h16, h17, eps=1e-06)") !=
        std::string::npos);
  CHECK(text.find("  h32 = linear(h31, h18, h19, act=gelu) : [2, 5, 16] f32") != std::string::npos);
  CHECK(text.find("  h34 = mir:softmax(h33, softmax) : [2, 5, 16] f32") != std::string::npos);
  CHECK(text.find("  return h34, h29\n}") != std::string::npos);
}

TEST_CASE("a HIR block that does not fit its operands fails at once, naming the op, the shapes "
          "and the caller's line") {
  HirModule m("bad");
  HirNodeId x = m.input("x", f32({2, 8}));
  HirNodeId w = m.param("w", f32({7, 4}));
  CHECK_THROWS_WITH_AS(m.linear(x, w, std::nullopt, std::nullopt),
                       doctest::Contains("matmul: contracting dims differ: f32[2,8] @ f32[7,4]"),
                       Error);
  std::string what;
  int line = __LINE__ + 2;
  try {
    m.linear(x, w, std::nullopt, std::nullopt);
  } catch (const Error& e) {
    what = e.what();
  }
  CHECK(what.find("test_stages.cpp:" + std::to_string(line) + ")") != std::string::npos);
  CHECK(m.len() == 2); // the failed blocks were not added
  CHECK_THROWS_WITH_AS(m.linear(x, HirNodeId(9), std::nullopt, std::nullopt),
                       doctest::Contains("hir linear: operand h9 is not in module @bad"), Error);
}

TEST_CASE("HIR lowers to primitive chains (Fusable) or to fused ops (Direct), and both compute "
          "the same values") {
  Graph fusable = Graph::from_hir(transformer_block(FusionPolicy::Fusable));
  Graph direct = Graph::from_hir(transformer_block(FusionPolicy::Direct));
  verify(fusable);
  verify(direct);
  auto cf = kind_counts(fusable), cd = kind_counts(direct);
  CHECK(cf[OpKind::FusedMatMulBiasAct] == 0);
  CHECK(cf[OpKind::FusedResidualLN] == 0);
  CHECK(cf[OpKind::LayerNorm] == 2);
  CHECK(cd[OpKind::FusedMatMulBiasAct] == 3); // v, attention out and the head
  CHECK(cd[OpKind::FusedResidualLN] == 1);
  CHECK(cd[OpKind::FusedResidualRmsNorm] == 1);
  CHECK(cd[OpKind::LayerNorm] == 1);
  CHECK(direct.len() < fusable.len());
  // The MIR nodes carry the line of the HIR block they came from.
  CHECK(direct.node(direct.outputs[0]).loc.file.find("test_stages.cpp") != std::string::npos);

  auto [in, par] = feeds_for(fusable, 7);
  std::vector<Buffer> a = interp::run(fusable, in, par), b = interp::run(direct, in, par);
  REQUIRE(a.size() == 2);
  for (std::size_t k = 0; k < a.size(); ++k) {
    INFO("output " << k);
    CHECK(a[k].shape() == b[k].shape());
    CHECK(max_abs_diff(a[k], b[k]) < 1e-5);
  }
  // The attention block's output is not a trivial constant: rows differ.
  CHECK(max_abs_diff(a[1], Buffer(a[1].shape())) > 0.1);
}

TEST_CASE("GraphModule moves down the stages: HIR, MIR, LIR") {
  GraphModule m = Graph::define("mlp", [](HirModule& h) {
    HirNodeId x = h.input("x", f32({4, 8}));
    HirNodeId w = h.param("w", f32({8, 8}));
    HirNodeId b = h.param("b", f32({8}));
    return h.linear(x, w, b, Activation::Relu);
  });
  CHECK(m.stage() == Stage::Hir);
  CHECK(m.name() == "mlp");
  CHECK(m.hir().outputs == std::vector<HirNodeId>{HirNodeId(3)});
  CHECK_THROWS_WITH_AS(m.lir(), "module @mlp is at stage hir, not lir", Error);
  CHECK(inspect_module(m).find("module @mlp: hir\nhir @mlp (fusable) {") == 0);

  GraphModule mir = std::move(m).lower();
  CHECK(mir.stage() == Stage::Mir);
  CHECK(kind_counts(mir.mir())[OpKind::MatMul] == 1);
  CHECK(inspect_module(mir).find("module @mlp: mir\ngraph @mlp (6 nodes") == 0);

  GraphModule lir = std::move(mir).lower();
  CHECK(lir.stage() == Stage::Lir);
  CHECK(check_plan(lir.lir()).empty());
  CHECK(inspect_module(lir).find("module @mlp: lir\nlir @mlp (arena ") == 0);
  CHECK_THROWS_WITH_AS(std::move(lir).lower(), doctest::Contains("no lower stage"), Error);

  Graph g =
      Graph::from_lir(passes::compile_module(GraphModule(transformer_block(FusionPolicy::Direct))));
  CHECK(g.name == "block");
  CHECK(Graph(g).module().stage() == Stage::Mir);
  CHECK(Graph(g).to_mir() == g);
}

TEST_CASE("a HIR module without outputs does not lower") {
  GraphModule m = Graph::hir("empty");
  m.hir().input("x", f32({2}));
  CHECK_THROWS_WITH_AS(std::move(m).into_mir(), doctest::Contains("module @empty has no outputs"),
                       Error);
}

TEST_CASE("compile_module takes any stage to a verified LIR that runs as planned") {
  HirModule h = transformer_block(FusionPolicy::Fusable);
  Graph reference = Graph::from_hir(h);
  auto [in, par] = feeds_for(reference, 11);
  std::vector<Buffer> want = interp::run(reference, in, par);
  for (GraphModule m : {GraphModule(h), GraphModule(reference), GraphModule(plan_lir(reference))}) {
    INFO("from stage " << stage_name(m.stage()));
    LirModule lir = passes::compile_module(std::move(m));
    REQUIRE(check_plan(lir).empty());
    CHECK(lir.memory.arena_size < lir.memory.naive_size);
    std::vector<Buffer> leaves;
    for (const Node& n : lir.mir.nodes())
      if (n.op.kind() == OpKind::Input || n.op.kind() == OpKind::Param)
        leaves.push_back(
            (n.op.kind() == OpKind::Input ? in : par).at(n.op.attrs<LeafAttrs>().name));
    std::vector<const Buffer*> ptrs;
    for (const Buffer& b : leaves) ptrs.push_back(&b);
    std::vector<Buffer> got = interp::run_planned(lir, ptrs);
    REQUIRE(got.size() == want.size());
    for (std::size_t k = 0; k < got.size(); ++k) CHECK(max_abs_diff(got[k], want[k]) < 1e-6);
  }
}

TEST_CASE("DOT export draws nodes, edges, outputs and the plan's fused steps at every stage") {
  Graph g("dotty");
  NodeId x = g.input("x \"quoted\"", f32({2, 3}));
  NodeId y = g.exp(g.neg(x));
  g.set_outputs({g.sum(y, {1}, false)});
  std::string dot = to_dot(g);
  INFO(dot);
  CHECK(dot.find("digraph \"mir @dotty\" {") == 0);
  CHECK(dot.find("n0 [label=\"%0 = input(\\\"x \\\\\\\"quoted\\\\\\\"\\\")") != std::string::npos);
  CHECK(dot.find(", shape=ellipse];") != std::string::npos);
  CHECK(dot.find("subgraph") == std::string::npos); // a MIR graph has no steps
  CHECK(dot.find("n2 -> n3;") != std::string::npos);
  CHECK(dot.find("peripheries=2") != std::string::npos);
  CHECK(dot.substr(dot.size() - 2) == "}\n");

  DotOptions mine;
  mine.clusters = {{"mine", {x, y}}};
  CHECK(to_dot(g, mine).find("label=\"mine\"") != std::string::npos);

  std::string lir = to_dot(plan_lir(g));
  CHECK(lir.find("digraph \"lir @dotty\"") == 0);
  CHECK(lir.find("live 0..1") != std::string::npos);
  // The JIT's plan: neg, exp and the sum are one row step (the sum's prologue computes exp(-x)).
  std::string jit = to_dot(plan_lir(g, rlx::plan_options(rlx::Backend::Jit)));
  INFO(jit);
  CHECK(jit.find("subgraph cluster_0 {\n    label=\"step 0: row (3 ops)\"") != std::string::npos);
  CHECK(jit.find(" n1; n2; n3;") != std::string::npos);
  CHECK(jit.find("own buffer, live 0..1") != std::string::npos);
  std::string hir = to_dot(GraphModule(transformer_block(FusionPolicy::Fusable)));
  CHECK(hir.find("digraph \"hir @block\"") == 0);
  CHECK(hir.find("h27 [label=\"h27 attention\\nf32[2,5,16]\"];") != std::string::npos);
  CHECK(hir.find("h25 -> h27;") != std::string::npos);
}
