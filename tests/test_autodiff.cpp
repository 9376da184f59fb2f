// tests/test_autodiff.cpp -- reverse and forward mode against central finite differences in f64
// through the interpreter, for every differentiable op kind, on random shapes; the rule tables'
// completeness; the transforms' graph contracts and errors; the JIT against the interpreter.
// Just over 1,000 lines: most of it is the one finite-difference case table (a row per op kind,
// which must stay together for the coverage check); the next cases go to a file of their own.
#include "support/check_error.hpp"
#include "support/random.hpp"

#include <rlx/all.hpp>
#include <rlx/autodiff.hpp>
#include <rlx/backward_ops.hpp>

#include <cmath>
#include <functional>
#include <random>
#include <set>

using namespace rlx;
using namespace rlx::ir;

namespace {

/// Sizes -1 and -2 in a case's shapes are drawn at random per seed (M in [1, 3], N in [2, 4]).
constexpr int64_t M = -1, N = -2;

struct Arg {
  std::vector<int64_t> dims;
  double lo = -2, hi = 2;
  DType dtype = DType::F64;
};
Arg F(std::vector<int64_t> d, double lo = -2, double hi = 2) { return {std::move(d), lo, hi}; }
/// Integer indices in [lo, hi] (not differentiated).
Arg I(std::vector<int64_t> d, double lo, double hi) { return {std::move(d), lo, hi, DType::I64}; }
Arg B(std::vector<int64_t> d) { return {std::move(d), 0, 1, DType::Bool}; }

using BuildFn = std::function<NodeId(Graph&, std::span<const NodeId>)>;

struct Case {
  std::string what;
  std::optional<Op> op; ///< one node of this op on the args, unless build is set
  std::vector<Arg> args;
  BuildFn build{};
  double h = 1e-6, tol = 1e-6;
  /// The op has no forward-mode rule (gaussian_splat_render): jvp must be an Unsupported error.
  bool reverse_only = false;
};

Case op_case(std::string what, Op op, std::vector<Arg> args) {
  return {std::move(what), std::move(op), std::move(args)};
}
Case graph_case(std::string what, std::vector<Arg> args, BuildFn build) {
  return {std::move(what), std::nullopt, std::move(args), std::move(build)};
}

Op un(OpKind k) { return Op(k); }
Op red(OpKind k, Ints axes, bool keep) { return Op(k, ReduceAttrs{std::move(axes), keep}); }

std::vector<Case> cases() {
  std::vector<Case> cs;
  // Element-wise unary ops, away from their kinks and outside their domains' edges.
  for (OpKind k :
       {OpKind::Relu, OpKind::Gelu,     OpKind::GeluApprox, OpKind::Silu,      OpKind::Sigmoid,
        OpKind::Tanh, OpKind::Exp,      OpKind::Neg,        OpKind::Abs,       OpKind::Sin,
        OpKind::Cos,  OpKind::Atan,     OpKind::Round,      OpKind::Floor,     OpKind::Ceil,
        OpKind::Sign, OpKind::Erf,      OpKind::Softplus,   OpKind::HardSwish, OpKind::HardSigmoid,
        OpKind::Mish, OpKind::Softsign, OpKind::LogSigmoid, OpKind::Expm1})
    cs.push_back(op_case(std::string(op_name(k)), un(k), {F({M, N}, -4, 4)}));
  for (OpKind k : {OpKind::Log, OpKind::Sqrt, OpKind::Rsqrt, OpKind::Recip})
    cs.push_back(op_case(std::string(op_name(k)), un(k), {F({M, N}, 0.3, 3)}));
  cs.push_back(op_case("tan", un(OpKind::Tan), {F({M, N}, -1.2, 1.2)}));
  cs.push_back(op_case("log1p", un(OpKind::Log1p), {F({M, N}, -0.7, 3)}));
  cs.push_back(op_case("leaky_relu", Op(OpKind::LeakyRelu, LeakyReluAttrs{0.2f}), {F({M, N})}));
  cs.push_back(op_case("elu", Op(OpKind::Elu, EluAttrs{0.7f}), {F({M, N})}));
  cs.push_back(op_case("clamp", Op(OpKind::Clamp, ClampAttrs{-0.5, 0.8}), {F({M, N})}));
  Case cast = graph_case("cast to f32 and back", {F({M, N}), F({N})},
                         [](Graph& g, std::span<const NodeId> a) {
                           return g.mul(g.cast(g.cast(a[0], DType::F32), DType::F64), a[1]);
                         });
  cast.h = 1e-2;
  cast.tol = 1e-5;
  cs.push_back(cast);
  // Binary ops with broadcasting on either side.
  for (OpKind k : {OpKind::Add, OpKind::Sub, OpKind::Mul, OpKind::Max, OpKind::Min})
    cs.push_back(op_case(std::string(op_name(k)) + ", broadcast", Op(k), {F({M, N}), F({N})}));
  cs.push_back(op_case("div, broadcast", Op(OpKind::Div), {F({3, 1, N}), F({M, N}, 0.5, 2)}));
  cs.push_back(op_case("pow", Op(OpKind::Pow), {F({M, N}, 0.5, 2), F({M, N}, -1.5, 1.5)}));
  cs.push_back(op_case("mod", Op(OpKind::Mod), {F({M, N}, -5, 5), F({N}, 0.7, 1.3)}));
  cs.push_back(op_case("where", Op(OpKind::Where), {B({M, N}), F({M, N}), F({N})}));
  // Reductions and scans.
  for (OpKind k : {OpKind::ReduceSum, OpKind::ReduceMean, OpKind::ReduceMax, OpKind::ReduceMin}) {
    cs.push_back(
        op_case(std::string(op_name(k)) + ", axes 0 and 2", red(k, {0, 2}, false), {F({M, 3, N})}));
    cs.push_back(
        op_case(std::string(op_name(k)) + ", last axis kept", red(k, {-1}, true), {F({M, N})}));
  }
  cs.push_back(op_case("reduce_prod", red(OpKind::ReduceProd, {1}, false), {F({M, N}, 0.5, 1.5)}));
  cs.push_back(op_case("cumsum", Op(OpKind::Cumsum, CumsumAttrs{1, false}), {F({M, N, 2})}));
  cs.push_back(
      op_case("cumsum, exclusive", Op(OpKind::Cumsum, CumsumAttrs{-1, true}), {F({M, N})}));
  cs.push_back(op_case("softmax", Op(OpKind::Softmax, AxisAttrs{-1}), {F({M, N})}));
  cs.push_back(op_case("softmax, axis 0", Op(OpKind::Softmax, AxisAttrs{0}), {F({N, M})}));
  // Data movement and indexing.
  cs.push_back(op_case("reshape", Op(OpKind::Reshape, ReshapeAttrs{{-1}}), {F({M, N})}));
  cs.push_back(
      op_case("transpose", Op(OpKind::Transpose, TransposeAttrs{{2, 0, 1}}), {F({M, N, 3})}));
  cs.push_back(op_case("narrow", Op(OpKind::Narrow, NarrowAttrs{1, 1, 2}), {F({M, 4})}));
  cs.push_back(op_case("slice, step 2", Op(OpKind::Slice, SliceAttrs{1, 1, 3, 2}), {F({M, 7})}));
  cs.push_back(op_case("slice, step -3", Op(OpKind::Slice, SliceAttrs{0, 6, 3, -3}), {F({7, N})}));
  cs.push_back(
      op_case("concat", Op(OpKind::Concat, ConcatAttrs{1}), {F({M, 2}), F({M, N}), F({M, 1})}));
  cs.push_back(op_case("expand", Op(OpKind::Expand, ExpandAttrs{{3, -1, 4}}), {F({M, 1})}));
  cs.push_back(op_case("reverse", Op(OpKind::Reverse, ReverseAttrs{{0, 1}}), {F({M, N})}));
  cs.push_back(op_case("pad, constant",
                       Op(OpKind::Pad, PadAttrs{{1, 0, 2, 1}, PadMode::Constant, 3.0}),
                       {F({M, N})}));
  cs.push_back(op_case(
      "pad, reflect", Op(OpKind::Pad, PadAttrs{{0, 0, 2, 3}, PadMode::Reflect, 0.0}), {F({M, 4})}));
  cs.push_back(op_case("pad, edge", Op(OpKind::Pad, PadAttrs{{2, 1, 0, 0}, PadMode::Edge, 0.0}),
                       {F({M, N})}));
  cs.push_back(
      op_case("gather, axis 0", Op(OpKind::Gather, GatherAttrs{0}), {F({5, N}), I({M, 3}, -5, 4)}));
  cs.push_back(
      op_case("gather, axis 1", Op(OpKind::Gather, GatherAttrs{1}), {F({M, 4, 2}), I({5}, -4, 3)}));
  cs.push_back(op_case("scatter_add, duplicates accumulate",
                       Op(OpKind::ScatterAdd, ScatterAddAttrs{0, 4}), {F({5, N}), I({5}, -4, 3)}));
  cs.push_back(op_case("scatter_add, axis 1", Op(OpKind::ScatterAdd, ScatterAddAttrs{1, 3}),
                       {F({M, 4, 2}), I({4}, -3, 2)}));
  // Contractions.
  cs.push_back(op_case("matmul", Op(OpKind::MatMul), {F({M, 3}), F({3, N})}));
  cs.push_back(op_case("matmul, batch broadcast", Op(OpKind::MatMul), {F({2, M, 3}), F({3, N})}));
  cs.push_back(op_case("matmul, two batch axes and a shared matrix", Op(OpKind::MatMul),
                       {F({2, 3, M, 3}), F({3, N})}));
  cs.push_back(op_case("matmul, vector", Op(OpKind::MatMul), {F({3}), F({M, 3, N})}));
  cs.push_back(op_case("matmul, matrix-vector", Op(OpKind::MatMul), {F({M, 3}), F({3})}));
  cs.push_back(op_case("fused_matmul_bias_act",
                       Op(OpKind::FusedMatMulBiasAct, FusedMatMulAttrs{Activation::Tanh}),
                       {F({M, 3}), F({3, N}), F({N})}));
  cs.push_back(op_case("fused_swiglu", Op(OpKind::FusedSwiGLU), {F({M, 6})}));
  // Norms.
  cs.push_back(op_case("layer_norm", Op(OpKind::LayerNorm, NormAttrs{-1, 1e-5f}),
                       {F({M, 5}), F({5}), F({5})}));
  cs.push_back(
      op_case("rms_norm", Op(OpKind::RmsNorm, NormAttrs{-1, 1e-5f}), {F({M, 4}), F({4}), F({4})}));
  cs.push_back(op_case("layer_norm2d", Op(OpKind::LayerNorm2d, EpsAttrs{1e-5f}),
                       {F({M, 3, 2, 2}), F({3}), F({3})}));
  cs.push_back(op_case("group_norm", Op(OpKind::GroupNorm, GroupNormAttrs{2, 1e-5f}),
                       {F({M, 4, 2, 1}), F({4}), F({4})}));
  cs.push_back(op_case("batch_norm_inference", Op(OpKind::BatchNormInference, EpsAttrs{1e-5f}),
                       {F({M, 3, 2}), F({3}), F({3}), F({3}), F({3}, 0.5, 2)}));
  cs.push_back(op_case("fused_residual_ln",
                       Op(OpKind::FusedResidualLN, FusedResidualNormAttrs{true, 1e-5f}),
                       {F({M, 4}), F({M, 4}), F({4}), F({4}), F({4})}));
  cs.push_back(op_case("fused_residual_rms_norm",
                       Op(OpKind::FusedResidualRmsNorm, FusedResidualNormAttrs{false, 1e-5f}),
                       {F({M, 4}), F({M, 4}), F({4}), F({4})}));
  // Attention and positions.
  AttentionAttrs causal{2, 2, MaskType::Causal, 0, std::nullopt, std::nullopt};
  cs.push_back(op_case("attention, causal", Op(OpKind::Attention, causal),
                       {F({M, 3, 4}), F({M, 3, 4}), F({M, 3, 4})}));
  AttentionAttrs unmasked{2, 2, MaskType::None, 0, std::nullopt, std::nullopt};
  cs.push_back(op_case("attention, no mask", Op(OpKind::Attention, unmasked),
                       {F({M, 3, 4}), F({M, 5, 4}), F({M, 5, 4})}));
  AttentionAttrs bias{1, 2, MaskType::Bias, 0, 0.8f, 3.0f};
  cs.push_back(op_case("attention, bias and softcap", Op(OpKind::Attention, bias),
                       {F({1, 2, 2}), F({1, 3, 2}), F({1, 3, 2}), F({1, 1, 2, 3})}));
  cs.push_back(op_case("rope, neox", Op(OpKind::Rope, RopeAttrs{4, 4, RopeStyle::NeoX}),
                       {F({M, 3, 8}), F({3, 2}), F({3, 2})}));
  cs.push_back(op_case("rope, gptj partial", Op(OpKind::Rope, RopeAttrs{4, 2, RopeStyle::GptJ}),
                       {F({3, 4}), F({3, 1}), F({3, 1})}));
  cs.push_back(op_case("axial_rope2d",
                       Op(OpKind::AxialRope2d, AxialRopeAttrs{2, 2, 4, 1, 100.f, 1}),
                       {F({M, 4, 4})}));
  // Convolution and pooling.
  cs.push_back(op_case("conv2d, stride 2, groups 2",
                       Op(OpKind::Conv2d, Conv2dAttrs{{2, 2}, {2, 1}, {1, 0}, {1, 1}, 2}),
                       {F({M, 2, 5, 4}), F({4, 1, 2, 2})}));
  cs.push_back(op_case("conv2d, dilation 2",
                       Op(OpKind::Conv2d, Conv2dAttrs{{2, 2}, {1, 1}, {1, 1}, {2, 2}, 1}),
                       {F({1, 2, 4, 4}), F({2, 2, 2, 2})}));
  cs.push_back(op_case("im2col", Op(OpKind::Im2Col, Im2ColAttrs{{2, 2}, {2, 1}, {1, 0}, {1, 1}}),
                       {F({M, 2, 3, 3})}));
  cs.push_back(op_case(
      "conv_transpose2d",
      Op(OpKind::ConvTranspose2d, ConvTranspose2dAttrs{{2, 2}, {2, 1}, {0, 1}, {1, 1}, {1, 0}, 1}),
      {F({M, 2, 2, 3}), F({2, 3, 2, 2})}));
  cs.push_back(op_case("conv3d",
                       Op(OpKind::Conv3d, Conv3dAttrs{{1, 2, 1}, {0, 1, 0}, {1, 1, 1}, 1}),
                       {F({1, 2, 3, 3, 2}), F({2, 2, 2, 2, 1})}));
  cs.push_back(op_case("conv_transpose3d",
                       Op(OpKind::ConvTranspose3d,
                          ConvTranspose3dAttrs{{1, 2, 1}, {0, 0, 0}, {1, 1, 1}, {0, 1, 0}, 1}),
                       {F({1, 2, 2, 2, 2}), F({2, 1, 2, 2, 1})}));
  cs.push_back(op_case("conv_transpose1d",
                       Op(OpKind::ConvTranspose1d, ConvTranspose1dAttrs{3, 2, 1, 1, 1, 1}),
                       {F({M, 2, 3}), F({2, 2, 3})}));
  cs.push_back(op_case("max_pool2d", Op(OpKind::MaxPool2d, Pool2dAttrs{{2, 2}, {2, 1}, {1, 0}}),
                       {F({M, 2, 3, 4})}));
  cs.push_back(op_case("avg_pool2d", Op(OpKind::AvgPool2d, Pool2dAttrs{{2, 3}, {1, 2}, {1, 1}}),
                       {F({M, 2, 3, 4})}));
  // Spectral: fft in the real-block layout in each direction and norm (odd and even lengths);
  // lfilter with respect to x (its coefficients are constants of the graph).
  cs.push_back(op_case("fft", Op(OpKind::Fft, FftAttrs{false, FftNorm::Backward}), {F({M, 10})}));
  cs.push_back(op_case("fft, inverse, norm forward",
                       Op(OpKind::Fft, FftAttrs{true, FftNorm::Forward}), {F({M, 2, 14})}));
  cs.push_back(
      op_case("fft, ortho", Op(OpKind::Fft, FftAttrs{false, FftNorm::Ortho}), {F({M, 6})}));
  cs.push_back(graph_case("lfilter, iir", {F({M, 9})}, [](Graph& g, std::span<const NodeId> a) {
    DType t = g.shape(a[0]).dtype();
    auto vec = [&](std::vector<double> v) { // a constant vector from scalar constants
      std::vector<NodeId> parts;
      for (double e : v) parts.push_back(g.reshape_(g.constant(e, t), {1}));
      return g.concat_(parts, 0);
    };
    NodeId b = vec({0.5, 0.25, -0.125}), den = vec({1.0, -0.5, 0.2});
    return g.add_inferred(Op(OpKind::Lfilter), {a[0], b, den});
  }));
  // Linear algebra on well-conditioned matrices made in the graph (x plus a constant), so the
  // differences stay away from singular matrices and repeated eigen- or singular values; eigh and
  // cholesky get symmetric matrices, as their derivatives assume.
  auto mat = [](Graph& g, DType t, std::vector<double> v, std::vector<int64_t> dims) {
    std::vector<NodeId> parts;
    for (double e : v) parts.push_back(g.reshape_(g.constant(e, t), {1}));
    return g.reshape_(g.concat_(parts, 0), dims);
  };
  auto plus = [mat](Graph& g, NodeId x, std::vector<double> v, std::vector<int64_t> dims) {
    return g.add_inferred(Op(OpKind::Add), {x, mat(g, g.shape(x).dtype(), v, dims)});
  };
  const std::vector<double> eye4 = {4, 0, 0, 0, 4, 0, 0, 0, 4};
  cs.push_back(graph_case("solve, matrix right-hand sides", {F({M, 3, 3}, -1, 1), F({M, 3, 2})},
                          [=](Graph& g, std::span<const NodeId> a) {
                            return g.add_inferred(Op(OpKind::Solve),
                                                  {plus(g, a[0], eye4, {3, 3}), a[1]});
                          }));
  cs.push_back(graph_case("solve, vector right-hand sides", {F({M, 3, 3}, -1, 1), F({M, 3})},
                          [=](Graph& g, std::span<const NodeId> a) {
                            return g.add_inferred(Op(OpKind::Solve),
                                                  {plus(g, a[0], eye4, {3, 3}), a[1]});
                          }));
  cs.push_back(
      graph_case("slogdet", {F({M, 3, 3}, -1, 1)}, [=](Graph& g, std::span<const NodeId> a) {
        return g.add_inferred(Op(OpKind::Slogdet), {plus(g, a[0], eye4, {3, 3})});
      }));
  cs.push_back(graph_case("cholesky of x x^T + 4 I", {F({M, 3, 3}, -1, 1)},
                          [=](Graph& g, std::span<const NodeId> a) {
                            NodeId xt = g.transpose_(a[0], {0, 2, 1});
                            NodeId s = g.add_inferred(Op(OpKind::MatMul), {a[0], xt});
                            return g.add_inferred(Op(OpKind::Cholesky), {plus(g, s, eye4, {3, 3})});
                          }));
  const std::vector<double> tall = {3, 0, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0};
  const std::vector<double> wide = {3, 0, 0, 0, 0, 2, 0, 0, 0, 0, 1, 0};
  cs.push_back(
      graph_case("qr, wide", {F({M, 3, 4}, -0.3, 0.3)}, [=](Graph& g, std::span<const NodeId> a) {
        return g.add_inferred(Op(OpKind::Qr), {plus(g, a[0], wide, {3, 4})});
      }));
  cs.push_back(
      graph_case("qr, tall", {F({M, 4, 3}, -1, 1)}, [=](Graph& g, std::span<const NodeId> a) {
        return g.add_inferred(Op(OpKind::Qr), {plus(g, a[0], tall, {4, 3})});
      }));
  cs.push_back(graph_case(
      "svd, tall, reduced", {F({M, 4, 3}, -0.2, 0.2)}, [=](Graph& g, std::span<const NodeId> a) {
        return g.add_inferred(Op(OpKind::Svd, SvdAttrs{false}), {plus(g, a[0], tall, {4, 3})});
      }));
  cs.push_back(graph_case(
      "svd, wide, reduced", {F({M, 3, 4}, -0.2, 0.2)}, [=](Graph& g, std::span<const NodeId> a) {
        return g.add_inferred(Op(OpKind::Svd, SvdAttrs{false}), {plus(g, a[0], wide, {3, 4})});
      }));
  cs.push_back(graph_case(
      "eigh of x + x^T + diag(1, 2, 3)", {F({M, 3, 3}, -0.1, 0.1)},
      [=](Graph& g, std::span<const NodeId> a) {
        NodeId s = g.add_inferred(Op(OpKind::Add), {a[0], g.transpose_(a[0], {0, 2, 1})});
        return g.add_inferred(Op(OpKind::Eigh), {plus(g, s, {1, 0, 0, 0, 2, 0, 0, 0, 3}, {3, 3})});
      }));
  // fake_quantize's straight-through gradient is 1 inside the range, which no difference
  // quotient of a step function shows (test_quant checks it against torch); where every value
  // is clamped both are 0.
  cs.push_back(op_case("fake_quantize, every value clamped",
                       Op(OpKind::FakeQuantize, QuantizeAttrs{std::nullopt, {0.001f}, {0}}),
                       {F({M, 3}, 1, 2)}));
  // dequant_matmul in both forms on an Int8Block weight (random i8 codes, a constant scale 0.01),
  // in f32: linear in x, so a large step costs nothing and keeps f32 rounding small next to it.
  // Each form's derivative is the other form.
  for (bool adjoint : {false, true}) {
    Case c = graph_case(
        adjoint ? "dequant_matmul, adjoint (g . W)" : "dequant_matmul (x . W^T)",
        {F({M, adjoint ? N : 32}, -1, 1), Arg{{N, 32}, -127, 127, DType::I8}},
        [adjoint](Graph& g, std::span<const NodeId> a) {
          const int64_t rows = g.shape(a[1]).sizes()[0];
          NodeId scale = g.expand(g.reshape_(g.constant(0.01, DType::F32), {1, 1}), {rows, 1});
          Op op(OpKind::DequantMatMul, DequantMatMulAttrs{QuantScheme::int8_block(32), adjoint});
          return g.cast(g.add_inferred(op, {g.cast(a[0], DType::F32), a[1], scale, scale}),
                        DType::F64);
        });
    c.h = 0.5;
    c.tol = 1e-4;
    cs.push_back(std::move(c));
  }
  // Recurrent cells (through their decomposition into scans), weights in the packed layout.
  auto rec = [](int64_t hidden, int64_t layers, bool bidir, bool batch_first, bool relu,
                bool carry) {
    return RecurrentAttrs{hidden, layers, bidir, batch_first, relu, carry};
  };
  cs.push_back(op_case("lstm, two layers, bidirectional, from (h0, c0), with final states",
                       Op(OpKind::Lstm, rec(2, 2, true, true, false, true)),
                       {F({2, 3, 2}, -1, 1), F({96}, -1, 1), F({64}, -1, 1), F({32}, -1, 1),
                        F({4, 2, 2}, -1, 1), F({4, 2, 2}, -1, 1)}));
  cs.push_back(op_case("gru from h0, with its final state",
                       Op(OpKind::Gru, rec(2, 1, false, true, false, true)),
                       {F({M, 3, 3}, -1, 1), F({18}, -1, 1), F({12}, -1, 1), F({6}, -1, 1),
                        F({6}, -1, 1), F({1, M, 2}, -1, 1)}));
  cs.push_back(op_case("rnn tanh, bidirectional, seq first",
                       Op(OpKind::Rnn, rec(3, 1, true, false, false, false)),
                       {F({3, M, 2}, -1, 1), F({12}, -1, 1), F({18}, -1, 1), F({6}, -1, 1)}));
  cs.push_back(op_case("rnn relu", Op(OpKind::Rnn, rec(2, 1, false, true, true, false)),
                       {F({M, 3, 2}, -1, 1), F({4}, -1, 1), F({4}, -1, 1), F({2}, 0.5, 1)}));
  // State-space scans (through their decompositions into a scan), with every operand
  // differentiated: positive steps, negative decay rates, gates in (0, 1).
  cs.push_back(op_case(
      "selective_scan", Op(OpKind::SelectiveScan, SelectiveScanAttrs{3}),
      {F({M, 4, N}), F({M, 4, N}, 0.1, 1), F({N, 3}, -1, -0.1), F({M, 4, 3}), F({M, 4, 3})}));
  cs.push_back(op_case(
      "mamba2, two groups", Op(OpKind::Mamba2, Mamba2Attrs{2, 3}),
      {F({M, 3, 4, 2}), F({M, 3, 4}, 0.1, 1), F({4}, -1, -0.1), F({M, 3, 2, 3}), F({M, 3, 2, 3})}));
  cs.push_back(op_case("gated_delta_net", Op(OpKind::GatedDeltaNet, GatedDeltaNetAttrs{3, false}),
                       {F({M, 3, N, 3}, -1, 1), F({M, 3, N, 3}, -1, 1), F({M, 3, N, 3}),
                        F({M, 3, N}, -1, 0), F({M, 3, N}, 0, 1)}));
  cs.push_back(op_case("gated_delta_net with a carried state",
                       Op(OpKind::GatedDeltaNet, GatedDeltaNetAttrs{3, true}),
                       {F({1, 3, 2, 3}, -1, 1), F({1, 3, 2, 3}, -1, 1), F({1, 3, 2, 3}),
                        F({1, 3, 2}, -1, 0), F({1, 3, 2}, 0, 1), F({1, 2, 3, 3})}));
  // Graphs: a value used twice, a broadcast parameter, a two-layer network with a mean loss.
  cs.push_back(graph_case("a value read by three nodes", {F({M, N})},
                          [](Graph& g, std::span<const NodeId> a) {
                            NodeId t = g.tanh(a[0]);
                            return g.add(g.mul(t, t), g.exp(t));
                          }));
  cs.push_back(graph_case("mlp with a mean squared loss",
                          {F({M, 3}), F({3, 4}), F({4}), F({4, 2}), F({M, 2})},
                          [](Graph& g, std::span<const NodeId> a) {
                            NodeId h = g.relu(g.add(g.mm(a[0], a[1]), a[2]));
                            NodeId d = g.sub(g.mm(h, a[3]), a[4]);
                            return g.mean(g.mul(d, d), {0, 1}, false);
                          }));
  // custom_fn: fwd_body inlined and differentiated (an operand given twice, a broadcast and a
  // composite in the body), and override bodies equal to the true derivatives, so that central
  // differences check the conventions (operands in id order, "primal_output", "d_output",
  // "tangent_<i>").
  cs.push_back(graph_case(
      "custom_fn, inlined", {F({M, N}), F({N})}, [](Graph& g, std::span<const NodeId> a) {
        Graph f("f");
        NodeId x = f.input("x", g.shape(a[0]));
        NodeId y = f.input("y", g.shape(a[1]));
        NodeId x2 = f.input("x2", g.shape(a[0]));
        // layer_norm: a kind differentiated through its decomposition
        f.set_outputs({f.add(f.add(f.mul(f.tanh(x), y), f.mul(x2, x2)), f.ln(x, y, y, 1e-5f))});
        return g.custom_fn({a[0], a[1], a[0]}, f);
      }));
  cs.push_back(graph_case("custom_fn with vjp_body and jvp_body", {F({M, N}), F({M, N})},
                          [](Graph& g, std::span<const NodeId> a) {
                            Shape s = g.shape(a[0]);
                            Graph f("f"); // exp(x) * y
                            NodeId x = f.input("x", s), y = f.input("y", s);
                            f.set_outputs({f.mul(f.exp(x), y)});
                            Graph v("vjp"); // [primal_output * d, exp(x) * d]
                            NodeId vx = v.input("x", s);
                            v.input("y", s);
                            NodeId p = v.input("primal_output", s), d = v.input("d_output", s);
                            v.set_outputs({v.mul(p, d), v.mul(v.exp(vx), d)});
                            Graph j("jvp"); // primal_output * t0 + exp(x) * t1
                            NodeId t1 = j.input("tangent_1", s);
                            NodeId jx = j.input("x", s);
                            j.input("y", s);
                            NodeId t0 = j.input("tangent_0", s), jp = j.input("primal_output", s);
                            j.set_outputs({j.add(j.mul(jp, t0), j.mul(j.exp(jx), t1))});
                            return g.custom_fn({a[0], a[1]}, f, v, j);
                          }));
  // scan: a carry, a broadcast operand and per-step inputs (scan_backward / scan_backward_xs in
  // reverse mode, a scan of (carry, tangent) in forward mode); then a checkpointed scan.
  cs.push_back(graph_case("scan with broadcast and per-step operands",
                          {F({M, N}), F({N}), F({3, M, N})},
                          [](Graph& g, std::span<const NodeId> a) {
                            Shape c = g.shape(a[0]);
                            Graph f("step");
                            NodeId h = f.input("h", c), w = f.input("w", g.shape(a[1]));
                            NodeId x = f.input("x", c);
                            f.set_outputs({f.tanh(f.add(f.mul(h, w), x))});
                            return g.scan_with_bcasts_and_xs(a[0], {a[1]}, {a[2]}, f, 3);
                          }));
  cs.push_back(
      graph_case("scan_checkpointed", {F({M, N})}, [](Graph& g, std::span<const NodeId> a) {
        Graph f("step");
        NodeId h = f.input("h", g.shape(a[0]));
        f.set_outputs({f.tanh(f.add(f.mul(h, h), f.constant(0.5, g.shape(a[0]).dtype())))});
        return g.scan_checkpointed(a[0], f, 5, 2);
      }));
  // A registered custom op (rlx::register_op): x^3, differentiated through its VJP and JVP hooks.
  cs.push_back(graph_case(
      "custom op x^3 through its hooks", {F({M, N})}, [](Graph& g, std::span<const NodeId> a) {
        CustomOp cube;
        cube.infer_shape = [](std::span<const Shape> in, AttrBytes) { return in[0]; };
        cube.kernel = [](std::span<const Buffer* const> in, Buffer& out, AttrBytes) {
          for (int64_t i = 0; i < out.numel(); ++i) out.set_f64(i, std::pow(in[0]->get_f64(i), 3));
        };
        cube.vjp = [](std::span<const Tensor> in, const Tensor&, const Tensor& dy, AttrBytes) {
          return std::vector<Tensor>{in[0] * in[0] * 3.0 * dy};
        };
        cube.jvp = [](std::span<const Tensor> in, std::span<const Tensor> t, const Tensor&,
                      AttrBytes) { return in[0] * in[0] * 3.0 * t[0]; };
        register_op("autodiff.cube", cube, true);
        return g.custom_op("autodiff.cube", {}, {a[0]});
      }));
  // The collectives on this one-process job (each is the identity there, so the rules' wiring
  // and shapes are what this checks; tests/test_dist.cpp checks them across ranks). Times x so
  // the cotangent reaching them is not all ones; a message to this rank comes back.
  for (CollectiveOp op :
       {CollectiveOp::Sum, CollectiveOp::Mean, CollectiveOp::Max, CollectiveOp::Min})
    cs.push_back(graph_case(
        "all_reduce " + std::string(enum_name(op)), {F({M, N})},
        [op](Graph& g, std::span<const NodeId> a) { return g.mul(g.all_reduce(a[0], op), a[0]); }));
  cs.push_back(graph_case("all_gather and reduce_scatter", {F({M, N})},
                          [](Graph& g, std::span<const NodeId> a) {
                            return g.mul(g.reduce_scatter(g.all_gather(a[0], 1), 0), a[0]);
                          }));
  cs.push_back(graph_case("broadcast and reduce_to_root", {F({M, N})},
                          [](Graph& g, std::span<const NodeId> a) {
                            return g.mul(g.reduce_to_root(g.broadcast(a[0], 0), 0), a[0]);
                          }));
  cs.push_back(graph_case("recv of a send to this rank", {F({M, N})},
                          [](Graph& g, std::span<const NodeId> a) {
                            return g.mul(g.recv(g.send(a[0], 0, 11), 0, 11), a[0]);
                          }));
  // gaussian_splat_render through its backward op, in f32 (hence the larger step and tolerance):
  // one wide Gaussian over an 8x8 image in one tile, so no pixel's alpha is near the cutoff and
  // no footprint edge moves; means = x (cast to f32) plus a constant, the rest constants.
  {
    Case c = graph_case(
        "gaussian_splat_render, d/d means", {F({1, 3}, -0.05, 0.05)},
        [](Graph& g, std::span<const NodeId> a) {
          auto vec = [&](std::vector<double> v, std::vector<int64_t> dims) {
            std::vector<NodeId> parts;
            for (double e : v) parts.push_back(g.reshape_(g.constant(e, DType::F32), {1}));
            return g.reshape_(g.concat_(parts, 0), dims);
          };
          GaussianSplatRenderParams p;
          p.width = 8;
          p.height = 8;
          p.tile_size = 8;
          NodeId meta = g.gaussian_splat_render_meta({0, 0, 0}, {0, 0, 1}, {0, 1, 0}, 50.0f, 0.1f,
                                                     100.0f, {0.1f, 0.2f, 0.3f}, p);
          GaussianSplatInputs in{g.add(g.cast(a[0], DType::F32), vec({0.1, -0.1, 3.0}, {1, 3})),
                                 vec({0.0, -0.2, -0.1}, {1, 3}),
                                 vec({0.9, 0.1, 0.3, -0.2}, {1, 4}),
                                 vec({0.8}, {1}),
                                 vec({0.5, -0.3, 0.2}, {1, 3}),
                                 vec({0.1, -0.2, 0.3, 0.2, 0.1, -0.1, -0.3, 0.2, 0.1}, {1, 3, 3}),
                                 meta};
          return g.cast(g.gaussian_splat_render(in, p), DType::F64);
        });
    c.h = 1e-3;
    c.tol = 1e-2;
    c.reverse_only = true;
    cs.push_back(std::move(c));
  }
  return cs;
}

using Feeds = interp::Feed;

std::vector<int64_t> resolve(const std::vector<int64_t>& dims, int64_t m, int64_t n) {
  std::vector<int64_t> r;
  for (int64_t d : dims) r.push_back(d == M ? m : d == N ? n : d);
  return r;
}

Buffer random_arg(const Arg& a, const std::vector<int64_t>& dims, std::mt19937_64& rng) {
  Shape s = Shape::of(dims, a.dtype);
  Buffer b(s);
  for (int64_t i = 0; i < b.numel(); ++i) {
    if (a.dtype == DType::F64)
      b.set_f64(i, std::uniform_real_distribution<double>(a.lo, a.hi)(rng));
    else
      b.set_i64(i, std::uniform_int_distribution<int64_t>(int64_t(a.lo), int64_t(a.hi))(rng));
  }
  return b;
}

/// One instance of a case: its forward graph, the inputs' feeds and which inputs are
/// differentiated (the f64 ones).
struct Instance {
  Graph g{"case"};
  Feeds feeds;
  std::vector<NodeId> wrt;
  std::vector<std::string> names;
};

Instance instantiate(const Case& c, uint64_t seed) {
  std::mt19937_64 rng(seed);
  int64_t m = std::uniform_int_distribution<int64_t>(1, 3)(rng);
  int64_t n = std::uniform_int_distribution<int64_t>(2, 4)(rng);
  Instance in;
  std::vector<NodeId> args;
  for (std::size_t i = 0; i < c.args.size(); ++i) {
    std::string name = "a" + std::to_string(i);
    auto dims = resolve(c.args[i].dims, m, n);
    NodeId id = in.g.input(name, Shape::of(dims, c.args[i].dtype));
    args.push_back(id);
    in.feeds[name] = random_arg(c.args[i], dims, rng);
    if (c.args[i].dtype == DType::F64) {
      in.wrt.push_back(id);
      in.names.push_back(name);
    }
  }
  NodeId out = c.build ? c.build(in.g, args) : in.g.add_inferred(*c.op, args);
  in.g.set_outputs({out});
  return in;
}

double at(const Buffer& b, int64_t i) { return b.get_f64(i); }

void check_close(double got, double want, double tol, const std::string& what) {
  INFO(what);
  CHECK(std::abs(got - want) <= tol * (1 + std::abs(want)));
}

/// VJP: every element of every input's gradient against a central difference of <d_output, f>.
void check_vjp(const Case& c, uint64_t seed) {
  Instance in = instantiate(c, seed);
  Graph gv = autodiff::vjp(in.g, in.wrt);
  REQUIRE(gv.outputs.size() == 1 + in.wrt.size());
  const Shape& ys = in.g.shape(in.g.outputs[0]);
  Feeds feeds = in.feeds;
  feeds["d_output"] = test::random_buffer(ys, seed + 7);
  const Buffer& dout = feeds["d_output"];
  std::vector<Buffer> r = interp::run(gv, feeds);
  auto loss = [&](const Feeds& f) {
    Buffer y = interp::run(in.g, f)[0];
    double s = 0;
    for (int64_t i = 0; i < y.numel(); ++i) s += at(y, i) * at(dout, i);
    return s;
  };
  for (std::size_t k = 0; k < in.wrt.size(); ++k) {
    const Buffer& x = in.feeds.at(in.names[k]);
    REQUIRE(r[1 + k].shape() == x.shape());
    for (int64_t i = 0; i < x.numel(); ++i) {
      Feeds f = in.feeds;
      f[in.names[k]].set_f64(i, at(x, i) + c.h);
      double up = loss(f);
      f[in.names[k]].set_f64(i, at(x, i) - c.h);
      double down = loss(f);
      check_close(at(r[1 + k], i), (up - down) / (2 * c.h), c.tol,
                  c.what + ": d/d " + in.names[k] + "[" + std::to_string(i) + "]");
    }
  }
}

/// JVP: the output's tangent against a central difference along random tangents.
void check_jvp(const Case& c, uint64_t seed) {
  Instance in = instantiate(c, seed);
  Graph gj = autodiff::jvp(in.g, in.wrt);
  REQUIRE(gj.outputs.size() == 2);
  Feeds feeds = in.feeds, up = in.feeds, down = in.feeds;
  for (std::size_t k = 0; k < in.wrt.size(); ++k) {
    const Buffer& x = in.feeds.at(in.names[k]);
    Buffer t = test::random_buffer(x.shape(), seed * 31 + k);
    for (int64_t i = 0; i < x.numel(); ++i) {
      up[in.names[k]].set_f64(i, at(x, i) + c.h * at(t, i));
      down[in.names[k]].set_f64(i, at(x, i) - c.h * at(t, i));
    }
    feeds["tangent_" + in.names[k]] = std::move(t);
  }
  std::vector<Buffer> r = interp::run(gj, feeds);
  Buffer yu = interp::run(in.g, up)[0], yd = interp::run(in.g, down)[0];
  REQUIRE(r[1].shape() == yu.shape());
  for (int64_t i = 0; i < yu.numel(); ++i)
    check_close(at(r[1], i), (at(yu, i) - at(yd, i)) / (2 * c.h), c.tol,
                c.what + ": tangent[" + std::to_string(i) + "]");
}

constexpr uint64_t kSeeds = 2;

} // namespace

