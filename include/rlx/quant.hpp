// include/rlx/quant.hpp -- int8 quantization on Tensors (rlx::quant), PyTorch's and ONNX's
// affine arithmetic: q = clamp(round_half_even(x / scale) + zero_point) in i8 or u8, x = (q -
// zero_point) * scale, and integer matmul and convolution that accumulate in i32 and requantize
// with mult = x_scale * w_scale / out_scale. The ops are the IR's Quant family; integer values
// carry no gradient, fake_quantize (torch's straight-through estimator) is the training path.
// The names next to numpy's and torch's are in docs/numpy.md.
#pragma once

#include "rlx/tensor.hpp"

#include <array>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

namespace rlx::quant {

/// Affine quantization parameters: one (scale, zero point) for the whole tensor (axis nullopt)
/// or one per index of `axis` (per channel).
struct QParams {
  std::vector<float> scales;
  std::vector<int32_t> zero_points;
  std::optional<int64_t> axis;
  DType dtype = DType::I8; ///< i8 or u8
};

/// torch.quantize_per_tensor(x, scale, zero_point, torch.qint8 / quint8): an i8 (or u8) tensor.
Tensor quantize_per_tensor(const Tensor& x, float scale, int32_t zero_point,
                           DType dtype = DType::I8, Loc loc = Loc::current());
/// torch.quantize_per_channel(x, scales, zero_points, axis, dtype).
Tensor quantize_per_channel(const Tensor& x, const std::vector<float>& scales,
                            const std::vector<int32_t>& zero_points, int64_t axis,
                            DType dtype = DType::I8, Loc loc = Loc::current());
/// Tensor.dequantize(): (q - zero_point) * scale as f32, with q's parameters.
Tensor dequantize(const Tensor& q, const QParams& params, Loc loc = Loc::current());
/// Per-tensor dequantize.
Tensor dequantize(const Tensor& q, float scale, int32_t zero_point, Loc loc = Loc::current());

/// torch.fake_quantize_per_tensor_affine / _per_channel_affine: dequantize(quantize(x)) in x's
/// dtype; the gradient passes dy where x lands inside [qmin, qmax] before clamping, 0 outside.
Tensor fake_quantize(const Tensor& x, const QParams& params, Loc loc = Loc::current());

/// The scale and zero point that map [min(lo, 0), max(hi, 0)] onto dtype's range (torch's
/// MinMaxObserver, affine; symmetric: zero point 0 (i8) or 128 (u8) and scale max|.| / 127.5).
std::pair<float, int32_t> choose_qparams(double lo, double hi, DType dtype = DType::I8,
                                         bool symmetric = false);

/// Integer matmul: x [.., M, K] and w [K, N] (i8 or u8), optional bias i32 [N]. Accumulates
/// (x - x_zp)(w - w_zp) + bias in i32, then round_half_even(acc * mult) + out_zp saturated to
/// out_dtype (i8 or u8), or the raw accumulator for out_dtype i32. w_zp and mult have one entry
/// or N (per output channel). mult = x_scale * w_scale / out_scale.
Tensor q_matmul(const Tensor& x, const Tensor& w, const std::optional<Tensor>& bias, int32_t x_zp,
                const std::vector<int32_t>& w_zp, int32_t out_zp, const std::vector<float>& mult,
                DType out_dtype = DType::I8, Loc loc = Loc::current());
/// Integer 2-D convolution (NCHW, weight [C_out, C_in/groups, kH, kW], bias i32 [C_out]):
/// conv2d's geometry with q_matmul's arithmetic per output channel; padding holds x_zp.
struct QConvOptions {
  std::array<int64_t, 2> stride{1, 1}, padding{0, 0}, dilation{1, 1};
  int64_t groups = 1;
};
Tensor q_conv2d(const Tensor& x, const Tensor& w, const std::optional<Tensor>& bias, int32_t x_zp,
                const std::vector<int32_t>& w_zp, int32_t out_zp, const std::vector<float>& mult,
                const QConvOptions& options = {}, DType out_dtype = DType::I8,
                Loc loc = Loc::current());

} // namespace rlx::quant
