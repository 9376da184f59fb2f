// tests/test_optim.cpp -- rlx::optim against torch.optim: the parameters after each of five steps
// on a fixed quadratic (tests/fixtures/make_optim.py), eagerly and under rlx::jit, on both
// backends; and the optimizers' errors.
#include "support/backends.hpp"
#include "support/check_error.hpp"
#include "support/compare.hpp"

#include <rlx/rlx.hpp>

#include <doctest/doctest.h>

#include <cmath>
#include <functional>
#include <string>
#include <tuple>

using rlx::Tensor;

namespace {

struct Quad {
  Tensor w, c;
};
RLX_PYTREE(Quad, w, c)

Tensor loss_of(const Quad& p, const Tensor& x, const Tensor& y) {
  Tensor r = rlx::matmul(x, p.w) + p.c - y;
  return rlx::mean(rlx::sum(r * r, {1}));
}

/// Every element within 1e-6 relative (plus 1e-12 absolute for elements near zero).
void check_close(const Tensor& got, const Tensor& want, const std::string& what) {
  rlx::test::check_close(got, want, {1e-6, 1e-12}, what);
}

const rlx::test::Fixture problem("optim", "problem");

/// Five steps of `opt` from the fixture's start, each compared with torch's parameters.
void check_against_torch(const std::string& name, const rlx::optim::Optimizer& opt, bool jitted) {
  rlx::test::Fixture want(rlx::test::Fixture("optim", name));
  Tensor x = problem("x"), y = problem("y"), ws = want("w"), cs = want("c");
  Quad p{problem("w0"), problem("c0")};
  rlx::optim::State state = opt.init(p);
  auto step = [&](const Quad& q, const rlx::optim::State& s) {
    Quad g = rlx::grad(loss_of)(q, x, y);
    return opt.update(g, s, q);
  };
  auto jstep = rlx::jit(step);
  for (int i = 0; i < 5; ++i) {
    std::tie(p, state) = jitted ? jstep(p, state) : step(p, state);
    check_close(p.w, ws[i], name + " w after step " + std::to_string(i + 1));
    check_close(p.c, cs[i], name + " c after step " + std::to_string(i + 1));
  }
  CHECK(state.step.item<int64_t>() == 5);
  if (jitted) CHECK(jstep.stats().traces == 1);
}

void check_case(const std::string& name, const rlx::optim::Optimizer& opt) {
  rlx::test::on_both_backends([&] {
    check_against_torch(name, opt, false);
    check_against_torch(name, opt, true);
  });
}

} // namespace

TEST_CASE("optim: sgd matches torch.optim.SGD step by step") {
  check_case("sgd_plain", rlx::optim::sgd(0.1));
}

TEST_CASE("optim: sgd with momentum matches torch (the first buffer is the gradient)") {
  check_case("sgd_momentum", rlx::optim::sgd(0.05, 0.9));
}

TEST_CASE("optim: sgd with nesterov momentum and weight decay matches torch") {
  check_case("sgd_nesterov_weight_decay", rlx::optim::sgd(0.05, 0.9, true, 0.01));
}

TEST_CASE("optim: adam matches torch.optim.Adam with its bias corrections") {
  check_case("adam", rlx::optim::adam(0.1));
}

TEST_CASE("optim: adam with other betas and eps matches torch") {
  check_case("adam_betas_eps", rlx::optim::adam(0.05, 0.8, 0.99, 1e-6));
}

TEST_CASE("optim: adamw's decoupled weight decay matches torch.optim.AdamW") {
  check_case("adamw", rlx::optim::adamw(0.1, 0.9, 0.999, 1e-8, 0.1));
}

TEST_CASE("optim: the state is a pytree of Tensors with one buffer per parameter leaf") {
  Quad p{rlx::ones({3, 2}), rlx::zeros({2})};
  rlx::optim::State s = rlx::optim::adam(1e-3).init(p);
  CHECK(rlx::tree_leaves(s).size() == 5); // step, m for w and c, v for w and c
  CHECK(s.m[0].sizes() == rlx::Dims{3, 2});
  CHECK(rlx::tree_leaves(rlx::optim::sgd(0.1).init(p)).size() == 1); // no momentum: step only
  CHECK(rlx::tree_leaves(rlx::optim::sgd(0.1, 0.9).init(p)).size() == 3);
}

TEST_CASE("optim: f32 parameters stay f32 through adam") {
  rlx::test::on_both_backends([] {
    Quad p{rlx::ones({3, 2}), rlx::zeros({2})};
    auto opt = rlx::optim::adam(0.1);
    auto s = opt.init(p);
    Quad g{rlx::ones({3, 2}), rlx::ones({2})};
    std::tie(p, s) = opt.update(g, s, p);
    CHECK(p.w.dtype() == rlx::DType::F32);
    // First Adam step: m_hat / sqrt(v_hat) = g / |g| = 1, so each parameter moves by lr.
    for (float v : p.c.to_vector<float>()) CHECK(v == doctest::Approx(-0.1).epsilon(1e-6));
  });
}

TEST_CASE("optim: bad hyperparameters and mismatched states are errors naming the line") {
  using rlx::ErrorKind;
  int line = __LINE__ + 1;
  std::string msg = rlx::test::check_error([] { (void)rlx::optim::adam(0.1, 1.5); },
                                           ErrorKind::Value, "rlx::optim::adam: b1 = 1.5");
  CHECK(msg.find("test_optim.cpp:" + std::to_string(line)) != std::string::npos);
  rlx::test::check_error([] { (void)rlx::optim::sgd(0.1, 0, true); }, ErrorKind::Value,
                         "nesterov needs momentum");
  Quad p{rlx::ones({3, 2}), rlx::zeros({2})};
  auto opt = rlx::optim::adam(0.1);
  auto other = opt.init(std::vector<Tensor>{rlx::ones({3})});
  line = __LINE__ + 1;
  msg = rlx::test::check_error([&] { (void)opt.update(p, other, p); }, ErrorKind::Value,
                               "rlx::optim::adam.update: 2 parameter leaves");
  CHECK(msg.find("test_optim.cpp:" + std::to_string(line)) != std::string::npos);
  rlx::test::check_error([&] { (void)opt.init(std::tuple{rlx::ones({2}, rlx::DType::I64)}); },
                         ErrorKind::Type, "parameters must be floating-point tensors");
}
