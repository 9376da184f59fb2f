// tests/test_numpy_logic.cpp -- numpy's logic, cleaning and math functions and PyTorch's
// activations (src/frontend/ops_numpy.cpp) against numpy/torch references
// (tests/fixtures/numpy_logic/, written by tests/fixtures/make_numpy_logic.py with the parameters
// repeated here) on both backends: edge values (NaN, +-inf, +-0, negative divisors, integer
// dtypes, broadcasting), the Tensor methods, gradients against central differences in f64, and
// errors that name the function and the caller's line.
#include "support/backends.hpp"
#include "support/check_error.hpp"
#include "support/compare.hpp"

#include <rlx/rlx.hpp>

#include <doctest/doctest.h>

#include <cmath>
#include <complex>
#include <functional>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

namespace {

using rlx::DType;
using rlx::ErrorKind;
using rlx::Number;
using rlx::Tensor;
using rlx::test::check_error;
using rlx::test::on_both_backends;

/// A case of tests/fixtures/numpy_logic/.
rlx::test::Fixture case_of(const std::string& name) { return {"numpy_logic", name}; }

struct Tol {
  rlx::test::Tolerance close{1e-5, 1e-6};
  bool signed_zeros = false; ///< a zero must be a zero of the reference's sign
};

/// got has want's sizes and dtype, floats within tol (NaN matches NaN, infinities exactly),
/// integers and bools exactly.
void expect_match(const Tensor& got, const Tensor& want, const std::string& what, Tol tol = {}) {
  if (!rlx::test::check_close(got, want, tol.close, what) || !tol.signed_zeros) return;
  std::vector<double> g = got.to_vector<double>(), w = want.to_vector<double>();
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < w.size(); ++i)
    wrong += w[i] == 0 && (g[i] != 0 || std::signbit(g[i]) != std::signbit(w[i]));
  CHECK_MESSAGE(wrong == 0,
                what << ": " << wrong << " of the reference's zeros are not zeros of its sign");
}

const Tol kSignedZeros{{1e-5, 1e-6}, true};

} // namespace

// ---- Logic

TEST_CASE("any and all reduce truthiness like numpy, over axes, keepdims, bools, ints, empty") {
  on_both_backends([] {
    auto fx = case_of("any_all");
    Tensor x = fx("x"), b = fx("b"), i = fx("i"), e = fx("e");
    expect_match(rlx::any(x), fx("want_any"), "any");
    expect_match(rlx::all(x), fx("want_all"), "all");
    expect_match(rlx::any(x, {1}), fx("want_any_1"), "any axis 1");
    expect_match(x.all(1), fx("want_all_1"), "x.all(1)");
    expect_match(rlx::any(x, {0, 2}, true), fx("want_any_02k"), "any (0,2) keepdims");
    expect_match(x.all({0, 2}, true), fx("want_all_02k"), "x.all((0,2), keepdims)");
    expect_match(x.any(-1), fx("want_any_m1"), "x.any(-1)");
    expect_match(rlx::all(x, {-1}), fx("want_all_m1"), "all axis -1");
    expect_match(rlx::any(b, {0}), fx("want_b_any_0"), "any of bool");
    expect_match(rlx::all(b, {0}), fx("want_b_all_0"), "all of bool");
    expect_match(rlx::any(i, {1}), fx("want_i_any_1"), "any of i32");
    expect_match(rlx::all(i, {1}), fx("want_i_all_1"), "all of i32");
    expect_match(rlx::any(e, {0}), fx("want_e_any_0"), "any of empty rows");
    expect_match(rlx::all(e, {0}), fx("want_e_all_0"), "all of empty rows");
    expect_match(e.any(), fx("want_e_any"), "any of empty");
    expect_match(e.all(), fx("want_e_all"), "all of empty");
  });
}

TEST_CASE("isnan, isinf, isfinite and signbit classify floats, ints and bools like numpy") {
  on_both_backends([] {
    auto fx = case_of("classify");
    for (std::string name : {"x", "x64", "i", "b"}) {
      Tensor x = fx(name);
      expect_match(rlx::isnan(x), fx("want_isnan_" + name), "isnan " + name);
      expect_match(x.isnan(), fx("want_isnan_" + name), "x.isnan() " + name);
      expect_match(rlx::isinf(x), fx("want_isinf_" + name), "isinf " + name);
      expect_match(rlx::isfinite(x), fx("want_isfinite_" + name), "isfinite " + name);
      expect_match(rlx::signbit(x), fx("want_signbit_" + name), "signbit " + name);
    }
  });
}

