// src/ops/custom.hpp -- the process-wide registry of custom ops (rlx::register_op), as the IR,
// the interpreter and autodiff see it: the shape rule, the kernel and the derivative hooks, the
// latter already traced into graphs by the frontend (src/frontend/custom_op.cpp).
#pragma once

#include "rlx/buffer.hpp"
#include "rlx/ir/graph.hpp"

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace rlx::ir::detail {

/// A derivative or batching hook as a graph: given the shapes of its arguments, the attribute
/// bytes and (vmap only) which operands are batched, the hook traced on placeholders of those
/// shapes. The graph's Inputs "arg0", "arg1", ... are the arguments in order; its outputs are
/// the hook's results. The arguments are, for vjp: operands, output, d_output (outputs: one
/// cotangent per operand); for jvp: operands, tangents, output (one output); for vmap: the
/// operands, batched ones with the batch axis first (one output).
using HookGraph = std::function<Graph(std::span<const Shape> args, std::span<const uint8_t> attrs,
                                      const std::vector<bool>& batched)>;

struct CustomOpEntry {
  std::string name;
  int num_inputs = 1;
  bool pure = true;
  std::function<Shape(std::span<const Shape>, std::span<const uint8_t>)> infer;
  std::function<void(std::span<const Buffer* const>, Buffer&, std::span<const uint8_t>)> kernel;
  HookGraph vjp, jvp, vmap; ///< empty: the op has no such hook
};

/// Adds (or with `replace`, replaces) an entry; rlx::Error naming register_op and `loc` when
/// the name is taken and replace is false.
void register_custom_op(std::shared_ptr<const CustomOpEntry> entry, bool replace, const Loc& loc);
/// The entry registered under `name`, or null.
std::shared_ptr<const CustomOpEntry> find_custom_op(std::string_view name);
/// The entry of custom op `op`; rlx::Error (Unsupported) naming the op, what needed it (`need`:
/// "its shape", "its kernel", ...) and `where` when it is not registered in this process.
std::shared_ptr<const CustomOpEntry> require_custom_op(const Op& op, std::string_view need,
                                                       const SourceLoc& where = {});
/// " (at file:line)" for a known location, else "".
std::string at_source(const SourceLoc& where);

} // namespace rlx::ir::detail
