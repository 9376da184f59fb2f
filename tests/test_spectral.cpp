// tests/test_spectral.cpp -- the spectral and signal builders against numpy.fft / scipy.signal
// (tests/fixtures/spectral/, written by tests/fixtures/make_spectral.py with the same
// parameters as below), on the interpreter (our own double FFT) and on the JIT (FFTW).
#include <rlx/all.hpp>
#include <rlx/io/npy.hpp>

#include "../jit/fftw_kernels.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <numbers>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

using namespace rlx;
using ir::DType;
using ir::FftNorm;
using ir::NodeId;
using rlx::Buffer;
namespace fs = std::filesystem;

namespace {

Buffer load(const std::string& c, const std::string& name) {
  return io::load_npy(
      (fs::path(RLX_SOURCE_DIR) / "tests" / "fixtures" / "spectral" / c / (name + ".npy"))
          .string());
}

/// A graph under construction with its fed inputs.
struct G {
  ir::Graph g{"spectral"};
  std::vector<Buffer> feeds;
  NodeId in(Buffer b) {
    NodeId id = g.input("in" + std::to_string(feeds.size()), b.shape());
    feeds.push_back(std::move(b));
    return id;
  }
  std::vector<Buffer> run(Backend backend) const {
    std::vector<const Buffer*> leaves;
    for (const Buffer& b : feeds) leaves.push_back(&b);
    return compile(g, backend)->run(leaves);
  }
};

double max_abs(const Buffer& b) {
  double m = 0;
  for (int64_t i = 0; i < b.numel(); ++i) {
    std::complex<float> z = b.get_c64(i);
    m = std::max({m, std::fabs(b.dtype() == DType::C64 ? double(z.real()) : b.get_f64(i)),
                  std::fabs(double(z.imag()))});
  }
  return m;
}

/// Every element within tol * max(|want|, 1e-3) (transforms err relative to the norm of their
/// row, not to each bin; an exact zero bin comes out at rounding level of the row's size).
void expect_close(const Buffer& got, const Buffer& want, double tol, const std::string& what) {
  INFO(what << ": got " << ir::short_str(got.shape()) << ", want " << ir::short_str(want.shape()));
  REQUIRE(got.shape() == want.shape());
  double bound = tol * std::max(max_abs(want), 1e-3), worst = 0;
  for (int64_t i = 0; i < want.numel(); ++i) {
    std::complex<double> a(got.get_c64(i)), b(want.get_c64(i));
    if (got.dtype() != DType::C64) a = got.get_f64(i), b = want.get_f64(i);
    worst = std::max(worst, std::abs(a - b));
  }
  CHECK_MESSAGE(worst <= bound, what << ": max error " << worst << " > " << bound);
}

/// Build outputs, run on both backends, compare each with its expected array.
void check(G& g, const std::vector<NodeId>& outs, const std::vector<Buffer>& want, double tol,
           const std::string& what) {
  g.g.set_outputs(outs);
  for (Backend b : {Backend::Interp, Backend::Jit}) {
    std::vector<Buffer> got = g.run(b);
    REQUIRE(got.size() == want.size());
    for (std::size_t i = 0; i < want.size(); ++i)
      expect_close(got[i], want[i], tol,
                   what + (b == Backend::Jit ? " [jit] #" : " [interp] #") + std::to_string(i));
  }
}

constexpr double kF64 = 1e-11; // a few thousand double ulps of the largest value
constexpr double kF32 = 3e-6;  // a few f32 ulps of the largest value (a dozen roundings)

const char* norm_name(FftNorm n) {
  return n == FftNorm::Backward ? "Backward" : n == FftNorm::Forward ? "Forward" : "Ortho";
}
constexpr FftNorm kNorms[] = {FftNorm::Backward, FftNorm::Forward, FftNorm::Ortho};

std::vector<ir::Graph::SosSection> sections(const Buffer& sos) {
  std::vector<ir::Graph::SosSection> out;
  for (int64_t s = 0; s < sos.shape().sizes()[0]; ++s) {
    ir::Graph::SosSection sec;
    for (int i = 0; i < 3; ++i) {
      sec.first[std::size_t(i)] = float(sos.get_f64(s * 6 + i));
      sec.second[std::size_t(i)] = float(sos.get_f64(s * 6 + 3 + i));
    }
    out.push_back(sec);
  }
  return out;
}

std::vector<float> floats(const Buffer& b) { return b.to_f32(); }

} // namespace

