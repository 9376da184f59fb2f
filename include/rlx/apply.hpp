// include/rlx/apply.hpp -- Tensor ops written with the IR's Graph builders: rlx::apply records
// what any builder appends as lazy tensors, rlx::custom_fn applies a sub-graph with optional
// override derivative bodies. Apart from rlx/tensor.hpp because it needs the whole Graph API
// (rlx/ir/graph.hpp), which Tensor-only code does not parse.
#pragma once

#include "rlx/ir/graph.hpp"
#include "rlx/tensor.hpp"

#include <functional>
#include <initializer_list>
#include <optional>
#include <span>

namespace rlx {

/// Record a node built by any Graph builder: `build` receives a graph whose first node ids are
/// the operands (in order) and returns the result node. Every node it appends becomes a lazy
/// value at once (the graph hands them to a recorder, ir::NodeSink: len(), shape(id) and every
/// builder work on it, node(id) does not); shape and dtype errors are thrown now, and a builder
/// may not add Input or Param nodes. This is how every op of rlx/tensor.hpp is written, and how
/// user code reaches builders without a Tensor function.
using BuildFn = std::function<ir::NodeId(ir::Graph&, std::span<const ir::NodeId>)>;
Tensor apply(std::span<const Tensor> operands, const BuildFn& build, Loc loc = Loc::current());
Tensor apply(std::initializer_list<Tensor> operands, const BuildFn& build,
             Loc loc = Loc::current());

/// Graph::custom_fn on tensors: fwd_body (one Input per tensor of `inputs`, in id order)
/// applied to them, with optional override AD bodies that rlx::grad, value_and_grad and jvp use
/// (conventions in rlx/ir/graph.hpp).
Tensor custom_fn(std::span<const Tensor> inputs, ir::Graph fwd_body,
                 std::optional<ir::Graph> vjp_body = std::nullopt,
                 std::optional<ir::Graph> jvp_body = std::nullopt, Loc loc = Loc::current());

} // namespace rlx
