// src/interp/kernels.hpp -- the interpreter's per-family kernel entry points and index helpers.
#pragma once

#include "rlx/interp.hpp"

#include <span>
#include <vector>

namespace rlx::interp::detail {

using Operands = std::span<const Buffer* const>;

/// One function per family; each switches over the op kinds of its family.
Buffer eval_elementwise(const ir::Node& n, Operands in);
Buffer eval_reduce_scan(const ir::Node& n, Operands in);
Buffer eval_movement(const ir::Node& n, Operands in);
Buffer eval_contract(const ir::Node& n, Operands in);
Buffer eval_norm(const ir::Node& n, Operands in);
Buffer eval_attention(const ir::Node& n, Operands in);
Buffer eval_conv_pool(const ir::Node& n, Operands in);
Buffer eval_spectral(const ir::Node& n, Operands in);
Buffer eval_control(const ir::Node& n, Operands in);
/// Whether the family function above handles the kind (for has_kernel and the table test).
bool elementwise_has(ir::OpKind k);
bool reduce_scan_has(ir::OpKind k);
bool movement_has(ir::OpKind k);
bool contract_has(ir::OpKind k);
bool norm_has(ir::OpKind k);
bool attention_has(ir::OpKind k);
bool conv_pool_has(ir::OpKind k);
bool spectral_has(ir::OpKind k);
bool control_has(ir::OpKind k);

/// An activation's scalar rule on one value (default attributes, e.g. leaky_relu alpha 0.01).
double apply_activation(ir::Activation act, double x);

/// Whether `operand` broadcasts to `out` under NumPy rules (right-aligned, 1 stretches).
inline bool broadcasts_to(const std::vector<int64_t>& operand, const std::vector<int64_t>& out) {
  if (operand.size() > out.size()) return false;
  std::size_t off = out.size() - operand.size();
  for (std::size_t i = 0; i < operand.size(); ++i)
    if (operand[i] != 1 && operand[i] != out[off + i]) return false;
  return true;
}

/// Row-major strides of static sizes.
std::vector<int64_t> strides_of(std::span<const int64_t> sizes);

/// Maps a flat index of `out` to the flat index of an operand broadcast to it (NumPy rules).
class BroadcastIndex {
public:
  BroadcastIndex(const ir::Shape& operand, const ir::Shape& out);
  int64_t operator()(int64_t out_index) const;

private:
  std::vector<int64_t> out_sizes_, in_strides_; // in_strides_ is 0 on broadcast axes
};

/// Sizes [outer, axis, inner] around one axis of a shape.
struct AxisSplit {
  int64_t outer = 1, len = 1, inner = 1;
};
AxisSplit split_at(const ir::Shape& s, int64_t axis);

/// Normalize a possibly negative axis (already validated by the shape rule).
inline int64_t norm_axis(int64_t axis, std::size_t rank) {
  return axis < 0 ? axis + int64_t(rank) : axis;
}

} // namespace rlx::interp::detail
