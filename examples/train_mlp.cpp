// examples/train_mlp.cpp -- a small MLP trained with Adam on minibatches of a synthetic regression
// problem. The parameters are one struct (a pytree, RLX_PYTREE); one training step -- the loss's
// gradient with respect to the whole struct, which closes over the jit's minibatch, and the
// rlx::optim update -- is traced and compiled once and replayed for every minibatch. Exits
// non-zero unless the loss falls at least 10x.
#include <rlx/rlx.hpp>

#include <cstdio>
#include <tuple>

using rlx::Tensor;

struct Mlp {
  Tensor w1, b1, w2, b2;
};
RLX_PYTREE(Mlp, w1, b1, w2, b2)

Tensor predict(const Mlp& p, const Tensor& x) {
  return rlx::matmul(rlx::tanh(rlx::matmul(x, p.w1) + p.b1), p.w2) + p.b2;
}

Tensor mse(const Tensor& a, const Tensor& b) {
  Tensor d = a - b;
  return rlx::mean(d * d);
}

int main() {
  // Data: 256 points in [-1, 1]^2; the target is a smooth function of both coordinates.
  const int64_t n = 256, hidden = 32, batch = 64;
  Tensor x = rlx::rand({n, 2}, /*seed=*/1) * 2.0f - 1.0f;
  Tensor x0 = x.index({rlx::_, rlx::Slice{0, 1}}), x1 = x.index({rlx::_, rlx::Slice{1, 2}});
  Tensor y = rlx::sin(x0 * 2.0f) * 0.8f + x1 * x1 * 0.6f - 0.2f; // [n, 1]

  // Parameters: 2 -> hidden (tanh) -> 1, small random weights.
  Mlp params{rlx::randn({2, hidden}, 2) * 0.5f, rlx::zeros({hidden}),
             rlx::randn({hidden, 1}, 3) * 0.05f, rlx::zeros({1})};
  auto opt = rlx::optim::adam(0.02);
  rlx::optim::State state = opt.init(params);

  // One step on one minibatch: (loss, new params, new state).
  auto step =
      rlx::jit([&](const Mlp& p, const rlx::optim::State& s, const Tensor& xb, const Tensor& yb) {
        auto loss = [&](const Mlp& q) { return mse(predict(q, xb), yb); };
        auto [l, g] = rlx::value_and_grad(loss)(p);
        auto [p2, s2] = opt.update(g, s, p);
        return std::tuple{l, p2, s2};
      });
  auto full_loss = [&] { return mse(predict(params, x), y).item<float>(); };

  const int epochs = 100;
  float first = full_loss(), last = first;
  for (int e = 1; e <= epochs; ++e) {
    for (int64_t b = 0; b < n; b += batch) {
      Tensor xb = x.slice(0, b, b + batch), yb = y.slice(0, b, b + batch);
      std::tie(std::ignore, params, state) = step(params, state, xb, yb);
    }
    if (e % 25 == 0) {
      last = full_loss();
      std::printf("epoch %3d  loss %.6f\n", e, double(last));
    }
  }
  std::printf("loss fell %.1fx in %d epochs of %lld minibatches (traces: %lld)\n",
              double(first / last), epochs, static_cast<long long>(n / batch),
              static_cast<long long>(step.stats().traces));
  return first / last >= 10.0f && step.stats().traces == 1 ? 0 : 1;
}
