// src/ops/ssm_decompose.cpp -- decompositions of the state-space scans (selective_scan, mamba2,
// gated_delta_net) into element-wise ops, reductions and narrows, with the time loop unrolled:
// one group of nodes per step, the outputs concatenated along the sequence axis. Autodiff goes
// through these, so the gradient graph grows linearly with the sequence length (about 8 nodes
// per step forward, 3x that with the backward): fine for training short sequences and for the
// gradient checks, not for S in the thousands (the interpreter and JIT kernels run the forward
// pass without unrolling).
#include "decompose.hpp"

namespace rlx::ops {

using ir::DType;
using ir::Ints;
using ir::NodeId;
using ir::OpKind;

namespace {

NodeId step(Emitter& e, NodeId x, int64_t t) { return e.narrow(x, 1, t, 1); }

NodeId sum_axis(Emitter& e, NodeId x, int64_t axis) {
  return e.reduce(OpKind::ReduceSum, x, {axis}, false);
}

/// A node of x's shape and dtype holding zeros (the output of an empty sequence).
NodeId zeros_like(Emitter& e, NodeId x) { return e.mul(x, e.scalar(0, e.shape(x).dtype())); }

} // namespace

NodeId decompose_selective_scan(Emitter& e, const ir::Node&, std::span<const NodeId> in) {
  auto xs = e.shape(in[0]).sizes();
  const int64_t nb = xs[0], ns = xs[1], nh = xs[2], nn = e.shape(in[2]).sizes()[1];
  if (ns == 0) return zeros_like(e, in[0]);
  NodeId d4 = e.reshape(in[1], {nb, ns, nh, 1});
  NodeId decay = e.op(OpKind::Exp, {e.mul(d4, in[2])});              // [B,S,H,N]
  NodeId drive = e.mul(e.mul(d4, e.reshape(in[3], {nb, ns, 1, nn})), // delta b x
                       e.reshape(in[0], {nb, ns, nh, 1}));           // [B,S,H,N]
  NodeId c4 = e.reshape(in[4], {nb, ns, 1, nn});
  std::vector<NodeId> ys;
  NodeId st{};
  for (int64_t t = 0; t < ns; ++t) {
    NodeId u = step(e, drive, t);
    st = t == 0 ? u : e.add(e.mul(step(e, decay, t), st), u); // [B,1,H,N]
    ys.push_back(sum_axis(e, e.mul(st, step(e, c4, t)), 3));  // [B,1,H]
  }
  return ys.size() == 1 ? ys[0] : e.concat(std::move(ys), 1);
}

NodeId decompose_mamba2(Emitter& e, const ir::Node&, std::span<const NodeId> in) {
  auto xs = e.shape(in[0]).sizes();
  auto bs = e.shape(in[3]).sizes();
  const int64_t nb = xs[0], ns = xs[1], nh = xs[2], np = xs[3], nn = bs.back();
  const int64_t ng = bs.size() == 4 ? bs[2] : 1;
  if (ns == 0) return zeros_like(e, in[0]);
  // b, c per head: [B,S,G,N] -> [B,S,G,H/G,N] -> [B,S,H,1,N] (head j reads group j / (H/G)).
  auto per_head = [&](NodeId v) {
    NodeId g5 = e.reshape(v, {nb, ns, ng, 1, nn});
    NodeId ex = e.op(ir::Op(OpKind::Expand, ir::ExpandAttrs{{nb, ns, ng, nh / ng, nn}}), {g5});
    return e.reshape(ex, {nb, ns, nh, 1, nn});
  };
  NodeId bh = per_head(in[3]), ch = per_head(in[4]);
  NodeId dt5 = e.reshape(in[1], {nb, ns, nh, 1, 1});
  NodeId decay = e.op(OpKind::Exp, {e.mul(dt5, e.reshape(in[2], {nh, 1, 1}))}); // [B,S,H,1,1]
  NodeId drive = e.mul(e.mul(dt5, e.reshape(in[0], {nb, ns, nh, np, 1})), bh);  // [B,S,H,P,N]
  std::vector<NodeId> ys;
  NodeId st{};
  for (int64_t t = 0; t < ns; ++t) {
    NodeId u = step(e, drive, t);
    st = t == 0 ? u : e.add(e.mul(step(e, decay, t), st), u); // [B,1,H,P,N]
    ys.push_back(sum_axis(e, e.mul(st, step(e, ch, t)), 4));  // [B,1,H,P]
  }
  return ys.size() == 1 ? ys[0] : e.concat(std::move(ys), 1);
}

NodeId decompose_gated_delta_net(Emitter& e, const ir::Node& n, std::span<const NodeId> in) {
  const bool carry = n.op.attrs<ir::GatedDeltaNetAttrs>().carry_state;
  auto qs = e.shape(in[0]).sizes();
  const int64_t nb = qs[0], ns = qs[1], nh = qs[2], nn = qs[3];
  NodeId decay = e.reshape(e.op(OpKind::Exp, {in[3]}), {nb, ns, nh, 1, 1});
  NodeId beta = e.reshape(in[4], {nb, ns, nh, 1});
  // The state as [B,1,H,N,N], S[.., i, j] with i indexing keys and j values.
  std::optional<NodeId> st;
  if (carry) st = e.reshape(in[5], {nb, 1, nh, nn, nn});
  std::vector<NodeId> ys;
  for (int64_t t = 0; t < ns; ++t) {
    NodeId kcol = e.reshape(step(e, in[1], t), {nb, 1, nh, nn, 1});
    NodeId vt = step(e, in[2], t);
    NodeId u;
    if (st) {
      NodeId s = e.mul(step(e, decay, t), *st);
      NodeId kv = sum_axis(e, e.mul(s, kcol), 3); // S^T k: [B,1,H,N]
      u = e.mul(step(e, beta, t), e.sub(vt, kv));
      st = e.add(s, e.mul(kcol, e.reshape(u, {nb, 1, nh, 1, nn})));
    } else { // zero state: S = k (beta v)^T
      u = e.mul(step(e, beta, t), vt);
      st = e.mul(kcol, e.reshape(u, {nb, 1, nh, 1, nn}));
    }
    NodeId qcol = e.reshape(step(e, in[0], t), {nb, 1, nh, nn, 1});
    ys.push_back(sum_axis(e, e.mul(*st, qcol), 3)); // S^T q: [B,1,H,N]
  }
  if (carry) // the final state [B,H,N,N] as [B,N,H,N] after the outputs
    ys.push_back(e.transpose(e.reshape(*st, {nb, nh, nn, nn}), {0, 2, 1, 3}));
  if (ys.empty()) return zeros_like(e, in[0]);
  return ys.size() == 1 ? ys[0] : e.concat(std::move(ys), 1);
}

} // namespace rlx::ops
