// src/builders/nn.cpp -- linear/matmul, normalisation, attention, convolution, pooling and
// resampling builders.
#include "rlx/ir/graph.hpp"

#include "rlx/ir/infer.hpp"

#include <algorithm>
#include <cmath>

namespace rlx::ir {

namespace {

/// The largest interpolation matrix interpolate1d/3d build on the host (elements).
constexpr int64_t kMaxInterpElems = int64_t(1) << 30;

Op attention_op(int64_t num_heads, int64_t head_dim, MaskKind mask,
                std::optional<float> score_scale, std::optional<float> softcap) {
  AttentionAttrs a;
  a.num_heads = num_heads;
  a.head_dim = head_dim;
  a.mask = mask.type;
  a.window = mask.window;
  a.score_scale = score_scale;
  a.attn_logit_softcap = softcap;
  return Op(OpKind::Attention, a);
}

/// Row-major [l_in, l_out] weights: column j holds the contribution of each input sample to
/// output sample j.
std::vector<double> interp_matrix(int64_t l_in, int64_t l_out, InterpMode mode,
                                  bool align_corners) {
  std::vector<double> m(std::size_t(l_in * l_out), 0.0);
  auto at = [&](int64_t i, int64_t j) -> double& { return m[std::size_t(i * l_out + j)]; };
  for (int64_t j = 0; j < l_out; ++j) {
    if (mode == InterpMode::Nearest) { // torch 'nearest': floor(j * l_in / l_out)
      at(std::min(j * l_in / l_out, l_in - 1), j) = 1.0;
      continue;
    }
    double pos;
    if (align_corners)
      pos = l_out > 1 ? double(j) * double(l_in - 1) / double(l_out - 1) : 0.0;
    else
      pos =
          std::clamp((double(j) + 0.5) * double(l_in) / double(l_out) - 0.5, 0.0, double(l_in - 1));
    int64_t i0 = std::min(int64_t(std::floor(pos)), l_in - 1);
    int64_t i1 = std::min(i0 + 1, l_in - 1);
    double frac = pos - double(i0);
    at(i0, j) += 1.0 - frac;
    at(i1, j) += frac;
  }
  return m;
}

} // namespace

// ---- Matmul and linear layers

NodeId Graph::linear_bias(NodeId input, NodeId weight, std::optional<NodeId> bias, Loc loc) {
  return transaction([&] {
    NodeId product = mm(input, weight, loc);
    if (!bias) return product;
    NodeId sum = add(product, *bias, loc);
    const Shape &p = shape(product), &s = shape(sum);
    if (!shapes_compatible(s, p))
      fail(ErrorKind::Shape, "linear_bias: bias ", short_str(shape(*bias)),
           " must broadcast to the product ", short_str(p), " without changing it (got ",
           short_str(s), ")", rlx::detail::at_loc(loc));
    return sum;
  });
}

NodeId Graph::linear_bias_act(NodeId input, NodeId weight, std::optional<NodeId> bias,
                              std::optional<Activation> activation, Loc loc) {
  return transaction([&] {
    NodeId h = linear_bias(input, weight, bias, loc);
    return activation ? build_inferred(Op(to_op_kind(*activation)), {h}, loc) : h;
  });
}

NodeId Graph::linear_fused(NodeId input, NodeId weight, NodeId bias,
                           std::optional<Activation> activation, Shape out_shape, Loc loc) {
  return fused_matmul_bias_act(input, weight, bias, activation, std::move(out_shape), loc);
}

NodeId Graph::fused_matmul_bias_act(NodeId input, NodeId weight, NodeId bias,
                                    std::optional<Activation> activation, Shape shape, Loc loc) {
  return build(Op(OpKind::FusedMatMulBiasAct, FusedMatMulAttrs{activation}), {input, weight, bias},
               shape, loc);
}

std::pair<NodeId, NodeId> Graph::shared_matmul_pair(NodeId input, NodeId w_first, NodeId w_second,
                                                    Loc loc) {
  return transaction([&] {
    NodeId first = mm(input, w_first, loc);
    return std::pair{first, mm(input, w_second, loc)};
  });
}

NodeId Graph::swiglu_ffn(NodeId input, NodeId up_w, NodeId gate_w, NodeId down_w, Loc loc) {
  return transaction([&] {
    auto [up, gate] = shared_matmul_pair(input, up_w, gate_w, loc);
    NodeId h = mul(silu(gate, loc), up, loc);
    return mm(h, down_w, loc);
  });
}

NodeId Graph::fused_swiglu_ffn(NodeId input, NodeId up_w, NodeId gate_w, NodeId down_w,
                               Shape out_shape, Loc loc) {
  return transaction([&] {
    NodeId w = concat_({up_w, gate_w}, -1, loc); // [.., 2N]: up first, gate second
    NodeId h = mm(input, w, loc);
    NodeId act = build_inferred(Op(OpKind::FusedSwiGLU, SwiGluAttrs{false}), {h}, loc);
    return matmul(act, down_w, std::move(out_shape), loc);
  });
}

// ---- Normalisation

NodeId Graph::layer_norm(NodeId input, NodeId gamma, NodeId beta, int64_t axis, float eps,
                         Shape shape, Loc loc) {
  return build(Op(OpKind::LayerNorm, NormAttrs{axis, eps}), {input, gamma, beta}, shape, loc);
}

NodeId Graph::layer_norm2d(NodeId input, NodeId gamma, NodeId beta, float eps, Loc loc) {
  return build_inferred(Op(OpKind::LayerNorm2d, EpsAttrs{eps}), {input, gamma, beta}, loc);
}

NodeId Graph::group_norm(NodeId input, NodeId gamma, NodeId beta, int64_t num_groups, float eps,
                         Loc loc) {
  return build_inferred(Op(OpKind::GroupNorm, GroupNormAttrs{num_groups, eps}),
                        {input, gamma, beta}, loc);
}

NodeId Graph::batch_norm_inference(NodeId input, NodeId gamma, NodeId beta, NodeId running_mean,
                                   NodeId running_var, float eps, Loc loc) {
  return build_inferred(Op(OpKind::BatchNormInference, EpsAttrs{eps}),
                        {input, gamma, beta, running_mean, running_var}, loc);
}

NodeId Graph::rms_norm(NodeId x, NodeId gamma, NodeId beta, float eps, Loc loc) {
  return build_inferred(Op(OpKind::RmsNorm, NormAttrs{-1, eps}), {x, gamma, beta}, loc);
}

namespace {
std::vector<NodeId> residual_inputs(NodeId x, NodeId residual, std::optional<NodeId> bias,
                                    NodeId gamma, NodeId beta) {
  std::vector<NodeId> in{x, residual};
  if (bias) in.push_back(*bias);
  in.push_back(gamma);
  in.push_back(beta);
  return in;
}
} // namespace

NodeId Graph::fused_residual_ln(NodeId x, NodeId residual, std::optional<NodeId> bias, NodeId gamma,
                                NodeId beta, float eps, Shape shape, Loc loc) {
  return build(Op(OpKind::FusedResidualLN, FusedResidualNormAttrs{bias.has_value(), eps}),
               residual_inputs(x, residual, bias, gamma, beta), shape, loc);
}

NodeId Graph::fused_residual_rms_norm(NodeId x, NodeId residual, std::optional<NodeId> bias,
                                      NodeId gamma, NodeId beta, float eps, Shape shape, Loc loc) {
  return build(Op(OpKind::FusedResidualRmsNorm, FusedResidualNormAttrs{bias.has_value(), eps}),
               residual_inputs(x, residual, bias, gamma, beta), shape, loc);
}

// ---- Attention and positions

NodeId Graph::attention(NodeId q, NodeId k, NodeId v, NodeId mask, int64_t num_heads,
                        int64_t head_dim, Shape shape, Loc loc) {
  return attention_opts(q, k, v, mask, num_heads, head_dim, std::move(shape), std::nullopt,
                        std::nullopt, loc);
}

NodeId Graph::attention_opts(NodeId q, NodeId k, NodeId v, NodeId mask, int64_t num_heads,
                             int64_t head_dim, Shape shape, std::optional<float> score_scale,
                             std::optional<float> attn_logit_softcap, Loc loc) {
  return build(
      attention_op(num_heads, head_dim, MaskKind::custom(), score_scale, attn_logit_softcap),
      {q, k, v, mask}, shape, loc);
}

NodeId Graph::attention_kind(NodeId q, NodeId k, NodeId v, int64_t num_heads, int64_t head_dim,
                             MaskKind mask_kind, Shape shape, Loc loc) {
  return attention_kind_opts(q, k, v, num_heads, head_dim, mask_kind, std::move(shape),
                             std::nullopt, std::nullopt, loc);
}

NodeId Graph::attention_kind_opts(NodeId q, NodeId k, NodeId v, int64_t num_heads, int64_t head_dim,
                                  MaskKind mask_kind, Shape shape, std::optional<float> score_scale,
                                  std::optional<float> attn_logit_softcap, Loc loc) {
  if (mask_kind.type == MaskType::Custom || mask_kind.type == MaskType::Bias)
    fail(ErrorKind::Value, "attention_kind: mask ", enum_name(mask_kind.type),
         " needs a mask input; use attention() or attention_bias()", rlx::detail::at_loc(loc));
  return build(attention_op(num_heads, head_dim, mask_kind, score_scale, attn_logit_softcap),
               {q, k, v}, shape, loc);
}

NodeId Graph::attention_bias(NodeId q, NodeId k, NodeId v, NodeId bias, int64_t num_heads,
                             int64_t head_dim, Shape shape, Loc loc) {
  return attention_bias_opts(q, k, v, bias, num_heads, head_dim, std::move(shape), std::nullopt,
                             std::nullopt, loc);
}

NodeId Graph::attention_bias_opts(NodeId q, NodeId k, NodeId v, NodeId bias, int64_t num_heads,
                                  int64_t head_dim, Shape shape, std::optional<float> score_scale,
                                  std::optional<float> attn_logit_softcap, Loc loc) {
  return build(attention_op(num_heads, head_dim, MaskKind::bias(), score_scale, attn_logit_softcap),
               {q, k, v, bias}, shape, loc);
}

NodeId Graph::axial_rope2d(NodeId x, int64_t end_x, int64_t end_y, int64_t head_dim,
                           int64_t num_heads, float theta, int64_t repeat_factor, Loc loc) {
  return build_inferred(Op(OpKind::AxialRope2d,
                           AxialRopeAttrs{end_x, end_y, head_dim, num_heads, theta, repeat_factor}),
                        {x}, loc);
}

// ---- Convolution and pooling

NodeId Graph::conv2d(NodeId input, NodeId weight, Ints2 kernel_size, Ints2 stride, Ints2 padding,
                     Ints2 dilation, int64_t groups, Loc loc) {
  return build_inferred(
      Op(OpKind::Conv2d, Conv2dAttrs{kernel_size, stride, padding, dilation, groups}),
      {input, weight}, loc);
}

NodeId Graph::im2col(NodeId input, Ints2 kernel_size, Ints2 stride, Ints2 padding, Ints2 dilation,
                     Loc loc) {
  return build_inferred(Op(OpKind::Im2Col, Im2ColAttrs{kernel_size, stride, padding, dilation}),
                        {input}, loc);
}

NodeId Graph::conv_transpose2d(NodeId input, NodeId weight, Ints2 kernel_size, Ints2 stride,
                               Ints2 padding, Ints2 dilation, Ints2 output_padding, int64_t groups,
                               Loc loc) {
  return build_inferred(
      Op(OpKind::ConvTranspose2d,
         ConvTranspose2dAttrs{kernel_size, stride, padding, dilation, output_padding, groups}),
      {input, weight}, loc);
}

NodeId Graph::conv3d(NodeId input, NodeId weight, Ints3 stride, Ints3 padding, Ints3 dilation,
                     int64_t groups, Loc loc) {
  return build_inferred(Op(OpKind::Conv3d, Conv3dAttrs{stride, padding, dilation, groups}),
                        {input, weight}, loc);
}

NodeId Graph::conv_transpose3d(NodeId input, NodeId weight, Ints3 stride, Ints3 padding,
                               Ints3 dilation, Ints3 output_padding, int64_t groups, Loc loc) {
  return build_inferred(Op(OpKind::ConvTranspose3d,
                           ConvTranspose3dAttrs{stride, padding, dilation, output_padding, groups}),
                        {input, weight}, loc);
}

NodeId Graph::conv_transpose1d(NodeId input, NodeId weight, int64_t kernel, int64_t stride,
                               int64_t padding, int64_t dilation, int64_t output_padding,
                               int64_t groups, Loc loc) {
  return build_inferred(
      Op(OpKind::ConvTranspose1d,
         ConvTranspose1dAttrs{kernel, stride, padding, dilation, output_padding, groups}),
      {input, weight}, loc);
}

NodeId Graph::max_pool2d(NodeId input, Ints2 kernel_size, Ints2 stride, Ints2 padding, Loc loc) {
  return build_inferred(Op(OpKind::MaxPool2d, Pool2dAttrs{kernel_size, stride, padding}), {input},
                        loc);
}

NodeId Graph::avg_pool2d(NodeId input, Ints2 kernel_size, Ints2 stride, Ints2 padding, Loc loc) {
  return build_inferred(Op(OpKind::AvgPool2d, Pool2dAttrs{kernel_size, stride, padding}), {input},
                        loc);
}

// ---- Resampling: pure decompositions into constant matrices, reshapes, transposes and matmuls

NodeId Graph::resample_last(NodeId x, int64_t l_out, InterpMode mode, bool align_corners,
                            std::string_view what, const Loc& loc) {
  const std::string at = rlx::detail::at_loc(loc);
  if (x.index >= len())
    fail(ErrorKind::Value, what, ": operand ", x, " is not in graph @", name, at);
  const Shape xs = shape(x); // a copy: appending below moves the nodes
  if (xs.rank() == 0) fail(ErrorKind::Shape, what, ": needs rank >= 1, got ", short_str(xs), at);
  if (!is_float(xs.dtype()))
    fail(ErrorKind::Type, what, ": needs a floating-point operand, got ", short_str(xs), at);
  const Dim& last = xs.dims().back();
  if (last.is_dynamic() || last.size() < 1)
    fail(ErrorKind::Shape, what, ": the resampled axis must be static and non-empty, got ",
         short_str(xs), at);
  int64_t l_in = last.size();
  if (l_out < 1 || l_out > kMaxDimSize)
    fail(ErrorKind::Value, what, ": output length must be in [1, 2^48], got ", l_out, at);
  if (l_in > kMaxInterpElems / l_out)
    fail(ErrorKind::Value, what, ": the [", l_in, ", ", l_out,
         "] interpolation matrix would exceed 2^30 elements", at);
  std::vector<double> weights = interp_matrix(l_in, l_out, mode, align_corners);
  return transaction([&] {
    NodeId mat = constant_values(xs.dtype(), {l_in, l_out}, weights, loc);
    if (xs.rank() <= 2 || !xs.is_static()) return mm(x, mat, loc); // batch dims broadcast
    std::vector<int64_t> dims = xs.sizes();
    int64_t rows = 1;
    for (std::size_t i = 0; i + 1 < dims.size(); ++i) rows *= dims[i];
    NodeId flat = reshape_(x, {rows, l_in}, loc);
    NodeId y = mm(flat, mat, loc);
    dims.back() = l_out;
    return reshape_(y, dims, loc);
  });
}

NodeId Graph::interpolate1d(NodeId x, int64_t l_out, InterpMode mode, Loc loc) {
  return resample_last(x, l_out, mode, true, "interpolate1d", loc);
}

NodeId Graph::interpolate3d(NodeId x, Ints3 out_dhw, InterpMode mode, bool align_corners, Loc loc) {
  const std::string at = rlx::detail::at_loc(loc);
  if (x.index >= len())
    fail(ErrorKind::Value, "interpolate3d: operand ", x, " is not in graph @", name, at);
  const Shape xs = shape(x);
  if (xs.rank() != 5)
    fail(ErrorKind::Shape, "interpolate3d: expects [N, C, D, H, W], got ", short_str(xs), at);
  if (!is_float(xs.dtype()))
    fail(ErrorKind::Type, "interpolate3d: needs a floating-point operand, got ", short_str(xs), at);
  for (std::size_t i = 0; i < 3; ++i) {
    if (xs.dims()[2 + i].is_dynamic())
      fail(ErrorKind::Shape, "interpolate3d: D, H and W must be static, got ", short_str(xs), at);
    if (out_dhw[i] < 1)
      fail(ErrorKind::Value, "interpolate3d: out_dhw must be >= 1, got [", out_dhw[0], ", ",
           out_dhw[1], ", ", out_dhw[2], "]", at);
  }
  auto resize = [&](NodeId t, int64_t n) {
    return resample_last(t, n, mode, align_corners, "interpolate3d", loc);
  };
  return transaction([&] {
    NodeId cur = x;
    if (out_dhw[2] != xs.dims()[4].size()) cur = resize(cur, out_dhw[2]); // W is already last
    if (out_dhw[1] != xs.dims()[3].size()) { // swap H and W, resample, swap back
      NodeId t = resize(transpose_(cur, {0, 1, 2, 4, 3}, loc), out_dhw[1]);
      cur = transpose_(t, {0, 1, 2, 4, 3}, loc);
    }
    if (out_dhw[0] != xs.dims()[2].size()) { // [N, C, H, W, D], resample, back
      NodeId t = resize(transpose_(cur, {0, 1, 3, 4, 2}, loc), out_dhw[0]);
      cur = transpose_(t, {0, 1, 4, 2, 3}, loc);
    }
    return cur;
  });
}

} // namespace rlx::ir
