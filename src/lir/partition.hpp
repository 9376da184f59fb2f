// src/lir/partition.hpp -- the steps of a plan before its memory (src/lir/partition.cpp) and the
// memory of a partitioned graph (src/lir/memory.cpp).
#pragma once

#include "rlx/ir/lir.hpp"

namespace rlx::ir {

struct Partition {
  std::vector<FusedKernel> kernels;
  std::vector<LirStep> steps;
};

/// Split g into steps by the policy's rules (see plan_lir).
Partition partition(const Graph& g, const StepPolicy& policy, bool outputs_in_arena);

/// The homes, lifetimes and arena of the values of `steps` (see plan_lir).
Memory plan_memory(const Graph& g, const std::vector<LirStep>& steps, const StepPolicy& policy,
                   const PlanOptions& opts);

/// The arena's size, final: every plan's arena passes here once, as it is planned (the place
/// to hold it against a memory budget).
uint64_t final_arena_size(const Graph& g, uint64_t bytes);

} // namespace rlx::ir
