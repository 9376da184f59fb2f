// src/builders/collective.cpp -- the collectives' builders (ops.def's Collective family). The
// rank arguments are checked against the running job here, where the user's line is known;
// all_gather and reduce_scatter record the job's size, which their shapes depend on.
#include "rlx/ir/graph.hpp"

#include "rlx/dist.hpp"

namespace rlx::ir {

namespace {

void check_rank(int64_t r, std::string_view op, std::string_view what, const Loc& loc) {
  if (r < 0 || r >= rlx::dist::size())
    fail(ErrorKind::Value, op, ": ", what, " ", r, " is not a rank of this job (ranks 0..",
         rlx::dist::size() - 1, ")", rlx::detail::at_loc(loc));
}

} // namespace

NodeId Graph::all_reduce(NodeId x, CollectiveOp op, Loc loc) {
  check_id(x, "all_reduce");
  return build_inferred(Op(OpKind::AllReduce, AllReduceAttrs{op}), {x}, loc);
}

NodeId Graph::all_gather(NodeId x, int64_t axis, Loc loc) {
  check_id(x, "all_gather");
  return build_inferred(Op(OpKind::AllGather, GatherRanksAttrs{axis, rlx::dist::size()}), {x}, loc);
}

NodeId Graph::reduce_scatter(NodeId x, int64_t axis, Loc loc) {
  check_id(x, "reduce_scatter");
  return build_inferred(Op(OpKind::ReduceScatter, GatherRanksAttrs{axis, rlx::dist::size()}), {x},
                        loc);
}

NodeId Graph::broadcast(NodeId x, int64_t root, Loc loc) {
  check_id(x, "broadcast");
  check_rank(root, "broadcast", "root", loc);
  return build_inferred(Op(OpKind::Broadcast, RootAttrs{root}), {x}, loc);
}

NodeId Graph::reduce_to_root(NodeId x, int64_t root, Loc loc) {
  check_id(x, "reduce_to_root");
  check_rank(root, "reduce_to_root", "root", loc);
  return build_inferred(Op(OpKind::ReduceToRoot, RootAttrs{root}), {x}, loc);
}

NodeId Graph::send(NodeId x, int64_t peer, int64_t tag, Loc loc) {
  check_id(x, "send");
  check_rank(peer, "send", "peer", loc);
  return build_inferred(Op(OpKind::Send, PeerAttrs{peer, tag}), {x}, loc);
}

NodeId Graph::recv(NodeId like, int64_t peer, int64_t tag, Loc loc) {
  check_id(like, "recv");
  check_rank(peer, "recv", "peer", loc);
  return build_inferred(Op(OpKind::Recv, PeerAttrs{peer, tag}), {like}, loc);
}

} // namespace rlx::ir
