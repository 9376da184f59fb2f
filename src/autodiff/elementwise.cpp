// src/autodiff/elementwise.cpp -- derivatives of the element-wise ops, written once for both
// modes: reverse mode multiplies the cotangent by them, forward mode the tangent.
#include "rules.hpp"

#include <cmath>
#include <numbers>

namespace rlx::autodiff {

namespace {

using UnaryDeriv = NodeId (*)(Builder& b, const Node& n, NodeId x, NodeId y);
struct UnaryEntry {
  OpKind kind;
  UnaryDeriv fn;
};

NodeId sigmoid(Builder& b, NodeId x) { return b.un(OpKind::Sigmoid, x); }
NodeId step(Builder& b, OpKind cmp, NodeId x, double at, double yes, double no) {
  NodeId c = b.bin(cmp, x, b.like(at, x));
  return b.where(c, b.like(yes, x), b.like(no, x));
}

/// f'(x) per activation; y is f(x) when the form in y is simpler.
constexpr UnaryEntry kUnary[] = {
    {OpKind::Relu,
     [](Builder& b, const Node&, NodeId x, NodeId) { return step(b, OpKind::Gt, x, 0, 1, 0); }},
    {OpKind::Gelu,
     [](Builder& b, const Node&, NodeId x, NodeId) { // Phi(x) + x phi(x)
       NodeId cdf = b.mul(
           b.like(0.5, x),
           b.add(b.like(1, x), b.un(OpKind::Erf, b.mul(x, b.like(std::numbers::sqrt2 / 2, x)))));
       NodeId pdf = b.mul(b.like(0.5 * std::numbers::sqrt2 * std::numbers::inv_sqrtpi, x),
                          b.un(OpKind::Exp, b.mul(b.like(-0.5, x), b.mul(x, x))));
       return b.add(cdf, b.mul(x, pdf));
     }},
    {OpKind::GeluApprox,
     [](Builder& b, const Node&, NodeId x, NodeId) {
       // y = x/2 (1 + tanh u), u = c (x + k x^3): y' = (1 + t)/2 + x/2 (1 - t^2) c (1 + 3k x^2)
       const double c = std::numbers::sqrt2 * std::numbers::inv_sqrtpi, k = 0.044715;
       NodeId x2 = b.mul(x, x);
       NodeId u = b.mul(b.like(c, x), b.add(x, b.mul(b.like(k, x), b.mul(x2, x))));
       NodeId t = b.un(OpKind::Tanh, u);
       NodeId one = b.like(1, x), half = b.like(0.5, x);
       NodeId du = b.mul(b.like(c, x), b.add(one, b.mul(b.like(3 * k, x), x2)));
       return b.add(b.mul(half, b.add(one, t)),
                    b.mul(b.mul(half, x), b.mul(b.sub(one, b.mul(t, t)), du)));
     }},
    {OpKind::Silu,
     [](Builder& b, const Node&, NodeId x, NodeId) { // s (1 + x (1 - s))
       NodeId s = sigmoid(b, x), one = b.like(1, x);
       return b.mul(s, b.add(one, b.mul(x, b.sub(one, s))));
     }},
    {OpKind::Sigmoid,
     [](Builder& b, const Node&, NodeId, NodeId y) { return b.mul(y, b.sub(b.like(1, y), y)); }},
    {OpKind::Tanh,
     [](Builder& b, const Node&, NodeId, NodeId y) { return b.sub(b.like(1, y), b.mul(y, y)); }},
    {OpKind::Exp, [](Builder&, const Node&, NodeId, NodeId y) { return y; }},
    {OpKind::Log, [](Builder& b, const Node&, NodeId x, NodeId) { return b.un(OpKind::Recip, x); }},
    {OpKind::Sqrt,
     [](Builder& b, const Node&, NodeId, NodeId y) { return b.div(b.like(0.5, y), y); }},
    {OpKind::Rsqrt,
     [](Builder& b, const Node&, NodeId, NodeId y) { // -y^3 / 2
       return b.mul(b.like(-0.5, y), b.mul(y, b.mul(y, y)));
     }},
    {OpKind::Neg, [](Builder& b, const Node&, NodeId x, NodeId) { return b.like(-1, x); }},
    {OpKind::Abs, [](Builder& b, const Node&, NodeId x, NodeId) { return b.un(OpKind::Sign, x); }},
    {OpKind::Sin, [](Builder& b, const Node&, NodeId x, NodeId) { return b.un(OpKind::Cos, x); }},
    {OpKind::Cos,
     [](Builder& b, const Node&, NodeId x, NodeId) { return b.neg(b.un(OpKind::Sin, x)); }},
    {OpKind::Tan,
     [](Builder& b, const Node&, NodeId, NodeId y) { return b.add(b.like(1, y), b.mul(y, y)); }},
    {OpKind::Atan, [](Builder& b, const Node&, NodeId x,
                      NodeId) { return b.un(OpKind::Recip, b.add(b.like(1, x), b.mul(x, x))); }},
    {OpKind::Recip, [](Builder& b, const Node&, NodeId, NodeId y) { return b.neg(b.mul(y, y)); }},
    {OpKind::Erf,
     [](Builder& b, const Node&, NodeId x, NodeId) { // 2/sqrt(pi) exp(-x^2)
       return b.mul(b.like(2 * std::numbers::inv_sqrtpi, x), b.un(OpKind::Exp, b.neg(b.mul(x, x))));
     }},
    {OpKind::Softplus, [](Builder& b, const Node&, NodeId x, NodeId) { return sigmoid(b, x); }},
    {OpKind::LeakyRelu,
     [](Builder& b, const Node& n, NodeId x, NodeId) {
       return step(b, OpKind::Ge, x, 0, 1, double(n.op.attrs<ir::LeakyReluAttrs>().alpha));
     }},
    {OpKind::Elu,
     [](Builder& b, const Node& n, NodeId x, NodeId) { // alpha e^x below 0
       NodeId below =
           b.mul(b.like(double(n.op.attrs<ir::EluAttrs>().alpha), x), b.un(OpKind::Exp, x));
       return b.where(b.bin(OpKind::Gt, x, b.like(0, x)), b.like(1, x), below);
     }},
    {OpKind::HardSwish,
     [](Builder& b, const Node&, NodeId x, NodeId) { // (2x + 3)/6 on (-3, 3)
       NodeId mid = b.div(b.add(b.mul(b.like(2, x), x), b.like(3, x)), b.like(6, x));
       NodeId hi = b.where(b.bin(OpKind::Ge, x, b.like(3, x)), b.like(1, x), mid);
       return b.where(b.bin(OpKind::Le, x, b.like(-3, x)), b.like(0, x), hi);
     }},
    {OpKind::HardSigmoid,
     [](Builder& b, const Node&, NodeId x, NodeId) {
       NodeId inside = b.op(
           OpKind::And, {b.bin(OpKind::Gt, x, b.like(-3, x)), b.bin(OpKind::Lt, x, b.like(3, x))});
       return b.where(inside, b.like(1.0 / 6.0, x), b.like(0, x));
     }},
    {OpKind::Mish,
     [](Builder& b, const Node&, NodeId x, NodeId) { // t + x s (1 - t^2)
       NodeId t = b.un(OpKind::Tanh, b.un(OpKind::Softplus, x));
       NodeId one = b.like(1, x);
       return b.add(t, b.mul(b.mul(x, sigmoid(b, x)), b.sub(one, b.mul(t, t))));
     }},
    {OpKind::Softsign,
     [](Builder& b, const Node&, NodeId x, NodeId) { // 1 / (1 + |x|)^2
       NodeId d = b.add(b.like(1, x), b.un(OpKind::Abs, x));
       return b.un(OpKind::Recip, b.mul(d, d));
     }},
    {OpKind::LogSigmoid,
     [](Builder& b, const Node&, NodeId x, NodeId) { return sigmoid(b, b.neg(x)); }},
    {OpKind::Clamp,
     [](Builder& b, const Node& n, NodeId x, NodeId) { // 1 on [min, max]
       const auto& a = n.op.attrs<ir::ClampAttrs>();
       NodeId inside = b.op(OpKind::And, {b.bin(OpKind::Ge, x, b.like(a.min, x)),
                                          b.bin(OpKind::Le, x, b.like(a.max, x))});
       return b.where(inside, b.like(1, x), b.like(0, x));
     }},
};

using BinaryDeriv = std::pair<NodeId, NodeId> (*)(Builder& b, NodeId a, NodeId c, NodeId y);
struct BinaryEntry {
  OpKind kind;
  BinaryDeriv fn;
};

/// 1 where a wins, 1/2 on ties, 0 elsewhere (torch.maximum's split of a tie).
NodeId winner(Builder& b, OpKind cmp, NodeId a, NodeId c, NodeId y) {
  NodeId wins = b.where(b.bin(cmp, a, c), b.like(1, y), b.like(0, y));
  return b.add(wins, b.where(b.bin(OpKind::Eq, a, c), b.like(0.5, y), b.like(0, y)));
}

constexpr BinaryEntry kBinary[] = {
    {OpKind::Add,
     [](Builder& b, NodeId, NodeId, NodeId y) { return std::pair{b.like(1, y), b.like(1, y)}; }},
    {OpKind::Sub,
     [](Builder& b, NodeId, NodeId, NodeId y) { return std::pair{b.like(1, y), b.like(-1, y)}; }},
    {OpKind::Mul, [](Builder&, NodeId a, NodeId c, NodeId) { return std::pair{c, a}; }},
    {OpKind::Div,
     [](Builder& b, NodeId, NodeId c, NodeId y) { // 1/c, -y/c
       return std::pair{b.un(OpKind::Recip, c), b.neg(b.div(y, c))};
     }},
    {OpKind::Pow,
     [](Builder& b, NodeId a, NodeId c, NodeId y) { // c a^(c-1), y log a
       NodeId da = b.mul(c, b.bin(OpKind::Pow, a, b.sub(c, b.like(1, c))));
       return std::pair{da, b.mul(y, b.un(OpKind::Log, a))};
     }},
    {OpKind::Max,
     [](Builder& b, NodeId a, NodeId c, NodeId y) {
       return std::pair{winner(b, OpKind::Gt, a, c, y), winner(b, OpKind::Gt, c, a, y)};
     }},
    {OpKind::Min,
     [](Builder& b, NodeId a, NodeId c, NodeId y) {
       return std::pair{winner(b, OpKind::Lt, a, c, y), winner(b, OpKind::Lt, c, a, y)};
     }},
    {OpKind::Mod,
     [](Builder& b, NodeId a, NodeId c, NodeId y) { // fmod = a - c trunc(a/c)
       NodeId q = b.div(a, c);
       NodeId trunc = b.mul(b.un(OpKind::Sign, q), b.un(OpKind::Floor, b.un(OpKind::Abs, q)));
       return std::pair{b.like(1, y), b.neg(trunc)};
     }},
};

} // namespace

NodeId unary_derivative(Builder& b, const Node& n) {
  for (const UnaryEntry& e : kUnary)
    if (e.kind == n.op.kind()) return e.fn(b, n, n.inputs[0], n.id);
  RLX_CHECK(false, "autodiff: no derivative for element-wise op ", n.op.name());
  return n.id;
}

std::pair<NodeId, NodeId> binary_partials(Builder& b, const Node& n) {
  for (const BinaryEntry& e : kBinary)
    if (e.kind == n.op.kind()) return e.fn(b, n.inputs[0], n.inputs[1], n.id);
  RLX_CHECK(false, "autodiff: no partial derivatives for binary op ", n.op.name());
  return {n.id, n.id};
}

} // namespace rlx::autodiff
