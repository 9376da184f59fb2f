// src/interp/spectral.cpp -- spectral kernels: fft (a double-precision FFT of our own: radix-2
// for powers of two, a direct DFT for short rows, Bluestein's chirp transform otherwise), lfilter
// (direct form II transposed in double), conjugate and complex_norm_sq. Results round once to
// the output dtype. The JIT runs fft through FFTW instead (jit/fftw_kernels.cpp), so the
// two are independent implementations checked against each other and against numpy.
#include "kernels.hpp"

#include <bit>
#include <cmath>
#include <complex>
#include <numbers>

namespace rlx::interp::detail {

using ir::DType;
using ir::OpKind;

namespace {

using cd = std::complex<double>;

/// exp(sign * 2 pi i * k / n) with k reduced mod n first, so large k lose no accuracy.
cd unit_root(int64_t k, int64_t n, double sign) {
  k %= n;
  double ang = 2.0 * std::numbers::pi * double(k) / double(n);
  return {std::cos(ang), sign * std::sin(ang)};
}

/// In-place radix-2 FFT (n a power of two); sign -1 forward, +1 inverse; unscaled.
void fft_pow2(std::vector<cd>& a, double sign) {
  const std::size_t n = a.size();
  if (n < 2) return;
  for (std::size_t i = 1, j = 0; i < n; ++i) { // bit-reversal permutation
    std::size_t bit = n >> 1;
    for (; j & bit; bit >>= 1) j ^= bit;
    j ^= bit;
    if (i < j) std::swap(a[i], a[j]);
  }
  std::vector<cd> tw(n / 2);
  for (std::size_t k = 0; k < n / 2; ++k) tw[k] = unit_root(int64_t(k), int64_t(n), sign);
  for (std::size_t len = 2; len <= n; len <<= 1) {
    std::size_t half = len / 2, step = n / len;
    for (std::size_t i = 0; i < n; i += len)
      for (std::size_t j = 0; j < half; ++j) {
        cd u = a[i + j], v = a[i + j + half] * tw[j * step];
        a[i + j] = u + v;
        a[i + j + half] = u - v;
      }
  }
}

/// Unscaled DFT of any length: X[k] = sum_t x[t] exp(sign 2 pi i k t / n).
void dft(std::vector<cd>& x, double sign) {
  const int64_t n = int64_t(x.size());
  if (n < 2) return;
  if (std::has_single_bit(uint64_t(n))) return fft_pow2(x, sign);
  if (n <= 64) { // direct, with exactly reduced twiddles
    std::vector<cd> out(x.size());
    for (int64_t k = 0; k < n; ++k) {
      cd s = 0;
      for (int64_t t = 0; t < n; ++t) s += x[std::size_t(t)] * unit_root(k * t, n, sign);
      out[std::size_t(k)] = s;
    }
    x = std::move(out);
    return;
  }
  // Bluestein: k t = (k^2 + t^2 - (k - t)^2) / 2 turns the DFT into a convolution with the
  // chirp w[k] = exp(sign pi i k^2 / n), done by power-of-two FFTs of length m >= 2n - 1.
  std::size_t m = std::bit_ceil(uint64_t(2 * n - 1));
  std::vector<cd> w(static_cast<std::size_t>(n), 0.0);
  for (int64_t k = 0; k < n; ++k) w[std::size_t(k)] = unit_root(k * k % (2 * n), 2 * n, sign);
  std::vector<cd> a(m, 0.0), b(m, 0.0);
  for (int64_t k = 0; k < n; ++k) a[std::size_t(k)] = x[std::size_t(k)] * w[std::size_t(k)];
  b[0] = std::conj(w[0]);
  for (int64_t k = 1; k < n; ++k)
    b[std::size_t(k)] = b[m - std::size_t(k)] = std::conj(w[std::size_t(k)]);
  fft_pow2(a, -1.0);
  fft_pow2(b, -1.0);
  for (std::size_t i = 0; i < m; ++i) a[i] *= b[i];
  fft_pow2(a, 1.0);
  for (int64_t k = 0; k < n; ++k)
    x[std::size_t(k)] = w[std::size_t(k)] * a[std::size_t(k)] / double(m);
}

Buffer fft(const ir::Node& n, const Buffer& x) {
  const auto& attrs = n.op.attrs<ir::FftAttrs>();
  Buffer out = Buffer::uninitialized(n.shape);
  const bool complex = ir::is_complex(x.dtype());
  const int64_t last = x.shape().sizes().empty() ? 1 : x.shape().sizes().back();
  const int64_t len = complex ? last : last / 2; // complex values per row
  if (last == 0 || x.numel() == 0) return out;
  const int64_t rows = x.numel() / last;
  double scale = 1.0;
  if (attrs.norm == ir::FftNorm::Ortho) scale = 1.0 / std::sqrt(double(len));
  if (attrs.norm == ir::FftNorm::Forward && attrs.inverse) scale = 1.0 / double(len);
  const double sign = attrs.inverse ? 1.0 : -1.0;
  std::vector<cd> v(static_cast<std::size_t>(len));
  for (int64_t r = 0; r < rows; ++r) {
    int64_t base = r * last;
    for (int64_t k = 0; k < len; ++k)
      v[std::size_t(k)] =
          complex ? cd(x.get_c64(base + k)) : cd(x.get_f64(base + k), x.get_f64(base + len + k));
    dft(v, sign);
    for (int64_t k = 0; k < len; ++k) {
      cd y = v[std::size_t(k)] * scale;
      if (complex) {
        out.set_c64(base + k, {float(y.real()), float(y.imag())});
      } else {
        out.set_f64(base + k, y.real());
        out.set_f64(base + len + k, y.imag());
      }
    }
  }
  return out;
}

Buffer lfilter(const ir::Node& n, Operands in) {
  const Buffer &x = *in[0], &b = *in[1], &a = *in[2];
  const int64_t nb = b.numel(), na = a.numel(), order = std::max(nb, na) - 1;
  const double a0 = a.get_f64(0);
  if (a0 == 0.0 || !std::isfinite(a0))
    fail(ErrorKind::Value, "lfilter: a[0] must be finite and nonzero, got ", a0);
  std::vector<double> bb(static_cast<std::size_t>(order + 1), 0.0),
      aa(static_cast<std::size_t>(order + 1), 0.0);
  for (int64_t i = 0; i < nb; ++i) bb[std::size_t(i)] = b.get_f64(i) / a0;
  for (int64_t i = 0; i < na; ++i) aa[std::size_t(i)] = a.get_f64(i) / a0;
  Buffer out = Buffer::uninitialized(n.shape);
  const int64_t len = x.shape().sizes().back();
  const int64_t rows = len ? x.numel() / len : 0;
  std::vector<int64_t> state_dims(x.shape().sizes());
  state_dims.back() = order;
  const ir::Shape state_shape(std::vector<ir::Dim>(state_dims.begin(), state_dims.end()),
                              x.dtype());
  std::optional<BroadcastIndex> zi_index;
  if (in.size() == 4) zi_index.emplace(in[3]->shape(), state_shape);
  std::vector<double> z(static_cast<std::size_t>(order), 0.0);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t k = 0; k < order; ++k)
      z[std::size_t(k)] = zi_index ? in[3]->get_f64((*zi_index)(r * order + k)) : 0.0;
    for (int64_t t = 0; t < len; ++t) {
      double xt = x.get_f64(r * len + t);
      double y = bb[0] * xt + (order ? z[0] : 0.0);
      for (int64_t k = 0; k + 1 < order; ++k)
        z[std::size_t(k)] =
            bb[std::size_t(k + 1)] * xt + z[std::size_t(k + 1)] - aa[std::size_t(k + 1)] * y;
      if (order)
        z[std::size_t(order - 1)] = bb[std::size_t(order)] * xt - aa[std::size_t(order)] * y;
      out.set_f64(r * len + t, y);
    }
  }
  return out;
}

} // namespace

RLX_KERNEL(Fft) { return fft(n, *in[0]); }
RLX_KERNEL(Lfilter) { return lfilter(n, in); }
RLX_KERNEL(Conjugate) {
  Buffer out = Buffer::uninitialized(n.shape);
  for (int64_t i = 0; i < out.numel(); ++i) out.set_c64(i, std::conj(in[0]->get_c64(i)));
  return out;
}
RLX_KERNEL(ComplexNormSq) {
  Buffer out = Buffer::uninitialized(n.shape);
  for (int64_t i = 0; i < out.numel(); ++i) {
    cd z(in[0]->get_c64(i));
    out.set_f64(i, z.real() * z.real() + z.imag() * z.imag());
  }
  return out;
}

} // namespace rlx::interp::detail
