// include/rlx/ir/verify.hpp -- the IR verifier.
#pragma once

#include "rlx/ir/graph.hpp"

#include <string>
#include <vector>

namespace rlx::ir {

/// Every problem found, one message each (empty when the graph is valid). Checks: node ids are
/// their indices, inputs exist and precede their node (a DAG), arities, attribute structs match
/// kinds, shapes agree with the op's shape rule, outputs exist.
std::vector<std::string> verify_all(const Graph& g);

/// Throws rlx::Error (ErrorKind::Verify) naming the first bad node and why.
void verify(const Graph& g);

} // namespace rlx::ir
