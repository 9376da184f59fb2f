// src/autodiff/builder.hpp -- what the rule tables build with: the decomposition Emitter (shapes
// from the ops' rules) plus the few shapes of gradients (zeros, unbroadcast, axis moves).
#pragma once

#include "ops/emitter.hpp"

#include <optional>
#include <span>
#include <vector>

namespace rlx::autodiff {

using ir::DType;
using ir::Ints;
using ir::Node;
using ir::NodeId;
using ir::OpKind;
using ir::Shape;
using Grad = std::optional<NodeId>;

class Builder : public ops::Emitter {
public:
  explicit Builder(ir::Graph& g) : Emitter(g) {}

  NodeId un(OpKind k, NodeId x) { return op(k, {x}); }
  NodeId neg(NodeId x) { return un(OpKind::Neg, x); }
  NodeId bin(OpKind k, NodeId a, NodeId b) { return op(k, {a, b}); }
  NodeId where(NodeId c, NodeId a, NodeId b) { return op(OpKind::Where, {c, a, b}); }
  /// A scalar constant of x's dtype.
  NodeId like(double v, NodeId x) { return scalar(v, shape(x).dtype()); }
  NodeId cast(NodeId x, DType t) {
    if (shape(x).dtype() == t) return x;
    return op(ir::Op(OpKind::Cast, ir::CastAttrs{t}), {x});
  }
  /// Zeros of `s` (a broadcast scalar).
  NodeId zeros(Shape s) { return expand_to(scalar(0.0, s.dtype()), s); }
  NodeId ones(Shape s) { return expand_to(scalar(1.0, s.dtype()), s); }
  /// x broadcast to s (NumPy rules); x itself when it has that shape already.
  NodeId expand_to(NodeId x, Shape s);
  /// g summed over the axes broadcasting added or stretched, reshaped and cast to `target`:
  /// the gradient of an operand that was broadcast to g's shape.
  NodeId unbroadcast(NodeId g, Shape target);
  NodeId sum(NodeId x, Ints axes, bool keep_dim) {
    return reduce(OpKind::ReduceSum, x, axes, keep_dim);
  }
  /// Transpose that moves `axis` to the end (or back with inverse = true).
  NodeId move_axis_last(NodeId x, int64_t axis, bool inverse = false);
  /// Apply a constant matrix m [out, in] along `axis` of x (size in -> out).
  NodeId along_axis_matrix(NodeId x, int64_t axis, const std::vector<double>& m, int64_t out,
                           int64_t in);
  /// Sum of a list of optional contributions (nullopt when all are missing).
  Grad add_opt(Grad a, Grad b) {
    if (!a) return b;
    if (!b) return a;
    return add(*a, *b);
  }
  std::vector<int64_t> sizes(NodeId x) const { return shape(x).sizes(); }
  int64_t rank(NodeId x) const { return int64_t(shape(x).rank()); }
};

/// Whether values of this dtype carry derivatives.
inline bool differentiable_dtype(DType t) { return ir::is_float(t); }

inline int64_t norm_axis(int64_t axis, int64_t rank) { return axis < 0 ? axis + rank : axis; }

} // namespace rlx::autodiff
