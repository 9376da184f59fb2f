// include/rlx/ir/infer.hpp -- shape rules: the output shape of an op from its operand shapes.
#pragma once

#include "rlx/ir/op.hpp"
#include "rlx/ir/shape.hpp"

#include <optional>
#include <span>

namespace rlx::ir {

/// The output shape of `op` applied to operands of `inputs` shapes. Throws rlx::Error
/// (Shape/Type/Value) naming the op and the shapes when the operands do not fit; returns nullopt
/// when the op has no shape rule (leaves, or a rule not written yet: see has_shape_rule).
std::optional<Shape> infer_shape(const Op& op, std::span<const Shape> inputs);

/// Whether infer_shape knows the op kind.
bool has_shape_rule(OpKind kind);

/// NumPy broadcasting of two shapes (right-aligned; 1 stretches; equal symbols match). The
/// result dtype is a's. Throws rlx::Error naming `op` when the shapes do not broadcast.
Shape broadcast_shapes(std::string_view op, const Shape& a, const Shape& b);

/// Whether two shapes agree where both are known: same dtype and rank, and each pair of dims is
/// equal or has a dynamic side.
bool shapes_compatible(const Shape& a, const Shape& b);

} // namespace rlx::ir
