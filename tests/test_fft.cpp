// tests/test_fft.cpp -- rlx::fft (include/rlx/fft.hpp) against numpy.fft and torch.stft/istft
// (tests/fixtures/fft/, written by tests/fixtures/make_fft.py with the parameters repeated here),
// on the interpreter (its own double FFT) and on the JIT (FFTW): every function, odd and even
// and non-power-of-two lengths, axes other than the last, n padding and truncating, every norm,
// stft/istft round trips, and errors.
#include "support/backends.hpp"
#include "support/check_error.hpp"
#include "support/compare.hpp"

#include <rlx/rlx.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <string>
#include <vector>

namespace {

using rlx::DType;
using rlx::ErrorKind;
using rlx::Tensor;
using rlx::test::check_error;
using rlx::test::on_both_backends;
namespace fft = rlx::fft;
using fft::Norm;

/// A case of tests/fixtures/fft/.
rlx::test::Fixture case_of(const std::string& name) { return {"fft", name}; }

const char* norm_name(Norm n) {
  return n == Norm::Backward ? "backward" : n == Norm::Forward ? "forward" : "ortho";
}

/// got has want's sizes and dtype, and every element is within tol * max(|want|, 1e-3): an
/// FFT's rounding error is relative to the norm of its row, not to each bin.
void expect_close(const Tensor& got, const Tensor& want, const std::string& what,
                  double tol = 2e-5) {
  rlx::test::check_close_scaled(got, want, tol, 1e-3, what);
}

const std::vector<int> kLengths = {1, 2, 3, 5, 8, 12, 17, 100, 243};
const std::vector<Norm> kNorms = {Norm::Backward, Norm::Forward, Norm::Ortho};

} // namespace

TEST_CASE("fft and ifft of c64 rows match numpy in every norm and length") {
  on_both_backends([] {
    for (int n : kLengths) {
      auto fx = case_of("c2c_" + std::to_string(n));
      Tensor x = fx("x");
      for (Norm norm : kNorms) {
        std::string tag = std::string(norm_name(norm)) + " n=" + std::to_string(n);
        expect_close(fft::fft(x, -1, -1, norm), fx(std::string("want_fft_") + norm_name(norm)),
                     "fft " + tag);
        expect_close(fft::ifft(x, -1, -1, norm), fx(std::string("want_ifft_") + norm_name(norm)),
                     "ifft " + tag);
      }
    }
  });
}

TEST_CASE("rfft and irfft match numpy for odd and even lengths, every norm, and default n") {
  on_both_backends([] {
    for (int n : kLengths) {
      auto fx = case_of("r2c_" + std::to_string(n));
      Tensor x = fx("x"), z = fx("z");
      const int64_t m = n / 2 + 1;
      for (Norm norm : kNorms) {
        std::string nm = norm_name(norm), tag = nm + " n=" + std::to_string(n);
        Tensor spec = fft::rfft(x, -1, -1, norm);
        CHECK(spec.dtype() == DType::C64);
        expect_close(spec, fx("want_rfft_" + nm), "rfft " + tag);
        if (m > 1)
          expect_close(fft::irfft(z, -1, -1, norm), fx("want_irfft_" + nm), "irfft " + tag);
        expect_close(fft::irfft(z, 2 * m - 1, -1, norm), fx("want_irfft_odd_" + nm),
                     "irfft n=2m-1 " + tag);
        expect_close(fft::irfft(z, m + 3, -1, norm), fx("want_irfft_more_" + nm),
                     "irfft n=m+3 " + tag);
      }
      expect_close(fft::rfft(fx("x64")), fx("want_rfft64"), "rfft of f64, n=" + std::to_string(n));
    }
  });
}

TEST_CASE("irfft inverts rfft for odd and even lengths") {
  on_both_backends([] {
    for (int n : {3, 8, 17, 100}) {
      Tensor x = case_of("r2c_" + std::to_string(n))("x");
      for (Norm norm : kNorms)
        expect_close(fft::irfft(fft::rfft(x, -1, -1, norm), n, -1, norm), x,
                     "irfft(rfft(x)) n=" + std::to_string(n));
    }
  });
}

