// jit/fftw_kernels.hpp -- the JIT's FFT steps on FFTW (jit/fftw_kernels.cpp, the
// only file with FFTW's transforms; this header has no FFTW types).
#pragma once

#include "rlx/interp.hpp"

#include <cstddef>
#include <cstdint>

namespace rlx::fftw {

/// Whether the JIT runs this node through FFTW: an fft of f32 (fftw3f), f64 (fftw3) or c64.
bool fftw_handles(const ir::Node& n);

/// Make (or find) the FFTW plan for this fft node's shape, so planning happens when the
/// executable is built. Plans are process-wide, keyed by precision, layout, length, rows and
/// planning mode (set_fftw_measure),
/// and reused by every executable of that shape.
void fftw_prepare(const ir::Node& n);

/// Run an fft node through FFTW: the same semantics as the interpreter's kernel (the 2N
/// real-block layout or interleaved c64, FftNorm scaling), in the node's own precision; x and
/// out are contiguous arrays of the node's shape (out is written entirely, never x).
void fftw_run(const ir::Node& n, const std::byte* x, std::byte* out);

/// How many plans FFTW has made in this process (tests check that shapes plan once).
int64_t fftw_plans_made();

/// FFTW_ESTIMATE (default) or FFTW_MEASURE for plans made from now on; RLX_FFTW=measure at
/// start-up selects measure. Measuring takes time once per shape and may pick faster code.
void set_fftw_measure(bool measure);

} // namespace rlx::fftw
