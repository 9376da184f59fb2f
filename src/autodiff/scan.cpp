// src/autodiff/scan.cpp -- the VJP and JVP rules of scan. Reverse mode differentiates the body
// once (autodiff::grad of the body: body_vjp) and emits scan_backward (d init) and
// scan_backward_xs (d of each bcast and xs) sweeping the trajectory backwards. Broadcast
// operands stay whole: the sweep adds up their per-step cotangents (memory O(their shape), not
// O(length x shape)). Forward mode scans the pair (carry, tangent) with the body's jvp.
#include "rules.hpp"

#include "ops/control.hpp"

#include <string>

namespace rlx::autodiff {

namespace {

std::vector<NodeId> inputs_of(const ir::Graph& body) {
  std::vector<NodeId> out;
  for (const Node& n : body.nodes())
    if (n.op.kind() == OpKind::Input) out.push_back(n.id);
  return out;
}

/// body with its Inputs renamed s0, s1, ... (in id order), so derived graphs can name them.
ir::Graph renamed(const ir::Graph& body) {
  ir::Graph out = body;
  std::size_t i = 0;
  for (Node& n : out.nodes_mut())
    if (n.op.kind() == OpKind::Input) n.op.attrs<ir::LeafAttrs>().name = "s" + std::to_string(i++);
  return out;
}

/// body_vjp of `body` (Inputs [carry, rest...]): the same Inputs plus "d_output", outputs
/// [d carry, d rest...]; an Input of a non-float dtype gets zeros.
ir::Graph body_vjp_of(const ir::Graph& body) {
  std::vector<NodeId> ins = inputs_of(body);
  std::vector<NodeId> wrt;
  for (NodeId id : ins)
    if (ir::is_float(body.shape(id).dtype())) wrt.push_back(id);
  ir::Graph g = grad(body, wrt);
  g.name = body.name + "_vjp";
  Builder b(g);
  std::vector<NodeId> outs;
  std::size_t next = 0;
  for (NodeId id : ins)
    outs.push_back(ir::is_float(body.shape(id).dtype()) ? g.outputs.at(next++)
                                                        : b.zeros(body.shape(id)));
  g.set_outputs(std::move(outs));
  return g;
}

} // namespace

std::vector<Grad> vjp_scan(Builder& b, const Node& n, NodeId dy, std::span<const char> want) {
  ir::Graph& g = b.graph();
  const auto& a = n.op.attrs<ir::ScanAttrs>();
  const int64_t rows = ir::detail::scan_saved_rows(a.length, a.num_checkpoints);
  if (a.save_trajectory && rows < a.length)
    fail(ErrorKind::Value, "scan: the checkpoints of a checkpointed scan (", rows, " of ", a.length,
         " carries) are not differentiable; differentiate the scan itself",
         n.loc.known() ? " (at " + n.loc.file + ":" + std::to_string(n.loc.line) + ")" : "");
  const ir::Graph& body = a.body.get();
  const NodeId init = n.inputs[0];
  const Shape carry = g.shape(init); // a copy: appending to g moves its nodes
  // The backward's operands after upstream: the bcasts (whole: their cotangents are summed over
  // the steps as the sweep goes, never stacked), then the xs.
  std::vector<NodeId> rest(n.inputs.begin() + 1, n.inputs.end());
  NodeId trajectory = n.id, upstream = dy;
  bool save = a.save_trajectory;
  if (!a.save_trajectory) {
    ir::ScanAttrs t = a;
    t.save_trajectory = true;
    trajectory = b.op(ir::Op(OpKind::Scan, std::move(t)), n.inputs);
  }
  bool checkpointed = rows < a.length;
  ir::ScanBackwardAttrs ba;
  ba.body_vjp = ir::SubGraph(body_vjp_of(body));
  ba.length = a.length;
  ba.save_trajectory = save;
  ba.num_bcast = a.num_bcast;
  ba.num_xs = a.num_xs;
  ba.num_checkpoints = checkpointed ? a.num_checkpoints : 0;
  if (checkpointed) ba.forward_body = a.body;
  std::vector<NodeId> ins{init, trajectory, upstream};
  ins.insert(ins.end(), rest.begin(), rest.end());

  std::vector<Grad> grads(n.inputs.size());
  if (want[0] && ir::is_float(carry.dtype()))
    grads[0] = b.op(ir::Op(OpKind::ScanBackward, ba), ins);
  for (std::size_t i = 0; i < rest.size(); ++i) {
    if (!want[1 + i] || !ir::is_float(g.shape(rest[i]).dtype())) continue;
    ir::ScanBackwardAttrs xa = ba;
    xa.xs_idx = int64_t(i);
    grads[1 + i] = b.op(ir::Op(OpKind::ScanBackwardXs, std::move(xa)), ins);
  }
  return grads;
}

bool share_scan_trajectories(ir::Graph& g) {
  // twin[p]: the trajectory scan standing for plain scan p.
  std::vector<std::optional<NodeId>> twin(g.len());
  std::vector<NodeId> trajectories;
  for (const Node& n : g.nodes())
    if (n.op.kind() == OpKind::Scan && n.op.attrs<ir::ScanAttrs>().save_trajectory)
      trajectories.push_back(n.id);
  bool any = false;
  for (const Node& n : g.nodes()) {
    if (n.op.kind() != OpKind::Scan || n.op.attrs<ir::ScanAttrs>().save_trajectory ||
        !n.shape.is_static())
      continue;
    ir::ScanAttrs want = n.op.attrs<ir::ScanAttrs>();
    want.save_trajectory = true;
    const ir::Op op(OpKind::Scan, std::move(want));
    for (NodeId t : trajectories) {
      const Node& c = g.node(t);
      if (c.inputs == n.inputs && c.op == op) {
        twin[n.id.index] = t;
        any = true;
        break;
      }
    }
  }
  if (!any) return false;
  // Rebuilt in order, each twin moved up to its plain scan (their operands are the same).
  ir::Graph out(g.name);
  std::vector<NodeId> map(g.len());
  std::vector<char> done(g.len(), 0);
  auto copy = [&](const Node& n) {
    std::vector<NodeId> ins;
    for (NodeId i : n.inputs) ins.push_back(map[i.index]);
    NodeId id = out.append_node(n.op, std::move(ins), n.shape, n.name);
    out.node_mut(id).loc = n.loc;
    done[n.id.index] = 1;
    return map[n.id.index] = id;
  };
  for (const Node& n : g.nodes()) {
    if (done[n.id.index]) continue;
    if (!twin[n.id.index]) {
      copy(n);
      continue;
    }
    const Node& t = g.node(*twin[n.id.index]);
    NodeId traj = done[t.id.index] ? map[t.id.index] : copy(t);
    const int64_t rows = t.shape.sizes().at(0);
    NodeId row = out.narrow_(traj, 0, rows - 1, 1);
    out.node_mut(row).loc = n.loc;
    NodeId last = out.reshape_(row, n.shape.sizes());
    out.node_mut(last).loc = n.loc;
    if (!out.node(last).name) out.node_mut(last).name = n.name;
    map[n.id.index] = last;
    done[n.id.index] = 1;
  }
  for (NodeId o : g.outputs) out.outputs.push_back(map[o.index]);
  g = std::move(out);
  return true;
}

Grad jvp_scan(Builder& b, const Node& n, std::span<const Grad> t) {
  ir::Graph& g = b.graph();
  const auto& a = n.op.attrs<ir::ScanAttrs>();
  const NodeId init = n.inputs[0];
  const Shape carry = g.shape(init);
  if (!ir::is_float(carry.dtype())) return std::nullopt;
  const ir::Graph body = renamed(a.body.get());
  const std::vector<NodeId> body_ins = inputs_of(body);
  // The tangents the new body takes: every float operand's (zeros where none is given).
  std::vector<NodeId> wrt;
  for (NodeId id : body_ins)
    if (ir::is_float(body.shape(id).dtype())) wrt.push_back(id);
  const ir::Graph j = jvp(body, wrt); // Inputs: body's + tangent_s<i>; outputs [y, ty]
  const Ints c_sizes = carry.sizes();
  Ints one_c{1};
  one_c.insert(one_c.end(), c_sizes.begin(), c_sizes.end());

  // The new body: Inputs [pair = stack(carry, tangent), bcast..., bcast tangents..., x_t...,
  // x_t tangents...]; output the next pair.
  ir::Graph pb(body.name + "_jvp");
  Builder bb(pb);
  std::vector<int64_t> pair_sizes{2};
  pair_sizes.insert(pair_sizes.end(), c_sizes.begin(), c_sizes.end());
  NodeId pair = pb.input("pair", Shape::of(pair_sizes, carry.dtype()));
  std::map<std::string, NodeId> bound;
  bound["s0"] = bb.reshape(bb.narrow(pair, 0, 0, 1), c_sizes);
  bound["tangent_s0"] = bb.reshape(bb.narrow(pair, 0, 1, 1), c_sizes);
  auto add_group = [&](std::size_t first, std::size_t count) {
    for (std::size_t i = 0; i < count; ++i) {
      std::string name = "s" + std::to_string(first + i);
      bound[name] = pb.input(name, body.shape(body_ins[first + i]));
    }
    for (std::size_t i = 0; i < count; ++i) {
      std::string name = "s" + std::to_string(first + i);
      if (ir::is_float(body.shape(body_ins[first + i]).dtype()))
        bound["tangent_" + name] = pb.input("tangent_" + name, body.shape(body_ins[first + i]));
    }
  };
  const std::size_t nb = std::size_t(a.num_bcast), nx = std::size_t(a.num_xs);
  add_group(1, nb);
  add_group(1 + nb, nx);
  std::vector<NodeId> outs = ir::detail::inline_graph(
      j, [&](const Node& in) { return bound.at(in.op.attrs<ir::LeafAttrs>().name); }, {},
      [&](const ir::Op& op, std::vector<NodeId> ins, Shape s) -> NodeId {
        NodeId id = pb.append_node(op, std::move(ins), std::move(s), std::nullopt);
        pb.node_mut(id).loc = n.loc;
        return id;
      });
  pb.set_outputs({bb.concat({bb.reshape(outs.at(0), one_c), bb.reshape(outs.at(1), one_c)}, 0)});

  // The outer operands in the new body's order.
  auto tangent = [&](std::size_t i) { return t[i] ? *t[i] : b.zeros(g.shape(n.inputs[i])); };
  std::vector<NodeId> ins{b.concat({b.reshape(init, one_c), b.reshape(tangent(0), one_c)}, 0)};
  auto outer_group = [&](std::size_t first, std::size_t count) {
    for (std::size_t i = 0; i < count; ++i) ins.push_back(n.inputs[first + i]);
    for (std::size_t i = 0; i < count; ++i)
      if (ir::is_float(g.shape(n.inputs[first + i]).dtype())) ins.push_back(tangent(first + i));
  };
  outer_group(1, nb);
  outer_group(1 + nb, nx);
  ir::ScanAttrs pa = a;
  pa.body = ir::SubGraph(std::move(pb));
  std::size_t n_bcast_ins = 0, n_xs_ins = 0;
  for (std::size_t i = 0; i < nb; ++i)
    n_bcast_ins += ir::is_float(g.shape(n.inputs[1 + i]).dtype()) ? 2 : 1;
  for (std::size_t i = 0; i < nx; ++i)
    n_xs_ins += ir::is_float(g.shape(n.inputs[1 + nb + i]).dtype()) ? 2 : 1;
  pa.num_bcast = int64_t(n_bcast_ins);
  pa.num_xs = int64_t(n_xs_ins);
  NodeId res = b.op(ir::Op(OpKind::Scan, std::move(pa)), std::move(ins));
  if (!a.save_trajectory) return b.reshape(b.narrow(res, 0, 1, 1), c_sizes);
  Ints rows_c = g.shape(n.id).sizes();
  return b.reshape(b.narrow(res, 1, 1, 1), rows_c);
}

} // namespace rlx::autodiff
