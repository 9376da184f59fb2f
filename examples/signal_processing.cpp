// examples/signal_processing.cpp -- a signal-processing script on rlx Tensors, as a user of
// numpy.fft and scipy.signal would write it: two tones in noise, their frequencies found from a
// windowed rfft's local maxima, a biquad low-pass (scipy.signal.lfilter) that attenuates the
// upper tone, and an STFT whose inverse gives the signal back. Exits non-zero when a check
// fails (the examples suite runs it).
#include <rlx/rlx.hpp>

#include <cmath>
#include <cstdio>
#include <numbers>

namespace {

using rlx::Tensor;

/// The two largest local maxima of a magnitude spectrum: (frequencies in Hz, magnitudes).
std::pair<std::vector<double>, std::vector<float>> two_peaks(const Tensor& mag,
                                                             const Tensor& freqs) {
  Tensor local = (mag > rlx::roll(mag, 1)) && (mag >= rlx::roll(mag, -1));
  auto [values, at] = rlx::topk(rlx::where(local, mag, 0.f), 2);
  return {rlx::take(freqs, at).to_vector<double>(), values.to_vector<float>()};
}

} // namespace

int main() {
  const double fs = 8000.0;
  const int64_t n = 8000; // one second: 1 Hz bins
  const double f1 = 440.0, f2 = 1250.0;
  Tensor t = rlx::arange(0, double(n), 1.0, rlx::DType::F32) / float(fs);
  const float two_pi = 2.f * std::numbers::pi_v<float>;
  Tensor x = rlx::sin(two_pi * float(f1) * t) + 0.5f * rlx::sin(two_pi * float(f2) * t) +
             0.05f * rlx::random::normal(7, {n});

  // ---- Spectrum: the two tones are the two largest local maxima of |rfft(x * hann)|.
  Tensor window = rlx::fft::hann_window(n);
  Tensor freqs = rlx::fft::rfftfreq(n, 1.0 / fs);
  auto [found, height] = two_peaks(rlx::abs(rlx::fft::rfft(x * window)), freqs);
  std::printf("tones found at %.1f Hz and %.1f Hz\n", found[0], found[1]);
  bool ok = std::abs(found[0] - f1) <= 1.0 && std::abs(found[1] - f2) <= 1.0;

  // ---- Low-pass at 600 Hz (the RBJ cookbook's biquad, Q = 1/sqrt 2): the upper tone drops.
  const double w0 = 2.0 * std::numbers::pi * 600.0 / fs, alpha = std::sin(w0) / std::sqrt(2.0);
  const double cw = std::cos(w0), a0 = 1.0 + alpha;
  Tensor b =
      rlx::tensor({float((1 - cw) / 2 / a0), float((1 - cw) / a0), float((1 - cw) / 2 / a0)});
  Tensor a = rlx::tensor({1.f, float(-2 * cw / a0), float((1 - alpha) / a0)});
  Tensor y = rlx::lfilter(x, b, a);
  auto [found_y, height_y] = two_peaks(rlx::abs(rlx::fft::rfft(y * window)), freqs);
  double before = 20 * std::log10(height[1] / height[0]);
  double after = 20 * std::log10(height_y[1] / height_y[0]);
  std::printf("upper tone relative to the lower: %.1f dB before the low-pass, %.1f dB after\n",
              before, after);
  ok = ok && std::abs(found_y[0] - f1) <= 1.0 && after < before - 8.0;

  // ---- STFT: the loudest bin of every frame is the 440 Hz tone, and istft inverts stft.
  const int64_t n_fft = 512, hop = 128;
  Tensor hann = rlx::fft::hann_window(n_fft);
  Tensor z = rlx::fft::stft(x, n_fft, hop, std::nullopt, hann);
  // The first and last two frames reach into stft's reflect padding; the others are all tone.
  Tensor loudest = rlx::argmax(rlx::abs(z), 0); // [frames]
  const int64_t frames = loudest.size(0);
  int64_t expected_bin = std::lround(f1 * double(n_fft) / fs);
  Tensor inner = rlx::narrow(loudest, 0, 2, frames - 4);
  double share = (inner == expected_bin).astype(rlx::DType::F32).mean().item<float>();
  Tensor back = rlx::fft::istft(z, n_fft, hop, std::nullopt, hann, true, false, std::nullopt, n);
  float err = rlx::max(rlx::abs(back - x)).item<float>();
  std::printf("stft %s: bin %lld loudest in %.0f%% of the inner frames; istft error %.2e\n",
              rlx::ir::short_str(z.shape()).c_str(), (long long)expected_bin, 100 * share, err);
  ok = ok && share == 1.0 && err < 1e-4f;
  std::printf("%s\n", ok ? "ok" : "FAILED");
  return ok ? 0 : 1;
}