TEST_CASE("logical_xor of truthiness broadcasts, and NaN is truthy") {
  on_both_backends([] {
    auto fx = case_of("logical_xor");
    expect_match(rlx::logical_xor(fx("a"), fx("b")), fx("want"), "logical_xor f32 ^ i32");
    expect_match(rlx::logical_xor(fx("p"), fx("q")), fx("want_pq"), "logical_xor bool");
  });
}

TEST_CASE("isclose and allclose follow numpy's rtol, atol, infinities and equal_nan") {
  on_both_backends([] {
    auto fx = case_of("isclose");
    Tensor a = fx("a"), b = fx("b"), u = fx("u"), v = fx("v");
    expect_match(rlx::isclose(a, b), fx("want"), "isclose");
    expect_match(rlx::isclose(a, b, 1e-3, 0), fx("want_rtol"), "isclose rtol 1e-3 atol 0");
    expect_match(rlx::isclose(a, b, 1e-5, 1e-8, true), fx("want_nan"), "isclose equal_nan");
    CHECK(rlx::allclose(a, a) == fx("want_all_self").item<bool>());
    CHECK(rlx::allclose(a, a, 1e-5, 1e-8, true) == fx("want_all_self_nan").item<bool>());
    CHECK(rlx::allclose(u, v) == fx("want_all_uv").item<bool>());
    CHECK(rlx::allclose(u, v + 1e-3) == fx("want_all_far").item<bool>());
  });
}

// ---- Cleaning

TEST_CASE("nan_to_num replaces NaN and infinities with numpy's defaults or given values") {
  on_both_backends([] {
    auto fx = case_of("nan_to_num");
    expect_match(rlx::nan_to_num(fx("x")), fx("want_x"), "nan_to_num f32");
    expect_match(rlx::nan_to_num(fx("x64")), fx("want_x64"), "nan_to_num f64");
    expect_match(rlx::nan_to_num(fx("x"), -1, 100, -100), fx("want_x_custom"), "custom f32");
    expect_match(rlx::nan_to_num(fx("x64"), -1, 100, -100), fx("want_x64_custom"), "custom f64");
    expect_match(rlx::nan_to_num(fx("i")), fx("want_i"), "nan_to_num i32");
  });
}

TEST_CASE("clip takes scalar bounds, one open bound, or tensor bounds that broadcast") {
  on_both_backends([] {
    auto fx = case_of("clip");
    Tensor x = fx("x");
    expect_match(rlx::clip(x, -1.0, 1.5), fx("want_scalar"), "clip scalars");
    expect_match(x.clip(-1.0, 1.5), fx("want_scalar"), "x.clip scalars");
    expect_match(rlx::clip(x, -0.5, std::nullopt), fx("want_lo_only"), "clip lo only");
    expect_match(rlx::clip(x, fx("lo"), fx("hi")), fx("want_tensor"), "clip tensors");
    expect_match(x.clip(fx("lo"), fx("hi")), fx("want_tensor"), "x.clip tensors");
  });
}

TEST_CASE("concatenate is concat, promoting operands") {
  on_both_backends([] {
    auto fx = case_of("concatenate");
    expect_match(rlx::concatenate({fx("a"), fx("b")}, 0), fx("want_0"), "concatenate axis 0");
    expect_match(rlx::concatenate({fx("a"), fx("c")}, -1), fx("want_m1"), "concatenate -1");
  });
}

// ---- Binary math

