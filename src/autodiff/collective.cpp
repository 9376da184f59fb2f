// src/autodiff/collective.cpp -- derivatives of the collectives. The job's objective is the sum
// of the ranks' objectives, so each rule is the adjoint of the communication: the cotangent of a
// value every rank received is summed back over the ranks. all_reduce (sum) is its own adjoint;
// all_gather and reduce_scatter are each other's; broadcast's is reduce_to_root and back; send's
// is a recv from the peer and recv's a send to it (same tag, the other direction). Every rank
// differentiates the same graph, so the backward collectives match up across ranks too.
#include "collective.hpp"

namespace rlx::autodiff::collective {

namespace {

using Grads = std::vector<Grad>;
using Want = std::span<const char>;

/// 1 where this rank's x is the reduced value (the max or min), else 0, in x's dtype; ties
/// share the cotangent (each rank holding the extreme gets all of it).
NodeId extreme_mask(Builder& b, const Node& n) {
  NodeId hit = b.op(OpKind::Eq, {n.inputs[0], n.id});
  return b.cast(hit, n.shape.dtype());
}

bool is_extreme(const Node& n) {
  ir::CollectiveOp op = n.op.attrs<ir::AllReduceAttrs>().op;
  return op == ir::CollectiveOp::Max || op == ir::CollectiveOp::Min;
}

NodeId all_reduce(Builder& b, NodeId x, ir::CollectiveOp op) {
  return b.op(ir::Op(OpKind::AllReduce, ir::AllReduceAttrs{op}), {x});
}

} // namespace

Grads vjp_all_reduce(Builder& b, const Node& n, NodeId dy, Want) {
  ir::CollectiveOp op = n.op.attrs<ir::AllReduceAttrs>().op;
  if (!is_extreme(n)) return {all_reduce(b, dy, op)};
  return {b.mul(all_reduce(b, dy, ir::CollectiveOp::Sum), extreme_mask(b, n))};
}

Grads vjp_all_gather(Builder& b, const Node& n, NodeId dy, Want) {
  return {b.op(ir::Op(OpKind::ReduceScatter, n.op.attrs<ir::GatherRanksAttrs>()), {dy})};
}

Grads vjp_reduce_scatter(Builder& b, const Node& n, NodeId dy, Want) {
  return {b.op(ir::Op(OpKind::AllGather, n.op.attrs<ir::GatherRanksAttrs>()), {dy})};
}

Grads vjp_broadcast(Builder& b, const Node& n, NodeId dy, Want) {
  return {b.op(ir::Op(OpKind::ReduceToRoot, n.op.attrs<ir::RootAttrs>()), {dy})};
}

Grads vjp_reduce_to_root(Builder& b, const Node& n, NodeId dy, Want) {
  return {b.op(ir::Op(OpKind::Broadcast, n.op.attrs<ir::RootAttrs>()), {dy})};
}

Grads vjp_send(Builder& b, const Node& n, NodeId dy, Want) {
  // send's value is x here (dy) and x at the peer (what the peer's recv sends back).
  NodeId back = b.op(ir::Op(OpKind::Recv, n.op.attrs<ir::PeerAttrs>()), {dy});
  return {b.add(dy, back)};
}

Grads vjp_recv(Builder& b, const Node& n, NodeId dy, Want) {
  // recv's value does not depend on `like`: its cotangent is zero. The send of dy to the peer is
  // the rule's effect; multiplying by zero keeps it in the gradient graph.
  NodeId sent = b.op(ir::Op(OpKind::Send, n.op.attrs<ir::PeerAttrs>()), {dy});
  return {b.mul(sent, b.like(0.0, sent))};
}

Grad jvp_all_reduce(Builder& b, const Node& n, std::span<const Grad> t) {
  if (!t[0]) return std::nullopt;
  ir::CollectiveOp op = n.op.attrs<ir::AllReduceAttrs>().op;
  if (!is_extreme(n)) return all_reduce(b, *t[0], op);
  return all_reduce(b, b.mul(*t[0], extreme_mask(b, n)), ir::CollectiveOp::Sum);
}

} // namespace rlx::autodiff::collective
