// jit/fft_probe.cpp -- an FFTW r2c plan, the route rlx's FFT ops will take.
#include "probes.hpp"

#include <cmath>
#include <fftw3.h>
#include <mutex>

namespace rlx::fftw {

std::vector<float> fftw_magnitudes(const std::vector<float>& x) {
  static std::mutex planner_mutex; // FFTW's planner is not thread-safe
  int n = static_cast<int>(x.size());
  std::vector<float> in(x);
  auto* out =
      static_cast<fftwf_complex*>(fftwf_malloc(sizeof(fftwf_complex) * std::size_t(n / 2 + 1)));
  fftwf_plan plan;
  {
    std::lock_guard lock(planner_mutex);
    plan = fftwf_plan_dft_r2c_1d(n, in.data(), out, FFTW_ESTIMATE);
  }
  fftwf_execute(plan);
  std::vector<float> mags(std::size_t(n / 2 + 1));
  for (std::size_t i = 0; i < mags.size(); ++i) mags[i] = std::hypot(out[i][0], out[i][1]);
  {
    std::lock_guard lock(planner_mutex);
    fftwf_destroy_plan(plan);
  }
  fftwf_free(out);
  return mags;
}

} // namespace rlx::fftw
