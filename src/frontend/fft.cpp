// src/frontend/fft.cpp -- rlx::fft (include/rlx/fft.hpp): numpy.fft and torch.stft/istft as
// compositions of the fft primitive (c64, last axis) with transposes, pads, narrows, conjugates
// and a gather of frames; no new kernels. numpy's norm modes map onto the primitive's FftNorm:
// the forward transform scaled by 1/n is conj(inverse_{1/n}(conj(x))).
#include "rlx/fft.hpp"

#include "frontend/impl.hpp"
#include "frontend/ops.hpp"

#include <cmath>
#include <numbers>
#include <string_view>
#include <vector>

namespace rlx::fft {

namespace {

using detail::at_loc;
using detail::check_defined;

void need_rank(const Tensor& x, int64_t rank, std::string_view what, const Loc& loc) {
  check_defined(x, what, loc);
  if (x.ndim() < rank)
    fail(ErrorKind::Shape, what, ": needs rank >= ", rank, ", got ", ir::short_str(x.shape()),
         at_loc(loc));
}

/// An explicit point count n must be positive (-1 means the default).
void check_points(int64_t n, std::string_view what, const Tensor& x, const Loc& loc) {
  if (n < 1)
    fail(ErrorKind::Value, what, ": invalid number of data points n = ", n, " for ",
         ir::short_str(x.shape()), at_loc(loc));
}

/// Zero-pad or cut `axis` (normalized) of x at its end to n elements.
Tensor resize(const Tensor& x, int64_t axis, int64_t n, const Loc& loc) {
  int64_t len = x.size(axis, loc);
  if (n < len) return narrow(x, axis, 0, n, loc);
  if (n == len) return x;
  Dims pads(std::size_t(2 * x.ndim()), 0);
  pads[std::size_t(2 * axis + 1)] = n - len;
  return pad(x, pads, ir::PadMode::Constant, 0.0, loc);
}

Tensor pad_axis(const Tensor& x, int64_t axis, int64_t before, int64_t after, ir::PadMode mode,
                const Loc& loc) {
  if (before == 0 && after == 0) return x;
  Dims pads(std::size_t(2 * x.ndim()), 0);
  pads[std::size_t(2 * axis)] = before;
  pads[std::size_t(2 * axis + 1)] = after;
  return pad(x, pads, mode, 0.0, loc);
}

/// f applied with `axis` (normalized) moved to the last position, then moved back.
template <class F> Tensor along(const Tensor& x, int64_t axis, const Loc& loc, F f) {
  const int64_t last = x.ndim() - 1;
  if (axis == last) return f(x);
  return f(x.transpose(axis, last, loc)).transpose(axis, last, loc);
}

/// The c64 DFT of the last axis in numpy's norm mode.
Tensor c2c(const Tensor& z, bool inverse, Norm norm, const Loc& loc) {
  if (norm == Norm::Ortho) return transform(z, inverse, ir::FftNorm::Ortho, loc);
  if (inverse) // FftNorm::Forward scales the inverse by 1/n, Backward leaves it unscaled
    return transform(z, true, norm == Norm::Backward ? ir::FftNorm::Forward : ir::FftNorm::Backward,
                     loc);
  if (norm == Norm::Backward) return transform(z, false, ir::FftNorm::Backward, loc);
  // the forward transform scaled by 1/n: conj(ifft_{1/n}(conj(z)))
  return conjugate(transform(conjugate(z, loc), true, ir::FftNorm::Forward, loc), loc);
}

Tensor to_c64(const Tensor& x, const Loc& loc) {
  return ir::is_complex(x.dtype()) ? x : x.astype(DType::C64, loc);
}

Tensor fft_1d(const Tensor& x, int64_t n, int64_t axis, Norm norm, bool inverse,
              std::string_view what, const Loc& loc) {
  need_rank(x, 1, what, loc);
  int64_t a = detail::norm_axis(axis, x.ndim(), what, x.shape(), loc);
  if (n != -1) check_points(n, what, x, loc);
  Tensor z = to_c64(x, loc);
  if (n != -1)
    z = resize(z, a, n, loc);
  else if (z.shape().dims()[std::size_t(a)].is_static() && z.size(a, loc) == 0)
    check_points(0, what, x, loc);
  return along(z, a, loc, [&](const Tensor& t) { return c2c(t, inverse, norm, loc); });
}

/// The axes and sizes of an n-d transform, as numpy's _cook_nd_args.
std::pair<Dims, Dims> nd_args(const Tensor& x, Dims s, Dims axes, std::string_view what,
                              const Loc& loc) {
  check_defined(x, what, loc);
  const int64_t rank = x.ndim();
  if (axes.empty()) {
    int64_t count = s.empty() ? rank : int64_t(s.size());
    if (count > rank)
      fail(ErrorKind::Shape, what, ": ", count, " sizes in s for ", ir::short_str(x.shape()),
           at_loc(loc));
    for (int64_t a = rank - count; a < rank; ++a) axes.push_back(a);
  } else if (!s.empty() && s.size() != axes.size()) {
    fail(ErrorKind::Value, what, ": s has ", s.size(), " sizes but axes has ", axes.size(),
         " axes, for ", ir::short_str(x.shape()), at_loc(loc));
  }
  for (int64_t& a : axes) a = detail::norm_axis(a, rank, what, x.shape(), loc);
  if (s.empty()) s.assign(axes.size(), -1);
  if (axes.empty())
    fail(ErrorKind::Shape, what, ": no axes to transform in ", ir::short_str(x.shape()),
         at_loc(loc));
  return {s, axes};
}

/// fftn / ifftn: one 1-D transform per axis, the last axis first (as numpy).
Tensor fft_nd(const Tensor& x, Dims s, Dims axes, Norm norm, bool inverse, std::string_view what,
              const Loc& loc) {
  auto [sizes, ax] = nd_args(x, std::move(s), std::move(axes), what, loc);
  Tensor out = x;
  for (std::size_t i = ax.size(); i-- > 0;)
    out = fft_1d(out, sizes[i], ax[i], norm, inverse, what, loc);
  return out;
}

Tensor shift(const Tensor& x, std::optional<Dims> axes, bool inverse, std::string_view what,
             const Loc& loc) {
  check_defined(x, what, loc);
  Dims ax;
  if (axes)
    for (int64_t a : *axes) ax.push_back(detail::norm_axis(a, x.ndim(), what, x.shape(), loc));
  else
    for (int64_t a = 0; a < x.ndim(); ++a) ax.push_back(a);
  Tensor out = x;
  for (int64_t a : ax) {
    int64_t len = x.size(a, loc);
    out = rlx::roll(out, Dims{inverse ? -(len / 2) : len / 2}, Dims{a}, loc);
  }
  return out;
}

/// The hop, the window (real, of length n_fft, centred and zero-padded from win_length) and its
/// checks, shared by stft and istft.
struct Framing {
  int64_t hop = 0;
  Tensor window; // [n_fft], f32 or f64
};

Framing framing(int64_t n_fft, std::optional<int64_t> hop_length, std::optional<int64_t> win_length,
                const std::optional<Tensor>& window, DType real_dtype, std::string_view what,
                const Shape& xs, const Loc& loc) {
  if (n_fft < 1)
    fail(ErrorKind::Value, what, ": n_fft must be positive, got ", n_fft, " for ",
         ir::short_str(xs), at_loc(loc));
  Framing f;
  f.hop = hop_length.value_or(n_fft / 4);
  if (f.hop < 1)
    fail(ErrorKind::Value, what, ": hop_length must be positive, got ", f.hop, " (n_fft ", n_fft,
         ") for ", ir::short_str(xs), at_loc(loc));
  int64_t win = win_length.value_or(n_fft);
  if (win < 1 || win > n_fft)
    fail(ErrorKind::Value, what, ": win_length must be in [1, n_fft = ", n_fft, "], got ", win,
         at_loc(loc));
  Tensor w;
  if (window) {
    check_defined(*window, what, loc);
    if (window->ndim() != 1 || window->size(0, loc) != win)
      fail(ErrorKind::Shape, what, ": the window must be 1-D of win_length ", win, ", got ",
           ir::short_str(window->shape()), at_loc(loc));
    if (ir::is_complex(window->dtype()))
      fail(ErrorKind::Type, what, ": needs a real window, got ", ir::short_str(window->shape()),
           at_loc(loc));
    w = window->astype(real_dtype, loc);
  } else {
    w = ones({win}, real_dtype, loc);
  }
  int64_t left = (n_fft - win) / 2;
  f.window = pad_axis(w, 0, left, n_fft - win - left, ir::PadMode::Constant, loc);
  return f;
}

/// Overlap-add of frames [..., F, N] every hop samples: [..., N + hop (F - 1)]. Each frame is cut
/// into k = ceil(N / hop) blocks of hop samples; block j of frame f lands on output block f + j,
/// so the sum over j of the j-th blocks, shifted by j frames, is the result.
Tensor overlap_add(const Tensor& frames, int64_t hop, const Loc& loc) {
  const int64_t r = frames.ndim();
  const int64_t n_frames = frames.size(r - 2, loc), len = frames.size(r - 1, loc);
  const int64_t k = (len + hop - 1) / hop;
  Dims lead = frames.sizes(loc);
  lead.resize(std::size_t(r - 2));
  Tensor blocks = pad_axis(frames, r - 1, 0, k * hop - len, ir::PadMode::Constant, loc);
  Dims split = lead;
  split.insert(split.end(), {n_frames, k, hop});
  blocks = blocks.reshape(split, loc);
  Dims piece_sizes = lead;
  piece_sizes.insert(piece_sizes.end(), {n_frames, hop});
  Tensor acc;
  for (int64_t j = 0; j < k; ++j) {
    Tensor piece = narrow(blocks, r - 1, j, 1, loc).reshape(piece_sizes, loc);
    piece = pad_axis(piece, r - 2, j, k - 1 - j, ir::PadMode::Constant, loc);
    acc = acc.defined() ? acc + piece : piece;
  }
  Dims flat = lead;
  flat.push_back((n_frames + k - 1) * hop);
  return narrow(acc.reshape(flat, loc), r - 2, 0, len + hop * (n_frames - 1), loc);
}

Tensor times_window(const Tensor& frames, const Tensor& w, const Loc& loc) {
  return ir::is_complex(frames.dtype()) ? frames * complex(w, loc) : frames * w;
}

} // namespace

Tensor transform(const Tensor& x, bool inverse, ir::FftNorm norm, Loc loc) {
  return detail::apply1(
      x, [&](ir::Graph& g, ir::NodeId in) { return g.fft_norm(in, inverse, norm, loc); }, loc);
}

Tensor fft(const Tensor& x, int64_t n, int64_t axis, Norm norm, Loc loc) {
  return fft_1d(x, n, axis, norm, false, "fft", loc);
}

Tensor ifft(const Tensor& x, int64_t n, int64_t axis, Norm norm, Loc loc) {
  return fft_1d(x, n, axis, norm, true, "ifft", loc);
}

Tensor rfft(const Tensor& x, int64_t n, int64_t axis, Norm norm, Loc loc) {
  need_rank(x, 1, "rfft", loc);
  if (ir::is_complex(x.dtype()))
    fail(ErrorKind::Type, "rfft: needs a real tensor, got ", ir::short_str(x.shape()),
         " (fft transforms complex ones)", at_loc(loc));
  int64_t a = detail::norm_axis(axis, x.ndim(), "rfft", x.shape(), loc);
  int64_t m = n == -1 ? x.size(a, loc) : n;
  check_points(m, "rfft", x, loc);
  Tensor z = to_c64(resize(x, a, m, loc), loc);
  return along(z, a, loc, [&](const Tensor& t) {
    return narrow(c2c(t, false, norm, loc), t.ndim() - 1, 0, m / 2 + 1, loc);
  });
}

Tensor irfft(const Tensor& x, int64_t n, int64_t axis, Norm norm, Loc loc) {
  need_rank(x, 1, "irfft", loc);
  if (!ir::is_complex(x.dtype()))
    fail(ErrorKind::Type, "irfft: needs a c64 spectrum, got ", ir::short_str(x.shape()),
         at_loc(loc));
  int64_t a = detail::norm_axis(axis, x.ndim(), "irfft", x.shape(), loc);
  int64_t out_len = n == -1 ? 2 * (x.size(a, loc) - 1) : n;
  check_points(out_len, "irfft", x, loc);
  const int64_t half = out_len / 2 + 1, mirrored = out_len - half;
  Tensor z = resize(x, a, half, loc);
  return along(z, a, loc, [&](const Tensor& t) {
    const int64_t last = t.ndim() - 1;
    Tensor full = t;
    if (mirrored > 0) // bins n-1 .. half are conj(X[1 .. mirrored]), reversed
      full = concat({t, conjugate(flip(narrow(t, last, 1, mirrored, loc), {last}, loc), loc)}, last,
                    loc);
    return real(c2c(full, true, norm, loc), loc);
  });
}

Tensor fftn(const Tensor& x, Dims s, Dims axes, Norm norm, Loc loc) {
  return fft_nd(x, std::move(s), std::move(axes), norm, false, "fftn", loc);
}

Tensor ifftn(const Tensor& x, Dims s, Dims axes, Norm norm, Loc loc) {
  return fft_nd(x, std::move(s), std::move(axes), norm, true, "ifftn", loc);
}

Tensor rfftn(const Tensor& x, Dims s, Dims axes, Norm norm, Loc loc) {
  auto [sizes, ax] = nd_args(x, std::move(s), std::move(axes), "rfftn", loc);
  Tensor out = rfft(x, sizes.back(), ax.back(), norm, loc);
  for (std::size_t i = 0; i + 1 < ax.size(); ++i)
    out = fft_1d(out, sizes[i], ax[i], norm, false, "rfftn", loc);
  return out;
}

Tensor irfftn(const Tensor& x, Dims s, Dims axes, Norm norm, Loc loc) {
  auto [sizes, ax] = nd_args(x, std::move(s), std::move(axes), "irfftn", loc);
  Tensor out = x;
  for (std::size_t i = 0; i + 1 < ax.size(); ++i)
    out = fft_1d(out, sizes[i], ax[i], norm, true, "irfftn", loc);
  return irfft(out, sizes.back(), ax.back(), norm, loc);
}

Tensor fft2(const Tensor& x, Dims s, Dims axes, Norm norm, Loc loc) {
  return fftn(x, std::move(s), std::move(axes), norm, loc);
}
Tensor ifft2(const Tensor& x, Dims s, Dims axes, Norm norm, Loc loc) {
  return ifftn(x, std::move(s), std::move(axes), norm, loc);
}
Tensor rfft2(const Tensor& x, Dims s, Dims axes, Norm norm, Loc loc) {
  return rfftn(x, std::move(s), std::move(axes), norm, loc);
}
Tensor irfft2(const Tensor& x, Dims s, Dims axes, Norm norm, Loc loc) {
  return irfftn(x, std::move(s), std::move(axes), norm, loc);
}

Tensor fftfreq(int64_t n, double d, Loc loc) {
  if (n < 1 || d == 0.0 || !std::isfinite(d))
    fail(ErrorKind::Value, "fftfreq: needs n >= 1 and a finite nonzero d, got n = ", n, ", d = ", d,
         at_loc(loc));
  const double val = 1.0 / (double(n) * d);
  std::vector<double> v(static_cast<std::size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[std::size_t(i)] = double(i <= (n - 1) / 2 ? i : i - n) * val;
  return Tensor::from_vector(v, {n}, loc);
}

Tensor rfftfreq(int64_t n, double d, Loc loc) {
  if (n < 1 || d == 0.0 || !std::isfinite(d))
    fail(ErrorKind::Value, "rfftfreq: needs n >= 1 and a finite nonzero d, got n = ", n,
         ", d = ", d, at_loc(loc));
  const double val = 1.0 / (double(n) * d);
  std::vector<double> v(std::size_t(n / 2 + 1));
  for (int64_t i = 0; i <= n / 2; ++i) v[std::size_t(i)] = double(i) * val;
  return Tensor::from_vector(v, {n / 2 + 1}, loc);
}

Tensor fftshift(const Tensor& x, std::optional<Dims> axes, Loc loc) {
  return shift(x, std::move(axes), false, "fftshift", loc);
}

Tensor ifftshift(const Tensor& x, std::optional<Dims> axes, Loc loc) {
  return shift(x, std::move(axes), true, "ifftshift", loc);
}

Tensor hann_window(int64_t n, bool periodic, Loc loc) {
  if (n < 0) fail(ErrorKind::Value, "hann_window: negative length ", n, at_loc(loc));
  std::vector<float> v(std::size_t(n), 1.0f);
  const int64_t denom = periodic ? n : n - 1;
  if (n > 1) // torch: a window of one sample is [1] in both forms
    for (int64_t i = 0; i < n; ++i)
      v[std::size_t(i)] =
          float(0.5 - 0.5 * std::cos(2.0 * std::numbers::pi * double(i) / double(denom)));
  return Tensor::from_vector(v, {n}, loc);
}

Tensor stft(const Tensor& x, int64_t n_fft, std::optional<int64_t> hop_length,
            std::optional<int64_t> win_length, std::optional<Tensor> window, bool center,
            ir::PadMode pad_mode, bool normalized, std::optional<bool> onesided, Loc loc) {
  need_rank(x, 1, "stft", loc);
  const bool complex_in = ir::is_complex(x.dtype());
  const DType real_dtype = x.dtype() == DType::F64 ? DType::F64 : DType::F32;
  Framing fr = framing(n_fft, hop_length, win_length, window, real_dtype, "stft", x.shape(), loc);
  const bool one = onesided.value_or(!complex_in);
  if (one && complex_in)
    fail(ErrorKind::Value, "stft: onesided needs a real signal, got ", ir::short_str(x.shape()),
         at_loc(loc));
  Tensor xs = complex_in ? x : x.astype(real_dtype, loc);
  const int64_t last = x.ndim() - 1, len = x.size(last, loc);
  int64_t padded = len;
  if (center) {
    const int64_t p = n_fft / 2;
    if (pad_mode == ir::PadMode::Reflect && p >= len)
      fail(ErrorKind::Shape, "stft: reflect padding of n_fft/2 = ", p,
           " needs a longer signal than ", ir::short_str(x.shape()), at_loc(loc));
    if (pad_mode == ir::PadMode::Edge && len == 0)
      fail(ErrorKind::Shape, "stft: replicate padding of an empty signal ",
           ir::short_str(x.shape()), at_loc(loc));
    xs = pad_axis(xs, last, p, p, pad_mode, loc);
    padded += 2 * p;
  }
  if (padded < n_fft)
    fail(ErrorKind::Shape, "stft: the signal ", ir::short_str(x.shape()), " is ", padded,
         " samples long", center ? " after padding" : "", ", shorter than n_fft = ", n_fft,
         at_loc(loc));
  const int64_t n_frames = 1 + (padded - n_fft) / fr.hop;
  std::vector<int64_t> idx(std::size_t(n_frames * n_fft));
  for (int64_t f = 0; f < n_frames; ++f)
    for (int64_t t = 0; t < n_fft; ++t) idx[std::size_t(f * n_fft + t)] = f * fr.hop + t;
  Dims sizes = x.sizes(loc);
  sizes.back() = n_frames;
  sizes.push_back(n_fft);
  Tensor frames =
      take(xs, Tensor::from_vector(idx, {n_frames * n_fft}, loc), last, loc).reshape(sizes, loc);
  frames = times_window(frames, fr.window, loc);
  const Norm norm = normalized ? Norm::Ortho : Norm::Backward;
  Tensor spec = one ? rfft(frames, -1, -1, norm, loc) : fft(frames, -1, -1, norm, loc);
  return spec.transpose(last, last + 1, loc);
}

Tensor istft(const Tensor& z, int64_t n_fft, std::optional<int64_t> hop_length,
             std::optional<int64_t> win_length, std::optional<Tensor> window, bool center,
             bool normalized, std::optional<bool> onesided, std::optional<int64_t> length,
             bool return_complex, Loc loc) {
  need_rank(z, 2, "istft", loc);
  if (!ir::is_complex(z.dtype()))
    fail(ErrorKind::Type, "istft: needs a c64 [..., freq, frames] spectrum, got ",
         ir::short_str(z.shape()), at_loc(loc));
  const DType real_dtype = DType::F32;
  Framing fr = framing(n_fft, hop_length, win_length, window, real_dtype, "istft", z.shape(), loc);
  const int64_t r = z.ndim(), freq = z.size(r - 2, loc), n_frames = z.size(r - 1, loc);
  const bool one = onesided.value_or(freq != n_fft);
  if (one && freq != n_fft / 2 + 1)
    fail(ErrorKind::Shape, "istft: a onesided spectrum needs n_fft/2 + 1 = ", n_fft / 2 + 1,
         " frequencies, got ", ir::short_str(z.shape()), at_loc(loc));
  if (!one && freq != n_fft)
    fail(ErrorKind::Shape, "istft: a two-sided spectrum needs n_fft = ", n_fft,
         " frequencies, got ", ir::short_str(z.shape()), at_loc(loc));
  if (one && return_complex)
    fail(ErrorKind::Value,
         "istft: return_complex needs a two-sided spectrum (onesided=false), got ",
         ir::short_str(z.shape()), at_loc(loc));
  if (n_frames < 1)
    fail(ErrorKind::Shape, "istft: needs at least one frame, got ", ir::short_str(z.shape()),
         at_loc(loc));
  if (length && *length < 0)
    fail(ErrorKind::Value, "istft: negative length ", *length, at_loc(loc));
  const Norm norm = normalized ? Norm::Ortho : Norm::Backward;
  Tensor frames = z.transpose(r - 2, r - 1, loc); // [..., frames, freq]
  if (return_complex) {
    frames = ifft(frames, -1, -1, norm, loc);
  } else {
    if (!one) frames = narrow(frames, r - 1, 0, n_fft / 2 + 1, loc);
    frames = irfft(frames, n_fft, -1, norm, loc);
  }
  Tensor y = overlap_add(times_window(frames, fr.window, loc), fr.hop, loc);
  Tensor env = overlap_add((fr.window * fr.window).expand({n_frames, n_fft}, loc), fr.hop, loc);
  const int64_t y_len = n_fft + fr.hop * (n_frames - 1);
  const int64_t start = center ? n_fft / 2 : 0;
  int64_t end = length ? std::min(start + *length, y_len) : (center ? y_len - n_fft / 2 : y_len);
  end = std::max(end, start);
  y = narrow(y, r - 2, start, end - start, loc);
  env = narrow(env, 0, start, end - start, loc);
  y = ir::is_complex(y.dtype()) ? y / complex(env, loc) : y / env;
  if (length && end - start < *length)
    y = pad_axis(y, r - 2, 0, *length - (end - start), ir::PadMode::Constant, loc);
  return y;
}

} // namespace rlx::fft