TEST_CASE("transforms along other axes pad or cut n as numpy") {
  on_both_backends([] {
    auto fx = case_of("axes");
    Tensor x = fx("x"), xr = fx("xr"), z = fx("z");
    expect_close(fft::fft(x, 7, 1), fx("want_fft_n7_axis1"), "fft n=7 axis=1");
    expect_close(fft::fft(x, 3, 0), fx("want_fft_n3_axis0"), "fft n=3 axis=0");
    expect_close(fft::ifft(x, 5, -2, Norm::Ortho), fx("want_ifft_n5_axism2_ortho"),
                 "ifft n=5 axis=-2 ortho");
    expect_close(fft::fft(x, -1, 0, Norm::Forward), fx("want_fft_axis0_forward"),
                 "fft axis=0 forward");
    expect_close(fft::rfft(xr, -1, 1), fx("want_rfft_axis1"), "rfft axis=1");
    expect_close(fft::rfft(xr, 4, 1), fx("want_rfft_n4_axis1"), "rfft n=4 axis=1");
    expect_close(fft::rfft(xr, 11, 0), fx("want_rfft_n11_axis0"), "rfft n=11 axis=0");
    expect_close(fft::irfft(z, -1, 1), fx("want_irfft_axis1"), "irfft axis=1");
    expect_close(fft::irfft(z, 9, 0, Norm::Ortho), fx("want_irfft_n9_axis0_ortho"),
                 "irfft n=9 axis=0 ortho");
    expect_close(fft::fft(xr, -1, 1), fx("want_fft_real_input"), "fft of a real tensor");
  });
}

TEST_CASE("fft2, fftn, rfftn and irfftn match numpy with and without s and axes") {
  on_both_backends([] {
    auto fx = case_of("nd");
    Tensor x = fx("x"), xr = fx("xr"), z = fx("z");
    expect_close(fft::fft2(x), fx("want_fft2"), "fft2");
    expect_close(fft::ifft2(x, {}, {-2, -1}, Norm::Ortho), fx("want_ifft2_ortho"), "ifft2 ortho");
    expect_close(fft::fftn(x), fx("want_fftn"), "fftn");
    expect_close(fft::fftn(x, {5, 3}, {0, 2}), fx("want_fftn_s53_axes02"), "fftn s axes");
    expect_close(fft::fftn(x, {2, 7}), fx("want_fftn_s_last2"), "fftn s (last axes)");
    expect_close(fft::ifftn(x, {}, {}, Norm::Forward), fx("want_ifftn_forward"), "ifftn forward");
    expect_close(fft::rfftn(xr), fx("want_rfftn"), "rfftn");
    expect_close(fft::rfft2(xr), fx("want_rfft2"), "rfft2");
    expect_close(fft::irfftn(z, {4, 6, 5}), fx("want_irfftn_s465"), "irfftn s");
    expect_close(fft::irfftn(z), fx("want_irfftn"), "irfftn");
    expect_close(fft::irfft2(z, {}, {0, 1}), fx("want_irfft2_axes01"), "irfft2 axes (0, 1)");
  });
}

TEST_CASE("fftfreq and rfftfreq are numpy's, in f64") {
  auto fx = case_of("freqs");
  for (int n : {1, 4, 7, 10})
    for (auto [d, tag] : {std::pair{1.0, "1"}, std::pair{0.1, "0p1"}}) {
      std::string sfx = std::to_string(n) + "_" + tag;
      Tensor f = fft::fftfreq(n, d), rf = fft::rfftfreq(n, d);
      CHECK(f.dtype() == DType::F64);
      CHECK(f.to_vector<double>() == fx("want_fftfreq_" + sfx).to_vector<double>());
      CHECK(rf.to_vector<double>() == fx("want_rfftfreq_" + sfx).to_vector<double>());
    }
}

TEST_CASE("fftshift and ifftshift roll odd and even axes as numpy") {
  on_both_backends([] {
    auto fx = case_of("shifts");
    Tensor x = fx("x"), z = fx("z");
    CHECK(fft::fftshift(x).to_vector<float>() == fx("want_fftshift").to_vector<float>());
    CHECK(fft::ifftshift(x).to_vector<float>() == fx("want_ifftshift").to_vector<float>());
    CHECK(fft::fftshift(x, rlx::Dims{0}).to_vector<float>() ==
          fx("want_fftshift_axis0").to_vector<float>());
    CHECK(fft::ifftshift(x, rlx::Dims{1}).to_vector<float>() ==
          fx("want_ifftshift_axis1").to_vector<float>());
    using C = std::complex<float>;
    CHECK(fft::fftshift(z).to_vector<C>() == fx("want_fftshift_z").to_vector<C>());
    CHECK(fft::ifftshift(z).to_vector<C>() == fx("want_ifftshift_z").to_vector<C>());
    CHECK(fft::ifftshift(fft::fftshift(z)).to_vector<C>() == z.to_vector<C>());
  });
}

