// src/builders/control.cpp -- SubGraph (graph-valued attributes) and the sub-graph builders:
// custom_fn, custom_fn_multi and MultiOutputHandle::output.
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

} // namespace rlx::ir
