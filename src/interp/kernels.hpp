// src/interp/kernels.hpp -- the interpreter's kernels, one per op kind, and their shared helpers.
#pragma once

#include "rlx/interp.hpp"

#include <optional>
#include <span>
#include <vector>

namespace rlx::interp::detail {

using Operands = std::span<const Buffer* const>;

/// The kernel of op kind K: what a node of that kind computes from its operands' buffers. The
/// specialization of every kind is declared here from ops.def and defined once, in its family's
/// file, as `RLX_KERNEL(Kind) { ... }` (n: the node, in: its operands). interpreter.cpp indexes
/// them by kind, so a kind without a kernel does not link (an undefined
/// `kernel<(rlx::ir::OpKind)N>`, N its row in ops.def); element-wise kernels are instantiated
/// from the kind's Scalar<K> rule, whose absence does not compile.
template <ir::OpKind K> Buffer kernel(const ir::Node& n, Operands in) = delete;
#define OP(E, N, F, A, T, S) template <> Buffer kernel<ir::OpKind::E>(const ir::Node&, Operands);
#include "rlx/ir/ops.def"

#define RLX_KERNEL(E)                                                                              \
  template <>                                                                                      \
  Buffer kernel<ir::OpKind::E>([[maybe_unused]] const ir::Node& n, [[maybe_unused]] Operands in)

/// An activation's scalar rule on one value (default attributes, e.g. leaky_relu alpha 0.01).
double apply_activation(ir::Activation act, double x);
/// The integer semantics of a unary kind (the kIntegerOk activations and stop_gradient, with
/// wrap-around); nullopt for kinds defined on floating-point values only.
std::optional<int64_t> integer_activation(ir::OpKind k, int64_t x);

/// Integer and bool values compute in int64.
inline bool int_domain(ir::DType t) { return ir::is_int(t) || ir::is_bool(t); }

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
