// src/builders/control.cpp -- SubGraph (graph-valued attributes) and the sub-graph builders:
// custom_fn, custom_fn_multi, MultiOutputHandle::output and the scan family.
#include "rlx/ir/graph.hpp"

#include <string>

namespace rlx::ir {

SubGraph::SubGraph(Graph g) : graph_(std::make_shared<const Graph>(std::move(g))) {}

const Graph& SubGraph::get() const {
  static const Graph kEmpty("body");
  return graph_ ? *graph_ : kEmpty;
}

bool operator==(const SubGraph& a, const SubGraph& b) {
  return a.graph_ == b.graph_ || a.get() == b.get();
}

NodeId Graph::custom_fn(std::vector<NodeId> inputs, Graph fwd_body, std::optional<Graph> vjp_body,
                        std::optional<Graph> jvp_body, Loc loc) {
  CustomFnAttrs a;
  a.num_inputs = int64_t(inputs.size());
  a.fwd_body = SubGraph(std::move(fwd_body));
  if (vjp_body) a.vjp_body = SubGraph(std::move(*vjp_body));
  if (jvp_body) a.jvp_body = SubGraph(std::move(*jvp_body));
  if (inputs.empty())
    fail(ErrorKind::Value, "custom_fn: takes at least one input, got none",
         rlx::detail::at_loc(loc));
  return build_inferred(Op(OpKind::CustomFn, std::move(a)), std::move(inputs), loc);
}

MultiOutputHandle Graph::custom_fn_multi(std::vector<NodeId> inputs, Graph fwd_body, Loc loc) {
  if (fwd_body.outputs.empty())
    fail(ErrorKind::Value, "custom_fn_multi: fwd_body @", fwd_body.name, " has no outputs",
         rlx::detail::at_loc(loc));
  MultiOutputHandle h;
  std::vector<NodeId> flats;
  int64_t total = 0;
  std::vector<NodeId> outs = fwd_body.outputs;
  for (std::size_t i = 0; i < outs.size(); ++i) {
    if (outs[i].index >= fwd_body.len())
      fail(ErrorKind::Value, "custom_fn_multi: fwd_body @", fwd_body.name, "'s output ", i, " (",
           outs[i], ") is not in the graph", rlx::detail::at_loc(loc));
    const Shape s = fwd_body.shape(outs[i]);
    if (s.dtype() != DType::F32)
      fail(ErrorKind::Type, "custom_fn_multi: fwd_body @", fwd_body.name, "'s output ", i, " is ",
           short_str(s), "; every output must be f32", rlx::detail::at_loc(loc));
    if (!s.is_static())
      fail(ErrorKind::Shape, "custom_fn_multi: fwd_body @", fwd_body.name, "'s output ", i, " is ",
           short_str(s), "; every output needs a static shape", rlx::detail::at_loc(loc));
    int64_t n = *s.num_elements();
    h.sub_shapes.push_back(s);
    h.offsets.push_back(total);
    total += n;
    flats.push_back(fwd_body.reshape_(outs[i], {n}, loc));
  }
  NodeId flat = flats.size() == 1 ? flats[0] : fwd_body.concat_(flats, 0, loc);
  fwd_body.set_outputs({flat});
  h.source = custom_fn(std::move(inputs), std::move(fwd_body), std::nullopt, std::nullopt, loc);
  return h;
}

NodeId MultiOutputHandle::output(Graph& g, std::size_t i, Loc loc) const {
  if (i >= sub_shapes.size())
    fail(ErrorKind::Value, "MultiOutputHandle::output: index ", i, " is out of range (",
         sub_shapes.size(), " outputs)", rlx::detail::at_loc(loc));
  const Shape& s = sub_shapes[i];
  NodeId part = g.narrow_(source, 0, offsets[i], *s.num_elements(), loc);
  return g.reshape_(part, s.sizes(), loc);
}

namespace {

std::vector<NodeId> joined(NodeId first, std::initializer_list<const std::vector<NodeId>*> rest) {
  std::vector<NodeId> out{first};
  for (const std::vector<NodeId>* v : rest) out.insert(out.end(), v->begin(), v->end());
  return out;
}

/// The op of scan_backward or scan_backward_xs (kind) with its attributes.
Op scan_backward_op(OpKind kind, Graph body_vjp, uint32_t length, bool save_trajectory,
                    std::size_t num_xs, uint32_t num_checkpoints, std::optional<Graph> forward_body,
                    uint32_t xs_idx) {
  ScanBackwardAttrs a;
  a.body_vjp = SubGraph(std::move(body_vjp));
  a.length = length;
  a.save_trajectory = save_trajectory;
  a.num_xs = int64_t(num_xs);
  a.num_checkpoints = num_checkpoints;
  if (forward_body) a.forward_body = SubGraph(std::move(*forward_body));
  a.xs_idx = xs_idx;
  return Op(kind, std::move(a));
}

/// [init, trajectory, upstream, xs...].
std::vector<NodeId> backward_operands(NodeId init, NodeId trajectory, NodeId upstream,
                                      const std::vector<NodeId>& xs) {
  std::vector<NodeId> ins{init, trajectory, upstream};
  ins.insert(ins.end(), xs.begin(), xs.end());
  return ins;
}

} // namespace

NodeId Graph::scan_with_bcasts_and_xs(NodeId init, const std::vector<NodeId>& bcasts,
                                      const std::vector<NodeId>& xs, Graph body, uint32_t length,
                                      Loc loc) {
  ScanAttrs a;
  a.body = SubGraph(std::move(body));
  a.length = length;
  a.num_bcast = int64_t(bcasts.size());
  a.num_xs = int64_t(xs.size());
  return build_inferred(Op(OpKind::Scan, std::move(a)), joined(init, {&bcasts, &xs}), loc);
}

NodeId Graph::scan(NodeId init, Graph body, uint32_t length, Loc loc) {
  return scan_with_bcasts_and_xs(init, {}, {}, std::move(body), length, loc);
}

NodeId Graph::scan_with_xs(NodeId init, const std::vector<NodeId>& xs, Graph body, uint32_t length,
                           Loc loc) {
  return scan_with_bcasts_and_xs(init, {}, xs, std::move(body), length, loc);
}

NodeId Graph::scan_trajectory(NodeId init, Graph body, uint32_t length, Loc loc) {
  ScanAttrs a;
  a.body = SubGraph(std::move(body));
  a.length = length;
  a.save_trajectory = true;
  return build_inferred(Op(OpKind::Scan, std::move(a)), {init}, loc);
}

NodeId Graph::scan_checkpointed(NodeId init, Graph body, uint32_t length, uint32_t num_checkpoints,
                                Loc loc) {
  if (num_checkpoints == 0)
    fail(ErrorKind::Value, "scan_checkpointed: num_checkpoints must be in [1, length = ", length,
         "], got 0", rlx::detail::at_loc(loc));
  ScanAttrs a;
  a.body = SubGraph(std::move(body));
  a.length = length;
  a.num_checkpoints = num_checkpoints;
  return build_inferred(Op(OpKind::Scan, std::move(a)), {init}, loc);
}

NodeId Graph::scan_backward_xs_with_checkpoints(NodeId init, NodeId trajectory, NodeId upstream,
                                                const std::vector<NodeId>& xs, Graph body_vjp,
                                                uint32_t length, bool save_trajectory,
                                                uint32_t xs_idx, uint32_t num_checkpoints,
                                                std::optional<Graph> forward_body, Shape out_shape,
                                                Loc loc) {
  return build(scan_backward_op(OpKind::ScanBackwardXs, std::move(body_vjp), length,
                                save_trajectory, xs.size(), num_checkpoints,
                                std::move(forward_body), xs_idx),
               backward_operands(init, trajectory, upstream, xs), out_shape, loc);
}

NodeId Graph::scan_backward_with_checkpoints(NodeId init, NodeId trajectory, NodeId upstream,
                                             const std::vector<NodeId>& xs, Graph body_vjp,
                                             uint32_t length, bool save_trajectory,
                                             uint32_t num_checkpoints,
                                             std::optional<Graph> forward_body, Shape out_shape,
                                             Loc loc) {
  return build(scan_backward_op(OpKind::ScanBackward, std::move(body_vjp), length, save_trajectory,
                                xs.size(), num_checkpoints, std::move(forward_body), 0),
               backward_operands(init, trajectory, upstream, xs), out_shape, loc);
}

NodeId Graph::scan_backward(NodeId init, NodeId trajectory, NodeId upstream,
                            const std::vector<NodeId>& xs, Graph body_vjp, uint32_t length,
                            bool save_trajectory, Shape out_shape, Loc loc) {
  return scan_backward_with_checkpoints(init, trajectory, upstream, xs, std::move(body_vjp), length,
                                        save_trajectory, 0, std::nullopt, std::move(out_shape),
                                        loc);
}

NodeId Graph::scan_backward_xs(NodeId init, NodeId trajectory, NodeId upstream,
                               const std::vector<NodeId>& xs, Graph body_vjp, uint32_t length,
                               bool save_trajectory, uint32_t xs_idx, Shape out_shape, Loc loc) {
  return scan_backward_xs_with_checkpoints(init, trajectory, upstream, xs, std::move(body_vjp),
                                           length, save_trajectory, xs_idx, 0, std::nullopt,
                                           std::move(out_shape), loc);
}

} // namespace rlx::ir