TEST_CASE("every differentiable op kind has a VJP and a JVP rule, and the others have none") {
  for (std::size_t i = 0; i < kNumOps; ++i) {
    OpKind k = OpKind(i);
    INFO(op_name(k));
    if (autodiff::is_non_differentiable(k)) {
      CHECK(autodiff::vjp_rule_kind(k) == autodiff::RuleKind::None);
      CHECK(autodiff::jvp_rule_kind(k) == autodiff::RuleKind::None);
      continue;
    }
    CHECK(autodiff::vjp_rule_kind(k) != autodiff::RuleKind::None);
    CHECK(autodiff::jvp_rule_kind(k) != autodiff::RuleKind::None);
    if (autodiff::vjp_rule_kind(k) == autodiff::RuleKind::Decompose ||
        autodiff::jvp_rule_kind(k) == autodiff::RuleKind::Decompose)
      CHECK(has_trait(k, kComposite));
  }
}

TEST_CASE("the finite-difference cases cover every differentiable op kind") {
  std::set<OpKind> seen;
  for (const Case& c : cases()) {
    Instance in = instantiate(c, 1);
    for (const Node& n : in.g.nodes()) seen.insert(n.op.kind());
  }
  for (std::size_t i = 0; i < kNumOps; ++i) {
    OpKind k = OpKind(i);
    INFO(op_name(k));
    // stop_gradient's derivative is zero by definition, not by calculus: tested on its own.
    if (!autodiff::is_non_differentiable(k) && k != OpKind::StopGradient) CHECK(seen.count(k) == 1);
  }
}

