// tests/cache_child.cpp -- a fixed program for tests/test_disk_cache.cpp to run as a separate
// process: it computes one expression on the JIT (two fused kernels around a reduction) and on
// the interpreter, and prints the kernel counters, whether both agree and a checksum of the
// JIT's result bits, as `key=value` pairs on one line.
#include <rlx/all.hpp>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <vector>

namespace {

std::vector<float> compute() {
  rlx::Tensor x = rlx::randn({64, 300}, /*seed=*/11);
  rlx::Tensor a = rlx::tanh(x * 0.75f + 0.125f) * rlx::sigmoid(x) + x * x; // kernel over [64,300]
  rlx::Tensor s = a.sum(-1);                                               // a runtime step
  rlx::Tensor b = rlx::exp(s * 0.015625f) - 1.0f;                          // kernel over [64]
  return b.to_vector<float>();
}

} // namespace

int main() {
  try {
    rlx::set_default_backend(rlx::Backend::Jit);
    std::vector<float> jit = compute();
    rlx::set_default_backend(rlx::Backend::Interp);
    std::vector<float> ref = compute();
    bool agree = jit.size() == ref.size() && !jit.empty();
    for (std::size_t i = 0; agree && i < jit.size(); ++i)
      agree = std::fabs(jit[i] - ref[i]) <= 1e-5f * (1.0f + std::fabs(ref[i]));
    uint64_t h = 0xcbf29ce484222325ull;
    for (float v : jit) {
      uint32_t bits;
      std::memcpy(&bits, &v, sizeof bits);
      for (int k = 0; k < 4; ++k) h = (h ^ ((bits >> (8 * k)) & 0xff)) * 0x100000001b3ull;
    }
    rlx::CacheStats st = rlx::cache_stats();
    std::printf("kernels_compiled=%lld disk_hits=%lld disk_misses=%lld disk_rejected=%lld "
                "memory_hits=%lld agree=%d checksum=%016llx\n",
                static_cast<long long>(st.kernels_compiled), static_cast<long long>(st.disk_hits),
                static_cast<long long>(st.disk_misses), static_cast<long long>(st.disk_rejected),
                static_cast<long long>(st.kernel_memory_hits), agree ? 1 : 0,
                static_cast<unsigned long long>(h));
    return agree ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "cache_child: %s\n", e.what());
    return 2;
  }
}
