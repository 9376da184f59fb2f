// tests/backend_cases_nn.cpp -- the backends suite's contractions, norms, attention, rope,
// convolutions and pooling, state-space scans and recurrent cells.
#include "support/backend_cases.hpp"

#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace rlx::test::backend_cases {

// ---- Contractions

std::vector<Case> matmul_cases() {
  const std::vector<std::pair<Dims, Dims>> mm = {{{7}, {7}},
                                                 {{7}, {7, 5}},
                                                 {{5, 7}, {7}},
                                                 {{1, 1}, {1, 1}},
                                                 {{13, 7}, {7, 13}},
                                                 {{3, 1000}, {1000, 3}},
                                                 {{2, 3, 4}, {4, 5}},
                                                 {{2, 1, 3, 4}, {5, 4, 6}},
                                                 {{4}, {2, 4, 3}},
                                                 {{1, 13}, {13, 1}},
                                                 {{2, 3, 4}, {2, 4, 1}},
                                                 {{9, 9}, {9, 9}},
                                                 {{64, 33}, {33, 17}}};
  std::vector<Case> cases;
  for (DType t : {F32, F64, I32, I64})
    add_case(cases, "matmul " + dt(t), [&](Builder& b) {
      FillSpec f =
          ir::is_float(t) ? FillSpec{Fill::Uniform, -1, 1} : FillSpec{Fill::Integers, -5, 5};
      for (const auto& [l, r] : mm) b.out(b.op(Op(OpKind::MatMul), {b.in(l, t, f), b.in(r, t, f)}));
      NodeId sq = b.in({7, 7}, t, f);
      b.out(b.op(Op(OpKind::MatMul), {sq, sq})); // the same buffer on both sides
    });
  for (DType t : {F32, F64}) {
    add_case(cases, "fused_matmul_bias_act " + dt(t), [&](Builder& b) {
      std::vector<std::optional<ir::Activation>> acts{std::nullopt};
      for (OpKind k : activation_kinds()) acts.push_back(ir::as_activation(k));
      for (const auto& act : acts) {
        NodeId x = b.in({5, 7}, t, {Fill::Uniform, -1, 1}),
               w = b.in({7, 3}, t, {Fill::Uniform, -1, 1});
        b.out(
            b.op(Op(OpKind::FusedMatMulBiasAct, ir::FusedMatMulAttrs{act}), {x, w, b.in({3}, t)}));
      }
      b.out(b.op(Op(OpKind::FusedMatMulBiasAct, ir::FusedMatMulAttrs{ir::Activation::Gelu}),
                 {b.in({2, 5, 7}, t, {Fill::Uniform, -1, 1}),
                  b.in({7, 3}, t, {Fill::Uniform, -1, 1}), b.in({5, 3}, t)}));
    });
    add_case(cases, "fused_swiglu " + dt(t), [&](Builder& b) {
      for (bool gate_first : {false, true}) {
        b.out(b.op(Op(OpKind::FusedSwiGLU, ir::SwiGluAttrs{gate_first}), {b.in({2, 3, 8}, t)}));
        b.out(b.op(Op(OpKind::FusedSwiGLU, ir::SwiGluAttrs{gate_first}), {b.in({5, 6}, t)}));
      }
      DType other = t == DType::F64 ? DType::F32 : DType::F64;
      b.out(b.op(Op(OpKind::FusedSwiGLU, ir::SwiGluAttrs{true, other}), {b.in({3, 4}, t)}));
    });
  }
  return cases;
}

// ---- Norms, attention, positions, convolutions and pooling

