// jit/gemm_step.hpp -- matmul and fused_matmul_bias_act of f32 as a JIT step on the generated
// GEMM (jit/gemm.hpp): which nodes it takes, what it reads, and the compiled call.
#pragma once

#include "gemm.hpp"
#include "lower.hpp"

#include "rlx/ir/graph.hpp"

#include <vector>

namespace rlx::jit {

/// Whether a Gemm step computes this node: matmul or fused_matmul_bias_act with static f32
/// operands and result on a host with AVX-512F; a fused bias must be one value per output
/// column (f32[N], possibly with leading 1s) and the activation relu or one the element-wise
/// lowering compiles.
bool lowers_as_gemm(const ir::Graph& g, const ir::Node& n);

/// Whether operand `id` of a Gemm step is a transpose of the last two axes (of a static
/// operand of rank >= 2) that the GEMM reads through strides from the transpose's operand.
bool gemm_folds_transpose(const ir::Graph& g, ir::NodeId id);

/// The buffers a Gemm step reads, in order: A, B (a folded transpose's operand in its place),
/// then the bias if any.
std::vector<ir::NodeId> gemm_reads(const ir::Graph& g, const ir::Node& n);

/// A Gemm step ready to run: the call with everything but the pointers, the batch offsets and
/// the activation's kernel.
struct GemmStep {
  GemmCall call;
  std::vector<int64_t> a_off, b_off;
  NativeKernel epilogue;
  bool has_bias = false;
  /// bufs: gemm_reads' buffers in order, then the output.
  void run(void* const* bufs) const;
};

GemmStep lower_gemm(const ir::Graph& g, const ir::Node& n, const std::string& name);

} // namespace rlx::jit
