// examples/train_cnn.cpp -- a 2-layer CNN (conv2d + relu + max_pool2d, then a linear layer)
// trained with Adam on a synthetic image task: is the bright square in the left or the right
// half of a noisy 12x12 image? The parameters are an RLX_PYTREE struct; one training step
// (gradient and optimizer update) is traced and compiled once. Exits non-zero unless the training
// loss falls at least 5x and the accuracy on held-out images exceeds 90%.
#include <rlx/rlx.hpp>

#include <cstdio>
#include <random>
#include <tuple>
#include <vector>

using rlx::Tensor;

struct Cnn {
  Tensor conv_w, conv_b, fc_w, fc_b;
};
RLX_PYTREE(Cnn, conv_w, conv_b, fc_w, fc_b)

constexpr int64_t kSide = 12, kChannels = 4, kPooled = kSide / 2;

/// n images [n, 1, 12, 12] and one-hot labels [n, 2] (class 1: the square is in the right half).
std::pair<Tensor, Tensor> make_images(int64_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> noise(0.0f, 0.3f);
  std::uniform_int_distribution<int64_t> row(0, kSide - 3), col(0, kSide / 2 - 3);
  std::vector<float> pixels(std::size_t(n * kSide * kSide)), labels(std::size_t(n * 2));
  for (int64_t i = 0; i < n; ++i) {
    float* img = pixels.data() + i * kSide * kSide;
    for (int64_t k = 0; k < kSide * kSide; ++k) img[k] = noise(rng);
    int64_t right = int64_t(rng() % 2), r0 = row(rng), c0 = col(rng) + right * (kSide / 2);
    for (int64_t r = r0; r < r0 + 3; ++r)
      for (int64_t c = c0; c < c0 + 3; ++c) img[r * kSide + c] += 1.5f;
    labels[std::size_t(i * 2 + right)] = 1.0f;
  }
  return {Tensor::from_vector(pixels, {n, 1, kSide, kSide}), Tensor::from_vector(labels, {n, 2})};
}

Tensor logits(const Cnn& p, const Tensor& images) {
  Tensor h = rlx::conv2d(images, p.conv_w, p.conv_b, {.padding = {1, 1}}).relu();
  h = rlx::max_pool2d(h, {2, 2}); // [n, 4, 6, 6]
  return rlx::matmul(h.reshape({-1, kChannels * kPooled * kPooled}), p.fc_w) + p.fc_b;
}

Tensor cross_entropy(const Tensor& z, const Tensor& onehot) {
  return -rlx::mean(rlx::sum(onehot * rlx::log_softmax(z, 1), {1}));
}

int main() {
  const int64_t n_train = 512, n_test = 256, batch = 64;
  auto [x, y] = make_images(n_train, 1);
  auto [x_test, y_test] = make_images(n_test, 2);

  Cnn params{rlx::randn({kChannels, 1, 3, 3}, 3) * 0.3f, rlx::zeros({kChannels}),
             rlx::randn({kChannels * kPooled * kPooled, 2}, 4) * 0.05f, rlx::zeros({2})};
  auto opt = rlx::optim::adam(0.01);
  rlx::optim::State state = opt.init(params);

  auto step =
      rlx::jit([&](const Cnn& p, const rlx::optim::State& s, const Tensor& xb, const Tensor& yb) {
        auto [l, g] =
            rlx::value_and_grad([&](const Cnn& q) { return cross_entropy(logits(q, xb), yb); })(p);
        auto [p2, s2] = opt.update(g, s, p);
        return std::tuple{l, p2, s2};
      });
  auto train_loss = [&] { return cross_entropy(logits(params, x), y).item<float>(); };

  const int epochs = 15;
  float first = train_loss(), last = first;
  for (int e = 1; e <= epochs; ++e) {
    for (int64_t b = 0; b < n_train; b += batch)
      std::tie(std::ignore, params, state) =
          step(params, state, x.slice(0, b, b + batch), y.slice(0, b, b + batch));
    last = train_loss();
    if (e % 5 == 0) std::printf("epoch %2d  loss %.5f\n", e, double(last));
  }
  Tensor hits = rlx::argmax(logits(params, x_test), 1) == rlx::argmax(y_test, 1);
  float accuracy = rlx::mean(hits.cast(rlx::DType::F32)).item<float>();
  std::printf("loss fell %.1fx in %d epochs; test accuracy %.1f%% (traces: %lld)\n",
              double(first / last), epochs, double(accuracy * 100),
              static_cast<long long>(step.stats().traces));
  return first / last >= 5.0f && accuracy > 0.9f ? 0 : 1;
}