TEST_CASE("reverse mode matches central differences for every op kind, on random shapes") {
  for (const Case& c : cases())
    for (uint64_t s = 1; s <= kSeeds; ++s) {
      INFO(c.what, " seed ", s);
      check_vjp(c, s);
    }
}

TEST_CASE("forward mode matches central differences for every op kind, on random shapes") {
  for (const Case& c : cases())
    for (uint64_t s = 1; s <= kSeeds; ++s) {
      INFO(c.what, " seed ", s);
      if (c.reverse_only) {
        Instance in = instantiate(c, s);
        CHECK_THROWS_AS(autodiff::jvp(in.g, in.wrt), rlx::Error);
        continue;
      }
      check_jvp(c, s);
    }
}

namespace {

/// y = sum(tanh(x @ w) * c): one scalar loss of an Input x [3, 4] and a Param w [4, 2].
struct Small {
  Graph g{"small"};
  NodeId x, w;
  Feeds feeds;
  Small() {
    x = g.input("x", Shape({3, 4}, DType::F64));
    w = g.param("w", Shape({4, 2}, DType::F64));
    NodeId c = g.constant(1.5, DType::F64);
    NodeId y = g.sum(g.mul(g.tanh(g.mm(x, w)), c), {0, 1}, false);
    g.set_outputs({y});
    feeds["x"] = test::random_buffer(g.shape(x), 11);
    feeds["w"] = test::random_buffer(g.shape(w), 12);
  }
};

/// Run with each feed given as an Input or a Param, as the graph declares it.
std::vector<Buffer> run_split(const Graph& g, const Feeds& all) {
  Feeds inputs, params;
  for (const Node& n : g.nodes()) {
    if (n.op.kind() != OpKind::Input && n.op.kind() != OpKind::Param) continue;
    const std::string& name = n.op.attrs<LeafAttrs>().name;
    (n.op.kind() == OpKind::Input ? inputs : params)[name] = all.at(name);
  }
  return interp::run(g, inputs, params);
}

std::vector<const Buffer*> leaves_of(const Graph& g, const Feeds& f) {
  std::vector<const Buffer*> leaves;
  for (const Node& n : g.nodes())
    if (n.op.kind() == OpKind::Input || n.op.kind() == OpKind::Param)
      leaves.push_back(&f.at(n.op.attrs<LeafAttrs>().name));
  return leaves;
}

} // namespace

