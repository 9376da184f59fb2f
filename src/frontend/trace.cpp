// src/frontend/trace.cpp -- tracing: the thread's stack of trace ids, and trace_graph (run a
// function on placeholders and extract the graph of its outputs) for rlx::jit and the transforms.
#include "frontend/impl.hpp"

#include <algorithm>
#include <atomic>

namespace rlx::detail {

namespace {
thread_local std::vector<uint64_t> t_traces;
std::atomic<uint64_t> g_next_trace{1};

/// Placeholder tensors of trace `trace`: Input "arg<i>" of shapes[i].
std::vector<Tensor> make_placeholders(std::span<const Shape> shapes, uint64_t trace,
                                      const Loc& loc) {
  std::vector<Tensor> placeholders;
  placeholders.reserve(shapes.size());
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    auto p = std::make_shared<TensorImpl>();
    p->shape = shapes[i];
    p->op = ir::Op(ir::OpKind::Input, ir::LeafAttrs{"arg" + std::to_string(i)});
    p->trace = trace;
    p->arg = int32_t(i);
    p->loc = loc;
    placeholders.emplace_back(std::move(p));
  }
  return placeholders;
}
} // namespace

bool trace_active(uint64_t id) {
  return std::find(t_traces.begin(), t_traces.end(), id) != t_traces.end();
}

void clear_traces() noexcept { t_traces.clear(); }

bool in_trace() { return !t_traces.empty(); }

TraceScope::TraceScope() : id_(g_next_trace.fetch_add(1)) { t_traces.push_back(id_); }
TraceScope::~TraceScope() {
  // Its own id (the innermost, unless clear_traces() ran for abandoned frames since).
  auto it = std::find(t_traces.begin(), t_traces.end(), id_);
  if (it != t_traces.end()) t_traces.erase(it);
}

ExtractedGraph trace_graph(std::span<const Shape> shapes, const TraceBody& body, std::string name,
                           std::string_view what, const Loc& loc, bool capture_outer) {
  TraceScope scope;
  std::vector<Tensor> placeholders = make_placeholders(shapes, scope.id(), loc);
  std::vector<Tensor> outs = body(placeholders);
  std::vector<std::shared_ptr<TensorImpl>> roots;
  roots.reserve(outs.size());
  for (std::size_t i = 0; i < outs.size(); ++i) {
    check_defined(outs[i], std::string(what) + " output " + std::to_string(i), loc);
    roots.push_back(outs[i].impl());
  }
  GraphPolicy policy;
  policy.name = std::move(name);
  policy.args = placeholders;
  policy.trace = scope.id();
  policy.computed_as_params = true;
  policy.outer_as_leaves = capture_outer;
  std::lock_guard lock(eval_mutex());
  return to_graph(roots, policy);
}

} // namespace rlx::detail
