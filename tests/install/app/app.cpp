// tests/install/app/app.cpp -- a user's program built against an installed rlx (meson,
// pkg-config and CMake; tests/install/run_install_test.sh). Exits non-zero on a wrong value.
#include <rlx/rlx.hpp>

#include <cstdio>

int main() {
  // The JIT registered itself as librlx loaded (no flag of the user's link asked for it).
  if (!rlx::backend_available(rlx::Backend::Jit)) {
    std::fprintf(stderr, "the JIT backend is not registered\n");
    return 1;
  }
  rlx::Tensor x = rlx::arange(0, 6, 1).reshape({2, 3}); // [[0,1,2],[3,4,5]]
  auto f = rlx::jit([](rlx::Tensor t) { return (t * t + 1.0f).sum(); });
  float got = f(x).item<float>(); // 0+1+4+9+16+25 + 6
  std::printf("sum(x*x+1) = %g on %s\n", double(got),
              rlx::default_backend() == rlx::Backend::Jit ? "jit" : "interp");
  return got == 61.0f && f.stats().compiles == 1 ? 0 : 1;
}
