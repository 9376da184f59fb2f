// src/passes/constant_fold.cpp -- evaluate nodes whose operands are all constants.
//
// Assumes a verified graph. Guarantees bit-identical outputs: a folded node's value is what the
// interpreter (the specification) computes for it. Does not fold results over
// fold_max_elements, data movement that only enlarges its operands, or nodes whose kernel throws;
// does not remove the constants it no longer needs (dce does).
#include "rlx/passes.hpp"

#include "rewriter.hpp"

#include <map>
#include <optional>
#include <vector>

namespace rlx::passes {
namespace {

/// Whether n's value should become a constant of its own, given its operands' element counts.
bool worth_folding(const ir::Node& n, int64_t operand_elements, const PassOptions& opts) {
  if (n.inputs.empty() || !ir::is_pure(n.op)) return false;
  std::optional<int64_t> numel = n.shape.num_elements();
  if (!numel || *numel > opts.fold_max_elements) return false;
  // An expand or pad of a constant copies values that are already stored: folding it only makes
  // the graph bigger, while backends broadcast for free.
  return n.op.family() != ir::Family::Movement || *numel <= operand_elements;
}

} // namespace

bool constant_fold(ir::Graph& g, const PassOptions& opts) {
  Rewriter rw(g);
  std::map<ir::NodeId, Buffer> values; // constants of the new graph, decoded once
  auto value_of = [&](ir::NodeId id) -> const Buffer* {
    auto it = values.find(id);
    if (it != values.end()) return &it->second;
    std::optional<Buffer> v = constant_value(rw.out().node(id));
    return v ? &values.emplace(id, std::move(*v)).first->second : nullptr;
  };
  bool changed = false;
  for (const ir::Node& n : g.nodes()) {
    std::vector<const Buffer*> operands;
    int64_t operand_elements = 0;
    for (ir::NodeId in : rw.inputs_of(n)) {
      const Buffer* v = value_of(in);
      if (v == nullptr) break;
      operands.push_back(v);
      operand_elements += v->numel();
    }
    if (operands.size() != n.inputs.size() || !worth_folding(n, operand_elements, opts)) {
      rw.copy(n);
      continue;
    }
    Buffer result;
    try {
      result = interp::eval_node(n, operands);
    } catch (const Error&) { // e.g. a gather index out of range: the error belongs to run time
      rw.copy(n);
      continue;
    }
    ir::NodeId id = rw.emit(n, constant_op(result), {});
    values.emplace(id, std::move(result));
    changed = true;
  }
  if (!changed) return false;
  g = rw.finish();
  return true;
}

} // namespace rlx::passes