std::vector<Case> nn_cases() {
  std::vector<Case> cases;
  for (DType t : {F32, F64}) {
    std::string s = " " + dt(t);
    FillSpec pos{Fill::Uniform, 0.1, 2};
    add_case(cases, "norms" + s, [&](Builder& b) {
      b.out(b.g.layer_norm(b.in({2, 3, 8}, t), b.in({8}, t), b.in({8}, t), -1, 1e-5f,
                           ir::Shape::of(Dims{2, 3, 8}, t)));
      b.out(b.op(Op(OpKind::LayerNorm, ir::NormAttrs{1, 1e-3f}),
                 {b.in({2, 6, 3}, t), b.in({6}, t), b.in({6}, t)}));
      b.out(b.op(Op(OpKind::RmsNorm, ir::NormAttrs{-1, 1e-6f}),
                 {b.in({4, 13}, t), b.in({13}, t), b.in({13}, t)}));
      // Rows around and well above the vector width (the JIT's row kernels), and values far
      // from zero (mean 100, spread 1: the centering must not lose precision).
      for (int64_t len : {17, 768})
        b.out(b.op(Op(OpKind::LayerNorm, ir::NormAttrs{-1, 1e-5f}),
                   {b.in({3, len}, t, {Fill::Uniform, 99, 101}), b.in({len}, t), b.in({len}, t)}));
      b.out(b.op(Op(OpKind::RmsNorm, ir::NormAttrs{1, 1e-5f}),
                 {b.in({2, 1000}, t), b.in({1000}, t), b.in({1000}, t)}));
      // 768: the JIT keeps each row's sums in stack scratch; 5000: too long, it recomputes them.
      for (int64_t len : {768, 5000})
        for (OpKind fk : {OpKind::FusedResidualLN, OpKind::FusedResidualRmsNorm})
          b.out(b.op(Op(fk, ir::FusedResidualNormAttrs{true, 1e-5f}),
                     {b.in({4, len}, t, {Fill::Uniform, 49, 51}), b.in({4, len}, t), b.in({len}, t),
                      b.in({len}, t), b.in({len}, t)}));
      // x computed by the row kernel's prologue, then kept with the residual in the scratch.
      for (OpKind fk : {OpKind::FusedResidualLN, OpKind::FusedResidualRmsNorm})
        b.out(b.op(Op(fk, ir::FusedResidualNormAttrs{false, 1e-5f}),
                   {b.op(Op(OpKind::Tanh), {b.in({3, 40}, t)}), b.in({3, 40}, t), b.in({40}, t),
                    b.in({40}, t)}));
      b.out(b.g.layer_norm2d(b.in({2, 4, 3, 3}, t), b.in({4}, t), b.in({4}, t), 1e-6f));
      b.out(b.g.group_norm(b.in({2, 6, 2, 3}, t), b.in({6}, t), b.in({6}, t), 3, 1e-5f));
      b.out(b.g.batch_norm_inference(b.in({2, 3, 4}, t), b.in({3}, t), b.in({3}, t), b.in({3}, t),
                                     b.in({3}, t, pos), 1e-5f));
      NodeId x = b.in({2, 3, 8}, t), r = b.in({2, 3, 8}, t);
      b.out(b.op(Op(OpKind::FusedResidualLN, ir::FusedResidualNormAttrs{false, 1e-5f}),
                 {x, r, b.in({8}, t), b.in({8}, t)}));
      b.out(b.op(Op(OpKind::FusedResidualLN, ir::FusedResidualNormAttrs{true, 1e-6f}),
                 {x, b.in({3, 8}, t), b.in({8}, t), b.in({8}, t), b.in({8}, t)}));
      b.out(b.op(Op(OpKind::FusedResidualRmsNorm, ir::FusedResidualNormAttrs{true, 1e-5f}),
                 {x, r, b.in({8}, t), b.in({8}, t), b.in({8}, t)}));
    });
    add_case(cases, "attention" + s, [&](Builder& b) {
      using ir::AttentionAttrs, ir::MaskType;
      auto att = [&](AttentionAttrs a, Dims q, Dims kv, std::vector<NodeId> extra) {
        std::vector<NodeId> ins{b.in(q, t), b.in(kv, t), b.in(kv, t)};
        ins.insert(ins.end(), extra.begin(), extra.end());
        b.out(b.op(Op(OpKind::Attention, a), ins));
      };
      att(AttentionAttrs{2, 4, MaskType::None}, {2, 3, 8}, {2, 5, 8}, {});
      att(AttentionAttrs{2, 4, MaskType::Causal}, {1, 3, 8}, {1, 5, 8}, {});
      att(AttentionAttrs{1, 4, MaskType::SlidingWindow, 2}, {2, 6, 4}, {2, 6, 4}, {});
      att(AttentionAttrs{2, 2, MaskType::Custom}, {2, 3, 4}, {2, 4, 4},
          {b.values({2, 4}, t, {1, 0, 1, 1, 0, 0, 0, 0})}); // the second batch: all keys masked
      att(AttentionAttrs{2, 3, MaskType::Bias, 0, 0.7f, 1.5f}, {1, 3, 6}, {1, 4, 6},
          {b.in({1, 2, 3, 4}, t)});
      att(AttentionAttrs{3, 5, MaskType::None, 0, std::nullopt, 30.0f}, {1, 7, 15}, {1, 9, 15}, {});
    });
    add_case(cases, "rope" + s, [&](Builder& b) {
      b.out(b.g.rope(b.in({2, 5, 8}, t), b.in({5, 2}, t), b.in({5, 2}, t), 4));
      b.out(b.g.rope_n_styled(b.in({1, 4, 12}, t), b.in({4, 2}, t), b.in({4, 2}, t), 6, 4,
                              ir::RopeStyle::GptJ));
      b.out(b.g.rope_n(b.in({1, 3, 12}, t), b.in({3, 1}, t), b.in({3, 1}, t), 6, 2));
      b.out(b.g.axial_rope2d(b.in({2, 6, 16}, t), 3, 2, 8, 2, 10000.0f, 1));
      b.out(b.g.axial_rope2d(b.in({1, 8, 8}, t), 2, 2, 8, 1, 100.0f, 2));
    });
    add_case(cases, "convolutions and pooling" + s, [&](Builder& b) {
      b.out(b.g.conv2d(b.in({1, 3, 7, 9}, t), b.in({4, 3, 3, 3}, t), {3, 3}, {1, 1}, {1, 1}, {1, 1},
                       1));
      b.out(b.g.conv2d(b.in({2, 4, 9, 7}, t), b.in({6, 2, 3, 2}, t), {3, 2}, {2, 1}, {1, 0}, {1, 2},
                       2));
      b.out(b.g.conv2d(b.in({1, 4, 5, 5}, t), b.in({4, 1, 3, 3}, t), {3, 3}, {1, 1}, {1, 1}, {1, 1},
                       4));
      b.out(b.g.im2col(b.in({1, 2, 4, 5}, t), {2, 3}, {1, 2}, {1, 0}, {1, 1}));
      b.out(b.g.conv_transpose2d(b.in({1, 4, 3, 5}, t), b.in({4, 3, 3, 2}, t), {3, 2}, {2, 1},
                                 {1, 0}, {1, 2}, {1, 0}, 2));
      b.out(b.g.conv3d(b.in({1, 2, 4, 3, 3}, t), b.in({4, 1, 2, 2, 2}, t), {1, 2, 1}, {1, 0, 1},
                       {1, 1, 2}, 2));
      b.out(b.g.conv_transpose3d(b.in({1, 2, 2, 3, 2}, t), b.in({2, 2, 2, 2, 2}, t), {2, 1, 1},
                                 {0, 1, 0}, {1, 1, 1}, {1, 0, 0}, 1));
      b.out(b.g.conv_transpose1d(b.in({2, 3, 5}, t), b.in({3, 2, 3}, t), 3, 2, 1, 1, 1, 1));
      b.out(b.g.max_pool2d(b.in({1, 2, 5, 6}, t), {3, 2}, {2, 2}, {1, 1}));
      b.out(b.g.max_pool2d(b.in({2, 1, 7, 7}, t, {Fill::Integers, -2, 2}), {2, 2}, {1, 1}, {0, 0}));
      b.out(b.g.avg_pool2d(b.in({1, 2, 5, 6}, t), {3, 3}, {2, 1}, {1, 1}));
    });
  }
  return cases;
}

