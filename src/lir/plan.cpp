// src/lir/plan.cpp -- plan_lir: the partition into steps, then the memory; checked as it is
// made in builds without NDEBUG and where RLX_CHECK_PLAN=1.
#include "lir/partition.hpp"

#include <cstdlib>
#include <string_view>

namespace rlx::ir {

bool plan_checks_enabled() {
#ifndef NDEBUG
  return true;
#else
  static const bool on = [] {
    const char* env = std::getenv("RLX_CHECK_PLAN");
    return env != nullptr && std::string_view(env) == "1";
  }();
  return on;
#endif
}

LirModule plan_lir(Graph g, const PlanOptions& opts) {
  if (g.has_dynamic_dims()) {
    std::string syms;
    for (uint32_t s : g.dynamic_symbols())
      syms += (syms.empty() ? "" : ", ") + rlx::detail::cat(Dim::dynamic(s));
    fail(ErrorKind::Bind, "plan_lir: graph @", g.name, " has dynamic dims (", syms,
         "); bind them first (Graph::bind)");
  }
  if (opts.alignment == 0 || (opts.alignment & (opts.alignment - 1)) != 0)
    fail(ErrorKind::Value, "plan_lir: alignment ", opts.alignment, " is not a power of two");
  const StepPolicy& policy = opts.policy ? *opts.policy : interpreter_policy();
  if (!policy.view || !policy.runtime || policy.view_alignment == 0)
    throw InternalError("plan_lir: a step policy without view or interpreter steps");
  Partition parts = partition(g, policy, opts.outputs_in_arena);
  Memory memory = plan_memory(g, parts.steps, policy, opts);
  LirModule lir{std::move(g), std::move(parts.kernels), std::move(parts.steps), std::move(memory),
                &policy};
  if (plan_checks_enabled()) verify_plan(lir);
  return lir;
}

} // namespace rlx::ir
