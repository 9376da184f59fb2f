// src/autodiff/gv.hpp -- GV: a value of the graph a rule builds, with C++ operators, so rules read
// as formulas (y * (dy - sum)), and the derivatives of src/ops/scalar.hpp, written for any value
// type, append nodes when instantiated with V = GV (as jit/llvm/jv.hpp emits LLVM IR from the
// same rules).
//
// A GV is a node or a literal number not yet in the graph. A literal that meets a node becomes a
// constant of that node's dtype (as Builder::like); two literals fold in double through the op's
// own scalar rule; a result that is still a literal becomes a constant of the scope's dtype when
// a node is asked of it. Operators append to the Builder of the innermost FormulaScope.
#pragma once

#include "builder.hpp"
#include "ops/scalar.hpp"

#include <optional>

namespace rlx::autodiff {

/// The builder GV's operators append to, and the dtype of a literal that meets no node.
struct FormulaContext {
  Builder* b = nullptr;
  DType dtype = DType::F32;
};
inline thread_local FormulaContext t_formula;

/// Sets the formula context for the rules built in its lifetime; restores the enclosing one.
class FormulaScope {
public:
  FormulaScope(Builder& b, DType literal_dtype) : saved_(t_formula) {
    t_formula = {&b, literal_dtype};
  }
  ~FormulaScope() { t_formula = saved_; }
  FormulaScope(const FormulaScope&) = delete;
  FormulaScope& operator=(const FormulaScope&) = delete;

private:
  FormulaContext saved_;
};

class GV {
public:
  GV(NodeId id) : id_(id) {}    // NOLINT: implicit, so nodes read as values
  GV(double v) : literal_(v) {} // NOLINT
  GV(float v) : GV(double(v)) {}
  GV(int v) : GV(double(v)) {}

  bool is_literal() const { return !id_; }
  double literal() const { return literal_; }
  /// The node; a literal becomes a constant of the scope's dtype.
  NodeId node() const { return id_ ? *id_ : builder().scalar(literal_, t_formula.dtype); }
  /// The node; a literal becomes a constant of `peer`'s dtype (peer is a node).
  NodeId node_like(const GV& peer) const {
    return id_ ? *id_ : builder().like(literal_, *peer.id_);
  }
  operator NodeId() const { return node(); } // NOLINT: a formula's result is a node

  static Builder& builder() {
    RLX_CHECK(t_formula.b != nullptr, "autodiff: a formula outside a FormulaScope");
    return *t_formula.b;
  }

private:
  std::optional<NodeId> id_;
  double literal_ = 0;
};

/// The unary op K on x (folded through its scalar rule when x is a literal).
template <OpKind K> GV unary(GV x) {
  if (x.is_literal()) return ops::Scalar<K>::apply(x.literal(), ir::AttrsOf<K>{});
  return GV::builder().op(K, {x.node()});
}
/// The binary op K (broadcasting as the op does; folded when both are literals).
template <OpKind K> GV binary(GV a, GV b) {
  if (a.is_literal() && b.is_literal()) return ops::Scalar<K>::apply(a.literal(), b.literal());
  NodeId x = a.is_literal() ? a.node_like(b) : a.node();
  NodeId y = b.is_literal() ? b.node_like(a) : b.node();
  return GV::builder().op(K, {x, y});
}

inline GV operator+(GV a, GV b) { return binary<OpKind::Add>(a, b); }
inline GV operator-(GV a, GV b) { return binary<OpKind::Sub>(a, b); }
inline GV operator*(GV a, GV b) { return binary<OpKind::Mul>(a, b); }
inline GV operator/(GV a, GV b) { return binary<OpKind::Div>(a, b); }
inline GV operator-(GV a) { return unary<OpKind::Neg>(a); }
// Comparisons and logic give bool nodes (both sides of && and || are evaluated).
inline GV operator<(GV a, GV b) { return binary<OpKind::Lt>(a, b); }
inline GV operator<=(GV a, GV b) { return binary<OpKind::Le>(a, b); }
inline GV operator>(GV a, GV b) { return binary<OpKind::Gt>(a, b); }
inline GV operator>=(GV a, GV b) { return binary<OpKind::Ge>(a, b); }
inline GV operator==(GV a, GV b) { return binary<OpKind::Eq>(a, b); }
inline GV operator!=(GV a, GV b) { return binary<OpKind::Ne>(a, b); }
inline GV operator&&(GV a, GV b) { return binary<OpKind::And>(a, b); }
inline GV operator||(GV a, GV b) { return binary<OpKind::Or>(a, b); }
/// where(c, a, b); literal branches take the other branch's dtype, or the scope's.
inline GV sel(GV c, GV a, GV b) {
  if (c.is_literal()) return c.literal() != 0 ? a : b;
  NodeId x = a.is_literal() && !b.is_literal() ? a.node_like(b) : a.node();
  NodeId y = b.is_literal() && !a.is_literal() ? b.node_like(a) : b.node();
  return GV::builder().where(c.node(), x, y);
}

// The functions the formulas call, each the op of that name.
#define RLX_GV_FUNCTION(name, E)                                                                   \
  inline GV name(GV x) { return unary<OpKind::E>(x); }
RLX_GV_FUNCTION(exp, Exp)
RLX_GV_FUNCTION(log, Log)
RLX_GV_FUNCTION(sqrt, Sqrt)
RLX_GV_FUNCTION(recip, Recip)
RLX_GV_FUNCTION(abs, Abs)
RLX_GV_FUNCTION(sign, Sign)
RLX_GV_FUNCTION(floor, Floor)
RLX_GV_FUNCTION(sin, Sin)
RLX_GV_FUNCTION(cos, Cos)
RLX_GV_FUNCTION(tanh, Tanh)
RLX_GV_FUNCTION(erf, Erf)
RLX_GV_FUNCTION(sigmoid, Sigmoid)
RLX_GV_FUNCTION(softplus, Softplus)
#undef RLX_GV_FUNCTION
inline GV pow(GV a, GV b) { return binary<OpKind::Pow>(a, b); }

/// The sum of x over axes, kept as size 1.
inline GV sum(GV x, Ints axes) { return GV::builder().sum(x.node(), std::move(axes), true); }

} // namespace rlx::autodiff
