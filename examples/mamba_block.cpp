// examples/mamba_block.cpp -- a tiny Mamba-style block on random input: in-projection to x and a
// gate z, a causal depthwise convolution over time, the selective scan (rlx::nn::selective_scan,
// with delta, B and C computed from the sequence), a skip term, SiLU gating and an
// out-projection. It checks two things and exits non-zero unless both hold:
//  - the scan equals the recurrence written step by step with Tensor ops (within 1e-4);
//  - the block is causal: changing the input at step t changes no output before t, and changes
//    the output at t.
#include <rlx/rlx.hpp>
#include <rlx/ssm.hpp>

#include <cmath>
#include <cstdio>
#include <vector>

using rlx::Tensor;

namespace {

constexpr int64_t kSeq = 24, kModel = 8, kInner = 16, kState = 4, kConv = 4;

struct Weights {
  Tensor w_in = rlx::randn({kModel, 2 * kInner}, 1) * 0.3f;
  Tensor conv = rlx::randn({kConv, kInner}, 2) * 0.4f;
  Tensor w_dt = rlx::randn({kInner, kInner}, 3) * 0.2f, b_dt = rlx::ones({kInner}) * -1.0f;
  Tensor w_b = rlx::randn({kInner, kState}, 4) * 0.3f, w_c = rlx::randn({kInner, kState}, 5) * 0.3f;
  // A = -exp(A_log) with Mamba's initialization A[h, n] = -(n + 1).
  Tensor a = -(rlx::zeros({kInner, kState}) + rlx::arange(1, kState + 1));
  Tensor d = rlx::ones({kInner});
  Tensor w_out = rlx::randn({kInner, kModel}, 6) * 0.3f;
};

/// The scan written out: state = exp(delta a) state + delta b x; y = state . c, per step.
Tensor scan_by_steps(const Tensor& x, const Tensor& delta, const Tensor& a, const Tensor& b,
                     const Tensor& c) {
  Tensor state = rlx::zeros({1, kInner, kState});
  std::vector<Tensor> ys;
  for (int64_t t = 0; t < kSeq; ++t) {
    Tensor xt = rlx::narrow(x, 1, t, 1).reshape({1, kInner, 1});
    Tensor dt = rlx::narrow(delta, 1, t, 1).reshape({1, kInner, 1});
    Tensor bt = rlx::narrow(b, 1, t, 1), ct = rlx::narrow(c, 1, t, 1); // [1, 1, N]
    state = rlx::exp(dt * a) * state + dt * bt * xt;
    ys.push_back(rlx::sum(state * ct, {2}));
  }
  return rlx::stack(ys, 1); // [1, S, H]
}

/// The block on u [1, S, D]; `by_steps` uses scan_by_steps instead of the selective_scan op.
Tensor block(const Weights& w, const Tensor& u, bool by_steps = false) {
  Tensor xz = rlx::matmul(u, w.w_in);
  Tensor x = rlx::narrow(xz, 2, 0, kInner), z = rlx::narrow(xz, 2, kInner, kInner);
  // Causal depthwise convolution: out[t] = sum_k conv[k] * x[t - (K-1) + k], zeros before 0.
  Tensor xp = rlx::pad(x, {0, 0, kConv - 1, 0, 0, 0});
  Tensor xc = rlx::zeros({1, kSeq, kInner});
  for (int64_t k = 0; k < kConv; ++k)
    xc = xc + rlx::narrow(xp, 1, k, kSeq) * rlx::narrow(w.conv, 0, k, 1);
  xc = rlx::silu(xc);
  Tensor delta = rlx::softplus(rlx::matmul(xc, w.w_dt) + w.b_dt);
  Tensor b = rlx::matmul(xc, w.w_b), c = rlx::matmul(xc, w.w_c);
  Tensor y = by_steps ? scan_by_steps(xc, delta, w.a, b, c)
                      : rlx::nn::selective_scan(xc, delta, w.a, b, c);
  y = (y + xc * w.d) * rlx::silu(z);
  return rlx::matmul(y, w.w_out);
}

} // namespace

int main() {
  Weights w;
  Tensor u = rlx::randn({1, kSeq, kModel}, 7);
  std::vector<float> y = block(w, u).to_vector<float>();
  std::vector<float> ref = block(w, u, true).to_vector<float>();
  double worst = 0;
  for (std::size_t i = 0; i < y.size(); ++i)
    worst = std::max(worst, double(std::fabs(y[i] - ref[i])));
  std::printf("selective_scan vs the recurrence by steps: max |difference| = %.3g\n", worst);

  const int64_t t = kSeq / 2;
  std::vector<float> bump(std::size_t(kSeq * kModel), 0.0f);
  for (int64_t j = 0; j < kModel; ++j) bump[std::size_t(t * kModel + j)] = 1.0f;
  std::vector<float> y2 =
      block(w, u + Tensor::from_vector(bump, {1, kSeq, kModel})).to_vector<float>();
  int64_t before = 0, at = 0;
  for (int64_t i = 0; i < kSeq * kModel; ++i) {
    bool differs = y[std::size_t(i)] != y2[std::size_t(i)];
    before += differs && i < t * kModel;
    at += differs && i / kModel == t;
  }
  std::printf("input changed at step %lld: %lld outputs before it changed, %lld of %lld at it\n",
              static_cast<long long>(t), static_cast<long long>(before), static_cast<long long>(at),
              static_cast<long long>(kModel));
  bool ok = worst <= 1e-4 && before == 0 && at > 0;
  std::printf("%s\n", ok ? "ok" : "FAILED");
  return ok ? 0 : 1;
}
