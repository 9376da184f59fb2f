// tests/test_hir_models.cpp -- the HIR's model-sized blocks: a Llama decoder layer (GQA, rope,
// causal attention, SwiGLU) against the layer as Hugging Face computes it
// (tests/fixtures/make_llama.py), and the attention block against its primitives.
#include "support/formula.hpp"

#include <rlx/all.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>

using namespace rlx;
using namespace rlx::ir;
using rlx::Buffer;
using rlx::test::Formula;
using rlx::test::formula;

namespace {

constexpr int64_t B = 2, S = 7, D = 64, H = 4, KV = 2, HD = 16, F = 96;

// The same table as tests/fixtures/make_llama.py (x @ W layout).
const Formula kWeights[] = {
    {"attn_norm", {D}, 0.1, 0.13, 0.5, 1},   {"wq", {D, H* HD}, 0.08, 0.37, 0.1, 0},
    {"wk", {D, KV* HD}, 0.08, 0.71, 0.2, 0}, {"wv", {D, KV* HD}, 0.08, 0.53, 0.3, 0},
    {"wo", {H * HD, D}, 0.08, 0.29, 0.4, 0}, {"ffn_norm", {D}, 0.1, 0.17, 0.6, 1},
    {"up", {D, F}, 0.08, 0.41, 0.7, 0},      {"gate", {D, F}, 0.08, 0.23, 0.8, 0},
    {"down", {F, D}, 0.06, 0.31, 0.9, 0},
};

/// cos or sin of position s times 10000^(-2p/HD), [S, HD/2] in f32 (as the script rounds them).
Buffer rope_table(bool sine, int64_t seq = S) {
  Buffer b(Shape({seq, HD / 2}, DType::F32));
  for (int64_t s = 0; s < seq; ++s)
    for (int64_t p = 0; p < HD / 2; ++p) {
      double angle = double(s) * std::pow(10000.0, -double(2 * p) / double(HD));
      b.set_f64(s * HD / 2 + p, double(float(sine ? std::sin(angle) : std::cos(angle))));
    }
  return b;
}

interp::Feed llama_feed() {
  interp::Feed feed;
  for (const Formula& f : kWeights) feed[f.name] = formula(f);
  feed["x"] = formula({"x", {B, S, D}, 1.0, 0.11, 1.3, 0});
  feed["cos"] = rope_table(false);
  feed["sin"] = rope_table(true);
  return feed;
}

/// One Llama layer; `seq` is the sequence dim of x, cos and sin (static 7 or ?seq).
HirModule llama_hir(FusionPolicy policy, Dim seq = Dim(S)) {
  HirModule h("llama_layer", policy);
  auto x = h.input("x", Shape({B, seq, D}, DType::F32));
  std::map<std::string, HirNodeId> p;
  for (const Formula& f : kWeights) p[f.name] = h.param(f.name, Shape::of(f.dims, DType::F32));
  LlamaWeights w{p["attn_norm"],
                 p["wq"],
                 p["wk"],
                 p["wv"],
                 p["wo"],
                 p["ffn_norm"],
                 p["up"],
                 p["gate"],
                 p["down"],
                 h.input("cos", Shape({seq, HD / 2}, DType::F32)),
                 h.input("sin", Shape({seq, HD / 2}, DType::F32)),
                 std::nullopt};
  h.set_outputs({h.llama_decoder_block(x, w, H, HD, KV, 1e-5f)});
  return h;
}

/// g's leaves in graph order, looked up by name.
std::vector<const Buffer*> leaves_of(const Graph& g, const interp::Feed& feed) {
  std::vector<const Buffer*> leaves;
  for (const Node& n : g.nodes())
    if (n.op.kind() == OpKind::Input || n.op.kind() == OpKind::Param)
      leaves.push_back(&feed.at(n.op.attrs<LeafAttrs>().name));
  return leaves;
}

double max_abs_diff(const Buffer& a, const Buffer& b) {
  double worst = 0;
  for (int64_t i = 0; i < a.numel(); ++i)
    worst = std::max(worst, std::fabs(a.get_f64(i) - b.get_f64(i)));
  return worst;
}

/// g (fed by name from feed) matches want within 1e-4 on the interpreter and the JIT.
void check_both_backends(const Graph& g, const interp::Feed& feed, const Buffer& want) {
  for (Backend backend : {Backend::Interp, Backend::Jit}) {
    INFO("backend " << enum_name(backend));
    std::vector<Buffer> got = compile(g, backend)->run(leaves_of(g, feed));
    REQUIRE(got[0].shape() == want.shape());
    double err = max_abs_diff(got[0], want);
    INFO("max |rlx - torch| = " << err);
    CHECK(err < 1e-4);
  }
}

Buffer expected() {
  return io::load_npy(std::string(RLX_SOURCE_DIR) + "/tests/fixtures/llama/expected.npy");
}

} // namespace

TEST_CASE("hir: a llama decoder block with grouped-query attention matches Hugging Face's layer "
          "computed in PyTorch, on both backends and after the pipeline") {
  interp::Feed feed = llama_feed();
  for (FusionPolicy policy : {FusionPolicy::Fusable, FusionPolicy::Direct}) {
    HirModule h = llama_hir(policy);
    CHECK(h.to_string().find("llama_decoder_block(h0, h1, h2, h3, h4, h5, h6, h7, h8, h9, h10, "
                             "h11, h=4, kv=2, d=16, eps=1e-05, mask=Causal) : [2, 7, 64] f32") !=
          std::string::npos);
    Graph g = Graph::from_hir(h);
    verify(g);
    check_both_backends(g, feed, expected());
    passes::compile_pipeline(g);
    check_both_backends(g, feed, expected());
  }
}

