// include/rlx/ir/dot.hpp -- Graphviz DOT export of any stage, a LIR's fused steps drawn as
// clusters.
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
  /// Boxes to draw; a node belongs to at most one (later clusters lose repeated nodes). Empty
  /// for a LIR: its steps of several nodes (step_clusters).
  std::vector<DotCluster> clusters;
};

/// `digraph "name" { ... }`: one box per node (op, attributes, shape), leaves as ellipses,
/// outputs double-bordered, an edge per operand.
std::string to_dot(const Graph& g, const DotOptions& opts = {});
/// HIR blocks as boxes (block name and output shape).
std::string to_dot(const HirModule& hir);
/// The MIR graph with each node's home and lifetime in its label, the plan's steps as clusters.
std::string to_dot(const LirModule& lir, const DotOptions& opts = {});
std::string to_dot(const GraphModule& module, const DotOptions& opts = {});

/// One cluster per step of the plan that computes several nodes (a fused element-wise kernel,
/// a row op with its prologue, a GEMM with its residual add), labelled with the step and rule.
std::vector<DotCluster> step_clusters(const LirModule& lir);

} // namespace rlx::ir