TEST_CASE("grad_with_loss keeps the forward graph, adds d_output and outputs the loss first") {
  Small s;
  Graph gg = autodiff::grad_with_loss(s.g, {s.w, s.x});
  REQUIRE(gg.outputs.size() == 3);
  std::optional<NodeId> d = gg.input_id("d_output");
  REQUIRE(d.has_value());
  CHECK(gg.shape(*d) == Shape::scalar(DType::F64));
  CHECK(gg.shape(gg.outputs[1]) == s.g.shape(s.w));
  CHECK(gg.shape(gg.outputs[2]) == s.g.shape(s.x));
  for (std::size_t i = 0; i < s.g.len(); ++i) // a copy of the forward nodes comes first
    CHECK(gg.nodes()[i] == s.g.nodes()[i]);
  Feeds f = s.feeds;
  f["d_output"] = Buffer::from_f64(Shape::scalar(DType::F64), std::vector<double>{1.0});
  std::vector<Buffer> r = run_split(gg, f);
  CHECK(r[0] == run_split(s.g, s.feeds)[0]);
  // grad is the same without the loss, and a doubled seed doubles the gradients.
  Graph g2 = autodiff::grad(s.g, {s.w, s.x});
  REQUIRE(g2.outputs.size() == 2);
  std::vector<Buffer> r2 = run_split(g2, f);
  CHECK(r2[0] == r[1]);
  CHECK(r2[1] == r[2]);
  f["d_output"] = Buffer::from_f64(Shape::scalar(DType::F64), std::vector<double>{2.0});
  std::vector<Buffer> r3 = run_split(g2, f);
  for (int64_t i = 0; i < r3[0].numel(); ++i) CHECK(r3[0].get_f64(i) == 2 * r2[0].get_f64(i));
}

