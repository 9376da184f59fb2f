// src/autodiff/quant.cpp -- derivative rules of the quantization family. Only fake_quantize has
// one: quantize and dequantize have an integer result or operand, which carry no derivative in
// rlx, and q_matmul / q_conv2d are integer arithmetic. fake_quantize follows PyTorch's
// straight-through estimator (torch.fake_quantize_per_tensor_affine's backward): the derivative
// is 1 where round(x / scale) + zero_point lands in [qmin, qmax] and 0 where it is clamped.
#include "quant.hpp"

#include <vector>

namespace rlx::autodiff::quant {

namespace {

/// A constant of x's dtype holding one value per channel, shaped to broadcast along `axis`
/// (or a scalar per tensor).
NodeId per_channel(Builder& b, NodeId x, const std::optional<int64_t>& axis,
                   const std::vector<double>& values) {
  if (!axis) return b.like(values[0], x);
  int64_t rank = b.rank(x), a = norm_axis(*axis, rank);
  std::vector<ir::Dim> dims{ir::Dim(int64_t(values.size()))};
  for (int64_t i = a + 1; i < rank; ++i) dims.push_back(ir::Dim(1));
  return b.tensor(values, Shape(std::move(dims), b.shape(x).dtype()));
}

/// 1 where x is not clamped by fake_quantize, else 0, in x's dtype (the same quotient and
/// rounding as the kernel: Div in x's dtype, then Round, half to even).
NodeId pass_mask(Builder& b, const Node& n) {
  const auto& a = n.op.attrs<ir::QuantizeAttrs>();
  NodeId x = n.inputs[0];
  std::vector<double> scales(a.scales.begin(), a.scales.end());
  std::vector<double> zps(a.zero_points.begin(), a.zero_points.end());
  double lo = a.dtype == DType::U8 ? 0 : -128, hi = a.dtype == DType::U8 ? 255 : 127;
  NodeId q = b.add(b.un(OpKind::Round, b.div(x, per_channel(b, x, a.axis, scales))),
                   per_channel(b, x, a.axis, zps));
  NodeId ok =
      b.bin(OpKind::And, b.bin(OpKind::Ge, q, b.like(lo, q)), b.bin(OpKind::Le, q, b.like(hi, q)));
  return b.cast(ok, b.shape(x).dtype());
}

} // namespace

std::vector<Grad> vjp_fake_quantize(Builder& b, const Node& n, NodeId dy, std::span<const char>) {
  return {b.mul(dy, pass_mask(b, n))};
}

Grad jvp_fake_quantize(Builder& b, const Node& n, std::span<const Grad> t) {
  if (!t[0]) return std::nullopt;
  return b.mul(*t[0], pass_mask(b, n));
}

} // namespace rlx::autodiff::quant
