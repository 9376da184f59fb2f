// examples/data_pipeline.cpp -- a numpy-style data pipeline on rlx Tensors, as a user coming from
// numpy would write it: make a noisy dataset with explicit random keys, clean it (drop rows with
// NaNs, reject outliers by the median absolute deviation), describe it (quantiles, a histogram,
// per-class counts, the covariance by einsum), shuffle and split it, and fit a linear model by
// least squares. It checks that the fit recovers the coefficients the data was made with and
// exits non-zero otherwise (the examples suite runs it).
#include <rlx/rlx.hpp>

#include <cmath>
#include <cstdio>
#include <limits>
#include <vector>

int main() {
  using rlx::Tensor;
  namespace random = rlx::random;
  const std::vector<random::Key> keys = random::split(random::Key(2026), 5);
  const int64_t n = 4000, d = 4;

  // ---- Make: y = X w + 0.7 + noise, then corrupt 1% of the features and 20 labels.
  Tensor X = random::normal(keys[0], {n, d});
  Tensor w_true = rlx::tensor({1.5f, -2.0f, 0.5f, 3.0f});
  Tensor y = X.matmul(w_true) + 0.7f + 0.1f * random::normal(keys[1], {n});
  X = rlx::where(random::bernoulli(keys[2], 0.01, {n, d}), std::numeric_limits<float>::quiet_NaN(),
                 X);
  Tensor bad = random::choice(keys[3], n, {20}, /*replace=*/false);
  y = rlx::scatter(y, 0, bad, rlx::full({20}, 1000.f));

  // ---- Clean: rows without NaNs, labels within 5 scaled MADs of the median.
  Tensor complete = !rlx::any(rlx::isnan(X), {1});
  X = X.index({complete});
  y = y.index({complete});
  Tensor med = rlx::median(y);
  Tensor mad = 1.4826f * rlx::median(rlx::abs(y - med));
  Tensor inlier = rlx::abs(y - med) < 5.f * mad;
  X = X.index({inlier});
  y = y.index({inlier});
  const int64_t m = X.size(0);
  std::printf("kept %lld of %lld rows (%lld with NaNs or outliers dropped)\n", (long long)m,
              (long long)n, (long long)(n - m));

  // ---- Describe.
  std::vector<float> q = rlx::quantile(y, std::vector<double>{0.25, 0.5, 0.75}).to_vector<float>();
  std::printf("y quartiles: %.3f %.3f %.3f\n", q[0], q[1], q[2]);
  auto [counts, edges] = rlx::histogram(y, 8);
  std::printf("histogram of y: %s\n", counts.str().c_str());
  Tensor above = (y > rlx::median(y)).astype(rlx::DType::I64);
  std::printf("rows per class (y above its median): %s\n", rlx::bincount(above).str().c_str());
  Tensor mu = X.mean(0, true), sd = X.std(0, true);
  Tensor Z = (X - mu) / sd;
  Tensor cov = rlx::einsum("ni,nj->ij", {Z, Z}) / float(m); // sd has ddof 0 too
  std::printf("covariance of the standardized features:\n%s\n", cov.str().c_str());

  // ---- Shuffle, split 80/20, fit [Z, 1] c = y by least squares on the training rows.
  Tensor order = random::permutation(keys[4], m);
  Tensor A = rlx::concat({rlx::take(Z, order, 0), rlx::ones({m, 1})}, 1);
  Tensor b = rlx::take(y, order, 0);
  const int64_t n_train = m * 4 / 5;
  Tensor A_train = rlx::narrow(A, 0, 0, n_train), b_train = rlx::narrow(b, 0, 0, n_train);
  Tensor A_test = rlx::narrow(A, 0, n_train, m - n_train);
  Tensor b_test = rlx::narrow(b, 0, n_train, m - n_train);
  Tensor c = rlx::linalg::lstsq(A_train, b_train);
  Tensor residual = b_test - A_test.matmul(c);
  float r2 =
      (1.f - residual.square().sum() / (b_test - b_test.mean()).square().sum()).item<float>();
  // Back to the raw features' scale: w = c[:d] / sd, intercept = c[d] - sum(c[:d] mu / sd).
  Tensor c_w = rlx::narrow(c, 0, 0, d);
  Tensor w = c_w / sd.reshape({d});
  Tensor intercept =
      rlx::narrow(c, 0, d, 1).sum() - (c_w * mu.reshape({d}) / sd.reshape({d})).sum();
  std::printf("fitted w = %s, intercept %.4f, test R^2 %.5f\n", w.str().c_str(),
              intercept.item<float>(), r2);

  float w_err = rlx::max(rlx::abs(w - w_true)).item<float>();
  bool ok = m > n * 9 / 10 && m < n && w_err < 0.02f &&
            std::abs(intercept.item<float>() - 0.7f) < 0.02f && r2 > 0.99f &&
            rlx::allclose(rlx::diagonal(cov), rlx::ones({d}), 1e-4, 1e-4);
  std::printf("%s (max |w - w_true| = %.4f)\n", ok ? "ok" : "FAILED", w_err);
  return ok ? 0 : 1;
}
