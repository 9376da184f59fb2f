// src/builders/ssm.cpp -- Graph builders of the state-space scans: selective_scan, mamba2,
// gated_delta_net and gated_delta_net_carry (recurrences in include/rlx/ir/graph.hpp).
#include "rlx/ir/graph.hpp"
#include "rlx/ir/infer.hpp"

namespace rlx::ir {

NodeId Graph::selective_scan(NodeId x, NodeId delta, NodeId a, NodeId b, NodeId c,
                             int64_t state_size, Shape shape, Loc loc) {
  return build(Op(OpKind::SelectiveScan, SelectiveScanAttrs{state_size}), {x, delta, a, b, c},
               shape, loc);
}

NodeId Graph::mamba2(NodeId x, NodeId dt, NodeId a, NodeId b, NodeId c, int64_t head_dim,
                     int64_t state_size, Shape shape, Loc loc) {
  return build(Op(OpKind::Mamba2, Mamba2Attrs{head_dim, state_size}), {x, dt, a, b, c}, shape, loc);
}

NodeId Graph::gated_delta_net(NodeId q, NodeId k, NodeId v, NodeId g, NodeId beta,
                              int64_t state_size, Shape shape, Loc loc) {
  return build(Op(OpKind::GatedDeltaNet, GatedDeltaNetAttrs{state_size, false}), {q, k, v, g, beta},
               shape, loc);
}

GatedDeltaNetCarry Graph::gated_delta_net_carry(NodeId q, NodeId k, NodeId v, NodeId g, NodeId beta,
                                                NodeId state, int64_t state_size, Shape shape,
                                                Loc loc) {
  return transaction([&] {
    NodeId packed = build_inferred(Op(OpKind::GatedDeltaNet, GatedDeltaNetAttrs{state_size, true}),
                                   {q, k, v, g, beta, state}, loc);
    const Shape& ps = this->shape(packed);
    const Shape& qs = this->shape(q);
    const int64_t s = ps.dims()[1].size() - qs.dims()[3].size(); // static: the rule needs it
    const int64_t n = qs.dims()[3].size();
    NodeId out = add_inferred(Op(OpKind::Narrow, NarrowAttrs{1, 0, s}), {packed}, loc);
    if (!shapes_compatible(this->shape(out), shape))
      fail(ErrorKind::Shape, "gated_delta_net: declared output ", short_str(shape),
           " does not match ", short_str(this->shape(out)), " inferred from q ", short_str(qs),
           rlx::detail::at_loc(loc));
    NodeId rows = add_inferred(Op(OpKind::Narrow, NarrowAttrs{1, s, n}), {packed}, loc);
    NodeId st = add_inferred(Op(OpKind::Transpose, TransposeAttrs{{0, 2, 1, 3}}), {rows}, loc);
    return GatedDeltaNetCarry{out, st, packed};
  });
}

} // namespace rlx::ir
