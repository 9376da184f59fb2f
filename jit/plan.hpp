// jit/plan.hpp -- how the JIT splits a graph: fused element-wise kernels and single-node steps.
#pragma once

#include "rlx/ir/graph.hpp"

#include <cstdint>
#include <optional>
#include <vector>

namespace rlx::jit {

/// A fused element-wise region: nodes of one static output shape (the iteration space), in
/// topological order. Operands from outside are read with broadcasting; `outputs` are the nodes
/// whose values leave the region (stored to buffers).
///
/// Operand j is the value of node `inputs[j]`, read from the buffer of node `buffers[j]` as a
/// row-major tensor of shape `read_shapes[j]` broadcast to the iteration space. They differ when
/// the operand is a reshape (the same bytes in another shape) or an expand (a broadcast the
/// kernel's indexing does anyway): such movement nodes fold into the kernel's index arithmetic
/// and need no step of their own.
struct EwKernel {
  std::vector<ir::NodeId> nodes;
  std::vector<ir::NodeId> inputs;
  std::vector<ir::NodeId> outputs;
  ir::Shape shape;
  std::vector<ir::NodeId> buffers{};
  std::vector<ir::Shape> read_shapes{};
  /// Computed inside a row kernel (its Step::prologue) instead of as a kernel of its own.
  bool row_prologue = false;
};

struct LibraryKernel;

/// One step of an executable, in order: a fused element-wise kernel, a row kernel (one
/// reduction or softmax node over contiguous rows), a GEMM (an f32 matmul or
/// fused_matmul_bias_act on the generated micro-kernels, jit/gemm_step.hpp), a library kernel
/// (the registry of jit/library.hpp: FFTW, attention on the GEMM), a view (a narrow or slice
/// that is a contiguous range of its operand at a 64-byte aligned offset, read only by steps
/// that take pointers: it costs a pointer addition, see alias_view), or one node run by the
/// runtime kernels (the interpreter's), so the JIT runs every graph the interpreter runs.
struct Step {
  enum class Kind : uint8_t { Native, Row, Gemm, Library, View, Runtime };
  Kind kind;
  std::size_t kernel = 0; ///< index into Plan::kernels (Native; Row with a prologue)
  ir::NodeId node;        ///< the node (Row, Gemm, Library, Runtime)
  /// Row: the row op's first operand is the only output of Plan::kernels[kernel], read by
  /// nothing else, and the row kernel computes it element by element as it reads it (so it
  /// never goes to memory: softmax(x * scale + mask), sum(exp(x)), layer_norm(x + b, ...)).
  bool prologue = false;
  const LibraryKernel* library = nullptr; ///< the registry's entry (Library)
};

struct Plan {
  std::vector<EwKernel> kernels;
  std::vector<Step> steps;
};

/// Regions stop growing at this many nodes: LLVM's optimizer is superlinear in the size of one
/// loop body, and longer chains gain nothing from more fusion.
inline constexpr std::size_t kMaxKernelNodes = 96;

/// Whether the element-wise lowering handles this node (jit/llvm/lower_elementwise.cpp).
bool lowers_natively(const ir::Graph& g, const ir::Node& n);

/// Whether the row lowering handles this node (jit/llvm/lower_rows.cpp): reduce_sum/mean/max/min
/// over trailing axes, softmax and layer/rms norm (also fused with a residual) over the last
/// axis, of f32 or f64.
bool lowers_as_row(const ir::Graph& g, const ir::Node& n);

/// Whether a row op can compute its first operand with element-wise kernel k (k's iteration
/// space is that operand's shape, and every operand of k is contiguous or broadcast along the
/// op's rows; jit/llvm/lower_rows.cpp).
bool fits_row_prologue(const ir::Graph& g, const ir::Node& row_op, const EwKernel& k);

/// The byte offset at which a narrow or slice (step 1) is a contiguous range of its operand
/// (every dim before its axis is 1: ir::view_offset), when that offset is a multiple of 64 (so
/// the view is as aligned as any buffer and every kernel may read it).
std::optional<uint64_t> alias_view(const ir::Graph& g, const ir::Node& n);

/// Partition a static-shaped graph: non-lowered nodes become Row, Gemm, Library or Runtime
/// steps; Input and Param (fed) and Constant (computed once when the executable is built) need
/// no step, nor do reshapes and expands that only element-wise kernels read (they fold into the
/// kernels), transposes only GEMMs read, and narrows along the last axis only library kernels
/// read through row strides (library_view).
Plan make_plan(const ir::Graph& g);

} // namespace rlx::jit
