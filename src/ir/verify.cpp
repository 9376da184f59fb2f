// src/ir/verify.cpp -- the IR verifier: structure, arities, attributes and shape rules.
#include "rlx/ir/verify.hpp"

#include "rlx/ir/infer.hpp"

#include <map>

namespace rlx::ir {

namespace {
std::string where(const Node& n) { return rlx::detail::cat(n.id, " (", n.op.name(), ")"); }
} // namespace

std::vector<std::string> verify_all(const Graph& g) {
  std::vector<std::string> problems;
  auto problem = [&](const auto&... parts) { problems.push_back(rlx::detail::cat(parts...)); };
  std::map<std::pair<OpKind, std::string>, NodeId> leaf_names;
  std::span<const Node> nodes = g.nodes();
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    const Node& n = nodes[i];
    if (n.id.index != i) {
      problem("node at position ", i, " has id ", n.id, " (ids must equal positions)");
      continue;
    }
    std::size_t k = static_cast<std::size_t>(n.op.kind());
    if (k >= kNumOps) {
      problem(n.id, ": op kind ", k, " is not in the op table");
      continue;
    }
    if (n.op.any_attrs().index() != detail::kAttrIndex[k]) {
      problem(where(n), ": holds the attributes of another op kind");
      continue;
    }
    bool inputs_ok = true;
    for (NodeId in : n.inputs) {
      if (in.index >= i) {
        problem(where(n), ": input ", in,
                " does not precede it (nodes must be in topological "
                "order; forward and cyclic references are not allowed)");
        inputs_ok = false;
      }
    }
    int arity = op_info(n.op.kind()).arity;
    if ((arity >= 0 && n.inputs.size() != std::size_t(arity)) || (arity < 0 && n.inputs.empty())) {
      problem(where(n), ": takes ", arity < 0 ? "at least 1" : std::to_string(arity),
              " inputs, has ", n.inputs.size());
      inputs_ok = false;
    }
    if (has_trait(n.op.kind(), kFed)) {
      const std::string& name = n.op.attrs<LeafAttrs>().name;
      auto [it, fresh] = leaf_names.emplace(std::pair(n.op.kind(), name), n.id);
      if (!fresh) problem(where(n), ": name \"", name, "\" is already used by ", it->second);
    }
    if (n.op.kind() == OpKind::Constant) {
      auto bytes = n.shape.size_bytes();
      std::size_t have = n.op.attrs<ConstantAttrs>().data.data.size();
      if (bytes && std::size_t(*bytes) != have)
        problem(where(n), ": holds ", have, " bytes, its shape ", short_str(n.shape), " needs ",
                *bytes);
    }
    if (!inputs_ok) continue;
    std::vector<Shape> shapes;
    for (NodeId in : n.inputs) shapes.push_back(nodes[in.index].shape);
    try {
      auto inferred = infer_shape(n.op, shapes);
      if (inferred && !shapes_compatible(*inferred, n.shape))
        problem(where(n), ": shape ", short_str(n.shape), " does not match ", short_str(*inferred),
                " inferred from its operands");
    } catch (const Error& e) {
      problem(where(n), ": ", e.what());
    }
  }
  for (std::size_t i = 0; i < g.outputs.size(); ++i)
    if (g.outputs[i].index >= nodes.size())
      problem("output ", i, " is ", g.outputs[i], ", which is not in the graph (", nodes.size(),
              " nodes)");
  return problems;
}

void verify(const Graph& g) {
  auto problems = verify_all(g);
  if (problems.empty()) return;
  std::string msg = "verify: graph @" + g.name + ": " + problems.front();
  if (problems.size() > 1) msg += rlx::detail::cat(" (and ", problems.size() - 1, " more)");
  throw Error(ErrorKind::Verify, msg);
}

} // namespace rlx::ir
