// examples/train_lstm.cpp -- a small LSTM trained with Adam (written inline) on a synthetic
// sequence task: read 12 numbers in [-1, 1] and output their mean and the last minus the
// first. The model is rlx::nn::lstm (hidden 16, weights packed by rlx::nn::pack_weights from
// PyTorch-shaped blocks) and a linear head on the final hidden state; the training step is
// rlx::value_and_grad under rlx::jit, traced and compiled once. Exits non-zero unless the loss
// falls at least 10x.
#include <rlx/rlx.hpp>

#include <cmath>
#include <cstdio>
#include <vector>

using rlx::Tensor;

int main() {
  const int64_t batch = 64, seq = 12, hidden = 16;
  Tensor x = rlx::rand({batch, seq, 1}, /*seed=*/1) * 2.0f - 1.0f;
  Tensor first = rlx::narrow(x, 1, 0, 1), last = rlx::narrow(x, 1, seq - 1, 1);
  Tensor target = rlx::concat(
      {rlx::reshape(rlx::mean(x, {1}), {batch, 1}), rlx::reshape(last - first, {batch, 1})},
      1); // [batch, 2]

  // PyTorch's shapes (gates i, f, g, o), uniform in [-1/sqrt(H), 1/sqrt(H)] like nn.LSTM.
  const float k = 1.0f / std::sqrt(float(hidden));
  auto init = [&](rlx::Dims d, uint64_t seed) { return (rlx::rand(d, seed) * 2.0f - 1.0f) * k; };
  std::vector<rlx::nn::LayerWeights> blocks = {{init({4 * hidden, 1}, 2),
                                                init({4 * hidden, hidden}, 3),
                                                init({4 * hidden}, 4), init({4 * hidden}, 5)}};
  rlx::nn::RecurrentWeights packed = rlx::nn::pack_weights(blocks);
  // All parameters in one flat vector theta: w_ih, w_hh, b_ih + b_hh, the head's w and b.
  const int64_t n_ih = 4 * hidden, n_hh = 4 * hidden * hidden, n_b = 4 * hidden, n_w = hidden * 2;
  Tensor theta = rlx::concat({packed.w_ih, packed.w_hh, packed.b_ih + *packed.b_hh,
                              rlx::reshape(init({hidden, 2}, 6), {-1}), rlx::zeros({2})});

  auto loss_fn = [&](Tensor th, Tensor xs, Tensor ys) {
    int64_t at = 0;
    auto take = [&](int64_t n) {
      Tensor t = rlx::narrow(th, 0, at, n);
      at += n;
      return t;
    };
    Tensor w_ih = take(n_ih), w_hh = take(n_hh), b = take(n_b);
    Tensor w_out = rlx::reshape(take(n_w), {hidden, 2}), b_out = take(2);
    rlx::nn::RecurrentResult r = rlx::nn::lstm(xs, {w_ih, w_hh, b}, {.hidden = hidden});
    Tensor h = rlx::reshape(r.h_n, {batch, hidden});
    Tensor d = rlx::matmul(h, w_out) + b_out - ys;
    return rlx::mean(d * d);
  };
  // One Adam step (beta1 0.9, beta2 0.999, eps 1e-8) on theta with moments m, v; c1 and c2
  // are the bias corrections 1 - beta^t. Traced once and compiled.
  const float lr = 0.02f, b1 = 0.9f, b2 = 0.999f;
  auto step =
      rlx::jit([&](Tensor th, Tensor m, Tensor v, Tensor c1, Tensor c2, Tensor xs, Tensor ys) {
        auto [loss, g] = rlx::value_and_grad(loss_fn)(th, xs, ys);
        Tensor m2 = m * b1 + g * (1 - b1), v2 = v * b2 + g * g * (1 - b2);
        Tensor th2 = th - (m2 / c1) * lr / (rlx::sqrt(v2 / c2) + 1e-8f);
        return std::vector<Tensor>{loss, th2, m2, v2};
      });

  Tensor m = rlx::zeros_like(theta), v = rlx::zeros_like(theta);
  const int steps = 300;
  float loss0 = 0, loss = 0;
  for (int i = 1; i <= steps; ++i) {
    Tensor c1 = rlx::tensor({1.0f - std::pow(b1, float(i))});
    Tensor c2 = rlx::tensor({1.0f - std::pow(b2, float(i))});
    std::vector<Tensor> r = step(theta, m, v, c1, c2, x, target);
    loss = r[0].item<float>();
    if (i == 1) loss0 = loss;
    if (i == 1 || i % 50 == 0) std::printf("step %3d  loss %.6f\n", i, double(loss));
    theta = r[1], m = r[2], v = r[3];
  }
  std::printf("loss fell %.1fx in %d steps (traces: %lld)\n", double(loss0 / loss), steps,
              static_cast<long long>(step.stats().traces));
  return loss0 / loss >= 10.0f ? 0 : 1;
}