TEST_CASE("real, imag, complex, abs and angle of c64 match numpy") {
  on_both_backends([] {
    auto fx = case_of("complex_parts");
    Tensor re = fx("re"), im = fx("im"), z = fx("z");
    Tensor made = rlx::complex(re, im);
    CHECK(made.dtype() == DType::C64);
    CHECK(made.to_vector<std::complex<float>>() == z.to_vector<std::complex<float>>());
    CHECK(rlx::real(z).to_vector<float>() == re.to_vector<float>());
    CHECK(rlx::imag(z).to_vector<float>() == im.to_vector<float>());
    CHECK(rlx::imag(rlx::complex(re)).to_vector<float>() == std::vector<float>(24, 0.0f));
    CHECK(rlx::real(re).to_vector<float>() == re.to_vector<float>());
    CHECK(rlx::imag(re).to_vector<float>() == std::vector<float>(24, 0.0f));
    expect_close(rlx::abs(z), fx("want_abs"), "abs", 1e-7);
    expect_close(rlx::angle(z), fx("want_angle"), "angle", 1e-7);
    expect_close(rlx::angle(re), fx("want_angle_real"), "angle of a real tensor", 1e-7);
  });
}

TEST_CASE("hann_window is torch's, periodic and symmetric") {
  auto fx = case_of("hann");
  for (int n : {1, 2, 7, 64})
    for (bool periodic : {true, false})
      expect_close(fft::hann_window(n, periodic),
                   fx("want_hann_" + std::to_string(n) + "_" + (periodic ? "True" : "False")),
                   "hann_window " + std::to_string(n), 1e-7);
}

namespace {

/// One stft case of make_fft.py: torch.stft's parameters.
struct StftCase {
  std::string name;
  int64_t n_fft;
  std::optional<int64_t> hop, win;
  bool center;
  rlx::ir::PadMode pad_mode;
  bool normalized;
  std::optional<bool> onesided;
  bool window;
};

const std::vector<StftCase> kStft = {
    {"stft_hann", 256, 64, {}, true, rlx::ir::PadMode::Reflect, false, {}, true},
    {"stft_odd", 63, 20, {}, true, rlx::ir::PadMode::Reflect, false, {}, true},
    {"stft_default_hop_no_window", 100, {}, {}, true, rlx::ir::PadMode::Reflect, false, {}, false},
    {"stft_short_window", 128, 32, 60, true, rlx::ir::PadMode::Reflect, false, {}, true},
    {"stft_no_center", 90, 30, {}, false, rlx::ir::PadMode::Reflect, false, {}, true},
    {"stft_constant", 64, 16, {}, true, rlx::ir::PadMode::Constant, true, {}, true},
    {"stft_replicate", 50, 25, {}, true, rlx::ir::PadMode::Edge, false, false, true},
};

} // namespace

TEST_CASE("stft matches torch.stft(return_complex=True) in [..., freq, frame] layout") {
  on_both_backends([] {
    for (const StftCase& c : kStft) {
      auto fx = case_of(c.name);
      std::optional<Tensor> w;
      if (c.window) w = fx("window");
      Tensor s = fft::stft(fx("x"), c.n_fft, c.hop, c.win, w, c.center, c.pad_mode, c.normalized,
                           c.onesided);
      expect_close(s, fx("want_stft"), "stft " + c.name, 1e-5);
    }
  });
}

TEST_CASE("istft matches torch.istft, with and without a length") {
  on_both_backends([] {
    for (const StftCase& c : kStft) {
      if (!c.center) continue; // torch's NOLA check rejects an uncentred hann window
      auto fx = case_of(c.name);
      std::optional<Tensor> w;
      if (c.window) w = fx("window");
      Tensor z = fx("z"), x = fx("x");
      Tensor y =
          fft::istft(z, c.n_fft, c.hop, c.win, w, c.center, c.normalized, c.onesided, x.size(-1));
      expect_close(y, fx("want_istft"), "istft " + c.name, 1e-5);
      expect_close(fft::istft(z, c.n_fft, c.hop, c.win, w, c.center, c.normalized, c.onesided),
                   fx("want_istft_default_length"), "istft default length " + c.name, 1e-5);
    }
  });
}

