// tests/test_decompose.cpp -- every composite op's decomposition computes what its direct kernel
// computes, and leaves only primitive ops behind.
#include "support/check_error.hpp"
#include "support/random.hpp"

#include <rlx/all.hpp>
#include <rlx/passes.hpp>

#include <cmath>
#include <set>

using namespace rlx;
using namespace rlx::ir;

namespace {

struct Case {
  const char* what;
  Op op;
  std::vector<Shape> inputs;
  double lo = -2, hi = 2;
};

Shape f32(std::vector<int64_t> d) { return Shape::of(d, DType::F32); }
Shape f64(std::vector<int64_t> d) { return Shape::of(d, DType::F64); }

std::vector<Case> cases() {
  return {
      {"softmax, last axis", Op(OpKind::Softmax, AxisAttrs{-1}), {f64({3, 5})}},
      {"softmax, axis 0", Op(OpKind::Softmax, AxisAttrs{0}), {f64({4, 3})}},
      {"layer_norm",
       Op(OpKind::LayerNorm, NormAttrs{-1, 1e-5f}),
       {f64({2, 3, 8}), f64({8}), f64({8})}},
      {"layer_norm, middle axis",
       Op(OpKind::LayerNorm, NormAttrs{1, 1e-3f}),
       {f64({2, 6, 3}), f64({6}), f64({6})}},
      {"rms_norm", Op(OpKind::RmsNorm, NormAttrs{-1, 1e-6f}), {f64({4, 16}), f64({16}), f64({16})}},
      {"layer_norm2d",
       Op(OpKind::LayerNorm2d, EpsAttrs{1e-6f}),
       {f64({2, 4, 3, 3}), f64({4}), f64({4})}},
      {"group_norm",
       Op(OpKind::GroupNorm, GroupNormAttrs{2, 1e-5f}),
       {f64({2, 6, 2, 3}), f64({6}), f64({6})}},
      {"batch_norm_inference",
       Op(OpKind::BatchNormInference, EpsAttrs{1e-5f}),
       {f64({2, 3, 4}), f64({3}), f64({3}), f64({3}), f64({3})},
       0.1,
       2},
      {"fused_residual_ln with bias",
       Op(OpKind::FusedResidualLN, FusedResidualNormAttrs{true, 1e-5f}),
       {f64({2, 3, 8}), f64({2, 3, 8}), f64({8}), f64({8}), f64({8})}},
      {"fused_residual_rms_norm",
       Op(OpKind::FusedResidualRmsNorm, FusedResidualNormAttrs{false, 1e-5f}),
       {f64({3, 8}), f64({3, 8}), f64({8}), f64({8})}},
      {"lstm, two layers, bidirectional, from (h0, c0), with final states",
       Op(OpKind::Lstm, RecurrentAttrs{3, 2, true, true, false, true}),
       {f64({2, 4, 5}), f64({264}), f64({144}), f64({48}), f64({4, 2, 3}), f64({4, 2, 3})}},
      {"lstm, seq first",
       Op(OpKind::Lstm, RecurrentAttrs{4, 1, false, false, false, false}),
       {f64({5, 2, 3}), f64({48}), f64({64}), f64({16})}},
      {"gru, two layers, from h0, with its final state",
       Op(OpKind::Gru, RecurrentAttrs{2, 2, false, true, false, true}),
       {f64({3, 4, 2}), f64({24}), f64({24}), f64({12}), f64({12}), f64({2, 3, 2})}},
      {"rnn relu, bidirectional",
       Op(OpKind::Rnn, RecurrentAttrs{3, 1, true, true, true, false}),
       {f64({2, 4, 2}), f64({12}), f64({18}), f64({6})}},
      {"rnn tanh, two layers, seq first, from zeros, with its final state",
       Op(OpKind::Rnn, RecurrentAttrs{2, 2, false, false, false, true}),
       {f64({5, 3, 2}), f64({8}), f64({8}), f64({4})}},
      {"lstm, bidirectional, from zeros, with final states",
       Op(OpKind::Lstm, RecurrentAttrs{2, 1, true, true, false, true}),
       {f64({1, 6, 3}), f64({48}), f64({32}), f64({16})}},
      {"lstm, an empty sequence, two layers, bidirectional, from (h0, c0), with final states",
       Op(OpKind::Lstm, RecurrentAttrs{3, 2, true, true, false, true}),
       {f64({2, 0, 5}), f64({264}), f64({144}), f64({48}), f64({4, 2, 3}), f64({4, 2, 3})}},
      {"gru, an empty sequence, seq first, from zeros, with its final state",
       Op(OpKind::Gru, RecurrentAttrs{2, 1, false, false, false, true}),
       {f64({0, 3, 2}), f64({12}), f64({12}), f64({6}), f64({6})}},
      {"fused_matmul_bias_act gelu",
       Op(OpKind::FusedMatMulBiasAct, FusedMatMulAttrs{Activation::Gelu}),
       {f64({2, 3, 4}), f64({4, 5}), f64({5})}},
      {"fused_matmul_bias_act none",
       Op(OpKind::FusedMatMulBiasAct),
       {f64({3, 4}), f64({4, 2}), f64({2})}},
      {"fused_swiglu", Op(OpKind::FusedSwiGLU), {f64({2, 3, 8})}},
      {"fused_swiglu gate first", Op(OpKind::FusedSwiGLU, SwiGluAttrs{true}), {f64({5, 6})}},
      {"fused_swiglu cast to f32",
       Op(OpKind::FusedSwiGLU, SwiGluAttrs{false, DType::F32}),
       {f64({3, 4})}},
      {"attention, no mask",
       Op(OpKind::Attention, AttentionAttrs{2, 4, MaskType::None}),
       {f64({2, 3, 8}), f64({2, 5, 8}), f64({2, 5, 8})}},
      {"attention, causal decode",
       Op(OpKind::Attention, AttentionAttrs{2, 4, MaskType::Causal}),
       {f64({1, 3, 8}), f64({1, 5, 8}), f64({1, 5, 8})}},
      {"attention, sliding window",
       Op(OpKind::Attention, AttentionAttrs{1, 4, MaskType::SlidingWindow, 2}),
       {f64({2, 6, 4}), f64({2, 6, 4}), f64({2, 6, 4})}},
      {"attention, custom mask",
       Op(OpKind::Attention, AttentionAttrs{2, 2, MaskType::Custom}),
       {f64({2, 3, 4}), f64({2, 4, 4}), f64({2, 4, 4}), f64({2, 4})},
       0,
       1},
      {"attention, bias, scale and softcap",
       Op(OpKind::Attention, AttentionAttrs{2, 2, MaskType::Bias, 0, 0.7f, 1.5f}),
       {f64({1, 3, 4}), f64({1, 3, 4}), f64({1, 3, 4}), f64({1, 2, 3, 3})}},
      {"rope neox",
       Op(OpKind::Rope, RopeAttrs{4, 4, RopeStyle::NeoX}),
       {f64({2, 3, 8}), f64({3, 2}), f64({3, 2})}},
      {"rope gptj partial",
       Op(OpKind::Rope, RopeAttrs{6, 4, RopeStyle::GptJ}),
       {f64({1, 5, 12}), f64({5, 2}), f64({5, 2})}},
      {"rope f32",
       Op(OpKind::Rope, RopeAttrs{4, 0, RopeStyle::NeoX}),
       {f32({3, 4}), f32({3, 2}), f32({3, 2})}},
      {"conv_transpose2d, grouped, strided, dilated",
       Op(OpKind::ConvTranspose2d, ConvTranspose2dAttrs{{2, 2}, {2, 1}, {1, 0}, {1, 2}, {1, 0}, 2}),
       {f64({2, 4, 3, 3}), f64({4, 3, 2, 2})}},
      {"conv_transpose3d",
       Op(OpKind::ConvTranspose3d,
          ConvTranspose3dAttrs{{1, 2, 1}, {0, 1, 0}, {1, 1, 1}, {0, 1, 0}, 1}),
       {f64({1, 2, 2, 3, 2}), f64({2, 2, 2, 1, 2})}},
      {"conv_transpose1d",
       Op(OpKind::ConvTranspose1d, ConvTranspose1dAttrs{3, 2, 1, 1, 1, 1}),
       {f64({2, 2, 5}), f64({2, 3, 3})}},
      {"selective_scan",
       Op(OpKind::SelectiveScan, SelectiveScanAttrs{4}),
       {f64({2, 5, 3}), f64({2, 5, 3}), f64({3, 4}), f64({2, 5, 4}), f64({2, 5, 4})},
       -1,
       1},
      {"mamba2, two groups of two heads",
       Op(OpKind::Mamba2, Mamba2Attrs{2, 3}),
       {f64({2, 4, 4, 2}), f64({2, 4, 4}), f64({4}), f64({2, 4, 2, 3}), f64({2, 4, 2, 3})},
       -1,
       1},
      {"mamba2, b and c shared by the heads",
       Op(OpKind::Mamba2, Mamba2Attrs{3, 2}),
       {f64({1, 3, 2, 3}), f64({1, 3, 2}), f64({2}), f64({1, 3, 2}), f64({1, 3, 2})},
       -1,
       1},
      {"gated_delta_net",
       Op(OpKind::GatedDeltaNet, GatedDeltaNetAttrs{3, false}),
       {f64({2, 4, 2, 3}), f64({2, 4, 2, 3}), f64({2, 4, 2, 3}), f64({2, 4, 2}), f64({2, 4, 2})},
       -1,
       1},
      {"gated_delta_net with a carried state",
       Op(OpKind::GatedDeltaNet, GatedDeltaNetAttrs{3, true}),
       {f64({1, 4, 2, 3}), f64({1, 4, 2, 3}), f64({1, 4, 2, 3}), f64({1, 4, 2}), f64({1, 4, 2}),
        f64({1, 2, 3, 3})},
       -1,
       1},
      {"selective_scan, an empty sequence",
       Op(OpKind::SelectiveScan, SelectiveScanAttrs{4}),
       {f64({2, 0, 3}), f64({2, 0, 3}), f64({3, 4}), f64({2, 0, 4}), f64({2, 0, 4})},
       -1,
       1},
      {"mamba2, one step",
       Op(OpKind::Mamba2, Mamba2Attrs{2, 3}),
       {f64({2, 1, 4, 2}), f64({2, 1, 4}), f64({4}), f64({2, 1, 2, 3}), f64({2, 1, 2, 3})},
       -1,
       1},
      {"gated_delta_net, an empty sequence, with a carried state",
       Op(OpKind::GatedDeltaNet, GatedDeltaNetAttrs{3, true}),
       {f64({1, 0, 2, 3}), f64({1, 0, 2, 3}), f64({1, 0, 2, 3}), f64({1, 0, 2}), f64({1, 0, 2}),
        f64({1, 2, 3, 3})},
       -1,
       1},
  };
}

} // namespace