TEST_CASE("stop_gradient passes the value forward and blocks its gradient") {
  Graph g("sg");
  NodeId x = g.input("x", Shape({4}, DType::F64));
  NodeId y = g.sum(g.mul(g.stop_gradient(g.mul(x, x)), x), {0}, false); // sum(stop(x^2) * x)
  g.set_outputs({y});
  Graph gg = autodiff::grad(g, {x});
  Feeds f;
  f["x"] = Buffer::from_f64(Shape({4}, DType::F64), std::vector<double>{1, -2, 3, 0.5});
  f["d_output"] = Buffer::from_f64(Shape::scalar(DType::F64), std::vector<double>{1.0});
  std::vector<double> dx = interp::run(gg, f)[0].to_f64();
  CHECK(dx == std::vector<double>{1, 4, 9, 0.25}); // x^2, not 3 x^2
  Graph gj = autodiff::jvp(g, {x});
  f["tangent_x"] = Buffer::from_f64(Shape({4}, DType::F64), std::vector<double>{1, 1, 1, 1});
  CHECK(interp::run(gj, f)[1].get_f64(0) == 1 + 4 + 9 + 0.25);
}

TEST_CASE("a wrt node no gradient reaches gets zeros") {
  Graph g("unused");
  NodeId x = g.input("x", Shape({2}, DType::F64));
  NodeId u = g.input("u", Shape({3}, DType::F64));
  g.set_outputs({g.sum(g.exp(x), {0}, false)});
  Graph gg = autodiff::grad(g, {u});
  Feeds f;
  f["x"] = test::random_buffer(g.shape(x), 1);
  f["u"] = test::random_buffer(g.shape(u), 2);
  f["d_output"] = Buffer::from_f64(Shape::scalar(DType::F64), std::vector<double>{1.0});
  CHECK(interp::run(gg, f)[0].to_f64() == std::vector<double>{0, 0, 0});
}

