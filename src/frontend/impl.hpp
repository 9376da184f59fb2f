// src/frontend/impl.hpp -- the node behind Tensor handles, tracing state, materialization.
#pragma once

#include "rlx/tensor.hpp"

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

namespace rlx::detail {

/// One value of the lazy expression DAG. Either computed (`buffer` set; then `op` and `inputs`
/// are dropped so the DAG behind it can be freed) or pending (`op` applied to `inputs`).
/// shape, loc and trace never change; buffer/op/inputs change only under eval_mutex().
struct TensorImpl {
  ir::Shape shape;
  std::shared_ptr<const interp::Buffer> buffer;
  std::optional<ir::Op> op;
  std::vector<std::shared_ptr<TensorImpl>> inputs;
  Loc loc;
  /// Nonzero: a value of the jit trace with this id (its data is unknown while tracing).
  uint64_t trace = 0;
  /// For a trace's placeholder: the argument index; -1 otherwise.
  int32_t arg = -1;
  /// Upper bound of the pending nodes up to here (shared nodes counted more than once).
  uint64_t pending = 0;
};

/// Guards the mutable fields of every TensorImpl (materialization publishes under it).
std::mutex& eval_mutex();

std::shared_ptr<TensorImpl> make_computed(interp::Buffer buffer, Loc loc = Loc::current());

/// Compute the pending roots in one graph (already computed roots are skipped). Untraced only.
void materialize(std::span<const std::shared_ptr<TensorImpl>> roots, const Loc& loc);

/// Pending graphs larger than this are evaluated as soon as they are recorded (outside traces).
inline constexpr uint64_t kAutoEvalNodes = 8192;

// ---- Tracing state (per thread)
/// Whether trace `id` is being recorded on this thread.
bool trace_active(uint64_t id);
/// The innermost trace on this thread (0 when none).
uint64_t current_trace();
/// Push a fresh trace id for the scope's lifetime.
class TraceScope {
public:
  TraceScope();
  ~TraceScope();
  TraceScope(const TraceScope&) = delete;
  TraceScope& operator=(const TraceScope&) = delete;
  uint64_t id() const { return id_; }

private:
  uint64_t id_;
};

/// A traced function as a graph: Inputs "arg<i>" are the placeholders in order, Params "c<j>"
/// the computed tensors the function captured (their buffers, in graph order).
struct TracedGraph {
  ir::Graph graph;
  std::vector<std::shared_ptr<const interp::Buffer>> captured;
};
/// Record the graph of `outs`, values of trace `trace` over `placeholders` (src/frontend/jit.cpp).
TracedGraph extract_trace(const std::vector<Tensor>& placeholders, const std::vector<Tensor>& outs,
                          uint64_t trace, const std::string& name);
/// Placeholder tensors of trace `trace`: Input "arg<i>" of shapes[i].
std::vector<Tensor> make_placeholders(std::span<const Shape> shapes, uint64_t trace);

/// The error for reading a traced tensor's data on the host (`what` is item, to_vector...).
[[noreturn]] void fail_traced_read(const Tensor& t, std::string_view what, const Loc& loc);

/// Throws rlx::Error naming `what` when t is an undefined handle.
void check_defined(const Tensor& t, std::string_view what, const Loc& loc);

} // namespace rlx::detail
