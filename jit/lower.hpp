// jit/lower.hpp -- lowering of fused element-wise kernels to native code (no LLVM types here).
#pragma once

#include "plan.hpp"

#include <cstdint>
#include <memory>
#include <string>

namespace rlx::jit {

class CompiledCode;

/// A native kernel: bufs holds the kernel's input buffers then its output buffers (element
/// pointers, 64-byte aligned); it computes flat output elements [begin, end). Element-wise
/// kernels whose outputs stream (lower_elementwise.cpp) need begin and end to be multiples of
/// 16 (the executable splits work in 16-element blocks; their element count is one too).
using KernelFn = void (*)(void* const* bufs, int64_t begin, int64_t end);

struct NativeKernel {
  std::shared_ptr<const CompiledCode> code; ///< keeps the machine code alive
  KernelFn fn = nullptr;
};

/// Compile an element-wise kernel of graph g (jit/llvm/lower_elementwise.cpp).
NativeKernel lower_elementwise(const ir::Graph& g, const EwKernel& kernel, const std::string& name);

/// Compile a row op (a Step::Kind::Row node; jit/llvm/lower_rows.cpp): bufs = {operands...,
/// output}; [begin, end) counts rows. With a prologue kernel (Step::prologue), the first
/// operand is computed by it: bufs = {the prologue's operand buffers..., the other operands...,
/// output}.
NativeKernel lower_row(const ir::Graph& g, const ir::Node& node, const std::string& name,
                       const EwKernel* prologue = nullptr);

/// The number of rows of a row op.
int64_t row_count(const ir::Graph& g, const ir::Node& node);

} // namespace rlx::jit