TEST_CASE("decompose: every composite op matches its direct kernel") {
  uint64_t seed = 1;
  for (const Case& c : cases()) {
    INFO("case: " << std::string(c.what) << " (seed " << seed << ")");
    Graph g("composite");
    std::vector<NodeId> ins;
    interp::Feed feed;
    for (std::size_t i = 0; i < c.inputs.size(); ++i) {
      std::string name = "in" + std::to_string(i);
      ins.push_back(g.input(name, c.inputs[i]));
      feed[name] = test::random_buffer(c.inputs[i], seed++, c.lo, c.hi);
    }
    auto out_shape = infer_shape(c.op, c.inputs);
    REQUIRE(out_shape.has_value());
    g.set_outputs({g.add_node(c.op, ins, *out_shape)});
    Graph d = g;
    CHECK(passes::decompose(d));
    verify(d);
    for (const Node& n : d.nodes()) {
      INFO("left in the decomposed graph: " << n.op.name());
      CHECK_FALSE(passes::has_decomposition(n.op.kind()));
    }
    auto want = interp::run(g, feed)[0].to_f64();
    auto got = interp::run(d, feed)[0].to_f64();
    REQUIRE(got.size() == want.size());
    double tol = c.inputs[0].dtype() == DType::F64 ? 1e-12 : 2e-6;
    for (std::size_t i = 0; i < got.size(); ++i) {
      INFO("index " << i << ": decomposed " << got[i] << ", kernel " << want[i]);
      CHECK(std::fabs(got[i] - want[i]) <= tol * (1 + std::fabs(want[i])));
    }
  }
}

TEST_CASE("decompose: the cases cover every kind ops.def marks composite, and only those") {
  std::set<OpKind> covered;
  for (const Case& c : cases()) {
    INFO(c.what);
    CHECK(has_trait(c.op.kind(), kComposite));
    covered.insert(c.op.kind());
  }
  for (std::size_t k = 0; k < kNumOps; ++k) {
    OpKind kind = static_cast<OpKind>(k);
    INFO(op_name(kind));
    CHECK(passes::has_decomposition(kind) == has_trait(kind, kComposite));
    if (has_trait(kind, kComposite)) CHECK(covered.count(kind) == 1);
  }
  CHECK_FALSE(passes::has_decomposition(OpKind::MatMul));
  CHECK_FALSE(passes::has_decomposition(OpKind::Add));
}

TEST_CASE("decompose: primitive graphs are left unchanged and reported so") {
  Graph g("prim");
  auto x = g.input("x", Shape({2, 3}, DType::F32));
  g.set_outputs({g.activation(Activation::Relu, x, Shape({2, 3}, DType::F32))});
  Graph d = g;
  CHECK_FALSE(passes::decompose(d));
  CHECK(d == g);
}