TEST_CASE("istft(stft(x)) gives x back") {
  on_both_backends([] {
    for (const StftCase& c : kStft) {
      if (!c.center) continue;
      auto fx = case_of(c.name);
      std::optional<Tensor> w;
      if (c.window) w = fx("window");
      Tensor x = fx("x");
      Tensor s =
          fft::stft(x, c.n_fft, c.hop, c.win, w, c.center, c.pad_mode, c.normalized, c.onesided);
      expect_close(
          fft::istft(s, c.n_fft, c.hop, c.win, w, c.center, c.normalized, c.onesided, x.size(-1)),
          x, "round trip " + c.name, 1e-5);
    }
    // a complex signal, two-sided both ways, back as c64
    Tensor x = rlx::complex(rlx::randn({2, 90}, 3), rlx::randn({2, 90}, 4));
    Tensor w = fft::hann_window(32);
    Tensor s = fft::stft(x, 32, 8, {}, w);
    CHECK(s.sizes() == rlx::Dims{2, 32, 1 + 90 / 8});
    expect_close(fft::istft(s, 32, 8, {}, w, true, false, false, 90, true), x, "complex round trip",
                 1e-5);
  });
}

TEST_CASE("rlx::fft functions trace inside rlx::jit and give the eager values") {
  auto fx = case_of("r2c_17");
  Tensor x = fx("x");
  auto f = rlx::jit(
      [](Tensor t) { return fft::irfft(fft::rfft(t, -1, -1, Norm::Ortho), 17, -1, Norm::Ortho); });
  auto g = rlx::jit([](Tensor t) { return fft::fftshift(fft::rfft(t)); });
  expect_close(f(x), x, "jit irfft(rfft(x))");
  expect_close(g(x), fft::fftshift(fft::rfft(x)), "jit fftshift(rfft(x))");
}

TEST_CASE("rlx::fft errors name the function and the shapes") {
  Tensor re = rlx::ones({4, 6}), z = rlx::complex(re);
  check_error([&] { (void)fft::irfft(re); }, ErrorKind::Type,
              "irfft: needs a c64 spectrum, got f32[4,6]");
  check_error([&] { (void)fft::rfft(z); }, ErrorKind::Type,
              "rfft: needs a real tensor, got c64[4,6]");
  check_error([&] { (void)fft::fft(z, -1, 2); }, ErrorKind::Value,
              "fft: axis 2 is out of range for c64[4,6]");
  check_error([&] { (void)fft::rfft(re, -1, -3); }, ErrorKind::Value,
              "rfft: axis -3 is out of range");
  check_error([&] { (void)fft::fft(z, 0); }, ErrorKind::Value,
              "fft: invalid number of data points n = 0");
  check_error([&] { (void)fft::irfft(rlx::complex(rlx::ones({3, 1}))); }, ErrorKind::Value,
              "irfft: invalid number of data points n = 0 for c64[3,1]");
  check_error([&] { (void)fft::fftn(z, {3, 4}, {0}); }, ErrorKind::Value,
              "fftn: s has 2 sizes but axes has 1 axes");
  check_error([&] { (void)fft::fftfreq(0); }, ErrorKind::Value, "fftfreq: needs n >= 1");
  check_error([&] { (void)fft::fftshift(re, rlx::Dims{5}); }, ErrorKind::Value,
              "fftshift: axis 5 is out of range for f32[4,6]");
  check_error([&] { (void)fft::stft(re, 8, 2, 9); }, ErrorKind::Value,
              "stft: win_length must be in [1, n_fft = 8], got 9");
  check_error([&] { (void)fft::stft(re, 8, 2, {}, rlx::ones({5})); }, ErrorKind::Shape,
              "stft: the window must be 1-D of win_length 8, got f32[5]");
  check_error([&] { (void)fft::stft(re, 16); }, ErrorKind::Shape,
              "stft: reflect padding of n_fft/2 = 8 needs a longer signal than f32[4,6]");
  check_error([&] { (void)fft::stft(re, 16, 4, {}, {}, false); }, ErrorKind::Shape,
              "stft: the signal f32[4,6] is 6 samples long, shorter than n_fft = 16");
  check_error(
      [&] { (void)fft::stft(z, 4, 1, {}, {}, true, rlx::ir::PadMode::Reflect, false, true); },
      ErrorKind::Value, "stft: onesided needs a real signal");
  check_error([&] { (void)fft::istft(re, 8); }, ErrorKind::Type,
              "istft: needs a c64 [..., freq, frames] spectrum, got f32[4,6]");
  check_error([&] { (void)fft::istft(z, 8); }, ErrorKind::Shape,
              "istft: a onesided spectrum needs n_fft/2 + 1 = 5 frequencies, got c64[4,6]");
  check_error(
      [&] {
        (void)fft::istft(rlx::complex(rlx::ones({5, 3})), 8, 2, {}, {}, true, false, {}, {}, true);
      },
      ErrorKind::Value, "istft: return_complex needs a two-sided spectrum");
  check_error([&] { (void)rlx::complex(re, rlx::ones({4, 5})); }, ErrorKind::Shape, "complex");
}