TEST_CASE("hypot, arctan2, logaddexp, copysign, power and true_divide broadcast like numpy") {
  on_both_backends([] {
    auto fx = case_of("binary_math");
    for (std::string sfx : {"", "64"}) {
      Tensor a = fx("a" + sfx), b = fx("b" + sfx);
      expect_match(rlx::hypot(a, b), fx("want_hypot" + sfx), "hypot" + sfx);
      expect_match(rlx::arctan2(a, b), fx("want_arctan2" + sfx), "arctan2" + sfx);
      expect_match(rlx::logaddexp(a, b), fx("want_logaddexp" + sfx), "logaddexp" + sfx);
      expect_match(rlx::copysign(a, b), fx("want_copysign" + sfx), "copysign" + sfx);
      expect_match(rlx::power(rlx::abs(a) + 0.1, b), fx("want_power" + sfx), "power" + sfx);
      expect_match(rlx::true_divide(a, b), fx("want_true_divide" + sfx), "true_divide" + sfx);
    }
  });
}

TEST_CASE("arctan2, hypot, logaddexp and copysign follow numpy at zeros, infinities and NaN") {
  on_both_backends([] {
    auto fx = case_of("binary_edges");
    for (std::string sfx : {"", "64"}) {
      Tensor a = fx("a" + sfx), b = fx("b" + sfx);
      expect_match(rlx::arctan2(a, b), fx("want_arctan2" + sfx), "arctan2 edges" + sfx,
                   kSignedZeros);
      expect_match(rlx::hypot(a, b), fx("want_hypot" + sfx), "hypot edges" + sfx);
      expect_match(rlx::logaddexp(a, b), fx("want_logaddexp" + sfx), "logaddexp edges" + sfx);
      expect_match(rlx::copysign(a, b), fx("want_copysign" + sfx), "copysign edges" + sfx,
                   kSignedZeros);
    }
  });
}

TEST_CASE("hypot neither overflows nor underflows at the ends of f32's range") {
  on_both_backends([] {
    auto fx = case_of("hypot_scale");
    expect_match(rlx::hypot(fx("a"), fx("b")), fx("want"), "hypot scale");
  });
}

TEST_CASE("floor_divide and remainder follow numpy's divmod for floats, signs and edges") {
  on_both_backends([] {
    auto fx = case_of("divmod_float");
    for (std::string sfx : {"", "64"}) {
      Tensor a = fx("a" + sfx), b = fx("b" + sfx);
      expect_match(rlx::floor_divide(a, b), fx("want_floor_divide" + sfx), "floor_divide" + sfx,
                   kSignedZeros);
      expect_match(rlx::remainder(a, b), fx("want_remainder" + sfx), "remainder" + sfx,
                   kSignedZeros);
      expect_match(rlx::mod(a, b), fx("want_remainder" + sfx), "mod" + sfx, kSignedZeros);
    }
    expect_match(rlx::floor_divide(fx("ra"), fx("rb")), fx("want_floor_divide_r"),
                 "floor_divide broadcast", kSignedZeros);
    expect_match(rlx::remainder(fx("ra"), fx("rb")), fx("want_remainder_r"), "remainder broadcast",
                 kSignedZeros);
  });
}

TEST_CASE("floor_divide and remainder of integers round toward -inf and give 0 by zero") {
  on_both_backends([] {
    auto fx = case_of("divmod_int");
    expect_match(rlx::floor_divide(fx("a"), fx("b")), fx("want_floor_divide"), "i32 //");
    expect_match(rlx::remainder(fx("a"), fx("b")), fx("want_remainder"), "i32 %");
    expect_match(rlx::floor_divide(fx("la"), fx("lb")), fx("want_floor_divide_l"), "i64 //");
    expect_match(rlx::remainder(fx("la"), fx("lb")), fx("want_remainder_l"), "i64 %");
    expect_match(rlx::floor_divide(fx("ua"), fx("ub")), fx("want_floor_divide_u"), "u8 //");
    expect_match(rlx::mod(fx("ua"), fx("ub")), fx("want_remainder_u"), "u8 %");
  });
}

