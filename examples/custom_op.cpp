// examples/custom_op.cpp -- an op of your own: a fused soft-threshold
//   soft(x) = sign(x) * max(|x| - lambda, 0)
// registered from user code with its CPU kernel (on raw buffers), its shape rule and its VJP, then
// trained through. The model is a sparse linear regression whose weights are w = soft(v), fitted
// by gradient descent on v for the LASSO loss mean((x w - y)^2) + alpha |w|_1: the L1 term drives
// coefficients the data does not need into the dead zone |v| <= lambda, where they are exactly
// zero and receive no gradient through the op's VJP.
// Exits non-zero unless the loss falls at least 10x and the fit finds the true support and values.
#include <rlx/custom_op.hpp>
#include <rlx/rlx.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

namespace {

/// The op's attributes: a trivially copyable struct, passed as bytes (rlx::attr_bytes).
struct SoftThreshold {
  double lambda;
};

template <class T> void soft_threshold(const T* x, T* y, int64_t n, double lambda) {
  for (int64_t i = 0; i < n; ++i) {
    double v = double(x[i]), m = std::fabs(v) - lambda;
    y[i] = T(m > 0 ? std::copysign(m, v) : 0.0);
  }
}

void register_soft_threshold() {
  rlx::CustomOp op;
  op.num_inputs = 1;
  op.infer_shape = [](std::span<const rlx::ir::Shape> in, rlx::AttrBytes) {
    if (in[0].dtype() != rlx::DType::F32 && in[0].dtype() != rlx::DType::F64)
      throw rlx::Error(rlx::ErrorKind::Type, "needs f32 or f64, got " + rlx::ir::short_str(in[0]));
    return in[0]; // element-wise: the operand's shape and dtype
  };
  op.kernel = [](std::span<const rlx::Buffer* const> in, rlx::Buffer& out, rlx::AttrBytes attrs) {
    double lambda = rlx::attr_from_bytes<SoftThreshold>(attrs, "soft_threshold").lambda;
    const std::byte* x = in[0]->bytes().data();
    std::byte* y = out.bytes().data();
    if (out.dtype() == rlx::DType::F32)
      soft_threshold(reinterpret_cast<const float*>(x), reinterpret_cast<float*>(y), out.numel(),
                     lambda);
    else
      soft_threshold(reinterpret_cast<const double*>(x), reinterpret_cast<double*>(y), out.numel(),
                     lambda);
  };
  // d soft / dx is 1 outside the dead zone and 0 inside it.
  op.vjp = [](std::span<const rlx::Tensor> in, const rlx::Tensor&, const rlx::Tensor& dy,
              rlx::AttrBytes attrs) {
    double lambda = rlx::attr_from_bytes<SoftThreshold>(attrs, "soft_threshold").lambda;
    return std::vector<rlx::Tensor>{rlx::where(rlx::abs(in[0]) > lambda, dy, 0.0)};
  };
  rlx::register_op("soft_threshold", op);
}

} // namespace

int main() {
  register_soft_threshold();
  const int64_t m = 80, d = 10;
  const std::vector<float> w_true{2.0f, 0, 0, -3.0f, 0, 0, 1.5f, 0, 0, 0};
  rlx::Tensor x = rlx::randn({m, d}, 1);
  rlx::Tensor y = x.matmul(rlx::Tensor::from_vector(w_true, {d})) + 0.01f * rlx::randn({m}, 2);
  const auto attrs = rlx::attr_bytes(SoftThreshold{0.1});

  auto loss = [&](const rlx::Tensor& v) {
    rlx::Tensor w = rlx::custom("soft_threshold", {v}, attrs);
    rlx::Tensor r = x.matmul(w) - y;
    return rlx::mean(r * r) + 0.05f * rlx::sum(rlx::abs(w));
  };

  // A weight cannot cross the dead zone (its gradient is zero inside), so each starts just outside
  // it, on the side of its feature's correlation with y.
  rlx::Tensor v = rlx::sign(y.matmul(x)) * 0.15f;
  float first = 0, last = 0;
  for (int step = 0; step < 300; ++step) {
    auto [l, g] = rlx::value_and_grad(loss)(v);
    v = v - 0.05f * g;
    rlx::eval(v, l);
    last = l.item<float>();
    if (step == 0) first = last;
    if (step % 50 == 0) std::printf("step %3d  loss %.6f\n", step, double(last));
  }
  std::vector<float> w = rlx::custom("soft_threshold", {v}, attrs).to_vector<float>();
  int support_ok = 0;
  double max_err = 0;
  std::printf("w =");
  for (int64_t j = 0; j < d; ++j) {
    std::printf(" %.3f", double(w[std::size_t(j)]));
    bool zero_true = w_true[std::size_t(j)] == 0, zero_fit = w[std::size_t(j)] == 0;
    support_ok += zero_true == zero_fit;
    max_err = std::max(max_err, double(std::fabs(w[std::size_t(j)] - w_true[std::size_t(j)])));
  }
  std::printf("\nloss %.6f -> %.6f, support %d of %lld right, max |w - w_true| = %.4f\n",
              double(first), double(last), support_ok, (long long)d, max_err);
  bool ok = last * 10 < first && support_ok == d && max_err < 0.1;
  std::printf("%s\n", ok ? "ok" : "FAILED");
  return ok ? 0 : 1;
}
