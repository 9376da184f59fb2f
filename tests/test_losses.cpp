// tests/test_losses.cpp -- rlx::nn's losses (include/rlx/nn.hpp) against torch.nn.functional:
// every case of tests/fixtures/make_losses.py (the same parameters are written here), the loss
// and d sum(loss) / d input by rlx::grad, on the interpreter and on the JIT.
#include "support/backends.hpp"
#include "support/check_error.hpp"
#include "support/compare.hpp"

#include <rlx/nn.hpp>
#include <rlx/rlx.hpp>

#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace {

using rlx::DType;
using rlx::ErrorKind;
using rlx::Tensor;
using rlx::nn::Reduction;
using rlx::test::check_error;
using rlx::test::Fixture;
using rlx::test::on_both_backends;
namespace nn = rlx::nn;

/// The inputs of one case: x, the target t, and the optional weights w and pw.
struct Args {
  Tensor x, t;
  std::optional<Tensor> w, pw;
};
using Loss = std::function<Tensor(const Tensor& x, const Args& a)>;

struct Case {
  const char* name;
  Loss loss;
};

const std::vector<Case>& cases() {
  static const std::vector<Case> all = {
      {"ce_mean", [](const Tensor& x, const Args& a) { return nn::cross_entropy(x, a.t); }},
      {"ce_sum",
       [](const Tensor& x, const Args& a) {
         return nn::cross_entropy(x, a.t, {.reduction = Reduction::Sum});
       }},
      {"ce_none",
       [](const Tensor& x, const Args& a) {
         return nn::cross_entropy(x, a.t, {.reduction = Reduction::None});
       }},
      {"ce_weight",
       [](const Tensor& x, const Args& a) { return nn::cross_entropy(x, a.t, {.weight = a.w}); }},
      {"ce_ignore",
       [](const Tensor& x, const Args& a) {
         return nn::cross_entropy(x, a.t, {.weight = a.w, .ignore_index = -100});
       }},
      {"ce_smooth",
       [](const Tensor& x, const Args& a) {
         return nn::cross_entropy(x, a.t, {.label_smoothing = 0.1});
       }},
      {"ce_smooth_weight_ignore",
       [](const Tensor& x, const Args& a) {
         return nn::cross_entropy(x, a.t,
                                  {.weight = a.w, .ignore_index = 2, .label_smoothing = 0.2});
       }},
      {"ce_smooth_sum_none",
       [](const Tensor& x, const Args& a) {
         return nn::cross_entropy(
             x, a.t, {.ignore_index = 1, .reduction = Reduction::None, .label_smoothing = 0.3});
       }},
      {"ce_spatial",
       [](const Tensor& x, const Args& a) {
         return nn::cross_entropy(x, a.t, {.label_smoothing = 0.1});
       }},
      {"ce_probs",
       [](const Tensor& x, const Args& a) {
         return nn::cross_entropy(x, a.t, {.weight = a.w, .label_smoothing = 0.1});
       }},
      {"ce_unbatched", [](const Tensor& x, const Args& a) { return nn::cross_entropy(x, a.t); }},
      {"nll_weight_ignore",
       [](const Tensor& x, const Args& a) {
         return nn::nll_loss(x, a.t, {.weight = a.w, .ignore_index = 0});
       }},
      {"nll_sum",
       [](const Tensor& x, const Args& a) {
         return nn::nll_loss(x, a.t, {.reduction = Reduction::Sum});
       }},
      {"mse_mean", [](const Tensor& x, const Args& a) { return nn::mse_loss(x, a.t); }},
      {"mse_none",
       [](const Tensor& x, const Args& a) { return nn::mse_loss(x, a.t, Reduction::None); }},
      {"l1_sum",
       [](const Tensor& x, const Args& a) { return nn::l1_loss(x, a.t, Reduction::Sum); }},
      {"huber",
       [](const Tensor& x, const Args& a) { return nn::huber_loss(x, a.t, Reduction::Mean, 0.5); }},
      {"smooth_l1", [](const Tensor& x,
                       const Args& a) { return nn::smooth_l1_loss(x, a.t, Reduction::None, 0.7); }},
      {"bce_logits",
       [](const Tensor& x, const Args& a) {
         return nn::binary_cross_entropy_with_logits(x, a.t, {.weight = a.w, .pos_weight = a.pw});
       }},
      {"bce_logits_sum",
       [](const Tensor& x, const Args& a) {
         return nn::binary_cross_entropy_with_logits(x, a.t, {.reduction = Reduction::Sum});
       }},
      {"bce_probs",
       [](const Tensor& x, const Args& a) { return nn::binary_cross_entropy(x, a.t, a.w); }},
      {"kl_batchmean",
       [](const Tensor& x, const Args& a) { return nn::kl_div(x, a.t, Reduction::BatchMean); }},
      {"kl_log_target",
       [](const Tensor& x, const Args& a) { return nn::kl_div(x, a.t, Reduction::Sum, true); }},
      {"kl_none",
       [](const Tensor& x, const Args& a) { return nn::kl_div(x, a.t, Reduction::None); }},
  };
  return all;
}

