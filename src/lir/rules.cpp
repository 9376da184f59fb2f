// src/lir/rules.cpp -- what a step rule answers unless it says otherwise, and the interpreter's
// policy: every node a step of its own, views where exact.
#include "rlx/ir/lir.hpp"

namespace rlx::ir {

std::vector<NodeId> StepRule::reads(const Graph&, const Node& n) const { return n.inputs; }
bool StepRule::folds(const Graph&, NodeId) const { return false; }
std::optional<NodeId> StepRule::absorbs(const Graph&, const Node&, std::span<const int>) const {
  return std::nullopt;
}
bool StepRule::takes_prologue(const Graph&, const Node&, const FusedKernel&) const { return false; }

namespace {

class AnyNode final : public StepRule {
public:
  using StepRule::StepRule;
  bool takes(const Graph&, const Node&) const override { return true; }
};

} // namespace

const StepPolicy& interpreter_policy() {
  static const AnyNode view("view"), runtime("interp");
  static const StepPolicy policy = [] {
    StepPolicy p;
    p.view = &view;
    p.runtime = &runtime;
    return p;
  }();
  return policy;
}

} // namespace rlx::ir
