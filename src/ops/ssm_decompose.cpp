// src/ops/ssm_decompose.cpp -- decompositions of the state-space scans (selective_scan, mamba2,
// gated_delta_net): one scan node per op whose body is a step of the recurrence (the state is
// the carry; the per-step inputs are packed into one xs, time-major; the op's weights are bcast
// operands), then the outputs read off the trajectory of states at once (y_t = c_t h_t,
// o_t = S_t^T q_t). Autodiff goes through these, so a gradient graph has the same number of
// nodes at every sequence length (the scan's VJP sweeps the trajectory backwards).
#include "decompose.hpp"

namespace rlx::ops {

using ir::DType;
using ir::Ints;
using ir::NodeId;
using ir::OpKind;
using ir::Shape;

namespace {

NodeId sum_axis(Emitter& e, NodeId x, int64_t axis) {
  return e.reduce(OpKind::ReduceSum, x, {axis}, false);
}

/// A node of x's shape and dtype holding zeros (the output of an empty sequence).
NodeId zeros_like(Emitter& e, NodeId x) { return e.mul(x, e.scalar(0, e.shape(x).dtype())); }

/// Zeros of `dims` in dtype t.
NodeId zeros(Emitter& e, Ints dims, DType t) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return e.tensor(std::vector<double>(std::size_t(n), 0.0), Shape::of(dims, t));
}

/// [B, S, ...] -> [S, B, f] with f the product of the trailing dims: one row of a packed xs.
NodeId time_major(Emitter& e, NodeId v, int64_t nb, int64_t ns) {
  return e.transpose(e.reshape(v, {nb, ns, -1}), {1, 0, 2});
}

/// Reads consecutive fields of a packed per-step row [B, f] in the body.
struct Fields {
  Emitter& e;
  NodeId row;
  int64_t at = 0;
  NodeId next(int64_t width, Ints dims) {
    NodeId v = e.reshape(e.narrow(row, 1, at, width), std::move(dims));
    at += width;
    return v;
  }
};

/// The last row of a trajectory [S, *state], shaped `dims`.
NodeId last_state(Emitter& e, NodeId traj, int64_t ns, Ints dims) {
  return e.reshape(e.narrow(traj, 0, ns - 1, 1), std::move(dims));
}

} // namespace

NodeId decompose_selective_scan(Emitter& e, const ir::Node&, std::span<const NodeId> in) {
  auto xs = e.shape(in[0]).sizes();
  const int64_t nb = xs[0], ns = xs[1], nh = xs[2], nn = e.shape(in[2]).sizes()[1];
  const DType t = e.shape(in[0]).dtype();
  if (ns == 0) return zeros_like(e, in[0]);
  // Step: h = exp(delta_t a) h + delta_t x_t b_t, on the carry h [B, H, N].
  ir::Graph body("selective_scan_step");
  {
    NodeId h = body.input("state", Shape({nb, nh, nn}, t));
    NodeId a = body.input("a", Shape({nh, nn}, t));
    NodeId row = body.input("x_t", Shape({nb, 2 * nh + nn}, t));
    Emitter s(body);
    Fields f{s, row};
    NodeId x = f.next(nh, {nb, nh, 1}), delta = f.next(nh, {nb, nh, 1});
    NodeId b = f.next(nn, {nb, 1, nn});
    NodeId decay = s.op(OpKind::Exp, {s.mul(delta, a)});
    body.set_outputs({s.add(s.mul(decay, h), s.mul(s.mul(delta, x), b))});
  }
  NodeId packed = e.concat(
      {time_major(e, in[0], nb, ns), time_major(e, in[1], nb, ns), time_major(e, in[3], nb, ns)},
      2); // [S, B, 2H + N]
  NodeId traj = e.scan(zeros(e, {nb, nh, nn}, t), {in[2]}, {packed}, std::move(body), ns, true);
  NodeId c = e.reshape(time_major(e, in[4], nb, ns), {ns, nb, 1, nn});
  return e.transpose(sum_axis(e, e.mul(traj, c), 3), {1, 0, 2}); // [B, S, H]
}

