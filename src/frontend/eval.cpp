// src/frontend/eval.cpp -- materialization: the pending graph (to_graph), compiled (cached), run.
#include "frontend/impl.hpp"

#include "rlx/runtime.hpp"

namespace rlx {

namespace detail {

void materialize(std::span<const std::shared_ptr<TensorImpl>> roots, const Loc& loc) {
  ExtractedGraph ex;
  {
    std::lock_guard lock(eval_mutex());
    bool all_computed = true;
    for (const auto& r : roots) {
      RLX_CHECK(r != nullptr, "materialize of an undefined tensor");
      if (r->trace != 0) fail_traced_read(Tensor(r), "eval", loc);
      all_computed = all_computed && r->buffer != nullptr;
    }
    if (all_computed) return; // nothing pending: no graph to build (every rlx::jit call evals)
    GraphPolicy policy;
    policy.name = "eval";
    policy.share_pending = true;
    ex = to_graph(roots, policy);
  }
  if (ex.outputs.empty()) return;
  std::shared_ptr<const Executable> exe = compile(ex.graph, default_backend());
  std::vector<const Buffer*> leaves;
  leaves.reserve(ex.leaves.size());
  for (const auto& b : ex.leaves) leaves.push_back(b.get());
  std::vector<Buffer> results = run_executable(exe, leaves);
  RLX_CHECK(results.size() == ex.outputs.size(), "executable returned ", results.size(),
            " outputs for ", ex.outputs.size());
  std::lock_guard lock(eval_mutex());
  for (std::size_t i = 0; i < results.size(); ++i) {
    TensorImpl& impl = *ex.outputs[i];
    if (impl.buffer) continue; // another thread got there first
    impl.buffer = std::make_shared<const Buffer>(std::move(results[i]));
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
