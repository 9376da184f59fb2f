// src/frontend/quant.cpp -- rlx::quant (include/rlx/quant.hpp): PyTorch's affine int8
// quantization on Tensors. Every function is one node of the IR's Quant family (its shape rule
// checks dtypes, scales and zero points and names the user's line); choose_qparams is torch's
// MinMaxObserver arithmetic, in f32 as torch computes it.
#include "rlx/quant.hpp"

#include "frontend/impl.hpp"
#include "frontend/ops.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace rlx::quant {

namespace {

/// One node of the Quant family on the operands.
Tensor prim(const std::vector<Tensor>& operands, const ir::Op& op, const Loc& loc) {
  for (const Tensor& t : operands) detail::check_defined(t, op.name(), loc);
  return apply(
      operands,
      [&](ir::Graph& g, std::span<const ir::NodeId> ids) {
        return g.add_inferred(op, std::vector<ir::NodeId>(ids.begin(), ids.end()), loc);
      },
      loc);
}

ir::Ints widen(const std::vector<int32_t>& v) { return ir::Ints(v.begin(), v.end()); }

std::vector<Tensor> operands(const Tensor& x, const Tensor& w, const std::optional<Tensor>& b) {
  std::vector<Tensor> ops{x, w};
  if (b) ops.push_back(*b);
  return ops;
}

} // namespace

Tensor quantize_per_tensor(const Tensor& x, float scale, int32_t zero_point, DType dtype, Loc loc) {
  return prim(
      {x},
      ir::Op(ir::OpKind::Quantize, ir::QuantizeAttrs{std::nullopt, {scale}, {zero_point}, dtype}),
      loc);
}

Tensor quantize_per_channel(const Tensor& x, const std::vector<float>& scales,
                            const std::vector<int32_t>& zero_points, int64_t axis, DType dtype,
                            Loc loc) {
  return prim(
      {x}, ir::Op(ir::OpKind::Quantize, ir::QuantizeAttrs{axis, scales, widen(zero_points), dtype}),
      loc);
}

Tensor dequantize(const Tensor& q, const QParams& p, Loc loc) {
  return prim(
      {q},
      ir::Op(ir::OpKind::Dequantize, ir::DequantizeAttrs{p.axis, p.scales, widen(p.zero_points)}),
      loc);
}

Tensor dequantize(const Tensor& q, float scale, int32_t zero_point, Loc loc) {
  return dequantize(q, QParams{{scale}, {zero_point}, std::nullopt, q.dtype()}, loc);
}

Tensor fake_quantize(const Tensor& x, const QParams& p, Loc loc) {
  return prim({x},
              ir::Op(ir::OpKind::FakeQuantize,
                     ir::QuantizeAttrs{p.axis, p.scales, widen(p.zero_points), p.dtype}),
              loc);
}

std::pair<float, int32_t> choose_qparams(double lo, double hi, DType dtype, bool symmetric) {
  const bool u8 = dtype == DType::U8;
  const float qmin = u8 ? 0.0f : -128.0f, qmax = u8 ? 255.0f : 127.0f;
  const float eps = std::numeric_limits<float>::epsilon();
  const float min_neg = std::min(float(lo), 0.0f), max_pos = std::max(float(hi), 0.0f);
  if (symmetric) {
    float m = std::max(-min_neg, max_pos);
    float scale = std::max(m / ((qmax - qmin) / 2.0f), eps);
    return {scale, u8 ? 128 : 0};
  }
  float scale = std::max((max_pos - min_neg) / (qmax - qmin), eps);
  float zp = qmin - std::nearbyint(min_neg / scale);
  return {scale, int32_t(std::clamp(zp, qmin, qmax))};
}

Tensor q_matmul(const Tensor& x, const Tensor& w, const std::optional<Tensor>& bias, int32_t x_zp,
                const std::vector<int32_t>& w_zp, int32_t out_zp, const std::vector<float>& mult,
                DType out_dtype, Loc loc) {
  return prim(
      operands(x, w, bias),
      ir::Op(ir::OpKind::QMatMul, ir::QMatMulAttrs{x_zp, widen(w_zp), out_zp, mult, out_dtype}),
      loc);
}

Tensor q_conv2d(const Tensor& x, const Tensor& w, const std::optional<Tensor>& bias, int32_t x_zp,
                const std::vector<int32_t>& w_zp, int32_t out_zp, const std::vector<float>& mult,
                const QConvOptions& o, DType out_dtype, Loc loc) {
  detail::check_defined(w, "q_conv2d", loc);
  if (w.ndim() != 4)
    fail(ErrorKind::Shape, "q_conv2d: needs a weight [C_out, C_in/groups, kH, kW], got ",
         ir::short_str(w.shape()), detail::at_loc(loc));
  ir::Ints2 k{w.size(2, loc), w.size(3, loc)};
  return prim(
      operands(x, w, bias),
      ir::Op(ir::OpKind::QConv2d, ir::QConv2dAttrs{k, o.stride, o.padding, o.dilation, o.groups,
                                                   x_zp, widen(w_zp), out_zp, mult, out_dtype}),
      loc);
}

} // namespace rlx::quant
