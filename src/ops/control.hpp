// src/ops/control.hpp -- the body conventions of custom_fn and scan, shared by their shape rules,
// interpreter kernels, the inline pass and autodiff.
#pragma once

#include "rlx/ir/graph.hpp"

#include <functional>
#include <map>
#include <span>
#include <string_view>
#include <vector>

namespace rlx::ir::detail {

/// The Inputs of a custom_fn body that are primal inputs (not named "primal_output",
/// "d_output" or "tangent_<i>"), in id order.
std::vector<NodeId> body_primal_inputs(const Graph& body);

/// The Input of `body` named `name`, if any.
std::optional<NodeId> body_input(const Graph& body, std::string_view name);

/// The symbols of fwd_body's Input shapes, unified with the operand shapes `in` (a body symbol
/// stands for the operand's dim there, static or dynamic). rlx::Error (Shape) naming custom_fn
/// and the shapes when the operands do not fit fwd_body's Inputs.
std::map<uint32_t, Dim> custom_fn_unify(const Op& op, std::span<const Shape> in);

/// Adds to subst what the symbols of `have` (a body's shape) stand for in `want` (the shape it
/// is bound to); symbols already there are kept.
void unify_dims(std::map<uint32_t, Dim>& subst, const Shape& have, const Shape& want);

/// `shape` with the symbols of `subst` replaced.
Shape substitute_dims(const Shape& shape, const std::map<uint32_t, Dim>& subst);

/// `body` with the symbols of `subst` replaced in every node's shape.
Graph substitute_body(const Graph& body, const std::map<uint32_t, Dim>& subst);

/// Appends a node standing for a body node: (op, operands in the target graph, shape).
using AppendFn = std::function<NodeId(const Op&, std::vector<NodeId>, Shape)>;

/// Copy `body` into another graph: each Input becomes `bind_input(input node)` (an id there),
/// every other node the outputs need is appended through `append` with its operands mapped and the
/// symbols of `subst` replaced in its shape. Returns the ids of body's outputs there. Nested
/// custom_fns are copied as they are.
std::vector<NodeId> inline_graph(const Graph& body,
                                 const std::function<NodeId(const Node&)>& bind_input,
                                 const std::map<uint32_t, Dim>& subst, const AppendFn& append);

/// custom_fn `op` applied to `operands` (ids of g), with fwd_body inlined into g: its Inputs in
/// id order take the operands. Returns the id of the value (in g).
NodeId inline_custom_fn_call(const Graph& g, const Op& op, std::span<const NodeId> operands,
                             const AppendFn& append);

/// Rows a trajectory-saving scan keeps: num_checkpoints K when 0 < K < length, else length.
int64_t scan_saved_rows(int64_t length, int64_t num_checkpoints);

/// The step after which saved row j is taken: floor((j + 1) * length / rows), so row j of a full
/// trajectory is the carry after step j + 1 and the last row is the final carry. With K
/// checkpoints, segment j recomputes steps [end(j - 1), end(j)) from row j - 1 (init for j = 0).
int64_t scan_segment_end(int64_t j, int64_t length, int64_t num_checkpoints);

} // namespace rlx::ir::detail