NodeId decompose_mamba2(Emitter& e, const ir::Node&, std::span<const NodeId> in) {
  auto xs = e.shape(in[0]).sizes();
  auto bs = e.shape(in[3]).sizes();
  const int64_t nb = xs[0], ns = xs[1], nh = xs[2], np = xs[3], nn = bs.back();
  const int64_t ng = bs.size() == 4 ? bs[2] : 1;
  const DType t = e.shape(in[0]).dtype();
  if (ns == 0) return zeros_like(e, in[0]);
  // b or c per head: [.., G, N] -> [.., G, H/G, 1, N] -> [.., H, 1, N] (head j reads group
  // j / (H/G)); `lead` are the leading dims.
  auto per_head = [&](Emitter& s, NodeId v, Ints lead) {
    Ints g5 = lead, ex = lead, out = lead;
    for (int64_t d : {ng, int64_t(1), int64_t(1), nn}) g5.push_back(d);
    for (int64_t d : {ng, nh / ng, int64_t(1), nn}) ex.push_back(d);
    for (int64_t d : {nh, int64_t(1), nn}) out.push_back(d);
    NodeId x = s.op(ir::Op(OpKind::Expand, ir::ExpandAttrs{ex}), {s.reshape(v, g5)});
    return s.reshape(x, out);
  };
  // Step: h [P, N] = exp(dt_t a) h + dt_t x_t b_t^T per head, on the carry [B, H, P, N].
  ir::Graph body("mamba2_step");
  {
    NodeId h = body.input("state", Shape({nb, nh, np, nn}, t));
    NodeId a = body.input("a", Shape({nh}, t));
    NodeId row = body.input("x_t", Shape({nb, nh * np + nh + ng * nn}, t));
    Emitter s(body);
    Fields f{s, row};
    NodeId x = f.next(nh * np, {nb, nh, np, 1}), dt = f.next(nh, {nb, nh, 1, 1});
    NodeId b = per_head(s, f.next(ng * nn, {nb, ng * nn}), {nb});
    NodeId decay = s.op(OpKind::Exp, {s.mul(dt, s.reshape(a, {nh, 1, 1}))});
    body.set_outputs({s.add(s.mul(decay, h), s.mul(s.mul(dt, x), b))});
  }
  NodeId packed = e.concat(
      {time_major(e, in[0], nb, ns), time_major(e, in[1], nb, ns), time_major(e, in[3], nb, ns)},
      2); // [S, B, H*P + H + G*N]
  NodeId traj = e.scan(zeros(e, {nb, nh, np, nn}, t), {in[2]}, {packed}, std::move(body), ns, true);
  NodeId c = per_head(e, time_major(e, in[4], nb, ns), {ns, nb});   // [S, B, H, 1, N]
  return e.transpose(sum_axis(e, e.mul(traj, c), 4), {1, 0, 2, 3}); // [B, S, H, P]
}

NodeId decompose_gated_delta_net(Emitter& e, const ir::Node& n, std::span<const NodeId> in) {
  const bool carry = n.op.attrs<ir::GatedDeltaNetAttrs>().carry_state;
  auto qs = e.shape(in[0]).sizes();
  const int64_t nb = qs[0], ns = qs[1], nh = qs[2], nn = qs[3];
  const DType t = e.shape(in[0]).dtype();
  // The state as [B, H, N, N], S[.., i, j] with i indexing keys and j values; the output packs
  // the final state as [B, N, H, N] after the outputs.
  auto final_state = [&](NodeId st) { return e.transpose(st, {0, 2, 1, 3}); };
  if (ns == 0) return carry ? final_state(in[5]) : zeros_like(e, in[0]);
  // Step: S = exp(g_t) S; S += k_t (beta_t (v_t - S^T k_t))^T.
  ir::Graph body("gated_delta_net_step");
  {
    NodeId st = body.input("state", Shape({nb, nh, nn, nn}, t));
    NodeId row = body.input("x_t", Shape({nb, 2 * nh * nn + 2 * nh}, t));
    Emitter s(body);
    Fields f{s, row};
    NodeId k = f.next(nh * nn, {nb, nh, nn, 1}), v = f.next(nh * nn, {nb, nh, nn});
    NodeId decay = f.next(nh, {nb, nh, 1, 1}), beta = f.next(nh, {nb, nh, 1});
    NodeId sd = s.mul(decay, st);
    NodeId u = s.mul(beta, s.sub(v, sum_axis(s, s.mul(sd, k), 2))); // [B, H, N]
    body.set_outputs({s.add(sd, s.mul(k, s.reshape(u, {nb, nh, 1, nn})))});
  }
  NodeId packed =
      e.concat({time_major(e, in[1], nb, ns), time_major(e, in[2], nb, ns),
                time_major(e, e.op(OpKind::Exp, {in[3]}), nb, ns), time_major(e, in[4], nb, ns)},
               2); // [S, B, 2HN + 2H]
  NodeId init = carry ? in[5] : zeros(e, {nb, nh, nn, nn}, t);
  NodeId traj = e.scan(init, {}, {packed}, std::move(body), ns, true); // [S, B, H, N, N]
  NodeId q = e.reshape(time_major(e, in[0], nb, ns), {ns, nb, nh, nn, 1});
  NodeId y = e.transpose(sum_axis(e, e.mul(traj, q), 3), {1, 0, 2, 3}); // [B, S, H, N]
  if (!carry) return y;
  return e.concat({y, final_state(last_state(e, traj, ns, {nb, nh, nn, nn}))}, 1);
}

} // namespace rlx::ops
