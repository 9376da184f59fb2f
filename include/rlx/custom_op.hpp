// include/rlx/custom_op.hpp -- extension ops: register a kernel of your own under a name
// (rlx::register_op) and call it from Tensor code (rlx::custom) or from a Graph
// (Graph::custom_op, custom_op_packed). How to write one: docs/custom_ops.md.
#pragma once

#include "rlx/buffer.hpp"
#include "rlx/error.hpp"
#include "rlx/ir/shape.hpp"
#include "rlx/tensor.hpp"

#include <cstdint>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace rlx {

/// The opaque attribute bytes of a custom op, handed verbatim to its rule, kernel and hooks.
using AttrBytes = std::span<const uint8_t>;

/// What an op registered with rlx::register_op does. infer_shape and kernel are required; the
/// derivative and batching hooks are optional Tensor functions, traced once per use (each call
/// of grad, jvp or vmap that meets the op) with the operands' shapes: write them with rlx's
/// Tensor ops on their arguments only (a tensor computed outside the hook is an error).
struct CustomOp {
  /// Operands the op takes (at least 1); Graph::custom_op checks the count.
  int num_inputs = 1;
  /// A pure op has no side effects, so CSE may merge two identical calls, constant folding may
  /// run it at compile time and DCE may drop an unused one. An impure op is never touched.
  bool pure = true;
  /// The output shape (dims and dtype) from the operands' shapes and the attribute bytes; throw
  /// rlx::Error to reject them (the message is prefixed with the op's name and the user's line).
  std::function<ir::Shape(std::span<const ir::Shape> inputs, AttrBytes attrs)> infer_shape;
  /// The CPU kernel: reads the operands' buffers (contiguous, row-major; shape() and dtype() say
  /// what they hold) and writes every element of `output`, whose shape is the node's and whose
  /// bytes start zeroed. Both backends call it (the JIT as a step between its fused kernels).
  std::function<void(std::span<const Buffer* const> inputs, Buffer& output, AttrBytes attrs)>
      kernel;
  /// Reverse mode: the cotangent of each operand (one per input, with its shape and dtype) given
  /// the operands, the op's output and the cotangent of the output.
  std::function<std::vector<Tensor>(std::span<const Tensor> inputs, const Tensor& output,
                                    const Tensor& d_output, AttrBytes attrs)>
      vjp;
  /// Forward mode: the tangent of the output given the operands, their tangents (zeros for
  /// operands without one) and the output.
  std::function<Tensor(std::span<const Tensor> inputs, std::span<const Tensor> tangents,
                       const Tensor& output, AttrBytes attrs)>
      jvp;
  /// Batching: the op on operands of which those with batched[i] carry one more leading (batch)
  /// axis; the result has the batch axis first. Without it, vmap runs the op once per batch
  /// element.
  std::function<Tensor(std::span<const Tensor> inputs, const std::vector<bool>& batched,
                       AttrBytes attrs)>
      vmap;
};

/// Register `impl` under `name` for this process (thread-safe; graphs built afterwards may use
/// it). rlx::Error naming register_op and the caller's line for an empty name, a missing
/// infer_shape or kernel, num_inputs < 1, or a name already registered unless `replace`.
void register_op(std::string name, CustomOp impl, bool replace = false, Loc loc = Loc::current());
/// Whether `name` is registered in this process.
bool is_op_registered(std::string_view name);

/// The registered op `name` on `inputs` (Graph::custom_op on tensors): shape and arity are
/// checked now, by the registered rule.
Tensor custom(std::string name, std::span<const Tensor> inputs, std::vector<uint8_t> attrs = {},
              Loc loc = Loc::current());
Tensor custom(std::string name, std::initializer_list<Tensor> inputs,
              std::vector<uint8_t> attrs = {}, Loc loc = Loc::current());
/// custom with the caller's output shape (several outputs packed in one buffer; narrow reads
/// them back): Graph::custom_op_packed on tensors.
Tensor custom_packed(std::string name, std::span<const Tensor> inputs, std::vector<uint8_t> attrs,
                     ir::Shape out_shape, Loc loc = Loc::current());

/// The bytes of a trivially copyable attribute struct (a POD of the op's parameters).
template <class A> std::vector<uint8_t> attr_bytes(const A& attrs) {
  static_assert(std::is_trivially_copyable_v<A>, "attr_bytes needs a trivially copyable struct");
  std::vector<uint8_t> out(sizeof(A));
  std::memcpy(out.data(), &attrs, sizeof(A));
  return out;
}
/// attr_bytes read back; rlx::Error naming `op` when the byte count is not sizeof(A).
template <class A> A attr_from_bytes(AttrBytes bytes, std::string_view op) {
  static_assert(std::is_trivially_copyable_v<A>, "attr_from_bytes needs a trivially copyable "
                                                 "struct");
  if (bytes.size() != sizeof(A))
    throw Error(ErrorKind::Value, "custom op '" + std::string(op) + "': attributes hold " +
                                      std::to_string(bytes.size()) + " bytes, expected " +
                                      std::to_string(sizeof(A)));
  A a;
  std::memcpy(&a, bytes.data(), sizeof(A));
  return a;
}

} // namespace rlx
