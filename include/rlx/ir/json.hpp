// include/rlx/ir/json.hpp -- the JSON form of a graph (schema: docs/json.md).
#pragma once

#include "rlx/ir/graph.hpp"

#include <string>
#include <string_view>

namespace rlx::ir {

/// Serialize a graph to JSON (RLX's serde layout: name, nodes, outputs).
std::string to_json(const Graph& g, bool pretty = false);

/// Parse JSON back into a graph; from_json(to_json(g)) == g. Malformed input throws rlx::Error
/// (ErrorKind::Parse) naming the JSON path (e.g. `$.nodes[3].shape.dims[1]`) or, for syntax
/// errors, the line and column; it never crashes.
Graph from_json(std::string_view json);

} // namespace rlx::ir
