// examples/train_mlp.cpp -- a small MLP trained with plain SGD on a synthetic regression problem,
// with rlx::value_and_grad under rlx::jit: one traced and compiled training step, run each
// iteration. Exits non-zero unless the loss falls at least 10x.
#include <rlx/rlx.hpp>

#include <cstdio>
#include <vector>

using rlx::Tensor;

int main() {
  // Data: 256 points in [-1, 1]^2; the target is a smooth function of both coordinates.
  const int64_t n = 256, hidden = 32;
  Tensor x = rlx::rand({n, 2}, /*seed=*/1) * 2.0f - 1.0f;
  Tensor x0 = x.index({rlx::_, rlx::Slice{0, 1}}), x1 = x.index({rlx::_, rlx::Slice{1, 2}});
  Tensor y = rlx::sin(x0 * 2.0f) * 0.8f + x1 * x1 * 0.6f - 0.2f; // [n, 1]

  // Parameters: 2 -> hidden (tanh) -> 1, small random weights.
  std::vector<Tensor> params = {rlx::randn({2, hidden}, 2) * 0.5f, rlx::zeros({hidden}),
                                rlx::randn({hidden, 1}, 3) * 0.05f, rlx::zeros({1})};

  auto loss_fn = [](Tensor w1, Tensor b1, Tensor w2, Tensor b2, Tensor xs, Tensor ys) {
    Tensor h = rlx::tanh(rlx::matmul(xs, w1) + b1);
    Tensor d = rlx::matmul(h, w2) + b2 - ys;
    return rlx::mean(d * d);
  };
  // One SGD step: the loss and the updated parameters, traced once and compiled.
  const float lr = 0.3f;
  auto step = rlx::jit([&](Tensor w1, Tensor b1, Tensor w2, Tensor b2, Tensor xs, Tensor ys) {
    auto [loss, g] = rlx::value_and_grad(loss_fn, {0, 1, 2, 3})(w1, b1, w2, b2, xs, ys);
    return std::vector<Tensor>{loss, w1 - g[0] * lr, b1 - g[1] * lr, w2 - g[2] * lr,
                               b2 - g[3] * lr};
  });

  const int steps = 400;
  float first = 0, last = 0;
  for (int i = 0; i <= steps; ++i) {
    std::vector<Tensor> r = step(params[0], params[1], params[2], params[3], x, y);
    last = r[0].item<float>();
    if (i == 0) first = last;
    if (i % 100 == 0) std::printf("step %3d  loss %.6f\n", i, double(last));
    params.assign(r.begin() + 1, r.end());
  }
  std::printf("loss fell %.1fx in %d steps (traces: %lld)\n", double(first / last), steps,
              static_cast<long long>(step.stats().traces));
  return first / last >= 10.0f ? 0 : 1;
}
