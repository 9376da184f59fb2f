// src/frontend/eval.cpp -- materialization: extract the pending subgraph, compile (cached), run.
//
// The pending values reachable from the roots become one ir::Graph, built in a deterministic
// depth-first order so that the same program always gives the same canonical text (the compile
// cache key). Computed tensors enter as Input nodes (their data is not part of the key); small
// constants recorded by ops stay in the graph. Pending values that other live handles still
// reference become extra outputs, so shared work is computed once.
#include "frontend/impl.hpp"

#include "rlx/runtime.hpp"

#include <unordered_map>

namespace rlx {

namespace detail {

namespace {

struct Extracted {
  ir::Graph graph{"eval"};
  std::vector<std::shared_ptr<const interp::Buffer>> leaves;
  std::vector<std::shared_ptr<TensorImpl>> outputs;
};

/// Build the graph of the pending values reachable from `roots` (caller holds eval_mutex).
Extracted extract(std::span<const std::shared_ptr<TensorImpl>> roots) {
  Extracted ex;
  std::unordered_map<const TensorImpl*, ir::NodeId> ids;
  std::unordered_map<const TensorImpl*, int64_t> internal_refs;
  std::unordered_map<const TensorImpl*, std::shared_ptr<TensorImpl>> handle; // one per value
  std::vector<TensorImpl*> pending_order;
  // Iterative post-order DFS: (impl, next input to visit).
  std::vector<std::pair<TensorImpl*, std::size_t>> stack;
  for (const auto& root : roots) {
    if (ids.count(root.get())) continue;
    stack.emplace_back(root.get(), 0);
    while (!stack.empty()) {
      auto& [impl, next] = stack.back();
      if (ids.count(impl)) {
        stack.pop_back();
        continue;
      }
      if (impl->buffer) {
        ids[impl] = ex.graph.input("in" + std::to_string(ex.leaves.size()), impl->shape);
        ex.leaves.push_back(impl->buffer);
        stack.pop_back();
        continue;
      }
      if (next < impl->inputs.size()) {
        const std::shared_ptr<TensorImpl>& in = impl->inputs[next++];
        if (!handle.count(in.get())) handle.emplace(in.get(), in);
        if (!ids.count(in.get())) stack.emplace_back(in.get(), 0);
        continue;
      }
      std::vector<ir::NodeId> in_ids;
      for (const auto& in : impl->inputs) {
        in_ids.push_back(ids.at(in.get()));
        ++internal_refs[in.get()];
      }
      RLX_CHECK(impl->op.has_value(), "a pending tensor has no op");
      ids[impl] =
          ex.graph.append_node(*impl->op, std::move(in_ids), impl->shape, std::nullopt, impl->loc);
      pending_order.push_back(impl);
      stack.pop_back();
    }
  }
  // Outputs: the roots, then pending values that handles outside this graph still hold.
  std::vector<ir::NodeId> outs;
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
  ex.graph.set_outputs(std::move(outs));
  return ex;
}

} // namespace

void materialize(std::span<const std::shared_ptr<TensorImpl>> roots, const Loc& loc) {
  Extracted ex;
  {
    std::lock_guard lock(eval_mutex());
    bool all_computed = true;
    for (const auto& r : roots) {
      RLX_CHECK(r != nullptr, "materialize of an undefined tensor");
      if (r->trace != 0) fail_traced_read(Tensor(r), "eval", loc);
      all_computed = all_computed && r->buffer != nullptr;
    }
    if (all_computed) return; // nothing pending: no graph to build (every rlx::jit call evals)
    ex = extract(roots);
  }
  if (ex.outputs.empty()) return;
  std::shared_ptr<const Executable> exe = compile(ex.graph, default_backend());
  std::vector<const interp::Buffer*> leaves;
  leaves.reserve(ex.leaves.size());
  for (const auto& b : ex.leaves) leaves.push_back(b.get());
  std::vector<interp::Buffer> results = run_executable(exe, leaves);
  RLX_CHECK(results.size() == ex.outputs.size(), "executable returned ", results.size(),
            " outputs for ", ex.outputs.size());
  std::lock_guard lock(eval_mutex());
  for (std::size_t i = 0; i < results.size(); ++i) {
    TensorImpl& impl = *ex.outputs[i];
    if (impl.buffer) continue; // another thread got there first
    impl.buffer = std::make_shared<const interp::Buffer>(std::move(results[i]));
    impl.op.reset();
    impl.inputs.clear();
    impl.pending = 0;
  }
}

} // namespace detail

void eval(std::span<const Tensor> tensors, Loc loc) {
  std::vector<std::shared_ptr<detail::TensorImpl>> roots;
  for (const Tensor& t : tensors) {
    detail::check_defined(t, "eval", loc);
    roots.push_back(t.impl());
  }
  detail::materialize(roots, loc);
}

} // namespace rlx