TEST_CASE("a scalar operand gives what the same value as a rank-0 tensor of its dtype gives") {
  on_both_backends([] {
    auto fx = case_of("divmod_int");
    Tensor a = fx("a"), ra = case_of("divmod_float")("ra");
    Tensor m3 = rlx::scalar<int32_t>(-3), f2 = rlx::scalar<float>(2.5f);
    expect_match(rlx::remainder(a, -3), rlx::remainder(a, m3), "remainder(i32, -3)");
    expect_match(rlx::floor_divide(-3, a), rlx::floor_divide(m3, a), "floor_divide(-3, i32)");
    expect_match(rlx::hypot(ra, 2.5), rlx::hypot(ra, f2), "hypot(f32, 2.5)");
    expect_match(rlx::arctan2(2.5, ra), rlx::arctan2(f2, ra), "arctan2(2.5, f32)");
    expect_match(rlx::power(ra, 2), rlx::pow(ra, 2), "power is pow");
    CHECK(rlx::remainder(a, -3).dtype() == DType::I32);
  });
}

// ---- Unary math

TEST_CASE("unary math matches numpy in f32 and f64 at ordinary and edge values") {
  on_both_backends([] {
    using UnaryFn = Tensor (*)(const Tensor&, rlx::Loc);
    const std::vector<std::pair<std::string, UnaryFn>> fns = {
        {"square", rlx::square},   {"log2", rlx::log2},       {"log10", rlx::log10},
        {"exp2", rlx::exp2},       {"sinh", rlx::sinh},       {"cosh", rlx::cosh},
        {"arcsin", rlx::arcsin},   {"arccos", rlx::arccos},   {"arctan", rlx::arctan},
        {"arcsinh", rlx::arcsinh}, {"arccosh", rlx::arccosh}, {"arctanh", rlx::arctanh},
    };
    for (const auto& [name, fn] : fns) {
      auto fx = case_of(name);
      Tol tol = name == "arctanh" || name == "arcsinh" || name == "sinh" ? kSignedZeros : Tol{};
      expect_match(fn(fx("x"), rlx::Loc::current()), fx("want"), name + " f32", tol);
      // f64 compositions round at each step: a few ulp of f64, far inside 1e-12.
      expect_match(fn(fx("x64"), rlx::Loc::current()), fx("want64"), name + " f64",
                   {{1e-12, 1e-300}, tol.signed_zeros});
    }
    auto sq = case_of("square");
    expect_match(sq("i").square(), sq("want_i"), "x.square() of i32");
    auto l2 = case_of("log2");
    expect_match(rlx::log2(l2("i")), l2("want_i"), "log2 of i32");
    auto dr = case_of("deg_rad");
    expect_match(rlx::deg2rad(dr("x")), dr("want_deg2rad"), "deg2rad");
    expect_match(rlx::rad2deg(dr("x")), dr("want_rad2deg"), "rad2deg");
    expect_match(rlx::deg2rad(dr("i")), dr("want_deg2rad_i"), "deg2rad of i32");
  });
}

// ---- Reductions as methods, norms

TEST_CASE("var, std, logsumexp, cumsum and norm work as methods and match numpy and torch") {
  on_both_backends([] {
    auto fx = case_of("reductions");
    Tensor x = fx("x");
    expect_match(x.var(1, false, 1), fx("want_var_1_ddof1"), "x.var(1, ddof 1)");
    expect_match(x.std({0, 2}, true), fx("want_std_02k"), "x.std((0,2), keepdims)");
    expect_match(x.logsumexp(-1), fx("want_logsumexp_m1"), "x.logsumexp(-1)");
    expect_match(x.cumsum(0), fx("want_cumsum_0"), "x.cumsum(0)");
    const double inf = std::numeric_limits<double>::infinity();
    expect_match(x.norm(), fx("want_norm_2"), "x.norm()");
    expect_match(rlx::norm(x), fx("want_norm_2"), "norm(x)");
    expect_match(x.norm(1, 1), fx("want_norm_1_ax1"), "norm ord 1 axis 1");
    expect_match(x.norm(inf, 0), fx("want_norm_inf_ax0"), "norm ord inf axis 0");
    expect_match(rlx::norm(x, -inf, {2}), fx("want_norm_minf_ax2"), "norm ord -inf axis 2");
    expect_match(x.norm(0, -1), fx("want_norm_0_axm1"), "norm ord 0 axis -1");
    expect_match(x.norm(3, {0, 2}, true), fx("want_norm_3_ax02k"), "norm ord 3 keepdims");
    expect_match(rlx::norm(x, -1.5, {1}), fx("want_norm_m15_ax1"), "norm ord -1.5");
    expect_match(x.norm(0.5), fx("want_norm_half"), "norm ord 0.5");
    expect_match(rlx::norm(fx("i")), fx("want_norm_i"), "norm of i32");
  });
}

