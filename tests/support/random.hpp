// tests/support/random.hpp -- deterministic pseudo-random buffers for property tests.
#pragma once

#include <rlx/interp.hpp>

#include <cstdint>
#include <vector>

namespace rlx::test {

/// Values uniform in [lo, hi) from a fixed 64-bit LCG stream (same on every machine).
inline Buffer random_buffer(const ir::Shape& shape, uint64_t seed, double lo = -1.0,
                            double hi = 1.0) {
  Buffer b(shape);
  uint64_t state = seed * 6364136223846793005ull + 1442695040888963407ull;
  for (int64_t i = 0; i < b.numel(); ++i) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    double u = double(state >> 11) * 0x1.0p-53;
    b.set_f64(i, lo + (hi - lo) * u);
  }
  return b;
}

} // namespace rlx::test
