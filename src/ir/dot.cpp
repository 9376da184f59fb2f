// src/ir/dot.cpp -- Graphviz DOT export of every stage, and the element-wise regions drawn as
// clusters.
#include "rlx/ir/dot.hpp"

#include "rlx/ir/text.hpp"

#include <algorithm>
#include <limits>
#include <sstream>

namespace rlx::ir {

namespace {

bool is_elementwise(const Node& n) {
  Family f = n.op.family();
  return (f == Family::EwUnary || f == Family::EwBinary || f == Family::EwTernary) &&
         n.shape.is_static();
}

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
  std::vector<DotCluster> clusters = opts.clusters;
  if (clusters.empty() && opts.regions) {
    std::size_t i = 0;
    for (std::vector<NodeId>& r : elementwise_regions(g))
      clusters.push_back(
          {"element-wise region " + std::to_string(i++) + " (" + std::to_string(r.size()) + " ops)",
           std::move(r)});
  }
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

std::vector<std::vector<NodeId>> elementwise_regions(const Graph& g) {
  constexpr std::size_t kNone = std::numeric_limits<std::size_t>::max();
  // step[i]: when node i's value is ready (leaves: 0); a region runs at the step it was opened.
  std::vector<std::size_t> region(g.len(), kNone), step(g.len(), 0);
  std::vector<std::vector<NodeId>> regions;
  std::vector<std::size_t> region_step;
  std::size_t steps = 0;
  for (const Node& n : g.nodes()) {
    if (is_leaf(n)) continue;
    if (!is_elementwise(n)) {
      step[n.id.index] = ++steps;
      continue;
    }
    // Join a region of the same shape when every operand outside it is ready before that region
    // runs (then no outside node both reads the region and feeds it): an operand's region
    // first, else the latest one (independent chains over the same elements share a loop).
    auto can_join = [&](std::size_t r) {
      if (g.shape(regions[r].front()).dims() != n.shape.dims()) return false;
      return std::all_of(n.inputs.begin(), n.inputs.end(), [&](NodeId other) {
        return region[other.index] == r || step[other.index] < region_step[r];
      });
    };
    std::size_t join = kNone;
    for (NodeId in : n.inputs)
      if (region[in.index] != kNone && can_join(region[in.index])) {
        join = region[in.index];
        break;
      }
    for (std::size_t r = regions.size(); join == kNone && r-- > 0;)
      if (can_join(r)) join = r;
    if (join == kNone) {
      join = regions.size();
      regions.emplace_back();
      region_step.push_back(++steps);
    }
    regions[join].push_back(n.id);
    region[n.id.index] = join;
    step[n.id.index] = region_step[join];
  }
  std::vector<std::vector<NodeId>> out;
  for (std::vector<NodeId>& r : regions)
    if (r.size() > 1) out.push_back(std::move(r));
  return out;
}

std::string to_dot(const Graph& g, const DotOptions& opts) {
  return graph_dot(g, opts, "mir", [](NodeId) { return std::string(); });
}

std::string to_dot(const LirModule& lir, const DotOptions& opts) {
  const BufferPlan& p = lir.buffers;
  return graph_dot(lir.mir, opts, "lir", [&](NodeId id) {
    std::ostringstream os;
    if (auto s = p.assignments.find(id); s != p.assignments.end()) {
      const Lifetime& l = p.lifetimes.at(id);
      os << "@[" << s->second.offset << ", " << s->second.offset + s->second.size << ") live "
         << l.first << ".." << l.last;
    } else if (auto v = p.view_aliases.find(id); v != p.view_aliases.end()) {
      os << "view of %" << v->second.root.index << " +" << v->second.byte_offset;
    }
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
