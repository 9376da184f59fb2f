// src/autodiff/rules.hpp -- the rule tables' types: one VJP entry and one JVP entry per
// differentiable op kind (vjp_rules.cpp, jvp_rules.cpp), and the element-wise derivatives both
// tables share (elementwise.cpp).
#pragma once

#include "builder.hpp"
#include "rlx/autodiff.hpp"

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
  VjpFn fn; ///< null for Decompose, ZeroGrad and NoGradient
};
struct JvpEntry {
  OpKind kind;
  RuleKind how;
  JvpFn fn; ///< null for Decompose, Linear, ZeroGrad and NoGradient
};

const VjpEntry* vjp_entry(OpKind k);
const JvpEntry* jvp_entry(OpKind k);

/// f'(x) of an element-wise unary op n (x = n.inputs[0], y = n.id), broadcastable to n's shape.
NodeId unary_derivative(Builder& b, const Node& n);
/// The partial derivatives of a binary op n with respect to each operand (broadcastable to n's
/// shape).
std::pair<NodeId, NodeId> binary_partials(Builder& b, const Node& n);

} // namespace rlx::autodiff