TEST_CASE("fft matches numpy for radix-2, prime and composite lengths in every norm mode") {
  for (int n : {1, 2, 3, 5, 7, 16, 17, 97, 100, 128, 243}) {
    G g;
    NodeId x = g.in(load("fft_sizes", "x_" + std::to_string(n)));
    std::vector<NodeId> outs;
    std::vector<Buffer> want;
    for (bool inv : {false, true})
      for (FftNorm norm : kNorms) {
        outs.push_back(g.g.fft_norm(x, inv, norm));
        want.push_back(load("fft_sizes", "want_" + std::to_string(n) + (inv ? "_inv_" : "_fwd_") +
                                             norm_name(norm)));
      }
    check(g, outs, want, kF64, "fft n=" + std::to_string(n));
  }
}

TEST_CASE(
    "a 1000-point f32 fft agrees with numpy on both backends, and fft(x, false) is unnormalized") {
  G g;
  NodeId x = g.in(load("fft_f32_long", "x"));
  check(g, {g.g.fft(x, false)}, {load("fft_f32_long", "want")}, kF32, "fft f32 n=1000");
}

TEST_CASE(
    "rfft pads to a power of two, rfft_exact does not, fft_real gives the full padded spectrum") {
  const std::string c = "rfft_family";
  for (FftNorm norm : kNorms) {
    G g;
    NodeId x = g.in(load(c, "x"));
    auto [re, im] = g.g.rfft(x, norm);
    auto [er, ei] = g.g.rfft_exact(x, 13, norm);
    NodeId mag = g.g.rfft_exact_mag(x, 13, norm);
    auto [fr, fi] = g.g.fft_real(x, norm);
    auto [br, bi] = g.g.fft_batch_real(x, norm);
    std::string s = norm_name(norm);
    check(g, {re, im, er, ei, mag, fr, fi, br, bi},
          {load(c, "rfft_re_" + s), load(c, "rfft_im_" + s), load(c, "exact_re_" + s),
           load(c, "exact_im_" + s), load(c, "exact_mag_" + s), load(c, "full_re_" + s),
           load(c, "full_im_" + s), load(c, "full_re_" + s), load(c, "full_im_" + s)},
          kF64, std::string("rfft family ") + s);
  }
  G g;
  NodeId x = g.in(load(c, "x"));
  NodeId xf = g.in(load(c, "xf"));
  check(g, {g.g.psd_real(x, FftNorm::Backward), g.g.rfft_exact_mag(xf, 9, FftNorm::Backward)},
        {load(c, "psd_real"), load(c, "exact_mag_f32")}, kF32, "psd_real and f32 magnitude");
}

TEST_CASE("irfft matches numpy's irfft with extra or missing bins, and inverts rfft_exact") {
  const std::string c = "irfft_family";
  for (int n : {7, 8, 13, 1}) {
    std::string s = std::to_string(n);
    G g;
    NodeId re = g.in(load(c, "re_" + s)), im = g.in(load(c, "im_" + s));
    NodeId sre = g.in(load(c, "short_re_" + s)), sim = g.in(load(c, "short_im_" + s));
    NodeId x = g.in(load(c, "signal_" + s));
    std::vector<NodeId> outs;
    std::vector<Buffer> want;
    for (FftNorm norm : kNorms) {
      outs.push_back(g.g.irfft(re, im, n, norm));
      want.push_back(load(c, "want_" + s + "_" + norm_name(norm)));
    }
    outs.push_back(g.g.irfft(sre, sim, n, FftNorm::Forward));
    want.push_back(load(c, "short_want_" + s));
    for (FftNorm norm : {FftNorm::Forward, FftNorm::Ortho}) { // the round trips
      auto [xr, xi] = g.g.rfft_exact(x, n, norm);
      outs.push_back(g.g.irfft(xr, xi, n, norm));
      want.push_back(load(c, "signal_" + s));
    }
    check(g, outs, want, kF64, "irfft n=" + s);
  }
  G g;
  NodeId re = g.in(load(c, "spec_re")), im = g.in(load(c, "spec_im"));
  check(g,
        {g.g.ifft_spectrum(re, im, FftNorm::Forward), g.g.ifft_spectrum(re, im, FftNorm::Backward),
         g.g.psd(re, im)},
        {load(c, "ifft_spectrum_Forward"), load(c, "ifft_spectrum_Backward"), load(c, "psd")}, kF64,
        "ifft_spectrum and psd");
}

