// src/autodiff/rules.hpp -- the rule tables' types: one VJP entry and one JVP entry per
// differentiable op kind (vjp_rules.cpp, jvp_rules.cpp), what the tables derive from ops.def's
// traits, and the element-wise derivatives both tables share (elementwise.cpp).
#pragma once

#include "builder.hpp"
#include "ops/scalar.hpp"
#include "rlx/autodiff.hpp"

#include <array>
#include <functional>
#include <span>
#include <utility>
#include <vector>

namespace rlx::autodiff {

/// Reverse mode: the cotangents of n's operands (one per input; nullopt: none) given the
/// cotangent dy of n's value. want[i] says whether operand i needs one (a rule may skip the
/// others). Each returned cotangent has its operand's exact shape and dtype.
using VjpFn = std::vector<Grad> (*)(Builder& b, const Node& n, NodeId dy,
                                    std::span<const char> want);
/// Forward mode: the tangent of n's value given its operands' tangents (nullopt: zero).
using JvpFn = Grad (*)(Builder& b, const Node& n, std::span<const Grad> t);

struct VjpEntry {
  OpKind kind;
  RuleKind how;
  VjpFn fn; ///< null unless how is Rule
};
struct JvpEntry {
  OpKind kind;
  RuleKind how;
  JvpFn fn; ///< null unless how is Rule
};

/// Whether element-wise kind K is differentiated through its derivative formula in
/// src/ops/scalar.hpp (both modes).
template <OpKind K>
inline constexpr bool kHasFormula =
    ops::HasScalarRule<K> && !ir::has_trait(K, ir::kLeaf) &&
    !ir::has_trait(K, ir::kNonDifferentiable) && !ir::has_trait(K, ir::kZeroGrad);

/// The rule kind ops.def's traits give a kind, in reverse (forward = false) or forward mode:
/// None for leaves and kNonDifferentiable kinds, ZeroGrad for kZeroGrad, Linear in forward mode
/// for kLinear, Rule for a derivative formula, Decompose for kComposite; else None, and the
/// table's hand row (structural ops) must say. A hand row may replace None or Decompose only.
template <OpKind K> constexpr RuleKind derived_rule_kind(bool forward) {
  if (ir::has_trait(K, ir::kLeaf) || ir::has_trait(K, ir::kNonDifferentiable))
    return RuleKind::None;
  if (ir::has_trait(K, ir::kZeroGrad)) return RuleKind::ZeroGrad;
  if (forward && ir::has_trait(K, ir::kLinear)) return RuleKind::Linear;
  if (kHasFormula<K>) return RuleKind::Rule;
  if (ir::has_trait(K, ir::kComposite)) return RuleKind::Decompose;
  return RuleKind::None;
}

/// The table of one mode: each kind's derived row (`formula` for Rule rows), then the hand rows,
/// which may only fill a None or replace a Decompose (a compile error otherwise).
template <class Entry, class Fn, std::size_t N>
constexpr std::array<Entry, ir::kNumOps>
rule_table(const std::array<RuleKind, ir::kNumOps>& derived, Fn unary_formula, Fn binary_formula,
           const Entry (&hand)[N]) {
  std::array<Entry, ir::kNumOps> t{};
  for (std::size_t i = 0; i < ir::kNumOps; ++i) {
    OpKind k = OpKind(i);
    Fn fn = nullptr;
    if (derived[i] == RuleKind::Rule)
      fn = ir::op_family(k) == ir::Family::EwBinary ? binary_formula : unary_formula;
    t[i] = {k, derived[i], fn};
  }
  for (const Entry& e : hand) {
    RuleKind was = t[std::size_t(e.kind)].how;
    if (was != RuleKind::None && was != RuleKind::Decompose)
      throw "a hand row for a kind whose rule ops.def's traits already give";
    t[std::size_t(e.kind)] = e;
  }
  return t;
}

/// derived_rule_kind of every kind, by kind.
template <bool Forward> constexpr std::array<RuleKind, ir::kNumOps> derived_rule_kinds() {
  return {
#define OP(E, N, F, A, T, S) derived_rule_kind<OpKind::E>(Forward),
#include "rlx/ir/ops.def"
  };
}

const VjpEntry* vjp_entry(OpKind k);
const JvpEntry* jvp_entry(OpKind k);

/// f'(x) of an element-wise unary op n (x = n.inputs[0], y = n.id), broadcastable to n's shape.
NodeId unary_derivative(Builder& b, const Node& n);
/// The partial derivatives of a binary op n with respect to each operand (broadcastable to n's
/// shape).
std::pair<NodeId, NodeId> binary_partials(Builder& b, const Node& n);

/// The cotangent of operand `which` of op(operands) given the cotangent dy of its value: the op
/// (or its decomposition) is appended and differentiated, the other operands held constant.
NodeId vjp_of(ir::Graph& g, const ir::Op& op, std::span<const NodeId> operands, NodeId dy,
              std::size_t which);

// ---- custom_fn without an override body (transforms.cpp): fwd_body is inlined after the
// forward graph and differentiated there.

/// The cotangents of custom_fn n's operands (those `want` asks for; an operand given twice gets
/// its whole cotangent at its first position).
std::vector<Grad> vjp_inlined(ir::Graph& g, const Node& n, NodeId dy, std::span<const char> want);
/// The tangent of custom_fn n's value from its operands' tangents.
Grad jvp_inlined(ir::Graph& g, const Node& n, std::span<const Grad> t);
/// custom_fn's rules (custom_fn.cpp): the user's vjp_body / jvp_body, else the two above.
std::vector<Grad> vjp_custom_fn(Builder& b, const Node& n, NodeId dy, std::span<const char> want);
Grad jvp_custom_fn(Builder& b, const Node& n, std::span<const Grad> t);
/// scan's rules (scan.cpp): scan_backward / scan_backward_xs over the trajectory (or K
/// checkpoints), and a scan of (carry, tangent) pairs.
std::vector<Grad> vjp_scan(Builder& b, const Node& n, NodeId dy, std::span<const char> want);
Grad jvp_scan(Builder& b, const Node& n, std::span<const Grad> t);
/// g with each scan that also has a trajectory twin (the same operands and attributes with
/// save_trajectory, as the VJP of a scan adds) computed as that trajectory's last row: the
/// forward then runs once for its value and its backward. Whether anything changed.
bool share_scan_trajectories(ir::Graph& g);
/// Appends body nodes into g with n's source location; kinds `rule_kind` marks Decompose are
/// appended as their decomposition (as the transforms prepare the forward graph).
std::function<NodeId(const ir::Op&, std::vector<NodeId>, Shape)>
appender(ir::Graph& g, const Node& n, RuleKind (*rule_kind)(OpKind));

// ---- Closed forms shared by the VJP table and RLX's explicit backward ops
// (backward_ops.cpp).

/// One-hot rows of integer or float-encoded indices (negative ones count from the end) against
/// [0, size): [numel(indices), size] of dtype t.
NodeId one_hot(Builder& b, NodeId indices, int64_t size, DType t);

/// The scatter-add of dy into a table of sizes ts at `indices` along axis (gather's adjoint).
NodeId gather_adjoint(Builder& b, NodeId dy, NodeId indices, const std::vector<int64_t>& ts,
                      int64_t axis);

struct ConvGeom {
  Ints stride, padding, dilation;
  int64_t groups = 1;
};
/// The transposed convolution of dy with w that gives back a tensor of x_shape (the adjoint of
/// a 2-D or 3-D convolution in its input).
NodeId conv_input_adjoint(Builder& b, NodeId dy, NodeId w, const std::vector<int64_t>& x_shape,
                          const ConvGeom& c);
/// d/dw of a 2-D or 3-D convolution of x with cotangent dy.
NodeId conv_weight_adjoint(Builder& b, NodeId x, NodeId dy, const std::vector<int64_t>& w_shape,
                           const ConvGeom& c);
/// The cotangent of max_pool2d's input x given its output y and the output's cotangent dy.
NodeId max_pool_adjoint(Builder& b, NodeId x, NodeId y, NodeId dy, ir::Ints2 k, ir::Ints2 stride,
                        ir::Ints2 padding);

} // namespace rlx::autodiff