/// got has want's sizes and dtype and each element is within 1e-5 relative (1e-6 absolute): the
/// references are float64 values rounded once to f32.
void expect_close(const Tensor& got, const Tensor& want, const std::string& what) {
  rlx::test::check_close(got, want, {1e-5, 1e-6}, what);
}

TEST_CASE("every loss and its input gradient equal torch.nn.functional's on both backends") {
  on_both_backends([] {
    for (const Case& c : cases()) {
      CAPTURE(c.name);
      Fixture fx("losses", c.name);
      Args a{fx("x"), fx("t"), std::nullopt, std::nullopt};
      if (std::filesystem::exists(fx.dir + "w.npy")) a.w = fx("w");
      if (std::filesystem::exists(fx.dir + "pw.npy")) a.pw = fx("pw");
      expect_close(c.loss(a.x, a), fx("want"), std::string(c.name) + " loss");
      auto total = [&](Tensor x) { return c.loss(x, a).sum(); };
      expect_close(rlx::grad(total)(a.x), fx("dx"), std::string(c.name) + " d/dx");
    }
  });
}

TEST_CASE("fixture cases and the test's table are the same set") {
  std::size_t n = 0;
  for (const auto& e : std::filesystem::directory_iterator(std::string(RLX_SOURCE_DIR) +
                                                           "/tests/fixtures/losses")) {
    bool listed = false;
    for (const Case& c : cases()) listed = listed || e.path().filename() == c.name;
    CHECK_MESSAGE(listed, e.path().filename().string() << " has no row in cases()");
    ++n;
  }
  CHECK(n == cases().size());
}

TEST_CASE("a loss works inside jit with the targets as arguments") {
  on_both_backends([] {
    Fixture fx("losses", "ce_ignore");
    auto f = rlx::jit([](Tensor x, Tensor t, Tensor w) {
      return nn::cross_entropy(x, t, {.weight = w, .ignore_index = -100});
    });
    expect_close(f(fx("x"), fx("t"), fx("w")), fx("want"), "jitted cross_entropy");
  });
}

TEST_CASE("bad loss arguments name the loss, the shapes and the caller's line") {
  Tensor x = rlx::zeros({4, 3});
  Tensor labels = rlx::tensor({0, 1, 2, 1}).astype(DType::I64);
  check_error([&] { (void)nn::cross_entropy(x, rlx::tensor({0, 1}).astype(DType::I64)); },
              ErrorKind::Shape, "cross_entropy: target i64[2] must have");
  check_error([&] { (void)nn::cross_entropy(x, labels, {.weight = rlx::ones({4})}); },
              ErrorKind::Shape, "weight must be [3]");
  check_error([&] { (void)nn::cross_entropy(x, rlx::tensor({0, 1, 3, 1}).astype(DType::I64)); },
              ErrorKind::Value, "target 3 is out of range for 3 classes");
  check_error([&] { (void)nn::cross_entropy(x, labels, {.label_smoothing = 1.5}); },
              ErrorKind::Value, "label_smoothing");
  check_error([&] { (void)nn::nll_loss(labels, labels); }, ErrorKind::Type,
              "nll_loss: input must be a float tensor");
  check_error([&] { (void)nn::mse_loss(x, x, Reduction::BatchMean); }, ErrorKind::Value,
              "kl_div's only");
  check_error([&] { (void)nn::binary_cross_entropy(rlx::full({2}, 1.5f), rlx::ones({2})); },
              ErrorKind::Value, "probabilities in [0, 1]");
  std::string msg = check_error([&] { (void)nn::huber_loss(x, x, Reduction::Mean, -1.0); },
                                ErrorKind::Value, "huber_loss: delta");
  CHECK(msg.find("test_losses.cpp") != std::string::npos);
}

} // namespace