TEST_CASE("stft and spectrogram frame, window, pad and transform like numpy and scipy windows") {
  const std::string c = "stft_and_spectrogram";
  G g;
  NodeId x = g.in(load(c, "x"));
  NodeId xf = g.in(load(c, "xf"));
  std::vector<NodeId> outs{g.g.stft(x, 12, 5, FftNorm::Backward),
                           g.g.stft(x, 12, 5, FftNorm::Ortho)};
  std::vector<Buffer> want{load(c, "stft_Backward"), load(c, "stft_Ortho")};
  using ir::WindowKind;
  for (auto [w, name] :
       {std::pair{WindowKind::Rectangular, "Rectangular"}, std::pair{WindowKind::Hann, "Hann"},
        std::pair{WindowKind::Hamming, "Hamming"}, std::pair{WindowKind::Blackman, "Blackman"}}) {
    outs.push_back(g.g.spectrogram(x, 12, 5, w, true, true));
    want.push_back(load(c, std::string("spec_") + name + "_power_log"));
    outs.push_back(g.g.spectrogram(x, 12, 5, w, false, false));
    want.push_back(load(c, std::string("spec_") + name + "_mag"));
  }
  CHECK(g.g.shape(outs[0]) == ir::Shape({8, 2, 18}, DType::F64));
  check(g, outs, want, kF64, "stft / spectrogram");
  G h;
  NodeId y = h.in(load(c, "xf"));
  check(h, {h.g.spectrogram(y, 16, 8, WindowKind::Hann, true, false)},
        {load(c, "spec_f32_hann_power")}, kF32, "f32 spectrogram");
  (void)xf;
}

TEST_CASE("fft_conv1d is numpy's full convolution, scaled as its norm says") {
  const std::string c = "fft_conv1d";
  G g;
  NodeId a = g.in(load(c, "a")), b = g.in(load(c, "b"));
  check(g,
        {g.g.fft_conv1d(a, b, 0, FftNorm::Backward), g.g.fft_conv1d(a, b, 0, FftNorm::Forward),
         g.g.fft_conv1d(a, b, 0, FftNorm::Ortho), g.g.fft_conv1d(a, b, 64, FftNorm::Forward)},
        {load(c, "want_n0_Backward"), load(c, "want_n0_Forward"), load(c, "want_n0_Ortho"),
         load(c, "want_n64_Forward")},
        kF64, "fft_conv1d");
}

TEST_CASE("fftfreq_tensor and rfftfreq_tensor are numpy's sample frequencies") {
  G g;
  std::vector<NodeId> outs;
  std::vector<Buffer> want;
  for (int n : {1, 8, 9}) {
    outs.push_back(g.g.fftfreq_tensor(n));
    want.push_back(load("fftfreq", "fftfreq_" + std::to_string(n)));
    outs.push_back(g.g.rfftfreq_tensor(n));
    want.push_back(load("fftfreq", "rfftfreq_" + std::to_string(n)));
  }
  check(g, outs, want, 1e-15, "fftfreq");
}

