// tests/test_bert_layer.cpp -- a BERT encoder layer built with RLX's builders matches
// PyTorch's nn.TransformerEncoderLayer (tests/fixtures/make_bert.py) within 1e-4, as built,
// decomposed, and fused by the compile pipeline (on the interpreter and the JIT).
#include "support/formula.hpp"

#include <rlx/all.hpp>
#include <rlx/io/npy.hpp>
#include <rlx/passes.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>

using namespace rlx;
using namespace rlx::ir;
using rlx::Buffer;
using rlx::test::Formula;
using rlx::test::formula;

namespace {

constexpr int64_t B = 4, S = 15, D = 384, H = 12, F = 1536;
constexpr int64_t kLengths[B] = {15, 11, 7, 1}; // valid tokens per row; the rest is padding

// The same table as tests/fixtures/make_bert.py: value[k] = offset + scale * sin(freq*k + phase),
// computed in double and rounded to f32 (offset is the script's "+ 1.0" on layer-norm gains).
const Formula kParams[] = {
    {"qkv_w", {D, 3 * D}, 0.05, 0.37, 0.1, 0}, {"qkv_b", {3 * D}, 0.02, 0.71, 0.2, 0},
    {"out_w", {D, D}, 0.05, 0.53, 0.3, 0},     {"out_b", {D}, 0.02, 0.29, 0.4, 0},
    {"ln1_g", {D}, 0.1, 0.13, 0.5, 1},         {"ln1_b", {D}, 0.05, 0.17, 0.6, 0},
    {"ff1_w", {D, F}, 0.05, 0.41, 0.7, 0},     {"ff1_b", {F}, 0.02, 0.23, 0.8, 0},
    {"ff2_w", {F, D}, 0.03, 0.31, 0.9, 0},     {"ff2_b", {D}, 0.02, 0.19, 1.0, 0},
    {"ln2_g", {D}, 0.1, 0.11, 1.1, 1},         {"ln2_b", {D}, 0.05, 0.07, 1.2, 0},
};

/// How the first residual norm is built: with RLX's fused_residual_ln builder, or from an
/// add and a layer_norm like the second one (the form the fusion passes start from).
enum class FirstNorm { Fused, Primitives };

/// Post-LN BERT layer: x1 = LN(x + attn(x)), out = LN(x1 + FFN(x1)), erf GELU, padding mask.
Graph bert_layer(FirstNorm first = FirstNorm::Fused) {
  Graph g("bert_encoder_layer");
  auto x = g.input("hidden", Shape({B, S, D}, DType::F32));
  auto mask = g.input("mask", Shape({B, S}, DType::F32)); // 1 = token, 0 = padding
  std::map<std::string, NodeId> p;
  for (const Formula& f : kParams) p[f.name] = g.param(f.name, Shape::of(f.dims, DType::F32));
  auto qkv = g.linear_bias(x, p["qkv_w"], p["qkv_b"]);
  auto q = g.narrow_(qkv, 2, 0, D), k = g.narrow_(qkv, 2, D, D), v = g.narrow_(qkv, 2, 2 * D, D);
  auto ctx = g.attention(q, k, v, mask, H, D / H, Shape({B, S, D}, DType::F32));
  auto attn = g.linear_bias(ctx, p["out_w"], p["out_b"]);
  auto x1 = first == FirstNorm::Fused ? g.fused_residual_ln(attn, x, std::nullopt, p["ln1_g"],
                                                            p["ln1_b"], 1e-5f, g.shape(x))
                                      : g.ln(g.add(attn, x), p["ln1_g"], p["ln1_b"], 1e-5f);
  auto h = g.linear_bias_act(x1, p["ff1_w"], p["ff1_b"], Activation::Gelu);
  auto f = g.linear_bias(h, p["ff2_w"], p["ff2_b"]);
  g.set_outputs({g.ln(g.add(x1, f), p["ln2_g"], p["ln2_b"], 1e-5f)});
  return g;
}

interp::Feed inputs() {
  Buffer mask(Shape({B, S}, DType::F32));
  for (int64_t b = 0; b < B; ++b)
    for (int64_t s = 0; s < S; ++s) mask.set_f64(b * S + s, s < kLengths[b] ? 1.0 : 0.0);
  return {{"hidden", formula({"hidden", {B, S, D}, 1.0, 0.11, 1.3, 0})}, {"mask", mask}};
}

interp::Feed params() {
  interp::Feed feed;
  for (const Formula& f : kParams) feed[f.name] = formula(f);
  return feed;
}

/// The graph's leaves (inputs and params) in graph order, as an Executable takes them.
std::vector<Buffer> leaves_of(const Graph& g) {
  interp::Feed in = inputs(), ps = params();
  std::vector<Buffer> leaves;
  for (const Node& n : g.nodes()) {
    if (n.op.kind() != OpKind::Input && n.op.kind() != OpKind::Param) continue;
    const std::string& name = n.op.attrs<LeafAttrs>().name;
    leaves.push_back(n.op.kind() == OpKind::Input ? in.at(name) : ps.at(name));
  }
  return leaves;
}

/// How many nodes of g are of kind k.
int count(const Graph& g, OpKind k) {
  return int(std::count_if(g.nodes().begin(), g.nodes().end(),
                           [k](const Node& n) { return n.op.kind() == k; }));
}

double max_abs_diff(const Buffer& a, const Buffer& b) {
  double worst = 0;
  for (int64_t i = 0; i < a.numel(); ++i)
    worst = std::max(worst, std::fabs(a.get_f64(i) - b.get_f64(i)));
  return worst;
}

/// g's output matches PyTorch's within 1e-4 when the interpreter and the JIT run g.
void check_matches_torch(const Graph& g) {
  Buffer want = io::load_npy(std::string(RLX_SOURCE_DIR) + "/tests/fixtures/bert/expected.npy");
  std::vector<Buffer> leaves = leaves_of(g);
  std::vector<const Buffer*> ptrs;
  for (const Buffer& b : leaves) ptrs.push_back(&b);
  for (Backend backend : {Backend::Interp, Backend::Jit}) {
    INFO("backend " << enum_name(backend));
    std::vector<Buffer> got = compile(g, backend)->run(ptrs);
    REQUIRE(got[0].shape() == want.shape());
    double err = max_abs_diff(got[0], want);
    INFO("max |rlx - torch| = " << err);
    CHECK(err < 1e-4);
  }
}

} // namespace

