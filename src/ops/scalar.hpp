// src/ops/scalar.hpp -- the scalar semantics of every element-wise op, once: Scalar<K>::apply,
// and its derivative. The interpreter and the constant folder instantiate apply with V = double;
// the JIT instantiates the same rules with its IR value type (jit/llvm/jv.hpp), so both backends
// share one definition; autodiff instantiates the derivatives with its graph value type
// (src/autodiff/gv.hpp), so reverse and forward mode share one formula. Rules therefore use
// sel(c, a, b) instead of `?:` (both sides are evaluated) and find math functions by unqualified
// calls. A missing rule is a compile error where a consumer builds its table from ops.def.
#pragma once

#include "rlx/ir/op.hpp"

#include <cmath>
#include <numbers>
#include <utility>

namespace rlx::ops {

using ir::OpKind;

template <OpKind K> struct Scalar; // no primary definition: every element-wise op needs a rule

namespace math {
using std::abs, std::atan, std::ceil, std::cos, std::erf, std::exp, std::expm1, std::floor,
    std::fmod, std::log, std::log1p, std::nearbyint, std::pow, std::sin, std::sqrt, std::tan,
    std::tanh;
/// c ? a : b for doubles (the JIT's value type has its own sel).
inline double sel(bool c, double a, double b) { return c ? a : b; }
template <class V> V relu6(V x) { return sel(x < V(0), V(0), sel(x > V(6), V(6), x)); }
/// log(1 + e^x) without overflow.
template <class V> V softplus(V x) { return sel(x > V(0), x, V(0)) + log1p(exp(-abs(x))); }
/// 1 / (1 + e^-x) with one exponential that never overflows: t = e^-|x|, and for x < 0 the
/// equal t / (1 + t).
template <class V> V sigmoid(V x) {
  V t = exp(-abs(x));
  V d = V(1) + t;
  return sel(x >= V(0), V(1) / d, t / d);
}
template <class V> auto isnan_(V x) { return x != x; }
template <class V> V recip(V x) { return V(1) / x; }
template <class V> V sign(V x) { return sel(x > V(0), V(1), sel(x < V(0), V(-1), x)); }

// Derivatives too long for one line (x the operand, y the value).
/// gelu_approx: y = x/2 (1 + t), t = tanh(u), u = c (x + k x^3):
/// y' = (1 + t)/2 + x/2 (1 - t^2) c (1 + 3k x^2).
template <class V> V d_gelu_approx(V x) {
  const double c = std::numbers::sqrt2 * std::numbers::inv_sqrtpi, k = 0.044715;
  V x2 = x * x;
  V t = tanh(V(c) * (x + V(k) * (x2 * x)));
  V du = V(c) * (V(1) + V(3 * k) * x2);
  return V(0.5) * (V(1) + t) + (V(0.5) * x) * ((V(1) - t * t) * du);
}
/// silu: s (1 + x (1 - s)), s = sigmoid(x).
template <class V> V d_silu(V x) {
  V s = sigmoid(x);
  return s * (V(1) + x * (V(1) - s));
}
/// mish: t + x sigmoid(x) (1 - t^2), t = tanh(softplus(x)).
template <class V> V d_mish(V x) {
  V t = tanh(softplus(x));
  return t + (x * sigmoid(x)) * (V(1) - t * t);
}
/// softsign: 1 / (1 + |x|)^2.
template <class V> V d_softsign(V x) {
  V d = V(1) + abs(x);
  return recip(d * d);
}
/// q rounded toward zero (fmod(a, b) = a - b trunc(a / b)).
template <class V> V trunc_(V q) { return sign(q) * floor(abs(q)); }
/// max/min's partial in a: 1 where a wins, 1/2 on a tie (torch.maximum splits it), else 0.
template <class V, class C> V winner(C wins, C tie) {
  return sel(wins, V(1), V(0)) + sel(tie, V(0.5), V(0));
}
} // namespace math

/// Whether kind K has an element-wise rule here (Cast and Where do not: they move values).
template <OpKind K>
concept HasScalarRule = requires { Scalar<K>::kArity; };

// RLX_UNARY(Kind, value, derivative): the value y of x (attrs: the op's attribute struct) and
// dy/dx, in x and y. RLX_UNARY_STEP(Kind, value): a kind marked kZeroGrad (no derivative flows).
#define RLX_UNARY_VALUE(E, expr)                                                                   \
  static constexpr int kArity = 1;                                                                 \
  template <class V, class A> static V apply(V x, const A& attrs) {                                \
    using namespace math;                                                                          \
    (void)attrs;                                                                                   \
    return expr;                                                                                   \
  }
#define RLX_UNARY(E, expr, dexpr)                                                                  \
  template <> struct Scalar<OpKind::E> {                                                           \
    static_assert(!ir::has_trait(OpKind::E, ir::kZeroGrad), #E " is kZeroGrad: RLX_UNARY_STEP");   \
    RLX_UNARY_VALUE(E, expr)                                                                       \
    template <class V, class A> static V derivative(V x, V y, const A& attrs) {                    \
      using namespace math;                                                                        \
      (void)x, (void)y, (void)attrs;                                                               \
      return dexpr;                                                                                \
    }                                                                                              \
  };
#define RLX_UNARY_STEP(E, expr)                                                                    \
  template <> struct Scalar<OpKind::E> {                                                           \
    static_assert(ir::has_trait(OpKind::E, ir::kZeroGrad), #E " needs a derivative: RLX_UNARY");   \
    RLX_UNARY_VALUE(E, expr)                                                                       \
  };

// Activations (attrs is the op's attribute struct; most ignore it).
RLX_UNARY(Relu, sel(x > V(0) || isnan_(x), x, V(0)), sel(x > V(0), V(1), V(0)))
RLX_UNARY(Gelu, V(0.5) * x * (V(1) + erf(x * V(std::numbers::sqrt2 / 2))),
          V(0.5) * (V(1) + erf(x * V(std::numbers::sqrt2 / 2))) + // Phi(x) + x phi(x)
              x * (V(0.5 * std::numbers::sqrt2 * std::numbers::inv_sqrtpi) *
                   exp(V(-0.5) * (x * x))))
RLX_UNARY(GeluApprox,
          V(0.5) * x *
              (V(1) + tanh(V(std::numbers::sqrt2 * std::numbers::inv_sqrtpi) *
                           (x + V(0.044715) * x * x * x))),
          d_gelu_approx(x))
RLX_UNARY(Silu, x* sigmoid(x), d_silu(x))
RLX_UNARY(Sigmoid, sigmoid(x), y*(V(1) - y))
RLX_UNARY(Tanh, tanh(x), V(1) - y * y)
RLX_UNARY(Exp, exp(x), y)
RLX_UNARY(Log, log(x), recip(x))
RLX_UNARY(Sqrt, sqrt(x), V(0.5) / y)
RLX_UNARY(Rsqrt, V(1) / sqrt(x), V(-0.5) * (y * (y * y)))
RLX_UNARY(Neg, -x, V(-1))
RLX_UNARY(Abs, abs(x), sign(x))
RLX_UNARY(Sin, sin(x), cos(x))
RLX_UNARY(Cos, cos(x), -sin(x))
RLX_UNARY(Tan, tan(x), V(1) + y * y)
RLX_UNARY(Atan, atan(x), recip(V(1) + x * x))
RLX_UNARY_STEP(Round, nearbyint(x)) // half to even in the default rounding mode
RLX_UNARY_STEP(Floor, floor(x))
RLX_UNARY_STEP(Ceil, ceil(x))
RLX_UNARY_STEP(Sign, sel(x > V(0), V(1), sel(x < V(0), V(-1), x))) // sign(0) = 0, sign(nan) = nan
RLX_UNARY(Recip, V(1) / x, -(y* y))
RLX_UNARY(Erf, erf(x), V(2 * std::numbers::inv_sqrtpi) * exp(-(x * x)))
RLX_UNARY(Softplus, softplus(x), sigmoid(x))
RLX_UNARY(LeakyRelu, sel(x >= V(0) || isnan_(x), x, V(attrs.alpha) * x),
          sel(x >= V(0), V(1), V(attrs.alpha)))
RLX_UNARY(Elu, sel(x > V(0) || isnan_(x), x, V(attrs.alpha) * expm1(x)),
          sel(x > V(0), V(1), V(attrs.alpha) * exp(x)))
RLX_UNARY(HardSwish, x*(relu6(x + V(3)) / V(6)), // x * 6 would overflow in f32
          sel(x <= V(-3), V(0), sel(x >= V(3), V(1), (V(2) * x + V(3)) / V(6))))
RLX_UNARY(HardSigmoid, relu6(x + V(3)) / V(6), sel(x > V(-3) && x < V(3), V(1.0 / 6.0), V(0)))
RLX_UNARY(Mish, x* tanh(softplus(x)), d_mish(x))
RLX_UNARY(Softsign, x / (V(1) + abs(x)), d_softsign(x))
RLX_UNARY(LogSigmoid, -softplus(-x), sigmoid(-x))
RLX_UNARY(Log1p, log1p(x), recip(V(1) + x))
RLX_UNARY(Expm1, expm1(x), y + V(1))
// Not activations.
RLX_UNARY_STEP(StopGradient, x)
RLX_UNARY(Clamp,
          sel(isnan_(x), x,
              sel(x < V(attrs.min), V(attrs.min), sel(x > V(attrs.max), V(attrs.max), x))),
          sel(x >= V(attrs.min) && x <= V(attrs.max), V(1), V(0)))
#undef RLX_UNARY_STEP
#undef RLX_UNARY_VALUE
#undef RLX_UNARY

// RLX_BINARY(Kind, value, da, db): the value y of a and b and its partial derivatives, in a, b
// and y. RLX_BINARY_VALUE(Kind, value): a kind marked kNonDifferentiable.
#define RLX_BINARY_VALUE(E, expr)                                                                  \
  static constexpr int kArity = 2;                                                                 \
  template <class V> static V apply(V a, V b) {                                                    \
    using namespace math;                                                                          \
    return expr;                                                                                   \
  }
#define RLX_BINARY(E, expr, da, db)                                                                \
  template <> struct Scalar<OpKind::E> {                                                           \
    RLX_BINARY_VALUE(E, expr)                                                                      \
    template <class V> static std::pair<V, V> partials(V a, V b, V y) {                            \
      using namespace math;                                                                        \
      (void)a, (void)b, (void)y;                                                                   \
      return {da, db};                                                                             \
    }                                                                                              \
  };
#define RLX_BINARY_NONDIFF(E, expr)                                                                \
  template <> struct Scalar<OpKind::E> {                                                           \
    static_assert(ir::has_trait(OpKind::E, ir::kNonDifferentiable), #E " needs partials");         \
    RLX_BINARY_VALUE(E, expr)                                                                      \
  };

// Floating-point semantics; integer semantics are in the interpreter's integer path.
RLX_BINARY(Add, a + b, V(1), V(1))
RLX_BINARY(Sub, a - b, V(1), V(-1))
RLX_BINARY(Mul, a* b, b, a)
RLX_BINARY(Div, a / b, recip(b), -(y / b))
RLX_BINARY(Pow, pow(a, b), b* pow(a, b - V(1)), y* log(a))
RLX_BINARY(Max, sel(isnan_(a) || a > b, a, b), // NaN propagates, as torch.maximum
           winner<V>(a > b, a == b), winner<V>(b > a, a == b))
RLX_BINARY(Min, sel(isnan_(a) || a < b, a, b), winner<V>(a < b, a == b), winner<V>(b < a, a == b))
RLX_BINARY(Mod, fmod(a, b), V(1), -trunc_(a / b)) // sign of the dividend (C fmod, torch.fmod)
RLX_BINARY_NONDIFF(Eq, sel(a == b, V(1), V(0)))
RLX_BINARY_NONDIFF(Ne, sel(a != b, V(1), V(0)))
RLX_BINARY_NONDIFF(Lt, sel(a < b, V(1), V(0)))
RLX_BINARY_NONDIFF(Le, sel(a <= b, V(1), V(0)))
RLX_BINARY_NONDIFF(Gt, sel(a > b, V(1), V(0)))
RLX_BINARY_NONDIFF(Ge, sel(a >= b, V(1), V(0)))
RLX_BINARY_NONDIFF(And, sel(a != V(0) && b != V(0), V(1), V(0)))
RLX_BINARY_NONDIFF(Or, sel(a != V(0) || b != V(0), V(1), V(0)))
#undef RLX_BINARY_NONDIFF
#undef RLX_BINARY_VALUE
#undef RLX_BINARY

} // namespace rlx::ops
