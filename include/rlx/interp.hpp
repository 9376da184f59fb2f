// include/rlx/interp.hpp -- the reference interpreter: rlx's executable specification.
#pragma once

#include "rlx/ir/graph.hpp"
#include "rlx/memory.hpp"

#include <complex>
#include <cstddef>
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

namespace rlx::interp {

/// An owned, contiguous (row-major) tensor of any dtype.
class Buffer {
public:
  Buffer() = default;
  /// Zero-filled; the shape must be static.
  explicit Buffer(ir::Shape shape);
  /// With unspecified contents (for results a kernel overwrites entirely).
  static Buffer uninitialized(ir::Shape shape);

  /// Values converted to `shape`'s dtype (floats round to nearest, ints saturate, bool = x != 0).
  static Buffer from_f64(ir::Shape shape, std::span<const double> values);
  static Buffer from_i64(ir::Shape shape, std::span<const int64_t> values);
  /// Shorthands for the common cases: f32 and i64 buffers from values.
  static Buffer f32(std::vector<int64_t> dims, std::span<const float> values);
  static Buffer i64(std::vector<int64_t> dims, std::span<const int64_t> values);

  const ir::Shape& shape() const { return shape_; }
  ir::DType dtype() const { return shape_.dtype(); }
  int64_t numel() const { return numel_; }
  std::span<std::byte> bytes() { return bytes_; }
  std::span<const std::byte> bytes() const { return bytes_; }

  /// Element i as a double (C64: the real part) or int64 (floats truncate toward zero).
  double get_f64(int64_t i) const;
  int64_t get_i64(int64_t i) const;
  /// Store v converted to the dtype (see from_f64).
  void set_f64(int64_t i, double v);
  void set_i64(int64_t i, int64_t v);
  std::complex<float> get_c64(int64_t i) const;
  void set_c64(int64_t i, std::complex<float> v);

  std::vector<double> to_f64() const;
  std::vector<int64_t> to_i64() const;
  std::vector<float> to_f32() const;

  friend bool operator==(const Buffer&, const Buffer&) = default;

private:
  ir::Shape shape_;
  int64_t numel_ = 0;
  Storage bytes_; ///< pooled (rlx/memory.hpp)
};

/// Named runtime tensors: graph inputs or parameters.
using Feed = std::map<std::string, Buffer, std::less<>>;

/// Run a static-shaped graph. Every Input and Param must be fed with its exact shape and dtype;
/// otherwise rlx::Error (ErrorKind::Runtime) names the missing or mismatched tensor. Returns one
/// buffer per graph output. Graphs with dynamic dims must be bound first (Graph::bind).
std::vector<Buffer> run(const ir::Graph& g, const Feed& inputs, const Feed& params = {});

/// Like run, without copying the feeds: `leaves` holds one buffer per Input and Param node, in
/// graph order. Intermediate values are freed after their last use. A kernel's rlx::Error is
/// rethrown with the node's op and the source line that built it.
std::vector<Buffer> run_leaves(const ir::Graph& g, std::span<const Buffer* const> leaves);

/// Run a LIR module (rlx/ir/lir.hpp) through its buffer plan: one arena, poisoned first, each
/// value written to its slot, views read from their roots; the leaves as run_leaves takes them.
/// Results equal run_leaves' exactly when the plan is sound, which is what tests check.
std::vector<Buffer> run_planned(const ir::LirModule& lir, std::span<const Buffer* const> leaves);

/// The leaves as run_leaves takes them, checked against the graph (count, shapes, dtypes):
/// one pointer per node id, set for Input and Param nodes, null elsewhere. rlx::Error
/// (ErrorKind::Runtime) names a missing or mismatched leaf.
std::vector<const Buffer*> feed_leaves(const ir::Graph& g, std::span<const Buffer* const> leaves);

/// eval_node whose rlx::Error also names the node and the source line that built it (what the
/// backends call while running a graph).
Buffer eval_node_of_graph(const ir::Node& node, std::span<const Buffer* const> operands);

/// Evaluate one node on operand buffers (what constant folding calls).
Buffer eval_node(const ir::Node& node, std::span<const Buffer* const> operands);

} // namespace rlx::interp
