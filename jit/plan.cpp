// jit/plan.cpp -- greedy fusion of element-wise nodes into kernels, in topological order.
#include "plan.hpp"

#include <algorithm>
#include <limits>

namespace rlx::jit {

Plan make_plan(const ir::Graph& g) {
  Plan plan;
  constexpr std::size_t kNone = std::numeric_limits<std::size_t>::max();
  // region[i]: kernel index of node i, or kNone; step_of[i]: step that produces node i.
  std::vector<std::size_t> region(g.len(), kNone), step_of(g.len(), 0);
  std::vector<std::size_t> kernel_step; // the step index of each kernel
  for (const ir::Node& n : g.nodes()) {
    ir::OpKind k = n.op.kind();
    // Fed, or computed when the executable is built: available before every step.
    if (k == ir::OpKind::Input || k == ir::OpKind::Param || k == ir::OpKind::Constant) continue;
    if (!lowers_natively(g, n)) {
      step_of[n.id.index] = plan.steps.size() + 1;
      plan.steps.push_back({Step::Kind::Runtime, 0, n.id});
      continue;
    }
    // Join the region of an operand with the same shape when every other operand is ready
    // before that region runs (so no cycle through other steps can form).
    std::size_t join = kNone;
    for (ir::NodeId in : n.inputs) {
      std::size_t r = region[in.index];
      if (r == kNone || plan.kernels[r].shape.dims() != n.shape.dims() ||
          plan.kernels[r].nodes.size() >= kMaxKernelNodes)
        continue;
      bool ready = true;
      for (ir::NodeId other : n.inputs)
        if (region[other.index] != r && step_of[other.index] > kernel_step[r]) ready = false;
      if (ready) {
        join = r;
        break;
      }
    }
    if (join == kNone) {
      join = plan.kernels.size();
      plan.kernels.push_back(EwKernel{{}, {}, {}, n.shape});
      kernel_step.push_back(plan.steps.size() + 1);
      plan.steps.push_back({Step::Kind::Native, join, n.id});
    }
    plan.kernels[join].nodes.push_back(n.id);
    region[n.id.index] = join;
    step_of[n.id.index] = kernel_step[join];
  }
  // Operands from outside and values needed outside each region.
  std::vector<char> is_output(g.len(), 0);
  for (ir::NodeId o : g.outputs) is_output[o.index] = 1;
  for (const ir::Node& n : g.nodes())
    for (ir::NodeId in : n.inputs)
      if (region[in.index] != kNone && region[in.index] != region[n.id.index])
        is_output[in.index] = 1;
  for (std::size_t r = 0; r < plan.kernels.size(); ++r) {
    EwKernel& kern = plan.kernels[r];
    for (ir::NodeId id : kern.nodes) {
      for (ir::NodeId in : g.node(id).inputs)
        if (region[in.index] != r &&
            std::find(kern.inputs.begin(), kern.inputs.end(), in) == kern.inputs.end())
          kern.inputs.push_back(in);
      if (is_output[id.index]) kern.outputs.push_back(id);
    }
  }
  return plan;
}

} // namespace rlx::jit
