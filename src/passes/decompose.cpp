// src/passes/decompose.cpp -- rewrite composite ops into primitives (rules in
// src/ops/decompose.cpp).
#include "rlx/passes.hpp"

#include "ops/decompose.hpp"

namespace rlx::passes {

bool has_decomposition(ir::OpKind kind) { return ir::has_trait(kind, ir::kComposite); }

bool decompose(ir::Graph& g, const PassOptions&) {
  ir::Graph out(g.name);
  ops::Emitter e(out);
  std::vector<ir::NodeId> map(g.len());
  bool changed = false;
  for (const ir::Node& n : g.nodes()) {
    std::vector<ir::NodeId> ins;
    for (ir::NodeId id : n.inputs) ins.push_back(map[id.index]);
    if (auto repl = ops::decompose_node(e, n, ins)) {
      map[n.id.index] = *repl;
      if (n.name) out.node_mut(*repl).name = n.name;
      changed = true;
      continue;
    }
    ir::NodeId id = out.append_node(n.op, ins, n.shape, n.name);
    out.node_mut(id).loc = n.loc;
    map[n.id.index] = id;
  }
  if (!changed) return false;
  for (ir::NodeId o : g.outputs) out.outputs.push_back(map[o.index]);
  g = std::move(out);
  return true;
}

} // namespace rlx::passes
