// src/builders/graph_ext.cpp -- the inferring builder path and RLX's GraphExt short names.
#include "rlx/ir/graph.hpp"

#include "rlx/ir/infer.hpp"

namespace rlx::ir {

NodeId Graph::build_inferred(Op op, std::vector<NodeId> inputs, const Loc& loc) {
  std::vector<Shape> shapes;
  std::optional<Shape> inferred = infer_operands(op, inputs, shapes, loc);
  if (!inferred) {
    std::string operands;
    for (const Shape& s : shapes) operands += (operands.empty() ? "" : ", ") + short_str(s);
    fail(ErrorKind::Shape, op.name(), ": cannot infer the output shape from operands ", operands,
         " (a dynamic dim it depends on is unknown); use the builder with an explicit shape",
         rlx::detail::at_loc(loc));
  }
  return append_node(std::move(op), std::move(inputs), std::move(*inferred), std::nullopt, loc);
}

NodeId Graph::add_inferred(Op op, std::vector<NodeId> inputs, Loc loc) {
  return build_inferred(std::move(op), std::move(inputs), loc);
}

// ---- Binary and comparison short names

NodeId Graph::mm(NodeId lhs, NodeId rhs, Loc loc) {
  return build_inferred(Op(OpKind::MatMul), {lhs, rhs}, loc);
}
NodeId Graph::add(NodeId lhs, NodeId rhs, Loc loc) {
  return build_inferred(Op(OpKind::Add), {lhs, rhs}, loc);
}
NodeId Graph::sub(NodeId lhs, NodeId rhs, Loc loc) {
  return build_inferred(Op(OpKind::Sub), {lhs, rhs}, loc);
}
NodeId Graph::mul(NodeId lhs, NodeId rhs, Loc loc) {
  return build_inferred(Op(OpKind::Mul), {lhs, rhs}, loc);
}
NodeId Graph::div(NodeId lhs, NodeId rhs, Loc loc) {
  return build_inferred(Op(OpKind::Div), {lhs, rhs}, loc);
}
NodeId Graph::eq(NodeId lhs, NodeId rhs, Loc loc) {
  return build_inferred(Op(OpKind::Eq), {lhs, rhs}, loc);
}
NodeId Graph::lt(NodeId lhs, NodeId rhs, Loc loc) {
  return build_inferred(Op(OpKind::Lt), {lhs, rhs}, loc);
}

// ---- Activations

NodeId Graph::gelu(NodeId x, Loc loc) { return build_inferred(Op(OpKind::Gelu), {x}, loc); }
NodeId Graph::gelu_approx(NodeId x, Loc loc) {
  return build_inferred(Op(OpKind::GeluApprox), {x}, loc);
}
NodeId Graph::silu(NodeId x, Loc loc) { return build_inferred(Op(OpKind::Silu), {x}, loc); }
NodeId Graph::relu(NodeId x, Loc loc) { return build_inferred(Op(OpKind::Relu), {x}, loc); }
NodeId Graph::exp(NodeId x, Loc loc) { return build_inferred(Op(OpKind::Exp), {x}, loc); }
NodeId Graph::sqrt(NodeId x, Loc loc) { return build_inferred(Op(OpKind::Sqrt), {x}, loc); }
NodeId Graph::neg(NodeId x, Loc loc) { return build_inferred(Op(OpKind::Neg), {x}, loc); }
NodeId Graph::tanh(NodeId x, Loc loc) { return build_inferred(Op(OpKind::Tanh), {x}, loc); }

// ---- Norms, reductions and softmax

NodeId Graph::ln(NodeId x, NodeId gamma, NodeId beta, float eps, Loc loc) {
  return build_inferred(Op(OpKind::LayerNorm, NormAttrs{-1, eps}), {x, gamma, beta}, loc);
}

NodeId Graph::sum(NodeId x, std::vector<int64_t> axes, bool keep_dim, Loc loc) {
  return build_inferred(Op(OpKind::ReduceSum, ReduceAttrs{std::move(axes), keep_dim}), {x}, loc);
}

NodeId Graph::mean(NodeId x, std::vector<int64_t> axes, bool keep_dim, Loc loc) {
  return build_inferred(Op(OpKind::ReduceMean, ReduceAttrs{std::move(axes), keep_dim}), {x}, loc);
}

NodeId Graph::sm(NodeId x, int64_t axis, Loc loc) {
  return build_inferred(Op(OpKind::Softmax, AxisAttrs{axis}), {x}, loc);
}

// ---- Data movement and indexing

NodeId Graph::reshape_(NodeId x, std::vector<int64_t> new_shape, Loc loc) {
  return build_inferred(Op(OpKind::Reshape, ReshapeAttrs{std::move(new_shape)}), {x}, loc);
}

NodeId Graph::transpose_(NodeId x, std::vector<int64_t> perm, Loc loc) {
  return build_inferred(Op(OpKind::Transpose, TransposeAttrs{std::move(perm)}), {x}, loc);
}

NodeId Graph::narrow_(NodeId x, int64_t axis, int64_t start, int64_t len, Loc loc) {
  return build_inferred(Op(OpKind::Narrow, NarrowAttrs{axis, start, len}), {x}, loc);
}

NodeId Graph::concat_(std::vector<NodeId> inputs, int64_t axis, Loc loc) {
  return build_inferred(Op(OpKind::Concat, ConcatAttrs{axis}), std::move(inputs), loc);
}

NodeId Graph::gather_(NodeId table, NodeId indices, int64_t axis, Loc loc) {
  return build_inferred(Op(OpKind::Gather, GatherAttrs{axis}), {table, indices}, loc);
}

// ---- Attention and RoPE

NodeId Graph::attention_(NodeId q, NodeId k, NodeId v, NodeId mask, int64_t num_heads,
                         int64_t head_dim, Loc loc) {
  AttentionAttrs a;
  a.num_heads = num_heads;
  a.head_dim = head_dim;
  a.mask = MaskType::Custom;
  return build_inferred(Op(OpKind::Attention, a), {q, k, v, mask}, loc);
}

NodeId Graph::rope(NodeId x, NodeId cos, NodeId sin, int64_t head_dim, Loc loc) {
  return rope_n_styled(x, cos, sin, head_dim, head_dim, RopeStyle::NeoX, loc);
}

NodeId Graph::rope_n(NodeId x, NodeId cos, NodeId sin, int64_t head_dim, int64_t n_rot, Loc loc) {
  return rope_n_styled(x, cos, sin, head_dim, n_rot, RopeStyle::NeoX, loc);
}

NodeId Graph::rope_styled(NodeId x, NodeId cos, NodeId sin, int64_t head_dim, RopeStyle style,
                          Loc loc) {
  return rope_n_styled(x, cos, sin, head_dim, head_dim, style, loc);
}

NodeId Graph::rope_n_styled(NodeId x, NodeId cos, NodeId sin, int64_t head_dim, int64_t n_rot,
                            RopeStyle style, Loc loc) {
  return build_inferred(Op(OpKind::Rope, RopeAttrs{head_dim, n_rot, style}), {x, cos, sin}, loc);
}

} // namespace rlx::ir
