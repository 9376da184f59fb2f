// include/rlx/passes.hpp -- the optimizer's passes, one line each (the table of contents).
#pragma once

#include "rlx/ir/graph.hpp"

namespace rlx::passes {

/// Rewrite every composite op (softmax, norms, attention, rope, fused matmul/SwiGLU, transposed
/// convolutions) into primitive ops. Assumes a verified graph; guarantees the same outputs (as
/// the interpreter computes them) with only primitive ops left; leaves other nodes as they are
/// (labels and source locations kept) and does not remove dead code.
ir::Graph decompose(const ir::Graph& g);

/// Whether `decompose` has a rule for the kind (every composite op must have one).
bool has_decomposition(ir::OpKind kind);

} // namespace rlx::passes
