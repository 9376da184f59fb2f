// src/ir/infer_common.hpp -- helpers shared by the shape-rule family files.
#pragma once

#include "rlx/error.hpp"
#include "rlx/ir/infer.hpp"

#include <span>
#include <string>

namespace rlx::ir::detail {

/// Thrown by a rule when a dim it must compute from is dynamic: infer_shape returns nullopt.
struct DynamicUnknown {};

/// "f32[2,3], f32[3]" for error messages.
std::string shapes_str(std::span<const Shape> shapes);

/// Throw ErrorKind::Shape: "<op>: <what> (operands f32[2,3], f32[4])".
template <class... Args>
[[noreturn]] void shape_error(const Op& op, std::span<const Shape> in, const Args&... args) {
  fail(ErrorKind::Shape, op.name(), ": ", args..., " (operands ", shapes_str(in), ")");
}

/// A normalized axis in [0, rank) from a possibly negative one, or a shape error.
int64_t norm_axis(const Op& op, std::span<const Shape> in, int64_t axis, std::size_t rank);

/// The static size of d, or DynamicUnknown.
int64_t static_size(const Dim& d);

/// Per-family rules (each returns nullopt when the kind has no rule).
std::optional<Shape> infer_elementwise(const Op& op, std::span<const Shape> in);
std::optional<Shape> infer_reduce_scan(const Op& op, std::span<const Shape> in);
std::optional<Shape> infer_movement(const Op& op, std::span<const Shape> in);
std::optional<Shape> infer_contract(const Op& op, std::span<const Shape> in);
std::optional<Shape> infer_norm_attention(const Op& op, std::span<const Shape> in);
std::optional<Shape> infer_conv_pool(const Op& op, std::span<const Shape> in);
std::optional<Shape> infer_spectral(const Op& op, std::span<const Shape> in);
std::optional<Shape> infer_linalg(const Op& op, std::span<const Shape> in);
std::optional<Shape> infer_quant(const Op& op, std::span<const Shape> in);
std::optional<Shape> infer_packed(const Op& op, std::span<const Shape> in);
std::optional<Shape> infer_random(const Op& op, std::span<const Shape> in);
std::optional<Shape> infer_recurrent(const Op& op, std::span<const Shape> in);
std::optional<Shape> infer_ssm(const Op& op, std::span<const Shape> in);
std::optional<Shape> infer_splat(const Op& op, std::span<const Shape> in);
std::optional<Shape> infer_control(const Op& op, std::span<const Shape> in);
std::optional<Shape> infer_custom(const Op& op, std::span<const Shape> in);
std::optional<Shape> infer_collective(const Op& op, std::span<const Shape> in);

} // namespace rlx::ir::detail
