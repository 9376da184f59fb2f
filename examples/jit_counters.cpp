// examples/jit_counters.cpp -- the program issue 4 requires to compile and run as written:
// a jitted expression over 2^20 elements (one compile), and a dynamic batch (1 trace, 2
// compiles, 1 cache hit). Prints "1048576 1" and "1 2 1". Kept exactly as the issue wrote it.
// clang-format off
#include <rlx/rlx.hpp>
#include <iostream>
using rlx::Tensor;
int main() {
  auto f = rlx::jit([](Tensor x, Tensor a) {
    return rlx::tanh(x * a + 0.1f) * rlx::sigmoid(x) + x * x;
  });
  Tensor x = rlx::randn({1 << 20}, /*seed=*/0);
  Tensor a = rlx::full({1 << 20}, 0.5f);
  std::vector<float> y = f(x, a).to_vector<float>();
  std::cout << y.size() << " " << f.stats().compiles << "\n";       // 1048576 1

  auto g = rlx::jit([](Tensor t) { return rlx::softmax(t, -1).sum(-1); },
                    rlx::JitOptions{.dynamic_dims = {{0, 0, "batch"}}});
  for (int n : {3, 5, 3}) g(rlx::randn({n, 16}, 1)).to_vector<float>();
  auto s = g.stats();
  std::cout << s.traces << " " << s.compiles << " " << s.cache_hits << "\n";   // 1 2 1
}
// clang-format on