// ---- PyTorch activations

TEST_CASE("the PyTorch activations match torch.nn.functional") {
  on_both_backends([] {
    auto fx = case_of("activations");
    Tensor x = fx("x");
    expect_match(rlx::selu(x), fx("want_selu"), "selu");
    expect_match(rlx::celu(x, 0.7), fx("want_celu"), "celu");
    expect_match(rlx::relu6(x), fx("want_relu6"), "relu6");
    expect_match(rlx::hardtanh(x, -0.5, 2.0), fx("want_hardtanh"), "hardtanh");
    expect_match(rlx::softshrink(x, 0.3), fx("want_softshrink"), "softshrink");
    expect_match(rlx::hardshrink(x, 0.4), fx("want_hardshrink"), "hardshrink");
    expect_match(rlx::tanhshrink(x), fx("want_tanhshrink"), "tanhshrink");
    expect_match(rlx::threshold(x, 0.1, -2.0), fx("want_threshold"), "threshold");
    expect_match(rlx::glu(x, -1), fx("want_glu_m1"), "glu -1");
    expect_match(rlx::glu(x, 0), fx("want_glu_0"), "glu 0");
    expect_match(rlx::prelu(x, fx("pw")), fx("want_prelu"), "prelu per channel");
    expect_match(rlx::prelu(x, fx("p1")), fx("want_prelu1"), "prelu one weight");
    expect_match(rlx::softmin(x, 1), fx("want_softmin_1"), "softmin");
    expect_match(rlx::hardswish(x), fx("want_hardswish"), "hardswish");
    expect_match(rlx::logsigmoid(x), fx("want_logsigmoid"), "logsigmoid");
    expect_match(rlx::softplus(x, 2.0, 3.0), fx("want_softplus_b2_t3"), "softplus beta");
  });
}

TEST_CASE("softshrink, hardshrink and threshold keep NaN (docs/semantics.md)") {
  on_both_backends([] {
    Tensor x = rlx::tensor({std::numeric_limits<float>::quiet_NaN()});
    CHECK(std::isnan(rlx::softshrink(x, 0.5).item<float>()));
    CHECK(std::isnan(rlx::hardshrink(x, 0.5).item<float>()));
    CHECK(std::isnan(rlx::threshold(x, 0.1, 5.0).item<float>()));
  });
}

// ---- Gradients (f64, central differences)

namespace {

/// A fixed, uneven weighting so that each output element's gradient counts differently.
Tensor weights_like(const Tensor& y) {
  std::vector<double> w(std::size_t(y.numel()));
  for (std::size_t i = 0; i < w.size(); ++i) w[i] = 1.0 + 0.37 * double(i % 7) - 0.11 * double(i);
  return Tensor::from_vector(w, y.sizes());
}

/// d/d args of sum(f(args) * w) by rlx::grad against central differences of the same loss.
void check_grad(const std::string& what,
                const std::function<Tensor(const Tensor&, const Tensor&)>& f, std::vector<double> a,
                std::vector<double> b = {0.0}, rlx::Dims b_sizes = {1}) {
  INFO(what);
  Tensor ta = Tensor::from_vector(a, {int64_t(a.size())});
  Tensor tb = Tensor::from_vector(b, b_sizes);
  auto loss = [&](const Tensor& x, const Tensor& y) {
    Tensor out = f(x, y);
    return rlx::sum(out * weights_like(out));
  };
  std::vector<Tensor> g = rlx::grad(loss, {0, 1})(ta, tb);
  REQUIRE(g.size() == 2);
  const double h = 1e-6;
  for (int which = 0; which < 2; ++which) {
    std::vector<double>& v = which == 0 ? a : b;
    std::vector<double> got = g[std::size_t(which)].to_vector<double>();
    REQUIRE(got.size() == v.size());
    for (std::size_t i = 0; i < v.size(); ++i) {
      auto at = [&](double d) {
        std::vector<double> p = v;
        p[i] += d;
        Tensor x = which == 0 ? Tensor::from_vector(p, {int64_t(p.size())}) : ta;
        Tensor y = which == 1 ? Tensor::from_vector(p, b_sizes) : tb;
        return loss(x, y).item<double>();
      };
      double num = (at(h) - at(-h)) / (2 * h);
      INFO("operand " << which << " element " << i << ": grad " << got[i] << ", central " << num);
      CHECK(std::fabs(got[i] - num) <= 1e-6 * (1 + std::fabs(num)));
    }
  }
}

using rlx::test::on_both_backends;

} // namespace

