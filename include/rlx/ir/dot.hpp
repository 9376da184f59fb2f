// include/rlx/ir/dot.hpp -- Graphviz DOT export of any stage, fused regions drawn as clusters.
#pragma once

#include "rlx/ir/graph.hpp"
#include "rlx/ir/hir.hpp"
#include "rlx/ir/lir.hpp"
#include "rlx/ir/module.hpp"

#include <string>
#include <vector>

namespace rlx::ir {

/// A group of nodes drawn inside one box (`subgraph cluster_N`).
struct DotCluster {
  std::string label;
  std::vector<NodeId> nodes;
};

struct DotOptions {
  /// Boxes to draw; a node belongs to at most one (later clusters lose repeated nodes). Empty:
  /// the element-wise regions (ir::elementwise_regions) of the graph.
  std::vector<DotCluster> clusters;
  bool regions = true; ///< draw elementwise_regions when `clusters` is empty
};

/// `digraph "name" { ... }`: one box per node (op, attributes, shape), leaves as ellipses,
/// outputs double-bordered, an edge per operand.
std::string to_dot(const Graph& g, const DotOptions& opts = {});
/// HIR blocks as boxes (block name and output shape).
std::string to_dot(const HirModule& hir);
/// The MIR graph with each node's slot or view and lifetime in its label.
std::string to_dot(const LirModule& lir, const DotOptions& opts = {});
std::string to_dot(const GraphModule& module, const DotOptions& opts = {});

/// Element-wise regions decided by op family: groups of element-wise nodes (unary, binary,
/// ternary families) of one static shape that a backend can run as one loop, formed greedily in
/// topological order: a node joins its operand's region, else the latest region of its shape,
/// when every operand from outside is ready before that region runs (so no node outside both
/// reads the region and feeds it). The JIT's plan (jit/plan.cpp) groups the same way with its
/// own limits (which ops it lowers, region size). Regions of one node are left out.
std::vector<std::vector<NodeId>> elementwise_regions(const Graph& g);

} // namespace rlx::ir
