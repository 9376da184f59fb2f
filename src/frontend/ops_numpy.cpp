// src/frontend/ops_numpy.cpp -- numpy's logic, cleaning and math functions and PyTorch's
// remaining activations, composed from the Tensor ops (no IR op of their own).
//
// Each function checks its operands first (defined, not complex, shapes that broadcast, axes in
// range) so that a user error names the function the user called, not one of the ops it is made
// of. Compositions that select between branches with `where` keep the branch that is not taken
// finite (minimum/maximum before exp), because its cotangent is zero and 0 * inf would be NaN.
#include "frontend/impl.hpp"
#include "frontend/ops.hpp"
#include "rlx/ir/infer.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>

namespace rlx {

namespace {

using detail::at_loc;

constexpr double kInf = std::numeric_limits<double>::infinity();
/// Above this magnitude arcsinh, arccosh use log(2|x|) (x^2 would overflow f32), and sinh, cosh
/// use exp(|x|)/2 (the other exponential is below f64's precision there).
constexpr double kLarge = 268435456.0; // 2^28
constexpr double kHyperbolicLarge = 20.0;

void check_real(const Tensor& x, std::string_view what, const Loc& loc) {
  detail::check_defined(x, what, loc);
  if (ir::is_complex(x.dtype()))
    fail(ErrorKind::Type, what, ": complex operands are not supported (got ",
         ir::short_str(x.shape()), ")", at_loc(loc));
}

void check_pair(const Tensor& a, const Tensor& b, std::string_view what, const Loc& loc) {
  check_real(a, what, loc);
  check_real(b, what, loc);
  try {
    (void)ir::broadcast_shapes(what, a.shape(), b.shape());
  } catch (const Error& e) {
    fail(ErrorKind::Shape, e.what(), at_loc(loc));
  }
}

/// Validates reduction axes as sum does, but naming `what`.
void check_axes(const Tensor& x, const Dims& axes, std::string_view what, const Loc& loc) {
  std::vector<int64_t> seen;
  for (int64_t a : axes) {
    int64_t n = detail::norm_axis(a, x.ndim(), what, x.shape(), loc);
    if (std::find(seen.begin(), seen.end(), n) != seen.end())
      fail(ErrorKind::Value, what, ": axis ", a, " is listed twice for ", ir::short_str(x.shape()),
           at_loc(loc));
    seen.push_back(n);
  }
}

/// A rank-0 tensor holding n in dtype t (an error naming `what` when it does not fit).
Tensor number_tensor(const Number& n, DType t, std::string_view what, const Loc& loc) {
  return apply(
      std::span<const Tensor>{},
      [&](ir::Graph& g, std::span<const ir::NodeId>) {
        return detail::scalar_node(g, n, t, what, loc);
      },
      loc);
}

/// `tensor op scalar` operands: both in the weakly typed result dtype (docs/semantics.md).
std::pair<Tensor, Tensor> with_scalar(const Tensor& x, const Number& n, std::string_view what,
                                      const Loc& loc) {
  DType t = detail::scalar_result_dtype(x.dtype(), n);
  return {x.astype(t, loc), number_tensor(n, t, what, loc)};
}

DType float_of(const Tensor& a, const Tensor& b) {
  return detail::float_dtype(ir::promote(a.dtype(), b.dtype()));
}

bool is_float(const Tensor& x) { return ir::is_float(x.dtype()); }

/// Nonzero as bool (NaN is nonzero).
Tensor truthy(const Tensor& x, const Loc& loc) {
  return ir::is_bool(x.dtype()) ? x : ne(x, Number(0), loc);
}

/// The sign bit of a float tensor, from comparisons: -0.0 is told apart by 1/x = -inf.
Tensor float_signbit(const Tensor& x, const Loc& loc) {
  return logical_or(lt(x, Number(0), loc),
                    logical_and(eq(x, Number(0), loc), lt(reciprocal(x, loc), Number(0), loc), loc),
                    loc);
}

/// -1 where the sign bit of float x is set, else 1 (x's dtype).
Tensor unit_sign(const Tensor& x, const Loc& loc) {
  return sub(Number(1), mul(float_signbit(x, loc).astype(x.dtype(), loc), Number(2), loc), loc);
}

Tensor copysign_impl(const Tensor& a, const Tensor& b, const Loc& loc) {
  DType t = float_of(a, b);
  return mul(abs(a.astype(t, loc), loc), unit_sign(b.astype(t, loc), loc), loc);
}

Tensor hypot_impl(const Tensor& a, const Tensor& b, const Loc& loc) {
  DType t = float_of(a, b);
  Tensor aa = abs(a.astype(t, loc), loc), bb = abs(b.astype(t, loc), loc);
  Tensor big = maximum(aa, bb, loc), small = minimum(aa, bb, loc);
  // Scaling by the larger magnitude keeps the square from overflowing (numpy / C hypot).
  Tensor q = div(small, where(eq(big, Number(0), loc), Number(1.0), big, loc), loc);
  Tensor r = mul(big, sqrt(add(mul(q, q, loc), Number(1.0), loc), loc), loc);
  Tensor any_inf = logical_or(isinf(aa, loc), isinf(bb, loc), loc);
  return where(any_inf, Number(kInf), r, loc);
}

Tensor arctan2_impl(const Tensor& y0, const Tensor& x0, const Loc& loc) {
  DType t = float_of(y0, x0);
  Tensor y = y0.astype(t, loc), x = x0.astype(t, loc);
  // 0/0 and inf/inf are NaN: give the quotient the operands' signs with unit magnitudes, which
  // yields numpy's +-0 / +-pi and +-pi/4 / +-3pi/4.
  Tensor both_zero = logical_and(eq(x, Number(0), loc), eq(y, Number(0), loc), loc);
  Tensor both_inf = logical_and(isinf(x, loc), isinf(y, loc), loc);
  Tensor ys = where(both_inf, unit_sign(y, loc), y, loc);
  Tensor xs = where(logical_or(both_zero, both_inf, loc), unit_sign(x, loc), x, loc);
  Tensor base = atan(div(ys, xs, loc), loc);
  // A negative x (also -0.0) turns the half-plane: add pi with y's sign.
  Tensor turn = mul(unit_sign(y, loc), Number(std::numbers::pi), loc);
  return where(float_signbit(x, loc), add(base, turn, loc), base, loc);
}

/// Truncating integer division (the Div op on integers; by zero gives 0, docs/semantics.md).
Tensor int_trunc_div(const Tensor& a, const Tensor& b, DType t, const Loc& loc) {
  return apply(
      {a, b},
      [&](ir::Graph& g, std::span<const ir::NodeId> in) {
        return g.add_inferred(
            ir::Op(ir::OpKind::Div),
            {detail::cast_to(g, in[0], t, loc), detail::cast_to(g, in[1], t, loc)}, loc);
      },
      loc);
}

/// Python's floor division and remainder: {quotient, remainder}.
std::pair<Tensor, Tensor> divmod_impl(const Tensor& a0, const Tensor& b0, const Loc& loc) {
  DType p = ir::promote(a0.dtype(), b0.dtype());
  if (ir::is_bool(p)) p = DType::I8; // numpy computes bools in int8
  Tensor a = a0.astype(p, loc), b = b0.astype(p, loc);
  if (!ir::is_float(p)) {
    Tensor q = int_trunc_div(a, b, p, loc), r = fmod(a, b, loc);
    Tensor fix = logical_and(ne(r, Number(0), loc),
                             ne(lt(r, Number(0), loc), lt(b, Number(0), loc), loc), loc);
    return {where(fix, sub(q, Number(1), loc), q, loc), where(fix, add(r, b, loc), r, loc)};
  }
  // numpy's npy_divmod, step by step.
  Tensor mod = fmod(a, b, loc);
  Tensor quot = div(sub(a, mod, loc), b, loc);
  Tensor fix = logical_and(ne(mod, Number(0), loc),
                           ne(lt(b, Number(0), loc), lt(mod, Number(0), loc), loc), loc);
  Tensor signed_zero_b = copysign_impl(number_tensor(Number(0.0), p, "remainder", loc), b, loc);
  Tensor rem =
      where(fix, add(mod, b, loc), where(eq(mod, Number(0), loc), signed_zero_b, mod, loc), loc);
  quot = where(fix, sub(quot, Number(1), loc), quot, loc);
  Tensor fl = floor(quot, loc);
  fl = where(gt(sub(quot, fl, loc), Number(0.5), loc), add(fl, Number(1), loc), fl, loc);
  Tensor zero_q =
      copysign_impl(number_tensor(Number(0.0), p, "floor_divide", loc), div(a, b, loc), loc);
  Tensor fq = where(ne(quot, Number(0), loc), fl, zero_q, loc);
  Tensor by_zero = eq(b, Number(0), loc);
  return {where(by_zero, div(a, b, loc), fq, loc), where(by_zero, mod, rem, loc)};
}

Tensor logaddexp_impl(const Tensor& a0, const Tensor& b0, const Loc& loc) {
  DType t = float_of(a0, b0);
  Tensor a = a0.astype(t, loc), b = b0.astype(t, loc);
  Tensor r = add(maximum(a, b, loc), log1p(exp(neg(abs(sub(a, b, loc), loc), loc), loc), loc), loc);
  // Equal operands (also two equal infinities, whose difference is NaN): a + log 2.
  return where(eq(a, b, loc), add(a, Number(std::numbers::ln2), loc), r, loc);
}

Tensor power_impl(const Tensor& a, const Tensor& b, const Loc& loc) { return pow(a, b, loc); }
Tensor true_divide_impl(const Tensor& a, const Tensor& b, const Loc& loc) { return div(a, b, loc); }
Tensor floor_divide_impl(const Tensor& a, const Tensor& b, const Loc& loc) {
  return divmod_impl(a, b, loc).first;
}
Tensor remainder_impl(const Tensor& a, const Tensor& b, const Loc& loc) {
  return divmod_impl(a, b, loc).second;
}
Tensor mod_impl(const Tensor& a, const Tensor& b, const Loc& loc) {
  return divmod_impl(a, b, loc).second;
}
Tensor logical_xor_impl(const Tensor& a, const Tensor& b, const Loc& loc) {
  return ne(truthy(a, loc), truthy(b, loc), loc);
}

/// x in its float dtype (integers and bools compute in f32).
Tensor to_float(const Tensor& x, const Loc& loc) {
  return x.astype(detail::float_dtype(x.dtype()), loc);
}

} // namespace

#define RLX_DEFINE_NUMPY_BINARY(FN)                                                                \
  Tensor FN(const Tensor& a, const Tensor& b, Loc loc) {                                           \
    check_pair(a, b, #FN, loc);                                                                    \
    return FN##_impl(a, b, loc);                                                                   \
  }                                                                                                \
  Tensor FN(const Tensor& a, Number b, Loc loc) {                                                  \
    check_real(a, #FN, loc);                                                                       \
    auto [x, s] = with_scalar(a, b, #FN, loc);                                                     \
    return FN##_impl(x, s, loc);                                                                   \
  }                                                                                                \
  Tensor FN(Number a, const Tensor& b, Loc loc) {                                                  \
    check_real(b, #FN, loc);                                                                       \
    auto [x, s] = with_scalar(b, a, #FN, loc);                                                     \
    return FN##_impl(s, x, loc);                                                                   \
  }
RLX_DEFINE_NUMPY_BINARY(power)
RLX_DEFINE_NUMPY_BINARY(true_divide)
RLX_DEFINE_NUMPY_BINARY(hypot)
RLX_DEFINE_NUMPY_BINARY(arctan2)
RLX_DEFINE_NUMPY_BINARY(floor_divide)
RLX_DEFINE_NUMPY_BINARY(remainder)
RLX_DEFINE_NUMPY_BINARY(mod)
RLX_DEFINE_NUMPY_BINARY(copysign)
RLX_DEFINE_NUMPY_BINARY(logaddexp)
RLX_DEFINE_NUMPY_BINARY(logical_xor)
#undef RLX_DEFINE_NUMPY_BINARY

// ---- Logic

Tensor any(const Tensor& x, Dims axes, bool keepdims, Loc loc) {
  check_real(x, "any", loc);
  check_axes(x, axes, "any", loc);
  // A count, not max: over no elements it is 0, so any is false (max would be an error).
  return gt(sum(truthy(x, loc), axes, keepdims, loc), Number(0), loc);
}

Tensor all(const Tensor& x, Dims axes, bool keepdims, Loc loc) {
  check_real(x, "all", loc);
  check_axes(x, axes, "all", loc);
  return eq(sum(logical_not(x, loc), axes, keepdims, loc), Number(0), loc);
}

Tensor isnan(const Tensor& x, Loc loc) {
  check_real(x, "isnan", loc);
  return ne(x, x, loc); // false for every integer
}

Tensor isinf(const Tensor& x, Loc loc) {
  check_real(x, "isinf", loc);
  return is_float(x) ? eq(abs(x, loc), Number(kInf), loc) : ne(x, x, loc);
}

Tensor isfinite(const Tensor& x, Loc loc) {
  check_real(x, "isfinite", loc);
  return is_float(x) ? lt(abs(x, loc), Number(kInf), loc) : eq(x, x, loc);
}

Tensor signbit(const Tensor& x, Loc loc) {
  check_real(x, "signbit", loc);
  if (is_float(x)) return float_signbit(x, loc);
  return ir::is_bool(x.dtype()) ? ne(x, x, loc) : lt(x, Number(0), loc);
}

Tensor isclose(const Tensor& a0, const Tensor& b0, double rtol, double atol, bool equal_nan,
               Loc loc) {
  check_pair(a0, b0, "isclose", loc);
  DType t = float_of(a0, b0);
  Tensor a = a0.astype(t, loc), b = b0.astype(t, loc);
  Tensor finite = logical_and(isfinite(a, loc), isfinite(b, loc), loc);
  Tensor within = le(abs(sub(a, b, loc), loc),
                     add(mul(abs(b, loc), Number(rtol), loc), Number(atol), loc), loc);
  Tensor r = where(finite, within, eq(a, b, loc), loc);
  if (equal_nan) r = logical_or(r, logical_and(isnan(a, loc), isnan(b, loc), loc), loc);
  return r;
}

bool allclose(const Tensor& a, const Tensor& b, double rtol, double atol, bool equal_nan, Loc loc) {
  return all(isclose(a, b, rtol, atol, equal_nan, loc), {}, false, loc).item<bool>(loc);
}

// ---- Cleaning

Tensor nan_to_num(const Tensor& x, double nan, std::optional<double> posinf,
                  std::optional<double> neginf, Loc loc) {
  check_real(x, "nan_to_num", loc);
  if (!is_float(x)) return x;
  const bool f32 = x.dtype() != DType::F64;
  const double hi =
      f32 ? double(std::numeric_limits<float>::max()) : std::numeric_limits<double>::max();
  Tensor r = where(eq(x, Number(kInf), loc), Number(posinf.value_or(hi)), x, loc);
  r = where(eq(x, Number(-kInf), loc), Number(neginf.value_or(-hi)), r, loc);
  return where(isnan(x, loc), Number(nan), r, loc);
}

Tensor clip(const Tensor& x, std::optional<double> lo, std::optional<double> hi, Loc loc) {
  check_real(x, "clip", loc);
  return clamp(x, lo, hi, loc);
}

Tensor clip(const Tensor& x, const Tensor& lo, const Tensor& hi, Loc loc) {
  check_pair(x, lo, "clip", loc);
  check_pair(x, hi, "clip", loc);
  check_pair(lo, hi, "clip", loc);
  return minimum(maximum(x, lo, loc), hi, loc);
}

Tensor concatenate(std::span<const Tensor> xs, int64_t axis, Loc loc) {
  return concat(xs, axis, loc);
}
Tensor concatenate(std::initializer_list<Tensor> xs, int64_t axis, Loc loc) {
  return concat(xs, axis, loc);
}

// ---- Math

Tensor square(const Tensor& x, Loc loc) {
  check_real(x, "square", loc);
  return mul(x, x, loc);
}

Tensor log2(const Tensor& x, Loc loc) {
  check_real(x, "log2", loc);
  return mul(log(to_float(x, loc), loc), Number(std::numbers::log2e), loc);
}

Tensor log10(const Tensor& x, Loc loc) {
  check_real(x, "log10", loc);
  return mul(log(to_float(x, loc), loc), Number(std::numbers::log10e), loc);
}

Tensor exp2(const Tensor& x, Loc loc) {
  check_real(x, "exp2", loc);
  return pow(Number(2.0), to_float(x, loc), loc); // exact at integers, unlike exp(x ln 2)
}

Tensor sinh(const Tensor& x0, Loc loc) {
  check_real(x0, "sinh", loc);
  Tensor x = to_float(x0, loc), ax = abs(x, loc);
  // sinh|x| = (u + u / (u + 1)) / 2 with u = expm1|x|: no cancellation near 0.
  Tensor u = expm1(minimum(ax, Number(kHyperbolicLarge), loc), loc);
  Tensor small = mul(add(u, div(u, add(u, Number(1.0), loc), loc), loc), Number(0.5), loc);
  Tensor h = exp(mul(ax, Number(0.5), loc), loc);
  Tensor large = mul(mul(h, Number(0.5), loc), h, loc); // e^|x| / 2 without overflowing early
  return mul(sign(x, loc), where(gt(ax, Number(kHyperbolicLarge), loc), large, small, loc), loc);
}

Tensor cosh(const Tensor& x0, Loc loc) {
  check_real(x0, "cosh", loc);
  Tensor x = to_float(x0, loc), ax = abs(x, loc);
  Tensor e = exp(minimum(ax, Number(kHyperbolicLarge), loc), loc);
  Tensor small = mul(add(e, reciprocal(e, loc), loc), Number(0.5), loc);
  Tensor h = exp(mul(ax, Number(0.5), loc), loc);
  Tensor large = mul(mul(h, Number(0.5), loc), h, loc);
  return where(gt(ax, Number(kHyperbolicLarge), loc), large, small, loc);
}

Tensor arcsin(const Tensor& x0, Loc loc) {
  check_real(x0, "arcsin", loc);
  Tensor x = to_float(x0, loc);
  // 2 atan(x / (1 + sqrt((1 - x)(1 + x)))): exact at +-1, NaN outside [-1, 1].
  Tensor c = sqrt(mul(sub(Number(1.0), x, loc), add(x, Number(1.0), loc), loc), loc);
  return mul(atan(div(x, add(c, Number(1.0), loc), loc), loc), Number(2.0), loc);
}

Tensor arccos(const Tensor& x0, Loc loc) {
  check_real(x0, "arccos", loc);
  Tensor x = to_float(x0, loc);
  // 2 atan(sqrt((1 - x) / (1 + x))): no cancellation near 1, pi at -1.
  Tensor q = div(sub(Number(1.0), x, loc), add(x, Number(1.0), loc), loc);
  return mul(atan(sqrt(q, loc), loc), Number(2.0), loc);
}

Tensor arctan(const Tensor& x, Loc loc) {
  check_real(x, "arctan", loc);
  return atan(x, loc);
}

Tensor arcsinh(const Tensor& x0, Loc loc) {
  check_real(x0, "arcsinh", loc);
  Tensor x = to_float(x0, loc), ax = abs(x, loc);
  // log1p(|x| + x^2 / (1 + sqrt(1 + x^2))) keeps small |x| accurate; huge |x| use log(2|x|).
  Tensor m = minimum(ax, Number(kLarge), loc), m2 = mul(m, m, loc);
  Tensor inner =
      add(m, div(m2, add(sqrt(add(m2, Number(1.0), loc), loc), Number(1.0), loc), loc), loc);
  Tensor small = log1p(inner, loc);
  Tensor large = add(log(ax, loc), Number(std::numbers::ln2), loc);
  return mul(sign(x, loc), where(gt(ax, Number(kLarge), loc), large, small, loc), loc);
}

Tensor arccosh(const Tensor& x0, Loc loc) {
  check_real(x0, "arccosh", loc);
  Tensor x = to_float(x0, loc);
  // log1p(t + sqrt(t (t + 2))) with t = x - 1: accurate near 1, NaN below 1.
  Tensor t = sub(minimum(x, Number(kLarge), loc), Number(1.0), loc);
  Tensor small = log1p(add(t, sqrt(mul(t, add(t, Number(2.0), loc), loc), loc), loc), loc);
  Tensor large = add(log(x, loc), Number(std::numbers::ln2), loc);
  return where(gt(x, Number(kLarge), loc), large, small, loc);
}

Tensor arctanh(const Tensor& x0, Loc loc) {
  check_real(x0, "arctanh", loc);
  Tensor x = to_float(x0, loc);
  // log1p(2x / (1 - x)) / 2: +-inf at +-1, NaN outside [-1, 1], -0.0 kept.
  Tensor q = div(mul(x, Number(2.0), loc), sub(Number(1.0), x, loc), loc);
  return mul(log1p(q, loc), Number(0.5), loc);
}

Tensor deg2rad(const Tensor& x, Loc loc) {
  check_real(x, "deg2rad", loc);
  return mul(to_float(x, loc), Number(std::numbers::pi / 180.0), loc);
}

Tensor rad2deg(const Tensor& x, Loc loc) {
  check_real(x, "rad2deg", loc);
  return mul(to_float(x, loc), Number(180.0 / std::numbers::pi), loc);
}

Tensor norm(const Tensor& x0, double ord, Dims axes, bool keepdims, Loc loc) {
  check_real(x0, "norm", loc);
  check_axes(x0, axes, "norm", loc);
  if (std::isnan(ord)) fail(ErrorKind::Value, "norm: ord is NaN", at_loc(loc));
  Tensor x = to_float(x0, loc);
  if (ord == kInf) return max(abs(x, loc), axes, keepdims, loc);
  if (ord == -kInf) return min(abs(x, loc), axes, keepdims, loc);
  if (ord == 0) return sum(ne(x, Number(0), loc).astype(x.dtype(), loc), axes, keepdims, loc);
  if (ord == 1) return sum(abs(x, loc), axes, keepdims, loc);
  if (ord == 2) return sqrt(sum(mul(x, x, loc), axes, keepdims, loc), loc);
  Tensor s = sum(pow(abs(x, loc), Number(ord), loc), axes, keepdims, loc);
  return pow(s, Number(1.0 / ord), loc);
}

// ---- PyTorch activations

Tensor selu(const Tensor& x0, Loc loc) {
  check_real(x0, "selu", loc);
  constexpr double kAlpha = 1.6732632423543772848170429916717;
  constexpr double kScale = 1.0507009873554804934193349852946;
  Tensor x = to_float(x0, loc);
  Tensor neg_part = mul(expm1(minimum(x, Number(0.0), loc), loc), Number(kAlpha), loc);
  return mul(where(gt(x, Number(0), loc), x, neg_part, loc), Number(kScale), loc);
}

Tensor celu(const Tensor& x0, double alpha, Loc loc) {
  check_real(x0, "celu", loc);
  if (alpha == 0) fail(ErrorKind::Value, "celu: alpha must not be 0", at_loc(loc));
  Tensor x = to_float(x0, loc);
  Tensor neg_part =
      mul(expm1(div(minimum(x, Number(0.0), loc), Number(alpha), loc), loc), Number(alpha), loc);
  return where(gt(x, Number(0), loc), x, neg_part, loc);
}

Tensor relu6(const Tensor& x, Loc loc) {
  check_real(x, "relu6", loc);
  return clamp(to_float(x, loc), 0.0, 6.0, loc);
}

Tensor hardtanh(const Tensor& x, double min_val, double max_val, Loc loc) {
  check_real(x, "hardtanh", loc);
  if (!(min_val <= max_val))
    fail(ErrorKind::Value, "hardtanh: min_val ", min_val, " is above max_val ", max_val,
         at_loc(loc));
  return clamp(to_float(x, loc), min_val, max_val, loc);
}

Tensor softshrink(const Tensor& x0, double lambd, Loc loc) {
  check_real(x0, "softshrink", loc);
  if (lambd < 0) fail(ErrorKind::Value, "softshrink: lambd ", lambd, " is negative", at_loc(loc));
  Tensor x = to_float(x0, loc);
  // x - lambd sign(x) outside [-lambd, lambd]; NaN stays NaN (the comparison is false).
  Tensor shrunk = sub(x, mul(sign(x, loc), Number(lambd), loc), loc);
  return where(le(abs(x, loc), Number(lambd), loc), Number(0.0), shrunk, loc);
}

Tensor hardshrink(const Tensor& x0, double lambd, Loc loc) {
  check_real(x0, "hardshrink", loc);
  Tensor x = to_float(x0, loc);
  return where(le(abs(x, loc), Number(lambd), loc), Number(0.0), x, loc);
}

Tensor tanhshrink(const Tensor& x0, Loc loc) {
  check_real(x0, "tanhshrink", loc);
  Tensor x = to_float(x0, loc);
  return sub(x, tanh(x, loc), loc);
}

Tensor threshold(const Tensor& x, double threshold, double value, Loc loc) {
  check_real(x, "threshold", loc);
  Tensor xf = to_float(x, loc);
  return where(le(xf, Number(threshold), loc), Number(value), xf, loc); // NaN stays NaN
}

Tensor glu(const Tensor& x0, int64_t axis, Loc loc) {
  check_real(x0, "glu", loc);
  if (x0.ndim() == 0)
    fail(ErrorKind::Shape, "glu: needs at least one axis, got ", ir::short_str(x0.shape()),
         at_loc(loc));
  int64_t a = detail::norm_axis(axis, x0.ndim(), "glu", x0.shape(), loc);
  int64_t n = x0.size(a, loc);
  if (n % 2 != 0)
    fail(ErrorKind::Shape, "glu: axis ", axis, " of ", ir::short_str(x0.shape()), " has odd size ",
         n, " (it is split in halves)", at_loc(loc));
  Tensor x = to_float(x0, loc);
  return mul(narrow(x, a, 0, n / 2, loc), sigmoid(narrow(x, a, n / 2, n / 2, loc), loc), loc);
}

Tensor prelu(const Tensor& x0, const Tensor& weight, Loc loc) {
  check_real(x0, "prelu", loc);
  check_real(weight, "prelu", loc);
  const int64_t nw = weight.numel(loc);
  const int64_t channels = x0.ndim() >= 2 ? x0.size(1, loc) : 1;
  if (weight.ndim() > 1 || (nw != 1 && nw != channels))
    fail(ErrorKind::Shape, "prelu: weight ", ir::short_str(weight.shape()),
         " must hold 1 value or one per channel (axis 1) of ", ir::short_str(x0.shape()),
         at_loc(loc));
  Tensor x = to_float(x0, loc);
  Tensor w = weight.astype(x.dtype(), loc);
  if (nw == 1) {
    w = reshape(w, {}, loc);
  } else {
    Dims sizes(std::size_t(x0.ndim() - 1), 1);
    sizes[0] = channels;
    w = reshape(w, sizes, loc); // [C, 1, ..., 1] against [N, C, ...]
  }
  return where(ge(x, Number(0), loc), x, mul(w, x, loc), loc);
}

Tensor softmin(const Tensor& x, int64_t axis, Loc loc) {
  check_real(x, "softmin", loc);
  return softmax(neg(to_float(x, loc), loc), axis, loc);
}

Tensor softplus(const Tensor& x0, double beta, double threshold, Loc loc) {
  check_real(x0, "softplus", loc);
  if (beta == 0) fail(ErrorKind::Value, "softplus: beta must not be 0", at_loc(loc));
  Tensor x = to_float(x0, loc);
  Tensor bx = mul(x, Number(beta), loc);
  Tensor soft = div(softplus(minimum(bx, Number(threshold), loc), loc), Number(beta), loc);
  return where(gt(bx, Number(threshold), loc), x, soft, loc);
}

Tensor hardswish(const Tensor& x, Loc loc) { return hard_swish(x, loc); }
Tensor logsigmoid(const Tensor& x, Loc loc) { return log_sigmoid(x, loc); }

// ---- Methods

Tensor Tensor::var(Dims axes, bool keepdims, int64_t ddof, Loc loc) const {
  return rlx::var(*this, std::move(axes), keepdims, ddof, loc);
}
Tensor Tensor::std(Dims axes, bool keepdims, int64_t ddof, Loc loc) const {
  return rlx::std(*this, std::move(axes), keepdims, ddof, loc);
}
Tensor Tensor::logsumexp(Dims axes, bool keepdims, Loc loc) const {
  return rlx::logsumexp(*this, std::move(axes), keepdims, loc);
}
Tensor Tensor::any(Dims axes, bool keepdims, Loc loc) const {
  return rlx::any(*this, std::move(axes), keepdims, loc);
}
Tensor Tensor::all(Dims axes, bool keepdims, Loc loc) const {
  return rlx::all(*this, std::move(axes), keepdims, loc);
}
Tensor Tensor::norm(double ord, Dims axes, bool keepdims, Loc loc) const {
  return rlx::norm(*this, ord, std::move(axes), keepdims, loc);
}
Tensor Tensor::cumsum(int64_t axis, bool exclusive, Loc loc) const {
  return rlx::cumsum(*this, axis, exclusive, loc);
}
Tensor Tensor::square(Loc loc) const { return rlx::square(*this, loc); }
Tensor Tensor::clip(std::optional<double> lo, std::optional<double> hi, Loc loc) const {
  return rlx::clip(*this, lo, hi, loc);
}
Tensor Tensor::clip(const Tensor& lo, const Tensor& hi, Loc loc) const {
  return rlx::clip(*this, lo, hi, loc);
}
Tensor Tensor::isnan(Loc loc) const { return rlx::isnan(*this, loc); }

} // namespace rlx
