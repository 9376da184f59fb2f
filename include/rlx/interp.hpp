// include/rlx/interp.hpp -- the reference interpreter: rlx's executable specification.
#pragma once

#include "rlx/buffer.hpp"
#include "rlx/ir/graph.hpp"

#include <map>
#include <span>
#include <string>
#include <vector>

namespace rlx::interp {

/// Named runtime tensors: graph inputs or parameters.
using Feed = std::map<std::string, Buffer, std::less<>>;

/// Run a static-shaped graph. Every Input and Param must be fed with its exact shape and dtype;
/// otherwise rlx::Error (ErrorKind::Runtime) names the missing or mismatched tensor. Returns one
/// buffer per graph output. Graphs with dynamic dims must be bound first (Graph::bind).
std::vector<Buffer> run(const ir::Graph& g, const Feed& inputs, const Feed& params = {});

/// Like run, without copying the feeds: `leaves` holds one buffer per Input and Param node, in
/// graph order. Intermediate values are freed after their last use. A kernel's rlx::Error is
/// rethrown with the node's op and the source line that built it.
std::vector<Buffer> run_leaves(const ir::Graph& g, std::span<const Buffer* const> leaves);

/// Run a LIR module (rlx/ir/lir.hpp) through its buffer plan: one arena, poisoned first, each
/// value written to its slot, views read from their roots; the leaves as run_leaves takes them.
/// Results equal run_leaves' exactly when the plan is sound, which is what tests check.
std::vector<Buffer> run_planned(const ir::LirModule& lir, std::span<const Buffer* const> leaves);

/// The leaves as run_leaves takes them, checked against the graph (count, shapes, dtypes):
/// one pointer per node id, set for Input and Param nodes, null elsewhere. rlx::Error
/// (ErrorKind::Runtime) names a missing or mismatched leaf.
std::vector<const Buffer*> feed_leaves(const ir::Graph& g, std::span<const Buffer* const> leaves);

/// eval_node whose rlx::Error also names the node and the source line that built it (what the
/// backends call while running a graph).
Buffer eval_node_of_graph(const ir::Node& node, std::span<const Buffer* const> operands);

/// Evaluate one node on operand buffers (what constant folding calls).
Buffer eval_node(const ir::Node& node, std::span<const Buffer* const> operands);

} // namespace rlx::interp
