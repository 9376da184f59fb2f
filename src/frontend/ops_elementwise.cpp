// src/frontend/ops_elementwise.cpp -- operators and element-wise functions on Tensors.
#include "frontend/impl.hpp"
#include "frontend/ops.hpp"

#include <cmath>
#include <limits>

namespace rlx {

namespace detail {

ir::NodeId cast_to(ir::Graph& g, ir::NodeId x, DType dtype, const Loc& loc) {
  return g.shape(x).dtype() == dtype ? x : g.cast(x, dtype, loc);
}

DType float_dtype(DType t) { return ir::is_float(t) || ir::is_complex(t) ? t : DType::F32; }

DType scalar_result_dtype(DType t, const Number& n) {
  if (ir::is_float(t) || ir::is_complex(t)) return t;
  if (n.is_float) return DType::F32;
  if (ir::is_bool(t)) return n.is_bool ? DType::Bool : DType::I64;
  return t;
}

ir::NodeId scalar_node(ir::Graph& g, const Number& n, DType dtype, std::string_view what,
                       const Loc& loc) {
  std::optional<ir::NodeId> c = g.try_constant(n.value, dtype, loc);
  if (!c)
    fail(ErrorKind::Value, what, ": the scalar ", n.value, " does not fit the operand dtype ",
         ir::dtype_name(dtype), " (cast the tensor first)", at_loc(loc));
  return *c;
}

int64_t norm_axis(int64_t axis, int64_t rank, std::string_view what, const Shape& shape,
                  const Loc& loc) {
  if (axis < -rank || axis >= rank)
    fail(ErrorKind::Value, what, ": axis ", axis, " is out of range for ", ir::short_str(shape),
         at_loc(loc));
  return axis < 0 ? axis + rank : axis;
}

Tensor apply1(const Tensor& x, const std::function<ir::NodeId(ir::Graph&, ir::NodeId)>& build,
              const Loc& loc) {
  return apply(
      {x}, [&](ir::Graph& g, std::span<const ir::NodeId> in) { return build(g, in[0]); }, loc);
}

} // namespace detail

namespace {

using detail::cast_to;

/// How a binary function converts its operands before the op.
enum class Compute : uint8_t {
  Promote, ///< both operands in their promoted dtype
  TrueDiv, ///< promoted, but integers and bool divide as f32
  Bool,    ///< operands as bool (logical and/or)
};

/// The dtype both operands are converted to.
DType operand_dtype(Compute mode, DType promoted) {
  switch (mode) {
  case Compute::TrueDiv:
    return ir::is_int(promoted) || ir::is_bool(promoted) ? DType::F32 : promoted;
  case Compute::Bool:
    return DType::Bool;
  default:
    return promoted;
  }
}

ir::NodeId binary_node(ir::Graph& g, ir::OpKind kind, ir::NodeId a, ir::NodeId b, DType dtype,
                       const Loc& loc) {
  return g.add_inferred(ir::Op(kind), {cast_to(g, a, dtype, loc), cast_to(g, b, dtype, loc)}, loc);
}

Tensor binary(ir::OpKind kind, Compute mode, const Tensor& a, const Tensor& b, const Loc& loc) {
  return apply(
      {a, b},
      [&](ir::Graph& g, std::span<const ir::NodeId> in) {
        DType t = operand_dtype(mode, ir::promote(a.dtype(), b.dtype()));
        return binary_node(g, kind, in[0], in[1], t, loc);
      },
      loc);
}

Tensor binary_scalar(ir::OpKind kind, Compute mode, const Tensor& t, const Number& n,
                     bool scalar_first, const Loc& loc) {
  return detail::apply1(
      t,
      [&](ir::Graph& g, ir::NodeId x) {
        DType dt = operand_dtype(mode, detail::scalar_result_dtype(t.dtype(), n));
        if (kind == ir::OpKind::Pow && n.is_float && !ir::is_float(dt) && !ir::is_complex(dt))
          dt = DType::F32;
        ir::NodeId c = detail::scalar_node(g, n, dt, ir::op_name(kind), loc);
        return scalar_first ? binary_node(g, kind, c, x, dt, loc)
                            : binary_node(g, kind, x, c, dt, loc);
      },
      loc);
}

Tensor unary(ir::OpKind kind, const Tensor& x, const Loc& loc, bool float_only = true) {
  return detail::apply1(
      x,
      [&](ir::Graph& g, ir::NodeId in) {
        DType t = float_only ? detail::float_dtype(x.dtype()) : x.dtype();
        return g.add_inferred(ir::Op(kind), {cast_to(g, in, t, loc)}, loc);
      },
      loc);
}

} // namespace

#define RLX_DEFINE_BINARY(FN, KIND, MODE)                                                          \
  Tensor FN(const Tensor& a, const Tensor& b, Loc loc) {                                           \
    return binary(ir::OpKind::KIND, Compute::MODE, a, b, loc);                                     \
  }                                                                                                \
  Tensor FN(const Tensor& a, Number b, Loc loc) {                                                  \
    return binary_scalar(ir::OpKind::KIND, Compute::MODE, a, b, false, loc);                       \
  }                                                                                                \
  Tensor FN(Number a, const Tensor& b, Loc loc) {                                                  \
    return binary_scalar(ir::OpKind::KIND, Compute::MODE, b, a, true, loc);                        \
  }
RLX_DEFINE_BINARY(add, Add, Promote)
RLX_DEFINE_BINARY(sub, Sub, Promote)
RLX_DEFINE_BINARY(mul, Mul, Promote)
RLX_DEFINE_BINARY(div, Div, TrueDiv)
RLX_DEFINE_BINARY(eq, Eq, Promote)
RLX_DEFINE_BINARY(ne, Ne, Promote)
RLX_DEFINE_BINARY(lt, Lt, Promote)
RLX_DEFINE_BINARY(le, Le, Promote)
RLX_DEFINE_BINARY(gt, Gt, Promote)
RLX_DEFINE_BINARY(ge, Ge, Promote)
RLX_DEFINE_BINARY(pow, Pow, Promote)
RLX_DEFINE_BINARY(maximum, Max, Promote)
RLX_DEFINE_BINARY(minimum, Min, Promote)
RLX_DEFINE_BINARY(fmod, Mod, Promote)
RLX_DEFINE_BINARY(logical_and, And, Bool)
RLX_DEFINE_BINARY(logical_or, Or, Bool)
#undef RLX_DEFINE_BINARY

#define RLX_DEFINE_OPERATOR(OP, FN)                                                                \
  Tensor operator OP(detail::At a, detail::At b) { return FN(a.t, b.t, a.loc); }
RLX_DEFINE_OPERATOR(+, add)
RLX_DEFINE_OPERATOR(-, sub)
RLX_DEFINE_OPERATOR(*, mul)
RLX_DEFINE_OPERATOR(/, div)
RLX_DEFINE_OPERATOR(==, eq)
RLX_DEFINE_OPERATOR(!=, ne)
RLX_DEFINE_OPERATOR(<, lt)
RLX_DEFINE_OPERATOR(<=, le)
RLX_DEFINE_OPERATOR(>, gt)
RLX_DEFINE_OPERATOR(>=, ge)
RLX_DEFINE_OPERATOR(&&, logical_and)
RLX_DEFINE_OPERATOR(||, logical_or)
#undef RLX_DEFINE_OPERATOR

Tensor operator-(detail::At a) { return neg(a.t, a.loc); }
Tensor operator!(detail::At a) { return logical_not(a.t, a.loc); }
Tensor& operator+=(Tensor& a, const Tensor& b) { return a = add(a, b); }
Tensor& operator-=(Tensor& a, const Tensor& b) { return a = sub(a, b); }
Tensor& operator*=(Tensor& a, const Tensor& b) { return a = mul(a, b); }
Tensor& operator/=(Tensor& a, const Tensor& b) { return a = div(a, b); }

#define RLX_DEFINE_UNARY(FN, KIND, FLOAT_ONLY)                                                     \
  Tensor FN(const Tensor& x, Loc loc) { return unary(ir::OpKind::KIND, x, loc, FLOAT_ONLY); }
RLX_DEFINE_UNARY(neg, Neg, false)
Tensor abs(const Tensor& x, Loc loc) {
  if (!ir::is_complex(x.dtype())) return unary(ir::OpKind::Abs, x, loc, false);
  Tensor re = real(x, loc).astype(DType::F64, loc), im = imag(x, loc).astype(DType::F64, loc);
  return sqrt(re * re + im * im, loc).astype(DType::F32, loc);
}
RLX_DEFINE_UNARY(sign, Sign, false)
RLX_DEFINE_UNARY(relu, Relu, false)
RLX_DEFINE_UNARY(exp, Exp, true)
RLX_DEFINE_UNARY(log, Log, true)
RLX_DEFINE_UNARY(sqrt, Sqrt, true)
RLX_DEFINE_UNARY(rsqrt, Rsqrt, true)
RLX_DEFINE_UNARY(reciprocal, Recip, true)
RLX_DEFINE_UNARY(sin, Sin, true)
RLX_DEFINE_UNARY(cos, Cos, true)
RLX_DEFINE_UNARY(tan, Tan, true)
RLX_DEFINE_UNARY(atan, Atan, true)
RLX_DEFINE_UNARY(tanh, Tanh, true)
RLX_DEFINE_UNARY(erf, Erf, true)
RLX_DEFINE_UNARY(sigmoid, Sigmoid, true)
RLX_DEFINE_UNARY(gelu, Gelu, true)
RLX_DEFINE_UNARY(gelu_approx, GeluApprox, true)
RLX_DEFINE_UNARY(silu, Silu, true)
RLX_DEFINE_UNARY(softplus, Softplus, true)
RLX_DEFINE_UNARY(hard_swish, HardSwish, true)
RLX_DEFINE_UNARY(hard_sigmoid, HardSigmoid, true)
RLX_DEFINE_UNARY(mish, Mish, true)
RLX_DEFINE_UNARY(softsign, Softsign, true)
RLX_DEFINE_UNARY(log_sigmoid, LogSigmoid, true)
RLX_DEFINE_UNARY(log1p, Log1p, true)
RLX_DEFINE_UNARY(expm1, Expm1, true)
RLX_DEFINE_UNARY(stop_gradient, StopGradient, false)
#undef RLX_DEFINE_UNARY

// Rounding is the identity on integers (numpy keeps the dtype).
Tensor round(const Tensor& x, Loc loc) {
  return ir::is_int(x.dtype()) ? x : unary(ir::OpKind::Round, x, loc);
}
Tensor floor(const Tensor& x, Loc loc) {
  return ir::is_int(x.dtype()) ? x : unary(ir::OpKind::Floor, x, loc);
}
Tensor ceil(const Tensor& x, Loc loc) {
  return ir::is_int(x.dtype()) ? x : unary(ir::OpKind::Ceil, x, loc);
}

Tensor logical_not(const Tensor& x, Loc loc) {
  return detail::apply1(
      x,
      [&](ir::Graph& g, ir::NodeId in) {
        ir::NodeId b = cast_to(g, in, DType::Bool, loc);
        return g.add_inferred(ir::Op(ir::OpKind::Eq), {b, g.constant(0, DType::Bool, loc)}, loc);
      },
      loc);
}

Tensor leaky_relu(const Tensor& x, double alpha, Loc loc) {
  return detail::apply1(
      x,
      [&](ir::Graph& g, ir::NodeId in) {
        ir::Op op(ir::OpKind::LeakyRelu, ir::LeakyReluAttrs{float(alpha)});
        return g.add_inferred(op, {cast_to(g, in, detail::float_dtype(x.dtype()), loc)}, loc);
      },
      loc);
}

Tensor elu(const Tensor& x, double alpha, Loc loc) {
  return detail::apply1(
      x,
      [&](ir::Graph& g, ir::NodeId in) {
        ir::Op op(ir::OpKind::Elu, ir::EluAttrs{float(alpha)});
        return g.add_inferred(op, {cast_to(g, in, detail::float_dtype(x.dtype()), loc)}, loc);
      },
      loc);
}

Tensor clamp(const Tensor& x, std::optional<double> lo, std::optional<double> hi, Loc loc) {
  const double inf = std::numeric_limits<double>::infinity();
  return detail::apply1(
      x,
      [&](ir::Graph& g, ir::NodeId in) {
        return g.clamp(in, lo.value_or(-inf), hi.value_or(inf), loc);
      },
      loc);
}

Tensor Tensor::clamp(std::optional<double> lo, std::optional<double> hi, Loc loc) const {
  return rlx::clamp(*this, lo, hi, loc);
}

Tensor cast(const Tensor& x, DType dtype, Loc loc) {
  return detail::apply1(
      x, [&](ir::Graph& g, ir::NodeId in) { return cast_to(g, in, dtype, loc); }, loc);
}
Tensor Tensor::cast(DType dtype, Loc loc) const { return rlx::cast(*this, dtype, loc); }

namespace {
ir::NodeId where_node(ir::Graph& g, ir::NodeId c, ir::NodeId a, ir::NodeId b, DType t,
                      const Loc& loc) {
  return g.where_(cast_to(g, c, DType::Bool, loc), cast_to(g, a, t, loc), cast_to(g, b, t, loc),
                  loc);
}
} // namespace

Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b, Loc loc) {
  return apply(
      {cond, a, b},
      [&](ir::Graph& g, std::span<const ir::NodeId> in) {
        return where_node(g, in[0], in[1], in[2], ir::promote(a.dtype(), b.dtype()), loc);
      },
      loc);
}
Tensor where(const Tensor& cond, const Tensor& a, Number b, Loc loc) {
  return apply(
      {cond, a},
      [&](ir::Graph& g, std::span<const ir::NodeId> in) {
        DType t = detail::scalar_result_dtype(a.dtype(), b);
        return where_node(g, in[0], in[1], detail::scalar_node(g, b, t, "where", loc), t, loc);
      },
      loc);
}
Tensor where(const Tensor& cond, Number a, const Tensor& b, Loc loc) {
  return apply(
      {cond, b},
      [&](ir::Graph& g, std::span<const ir::NodeId> in) {
        DType t = detail::scalar_result_dtype(b.dtype(), a);
        return where_node(g, in[0], detail::scalar_node(g, a, t, "where", loc), in[1], t, loc);
      },
      loc);
}

// ---- Methods that forward to the functions above
Tensor Tensor::exp(Loc loc) const { return rlx::exp(*this, loc); }
Tensor Tensor::log(Loc loc) const { return rlx::log(*this, loc); }
Tensor Tensor::sqrt(Loc loc) const { return rlx::sqrt(*this, loc); }
Tensor Tensor::abs(Loc loc) const { return rlx::abs(*this, loc); }
Tensor Tensor::relu(Loc loc) const { return rlx::relu(*this, loc); }
Tensor Tensor::tanh(Loc loc) const { return rlx::tanh(*this, loc); }
Tensor Tensor::sigmoid(Loc loc) const { return rlx::sigmoid(*this, loc); }
Tensor Tensor::pow(double exponent, Loc loc) const {
  return rlx::pow(*this, Number(exponent), loc);
}

} // namespace rlx
