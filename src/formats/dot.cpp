// src/formats/dot.cpp -- Graphviz DOT export of every stage; a LIR's steps of several nodes (fused
// kernels, row ops with their prologue) drawn as clusters.
#include "rlx/ir/dot.hpp"

#include "rlx/ir/text.hpp"

#include <algorithm>
#include <limits>
#include <sstream>

namespace rlx::ir {

namespace {

/// Inputs, Params and Constants: values the caller feeds or the graph holds.
bool is_leaf(const Node& n) { return has_trait(n.op.kind(), kLeaf); }

/// A DOT string literal: quotes and backslashes escaped, long text shortened.
std::string quoted(std::string_view text) {
  constexpr std::size_t kMaxLabel = 120;
  std::string s(text.substr(0, kMaxLabel));
  if (text.size() > kMaxLabel) s += "...";
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out + "\"";
}

/// The body shared by the graph stages; `note` adds a second label line per node.
template <class Note>
std::string graph_dot(const Graph& g, const DotOptions& opts, std::string_view kind,
                      const Note& note) {
  std::ostringstream os;
  os << "digraph " << quoted(std::string(kind) + " @" + g.name) << " {\n"
     << "  node [shape=box, fontname=\"monospace\", fontsize=10];\n";
  std::vector<char> is_output(g.len(), 0);
  for (NodeId o : g.outputs) is_output[o.index] = 1;
  for (const Node& n : g.nodes()) {
    std::string label = node_to_text(g, n.id);
    std::string extra = note(n.id);
    if (!extra.empty()) label += "\n" + extra;
    os << "  n" << n.id.index << " [label=" << quoted(label);
    if (is_leaf(n)) os << ", shape=ellipse";
    if (is_output[n.id.index]) os << ", peripheries=2";
    os << "];\n";
  }
  const std::vector<DotCluster>& clusters = opts.clusters;
  std::vector<char> drawn(g.len(), 0);
  for (std::size_t c = 0; c < clusters.size(); ++c) {
    os << "  subgraph cluster_" << c << " {\n    label=" << quoted(clusters[c].label)
       << "; style=dashed; color=blue;\n   ";
    for (NodeId id : clusters[c].nodes)
      if (id.index < g.len() && !drawn[id.index]) {
        drawn[id.index] = 1;
        os << " n" << id.index << ";";
      }
    os << "\n  }\n";
  }
  for (const Node& n : g.nodes())
    for (NodeId in : n.inputs) os << "  n" << in.index << " -> n" << n.id.index << ";\n";
  os << "}\n";
  return os.str();
}

} // namespace

std::vector<DotCluster> step_clusters(const LirModule& lir) {
  std::vector<DotCluster> out;
  for (std::size_t s = 0; s < lir.steps.size(); ++s) {
    const LirStep& step = lir.steps[s];
    if (step.nodes.size() < 2) continue;
    out.push_back({"step " + std::to_string(s) + ": " + std::string(step.rule->name()) + " (" +
                       std::to_string(step.nodes.size()) + " ops)",
                   step.nodes});
  }
  return out;
}

std::string to_dot(const Graph& g, const DotOptions& opts) {
  return graph_dot(g, opts, "mir", [](NodeId) { return std::string(); });
}

std::string to_dot(const LirModule& lir, const DotOptions& opts) {
  const Memory& m = lir.memory;
  DotOptions with_steps = opts;
  if (with_steps.clusters.empty()) with_steps.clusters = step_clusters(lir);
  return graph_dot(lir.mir, with_steps, "lir", [&](NodeId id) {
    std::ostringstream os;
    const Placement& p = lir.place(id);
    const Lifetime& l = m.lifetimes[id.index];
    if (p.home == Home::Arena)
      os << "@[" << p.offset << ", "
         << p.offset + uint64_t(lir.mir.shape(id).size_bytes().value_or(0)) << ") live " << l.first
         << ".." << l.last;
    else if (p.home == Home::Own)
      os << "own buffer, live " << l.first << ".." << l.last;
    else if (p.home == Home::View)
      os << "view of %" << p.root.index << " +" << p.offset;
    return os.str();
  });
}

std::string to_dot(const HirModule& hir) {
  std::ostringstream os;
  os << "digraph " << quoted("hir @" + hir.name) << " {\n"
     << "  node [shape=box, fontname=\"monospace\", fontsize=10];\n";
  for (const HirNode& n : hir.nodes()) {
    bool leaf = std::holds_alternative<hir::Input>(n.op) ||
                std::holds_alternative<hir::Param>(n.op) ||
                std::holds_alternative<hir::Constant>(n.op);
    bool out = std::find(hir.outputs.begin(), hir.outputs.end(), n.id) != hir.outputs.end();
    os << "  h" << n.id.index << " [label="
       << quoted("h" + std::to_string(n.id.index) + " " + hir_op_name(n.op) + "\n" +
                 short_str(n.shape))
       << (leaf ? ", shape=ellipse" : "") << (out ? ", peripheries=2" : "") << "];\n";
  }
  for (const HirNode& n : hir.nodes())
    for (HirNodeId in : n.inputs) os << "  h" << in.index << " -> h" << n.id.index << ";\n";
  os << "}\n";
  return os.str();
}

std::string to_dot(const GraphModule& module, const DotOptions& opts) {
  switch (module.stage()) {
  case Stage::Hir:
    return to_dot(module.hir());
  case Stage::Mir:
    return to_dot(module.mir(), opts);
  case Stage::Lir:
    return to_dot(module.lir(), opts);
  }
  return {};
}

} // namespace rlx::ir
