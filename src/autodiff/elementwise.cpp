// src/autodiff/elementwise.cpp -- the derivatives of the element-wise ops: the one formula each
// has in src/ops/scalar.hpp (Scalar<K>::derivative, ::partials), built on the gradient graph with
// GV. Reverse mode multiplies the cotangent by it, forward mode the tangent (vjp_rules.cpp,
// jvp_rules.cpp).
#include "gv.hpp"
#include "rules.hpp"

namespace rlx::autodiff {

namespace {

using Derivative = NodeId (*)(Builder& b, const Node& n);
using Partials = std::pair<NodeId, NodeId> (*)(Builder& b, const Node& n);

template <OpKind K> NodeId derivative(Builder& b, const Node& n) {
  FormulaScope scope(b, n.shape.dtype());
  return ops::Scalar<K>::derivative(GV(n.inputs[0]), GV(n.id), n.op.attrs<ir::AttrsOf<K>>());
}

template <OpKind K> std::pair<NodeId, NodeId> partials(Builder& b, const Node& n) {
  FormulaScope scope(b, n.shape.dtype());
  auto [da, db] = ops::Scalar<K>::partials(GV(n.inputs[0]), GV(n.inputs[1]), GV(n.id));
  return {da.node(), db.node()};
}

template <OpKind K> constexpr Derivative derivative_of() {
  if constexpr (kHasFormula<K> && ir::op_family(K) == ir::Family::EwUnary)
    return &derivative<K>;
  else
    return nullptr;
}
template <OpKind K> constexpr Partials partials_of() {
  if constexpr (kHasFormula<K> && ir::op_family(K) == ir::Family::EwBinary)
    return &partials<K>;
  else
    return nullptr;
}

constexpr Derivative kDerivatives[] = {
#define OP(E, N, F, A, T, S) derivative_of<OpKind::E>(),
#include "rlx/ir/ops.def"
};
constexpr Partials kPartials[] = {
#define OP(E, N, F, A, T, S) partials_of<OpKind::E>(),
#include "rlx/ir/ops.def"
};

} // namespace

NodeId unary_derivative(Builder& b, const Node& n) {
  Derivative f = kDerivatives[std::size_t(n.op.kind())];
  RLX_CHECK(f != nullptr, "autodiff: no derivative for element-wise op ", n.op.name());
  return f(b, n);
}

std::pair<NodeId, NodeId> binary_partials(Builder& b, const Node& n) {
  Partials f = kPartials[std::size_t(n.op.kind())];
  RLX_CHECK(f != nullptr, "autodiff: no partial derivatives for binary op ", n.op.name());
  return f(b, n);
}

} // namespace rlx::autodiff
