// src/autodiff/quant.cpp -- derivative rules of the quantization families. In the Quant family
// only fake_quantize has one: quantize and dequantize have an integer result or operand, which
// carry no derivative in rlx, and q_matmul / q_conv2d are integer arithmetic. fake_quantize
// follows PyTorch's straight-through estimator (torch.fake_quantize_per_tensor_affine's
// backward): the derivative is 1 where round(x / scale) + zero_point lands in [qmin, qmax] and 0
// where it is clamped. dequant_matmul (family Packed) is linear in x, and its transpose is the
// same op with adjoint flipped, so both modes stay on packed weights (QLoRA trains adapters
// beside such a frozen base); the weights themselves get no derivative.
#include "quant.hpp"

#include "ops/custom.hpp"

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

namespace {

/// The Error for a derivative with respect to weight operand j of dequant_matmul n.
[[noreturn]] void frozen_weight(Builder& b, const Node& n, std::size_t j) {
  fail(ErrorKind::Unsupported,
       "autodiff: dequant_matmul's quantized weight is a frozen base, so no derivative flows to "
       "its operand ",
       j, " (", ir::short_str(b.shape(n.inputs[j])),
       "); train low-rank adapters beside it (x . W^T + scale (x A) B, QLoRA) or differentiate "
       "an f32 copy of W (rlx::quant::unpack)",
       ir::detail::at_source(n.loc));
}

/// dequant_matmul n's other form (adjoint flipped) applied to v in place of x.
NodeId other_form(Builder& b, const Node& n, NodeId v) {
  ir::DequantMatMulAttrs a = n.op.attrs<ir::DequantMatMulAttrs>();
  a.adjoint = !a.adjoint;
  std::vector<NodeId> ins(n.inputs.begin(), n.inputs.end());
  ins[0] = v;
  return b.op(ir::Op(OpKind::DequantMatMul, a), std::move(ins));
}

} // namespace

std::vector<Grad> vjp_dequant_matmul(Builder& b, const Node& n, NodeId dy,
                                     std::span<const char> want) {
  for (std::size_t j = 1; j < n.inputs.size(); ++j)
    if (want[j]) frozen_weight(b, n, j);
  std::vector<Grad> g(n.inputs.size());
  if (want[0]) g[0] = other_form(b, n, dy);
  return g;
}

Grad jvp_dequant_matmul(Builder& b, const Node& n, std::span<const Grad> t) {
  for (std::size_t j = 1; j < n.inputs.size(); ++j)
    if (t[j]) frozen_weight(b, n, j);
  if (!t[0]) return std::nullopt;
  std::vector<NodeId> ins(n.inputs.begin(), n.inputs.end());
  ins[0] = *t[0];
  return b.op(n.op, std::move(ins));
}

} // namespace rlx::autodiff::quant
