// jit/lower.hpp -- lowering of fused element-wise kernels to native code (no LLVM types here).
#pragma once

#include "rlx/ir/lir.hpp"

#include <cstdint>
#include <memory>
#include <string>

namespace rlx::jit {

class CompiledCode;

/// Whether the element-wise lowering handles this node (jit/llvm/lower_elementwise.cpp).
bool lowers_natively(const ir::Graph& g, const ir::Node& n);

/// Whether the row lowering handles this node (jit/llvm/lower_rows.cpp): reduce_sum/mean/max/min
/// over trailing axes, softmax, layer/rms norm (also fused with a residual) and cumsum over the
/// last axis, of f32 or f64.
bool lowers_as_row(const ir::Graph& g, const ir::Node& n);

/// Whether a row op can compute its first operand with element-wise kernel k (k's iteration
/// space is that operand's shape, and every operand of k is contiguous or broadcast along the
/// op's rows; jit/llvm/lower_rows.cpp).
bool fits_row_prologue(const ir::Graph& g, const ir::Node& row_op, const ir::FusedKernel& k);

/// A native kernel: bufs holds the kernel's input buffers then its output buffers (element
/// pointers, 64-byte aligned); it computes flat output elements [begin, end). Element-wise
/// kernels whose outputs stream (lower_elementwise.cpp) need begin and end to be multiples of
/// 16 (the executable splits work in 16-element blocks; their element count is one too).
using KernelFn = void (*)(void* const* bufs, int64_t begin, int64_t end);

struct NativeKernel {
  std::shared_ptr<const CompiledCode> code; ///< keeps the machine code alive
  KernelFn fn = nullptr;
};

/// Which code generator an element-wise kernel gets. First: the fast one for large vector bodies
/// (compiles 2x faster, runs up to 1.4x slower), unless the kernel was recompiled before; Full:
/// the optimizing one, for a kernel that turned out hot (steps.cpp: the tiers).
enum class Tier : uint8_t { First, Full };

/// Compile an element-wise kernel of graph g (jit/llvm/lower_elementwise.cpp).
NativeKernel lower_elementwise(const ir::Graph& g, const ir::FusedKernel& kernel,
                               const std::string& name, Tier tier = Tier::First);

/// Compile a row op (a step of the row rule; jit/llvm/lower_rows.cpp): bufs = {operands...,
/// output, the row length (the slot holds the int64_t value)}; [begin, end) counts rows. With a
/// prologue kernel (ir::LirStep::kernel), the first operand is computed by it: bufs = {the
/// prologue's operand buffers..., the other operands..., output, the row length}.
NativeKernel lower_row(const ir::Graph& g, const ir::Node& node, const std::string& name,
                       const ir::FusedKernel* prologue = nullptr);

/// The number of rows of a row op.
int64_t row_count(const ir::Graph& g, const ir::Node& node);

} // namespace rlx::jit