// ---- State-space scans: selective_scan (the JIT's own kernel in f32, the interpreter's in f64),
// mamba2 and gated_delta_net (the interpreter's kernels on the JIT).
std::vector<Case> ssm_cases() {
  std::vector<Case> cases;
  for (DType t : {F32, F64})
    add_case(cases, "selective_scan, mamba2 and gated_delta_net " + dt(t), [&](Builder& b) {
      auto in = [&](Dims d, double lo, double hi) { return b.in(d, t, {Fill::Uniform, lo, hi}); };
      for (Dims d : {Dims{2, 9, 11, 4}, Dims{1, 1, 8, 16}, Dims{1, 40, 3, 2}}) {
        NodeId x = in({d[0], d[1], d[2]}, -2, 2), dl = in({d[0], d[1], d[2]}, 0.01, 1.5);
        NodeId a = in({d[2], d[3]}, -3, -0.05);
        NodeId bb = in({d[0], d[1], d[3]}, -1, 1), c = in({d[0], d[1], d[3]}, -1, 1);
        b.out(b.op(Op(OpKind::SelectiveScan, ir::SelectiveScanAttrs{d[3]}), {x, dl, a, bb, c}));
      }
      NodeId x = in({2, 5, 4, 3}, -2, 2), dt4 = in({2, 5, 4}, 0.01, 1), a4 = in({4}, -2, -0.1);
      NodeId bg = in({2, 5, 2, 6}, -1, 1), cg = in({2, 5, 2, 6}, -1, 1);
      b.out(b.op(Op(OpKind::Mamba2, ir::Mamba2Attrs{3, 6}), {x, dt4, a4, bg, cg}));
      NodeId bs = in({2, 5, 6}, -1, 1), cs = in({2, 5, 6}, -1, 1);
      b.out(b.op(Op(OpKind::Mamba2, ir::Mamba2Attrs{3, 6}), {x, dt4, a4, bs, cs}));
      NodeId q = in({2, 6, 3, 4}, -0.5, 0.5), k = in({2, 6, 3, 4}, -0.5, 0.5);
      NodeId v = in({2, 6, 3, 4}, -1, 1), g = in({2, 6, 3}, -1, 0), beta = in({2, 6, 3}, 0, 1);
      b.out(b.op(Op(OpKind::GatedDeltaNet, ir::GatedDeltaNetAttrs{4, false}), {q, k, v, g, beta}));
      b.out(b.op(Op(OpKind::GatedDeltaNet, ir::GatedDeltaNetAttrs{4, true}),
                 {q, k, v, g, beta, in({2, 3, 4, 4}, -1, 1)}));
    });
  return cases;
}