TEST_CASE("the transforms reject graphs and nodes they cannot differentiate, naming them") {
  Small s;
  Graph two = s.g;
  two.set_outputs({s.g.outputs[0], s.g.outputs[0]});
  test::check_error([&] { autodiff::grad_with_loss(two, {s.x}); }, ErrorKind::Value,
                    "must have exactly one output (the loss), it has 2");
  Graph gi("ints");
  NodeId i = gi.input("i", Shape({3}, DType::I64));
  gi.set_outputs({gi.sum(i, {0}, false)});
  test::check_error([&] { autodiff::grad(gi, {i}); }, ErrorKind::Type, "i64[3]");
  test::check_error([&] { autodiff::grad(s.g, {NodeId(99)}); }, ErrorKind::Value,
                    "node %99 is not in graph");
  NodeId mid = s.g.nodes()[s.g.len() - 1].id;
  test::check_error([&] { autodiff::jvp(s.g, {mid}); }, ErrorKind::Value,
                    "tangents are fed to Inputs and Params only");
}

TEST_CASE("hvp is the directional derivative of the gradient") {
  Small s;
  Graph gh = autodiff::hvp(s.g, {s.x, s.w});
  REQUIRE(gh.outputs.size() == 6); // loss, 2 grads, tangents of loss and of the 2 grads
  Graph gg = autodiff::grad(s.g, {s.x, s.w});
  Buffer vx = test::random_buffer(s.g.shape(s.x), 21);
  Buffer vw = test::random_buffer(s.g.shape(s.w), 22);
  Feeds f = s.feeds;
  f["d_output"] = Buffer::from_f64(Shape::scalar(DType::F64), std::vector<double>{1.0});
  f["tangent_x"] = vx;
  f["tangent_w"] = vw;
  std::vector<Buffer> r = run_split(gh, f);
  const double h = 1e-6;
  Feeds up = f, down = f;
  for (int64_t i = 0; i < vx.numel(); ++i) {
    up["x"].set_f64(i, f["x"].get_f64(i) + h * vx.get_f64(i));
    down["x"].set_f64(i, f["x"].get_f64(i) - h * vx.get_f64(i));
  }
  for (int64_t i = 0; i < vw.numel(); ++i) {
    up["w"].set_f64(i, f["w"].get_f64(i) + h * vw.get_f64(i));
    down["w"].set_f64(i, f["w"].get_f64(i) - h * vw.get_f64(i));
  }
  std::vector<Buffer> gu = run_split(gg, up), gd = run_split(gg, down);
  for (std::size_t k = 0; k < 2; ++k)
    for (int64_t i = 0; i < gu[k].numel(); ++i)
      check_close(r[4 + k].get_f64(i), (gu[k].get_f64(i) - gd[k].get_f64(i)) / (2 * h), 1e-6,
                  "Hv[" + std::to_string(k) + "][" + std::to_string(i) + "]");
  // <grad, v> is the loss's tangent.
  double dot = 0;
  for (int64_t i = 0; i < vx.numel(); ++i) dot += r[1].get_f64(i) * vx.get_f64(i);
  for (int64_t i = 0; i < vw.numel(); ++i) dot += r[2].get_f64(i) * vw.get_f64(i);
  check_close(r[3].get_f64(0), dot, 1e-12, "<grad, v>");
}

