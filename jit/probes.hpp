// jit/probes.hpp -- smallest uses of each backend dependency (LLVM, asmjit, FFTW), so the
// build proves they are found, link and work before the real backends land.
#pragma once

#include <string>
#include <vector>

namespace rlx::jit {
/// "19.1.7": the LLVM the JIT links against.
std::string llvm_version();
/// The host CPU as LLVM names it (e.g. "rocketlake"): the JIT's target.
std::string host_cpu_name();
/// JIT-compiles `a + b` for x86-64 with asmjit and calls it.
int asmjit_add(int a, int b);
} // namespace rlx::jit

namespace rlx::fftw {
/// |FFT(x)| of a real signal via an FFTW r2c plan (n/2 + 1 bins).
std::vector<float> fftw_magnitudes(const std::vector<float>& x);
} // namespace rlx::fftw
