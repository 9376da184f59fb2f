// examples/spectrogram.cpp -- a log-mel spectrogram of a synthetic chirp, written as .npy.
//
//   spectrogram [OUT.npy]     (default chirp_logmel.npy)
//
// One second of a linear chirp from 100 Hz to 3500 Hz sampled at 8 kHz; Hann-windowed frames
// of 512 samples every 128 (Graph::spectrogram, reached from Tensor code through rlx::apply);
// 40 triangular mel filters (HTK mel scale) made on the host; log10 of the filtered power,
// floored at 1e-10. The chirp rises, so the loudest mel band of each frame must rise too: the
// program prints where it starts and ends and whether it ever falls.
#include <rlx/apply.hpp>
#include <rlx/rlx.hpp>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <numbers>
#include <vector>

using rlx::Tensor;

namespace {

constexpr double kRate = 8000, kF0 = 100, kF1 = 3500;
constexpr int64_t kSamples = 8000, kFrame = 512, kHop = 128, kMels = 40;

double hz_to_mel(double f) { return 2595.0 * std::log10(1.0 + f / 700.0); }
double mel_to_hz(double m) { return 700.0 * (std::pow(10.0, m / 2595.0) - 1.0); }

/// [kMels, kFrame/2 + 1] triangular filters, centers evenly spaced in mel from 0 to Nyquist.
Tensor mel_filters() {
  const int64_t bins = kFrame / 2 + 1;
  std::vector<double> edges(kMels + 2);
  for (std::size_t i = 0; i < edges.size(); ++i)
    edges[i] = mel_to_hz(hz_to_mel(kRate / 2) * double(i) / double(kMels + 1));
  std::vector<float> w(std::size_t(kMels * bins), 0.0f);
  for (int64_t m = 0; m < kMels; ++m)
    for (int64_t k = 0; k < bins; ++k) {
      double f = double(k) * kRate / double(kFrame);
      double lo = edges[std::size_t(m)], mid = edges[std::size_t(m + 1)],
             hi = edges[std::size_t(m + 2)];
      double v = f < mid ? (f - lo) / (mid - lo) : (hi - f) / (hi - mid);
      w[std::size_t(m * bins + k)] = float(std::max(0.0, v));
    }
  return Tensor::from_vector(w, {kMels, bins});
}

} // namespace

int main(int argc, char** argv) {
  const std::string out = argc > 1 ? argv[1] : "chirp_logmel.npy";
  // x(t) = sin(2 pi (f0 t + (f1 - f0) t^2 / 2)) over one second.
  Tensor t = rlx::arange(0, double(kSamples), 1, rlx::DType::F32) / float(kRate);
  Tensor phase = (t * float(kF0) + t * t * float((kF1 - kF0) / 2)) * float(2 * std::numbers::pi);
  Tensor x = rlx::sin(phase);

  Tensor power = rlx::apply({x}, [](rlx::ir::Graph& g, std::span<const rlx::ir::NodeId> in) {
    return g.spectrogram(in[0], kFrame, kHop, rlx::ir::WindowKind::Hann, /*power=*/true,
                         /*log=*/false);
  }); // [frames, 257]
  Tensor mel = rlx::matmul(power, mel_filters().transpose());
  Tensor logmel = rlx::log(rlx::maximum(mel, 1e-10f)) / float(std::numbers::ln10);
  rlx::save_npy(out, logmel);

  std::vector<int64_t> peak = logmel.argmax(-1).to_vector<int64_t>();
  bool falls = false;
  for (std::size_t i = 1; i < peak.size(); ++i) falls |= peak[i] < peak[i - 1];
  std::cout << "log-mel spectrogram [" << logmel.sizes()[0] << ", " << logmel.sizes()[1]
            << "] written to " << out << "\n";
  std::cout << "loudest mel band: " << peak.front() << " in the first frame, " << peak.back()
            << " in the last, falls: " << (falls ? "yes" : "no") << "\n";
  return falls ? 1 : 0;
}