TEST_CASE("gradients through the JIT equal gradients through the interpreter") {
  if (!backend_available(Backend::Jit)) return;
  for (const Case& c : cases()) {
    bool pick = false;
    for (const char* w : {"mlp", "attention, causal", "conv2d, stride", "layer_norm", "max_pool2d",
                          "gather, axis 0", "softmax", "rope, neox", "reduce_max, axes"})
      pick |= c.what.rfind(w, 0) == 0;
    if (!pick) continue;
    INFO(c.what);
    Instance in = instantiate(c, 3);
    Graph gv = autodiff::vjp(in.g, in.wrt);
    Feeds f = in.feeds;
    f["d_output"] = test::random_buffer(in.g.shape(in.g.outputs[0]), 5);
    std::vector<Buffer> want = interp::run(gv, f);
    std::vector<Buffer> got = compile(gv, Backend::Jit)->run(leaves_of(gv, f));
    REQUIRE(got.size() == want.size());
    for (std::size_t k = 0; k < got.size(); ++k) {
      REQUIRE(got[k].shape() == want[k].shape());
      for (int64_t i = 0; i < got[k].numel(); ++i)
        check_close(got[k].get_f64(i), want[k].get_f64(i), 1e-12,
                    "output " + std::to_string(k) + "[" + std::to_string(i) + "]");
    }
  }
}

// ---- RLX's explicit backward ops, each against its VJP (which the cases above check
// against finite differences) and against central differences directly.

namespace {

using Args = std::span<const NodeId>;
struct BackwardCase {
  std::string what;
  Case forward;    ///< the forward op on its operands
  std::size_t wrt; ///< the operand the backward op differentiates
  std::function<NodeId(Graph&, Args, NodeId dy)> backward;
};

std::vector<BackwardCase> backward_cases() {
  namespace ad = autodiff;
  auto fwd = [](std::string w, Op op, std::vector<Arg> args) { return op_case(w, op, args); };
  Op ln(OpKind::LayerNorm, NormAttrs{-1, 1e-5f}), rms(OpKind::RmsNorm, NormAttrs{-1, 1e-5f});
  Op gn(OpKind::GroupNorm, GroupNormAttrs{2, 1e-5f}),
      bn(OpKind::BatchNormInference, EpsAttrs{1e-5f});
  Conv2dAttrs ca{{2, 2}, {2, 1}, {1, 0}, {1, 1}, 2};
  Op conv(OpKind::Conv2d, ca);
  std::vector<Arg> conv_args{F({2, 2, 5, 4}), F({4, 1, 2, 2})};
  Shape x_conv({2, 2, 5, 4}, DType::F64), w_conv({4, 1, 2, 2}, DType::F64);
  std::vector<Arg> ln_args{F({3, 5}), F({5}), F({5})};
  std::vector<Arg> gn_args{F({2, 4, 2, 1}), F({4}), F({4})};
  std::vector<Arg> bn_args{F({2, 3, 2}), F({3}), F({3}), F({3}), F({3}, 0.5, 2)};
  AttentionAttrs at{2, 2, MaskType::Causal, 0, std::nullopt, std::nullopt};
  std::vector<Arg> at_args{F({1, 3, 4}), F({1, 3, 4}), F({1, 3, 4})};
  Case scel = graph_case(
      "softmax_cross_entropy_with_logits", {F({3, 4}), I({3}, 0, 3)}, [](Graph& g, Args a) {
        return ad::softmax_cross_entropy_with_logits(g, a[0], g.cast(a[1], DType::F64));
      });
  return {
      {"relu_backward", fwd("relu", Op(OpKind::Relu), {F({3, 4})}), 0,
       [](Graph& g, Args a, NodeId dy) { return ad::relu_backward(g, a[0], dy); }},
      {"activation_backward gelu", fwd("gelu", Op(OpKind::Gelu), {F({3, 4})}), 0,
       [](Graph& g, Args a, NodeId dy) {
         return ad::activation_backward(g, Activation::Gelu, a[0], dy);
       }},
      {"layer_norm_backward_input", fwd("ln", ln, ln_args), 0,
       [](Graph& g, Args a, NodeId dy) {
         return ad::layer_norm_backward_input(g, a[0], a[1], dy, -1, 1e-5f);
       }},
      {"layer_norm_backward_gamma", fwd("ln", ln, ln_args), 1,
       [](Graph& g, Args a, NodeId dy) {
         return ad::layer_norm_backward_gamma(g, a[0], dy, g.shape(a[1]), -1, 1e-5f);
       }},
      {"rms_norm_backward_input", fwd("rms", rms, ln_args), 0,
       [](Graph& g, Args a, NodeId dy) {
         return ad::rms_norm_backward_input(g, a[0], a[1], a[2], dy, -1, 1e-5f);
       }},
      {"rms_norm_backward_gamma", fwd("rms", rms, ln_args), 1,
       [](Graph& g, Args a, NodeId dy) {
         return ad::rms_norm_backward_gamma(g, a[0], a[1], a[2], dy, -1, 1e-5f);
       }},
      {"rms_norm_backward_beta", fwd("rms", rms, ln_args), 2,
       [](Graph& g, Args a, NodeId dy) {
         return ad::rms_norm_backward_beta(g, a[0], a[1], a[2], dy, -1, 1e-5f);
       }},
      {"rope_backward",
       fwd("rope", Op(OpKind::Rope, RopeAttrs{4, 2, RopeStyle::NeoX}),
           {F({2, 3, 8}), F({3, 1}), F({3, 1})}),
       0, [](Graph& g, Args a, NodeId dy) { return ad::rope_backward(g, dy, a[1], a[2], 4, 2); }},
      {"cumsum_backward", fwd("cumsum", Op(OpKind::Cumsum, CumsumAttrs{1, true}), {F({2, 4})}), 0,
       [](Graph& g, Args a, NodeId dy) {
         return ad::cumsum_backward(g, dy, g.shape(a[0]), 1, true);
       }},
      {"gather_backward",
       fwd("gather", Op(OpKind::Gather, GatherAttrs{0}), {F({5, 3}), I({4}, -5, 4)}), 0,
       [](Graph& g, Args a, NodeId dy) {
         return ad::gather_backward(g, dy, a[1], g.shape(a[0]), 0);
       }},
      {"group_norm_backward_input", fwd("gn", gn, gn_args), 0,
       [](Graph& g, Args a, NodeId dy) {
         return ad::group_norm_backward_input(g, a[0], a[1], a[2], dy, 2, 1e-5f);
       }},
      {"group_norm_backward_gamma", fwd("gn", gn, gn_args), 1,
       [](Graph& g, Args a, NodeId dy) {
         return ad::group_norm_backward_gamma(g, a[0], dy, g.shape(a[1]), 2, 1e-5f);
       }},
      {"group_norm_backward_beta", fwd("gn", gn, gn_args), 2,
       [](Graph& g, Args a, NodeId dy) {
         return ad::group_norm_backward_beta(g, a[0], dy, g.shape(a[2]), 2, 1e-5f);
       }},
      {"batch_norm_inference_backward_input", fwd("bn", bn, bn_args), 0,
       [](Graph& g, Args a, NodeId dy) {
         return ad::batch_norm_inference_backward_input(g, a[0], a[1], a[3], a[4], dy, 1e-5f);
       }},
      {"batch_norm_inference_backward_gamma", fwd("bn", bn, bn_args), 1,
       [](Graph& g, Args a, NodeId dy) {
         return ad::batch_norm_inference_backward_gamma(g, a[0], a[3], a[4], dy, g.shape(a[1]),
                                                        1e-5f);
       }},
      {"batch_norm_inference_backward_beta", fwd("bn", bn, bn_args), 2,
       [](Graph& g, Args a, NodeId dy) {
         return ad::batch_norm_inference_backward_beta(g, dy, g.shape(a[2]));
       }},
      {"maxpool2d_backward",
       fwd("pool", Op(OpKind::MaxPool2d, Pool2dAttrs{{2, 2}, {2, 1}, {1, 0}}), {F({2, 2, 3, 4})}),
       0,
       [](Graph& g, Args a, NodeId dy) {
         return ad::maxpool2d_backward(g, a[0], dy, {2, 2}, {2, 1}, {1, 0});
       }},
      {"conv2d_backward_input", fwd("conv", conv, conv_args), 0,
       [=](Graph& g, Args a, NodeId dy) {
         return ad::conv2d_backward_input(g, dy, a[1], x_conv, {2, 2}, ca.stride, ca.padding,
                                          ca.dilation, ca.groups);
       }},
      {"conv2d_backward_weight", fwd("conv", conv, conv_args), 1,
       [=](Graph& g, Args a, NodeId dy) {
         return ad::conv2d_backward_weight(g, a[0], dy, w_conv, {2, 2}, ca.stride, ca.padding,
                                           ca.dilation, ca.groups);
       }},
      {"softmax_cross_entropy_backward", scel, 0,
       [](Graph& g, Args a, NodeId dy) {
         return ad::softmax_cross_entropy_backward(g, a[0], g.cast(a[1], DType::F64), dy);
       }},
      {"attention_backward q", fwd("attention", Op(OpKind::Attention, at), at_args), 0,
       [](Graph& g, Args a, NodeId dy) {
         return ad::attention_backward(g, ad::AttentionBwdWrt::Q, a[0], a[1], a[2], dy, 2, 2,
                                       MaskKind::causal(), std::nullopt);
       }},
      {"attention_backward_all, k", fwd("attention", Op(OpKind::Attention, at), at_args), 1,
       [](Graph& g, Args a, NodeId dy) {
         return std::get<1>(ad::attention_backward_all(g, a[0], a[1], a[2], dy, 2, 2,
                                                       MaskKind::causal(), std::nullopt));
       }},
      {"attention_backward_all, v", fwd("attention", Op(OpKind::Attention, at), at_args), 2,
       [](Graph& g, Args a, NodeId dy) {
         return std::get<2>(ad::attention_backward_all(g, a[0], a[1], a[2], dy, 2, 2,
                                                       MaskKind::causal(), std::nullopt));
       }},
  };
}

} // namespace