TEST_CASE("hilbert, envelope and instantaneous_phase match scipy.signal.hilbert (odd and even n)") {
  const std::string c = "hilbert_family";
  for (std::string v : {"x", "xe"}) {
    G g;
    NodeId x = g.in(load(c, v));
    auto [re, im] = g.g.hilbert(x);
    check(g, {re, im, g.g.envelope(x)},
          {load(c, v + "_re"), load(c, v + "_im"), load(c, v + "_envelope")}, kF64, "hilbert " + v);
    // The phase: angles equal modulo 2 pi (pi and -pi are the same direction).
    G p;
    NodeId xp = p.in(load(c, v));
    p.g.set_outputs({p.g.instantaneous_phase(xp)});
    Buffer want = load(c, v + "_phase");
    for (Backend b : {Backend::Interp, Backend::Jit}) {
      Buffer got = p.run(b)[0];
      REQUIRE(got.shape() == want.shape());
      double worst = 0;
      for (int64_t i = 0; i < got.numel(); ++i)
        worst = std::max(worst, std::fabs(std::remainder(got.get_f64(i) - want.get_f64(i),
                                                         2 * std::numbers::pi)));
      CHECK_MESSAGE(worst < 1e-8, "phase " << v << " max error " << worst);
    }
  }
}

TEST_CASE("biquad, sosfilt, sosfiltfilt and fir_filtfilt match scipy.signal") {
  const std::string c = "filters";
  std::vector<ir::Graph::SosSection> lp = sections(load(c, "sos")),
                                     bp = sections(load(c, "sos_bp"));
  std::vector<float> taps = floats(load(c, "taps"));
  G g;
  NodeId x = g.in(load(c, "x"));
  check(g,
        {g.g.biquad(x, {0.3f, 0.2f, 0.1f}, {1.2f, -0.5f, 0.2f}), g.g.sosfilt(x, lp),
         g.g.sosfilt(x, bp), g.g.sosfiltfilt(x, lp), g.g.sosfiltfilt(x, bp),
         g.g.fir_filtfilt(x, taps)},
        {load(c, "biquad"), load(c, "sosfilt"), load(c, "sosfilt_bp"), load(c, "sosfiltfilt"),
         load(c, "sosfiltfilt_bp"), load(c, "filtfilt")},
        1e-9, "filters f64");
  G h;
  NodeId xf = h.in(load(c, "xf"));
  check(h, {h.g.sosfiltfilt(xf, lp), h.g.fir_filtfilt(xf, taps)},
        {load(c, "sosfiltfilt_f32"), load(c, "filtfilt_f32")}, 2e-5, "filters f32");
}

TEST_CASE("resample_poly matches scipy for up, down and reducible ratios") {
  const std::string c = "resample_poly";
  G g;
  NodeId x = g.in(load(c, "x"));
  std::vector<NodeId> outs;
  std::vector<Buffer> want;
  for (auto [up, down] : {std::pair{3, 2}, {2, 5}, {4, 6}, {1, 3}, {5, 1}}) {
    std::string s = std::to_string(up) + "_" + std::to_string(down);
    outs.push_back(g.g.resample_poly(x, up, down, floats(load(c, "taps_" + s))));
    want.push_back(load(c, "want_" + s));
  }
  check(g, outs, want, kF64, "resample_poly");
}

TEST_CASE("band_power and differential_entropy sum the power of the bins inside each band") {
  const std::string c = "band_power";
  const std::vector<std::pair<float, float>> bands{{1, 4}, {4, 8}, {8, 13}, {13, 30}, {30, 64}};
  G g;
  NodeId x = g.in(load(c, "x"));
  check(g, {g.g.band_power(x, 128.0f, bands), g.g.differential_entropy(x, 128.0f, bands)},
        {load(c, "band_power"), load(c, "differential_entropy")}, kF64, "band power");
}

TEST_CASE("log_mel floors at 1e-10 and welch_peaks ranks the averaged power") {
  const std::string c = "log_mel_and_welch";
  G g;
  NodeId s = g.in(load(c, "spectrum")), f = g.in(load(c, "filters"));
  NodeId peaks = g.g.welch_peaks(s, 3, 3);
  CHECK(g.g.shape(peaks) == ir::Shape({2, 3}, DType::F32));
  check(g, {g.g.log_mel(s, f), peaks}, {load(c, "log_mel"), load(c, "welch_peaks")}, kF64,
        "log_mel / welch_peaks");
}

