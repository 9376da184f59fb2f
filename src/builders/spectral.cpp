// src/builders/spectral.cpp -- the spectral and signal-processing builders: the primitives
// fft, lfilter, conjugate and complex_norm_sq, and RLX's composites over them (rfft,
// irfft, stft, spectrogram, hilbert, filtfilt, resample_poly, ...). Composites check their
// operands first (errors name the public builder, the shapes and the caller's line), then append
// primitive nodes inside a transaction, so a failure leaves the graph as it was.
#include "rlx/ir/graph.hpp"

#include "rlx/ir/infer.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <numbers>
#include <numeric>

namespace rlx::ir {

namespace {

/// Host signals and filters larger than this are refused (elements of one host-built constant).
constexpr int64_t kMaxHostConst = int64_t(1) << 26;

/// A constant of f32, f64 or i64 holding `values` row-major.
NodeId values_const(Graph& g, DType t, std::vector<int64_t> dims, std::span<const double> values,
                    const Loc& loc) {
  Bytes bytes;
  for (double v : values) {
    std::size_t at = bytes.data.size();
    bytes.data.resize(at + size_bytes(t));
    if (t == DType::F32) {
      float f = float(v);
      std::memcpy(bytes.data.data() + at, &f, 4);
    } else if (t == DType::F64) {
      std::memcpy(bytes.data.data() + at, &v, 8);
    } else {
      RLX_CHECK(t == DType::I64, "values_const: dtype ", dtype_name(t));
      int64_t i = int64_t(v);
      std::memcpy(bytes.data.data() + at, &i, 8);
    }
  }
  return g.add_node(Op(OpKind::Constant, ConstantAttrs{std::move(bytes)}), {}, Shape::of(dims, t),
                    loc);
}

NodeId scalar_const(Graph& g, DType t, double v, const Loc& loc) {
  return values_const(g, t, {}, std::span(&v, 1), loc);
}

NodeId unary(Graph& g, OpKind k, NodeId x, const Loc& loc) {
  return g.add_inferred(Op(k), {x}, loc);
}

/// re^2 + im^2.
NodeId power_of(Graph& g, NodeId re, NodeId im, const Loc& loc) {
  return g.add(g.mul(re, re, loc), g.mul(im, im, loc), loc);
}

/// Checks shared by the builders taking a real signal: in the graph, rank >= 1, f32 or f64,
/// static last axis of at least `min_len` samples. Returns the last axis' length.
int64_t check_real(const Graph& g, NodeId x, std::string_view what, const Loc& loc,
                   int64_t min_len = 1) {
  const std::string at = rlx::detail::at_loc(loc);
  if (x.index >= g.len())
    fail(ErrorKind::Value, what, ": operand ", x, " is not in graph @", g.name, at);
  const Shape& s = g.shape(x);
  if (s.rank() == 0) fail(ErrorKind::Shape, what, ": needs rank >= 1, got ", short_str(s), at);
  if (s.dtype() != DType::F32 && s.dtype() != DType::F64)
    fail(ErrorKind::Type, what, ": needs an f32 or f64 signal, got ", short_str(s), at);
  const Dim& last = s.dims().back();
  if (last.is_dynamic() || last.size() < min_len)
    fail(ErrorKind::Shape, what, ": the last axis must be static with at least ", min_len,
         " samples, got ", short_str(s), at);
  return last.size();
}

/// Zero-pad the last axis of x by `extra` samples at the end.
NodeId pad_last(Graph& g, NodeId x, int64_t extra, const Loc& loc) {
  std::vector<int64_t> pads(2 * g.shape(x).rank(), 0);
  pads.back() = extra;
  return g.pad(x, pads, PadMode::Constant, 0.0, loc);
}

/// The (re, im) half spectrum, n/2 + 1 bins, of the unpadded real signal x [.., n].
std::pair<NodeId, NodeId> rfft_core(Graph& g, NodeId x, FftNorm norm, const Loc& loc) {
  int64_t n = g.shape(x).dims().back().size(), h = n / 2 + 1;
  NodeId spec = g.fft_norm(pad_last(g, x, n, loc), false, norm, loc);
  return {g.narrow_(spec, -1, 0, h, loc), g.narrow_(spec, -1, n, h, loc)};
}

/// Frames of x [.., T]: [frames, .., frame_len] (a gather of the last axis by a constant index
/// table, then the frame axis moved to the front).
NodeId frames_of(Graph& g, NodeId x, int64_t frame_len, int64_t hop, int64_t frames,
                 const Loc& loc) {
  std::vector<double> idx;
  for (int64_t f = 0; f < frames; ++f)
    for (int64_t t = 0; t < frame_len; ++t) idx.push_back(double(f * hop + t));
  int64_t r = int64_t(g.shape(x).rank());
  NodeId table = values_const(g, DType::I64, {frames, frame_len}, idx, loc);
  NodeId fr = g.gather_(x, table, r - 1, loc); // [lead.., frames, frame_len]
  if (r == 1) return fr;
  std::vector<int64_t> perm{r - 1};
  for (int64_t i = 0; i < r - 1; ++i) perm.push_back(i);
  perm.push_back(r);
  return g.transpose_(fr, perm, loc);
}

int64_t frame_count(const Graph& g, NodeId x, int64_t frame_len, int64_t hop, std::string_view what,
                    const Loc& loc) {
  int64_t t = check_real(g, x, what, loc);
  const std::string at = rlx::detail::at_loc(loc);
  if (frame_len < 1 || hop < 1)
    fail(ErrorKind::Value, what, ": frame_len and hop must be >= 1, got ", frame_len, " and ", hop,
         at);
  if (frame_len > t)
    fail(ErrorKind::Shape, what, ": frame_len ", frame_len, " is longer than the signal ",
         short_str(g.shape(x)), at);
  int64_t frames = 1 + (t - frame_len) / hop;
  if (frames > kMaxHostConst / frame_len)
    fail(ErrorKind::Value, what, ": too many frames (", frames, ")", at);
  return frames;
}

/// A periodic analysis window (scipy.signal.get_window(kind, n), fftbins=True).
std::vector<double> window_values(WindowKind kind, int64_t n) {
  std::vector<double> w(static_cast<std::size_t>(n), 1.0);
  for (int64_t t = 0; t < n; ++t) {
    double c = 2.0 * std::numbers::pi * double(t) / double(n);
    switch (kind) {
    case WindowKind::Rectangular:
      break;
    case WindowKind::Hann:
      w[std::size_t(t)] = 0.5 - 0.5 * std::cos(c);
      break;
    case WindowKind::Hamming:
      w[std::size_t(t)] = 0.54 - 0.46 * std::cos(c);
      break;
    case WindowKind::Blackman:
      w[std::size_t(t)] = 0.42 - 0.5 * std::cos(c) + 0.08 * std::cos(2.0 * c);
      break;
    }
  }
  return w;
}

/// Solve the dense system m x = v (n x n, row-major) by Gaussian elimination with partial
/// pivoting; nullopt when singular.
std::optional<std::vector<double>> solve(std::vector<double> m, std::vector<double> v) {
  std::size_t n = v.size();
  for (std::size_t c = 0; c < n; ++c) {
    std::size_t p = c;
    for (std::size_t r = c + 1; r < n; ++r)
      if (std::abs(m[r * n + c]) > std::abs(m[p * n + c])) p = r;
    if (m[p * n + c] == 0.0) return std::nullopt;
    if (p != c) {
      for (std::size_t k = 0; k < n; ++k) std::swap(m[p * n + k], m[c * n + k]);
      std::swap(v[p], v[c]);
    }
    for (std::size_t r = c + 1; r < n; ++r) {
      double f = m[r * n + c] / m[c * n + c];
      for (std::size_t k = c; k < n; ++k) m[r * n + k] -= f * m[c * n + k];
      v[r] -= f * v[c];
    }
  }
  for (std::size_t c = n; c-- > 0;) {
    for (std::size_t k = c + 1; k < n; ++k) v[c] -= m[c * n + k] * v[k];
    v[c] /= m[c * n + c];
  }
  return v;
}

/// A digital filter given on the host: numerator b and denominator a (a[0] != 0).
struct Filter {
  std::vector<double> b, a;
};

/// scipy.signal.lfilter_zi: the state of the filter after a unit step input has settled.
std::vector<double> lfilter_zi(const Filter& f, std::string_view what, const Loc& loc) {
  std::size_t n = std::max(f.a.size(), f.b.size());
  std::vector<double> b(n, 0.0), a(n, 0.0);
  for (std::size_t i = 0; i < f.b.size(); ++i) b[i] = f.b[i] / f.a[0];
  for (std::size_t i = 0; i < f.a.size(); ++i) a[i] = f.a[i] / f.a[0];
  std::size_t k = n - 1;
  if (k == 0) return {};
  // (I - companion(a)^T) zi = b[1:] - a[1:] b[0]; companion(a) has -a[1:] in its first row and
  // ones below the diagonal.
  std::vector<double> m(k * k, 0.0), rhs(k);
  for (std::size_t r = 0; r < k; ++r) {
    m[r * k + r] += 1.0;
    m[r * k + 0] += a[r + 1]; // -(companion^T)[r][0] = a[r+1]
    if (r + 1 < k) m[r * k + r + 1] -= 1.0;
    rhs[r] = b[r + 1] - a[r + 1] * b[0];
  }
  auto zi = solve(std::move(m), std::move(rhs));
  if (!zi)
    fail(ErrorKind::Value, what, ": the filter has no steady state (a pole at z = 1)",
         rlx::detail::at_loc(loc));
  return *zi;
}

Filter filter_of(std::span<const float> b, std::span<const float> a) {
  return {std::vector<double>(b.begin(), b.end()), std::vector<double>(a.begin(), a.end())};
}

void check_filter(const Filter& f, std::string_view what, const Loc& loc) {
  const std::string at = rlx::detail::at_loc(loc);
  if (f.b.empty() || f.a.empty()) fail(ErrorKind::Value, what, ": needs coefficients", at);
  if (f.a[0] == 0.0) fail(ErrorKind::Value, what, ": a[0] must be nonzero", at);
  for (double v : f.b)
    if (!std::isfinite(v)) fail(ErrorKind::Value, what, ": coefficients must be finite", at);
  for (double v : f.a)
    if (!std::isfinite(v)) fail(ErrorKind::Value, what, ": coefficients must be finite", at);
}

/// lfilter of x by f, with initial state zi * x0 when both are given (x0 [.., 1]).
NodeId apply_filter(Graph& g, NodeId x, const Filter& f, const std::vector<double>* zi,
                    std::optional<NodeId> x0, const Loc& loc) {
  DType t = g.shape(x).dtype();
  NodeId b = values_const(g, t, {int64_t(f.b.size())}, f.b, loc);
  NodeId a = values_const(g, t, {int64_t(f.a.size())}, f.a, loc);
  std::optional<NodeId> state;
  if (zi && x0 && !zi->empty())
    state = g.mul(*x0, values_const(g, t, {int64_t(zi->size())}, *zi, loc), loc);
  return g.lfilter(x, b, a, state, loc);
}

/// scipy's odd extension of the last axis by n samples on both sides.
NodeId odd_ext(Graph& g, NodeId x, int64_t n, const Loc& loc) {
  if (n == 0) return x;
  int64_t len = g.shape(x).dims().back().size();
  NodeId two = scalar_const(g, g.shape(x).dtype(), 2.0, loc);
  NodeId first = g.narrow_(x, -1, 0, 1, loc), last = g.narrow_(x, -1, len - 1, 1, loc);
  NodeId left =
      g.sub(g.mul(two, first, loc), g.reverse(g.narrow_(x, -1, 1, n, loc), {-1}, loc), loc);
  NodeId right = g.sub(g.mul(two, last, loc),
                       g.reverse(g.narrow_(x, -1, len - 1 - n, n, loc), {-1}, loc), loc);
  return g.concat_({left, x, right}, -1, loc);
}

/// scipy's filtfilt / sosfiltfilt scheme around a cascade of filters with steady-state initial
/// conditions `zis` (one per filter, already scaled through the cascade): odd extension by
/// padlen, forward pass with the state times the first sample, reverse, again, reverse, trim.
NodeId zero_phase(Graph& g, NodeId x, const std::vector<Filter>& cascade,
                  const std::vector<std::vector<double>>& zis, int64_t padlen,
                  std::string_view what, const Loc& loc) {
  int64_t len = g.shape(x).dims().back().size();
  if (len <= padlen)
    fail(ErrorKind::Shape, what, ": the signal must be longer than the padding (", padlen,
         " samples), got ", short_str(g.shape(x)), rlx::detail::at_loc(loc));
  NodeId ext = odd_ext(g, x, padlen, loc);
  int64_t ext_len = len + 2 * padlen;
  auto pass = [&](NodeId v) {
    NodeId v0 = g.narrow_(v, -1, 0, 1, loc);
    for (std::size_t i = 0; i < cascade.size(); ++i)
      v = apply_filter(g, v, cascade[i], &zis[i], v0, loc);
    return v;
  };
  NodeId y = pass(ext);
  y = g.reverse(pass(g.reverse(y, {-1}, loc)), {-1}, loc);
  return padlen ? g.narrow_(y, -1, padlen, ext_len - 2 * padlen, loc) : y;
}

std::vector<Filter> sos_cascade(std::span<const Graph::SosSection> sections, std::string_view what,
                                const Loc& loc) {
  if (sections.empty())
    fail(ErrorKind::Value, what, ": needs at least one section", rlx::detail::at_loc(loc));
  std::vector<Filter> out;
  for (const auto& [b, a] : sections) {
    out.push_back(filter_of(b, a));
    check_filter(out.back(), what, loc);
  }
  return out;
}

} // namespace

// ---- Primitives

NodeId Graph::fft(NodeId x, bool inverse, Loc loc) {
  return fft_norm(x, inverse, FftNorm::Backward, loc);
}

NodeId Graph::fft_norm(NodeId x, bool inverse, FftNorm norm, Loc loc) {
  return build_inferred(Op(OpKind::Fft, FftAttrs{inverse, norm}), {x}, loc);
}

NodeId Graph::lfilter(NodeId x, NodeId b, NodeId a, std::optional<NodeId> zi, Loc loc) {
  std::vector<NodeId> ins{x, b, a};
  if (zi) ins.push_back(*zi);
  return build_inferred(Op(OpKind::Lfilter), std::move(ins), loc);
}

NodeId Graph::conjugate(NodeId z, Loc loc) {
  return build_inferred(Op(OpKind::Conjugate), {z}, loc);
}

NodeId Graph::complex_norm_sq(NodeId z, Loc loc) {
  return build_inferred(Op(OpKind::ComplexNormSq), {z}, loc);
}

// ---- FFT layouts and axes

NodeId Graph::fft_axis(NodeId x, int64_t axis, bool inverse, Loc loc) {
  const std::string at = rlx::detail::at_loc(loc);
  check_id(x, "fft_axis");
  const Shape s = shape(x);
  int64_t r = int64_t(s.rank());
  if (r == 0 || axis < -r || axis >= r)
    fail(ErrorKind::Shape, "fft_axis: axis ", axis, " is out of range for ", short_str(s), at);
  if (axis < 0) axis += r;
  if (axis == r - 1) return fft(x, inverse, loc);
  if (!is_complex(s.dtype()))
    fail(ErrorKind::Type,
         "fft_axis: the 2N real-block layout holds one complex axis, the last; "
         "use c64 to transform axis ",
         axis, " of ", short_str(s), at);
  std::vector<int64_t> perm(static_cast<std::size_t>(r));
  std::iota(perm.begin(), perm.end(), 0);
  std::swap(perm[std::size_t(axis)], perm.back());
  return transaction([&] {
    NodeId t = transpose_(x, perm, loc);
    return transpose_(fft(t, inverse, loc), perm, loc);
  });
}

NodeId Graph::fftn(NodeId x, std::vector<int64_t> axes, bool inverse, Loc loc) {
  check_id(x, "fftn");
  int64_t r = int64_t(shape(x).rank());
  for (int64_t& a : axes) {
    if (a < -r || a >= r)
      fail(ErrorKind::Shape, "fftn: axis ", a, " is out of range for ", short_str(shape(x)),
           rlx::detail::at_loc(loc));
    if (a < 0) a += r;
  }
  std::sort(axes.begin(), axes.end());
  if (std::adjacent_find(axes.begin(), axes.end()) != axes.end())
    fail(ErrorKind::Value, "fftn: repeated axis", rlx::detail::at_loc(loc));
  return transaction([&] {
    NodeId cur = x;
    for (int64_t a : axes) cur = fft_axis(cur, a, inverse, loc);
    return cur;
  });
}

NodeId Graph::ifftn(NodeId x, std::vector<int64_t> axes, Loc loc) {
  return fftn(x, std::move(axes), true, loc);
}

NodeId Graph::pad_last_axis_to_pow2(NodeId x, Loc loc) {
  check_id(x, "pad_last_axis_to_pow2");
  const Shape& s = shape(x);
  if (s.rank() == 0 || s.dims().back().is_dynamic())
    fail(ErrorKind::Shape, "pad_last_axis_to_pow2: needs a static last axis, got ", short_str(s),
         rlx::detail::at_loc(loc));
  int64_t n = s.dims().back().size();
  int64_t p = int64_t(std::bit_ceil(uint64_t(std::max<int64_t>(n, 1))));
  if (p == n) return x;
  return transaction([&] { return pad_last(*this, x, p - n, loc); });
}

std::pair<NodeId, NodeId> Graph::split_spectrum(NodeId spectrum, Loc loc) {
  check_id(spectrum, "split_spectrum");
  const Shape& s = shape(spectrum);
  if (s.rank() == 0 || s.dims().back().is_dynamic() || s.dims().back().size() % 2 != 0)
    fail(ErrorKind::Shape, "split_spectrum: needs a static, even last axis [.., 2N], got ",
         short_str(s), rlx::detail::at_loc(loc));
  int64_t n = s.dims().back().size() / 2;
  return transaction([&] {
    return std::pair{narrow_(spectrum, -1, 0, n, loc), narrow_(spectrum, -1, n, n, loc)};
  });
}

std::pair<NodeId, NodeId> Graph::fft_real(NodeId x, FftNorm norm, Loc loc) {
  check_real(*this, x, "fft_real", loc);
  return transaction([&] {
    NodeId p = pad_last_axis_to_pow2(x, loc);
    int64_t n = shape(p).dims().back().size();
    return split_spectrum(fft_norm(pad_last(*this, p, n, loc), false, norm, loc), loc);
  });
}

std::pair<NodeId, NodeId> Graph::fft_batch_real(NodeId x, FftNorm norm, Loc loc) {
  return fft_real(x, norm, loc);
}

std::pair<NodeId, NodeId> Graph::rfft(NodeId x, FftNorm norm, Loc loc) {
  check_real(*this, x, "rfft", loc);
  return transaction([&] { return rfft_core(*this, pad_last_axis_to_pow2(x, loc), norm, loc); });
}

std::pair<NodeId, NodeId> Graph::rfft_exact(NodeId x, int64_t n, FftNorm norm, Loc loc) {
  int64_t len = check_real(*this, x, "rfft_exact", loc);
  if (n != len)
    fail(ErrorKind::Shape, "rfft_exact: n = ", n, " but the signal is ", short_str(shape(x)),
         rlx::detail::at_loc(loc));
  return transaction([&] { return rfft_core(*this, x, norm, loc); });
}

NodeId Graph::rfft_exact_mag(NodeId x, int64_t n, FftNorm norm, Loc loc) {
  return transaction([&] {
    auto [re, im] = rfft_exact(x, n, norm, loc);
    return sqrt(power_of(*this, re, im, loc), loc);
  });
}

NodeId Graph::irfft(NodeId re_half, NodeId im_half, int64_t n, FftNorm norm, Loc loc) {
  int64_t bins = check_real(*this, re_half, "irfft", loc);
  check_real(*this, im_half, "irfft", loc);
  const std::string at = rlx::detail::at_loc(loc);
  if (!(shape(re_half) == shape(im_half)))
    fail(ErrorKind::Shape, "irfft: re and im differ: ", short_str(shape(re_half)), " vs ",
         short_str(shape(im_half)), at);
  if (n < 1 || n > kMaxDimSize) fail(ErrorKind::Value, "irfft: n must be >= 1, got ", n, at);
  int64_t h = n / 2 + 1, mirrored = n - h; // bins 1..mirrored appear again, conjugated
  return transaction([&] {
    auto fit = [&](NodeId v) {
      return bins >= h ? narrow_(v, -1, 0, h, loc) : pad_last(*this, v, h - bins, loc);
    };
    NodeId re = fit(re_half), im = fit(im_half);
    if (mirrored > 0) {
      re = concat_({re, reverse(narrow_(re, -1, 1, mirrored, loc), {-1}, loc)}, -1, loc);
      im = concat_({im, neg(reverse(narrow_(im, -1, 1, mirrored, loc), {-1}, loc), loc)}, -1, loc);
    }
    NodeId y = fft_norm(concat_({re, im}, -1, loc), true, norm, loc);
    return narrow_(y, -1, 0, n, loc);
  });
}

NodeId Graph::ifft_spectrum(NodeId re, NodeId im, FftNorm norm, Loc loc) {
  int64_t n = check_real(*this, re, "ifft_spectrum", loc);
  check_real(*this, im, "ifft_spectrum", loc);
  if (!(shape(re) == shape(im)))
    fail(ErrorKind::Shape, "ifft_spectrum: re and im differ: ", short_str(shape(re)), " vs ",
         short_str(shape(im)), rlx::detail::at_loc(loc));
  return transaction([&] {
    NodeId y = fft_norm(concat_({re, im}, -1, loc), true, norm, loc);
    return narrow_(y, -1, 0, n, loc);
  });
}

// ---- Short-time transforms and convolution

NodeId Graph::stft(NodeId x, int64_t frame_len, int64_t hop, FftNorm norm, Loc loc) {
  int64_t frames = frame_count(*this, x, frame_len, hop, "stft", loc);
  return transaction([&] {
    NodeId fr = frames_of(*this, x, frame_len, hop, frames, loc);
    auto [re, im] = rfft(fr, norm, loc);
    return concat_({re, im}, -1, loc);
  });
}

NodeId Graph::spectrogram(NodeId x, int64_t frame_len, int64_t hop, WindowKind window, bool power,
                          bool log, Loc loc) {
  int64_t frames = frame_count(*this, x, frame_len, hop, "spectrogram", loc);
  DType t = shape(x).dtype();
  return transaction([&] {
    NodeId fr = frames_of(*this, x, frame_len, hop, frames, loc);
    if (window != WindowKind::Rectangular)
      fr = mul(fr, values_const(*this, t, {frame_len}, window_values(window, frame_len), loc), loc);
    auto [re, im] = rfft(fr, FftNorm::Backward, loc);
    NodeId v = power_of(*this, re, im, loc);
    if (!power) v = sqrt(v, loc);
    if (log) v = unary(*this, OpKind::Log, add(v, scalar_const(*this, t, 1e-8, loc), loc), loc);
    return v;
  });
}

NodeId Graph::fft_conv1d(NodeId a, NodeId b, int64_t n_fft, FftNorm norm, Loc loc) {
  int64_t la = check_real(*this, a, "fft_conv1d", loc),
          lb = check_real(*this, b, "fft_conv1d", loc);
  const std::string at = rlx::detail::at_loc(loc);
  if (shape(a).dtype() != shape(b).dtype())
    fail(ErrorKind::Type, "fft_conv1d: dtypes differ: ", short_str(shape(a)), " vs ",
         short_str(shape(b)), at);
  if (n_fft < 0) fail(ErrorKind::Value, "fft_conv1d: n_fft must be >= 0, got ", n_fft, at);
  int64_t full = la + lb - 1;
  int64_t n = n_fft >= full ? n_fft : int64_t(std::bit_ceil(uint64_t(full)));
  return transaction([&] {
    auto [ar, ai] = rfft_core(*this, pad_last(*this, a, n - la, loc), norm, loc);
    auto [br, bi] = rfft_core(*this, pad_last(*this, b, n - lb, loc), norm, loc);
    NodeId re = sub(mul(ar, br, loc), mul(ai, bi, loc), loc);
    NodeId im = add(mul(ar, bi, loc), mul(ai, br, loc), loc);
    return narrow_(irfft(re, im, n, norm, loc), -1, 0, full, loc);
  });
}

NodeId Graph::fftfreq_tensor(int64_t n, Loc loc) {
  if (n < 1 || n > kMaxHostConst)
    fail(ErrorKind::Value, "fftfreq_tensor: n must be in [1, 2^26], got ", n,
         rlx::detail::at_loc(loc));
  std::vector<double> f(static_cast<std::size_t>(n));
  for (int64_t k = 0; k < n; ++k)
    f[std::size_t(k)] = double(k <= (n - 1) / 2 ? k : k - n) / double(n);
  return values_const(*this, DType::F64, {n}, f, loc);
}

NodeId Graph::rfftfreq_tensor(int64_t n, Loc loc) {
  if (n < 1 || n > kMaxHostConst)
    fail(ErrorKind::Value, "rfftfreq_tensor: n must be in [1, 2^26], got ", n,
         rlx::detail::at_loc(loc));
  std::vector<double> f(static_cast<std::size_t>(n / 2 + 1));
  for (std::size_t k = 0; k < f.size(); ++k) f[k] = double(k) / double(n);
  return values_const(*this, DType::F64, {n / 2 + 1}, f, loc);
}

NodeId Graph::psd(NodeId re, NodeId im, Loc loc) {
  int64_t n = check_real(*this, re, "psd", loc);
  check_real(*this, im, "psd", loc);
  return transaction([&] {
    NodeId p = power_of(*this, re, im, loc);
    return div(p, scalar_const(*this, shape(p).dtype(), double(n), loc), loc);
  });
}

NodeId Graph::psd_real(NodeId x, FftNorm norm, Loc loc) {
  return transaction([&] {
    auto [re, im] = rfft(x, norm, loc);
    return psd(re, im, loc);
  });
}

// ---- Features from spectra

NodeId Graph::fft_butterfly_stage(NodeId state, NodeId gate, NodeId rev, NodeId tw_re, NodeId tw_im,
                                  uint32_t stage, uint32_t n_fft, Loc loc) {
  const std::string at = rlx::detail::at_loc(loc);
  int64_t len = check_real(*this, state, "fft_butterfly_stage", loc);
  int64_t n = n_fft;
  if (n < 2 || !std::has_single_bit(uint64_t(n)) || len != 2 * n)
    fail(ErrorKind::Shape,
         "fft_butterfly_stage: n_fft must be a power of two >= 2 with the state [.., 2 n_fft], got "
         "n_fft ",
         n, " and ", short_str(shape(state)), at);
  if (int64_t(stage) >= std::countr_zero(uint64_t(n)))
    fail(ErrorKind::Value, "fft_butterfly_stage: stage ", stage, " of an ", n, "-point FFT (",
         std::countr_zero(uint64_t(n)), " stages)", at);
  for (NodeId v : {gate, tw_re, tw_im}) {
    check_id(v, "fft_butterfly_stage");
    if (shape(v).rank() != 1 || shape(v).dims()[0] != Dim(n / 2))
      fail(ErrorKind::Shape, "fft_butterfly_stage: gate, tw_re and tw_im must be [", n / 2,
           "], got ", short_str(shape(v)), at);
  }
  check_id(rev, "fft_butterfly_stage");
  if (shape(rev).rank() != 1 || shape(rev).dims()[0] != Dim(n))
    fail(ErrorKind::Shape, "fft_butterfly_stage: rev must be [", n, "], got ",
         short_str(shape(rev)), at);
  const int64_t half = int64_t(1) << stage, span = 2 * half;
  // Per output element j: its butterfly's top and bottom inputs, the sign of the twiddled
  // term, the twiddle index and the butterfly index (into gate).
  std::vector<double> top(static_cast<std::size_t>(n)), bot(static_cast<std::size_t>(n)),
      sign(static_cast<std::size_t>(n)), twi(static_cast<std::size_t>(n)),
      bfly(static_cast<std::size_t>(n));
  for (int64_t j = 0; j < n; ++j) {
    int64_t pos = j % span, inner = pos % half;
    bool upper = pos < half;
    top[std::size_t(j)] = double(upper ? j : j - half);
    bot[std::size_t(j)] = double(upper ? j + half : j);
    sign[std::size_t(j)] = upper ? 1.0 : -1.0;
    twi[std::size_t(j)] = double(inner * (n / span));
    bfly[std::size_t(j)] = double((j / span) * half + inner);
  }
  DType t = shape(state).dtype();
  return transaction([&] {
    auto [re, im] = split_spectrum(state, loc);
    if (stage == 0) {
      re = gather_(re, rev, -1, loc);
      im = gather_(im, rev, -1, loc);
    }
    auto idx = [&](const std::vector<double>& v) {
      return values_const(*this, DType::I64, {n}, v, loc);
    };
    NodeId ti = idx(top), bi = idx(bot), wi = idx(twi), gi = idx(bfly);
    NodeId tr = gather_(re, ti, -1, loc), tim = gather_(im, ti, -1, loc);
    NodeId br = gather_(re, bi, -1, loc), bim = gather_(im, bi, -1, loc);
    NodeId wr = gather_(cast(tw_re, t, loc), wi, 0, loc),
           wim = gather_(cast(tw_im, t, loc), wi, 0, loc);
    NodeId s = values_const(*this, t, {n}, sign, loc);
    NodeId pr = mul(s, sub(mul(wr, br, loc), mul(wim, bim, loc), loc), loc);
    NodeId pi = mul(s, add(mul(wr, bim, loc), mul(wim, br, loc), loc), loc);
    NodeId g = gather_(cast(gate, t, loc), gi, 0, loc);
    NodeId one_minus = sub(scalar_const(*this, t, 1.0, loc), g, loc);
    NodeId out_re = add(mul(g, add(tr, pr, loc), loc), mul(one_minus, re, loc), loc);
    NodeId out_im = add(mul(g, add(tim, pi, loc), loc), mul(one_minus, im, loc), loc);
    return concat_({out_re, out_im}, -1, loc);
  });
}

NodeId Graph::log_mel(NodeId spectrum, NodeId filters, Loc loc) {
  int64_t len = check_real(*this, spectrum, "log_mel", loc, 2);
  const std::string at = rlx::detail::at_loc(loc);
  check_id(filters, "log_mel");
  const Shape fs = shape(filters);
  int64_t n_fft = len / 2, bins = n_fft / 2 + 1;
  if (len % 2 != 0 || fs.rank() != 2 || fs.dims()[1] != Dim(bins) ||
      fs.dtype() != shape(spectrum).dtype())
    fail(ErrorKind::Shape,
         "log_mel: needs a spectrum [.., 2 n_fft] and filters [n_mels, n_fft/2 + 1] of its dtype, "
         "got ",
         short_str(shape(spectrum)), " and ", short_str(fs), at);
  DType t = fs.dtype();
  return transaction([&] {
    NodeId re = narrow_(spectrum, -1, 0, bins, loc), im = narrow_(spectrum, -1, n_fft, bins, loc);
    NodeId mel = mm(power_of(*this, re, im, loc), transpose_(filters, {1, 0}, loc), loc);
    NodeId floor = add_inferred(Op(OpKind::Max), {mel, scalar_const(*this, t, 1e-10, loc)}, loc);
    NodeId ln = unary(*this, OpKind::Log, floor, loc);
    return div(ln, scalar_const(*this, t, std::numbers::ln10, loc), loc);
  });
}

NodeId Graph::welch_peaks(NodeId spectrum, int64_t k, int64_t n_segments, Loc loc) {
  int64_t len = check_real(*this, spectrum, "welch_peaks", loc, 2);
  const std::string at = rlx::detail::at_loc(loc);
  const Shape s = shape(spectrum);
  int64_t n_fft = len / 2, bins = n_fft / 2 + 1;
  if (s.rank() != 2 || len % 2 != 0 || s.dims()[0].is_dynamic())
    fail(ErrorKind::Shape,
         "welch_peaks: needs a static spectrum [batch * n_segments, 2 n_fft], got ", short_str(s),
         at);
  int64_t rows = s.dims()[0].size();
  if (n_segments < 1 || rows % n_segments != 0)
    fail(ErrorKind::Shape, "welch_peaks: ", rows,
         " rows are not a multiple of n_segments = ", n_segments, at);
  if (k < 1 || k > bins)
    fail(ErrorKind::Value, "welch_peaks: k must be in [1, ", bins, "], got ", k, at);
  int64_t batch = rows / n_segments;
  DType t = s.dtype();
  return transaction([&] {
    NodeId re = narrow_(spectrum, -1, 0, bins, loc), im = narrow_(spectrum, -1, n_fft, bins, loc);
    NodeId p = mean(reshape_(power_of(*this, re, im, loc), {batch, n_segments, bins}, loc), {1},
                    false, loc);
    std::vector<double> iota(static_cast<std::size_t>(bins));
    std::iota(iota.begin(), iota.end(), 0.0);
    NodeId bin_ids = values_const(*this, DType::I64, {bins}, iota, loc);
    NodeId masked = scalar_const(*this, t, -std::numeric_limits<double>::infinity(), loc);
    std::vector<NodeId> picks;
    for (int64_t i = 0; i < k; ++i) {
      NodeId arg =
          add_inferred(Op(OpKind::ArgMax, ArgReduceAttrs{1, true}), {p}, loc); // [batch, 1]
      picks.push_back(cast(arg, DType::F32, loc));
      if (i + 1 < k) p = where_(eq(bin_ids, arg, loc), masked, p, loc);
    }
    return k == 1 ? picks[0] : concat_(picks, 1, loc);
  });
}

NodeId Graph::band_power(NodeId x, float sample_rate,
                         std::span<const std::pair<float, float>> bands, Loc loc) {
  int64_t len = check_real(*this, x, "band_power", loc);
  const std::string at = rlx::detail::at_loc(loc);
  if (bands.empty()) fail(ErrorKind::Value, "band_power: needs at least one band", at);
  if (!(sample_rate > 0) || !std::isfinite(sample_rate))
    fail(ErrorKind::Value, "band_power: sample_rate must be positive, got ", sample_rate, at);
  int64_t n = int64_t(std::bit_ceil(uint64_t(len))), bins = n / 2 + 1, nb = int64_t(bands.size());
  std::vector<double> m(static_cast<std::size_t>(bins * nb), 0.0);
  for (int64_t k = 0; k < bins; ++k) {
    double f = double(k) * double(sample_rate) / double(n);
    for (int64_t j = 0; j < nb; ++j)
      if (f >= double(bands[std::size_t(j)].first) && f <= double(bands[std::size_t(j)].second))
        m[std::size_t(k * nb + j)] = 1.0;
  }
  return transaction([&] {
    auto [re, im] = rfft(x, FftNorm::Backward, loc);
    return mm(power_of(*this, re, im, loc),
              values_const(*this, shape(x).dtype(), {bins, nb}, m, loc), loc);
  });
}

NodeId Graph::differential_entropy(NodeId x, float sample_rate,
                                   std::span<const std::pair<float, float>> bands, Loc loc) {
  return transaction([&] {
    NodeId bp = band_power(x, sample_rate, bands, loc);
    DType t = shape(bp).dtype();
    NodeId scaled =
        mul(bp, scalar_const(*this, t, 2.0 * std::numbers::pi * std::numbers::e, loc), loc);
    NodeId lg = unary(*this, OpKind::Log, add(scaled, scalar_const(*this, t, 1e-8, loc), loc), loc);
    return mul(lg, scalar_const(*this, t, 0.5, loc), loc);
  });
}

// ---- Analytic signal

std::pair<NodeId, NodeId> Graph::hilbert(NodeId x, Loc loc) {
  int64_t n = check_real(*this, x, "hilbert", loc);
  std::vector<double> h(static_cast<std::size_t>(2 * n),
                        0.0); // the same gain on the re and im blocks
  for (int64_t k = 0; k < n; ++k) {
    double v = k == 0 || (n % 2 == 0 && k == n / 2) ? 1.0 : (k < (n + 1) / 2 ? 2.0 : 0.0);
    h[std::size_t(k)] = h[std::size_t(n + k)] = v;
  }
  return transaction([&] {
    NodeId spec = fft_norm(pad_last(*this, x, n, loc), false, FftNorm::Forward, loc);
    NodeId y = fft_norm(mul(spec, values_const(*this, shape(x).dtype(), {2 * n}, h, loc), loc),
                        true, FftNorm::Forward, loc);
    return split_spectrum(y, loc);
  });
}

NodeId Graph::envelope(NodeId x, Loc loc) {
  return transaction([&] {
    auto [re, im] = hilbert(x, loc);
    return sqrt(power_of(*this, re, im, loc), loc);
  });
}

NodeId Graph::instantaneous_phase(NodeId x, Loc loc) {
  return transaction([&] {
    auto [re, im] = hilbert(x, loc);
    DType t = shape(re).dtype();
    NodeId r = sqrt(power_of(*this, re, im, loc), loc);
    NodeId at = unary(*this, OpKind::Atan, div(im, add(r, re, loc), loc), loc);
    return mul(at, scalar_const(*this, t, 2.0, loc), loc);
  });
}

// ---- Filters

NodeId Graph::biquad(NodeId x, std::array<float, 3> b, std::array<float, 3> a, Loc loc) {
  check_real(*this, x, "biquad", loc);
  Filter f = filter_of(b, a);
  check_filter(f, "biquad", loc);
  return transaction([&] { return apply_filter(*this, x, f, nullptr, std::nullopt, loc); });
}

NodeId Graph::sosfilt(NodeId x, std::span<const SosSection> sections, Loc loc) {
  check_real(*this, x, "sosfilt", loc);
  std::vector<Filter> cascade = sos_cascade(sections, "sosfilt", loc);
  return transaction([&] {
    NodeId y = x;
    for (const Filter& f : cascade) y = apply_filter(*this, y, f, nullptr, std::nullopt, loc);
    return y;
  });
}

NodeId Graph::sosfiltfilt(NodeId x, std::span<const SosSection> sections, Loc loc) {
  check_real(*this, x, "sosfiltfilt", loc);
  std::vector<Filter> cascade = sos_cascade(sections, "sosfiltfilt", loc);
  // scipy: padlen = 3 (2 S + 1 - min(#(b2 == 0), #(a2 == 0))); section zi scaled by the DC
  // gain of the sections before it.
  int64_t zb = 0, za = 0;
  for (const Filter& f : cascade) {
    zb += f.b[2] == 0.0;
    za += f.a[2] == 0.0;
  }
  int64_t padlen = 3 * (2 * int64_t(cascade.size()) + 1 - std::min(zb, za));
  std::vector<std::vector<double>> zis;
  double scale = 1.0;
  for (const Filter& f : cascade) {
    std::vector<double> zi = lfilter_zi(f, "sosfiltfilt", loc);
    for (double& v : zi) v *= scale;
    zis.push_back(std::move(zi));
    scale *= (f.b[0] + f.b[1] + f.b[2]) / (f.a[0] + f.a[1] + f.a[2]);
  }
  return transaction(
      [&] { return zero_phase(*this, x, cascade, zis, padlen, "sosfiltfilt", loc); });
}

NodeId Graph::fir_filtfilt(NodeId x, std::span<const float> taps, Loc loc) {
  check_real(*this, x, "fir_filtfilt", loc);
  const float one = 1.0f;
  Filter f = filter_of(taps, std::span(&one, 1));
  check_filter(f, "fir_filtfilt", loc);
  int64_t padlen = 3 * int64_t(taps.size());
  std::vector<std::vector<double>> zis{lfilter_zi(f, "fir_filtfilt", loc)};
  return transaction([&] { return zero_phase(*this, x, {f}, zis, padlen, "fir_filtfilt", loc); });
}

NodeId Graph::resample_poly(NodeId x, int64_t up, int64_t down, std::span<const float> taps,
                            Loc loc) {
  int64_t n = check_real(*this, x, "resample_poly", loc);
  const std::string at = rlx::detail::at_loc(loc);
  if (up < 1 || down < 1 || up > kMaxHostConst || down > kMaxHostConst)
    fail(ErrorKind::Value, "resample_poly: up and down must be >= 1, got ", up, " and ", down, at);
  if (taps.empty()) fail(ErrorKind::Value, "resample_poly: needs filter taps", at);
  int64_t g = std::gcd(up, down);
  up /= g;
  down /= g;
  if (up == 1 && down == 1) return x; // scipy returns the signal unfiltered
  if (n > kMaxHostConst / up)
    fail(ErrorKind::Value, "resample_poly: the upsampled signal is too long", at);
  const Shape xs = shape(x);
  if (!xs.is_static())
    fail(ErrorKind::Shape, "resample_poly: needs a static shape, got ", short_str(xs), at);
  // out[j] = up * sum_k h[k] u[j down + half - k], u = x with up - 1 zeros after each sample,
  // half = (len h - 1) / 2: a causal FIR over u, read from `half` on every `down`-th sample.
  int64_t n_out = (n * up + down - 1) / down, half = (int64_t(taps.size()) - 1) / 2;
  std::vector<double> h(taps.begin(), taps.end());
  for (double& v : h) v *= double(up);
  Filter f{h, {1.0}};
  check_filter(f, "resample_poly", loc);
  return transaction([&] {
    NodeId u = x;
    std::vector<int64_t> dims = xs.sizes();
    if (up > 1) {
      std::vector<int64_t> col = dims;
      col.push_back(1);
      u = pad_last(*this, reshape_(x, col, loc), up - 1, loc);
      dims.back() = n * up;
      u = reshape_(u, dims, loc);
    }
    int64_t need = (n_out - 1) * down + half + 1;
    if (need > n * up) u = pad_last(*this, u, need - n * up, loc);
    NodeId y = apply_filter(*this, u, f, nullptr, std::nullopt, loc);
    return slice(y, -1, half, n_out, down, loc);
  });
}

} // namespace rlx::ir
