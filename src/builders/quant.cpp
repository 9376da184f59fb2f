// src/builders/quant.cpp -- RLX's quantization builders on the Quant family's kinds (ops.def):
// quantize / dequantize per tensor and per channel, q_matmul and q_conv2d, with RLX's names and
// argument order. The shape rule (src/ops/quant.cpp) checks dtypes, scales and zero points.
#include "rlx/ir/graph.hpp"

namespace rlx::ir {

namespace {

Ints widen(const std::vector<int32_t>& v) { return Ints(v.begin(), v.end()); }

} // namespace

NodeId Graph::quantize(NodeId x, float scale, int32_t zero_point, DType dtype, Loc loc) {
  return build_inferred(
      Op(OpKind::Quantize, QuantizeAttrs{std::nullopt, {scale}, {zero_point}, dtype}), {x}, loc);
}

NodeId Graph::quantize_per_channel(NodeId x, int64_t axis, std::vector<float> scales,
                                   std::vector<int32_t> zero_points, DType dtype, Loc loc) {
  return build_inferred(
      Op(OpKind::Quantize, QuantizeAttrs{axis, std::move(scales), widen(zero_points), dtype}), {x},
      loc);
}

NodeId Graph::dequantize(NodeId x, float scale, int32_t zero_point, Loc loc) {
  return build_inferred(
      Op(OpKind::Dequantize, DequantizeAttrs{std::nullopt, {scale}, {zero_point}}), {x}, loc);
}

NodeId Graph::dequantize_per_channel(NodeId x, int64_t axis, std::vector<float> scales,
                                     std::vector<int32_t> zero_points, Loc loc) {
  return build_inferred(
      Op(OpKind::Dequantize, DequantizeAttrs{axis, std::move(scales), widen(zero_points)}), {x},
      loc);
}

NodeId Graph::q_matmul(NodeId x, NodeId w, NodeId bias, int32_t x_zp, int32_t w_zp, int32_t out_zp,
                       float mult, Shape out_shape, Loc loc) {
  QMatMulAttrs a{x_zp, {w_zp}, out_zp, {mult}, out_shape.dtype()};
  return build(Op(OpKind::QMatMul, std::move(a)), {x, w, bias}, out_shape, loc);
}

NodeId Graph::q_conv2d(NodeId x, NodeId w, NodeId bias, Ints2 kernel_size, Ints2 stride,
                       Ints2 padding, Ints2 dilation, int64_t groups, int32_t x_zp, int32_t w_zp,
                       int32_t out_zp, float mult, Shape out_shape, Loc loc) {
  QConv2dAttrs a{kernel_size, stride, padding, dilation, groups,
                 x_zp,        {w_zp}, out_zp,  {mult},   out_shape.dtype()};
  return build(Op(OpKind::QConv2d, std::move(a)), {x, w, bias}, out_shape, loc);
}

} // namespace rlx::ir