TEST_CASE("gradients of the differentiable math functions match central differences") {
  on_both_backends([] {
    const std::vector<double> xs = {-2.3, -0.7, 0.4, 1.3, 2.9};
    const std::vector<double> pos = {0.3, 0.8, 1.7, 2.2, 4.5};
    const std::vector<double> unit = {-0.9, -0.4, 0.1, 0.5, 0.8};
    check_grad("clip scalars", [](auto& x, auto&) { return rlx::clip(x, -1.0, 2.0); }, xs);
    check_grad("clip tensors", [](auto& x, auto& y) { return rlx::clip(x, y - 1.0, y + 1.0); }, xs,
               {0.2, -0.3, 0.5, 0.1, 0.6}, {5});
    check_grad("hypot", [](auto& x, auto& y) { return rlx::hypot(x, y); }, xs,
               {1.1, -0.6, 0.9, -2.0, 0.3}, {5});
    check_grad("arctan2", [](auto& x, auto& y) { return rlx::arctan2(x, y); }, xs,
               {1.1, -0.6, 0.9, -2.0, -0.3}, {5});
    check_grad("power", [](auto& x, auto& y) { return rlx::power(x, y); }, pos,
               {1.5, -0.5, 2.0, 0.7, -1.2}, {5});
    check_grad("square", [](auto& x, auto&) { return rlx::square(x); }, xs);
    check_grad("log2", [](auto& x, auto&) { return rlx::log2(x); }, pos);
    check_grad("log10", [](auto& x, auto&) { return rlx::log10(x); }, pos);
    check_grad("exp2", [](auto& x, auto&) { return rlx::exp2(x); }, xs);
    check_grad("logaddexp", [](auto& x, auto& y) { return rlx::logaddexp(x, y); }, xs,
               {1.1, -0.6, 0.9, -2.0, 0.3}, {5});
    check_grad("copysign", [](auto& x, auto& y) { return rlx::copysign(x, y); }, xs,
               {1.1, -0.6, 0.9, -2.0, 0.3}, {5});
    // Both branches of sinh and cosh (|x| above 20 uses exp(|x|) / 2), each at its own scale:
    // one loss summing e^23 and e^0.4 would drown the small terms' differences.
    check_grad("sinh", [](auto& x, auto&) { return rlx::sinh(x * 2.0); }, xs);
    check_grad("cosh", [](auto& x, auto&) { return rlx::cosh(x * 2.0); }, xs);
    check_grad("sinh large", [](auto& x, auto&) { return rlx::sinh(x); }, {21.5, -23.0});
    check_grad("cosh large", [](auto& x, auto&) { return rlx::cosh(x); }, {21.5, -23.0});
    check_grad("arcsin", [](auto& x, auto&) { return rlx::arcsin(x); }, unit);
    check_grad("arccos", [](auto& x, auto&) { return rlx::arccos(x); }, unit);
    check_grad("arcsinh", [](auto& x, auto&) { return rlx::arcsinh(x); }, xs);
    check_grad("arccosh", [](auto& x, auto&) { return rlx::arccosh(x + 3.5); }, xs);
    check_grad("arctanh", [](auto& x, auto&) { return rlx::arctanh(x); }, unit);
    check_grad("deg2rad", [](auto& x, auto&) { return rlx::deg2rad(x); }, xs);
    check_grad("norm 2", [](auto& x, auto&) { return rlx::norm(x); }, xs);
    check_grad("norm 1", [](auto& x, auto&) { return rlx::norm(x, 1); }, xs);
    check_grad("norm 3", [](auto& x, auto&) { return rlx::norm(x, 3); }, xs);
  });
}

