// jit/library.hpp -- the registry of native runtime kernels by op kind (jit/library.cpp): nodes
// the JIT runs with a hand-written or library kernel instead of the interpreter's, each entry
// saying which nodes it takes, what it reads and how it runs. FFTW (fft) and attention on the
// GEMM are the entries; everything they do not take stays on the interpreter's kernels.
#pragma once

#include "rlx/ir/graph.hpp"

#include <cstddef>
#include <memory>
#include <vector>

namespace rlx::jit {

/// One node prepared for a library kernel when the executable is built (plans, strides,
/// offsets); run() is const and may be called from several threads at once.
class LibraryCall {
public:
  virtual ~LibraryCall() = default;
  /// reads: the buffers of LibraryKernel::reads in order (contiguous, row-major, of the read
  /// node's shape); out: the node's result, contiguous and uninitialized (run writes all of it).
  virtual void run(const std::byte* const* reads, std::byte* out) const = 0;
};

struct LibraryKernel {
  const char* name; ///< "fftw", "attention" (the plan's text names the step by it)
  /// Whether this entry computes node n (its dtypes and static shapes; shapes the interpreter
  /// would reject stay on the interpreter, which reports them).
  bool (*handles)(const ir::Graph& g, const ir::Node& n);
  /// The buffers the kernel reads, in order: n's operands, a view it reads in place
  /// (library_view) replaced by the view's operand.
  std::vector<ir::NodeId> (*reads)(const ir::Graph& g, const ir::Node& n);
  std::unique_ptr<LibraryCall> (*prepare)(const ir::Graph& g, const ir::Node& n);
};

/// A narrow along the last axis of a static tensor: rows of its operand
/// at a column offset, which a library kernel reading row-strided operands (attention) takes in
/// place. The plan gives it no step when only such kernels read it.
bool library_view(const ir::Graph& g, ir::NodeId id);

/// Where operand `id` of a library kernel is read from: the view's operand for library_view,
/// else id itself; `column` is the view's first column in that buffer, `row_stride` the
/// elements between its rows (the operand's last dim).
struct RowView {
  ir::NodeId buffer;
  int64_t column = 0;
  int64_t row_stride = 0;
};
RowView row_view(const ir::Graph& g, ir::NodeId id);

} // namespace rlx::jit
