// tests/test_deps.cpp -- each backend dependency is found, links and computes.
#include "../jit/probes.hpp"

#include <doctest/doctest.h>

TEST_CASE("deps: the JIT links LLVM 19 and knows the host CPU") {
  CHECK(rlx::jit::llvm_version().rfind("19.", 0) == 0);
  CHECK_FALSE(rlx::jit::host_cpu_name().empty());
}

TEST_CASE("deps: asmjit generates a working add kernel") {
  CHECK(rlx::jit::asmjit_add(40, 2) == 42);
  CHECK(rlx::jit::asmjit_add(-7, 3) == -4);
}

TEST_CASE("deps: FFTW transforms an impulse into a flat spectrum") {
  auto mags = rlx::fftw::fftw_magnitudes({1, 0, 0, 0, 0, 0, 0, 0});
  REQUIRE(mags.size() == 5);
  for (float m : mags) CHECK(m == doctest::Approx(1.0f));
  auto tone = rlx::fftw::fftw_magnitudes({1, 0, -1, 0, 1, 0, -1, 0});
  CHECK(tone[2] == doctest::Approx(4.0f));
  CHECK(tone[0] == doctest::Approx(0.0f));
}