// ---- Recurrent cells: lstm, gru, rnn (the JIT's step: one GEMM for the input projections,
// per step a GEMM with W_hh^T and a fused gate loop), random weights in the packed layout.
std::vector<Case> recurrent_cases() {
  std::vector<Case> cases;
  struct Spec {
    OpKind kind;
    int64_t hidden, layers;
    bool bidir, batch_first, relu, init, carry;
    int64_t batch, seq, input;
  };
  const Spec specs[] = {
      {OpKind::Lstm, 32, 1, false, true, false, false, false, 3, 7, 16},
      {OpKind::Lstm, 5, 2, true, true, false, true, true, 2, 4, 3},
      {OpKind::Lstm, 9, 1, false, false, false, true, true, 4, 3, 6},
      {OpKind::Gru, 17, 2, true, true, false, true, true, 3, 5, 4},
      {OpKind::Gru, 8, 1, false, false, false, false, false, 1, 6, 8},
      {OpKind::Rnn, 12, 2, false, true, false, false, true, 2, 5, 3},
      {OpKind::Rnn, 6, 1, true, false, true, true, false, 3, 4, 5},
  };
  for (DType t : {F32, F64})
    for (const Spec& p : specs) {
      std::string name = std::string(ir::op_name(p.kind)) + " " + dt(t) + " hidden " +
                         std::to_string(p.hidden) + " layers " + std::to_string(p.layers) +
                         (p.bidir ? " bidirectional" : "") + (p.batch_first ? "" : " seq first") +
                         (p.relu ? " relu" : "") + (p.init ? " initial state" : "") +
                         (p.carry ? " final states" : "");
      add_case(cases, name, [&](Builder& b) {
        const int64_t d = p.bidir ? 2 : 1, g = p.kind == OpKind::Lstm  ? 4
                                               : p.kind == OpKind::Gru ? 3
                                                                       : 1;
        const int64_t gh = g * p.hidden;
        int64_t n_ih = 0;
        for (int64_t l = 0; l < p.layers; ++l) n_ih += d * gh * (l == 0 ? p.input : d * p.hidden);
        const ir::RecurrentAttrs a{p.hidden, p.layers, p.bidir, p.batch_first, p.relu, p.carry};
        FillSpec w{Fill::Uniform, -0.4, 0.4};
        std::vector<NodeId> ins{
            b.in(p.batch_first ? Dims{p.batch, p.seq, p.input} : Dims{p.seq, p.batch, p.input}, t,
                 {Fill::Uniform, -1, 1}),
            b.in({n_ih}, t, w), b.in({p.layers * d * gh * p.hidden}, t, w),
            b.in({p.layers * d * gh}, t, w)};
        if (p.kind == OpKind::Gru) ins.push_back(b.in({p.layers * d * gh}, t, w));
        for (int64_t k = 0; p.init && k < (p.kind == OpKind::Lstm ? 2 : 1); ++k)
          ins.push_back(b.in({p.layers * d, p.batch, p.hidden}, t, {Fill::Uniform, -1, 1}));
        b.out(b.op(Op(p.kind, a), ins));
      });
    }
  return cases;
}

} // namespace rlx::test::backend_cases
