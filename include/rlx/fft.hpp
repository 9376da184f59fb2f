// include/rlx/fft.hpp -- numpy.fft and torch.stft / torch.istft on Tensors (rlx::fft), with
// numpy's semantics: any length (no power-of-two padding), any axis, `n` pads with zeros or
// truncates, norm names numpy's modes. Spectra are c64 (numpy gives complex128; rlx has one
// complex dtype); real inputs are f32 or f64 (f64 rounds to c64). Deliberate differences from
// numpy and torch are listed in docs/semantics.md; the names in docs/numpy.md. RLX's own
// spectral builders (rfft in (re, im) pairs, spectrogram, log_mel, ...) stay on ir::Graph.
#pragma once

#include "rlx/enum.hpp"
#include "rlx/tensor.hpp"

#include <cstdint>
#include <optional>

namespace rlx::fft {

/// numpy's `norm`: Backward (the default) leaves the forward transform unscaled and scales the
/// inverse by 1/n; Forward the other way round; Ortho scales both by 1/sqrt(n).
RLX_ENUM(Norm, Backward, Forward, Ortho)

/// The fft primitive itself: the DFT of the last axis, f32/f64 in RLX's 2N real-block layout
/// [re..., im...] or c64 interleaved, with RLX's FftNorm (Backward is unnormalized both ways).
Tensor transform(const Tensor& x, bool inverse = false, ir::FftNorm norm = ir::FftNorm::Backward,
                 Loc loc = Loc::current());

/// numpy.fft.fft / ifft: the 1-D DFT of `axis` (c64 out; real inputs are made complex). n < 0
/// keeps the axis' length; otherwise the axis is cut or zero-padded to n first.
Tensor fft(const Tensor& x, int64_t n = -1, int64_t axis = -1, Norm norm = Norm::Backward,
           Loc loc = Loc::current());
Tensor ifft(const Tensor& x, int64_t n = -1, int64_t axis = -1, Norm norm = Norm::Backward,
            Loc loc = Loc::current());
/// numpy.fft.rfft: a real f32/f64 signal's n/2 + 1 non-negative frequency bins, c64.
Tensor rfft(const Tensor& x, int64_t n = -1, int64_t axis = -1, Norm norm = Norm::Backward,
            Loc loc = Loc::current());
/// numpy.fft.irfft: the real (f32) n-point signal whose spectrum has bins 0..n/2 of x (c64);
/// n < 0 means 2 (m - 1) for m bins. Extra bins are ignored, missing ones are zero; the
/// imaginary parts of bin 0 (and bin n/2 for even n) do not contribute.
Tensor irfft(const Tensor& x, int64_t n = -1, int64_t axis = -1, Norm norm = Norm::Backward,
             Loc loc = Loc::current());

/// numpy.fft.fftn / ifftn / rfftn / irfftn over `axes` with output sizes `s` (one per axis).
/// Empty axes: the last s.size() axes, or every axis when s is empty too. Empty s: the axes'
/// lengths (for irfftn the last is 2 (m - 1)).
Tensor fftn(const Tensor& x, Dims s = {}, Dims axes = {}, Norm norm = Norm::Backward,
            Loc loc = Loc::current());
Tensor ifftn(const Tensor& x, Dims s = {}, Dims axes = {}, Norm norm = Norm::Backward,
             Loc loc = Loc::current());
Tensor rfftn(const Tensor& x, Dims s = {}, Dims axes = {}, Norm norm = Norm::Backward,
             Loc loc = Loc::current());
Tensor irfftn(const Tensor& x, Dims s = {}, Dims axes = {}, Norm norm = Norm::Backward,
              Loc loc = Loc::current());
/// numpy.fft.fft2 / ifft2 / rfft2 / irfft2: the n-d forms over axes (-2, -1) by default.
Tensor fft2(const Tensor& x, Dims s = {}, Dims axes = {-2, -1}, Norm norm = Norm::Backward,
            Loc loc = Loc::current());
Tensor ifft2(const Tensor& x, Dims s = {}, Dims axes = {-2, -1}, Norm norm = Norm::Backward,
             Loc loc = Loc::current());
Tensor rfft2(const Tensor& x, Dims s = {}, Dims axes = {-2, -1}, Norm norm = Norm::Backward,
             Loc loc = Loc::current());
Tensor irfft2(const Tensor& x, Dims s = {}, Dims axes = {-2, -1}, Norm norm = Norm::Backward,
              Loc loc = Loc::current());

/// numpy.fft.fftfreq / rfftfreq: the sample frequencies (f64, as numpy) of an n-point transform
/// with sample spacing d: [0, 1, ..., (n-1)/2, -(n/2), ..., -1] / (d n), and [0 .. n/2] / (d n).
Tensor fftfreq(int64_t n, double d = 1.0, Loc loc = Loc::current());
Tensor rfftfreq(int64_t n, double d = 1.0, Loc loc = Loc::current());

/// numpy.fft.fftshift / ifftshift: roll each of `axes` (every axis when absent) by n/2 so the
/// zero frequency moves to the centre, and back. Any dtype.
Tensor fftshift(const Tensor& x, std::optional<Dims> axes = std::nullopt, Loc loc = Loc::current());
Tensor ifftshift(const Tensor& x, std::optional<Dims> axes = std::nullopt,
                 Loc loc = Loc::current());

/// torch.hann_window(n, periodic) as f32 (periodic: the n-point window of a length n + 1
/// symmetric one, what stft wants).
Tensor hann_window(int64_t n, bool periodic = true, Loc loc = Loc::current());

/// torch.stft(x, n_fft, hop_length, win_length, window, center, pad_mode, normalized, onesided,
/// return_complex=True) on x [..., T] (real f32/f64 or c64): c64 [..., freq, frames] with
/// freq = n_fft/2 + 1 (onesided, the default for real x and window) or n_fft, and frames =
/// 1 + (T' - n_fft) / hop for the padded length T' (T + 2 (n_fft/2) when centered, padded by
/// pad_mode: Reflect as torch's 'reflect', Edge its 'replicate', Constant zeros). hop defaults
/// to n_fft/4, win_length to n_fft, window (1-D, win_length) to ones; a shorter window is
/// zero-padded on both sides to n_fft. normalized scales by 1/sqrt(n_fft).
Tensor stft(const Tensor& x, int64_t n_fft, std::optional<int64_t> hop_length = std::nullopt,
            std::optional<int64_t> win_length = std::nullopt,
            std::optional<Tensor> window = std::nullopt, bool center = true,
            ir::PadMode pad_mode = ir::PadMode::Reflect, bool normalized = false,
            std::optional<bool> onesided = std::nullopt, Loc loc = Loc::current());
/// torch.istft: inverts stft by inverse transforms of each frame, the window, overlap-add and
/// division by the overlap-added squared window. z is c64 [..., freq, frames]; onesided defaults
/// to freq != n_fft; the result is [..., length] (f32, or c64 with return_complex), by default
/// n_fft + hop (frames - 1) less 2 (n_fft/2) when centered; a longer `length` pads zeros.
Tensor istft(const Tensor& z, int64_t n_fft, std::optional<int64_t> hop_length = std::nullopt,
             std::optional<int64_t> win_length = std::nullopt,
             std::optional<Tensor> window = std::nullopt, bool center = true,
             bool normalized = false, std::optional<bool> onesided = std::nullopt,
             std::optional<int64_t> length = std::nullopt, bool return_complex = false,
             Loc loc = Loc::current());

} // namespace rlx::fft