TEST_CASE("hir: a llama block with a dynamic sequence length binds and matches at the fixture's "
          "length") {
  Graph g = Graph::from_hir(llama_hir(FusionPolicy::Fusable, Dim::dynamic("seq")));
  Graph bound = g.bind(DimBinding::batch_seq(B, S));
  check_both_backends(bound, llama_feed(), expected());
}

TEST_CASE("hir: a llama block refuses head counts that do not group and mask operands its mask "
          "kind does not read, naming the caller's line") {
  HirModule h("bad");
  auto x = h.input("x", Shape({B, S, D}, DType::F32));
  auto n = h.param("n", Shape({D}, DType::F32));
  auto m = h.param("m", Shape({D, D}, DType::F32));
  auto cs = h.input("cs", Shape({S, HD / 2}, DType::F32));
  LlamaWeights w{n, m, m, m, m, n, m, m, m, cs, cs, std::nullopt};
  CHECK_THROWS_WITH_AS(h.llama_decoder_block(x, w, 4, 16, 3, 1e-5f),
                       doctest::Contains("num_heads 4 must be a positive multiple of "
                                         "num_kv_heads 3 (at "),
                       Error);
  w.mask = x;
  CHECK_THROWS_WITH_AS(h.llama_decoder_block(x, w, 4, 16, 4, 1e-5f),
                       doctest::Contains("mask kind Causal makes its own mask, but a mask operand "
                                         "was given (at "),
                       Error);
  AttentionBlockOptions custom;
  custom.mask_kind = MaskKind::custom();
  CHECK_THROWS_WITH_AS(h.attention_block(x, m, m, 4, 16, custom),
                       doctest::Contains("attention_block: mask kind Custom needs a mask operand"),
                       Error);
  // A wrong weight shape is found by the MIR builders as the block is added.
  w.mask.reset();
  w.wq = n;
  CHECK_THROWS_WITH_AS(h.llama_decoder_block(x, w, 4, 16, 4, 1e-5f),
                       doctest::Contains("test_hir_models.cpp:"), Error);
}

TEST_CASE("hir: an attention block with biases and rope lowers to the projection, three narrows, "
          "two ropes, attention and the output projection") {
  constexpr int64_t heads = 2, hd = 8, width = heads * hd;
  auto shape = [](std::vector<int64_t> dims) { return Shape::of(dims, DType::F32); };
  HirModule h("attn", FusionPolicy::Fusable);
  auto x = h.input("x", shape({B, S, width}));
  auto qkv_w = h.param("qkv_w", shape({width, 3 * width}));
  auto out_w = h.param("out_w", shape({width, width}));
  auto qkv_b = h.param("qkv_b", shape({3 * width}));
  auto out_b = h.param("out_b", shape({width}));
  auto cos = h.input("cos", shape({S, 3})), sin = h.input("sin", shape({S, 3}));
  AttentionBlockOptions o;
  o.qkv_bias = qkv_b;
  o.out_bias = out_b;
  o.mask_kind = MaskKind::causal();
  o.rope = std::pair{cos, sin};
  o.n_rot = 6;
  h.set_outputs({h.attention_block(x, qkv_w, out_w, heads, hd, o)});
  Graph got = Graph::from_hir(h);

  Graph want("attn");
  auto wx = want.input("x", shape({B, S, width}));
  auto wqkv_w = want.param("qkv_w", shape({width, 3 * width}));
  auto wout_w = want.param("out_w", shape({width, width}));
  auto wqkv_b = want.param("qkv_b", shape({3 * width}));
  auto wout_b = want.param("out_b", shape({width}));
  auto wcos = want.input("cos", shape({S, 3})), wsin = want.input("sin", shape({S, 3}));
  auto qkv = want.linear_bias(wx, wqkv_w, wqkv_b);
  auto q = want.narrow_(qkv, 2, 0, width), k = want.narrow_(qkv, 2, width, width);
  auto v = want.narrow_(qkv, 2, 2 * width, width);
  q = want.rope_n(q, wcos, wsin, hd, 6);
  k = want.rope_n(k, wcos, wsin, hd, 6);
  auto ctx = want.attention_kind(q, k, v, heads, hd, MaskKind::causal(), shape({B, S, width}));
  want.set_outputs({want.linear_bias(ctx, wout_w, wout_b)});
  CHECK(to_text(got) == to_text(want));

  // And it computes: compare the two on random data through the interpreter.
  interp::Feed feed;
  uint64_t seed = 1;
  for (const Node& n : want.nodes()) {
    if (n.op.kind() != OpKind::Input && n.op.kind() != OpKind::Param) continue;
    Buffer b(n.shape);
    for (int64_t i = 0; i < b.numel(); ++i) b.set_f64(i, std::sin(double(seed++) * 0.7));
    feed[n.op.attrs<LeafAttrs>().name] = b;
  }
  Buffer a = compile(got, Backend::Jit)->run(leaves_of(got, feed))[0];
  Buffer b = interp::run(want, {{"x", feed["x"]}, {"cos", feed["cos"]}, {"sin", feed["sin"]}},
                         {{"qkv_w", feed["qkv_w"]},
                          {"out_w", feed["out_w"]},
                          {"qkv_b", feed["qkv_b"]},
                          {"out_b", feed["out_b"]}})[0];
  CHECK(max_abs_diff(a, b) < 1e-5);
}