TEST_CASE("each explicit backward op equals its VJP and central differences") {
  for (const BackwardCase& bc : backward_cases()) {
    INFO(bc.what);
    Instance in = instantiate(bc.forward, 5);
    NodeId y = in.g.outputs[0];
    std::vector<NodeId> args;
    for (const Node& n : in.g.nodes())
      if (n.op.kind() == OpKind::Input) args.push_back(n.id);
    NodeId x = args[bc.wrt];
    std::string name = in.g.node(x).op.attrs<LeafAttrs>().name;
    Graph gb = in.g;
    NodeId dy = gb.input("dy", gb.shape(y));
    gb.set_outputs({bc.backward(gb, args, dy)});
    Feeds f = in.feeds;
    f["dy"] = test::random_buffer(in.g.shape(y), 9);
    Buffer got = interp::run(gb, f)[0];
    REQUIRE(got.shape() == in.g.shape(x));
    // Its VJP.
    Graph gv = autodiff::vjp(in.g, std::vector<NodeId>{x});
    Feeds fv = in.feeds;
    fv["d_output"] = f["dy"];
    Buffer want = interp::run(gv, fv)[1];
    for (int64_t i = 0; i < got.numel(); ++i)
      check_close(got.get_f64(i), want.get_f64(i), 1e-10,
                  bc.what + " vs vjp [" + std::to_string(i) + "]");
    // Central differences of <dy, y>.
    auto loss = [&](const Feeds& ff) {
      Buffer v = interp::run(in.g, ff)[0];
      double s = 0;
      for (int64_t i = 0; i < v.numel(); ++i) s += v.get_f64(i) * f["dy"].get_f64(i);
      return s;
    };
    const double h = 1e-6;
    for (int64_t i = 0; i < got.numel(); ++i) {
      Feeds ff = in.feeds;
      double x0 = in.feeds.at(name).get_f64(i);
      ff[name].set_f64(i, x0 + h);
      double up = loss(ff);
      ff[name].set_f64(i, x0 - h);
      check_close(got.get_f64(i), (up - loss(ff)) / (2 * h), 1e-6,
                  bc.what + " vs differences [" + std::to_string(i) + "]");
    }
  }
}

TEST_CASE("softmax_cross_entropy is logsumexp minus the target's logit, with labels or targets") {
  Graph g("sce");
  NodeId l = g.input("l", Shape({2, 3}, DType::F64));
  NodeId t = g.input("t", Shape({2, 3}, DType::F64));
  NodeId lab = g.input("lab", Shape({2}, DType::F64));
  g.set_outputs({autodiff::softmax_cross_entropy(g, l, t),
                 autodiff::softmax_cross_entropy_with_logits(g, l, lab)});
  std::vector<double> lv{0.5, -1, 2, 3, 0, -0.25};
  Feeds f;
  f["l"] = Buffer::from_f64(Shape({2, 3}, DType::F64), lv);
  f["t"] = Buffer::from_f64(Shape({2, 3}, DType::F64), std::vector<double>{0, 0, 1, 1, 0, 0});
  f["lab"] = Buffer::from_f64(Shape({2}, DType::F64), std::vector<double>{2, 0});
  std::vector<Buffer> r = interp::run(g, f);
  for (int64_t row = 0; row < 2; ++row) {
    double z = 0;
    for (int64_t c = 0; c < 3; ++c) z += std::exp(lv[std::size_t(row * 3 + c)]);
    double want = std::log(z) - lv[std::size_t(row * 3 + (row == 0 ? 2 : 0))];
    check_close(r[0].get_f64(row), want, 1e-14, "targets");
    check_close(r[1].get_f64(row), want, 1e-14, "labels");
  }
}

TEST_CASE("a contiguous slice's gradient pads with zeros, with no product by a selection matrix") {
  Graph g("slice_grad");
  NodeId x = g.input("x", Shape({2, 6}, DType::F64));
  NodeId w = g.input("w", Shape({2, 3}, DType::F64));
  g.set_outputs({g.sum(g.mul(g.slice(x, 1, 2, 3), w), {0, 1}, false)}); // sum(x[:, 2:5] * w)
  Graph gg = autodiff::grad(g, {x});
  for (const ir::Node& n : gg.nodes()) CHECK(n.op.kind() != ir::OpKind::MatMul);
  Feeds f;
  f["x"] = test::random_buffer(g.shape(x), 1);
  f["w"] = Buffer::from_f64(Shape({2, 3}, DType::F64), std::vector<double>{1, 2, 3, 4, 5, 6});
  f["d_output"] = Buffer::from_f64(Shape::scalar(DType::F64), std::vector<double>{1.0});
  CHECK(interp::run(gg, f)[0].to_f64() ==
        std::vector<double>{0, 0, 1, 2, 3, 0, 0, 0, 4, 5, 6, 0}); // w in columns 2..4
}
