// examples/quantize_mlp.cpp -- post-training int8 quantization of a small MLP. The MLP (2 -> 64
// relu -> 3) is trained in f32 with Adam on a synthetic 3-class problem (train_mlp's pattern:
// one jitted step over an RLX_PYTREE struct). Then, without retraining: the weights are
// quantized per output channel to i8 (symmetric, scale max|w| / 127), the activations per tensor
// to u8 with scales calibrated on the training inputs (rlx::quant::choose_qparams, torch's
// MinMaxObserver), the biases to i32 in the accumulator's scale, and the network runs on two
// q_matmuls: the first requantizes straight to the next layer's u8 input (its zero point 0 makes
// the saturation at 0 the relu), the second keeps the i32 accumulator, which per-channel
// dequantize turns into logits. Prints both accuracies on fresh test points; exits non-zero
// unless the f32 model reaches 90% and the int8 one is within 2 points of it.
#include <rlx/rlx.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <tuple>
#include <vector>

using rlx::DType;
using rlx::Tensor;
namespace q = rlx::quant;

struct Mlp {
  Tensor w1, b1, w2, b2;
};
RLX_PYTREE(Mlp, w1, b1, w2, b2)

Tensor hidden(const Mlp& p, const Tensor& x) { return rlx::matmul(x, p.w1) + p.b1; }
Tensor logits(const Mlp& p, const Tensor& x) {
  return rlx::matmul(hidden(p, x).relu(), p.w2) + p.b2;
}

/// Points in [-1, 1]^2 and their class: 0 inside a disc, else 1 above the diagonal, 2 below.
std::pair<Tensor, Tensor> make_data(int64_t n, uint64_t seed) {
  Tensor x = rlx::rand({n, 2}, seed) * 2.0f - 1.0f;
  std::vector<float> v = x.to_vector<float>();
  std::vector<int64_t> y(static_cast<std::size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    float a = v[std::size_t(2 * i)], b = v[std::size_t(2 * i + 1)];
    y[std::size_t(i)] = a * a + b * b < 0.3f ? 0 : (b > a ? 1 : 2);
  }
  return {x, Tensor::from_vector(y, {n})};
}

double accuracy(const Tensor& scores, const Tensor& labels) {
  return rlx::mean((rlx::argmax(scores, 1) == labels).astype(DType::F32)).item<float>();
}

/// Per-column symmetric i8 quantization of w [in, out]: (q, scales).
std::pair<Tensor, std::vector<float>> quantize_weight(const Tensor& w) {
  std::vector<float> amax = rlx::max(rlx::abs(w), {0}).to_vector<float>();
  std::vector<float> scales;
  for (float a : amax) scales.push_back(std::max(a, 1e-8f) / 127.0f);
  std::vector<int32_t> zps(amax.size(), 0);
  return {q::quantize_per_channel(w, scales, zps, 1), scales};
}

/// b in the accumulator's scale x_scale * w_scale[j], as i32.
Tensor quantize_bias(const Tensor& b, float x_scale, const std::vector<float>& w_scales) {
  std::vector<float> v = b.to_vector<float>();
  std::vector<int32_t> out;
  for (std::size_t j = 0; j < v.size(); ++j)
    out.push_back(int32_t(std::nearbyint(double(v[j]) / (double(x_scale) * w_scales[j]))));
  return Tensor::from_vector(out, {int64_t(out.size())});
}

int main() {
  const int64_t n = 1024, width = 64, batch = 128;
  auto [x, y] = make_data(n, 1);
  auto [xt, yt] = make_data(2048, 2);
  Mlp params{rlx::randn({2, width}, 3) * 0.7f, rlx::zeros({width}),
             rlx::randn({width, 3}, 4) * 0.1f, rlx::zeros({3})};
  auto opt = rlx::optim::adam(0.01);
  rlx::optim::State state = opt.init(params);
  auto step =
      rlx::jit([&](const Mlp& p, const rlx::optim::State& s, const Tensor& xb, const Tensor& yb) {
        auto loss = [&](const Mlp& m) { return rlx::nn::cross_entropy(logits(m, xb), yb); };
        auto [l, g] = rlx::value_and_grad(loss)(p);
        auto [p2, s2] = opt.update(g, s, p);
        return std::tuple{l, p2, s2};
      });
  for (int e = 0; e < 150; ++e)
    for (int64_t b = 0; b < n; b += batch)
      std::tie(std::ignore, params, state) =
          step(params, state, x.slice(0, b, b + batch), y.slice(0, b, b + batch));
  const double acc_f32 = accuracy(logits(params, xt), yt);

  // Calibration on the training inputs: the input's and the hidden activation's ranges.
  auto range = [](const Tensor& t) {
    return std::pair{double(rlx::min(t).item<float>()), double(rlx::max(t).item<float>())};
  };
  auto [xlo, xhi] = range(x);
  auto [hlo, hhi] = range(hidden(params, x).relu());
  auto [sx, zx] = q::choose_qparams(xlo, xhi, DType::U8);
  auto [sh, zh] = q::choose_qparams(hlo, hhi, DType::U8); // relu output: zero point 0
  auto [qw1, sw1] = quantize_weight(params.w1);
  auto [qw2, sw2] = quantize_weight(params.w2);
  Tensor qb1 = quantize_bias(params.b1, sx, sw1), qb2 = quantize_bias(params.b2, sh, sw2);
  std::vector<float> mult1, out_scales;
  for (float s : sw1) mult1.push_back(sx * s / sh);
  for (float s : sw2) out_scales.push_back(sh * s);

  // The int8 network on the test points.
  Tensor qx = q::quantize_per_tensor(xt, sx, zx, DType::U8);
  Tensor qh = q::q_matmul(qx, qw1, qb1, zx, {0}, zh, mult1, DType::U8);
  Tensor acc = q::q_matmul(qh, qw2, qb2, zh, {0}, 0, {1.0f}, DType::I32);
  Tensor scores = q::dequantize(acc, {out_scales, std::vector<int32_t>(3, 0), 1, DType::I32});
  const double acc_int8 = accuracy(scores, yt);

  std::printf("f32 accuracy  %.2f%%\n", 100 * acc_f32);
  std::printf("int8 accuracy %.2f%% (weights per channel, activations per tensor: x scale %.4g "
              "zero point %d, hidden scale %.4g zero point %d)\n",
              100 * acc_int8, double(sx), zx, double(sh), zh);
  const bool ok = acc_f32 >= 0.90 && std::abs(acc_int8 - acc_f32) <= 0.02;
  if (!ok) std::printf("FAILED: f32 below 90%% or int8 more than 2 points from f32\n");
  return ok ? 0 : 1;
}