TEST_CASE("gradients of the PyTorch activations match central differences") {
  on_both_backends([] {
    const std::vector<double> xs = {-2.3, -0.7, -0.2, 0.4, 1.3, 2.9};
    check_grad("selu", [](auto& x, auto&) { return rlx::selu(x); }, xs);
    check_grad("celu", [](auto& x, auto&) { return rlx::celu(x, 0.7); }, xs);
    check_grad("relu6", [](auto& x, auto&) { return rlx::relu6(x * 3.0); }, xs);
    check_grad("hardtanh", [](auto& x, auto&) { return rlx::hardtanh(x, -0.5, 2.0); }, xs);
    check_grad("softshrink", [](auto& x, auto&) { return rlx::softshrink(x, 0.3); }, xs);
    check_grad("hardshrink", [](auto& x, auto&) { return rlx::hardshrink(x, 0.3); }, xs);
    check_grad("tanhshrink", [](auto& x, auto&) { return rlx::tanhshrink(x); }, xs);
    check_grad("threshold", [](auto& x, auto&) { return rlx::threshold(x, 0.1, -2.0); }, xs);
    check_grad("glu", [](auto& x, auto&) { return rlx::glu(x, 0); }, xs);
    check_grad("prelu", [](auto& x, auto& w) { return rlx::prelu(rlx::reshape(x, {2, 3}), w); }, xs,
               {0.25, -0.5, 0.1}, {3});
    check_grad("softmin", [](auto& x, auto&) { return rlx::softmin(x); }, xs);
    check_grad("softplus beta", [](auto& x, auto&) { return rlx::softplus(x, 2.0, 3.0); }, xs);
    check_grad("hardswish", [](auto& x, auto&) { return rlx::hardswish(x); }, xs);
    check_grad("logsigmoid", [](auto& x, auto&) { return rlx::logsigmoid(x); }, xs);
  });
}

// ---- Errors

TEST_CASE("errors name the function, the operands and the caller's line") {
  Tensor x = rlx::zeros({2, 3}), v4 = rlx::zeros({4});
  Tensor z = rlx::zeros({2}).astype(DType::C64);
  const std::string here = "test_numpy_logic.cpp";
  auto names_line = [&](const std::string& msg) {
    CHECK_MESSAGE(msg.find(here) != std::string::npos, msg);
  };
  names_line(check_error([&] { rlx::hypot(x, v4); }, ErrorKind::Shape, "hypot"));
  names_line(check_error([&] { rlx::arctan2(x, v4); }, ErrorKind::Shape, "arctan2"));
  names_line(check_error([&] { rlx::remainder(v4, x); }, ErrorKind::Shape, "remainder"));
  names_line(check_error([&] { rlx::clip(x, v4, x); }, ErrorKind::Shape, "clip"));
  names_line(check_error([&] { rlx::isclose(x, v4); }, ErrorKind::Shape, "isclose"));
  names_line(check_error([&] { rlx::isnan(z); }, ErrorKind::Type, "isnan: complex"));
  names_line(check_error([&] { rlx::floor_divide(z, 2); }, ErrorKind::Type, "floor_divide"));
  names_line(check_error([&] { rlx::logaddexp(1.0, z); }, ErrorKind::Type, "logaddexp"));
  names_line(check_error([&] { rlx::arcsin(z); }, ErrorKind::Type, "arcsin"));
  names_line(check_error([&] { rlx::selu(z); }, ErrorKind::Type, "selu"));
  names_line(check_error([&] { rlx::any(x, {2}); }, ErrorKind::Value, "any: axis 2"));
  names_line(check_error([&] { x.all(-3); }, ErrorKind::Value, "all: axis -3"));
  names_line(check_error([&] { x.norm(2, {0, -2}); }, ErrorKind::Value, "norm: axis -2"));
  names_line(check_error([&] { rlx::glu(rlx::zeros({2, 5})); }, ErrorKind::Shape, "glu"));
  names_line(check_error([&] { rlx::prelu(x, rlx::zeros({2})); }, ErrorKind::Shape, "prelu"));
  names_line(check_error([&] { rlx::hardtanh(x, 1, -1); }, ErrorKind::Value, "hardtanh"));
  names_line(check_error([&] { rlx::square(Tensor()); }, ErrorKind::Value, "square"));
}