TEST_CASE("bert: an encoder layer matches PyTorch's TransformerEncoderLayer within 1e-4") {
  Graph g = bert_layer();
  verify(g);
  Buffer want = io::load_npy(std::string(RLX_SOURCE_DIR) + "/tests/fixtures/bert/expected.npy");
  auto got = interp::run(g, inputs(), params());
  REQUIRE(got[0].shape() == want.shape());
  double err = max_abs_diff(got[0], want);
  INFO("max |rlx - torch| = " << err);
  CHECK(err < 1e-4);
}

TEST_CASE("bert: the decomposed layer (primitives only) matches PyTorch too") {
  Graph d = bert_layer();
  CHECK(passes::decompose(d));
  verify(d);
  for (const Node& n : d.nodes()) CHECK_FALSE(passes::has_decomposition(n.op.kind()));
  Buffer want = io::load_npy(std::string(RLX_SOURCE_DIR) + "/tests/fixtures/bert/expected.npy");
  double err = max_abs_diff(interp::run(d, inputs(), params())[0], want);
  INFO("max |rlx - torch| = " << err);
  CHECK(err < 1e-4);
}

TEST_CASE("bert: with fusion the pipeline makes its four linear layers fused nodes, and the "
          "layer still matches PyTorch") {
  Graph g = bert_layer();
  passes::PipelineOptions opts;
  opts.fuse = passes::FuseOptions::all();
  opts.verify_each = true;
  passes::compile_pipeline(g, opts);
  int fused = 0, with_gelu = 0;
  for (const Node& n : g.nodes()) {
    CHECK(n.op.kind() != OpKind::MatMul);
    if (n.op.kind() != OpKind::FusedMatMulBiasAct) continue;
    ++fused;
    with_gelu += n.op.attrs<FusedMatMulAttrs>().activation == Activation::Gelu;
  }
  CHECK(fused == 4);
  CHECK(with_gelu == 1);
  Buffer want = io::load_npy(std::string(RLX_SOURCE_DIR) + "/tests/fixtures/bert/expected.npy");
  double err = max_abs_diff(interp::run(g, inputs(), params())[0], want);
  INFO("max |rlx - torch| = " << err);
  CHECK(err < 1e-4);
}

