// jit/gemm_step.hpp -- matmul and fused_matmul_bias_act of f32 or f64 as a JIT step on the
// generated GEMM (jit/gemm.hpp), also with a residual added (add(product, r)): which nodes it
// takes, what it reads, and the compiled call.
#pragma once

#include "gemm.hpp"
#include "lower.hpp"

#include "rlx/ir/graph.hpp"

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

namespace rlx::jit {

/// Whether a Gemm step computes this node: matmul or fused_matmul_bias_act with static f32 or
/// f64 operands and result (all one type) on a host with AVX-512F or AVX2; a fused bias must be one
/// value per output column (f32[N], possibly with leading 1s) and the activation relu or one the
/// element-wise lowering compiles.
bool lowers_as_gemm(const ir::Graph& g, const ir::Node& n);

/// A static operand as strides over the elements of a buffer: element (i0, i1, ...) at
/// offset + sum of i_a * strides[a].
struct GemmView {
  ir::NodeId buffer;
  int64_t offset = 0;
  std::vector<int64_t> strides;
};

/// Node `id` as a view of a buffer: a chain of transposes, reshapes, slices and narrows over
/// a static node that is not one of them (its own row-major buffer), each keeping one stride
/// per axis (a reshape that would need a copy ends it: nullopt). A node that is not a view op is
/// its own buffer. No sizes 0.
std::optional<GemmView> gemm_view(const ir::Graph& g, ir::NodeId id);

/// Whether operand `id` of a Gemm step is a view op (transpose, reshape, slice, narrow) that
/// the GEMM reads through strides from the buffer under it (gemm_view): q @ k^T, and the heads
/// of a fused QKV projection ([B, S, 3D] -> [B, H, S, D]) without copies.
bool gemm_folds_transpose(const ir::Graph& g, ir::NodeId id);

/// The contraction of an `add` node that one Gemm step computes together with the add, the
/// other operand added in the GEMM's store: its first operand that is a matmul or
/// fused_matmul_bias_act, when that lowers_as_gemm (and not natively), nothing else reads it
/// (`uses`: how often each node is read, graph outputs included) and both operands have the add's
/// shape (no broadcast). Else nullopt.
std::optional<ir::NodeId> gemm_residual_product(const ir::Graph& g, const ir::Node& n,
                                                std::span<const int> uses);

/// The buffers a Gemm step reads, in order: A, B (a folded transpose's operand in its place),
/// the bias if any, then for an add node (gemm_residual_product) the residual. The step's
/// output must not share memory with the residual (a later depth block reads it).
std::vector<ir::NodeId> gemm_reads(const ir::Graph& g, const ir::Node& n);

/// B packed once per ISA for the Gemm step of a B that never changes (jit/gemm_step.cpp).
class PackedB;

/// A Gemm step ready to run: the call with everything but the pointers (`call` for f32,
/// `dcall` for f64), the batch offsets, the small kernel when the product is small, the
/// activation's kernel and, for a constant B, its packed copy.
struct GemmStep {
  GemmCall call;
  DGemmCall dcall;
  bool f64 = false;
  std::vector<int64_t> a_off, b_off;
  NativeKernel epilogue;
  bool has_bias = false, has_residual = false;
  /// Set by lower_gemm with `constant_b`: B is packed on the first run on each ISA (once, also
  /// when two threads run the step at once), kept with the step and read by every later run.
  std::shared_ptr<PackedB> packed_b;
  /// bufs: gemm_reads' buffers in order, then the output.
  void run(void* const* bufs) const;
};

/// n: a node lowers_as_gemm, or an add with a gemm_residual_product. Batches that share B and
/// read A's rows contiguously run as one product of all their rows (the same dot products).
/// constant_b: B's buffer (gemm_reads' second) holds the same values at the same address on
/// every run (a constant of the executable), so it is packed once, not on every call.
GemmStep lower_gemm(const ir::Graph& g, const ir::Node& n, const std::string& name,
                    bool constant_b = false);

/// How many times Gemm steps have packed a constant B in this process (tests: once per step
/// and ISA, however many runs and threads).
int64_t gemm_constant_b_packs();

} // namespace rlx::jit
