// tests/cache_child.cpp -- a fixed program for tests/test_disk_cache.cpp to run as a separate
// process: it computes one expression on the JIT (two fused kernels around a reduction) and on
// the interpreter, and prints the kernel counters, whether both agree and a checksum of the
// JIT's result bits, as `key=value` pairs on one line. With the argument `hot`, it runs one large
// element-wise kernel until the tiers compile it again (jit/steps.cpp) and says so too.
#include "support/hot_chain.hpp"

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

/// The chain run 12 times (2^23 elements make a kernel hot after 8); the last result.
std::vector<float> run_hot(rlx::Backend backend) {
  const int64_t n = int64_t(1) << 20;
  rlx::Buffer x = rlx::test::hot_chain_input(n);
  const std::vector<const rlx::Buffer*> leaves{&x};
  auto exe = rlx::compile(rlx::test::hot_chain(n), backend);
  std::vector<rlx::Buffer> out;
  for (int i = 0; i < (backend == rlx::Backend::Jit ? 12 : 1); ++i) out = exe->run(leaves);
  const float* r = reinterpret_cast<const float*>(out[0].bytes().data());
  return std::vector<float>(r, r + n);
}

} // namespace

int main(int argc, char** argv) {
  try {
    const bool hot = argc > 1 && std::strcmp(argv[1], "hot") == 0;
    rlx::set_default_backend(rlx::Backend::Jit);
    std::vector<float> jit = hot ? run_hot(rlx::Backend::Jit) : compute();
    rlx::set_default_backend(rlx::Backend::Interp);
    std::vector<float> ref = hot ? run_hot(rlx::Backend::Interp) : compute();
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
                "memory_hits=%lld recompiled=%lld agree=%d checksum=%016llx\n",
                static_cast<long long>(st.kernels_compiled), static_cast<long long>(st.disk_hits),
                static_cast<long long>(st.disk_misses), static_cast<long long>(st.disk_rejected),
                static_cast<long long>(st.kernel_memory_hits),
                static_cast<long long>(st.kernels_recompiled), agree ? 1 : 0,
                static_cast<unsigned long long>(h));
    return agree ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "cache_child: %s\n", e.what());
    return 2;
  }
}
