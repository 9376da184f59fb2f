// src/builders/data.cpp -- reduction, scan, movement and indexing builders.
#include "rlx/ir/graph.hpp"

namespace rlx::ir {

// ---- Reductions and scans (explicit shapes, checked against the rule)

NodeId Graph::reduce(NodeId input, ReduceOp op, std::vector<int64_t> axes, bool keep_dim,
                     Shape shape, Loc loc) {
  return build(Op(to_op_kind(op), ReduceAttrs{std::move(axes), keep_dim}), {input}, shape, loc);
}

NodeId Graph::softmax(NodeId input, int64_t axis, Shape shape, Loc loc) {
  return build(Op(OpKind::Softmax, AxisAttrs{axis}), {input}, shape, loc);
}

NodeId Graph::cumsum(NodeId input, int64_t axis, bool exclusive, Shape shape, Loc loc) {
  return build(Op(OpKind::Cumsum, CumsumAttrs{axis, exclusive}), {input}, shape, loc);
}

NodeId Graph::argmax(NodeId input, int64_t axis, bool keep_dim, Shape shape, Loc loc) {
  return build(Op(OpKind::ArgMax, ArgReduceAttrs{axis, keep_dim}), {input}, shape, loc);
}

NodeId Graph::argmin(NodeId input, int64_t axis, bool keep_dim, Shape shape, Loc loc) {
  return build(Op(OpKind::ArgMin, ArgReduceAttrs{axis, keep_dim}), {input}, shape, loc);
}

// ---- Movement and indexing with explicit shapes

NodeId Graph::reshape(NodeId input, std::vector<int64_t> new_shape, Shape out_shape, Loc loc) {
  return build(Op(OpKind::Reshape, ReshapeAttrs{std::move(new_shape)}), {input}, out_shape, loc);
}

NodeId Graph::gather(NodeId table, NodeId indices, int64_t axis, Shape shape, Loc loc) {
  return build(Op(OpKind::Gather, GatherAttrs{axis}), {table, indices}, shape, loc);
}

NodeId Graph::concat(std::vector<NodeId> inputs, int64_t axis, Shape shape, Loc loc) {
  return build(Op(OpKind::Concat, ConcatAttrs{axis}), std::move(inputs), shape, loc);
}

// ---- Movement with inferred shapes

NodeId Graph::reverse(NodeId input, std::vector<int64_t> axes, Loc loc) {
  return build_inferred(Op(OpKind::Reverse, ReverseAttrs{std::move(axes)}), {input}, loc);
}

NodeId Graph::expand(NodeId input, std::vector<int64_t> target_shape, Loc loc) {
  return build_inferred(Op(OpKind::Expand, ExpandAttrs{std::move(target_shape)}), {input}, loc);
}

NodeId Graph::slice(NodeId input, int64_t axis, int64_t start, int64_t len, int64_t step, Loc loc) {
  return build_inferred(Op(OpKind::Slice, SliceAttrs{axis, start, len, step}), {input}, loc);
}

NodeId Graph::pad(NodeId input, std::vector<int64_t> pads, PadMode mode, double value, Loc loc) {
  return build_inferred(Op(OpKind::Pad, PadAttrs{std::move(pads), mode, value}), {input}, loc);
}

// ---- Scattering and sorting with inferred shapes

NodeId Graph::scatter_add(NodeId updates, NodeId indices, int64_t axis, int64_t out_dim, Loc loc) {
  return build_inferred(Op(OpKind::ScatterAdd, ScatterAddAttrs{axis, out_dim}), {updates, indices},
                        loc);
}

NodeId Graph::top_k(NodeId x, int64_t k, bool largest, Loc loc) {
  return build_inferred(Op(OpKind::TopK, TopKAttrs{k, largest}), {x}, loc);
}

NodeId Graph::argsort(NodeId x, bool descending, Loc loc) {
  return build_inferred(Op(OpKind::ArgSort, ArgSortAttrs{descending}), {x}, loc);
}

} // namespace rlx::ir
