// include/rlx/ir/text.hpp -- the text IR: print a graph, parse it back exactly.
#pragma once

#include "rlx/ir/graph.hpp"

#include <string>
#include <string_view>

namespace rlx::ir {

/// The text form (docs/text_ir.md): `graph @name { %0 = input("x") : [4, 15] f32 ... return %3 }`.
/// Attributes equal to their defaults are omitted. Ids are the node indices.
std::string to_text(const Graph& g);
/// One node line without the leading indent, e.g. `%3 = add(%1, %2) : [4] f32`.
std::string node_to_text(const Graph& g, NodeId id);
/// An op with its attributes as a node line prints them, without operands: `add()`,
/// `constant(value=0.5)`. Exact (equal texts, equal ops), as the text form is.
std::string op_to_text(const Op& op);

/// Parse the text form. Malformed input throws rlx::Error (ErrorKind::Parse) whose message
/// starts with `<source>:<line>:<col>: `; it never crashes. Structure is checked (references,
/// arity, attribute names and types); shapes are not re-inferred (see verify()).
Graph parse_text(std::string_view text, std::string_view source_name = "<text>");

} // namespace rlx::ir
