// src/frontend/to_graph.cpp -- to_graph: the lazy values reachable from some roots as one graph.
//
// The one reader of the Tensor DAG: materialization (computed values enter as Inputs "in<k>", so
// data is not part of the compile cache's key; pending values other handles still hold become
// extra outputs, so shared work is computed once), rlx::jit and the transforms (a trace's
// placeholders are Inputs "arg<i>", the computed values it captured Params "c<j>"). The walk is
// an iterative depth-first post-order in input order: deterministic, and safe on deep chains.
#include "frontend/impl.hpp"

#include <unordered_map>

namespace rlx::detail {

ExtractedGraph to_graph(std::span<const std::shared_ptr<TensorImpl>> roots,
                        const GraphPolicy& policy) {
  ExtractedGraph ex{ir::Graph(policy.name), {}, {}, {}};
  ir::Graph& g = ex.graph;
  std::unordered_map<const TensorImpl*, ir::NodeId> ids;
  for (std::size_t i = 0; i < policy.args.size(); ++i) {
    const TensorImpl* p = policy.args[i].impl().get();
    ids[p] = g.input("arg" + std::to_string(i), p->shape);
  }
  // With share_pending: the graph's edges into each value, and one handle to each.
  std::unordered_map<const TensorImpl*, int64_t> internal_refs;
  std::unordered_map<const TensorImpl*, std::shared_ptr<TensorImpl>> handle;
  std::vector<TensorImpl*> pending_order;
  std::vector<std::pair<TensorImpl*, std::size_t>> stack; // (value, next input to visit)
  // A value of an enclosing trace (policy.outer_as_leaves): a leaf held by handle.
  auto is_outer = [&](const TensorImpl* impl) {
    return policy.outer_as_leaves && impl->trace != 0 && impl->trace != policy.trace &&
           trace_active(impl->trace);
  };
  std::unordered_map<const TensorImpl*, std::shared_ptr<TensorImpl>> outer_handle;
  for (const auto& root : roots) {
    if (is_outer(root.get())) outer_handle.emplace(root.get(), root);
    stack.emplace_back(root.get(), 0);
    while (!stack.empty()) {
      auto& [impl, next] = stack.back();
      if (ids.count(impl)) {
        stack.pop_back();
        continue;
      }
      if (is_outer(impl)) {
        ids[impl] = g.param("c" + std::to_string(ex.leaves.size()), impl->shape);
        ex.leaves.push_back(nullptr);
        ex.outer.resize(ex.leaves.size());
        ex.outer.back() = outer_handle.at(impl);
        stack.pop_back();
        continue;
      }
      if (policy.trace != 0 && impl->trace != 0 && impl->trace != policy.trace)
        fail(ErrorKind::Trace,
             "rlx::jit: the function returned or used a tensor traced by another rlx::jit call "
             "(it escaped its trace)",
             at_loc(impl->loc));
      if (impl->buffer) {
        std::string leaf = std::to_string(ex.leaves.size());
        ids[impl] = policy.computed_as_params ? g.param("c" + leaf, impl->shape)
                                              : g.input("in" + leaf, impl->shape);
        ex.leaves.push_back(impl->buffer);
        stack.pop_back();
        continue;
      }
      if (next < impl->inputs.size()) {
        const std::shared_ptr<TensorImpl>& in = impl->inputs[next++];
        if (policy.share_pending && !handle.count(in.get())) handle.emplace(in.get(), in);
        if (is_outer(in.get())) outer_handle.emplace(in.get(), in);
        if (!ids.count(in.get())) stack.emplace_back(in.get(), 0);
        continue;
      }
      std::vector<ir::NodeId> in_ids;
      in_ids.reserve(impl->inputs.size());
      for (const auto& in : impl->inputs) {
        in_ids.push_back(ids.at(in.get()));
        if (policy.share_pending) ++internal_refs[in.get()];
      }
      RLX_CHECK(impl->op.has_value(), "a pending tensor has no op");
      ids[impl] = g.append_node(*impl->op, std::move(in_ids), impl->shape, std::nullopt, impl->loc);
      pending_order.push_back(impl);
      stack.pop_back();
    }
  }
  std::vector<ir::NodeId> outs;
  if (!policy.share_pending) {
    for (const auto& root : roots) outs.push_back(ids.at(root.get()));
    g.set_outputs(std::move(outs));
    return ex;
  }
  // Outputs: the pending roots, then pending values that handles outside this graph still hold.
  std::unordered_map<const TensorImpl*, bool> is_output;
  for (const auto& root : roots) {
    if (root->buffer || is_output[root.get()]) continue;
    is_output[root.get()] = true;
    outs.push_back(ids.at(root.get()));
    ex.outputs.push_back(root);
  }
  for (TensorImpl* impl : pending_order) {
    if (is_output[impl]) continue;
    // References beyond the graph's edges and our one `handle` copy are held outside.
    auto it = handle.find(impl);
    if (it == handle.end()) continue;
    std::shared_ptr<TensorImpl>& self = it->second;
    if (self.use_count() - 1 > internal_refs[impl]) {
      is_output[impl] = true;
      outs.push_back(ids.at(impl));
      ex.outputs.push_back(std::move(self));
    }
  }
  g.set_outputs(std::move(outs));
  return ex;
}

} // namespace rlx::detail
