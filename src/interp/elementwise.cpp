// src/interp/elementwise.cpp -- element-wise kernels: unary, binary (broadcasting), where, cast.
// Activation and binary kinds get theirs from their Scalar<K> rule, generated from ops.def.
// Float math runs in double through ops::Scalar<K> and rounds once to the output dtype; integer
// math runs in int64 with defined wrap-around, x/0 = 0 and x%0 = 0.
#include "kernels.hpp"

#include "ops/scalar.hpp"

#include <limits>
#include <optional>

namespace rlx::interp::detail {

using ir::DType;
using ir::OpKind;

namespace {

template <OpKind K> void unary_loop(const Buffer& in, Buffer& out, const ir::Op& op) {
  const auto& attrs = op.attrs<ir::AttrsOf<K>>();
  for (int64_t i = 0; i < out.numel(); ++i)
    out.set_f64(i, ops::Scalar<K>::apply(in.get_f64(i), attrs));
}

template <OpKind K> double activation(double x) {
  return ops::Scalar<K>::apply(x, ir::AttrsOf<K>{});
}

/// Every activation's rule with default attributes, by Activation (a missing rule does not
/// compile).
constexpr double (*kActivations[])(double) = {
#define OP(E, N, F, A, T, S)
#define UNARY(E, N, T, S) &activation<OpKind::E>,
#include "rlx/ir/ops.def"
};

int64_t wrap_add(int64_t a, int64_t b) { return int64_t(uint64_t(a) + uint64_t(b)); }
int64_t wrap_sub(int64_t a, int64_t b) { return int64_t(uint64_t(a) - uint64_t(b)); }
int64_t wrap_mul(int64_t a, int64_t b) { return int64_t(uint64_t(a) * uint64_t(b)); }

int64_t int_pow(int64_t base, int64_t exp) {
  if (exp < 0) return base == 1 ? 1 : (base == -1 ? (exp % 2 ? -1 : 1) : 0);
  int64_t r = 1;
  while (exp) {
    if (exp & 1) r = wrap_mul(r, base);
    base = wrap_mul(base, base);
    exp >>= 1;
  }
  return r;
}

/// Integer semantics of the binary ops (C++-like, but defined everywhere).
int64_t binary_int(OpKind k, int64_t a, int64_t b) {
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  switch (k) {
  case OpKind::Add:
    return wrap_add(a, b);
  case OpKind::Sub:
    return wrap_sub(a, b);
  case OpKind::Mul:
    return wrap_mul(a, b);
  case OpKind::Div:
    return b == 0 ? 0 : (a == kMin && b == -1 ? kMin : a / b);
  case OpKind::Mod:
    return b == 0 || (a == kMin && b == -1) ? 0 : a % b;
  case OpKind::Pow:
    return int_pow(a, b);
  case OpKind::Max:
    return a > b ? a : b;
  case OpKind::Min:
    return a < b ? a : b;
  case OpKind::Eq:
    return a == b;
  case OpKind::Ne:
    return a != b;
  case OpKind::Lt:
    return a < b;
  case OpKind::Le:
    return a <= b;
  case OpKind::Gt:
    return a > b;
  case OpKind::Ge:
    return a >= b;
  case OpKind::And:
    return a != 0 && b != 0;
  case OpKind::Or:
    return a != 0 || b != 0;
  default:
    break;
  }
  RLX_CHECK(false, "binary_int: ", ir::op_name(k));
  return 0;
}

Buffer complex_binary(const ir::Node& n, const Buffer& a, const Buffer& b) {
  Buffer out(n.shape);
  BroadcastIndex ia(a.shape(), n.shape), ib(b.shape(), n.shape);
  for (int64_t i = 0; i < out.numel(); ++i) {
    std::complex<float> x = a.get_c64(ia(i)), y = b.get_c64(ib(i)), r;
    switch (n.op.kind()) {
    case OpKind::Add:
      r = x + y;
      break;
    case OpKind::Sub:
      r = x - y;
      break;
    case OpKind::Mul:
      r = x * y;
      break;
    case OpKind::Div:
      r = x / y;
      break;
    case OpKind::Eq:
      out.set_f64(i, x == y);
      continue;
    case OpKind::Ne:
      out.set_f64(i, x != y);
      continue;
    default:
      fail(ErrorKind::Unsupported, n.op.name(), ": not defined for complex operands (",
           ir::short_str(a.shape()), ", ", ir::short_str(b.shape()), ")");
    }
    out.set_c64(i, r);
  }
  return out;
}

} // namespace

double apply_activation(ir::Activation act, double x) { return kActivations[std::size_t(act)](x); }

std::optional<int64_t> integer_activation(OpKind k, int64_t x) {
  switch (k) {
  case OpKind::Relu:
    return x > 0 ? x : 0;
  case OpKind::Neg:
    return wrap_sub(0, x);
  case OpKind::Abs:
    return x < 0 ? wrap_sub(0, x) : x;
  case OpKind::Sign:
    return (x > 0) - (x < 0);
  case OpKind::StopGradient:
    return x;
  default:
    return std::nullopt;
  }
}

namespace {

/// A unary kind with a Scalar<K> rule: complex values (neg and stop_gradient only), integers
/// (the kIntegerOk kinds, clamp) and floats (the rule, in double).
template <OpKind K> Buffer unary(const ir::Node& n, Operands in) {
  Buffer out(n.shape);
  const Buffer& x = *in[0];
  if (x.dtype() == DType::C64) {
    if (K != OpKind::Neg && K != OpKind::StopGradient)
      fail(ErrorKind::Unsupported, n.op.name(), ": not defined for complex operands");
    for (int64_t i = 0; i < out.numel(); ++i)
      out.set_c64(i, K == OpKind::Neg ? -x.get_c64(i) : x.get_c64(i));
    return out;
  }
  if (int_domain(x.dtype())) {
    if constexpr (K == OpKind::Clamp) {
      // Compare in double; a bound that is hit is stored like any float (toward zero, saturating).
      const auto& c = n.op.attrs<ir::ClampAttrs>();
      for (int64_t i = 0; i < out.numel(); ++i) {
        int64_t v = x.get_i64(i);
        if (double(v) < c.min)
          out.set_f64(i, c.min);
        else if (double(v) > c.max)
          out.set_f64(i, c.max);
        else
          out.set_i64(i, v);
      }
      return out;
    }
    for (int64_t i = 0; i < out.numel(); ++i) {
      std::optional<int64_t> v = integer_activation(K, x.get_i64(i));
      RLX_CHECK(v.has_value(), "unary_int: ", n.op.name());
      out.set_i64(i, *v);
    }
    return out;
  }
  unary_loop<K>(x, out, n.op);
  return out;
}

/// A binary kind, broadcasting: complex, integer (binary_int) or float (the Scalar<K> rule).
template <OpKind K> Buffer binary(const ir::Node& n, Operands in) {
  const Buffer &a = *in[0], &b = *in[1];
  if (a.dtype() == DType::C64 || b.dtype() == DType::C64) return complex_binary(n, a, b);
  Buffer out(n.shape);
  BroadcastIndex ia(a.shape(), n.shape), ib(b.shape(), n.shape);
  DType domain = ir::promote(a.dtype(), b.dtype());
  if (int_domain(domain)) {
    for (int64_t i = 0; i < out.numel(); ++i)
      out.set_i64(i, binary_int(K, a.get_i64(ia(i)), b.get_i64(ib(i))));
  } else {
    for (int64_t i = 0; i < out.numel(); ++i)
      out.set_f64(i, ops::Scalar<K>::apply(a.get_f64(ia(i)), b.get_f64(ib(i))));
  }
  return out;
}

} // namespace

// Every activation and binary kind gets its kernel from its Scalar rule.
#define OP(E, N, F, A, T, S)
#define UNARY(E, N, T, S)                                                                          \
  RLX_KERNEL(E) { return unary<OpKind::E>(n, in); }
#define BINARY(E, N, T)                                                                            \
  RLX_KERNEL(E) { return binary<OpKind::E>(n, in); }
#include "rlx/ir/ops.def"

RLX_KERNEL(StopGradient) { return unary<OpKind::StopGradient>(n, in); }
RLX_KERNEL(Clamp) { return unary<OpKind::Clamp>(n, in); }

RLX_KERNEL(Cast) {
  Buffer out(n.shape);
  const Buffer& x = *in[0];
  for (int64_t i = 0; i < out.numel(); ++i) {
    if (x.dtype() == DType::C64 || out.dtype() == DType::C64)
      out.set_c64(i, x.get_c64(i));
    else if (int_domain(x.dtype()))
      out.set_i64(i, x.get_i64(i));
    else
      out.set_f64(i, x.get_f64(i));
  }
  return out;
}

RLX_KERNEL(Where) {
  Buffer out(n.shape);
  const Buffer &c = *in[0], &a = *in[1], &b = *in[2];
  BroadcastIndex ic(c.shape(), n.shape), ia(a.shape(), n.shape), ib(b.shape(), n.shape);
  bool ints = int_domain(out.dtype());
  for (int64_t i = 0; i < out.numel(); ++i) {
    const Buffer& src = c.get_f64(ic(i)) != 0.0 ? a : b;
    int64_t j = &src == &a ? ia(i) : ib(i);
    if (out.dtype() == DType::C64)
      out.set_c64(i, src.get_c64(j));
    else if (ints)
      out.set_i64(i, src.get_i64(j));
    else
      out.set_f64(i, src.get_f64(j));
  }
  return out;
}

} // namespace rlx::interp::detail
