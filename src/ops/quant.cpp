// src/ops/quant.cpp -- shape rules of the quantization family: quantize, dequantize,
// fake_quantize, q_matmul, q_conv2d (semantics in include/rlx/ir/ops.def). The rules also check
// the attributes a kernel relies on: scales positive and finite, zero points inside their
// dtype's range, one (scale, zero point) per tensor or per index of the channel axis.
#include "infer_common.hpp"

#include <cmath>
#include <limits>
#include <string>
#include <vector>

namespace rlx::ir::detail {

namespace {

bool is_q8(DType t) { return t == DType::I8 || t == DType::U8; }

/// The representable range of an integer dtype the family uses.
std::pair<int64_t, int64_t> int_range(DType t) {
  if (t == DType::I8) return {-128, 127};
  if (t == DType::U8) return {0, 255};
  return {std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max()};
}

void check_scales(const Op& op, std::span<const Shape> in, const std::vector<float>& scales,
                  std::string_view what) {
  for (std::size_t i = 0; i < scales.size(); ++i)
    if (!(std::isfinite(scales[i]) && scales[i] > 0))
      fail(ErrorKind::Value, op.name(), ": ", what, "[", i, "] = ", scales[i],
           " must be positive and finite (operands ", shapes_str(in), ")");
}

void check_zero_point(const Op& op, std::span<const Shape> in, int64_t zp, DType t,
                      std::string_view what) {
  auto [lo, hi] = int_range(t);
  if (zp < lo || zp > hi)
    fail(ErrorKind::Value, op.name(), ": ", what, " ", zp, " is outside ", dtype_name(t), "'s [",
         lo, ", ", hi, "] (operands ", shapes_str(in), ")");
}

/// The per-tensor / per-channel parameters of quantize, dequantize and fake_quantize applied to
/// x, whose integer side has dtype `t`.
void check_affine(const Op& op, std::span<const Shape> in, const std::optional<int64_t>& axis,
                  const std::vector<float>& scales, const Ints& zero_points, DType t) {
  const Shape& x = in[0];
  if (scales.empty()) shape_error(op, in, "needs at least one scale");
  if (zero_points.size() != scales.size())
    shape_error(op, in, "has ", scales.size(), " scales but ", zero_points.size(), " zero points");
  if (!axis) {
    if (scales.size() != 1)
      shape_error(op, in, "per tensor (no axis) takes one scale, got ", scales.size());
  } else {
    int64_t a = norm_axis(op, in, *axis, x.rank());
    int64_t len = static_size(x.dims()[std::size_t(a)]);
    if (int64_t(scales.size()) != len)
      shape_error(op, in, "per channel on axis ", a, " needs ", len,
                  " scales and zero points (the axis' size), got ", scales.size());
  }
  check_scales(op, in, scales, "scale");
  for (int64_t zp : zero_points) check_zero_point(op, in, zp, t, "zero point");
}

void need_q8(const Op& op, std::span<const Shape> in, std::size_t i, std::string_view what) {
  if (!is_q8(in[i].dtype()))
    fail(ErrorKind::Type, op.name(), ": ", what, " must be i8 or u8, got ", shapes_str(in));
}

/// The requantization parameters of q_matmul and q_conv2d, for n output channels.
template <class A>
void check_requant(const Op& op, std::span<const Shape> in, const A& a, int64_t n) {
  need_q8(op, in, 0, "x");
  need_q8(op, in, 1, "w");
  if (!is_q8(a.dtype) && a.dtype != DType::I32)
    fail(ErrorKind::Type, op.name(), ": the output dtype must be i8, u8 or i32, got ",
         dtype_name(a.dtype));
  if (a.w_zp.size() != 1 && int64_t(a.w_zp.size()) != n)
    shape_error(op, in, "w_zp needs 1 or ", n, " entries (one per output channel), got ",
                a.w_zp.size());
  if (a.mult.size() != 1 && int64_t(a.mult.size()) != n)
    shape_error(op, in, "mult needs 1 or ", n, " entries (one per output channel), got ",
                a.mult.size());
  check_scales(op, in, a.mult, "mult");
  check_zero_point(op, in, a.x_zp, in[0].dtype(), "x_zp");
  for (int64_t zp : a.w_zp) check_zero_point(op, in, zp, in[1].dtype(), "w_zp");
  if (a.dtype == DType::I32) {
    if (a.out_zp != 0 || a.mult.size() != 1 || a.mult[0] != 1.0f)
      shape_error(op, in, "an i32 output is the raw accumulator: out_zp must be 0 and mult 1");
  } else {
    check_zero_point(op, in, a.out_zp, a.dtype, "out_zp");
  }
  if (in.size() == 3) {
    const Shape& b = in[2];
    if (b.dtype() != DType::I32)
      fail(ErrorKind::Type, op.name(), ": bias must be i32, got ", shapes_str(in));
    if (b.rank() != 1 || static_size(b.dims()[0]) != n)
      shape_error(op, in, "bias must be [", n, "] (one per output channel)");
  }
}

void check_arity(const Op& op, std::span<const Shape> in) {
  if (in.size() != 2 && in.size() != 3)
    fail(ErrorKind::Shape, op.name(), ": takes x, w and an optional bias, got ", in.size(),
         " operands");
}

Shape q_matmul_rule(const Op& op, std::span<const Shape> in) {
  check_arity(op, in);
  const auto& a = op.attrs<QMatMulAttrs>();
  const Shape &x = in[0], &w = in[1];
  if (x.rank() < 1 || w.rank() != 2)
    shape_error(op, in, "needs x [.., M, K] (rank >= 1) and w [K, N]");
  int64_t k = static_size(x.dims().back()), kw = static_size(w.dims()[0]);
  if (k != kw) shape_error(op, in, "contracting dims differ (", k, " != ", kw, ")");
  int64_t n = static_size(w.dims()[1]);
  check_requant(op, in, a, n);
  std::vector<Dim> dims(x.dims().begin(), x.dims().end() - 1);
  dims.push_back(Dim(n));
  return Shape(std::move(dims), a.dtype);
}

Shape q_conv2d_rule(const Op& op, std::span<const Shape> in) {
  check_arity(op, in);
  const auto& a = op.attrs<QConv2dAttrs>();
  if (in[0].rank() != 4 || in[1].rank() != 4)
    shape_error(op, in, "needs x [N, C, H, W] and w [C_out, C_in/groups, kH, kW]");
  // conv2d's geometry, on operands of one dtype (x and w may be i8 and u8 here).
  Op conv(OpKind::Conv2d, Conv2dAttrs{a.kernel_size, a.stride, a.padding, a.dilation, a.groups});
  std::vector<Shape> as_conv{in[0], Shape(in[1].dims(), in[0].dtype())};
  std::optional<Shape> out;
  try {
    out = infer_conv_pool(conv, as_conv);
  } catch (const Error& e) {
    fail(e.kind(), "q_", e.what());
  }
  if (!out) throw DynamicUnknown{};
  check_requant(op, in, a, static_size(in[1].dims()[0]));
  return Shape(out->dims(), a.dtype);
}

} // namespace

std::optional<Shape> infer_quant(const Op& op, std::span<const Shape> in) {
  switch (op.kind()) {
  case OpKind::Quantize:
  case OpKind::FakeQuantize: {
    const auto& a = op.attrs<QuantizeAttrs>();
    if (!is_float(in[0].dtype()))
      fail(ErrorKind::Type, op.name(), ": needs a floating-point x, got ", shapes_str(in));
    if (!is_q8(a.dtype))
      fail(ErrorKind::Type, op.name(), ": quantizes to i8 or u8, not ", dtype_name(a.dtype));
    check_affine(op, in, a.axis, a.scales, a.zero_points, a.dtype);
    return op.kind() == OpKind::Quantize ? Shape(in[0].dims(), a.dtype) : in[0];
  }
  case OpKind::Dequantize: {
    const auto& a = op.attrs<DequantizeAttrs>();
    DType t = in[0].dtype();
    if (!is_q8(t) && t != DType::I32)
      fail(ErrorKind::Type, op.name(), ": needs an i8, u8 or i32 x, got ", shapes_str(in));
    check_affine(op, in, a.axis, a.scales, a.zero_points, t);
    return Shape(in[0].dims(), DType::F32);
  }
  case OpKind::QMatMul:
    return q_matmul_rule(op, in);
  case OpKind::QConv2d:
    return q_conv2d_rule(op, in);
  default:
    return std::nullopt;
  }
}

} // namespace rlx::ir::detail