TEST_CASE("fftn, ifftn and fft_axis transform c64 along any axes") {
  const std::string c = "fftn_c64";
  G g;
  NodeId z = g.in(load(c, "z"));
  CHECK(g.g.fftn(z, {}, false) == z);
  check(g, {g.g.fftn(z, {2, 0}, false), g.g.ifftn(z, {-2}), g.g.fft_axis(z, 0, false)},
        {load(c, "fftn_0_2"), load(c, "ifftn_1"), load(c, "fft_axis_0")}, 1e-6, "fftn c64");
}

TEST_CASE(
    "fft_butterfly_stage: all stages on bit-reversed input make the FFT; gate 0 passes through") {
  const std::string c = "butterfly";
  G g;
  NodeId st = g.in(load(c, "state")), rev = g.in(load(c, "rev"));
  NodeId twr = g.in(load(c, "tw_re")), twi = g.in(load(c, "tw_im"));
  NodeId ones = g.in(load(c, "ones")), gate = g.in(load(c, "gate"));
  NodeId cur = st;
  for (uint32_t s = 0; s < 3; ++s) cur = g.g.fft_butterfly_stage(cur, ones, rev, twr, twi, s, 8);
  check(g,
        {cur, g.g.fft_butterfly_stage(st, gate, rev, twr, twi, 1, 8),
         g.g.fft_butterfly_stage(st, gate, rev, twr, twi, 0, 8)},
        {load(c, "full_fft"), load(c, "gated_stage1"), load(c, "gated_stage0")}, kF64, "butterfly");
}

TEST_CASE("pad_last_axis_to_pow2 and split_spectrum move values as stated") {
  G g;
  NodeId x = g.in(Buffer::f32({2, 3}, std::vector<float>{1, 2, 3, 4, 5, 6}));
  NodeId p = g.g.pad_last_axis_to_pow2(x);
  CHECK(g.g.pad_last_axis_to_pow2(p) == p);
  auto [re, im] = g.g.split_spectrum(p);
  g.g.set_outputs({p, re, im});
  for (Backend b : {Backend::Interp, Backend::Jit}) {
    std::vector<Buffer> out = g.run(b);
    CHECK(out[0].to_f32() == std::vector<float>{1, 2, 3, 0, 4, 5, 6, 0});
    CHECK(out[1].to_f32() == std::vector<float>{1, 2, 4, 5});
    CHECK(out[2].to_f32() == std::vector<float>{3, 0, 6, 0});
  }
}

TEST_CASE("bad spectral input throws rlx::Error naming the builder, the shapes and the line, "
          "and leaves the graph unchanged") {
  ir::Graph g("bad");
  NodeId odd = g.input("odd", ir::Shape({2, 7}, DType::F32));
  NodeId ints = g.input("ints", ir::Shape({4}, DType::I32));
  NodeId c = g.input("c", ir::Shape({3, 4}, DType::C64));
  const std::size_t n = g.len();
  auto expect = [&](auto&& f, std::vector<std::string> parts) {
    try {
      f();
      FAIL("no error");
    } catch (const Error& e) {
      std::string msg = e.what();
      for (const std::string& p : parts) CHECK_MESSAGE(msg.find(p) != std::string::npos, msg);
      CHECK_MESSAGE(msg.find("test_spectral.cpp:") != std::string::npos, msg);
    }
    CHECK(g.len() == n);
  };
  expect([&] { g.fft(odd, false); }, {"fft", "f32[2,7]", "even"});
  expect([&] { g.fft(ints, false); }, {"fft", "i32[4]"});
  expect([&] { g.fft_axis(odd, 0, false); }, {"fft_axis", "c64", "f32[2,7]"});
  expect([&] { g.rfft_exact(odd, 8, FftNorm::Ortho); }, {"rfft_exact", "n = 8", "f32[2,7]"});
  expect([&] { g.stft(odd, 9, 1, FftNorm::Backward); }, {"stft", "frame_len 9", "f32[2,7]"});
  expect([&] { g.conjugate(odd); }, {"conjugate", "c64", "f32[2,7]"});
  expect([&] { g.complex_norm_sq(ints); }, {"complex_norm_sq", "i32[4]"});
  expect(
      [&] {
        g.sosfiltfilt(odd, std::vector<ir::Graph::SosSection>{{{1, 1, 1}, {1, 0.5f, 0.25f}}});
      },
      {"sosfiltfilt", "longer than the padding", "f32[2,7]"});
  expect([&] { g.biquad(odd, {1, 0, 0}, {0, 1, 0}); }, {"biquad", "a[0]"});
  expect([&] { g.resample_poly(odd, 0, 2, std::vector<float>{1}); },
         {"resample_poly", "up and down"});
  expect([&] { g.irfft(odd, c, 4, FftNorm::Forward); }, {"irfft", "c64[3,4]"});
  expect([&] { g.welch_peaks(odd, 1, 1); }, {"welch_peaks", "f32[2,7]"});
  NodeId b = g.input("b", ir::Shape({3}, DType::F32));
  NodeId zi = g.input("zi", ir::Shape({2, 5}, DType::F32));
  const std::size_t m = g.len();
  try {
    g.lfilter(odd, b, b, zi);
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(std::string(e.what()).find("lfilter") != std::string::npos);
    CHECK(std::string(e.what()).find("f32[2,5]") != std::string::npos);
  }
  CHECK(g.len() == m);
}

