// include/rlx/autodiff.hpp -- automatic differentiation as graph transforms (RLX's
// rlx-autodiff contracts), and the tables of rules behind them.
//
//   ir::Graph g = ...;                         // one output: the loss
//   ir::Graph gg = autodiff::grad_with_loss(g, {w, b});
//   // gg: a copy of g plus gradient nodes, an Input "d_output" (the cotangent the backward
//   // pass starts from, usually ones) and outputs [loss, d loss/d w, d loss/d b]
//
// Reverse mode walks the graph backwards once; each op kind's VJP rule (src/autodiff/vjp_rules.cpp,
// one entry per differentiable primitive) appends the cotangents of its operands with the graph
// builders; contributions to one value are summed, broadcast operands get their gradient summed
// back to their shape. Forward mode (jvp) walks forwards with the JVP table. Composite ops without
// a closed-form rule are differentiated through their decomposition (src/ops/decompose.cpp).
#pragma once

#include "rlx/ir/graph.hpp"

#include <optional>
#include <span>
#include <string>
#include <vector>

namespace rlx::autodiff {

/// Reverse mode. `forward` must have exactly one output (of any shape); the result is a copy of
/// it (composites without a rule decomposed) plus gradient nodes, with an Input named "d_output"
/// of the output's shape (the cotangent seed: ones for a scalar loss) and outputs
/// [loss, d/d wrt_0, d/d wrt_1, ...]. wrt are nodes of `forward` (usually Inputs or Params) of a
/// floating dtype. A wrt node no gradient reaches gets zeros. rlx::Error for a graph with other
/// than one output, a wrt id out of range, or a non-float wrt.
ir::Graph grad_with_loss(const ir::Graph& forward, std::span<const ir::NodeId> wrt);
ir::Graph grad_with_loss(const ir::Graph& forward, std::initializer_list<ir::NodeId> wrt);

/// grad_with_loss without the loss: outputs [d/d wrt_0, ...].
ir::Graph grad(const ir::Graph& forward, std::span<const ir::NodeId> wrt);
ir::Graph grad(const ir::Graph& forward, std::initializer_list<ir::NodeId> wrt);

/// Reverse mode on a graph with any number of outputs: one cotangent Input per output, named
/// "d_output" when there is one output and "d_output_<i>" otherwise; outputs
/// [primal outputs..., d/d wrt_0, ...] (the vector-Jacobian product).
ir::Graph vjp(const ir::Graph& forward, std::span<const ir::NodeId> wrt);

/// Forward mode: an Input "tangent_<name>" of the node's shape for each node of `tangent_for`
/// (Inputs or Params, named by their leaf name), outputs [primal outputs..., tangents of the
/// outputs...] (the Jacobian-vector product; an output no tangent reaches gets zeros).
ir::Graph jvp(const ir::Graph& forward, std::span<const ir::NodeId> tangent_for);
ir::Graph jvp(const ir::Graph& forward, std::initializer_list<ir::NodeId> tangent_for);

/// Hessian-vector product: jvp(grad_with_loss(forward, wrt), wrt), so the result has the Inputs
/// "d_output" and "tangent_<name>" per wrt and outputs [loss, grads..., <grad, v>..., Hv...]
/// (the tangent of the loss, then of each gradient). wrt must be Inputs or Params.
ir::Graph hvp(const ir::Graph& forward, std::span<const ir::NodeId> wrt);
ir::Graph hvp(const ir::Graph& forward, std::initializer_list<ir::NodeId> wrt);

/// Batch `forward` over a new leading axis of size batch_size: the Inputs named in
/// `batched_inputs` get shape [batch_size, *shape], everything else (Params, other Inputs,
/// constants) is shared; every output is batched on axis 0. Ops with a batching rule are
/// rewritten in place; the others run once per batch element (narrow, op, concat).
ir::Graph vmap(const ir::Graph& forward, std::span<const std::string> batched_inputs,
               int64_t batch_size);
ir::Graph vmap(const ir::Graph& forward, std::initializer_list<std::string> batched_inputs,
               int64_t batch_size);

/// The rule tables, for tests and documentation.
enum class RuleKind : uint8_t {
  None,      ///< no rule: the op kind is not differentiable (or not covered: a bug)
  Rule,      ///< a closed-form rule written with the graph builders
  Decompose, ///< differentiated through its decomposition into primitives
  Linear,    ///< (JVP) the op is linear in its differentiable operands: applied to the tangents
  ZeroGrad,  ///< kZeroGrad: piecewise constant (round, floor, sign, ...) or stop_gradient
};
RuleKind vjp_rule_kind(ir::OpKind k);
RuleKind jvp_rule_kind(ir::OpKind k);
/// Kinds that take no derivative at all: leaves, kNonDifferentiable ops (comparisons, logical
/// ops, argmax/argmin).
bool is_non_differentiable(ir::OpKind k);
/// Kinds vmap rewrites with a batching rule (the others run once per batch element).
bool has_batching_rule(ir::OpKind k);

} // namespace rlx::autodiff