TEST_CASE("bert: built from adds and layer norms, the layer shrinks to its fused form with every "
          "fusion on and still matches PyTorch on the interpreter and on the JIT") {
  Graph g = bert_layer(FirstNorm::Primitives);
  const Graph unfused = g;
  REQUIRE(count(g, OpKind::LayerNorm) == 2);
  REQUIRE(count(g, OpKind::FusedResidualLN) == 0);
  passes::PipelineOptions opts;
  opts.fuse = passes::FuseOptions::all();
  opts.verify_each = true;
  passes::compile_pipeline(g, opts);
  INFO("fused layer:\n" << to_text(g));
  // Four linear layers (one with its GELU) and two residual norms; nothing of theirs is left.
  CHECK(count(g, OpKind::FusedMatMulBiasAct) == 4);
  CHECK(count(g, OpKind::FusedResidualLN) == 2);
  for (OpKind gone : {OpKind::MatMul, OpKind::Add, OpKind::Gelu, OpKind::LayerNorm})
    CHECK(count(g, gone) == 0);
  // 7 nodes fewer: the four bias adds, the GELU and the two residual adds go into the fused
  // nodes that the matmuls and the layer norms become.
  CHECK(g.len() + 7 == unfused.len());
  check_matches_torch(g);
}

TEST_CASE("bert: the default pipeline fuses only the layer's residual norms, and the layer still "
          "matches PyTorch on both backends") {
  Graph g = bert_layer(FirstNorm::Primitives);
  passes::compile_pipeline(g);
  CHECK(count(g, OpKind::FusedResidualLN) == 2);
  CHECK(count(g, OpKind::LayerNorm) == 0);
  CHECK(count(g, OpKind::FusedMatMulBiasAct) == 0); // off by default
  CHECK(count(g, OpKind::MatMul) == 4);
  check_matches_torch(g);
}

namespace {

/// The same layer written as HIR blocks: attention_block, residual_layer_norm and two linears.
HirModule bert_hir(FusionPolicy policy) {
  HirModule h("bert_encoder_layer", policy);
  auto x = h.input("hidden", Shape({B, S, D}, DType::F32));
  auto mask = h.input("mask", Shape({B, S}, DType::F32));
  std::map<std::string, HirNodeId> p;
  for (const Formula& f : kParams) p[f.name] = h.param(f.name, Shape::of(f.dims, DType::F32));
  AttentionBlockOptions attn;
  attn.qkv_bias = p["qkv_b"];
  attn.out_bias = p["out_b"];
  attn.mask = mask;
  attn.mask_kind = MaskKind::custom();
  auto a = h.attention_block(x, p["qkv_w"], p["out_w"], H, D / H, attn);
  auto x1 = h.residual_layer_norm(a, x, std::nullopt, p["ln1_g"], p["ln1_b"], 1e-5f);
  auto f = h.linear(h.linear(x1, p["ff1_w"], p["ff1_b"], Activation::Gelu), p["ff2_w"], p["ff2_b"],
                    std::nullopt);
  h.set_outputs({h.residual_layer_norm(f, x1, std::nullopt, p["ln2_g"], p["ln2_b"], 1e-5f)});
  return h;
}

} // namespace

TEST_CASE("bert: the layer written as HIR blocks matches PyTorch under both fusion policies, "
          "lowered as is and through the pipeline") {
  for (FusionPolicy policy : {FusionPolicy::Fusable, FusionPolicy::Direct}) {
    INFO("policy " << (policy == FusionPolicy::Direct ? "direct" : "fusable"));
    HirModule h = bert_hir(policy);
    CHECK(h.len() == 2 + 12 + 5); // inputs, params, five blocks
    Graph g = Graph::from_hir(h);
    verify(g);
    // Direct lowers the four biased linears and both residual norms to fused ops at once.
    bool direct = policy == FusionPolicy::Direct;
    CHECK(count(g, OpKind::FusedMatMulBiasAct) == (direct ? 4 : 0));
    CHECK(count(g, OpKind::FusedResidualLN) == (direct ? 2 : 0));
    CHECK(count(g, OpKind::Attention) == 1);
    check_matches_torch(g);
    passes::compile_pipeline(g);
    CHECK(count(g, OpKind::FusedResidualLN) == 2); // Fusable: the pipeline fuses them
    check_matches_torch(g);
  }
}