TEST_CASE("the JIT plans each FFT shape once and reuses the plan") {
  ir::Graph g("plans");
  NodeId x = g.input("x", ir::Shape({3, 2 * 37}, DType::F32));
  g.set_outputs({g.fft_norm(x, false, FftNorm::Ortho)});
  Buffer in = Buffer::f32({3, 74}, std::vector<float>(222, 0.5f));
  const Buffer* leaves[] = {&in};
  auto exe = compile(g, Backend::Jit);
  exe->run(leaves);
  int64_t made = fftw::fftw_plans_made();
  for (int i = 0; i < 3; ++i) exe->run(leaves);
  ir::Graph g2 = g; // the same shape in another executable
  g2.name = "plans2";
  compile(g2, Backend::Jit)->run(leaves);
  CHECK(fftw::fftw_plans_made() == made);
  CHECK(exe->describe().find("fftw") != std::string::npos);
}

TEST_CASE("FFTW_MEASURE plans, on request, compute the same transform") {
  fftw::set_fftw_measure(true);
  G g;
  NodeId x = g.in(load("fft_sizes", "x_100"));
  int64_t before = fftw::fftw_plans_made();
  check(g, {g.g.fft_norm(x, true, FftNorm::Ortho)}, {load("fft_sizes", "want_100_inv_Ortho")}, kF64,
        "measured fft n=100");
  fftw::set_fftw_measure(false);
  CHECK(fftw::fftw_plans_made() == before + 1);
}

TEST_CASE("threads compiling and running ffts of different shapes at once get correct results") {
  std::vector<std::thread> threads;
  std::vector<std::string> problems(4);
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([t, &problems] {
      try {
        int n = 40 + 7 * t; // a shape no other test plans
        ir::Graph g("threads" + std::to_string(t));
        NodeId x = g.input("x", ir::Shape({3, 2 * n}, DType::F64));
        g.set_outputs({g.fft(x, false)});
        std::vector<double> v(std::size_t(6 * n));
        for (std::size_t i = 0; i < v.size(); ++i) v[i] = std::sin(double(i) * 0.37 + t);
        Buffer in = Buffer::from_f64(ir::Shape({3, 2 * n}, DType::F64), v);
        const Buffer* leaves[] = {&in};
        auto exe = compile(g, Backend::Jit);
        Buffer want = compile(g, Backend::Interp)->run(leaves)[0];
        for (int rep = 0; rep < 20; ++rep) {
          Buffer got = exe->run(leaves)[0];
          for (int64_t i = 0; i < got.numel(); ++i)
            if (std::fabs(got.get_f64(i) - want.get_f64(i)) > 1e-11)
              throw std::runtime_error("element " + std::to_string(i) + " differs");
        }
      } catch (const std::exception& e) {
        problems[std::size_t(t)] = e.what();
      }
    });
  for (std::thread& th : threads) th.join();
  for (const std::string& p : problems) CHECK_MESSAGE(p.empty(), p);
}
