// src/onnx/ops_elementwise.cpp -- ONNX element-wise ops: unary math and activations (direct rlx
// kinds or small compositions), binary arithmetic and comparisons, variadic Max/Min/Sum/Mean,
// Clip, Where, Cast.
#include "importer.hpp"

#include <numbers>

namespace rlx::onnx::detail {

using ir::DType;
using ir::NodeId;
using ir::Op;
using ir::OpKind;

namespace {

NodeId cast_to(Ctx& c, NodeId x, DType dt) {
  return c.g.shape(x).dtype() == dt ? x : c.g.cast(x, dt);
}

template <OpKind K> void unary(Ctx& c) { c.out(0, op1(c, K, c.in(0))); }
template <OpKind K> void binary(Ctx& c) { c.out(0, op2(c, K, c.in(0), c.in(1))); }

void identity(Ctx& c) { c.out(0, c.in(0)); }

void not_(Ctx& c) {
  NodeId x = c.in(0);
  c.out(0, op2(c, OpKind::Eq, x, like(c, x, 0)));
}

void xor_(Ctx& c) { c.out(0, op2(c, OpKind::Ne, c.in(0), c.in(1))); }

void is_nan(Ctx& c) {
  NodeId x = c.in(0);
  c.out(0, op2(c, OpKind::Ne, x, x));
}

void is_inf(Ctx& c) {
  NodeId x = c.in(0);
  bool neg = c.attr_i("detect_negative", 1) != 0, pos = c.attr_i("detect_positive", 1) != 0;
  NodeId none = c.scalar(0, DType::Bool);
  NodeId p = pos ? op2(c, OpKind::Eq, x, like(c, x, ir::kInf)) : none;
  NodeId n = neg ? op2(c, OpKind::Eq, x, like(c, x, -ir::kInf)) : none;
  NodeId r = op2(c, OpKind::Or, p, n);
  c.out(0, c.g.expand(r, c.sizes(0)));
}

// exp(x) and exp(-x)
std::pair<NodeId, NodeId> exps(Ctx& c, NodeId x) {
  return {op1(c, OpKind::Exp, x), op1(c, OpKind::Exp, op1(c, OpKind::Neg, x))};
}
void sinh(Ctx& c) {
  NodeId x = c.in(0);
  auto [e, f] = exps(c, x);
  c.out(0, op2(c, OpKind::Mul, op2(c, OpKind::Sub, e, f), like(c, x, 0.5)));
}
void cosh(Ctx& c) {
  NodeId x = c.in(0);
  auto [e, f] = exps(c, x);
  c.out(0, op2(c, OpKind::Mul, op2(c, OpKind::Add, e, f), like(c, x, 0.5)));
}
// log(x + sqrt(x*x + s))
NodeId log_hyp(Ctx& c, NodeId x, double s) {
  NodeId r = op1(c, OpKind::Sqrt, op2(c, OpKind::Add, op2(c, OpKind::Mul, x, x), like(c, x, s)));
  return op1(c, OpKind::Log, op2(c, OpKind::Add, x, r));
}
void asinh(Ctx& c) {
  NodeId x = c.in(0);
  c.out(0, log_hyp(c, x, 1));
}
void acosh(Ctx& c) {
  NodeId x = c.in(0);
  c.out(0, log_hyp(c, x, -1));
}
void atanh(Ctx& c) {
  NodeId x = c.in(0);
  NodeId q = op2(c, OpKind::Div, op2(c, OpKind::Add, like(c, x, 1), x),
                 op2(c, OpKind::Sub, like(c, x, 1), x));
  c.out(0, op2(c, OpKind::Mul, op1(c, OpKind::Log, q), like(c, x, 0.5)));
}
NodeId asin_of(Ctx& c, NodeId x) {
  NodeId r = op1(c, OpKind::Sqrt, op2(c, OpKind::Sub, like(c, x, 1), op2(c, OpKind::Mul, x, x)));
  return op1(c, OpKind::Atan, op2(c, OpKind::Div, x, r));
}
void asin(Ctx& c) { c.out(0, asin_of(c, c.in(0))); }
void acos(Ctx& c) {
  NodeId x = c.in(0);
  c.out(0, op2(c, OpKind::Sub, like(c, x, std::numbers::pi / 2), asin_of(c, x)));
}

void leaky_relu(Ctx& c) {
  c.out(0, c.g.add_inferred(Op(OpKind::LeakyRelu, ir::LeakyReluAttrs{c.attr_f("alpha", 0.01f)}),
                            {c.in(0)}));
}
NodeId elu_of(Ctx& c, NodeId x, float alpha) {
  return c.g.add_inferred(Op(OpKind::Elu, ir::EluAttrs{alpha}), {x});
}
void elu(Ctx& c) { c.out(0, elu_of(c, c.in(0), c.attr_f("alpha", 1.0f))); }
void selu(Ctx& c) {
  NodeId x = c.in(0);
  float alpha = c.attr_f("alpha", 1.67326319217681884765625f);
  float gamma = c.attr_f("gamma", 1.05070102214813232421875f);
  c.out(0, op2(c, OpKind::Mul, elu_of(c, x, alpha), like(c, x, gamma)));
}
void celu(Ctx& c) {
  NodeId x = c.in(0);
  float alpha = c.attr_f("alpha", 1.0f);
  NodeId e = elu_of(c, op2(c, OpKind::Div, x, like(c, x, alpha)), 1.0f);
  c.out(0, op2(c, OpKind::Mul, e, like(c, x, alpha)));
}
void hard_sigmoid(Ctx& c) {
  NodeId x = c.in(0);
  float alpha = c.attr_f("alpha", 0.2f), beta = c.attr_f("beta", 0.5f);
  NodeId y = op2(c, OpKind::Add, op2(c, OpKind::Mul, x, like(c, x, alpha)), like(c, x, beta));
  c.out(0, c.g.clamp(y, 0, 1));
}
void thresholded_relu(Ctx& c) {
  NodeId x = c.in(0);
  float alpha = c.attr_f("alpha", 1.0f);
  c.out(0, c.g.where_(op2(c, OpKind::Gt, x, like(c, x, alpha)), x, like(c, x, 0)));
}
void shrink(Ctx& c) {
  NodeId x = c.in(0);
  float bias = c.attr_f("bias", 0), lambd = c.attr_f("lambd", 0.5f);
  NodeId hi = c.g.where_(op2(c, OpKind::Gt, x, like(c, x, lambd)),
                         op2(c, OpKind::Sub, x, like(c, x, bias)), like(c, x, 0));
  c.out(0, c.g.where_(op2(c, OpKind::Lt, x, like(c, x, -lambd)),
                      op2(c, OpKind::Add, x, like(c, x, bias)), hi));
}
void prelu(Ctx& c) {
  NodeId x = c.in(0), slope = c.in(1);
  c.out(0, c.g.where_(op2(c, OpKind::Lt, x, like(c, x, 0)), op2(c, OpKind::Mul, x, slope), x));
}

void pow_(Ctx& c) {
  NodeId x = c.in(0);
  // The result has the base's dtype (an integer base with a float exponent truncates).
  NodeId r = op2(c, OpKind::Pow, x, c.in(1));
  c.out(0, cast_to(c, r, c.dtype(0)));
}

void mod(Ctx& c) {
  NodeId a = c.in(0), b = c.in(1);
  bool fmod = c.attr_i("fmod", 0) != 0;
  DType dt = c.dtype(0);
  if (!fmod && ir::is_float(dt)) fail(ErrorKind::Value, "fmod=0 needs integer operands");
  NodeId r = op2(c, OpKind::Mod, a, b);
  if (fmod || !ir::is_signed(dt)) return c.out(0, r);
  // Python's modulo: the sign of the divisor.
  NodeId zero = like(c, a, 0);
  NodeId differ = op2(c, OpKind::Ne, op2(c, OpKind::Lt, r, zero), op2(c, OpKind::Lt, b, zero));
  NodeId fix = op2(c, OpKind::And, op2(c, OpKind::Ne, r, zero), differ);
  c.out(0, op2(c, OpKind::Add, r, c.g.where_(fix, b, zero)));
}

template <OpKind K> void variadic(Ctx& c) {
  NodeId acc = c.in(0);
  for (std::size_t i = 1; i < c.num_inputs(); ++i) acc = op2(c, K, acc, c.in(i));
  c.out(0, acc);
}
void mean(Ctx& c) {
  NodeId acc = c.in(0);
  for (std::size_t i = 1; i < c.num_inputs(); ++i) acc = op2(c, OpKind::Add, acc, c.in(i));
  c.out(0, op2(c, OpKind::Div, acc, like(c, acc, double(c.num_inputs()))));
}

void clip(Ctx& c) {
  NodeId x = c.in(0);
  std::optional<NodeId> lo, hi;
  if (c.opset < 11) {
    if (c.has_attr("min")) lo = like(c, x, c.attr_f("min", 0));
    if (c.has_attr("max")) hi = like(c, x, c.attr_f("max", 0));
  } else {
    if (c.has(1)) lo = c.in(1);
    if (c.has(2)) hi = c.in(2);
  }
  NodeId y = x;
  if (lo) y = op2(c, OpKind::Max, y, *lo);
  if (hi) y = op2(c, OpKind::Min, y, *hi);
  c.out(0, cast_to(c, y, c.dtype(0)));
}

void where(Ctx& c) { c.out(0, c.g.where_(c.in(0), c.in(1), c.in(2))); }

void cast(Ctx& c) {
  int64_t to = c.attr_i("to", 0);
  std::optional<DType> dt = dtype_of(int(to));
  if (!dt)
    c.unsupported(rlx::detail::cat("cast to ", elem_type_name(int(to)), ", which rlx lacks"));
  c.out(0, cast_to(c, c.in(0), *dt));
}
void cast_like(Ctx& c) { c.out(0, cast_to(c, c.in(0), c.dtype(1))); }

} // namespace

void add_elementwise_rules(Rules& r) {
  r["Abs"] = {unary<OpKind::Abs>, 1};
  r["Neg"] = {unary<OpKind::Neg>, 1};
  r["Exp"] = {unary<OpKind::Exp>, 1};
  r["Log"] = {unary<OpKind::Log>, 1};
  r["Sqrt"] = {unary<OpKind::Sqrt>, 1};
  r["Sin"] = {unary<OpKind::Sin>, 7};
  r["Cos"] = {unary<OpKind::Cos>, 7};
  r["Tan"] = {unary<OpKind::Tan>, 7};
  r["Atan"] = {unary<OpKind::Atan>, 7};
  r["Floor"] = {unary<OpKind::Floor>, 1};
  r["Ceil"] = {unary<OpKind::Ceil>, 1};
  r["Round"] = {unary<OpKind::Round>, 11};
  r["Sign"] = {unary<OpKind::Sign>, 9};
  r["Reciprocal"] = {unary<OpKind::Recip>, 1};
  r["Erf"] = {unary<OpKind::Erf>, 9};
  r["Relu"] = {unary<OpKind::Relu>, 1};
  r["Sigmoid"] = {unary<OpKind::Sigmoid>, 1};
  r["Tanh"] = {unary<OpKind::Tanh>, 1};
  r["Softplus"] = {unary<OpKind::Softplus>, 1};
  r["Softsign"] = {unary<OpKind::Softsign>, 1};
  r["HardSwish"] = {unary<OpKind::HardSwish>, 14};
  r["Mish"] = {unary<OpKind::Mish>, 18};
  r["Identity"] = {identity, 1};
  r["Not"] = {not_, 1};
  r["IsNaN"] = {is_nan, 9};
  r["IsInf"] = {is_inf, 10};
  r["Sinh"] = {sinh, 9};
  r["Cosh"] = {cosh, 9};
  r["Asinh"] = {asinh, 9};
  r["Acosh"] = {acosh, 9};
  r["Atanh"] = {atanh, 9};
  r["Asin"] = {asin, 7};
  r["Acos"] = {acos, 7};
  r["LeakyRelu"] = {leaky_relu, 6};
  r["Elu"] = {elu, 6};
  r["Selu"] = {selu, 6};
  r["Celu"] = {celu, 12};
  r["HardSigmoid"] = {hard_sigmoid, 6};
  r["ThresholdedRelu"] = {thresholded_relu, 10};
  r["Shrink"] = {shrink, 9};
  r["PRelu"] = {prelu, 7};
  r["Add"] = {binary<OpKind::Add>, 7};
  r["Sub"] = {binary<OpKind::Sub>, 7};
  r["Mul"] = {binary<OpKind::Mul>, 7};
  r["Div"] = {binary<OpKind::Div>, 7};
  r["Pow"] = {pow_, 7};
  r["Mod"] = {mod, 10};
  r["Equal"] = {binary<OpKind::Eq>, 7};
  r["Less"] = {binary<OpKind::Lt>, 7};
  r["LessOrEqual"] = {binary<OpKind::Le>, 12};
  r["Greater"] = {binary<OpKind::Gt>, 7};
  r["GreaterOrEqual"] = {binary<OpKind::Ge>, 12};
  r["And"] = {binary<OpKind::And>, 7};
  r["Or"] = {binary<OpKind::Or>, 7};
  r["Xor"] = {xor_, 7};
  r["Max"] = {variadic<OpKind::Max>, 8};
  r["Min"] = {variadic<OpKind::Min>, 8};
  r["Sum"] = {variadic<OpKind::Add>, 8};
  r["Mean"] = {mean, 8};
  r["Clip"] = {clip, 6};
  r["Where"] = {where, 9};
  r["Cast"] = {cast, 6};
  r["CastLike"] = {cast_like, 15};
}

} // namespace rlx::onnx::detail
