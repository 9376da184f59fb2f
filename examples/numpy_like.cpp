// examples/numpy_like.cpp -- lesson 2: numpy-like C++ on rlx::Tensor, lazily computed, and
// rlx::jit with a dynamic batch (the README's demo). Exits non-zero if a result is wrong.
#include <rlx/rlx.hpp>

#include <cmath>
#include <iostream>

using rlx::Tensor;

int main() {
  int wrong = 0;
  auto expect = [&](bool ok, const char* what) {
    if (!ok) std::cerr << "WRONG: " << what << "\n";
    wrong += !ok;
  };

  // 1. Tensors look eager: arithmetic, broadcasting, reductions. Nothing runs yet...
  Tensor x = rlx::arange(0, 6, 1).reshape({2, 3}); // [[0,1,2],[3,4,5]] (f32)
  Tensor col = rlx::tensor({10.f, 20.f}).reshape({2, 1});
  Tensor y = (x + col) * 0.5f; // [2,3] + [2,1] broadcasts
  std::cout << "y is pending: " << !y.is_materialized() << ", shape "
            << rlx::ir::short_str(y.shape()) << "\n";
  // ...until a value is read: printing materializes the pending graph (compiled and cached).
  std::cout << "y = " << y << "\n";
  std::cout << "row sums " << y.sum(-1) << "\nmean " << y.mean().item<float>() << "\n";
  expect(y.sum().item<float>() == 52.5f, "sum of y"); // (15 + 3*10 + 3*20) / 2

  // 2. Slicing with steps, numpy style: every other column, last row first.
  Tensor picked = x.index({rlx::Slice{std::nullopt, std::nullopt, -1}, rlx::Slice{0, 3, 2}});
  std::cout << "x[::-1, 0:3:2] = " << picked << "\n";
  expect(picked.to_vector<float>() == std::vector<float>{3, 5, 0, 2}, "slicing");

  // 3. A tiny classifier: softmax(relu(x @ w + b)) with argmax.
  Tensor w = rlx::randn({3, 4}, /*seed=*/42) * 0.5f;
  Tensor b = rlx::zeros({4});
  Tensor probs = rlx::softmax(rlx::relu(rlx::matmul(x, w) + b), -1);
  std::cout << "probs = " << probs << "\nclass = " << probs.argmax(-1) << "\n";
  for (float s : probs.sum(-1).to_vector<float>())
    expect(std::abs(s - 1.0f) < 1e-6f, "softmax rows sum to 1");

  // 4. rlx::jit traces a function once; a dynamic batch dim compiles once per new size.
  auto layer = rlx::jit(
      [&](Tensor h) { return rlx::layer_norm(rlx::gelu(rlx::matmul(h, w)), rlx::ones({4}), b); },
      rlx::JitOptions{.dynamic_dims = {{0, 0, "batch"}}});
  for (int64_t batch : {2, 8, 2}) {
    Tensor out = layer(rlx::randn({batch, 3}, uint64_t(batch)));
    expect(out.shape().dims()[0].size() == batch, "jit output batch");
  }
  auto stats = layer.stats();
  std::cout << "jit: " << stats.traces << " trace, " << stats.compiles << " compiles, "
            << stats.cache_hits << " cache hit\n";
  expect(stats.traces == 1 && stats.compiles == 2 && stats.cache_hits == 1, "jit counters");

  // 5. Mistakes are reported at once, with the shapes and this file's line.
  try {
    Tensor bad = rlx::matmul(x, rlx::ones({4, 5}));
    expect(false, "a shape error");
  } catch (const rlx::Error& e) {
    std::cout << "rlx::Error: " << e.what() << "\n";
    expect(std::string(e.what()).find("f32[2,3] @ f32[4,5]") != std::string::npos, "message");
  }
  std::cout << (wrong == 0 ? "all results as expected\n" : "SOME RESULTS WRONG\n");
  return wrong == 0 ? 0 : 1;
}
