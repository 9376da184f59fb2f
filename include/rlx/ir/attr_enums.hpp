// include/rlx/ir/attr_enums.hpp -- the small enums and array types that attribute structs and the
// Tensor API share (pad and interpolation modes, attention masks, RoPE, FFT norms, windows).
// Kept apart from rlx/ir/attrs.hpp so rlx/tensor.hpp names them without parsing AnyAttrs.
#pragma once

#include "rlx/enum.hpp"

#include <array>
#include <cstdint>
#include <vector>

namespace rlx::ir {

using Ints = std::vector<int64_t>;
using Ints2 = std::array<int64_t, 2>;
using Ints3 = std::array<int64_t, 3>;

/// How attention masks scores: None, Causal, SlidingWindow (uses `window`), a Custom [B, Sk]
/// validity input (1 = keep, < 0.5 = masked), or an additive Bias input [B, H, Sq, Sk].
RLX_ENUM(MaskType, None, Causal, SlidingWindow, Custom, Bias)
/// RoPE pairings: NeoX rotates halves (i, i + n/2); GptJ rotates neighbours (2i, 2i + 1).
RLX_ENUM(RopeStyle, NeoX, GptJ)
/// Pad modes: constant value, reflect (no edge repeat), edge (replicate).
RLX_ENUM(PadMode, Constant, Reflect, Edge)
/// Resampling modes for interpolate1d / interpolate3d.
RLX_ENUM(InterpMode, Linear, Nearest)
/// FFT scaling (RLX's FftNorm): Backward leaves both directions unnormalized
/// (ifft(fft(x)) = N x), Forward scales the inverse by 1/N (numpy's default "backward"), Ortho
/// scales both by 1/sqrt(N).
RLX_ENUM(FftNorm, Backward, Forward, Ortho)
/// Analysis windows of spectrogram, periodic (scipy.signal.get_window's default).
RLX_ENUM(WindowKind, Rectangular, Hann, Hamming, Blackman)
/// How all_reduce combines the ranks' values (rlx::dist).
RLX_ENUM(CollectiveOp, Sum, Mean, Max, Min)
/// What a random node draws (ops.def's Random family): a distribution, or a key operation.
RLX_ENUM(RandomDist, Uniform, Normal, Gumbel, Exponential, Bernoulli, Randint, Permutation, Split,
         FoldIn)
/// Vector quantization's distance: Euclidean, or cosine (the largest cosine similarity wins).
RLX_ENUM(VqMetric, L2, Cosine)

/// RLX's MaskKind: a mask type plus the window size of SlidingWindow.
struct MaskKind {
  MaskType type = MaskType::None;
  int64_t window = 0;
  static MaskKind none() { return {MaskType::None, 0}; }
  static MaskKind causal() { return {MaskType::Causal, 0}; }
  static MaskKind sliding_window(int64_t w) { return {MaskType::SlidingWindow, w}; }
  static MaskKind custom() { return {MaskType::Custom, 0}; }
  static MaskKind bias() { return {MaskType::Bias, 0}; }
  friend bool operator==(const MaskKind&, const MaskKind&) = default;
};

} // namespace rlx::ir
