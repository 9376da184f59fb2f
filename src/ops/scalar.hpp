// src/ops/scalar.hpp -- the scalar semantics of every element-wise op, once: Scalar<K>::apply.
// The interpreter and the constant folder instantiate it with V = double; the JIT instantiates
// the same rules with its IR value type (jit/llvm/jv.hpp), so both backends share one
// definition. Rules therefore use sel(c, a, b) instead of `?:` (both sides are evaluated) and
// find math functions by unqualified calls. A missing rule is a compile error where a consumer
// builds its table from ops.def.
#pragma once

#include "rlx/ir/op.hpp"

#include <cmath>
#include <numbers>

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
} // namespace math

#define RLX_UNARY(E, expr)                                                                         \
  template <> struct Scalar<OpKind::E> {                                                           \
    template <class V, class A> static V apply(V x, const A& attrs) {                              \
      using namespace math;                                                                        \
      (void)attrs;                                                                                 \
      return expr;                                                                                 \
    }                                                                                              \
  };

// Activations (attrs is the op's attribute struct; most ignore it).
RLX_UNARY(Relu, sel(x > V(0) || isnan_(x), x, V(0)))
RLX_UNARY(Gelu, V(0.5) * x * (V(1) + erf(x * V(std::numbers::sqrt2 / 2))))
RLX_UNARY(GeluApprox, V(0.5) * x *
                          (V(1) + tanh(V(std::numbers::sqrt2 * std::numbers::inv_sqrtpi) *
                                       (x + V(0.044715) * x * x * x))))
RLX_UNARY(Silu, x* sigmoid(x))
RLX_UNARY(Sigmoid, sigmoid(x))
RLX_UNARY(Tanh, tanh(x))
RLX_UNARY(Exp, exp(x))
RLX_UNARY(Log, log(x))
RLX_UNARY(Sqrt, sqrt(x))
RLX_UNARY(Rsqrt, V(1) / sqrt(x))
RLX_UNARY(Neg, -x)
RLX_UNARY(Abs, abs(x))
RLX_UNARY(Sin, sin(x))
RLX_UNARY(Cos, cos(x))
RLX_UNARY(Tan, tan(x))
RLX_UNARY(Atan, atan(x))
RLX_UNARY(Round, nearbyint(x)) // half to even in the default rounding mode
RLX_UNARY(Floor, floor(x))
RLX_UNARY(Ceil, ceil(x))
RLX_UNARY(Sign, sel(x > V(0), V(1), sel(x < V(0), V(-1), x))) // sign(0) = 0, sign(nan) = nan
RLX_UNARY(Recip, V(1) / x)
RLX_UNARY(Erf, erf(x))
RLX_UNARY(Softplus, softplus(x))
RLX_UNARY(LeakyRelu, sel(x >= V(0) || isnan_(x), x, V(attrs.alpha) * x))
RLX_UNARY(Elu, sel(x > V(0) || isnan_(x), x, V(attrs.alpha) * expm1(x)))
RLX_UNARY(HardSwish, x*(relu6(x + V(3)) / V(6))) // x * 6 would overflow in f32
RLX_UNARY(HardSigmoid, relu6(x + V(3)) / V(6))
RLX_UNARY(Mish, x* tanh(softplus(x)))
RLX_UNARY(Softsign, x / (V(1) + abs(x)))
RLX_UNARY(LogSigmoid, -softplus(-x))
// Not activations.
RLX_UNARY(StopGradient, x)
RLX_UNARY(Clamp, sel(isnan_(x), x,
                     sel(x < V(attrs.min), V(attrs.min), sel(x > V(attrs.max), V(attrs.max), x))))
#undef RLX_UNARY

#define RLX_BINARY(E, expr)                                                                        \
  template <> struct Scalar<OpKind::E> {                                                           \
    template <class V> static V apply(V a, V b) {                                                  \
      using namespace math;                                                                        \
      return expr;                                                                                 \
    }                                                                                              \
  };

// Floating-point semantics; integer semantics are in the interpreter's integer path.
RLX_BINARY(Add, a + b)
RLX_BINARY(Sub, a - b)
RLX_BINARY(Mul, a* b)
RLX_BINARY(Div, a / b)
RLX_BINARY(Pow, pow(a, b))
RLX_BINARY(Max, sel(isnan_(a) || a > b, a, b)) // NaN propagates, as torch.maximum
RLX_BINARY(Min, sel(isnan_(a) || a < b, a, b))
RLX_BINARY(Mod, fmod(a, b)) // sign of the dividend (C fmod, torch.fmod)
RLX_BINARY(Eq, sel(a == b, V(1), V(0)))
RLX_BINARY(Ne, sel(a != b, V(1), V(0)))
RLX_BINARY(Lt, sel(a < b, V(1), V(0)))
RLX_BINARY(Le, sel(a <= b, V(1), V(0)))
RLX_BINARY(Gt, sel(a > b, V(1), V(0)))
RLX_BINARY(Ge, sel(a >= b, V(1), V(0)))
RLX_BINARY(And, sel(a != V(0) && b != V(0), V(1), V(0)))
RLX_BINARY(Or, sel(a != V(0) || b != V(0), V(1), V(0)))
#undef RLX_BINARY

} // namespace rlx::ops
