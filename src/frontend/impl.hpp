// src/frontend/impl.hpp -- the node behind Tensor handles, recording, tracing state, to_graph,
// materialization and the locks a host's abandoned frames can release.
#pragma once

#include "frontend/small_vec.hpp"
#include "rlx/apply.hpp"
#include "rlx/jit.hpp"
#include "rlx/runtime.hpp"
#include "rlx/tensor.hpp"

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace rlx::detail {

/// One value of the lazy expression DAG. Either computed (`buffer` set; then `op` and `inputs`
/// are dropped so the DAG behind it can be freed) or pending (`op` applied to `inputs`).
/// shape, loc and trace never change; buffer/op/inputs change only under eval_mutex().
struct TensorImpl {
  ir::Shape shape;
  std::shared_ptr<const Buffer> buffer;
  std::optional<ir::Op> op;
  std::vector<std::shared_ptr<TensorImpl>> inputs;
  Loc loc;
  /// Nonzero: a value of the jit trace with this id (its data is unknown while tracing).
  uint64_t trace = 0;
  /// For a trace's placeholder: the argument index; -1 otherwise.
  int32_t arg = -1;
  /// Upper bound of the pending nodes up to here (shared nodes counted more than once).
  uint64_t pending = 0;

  TensorImpl() = default;
  /// Releases the inputs without recursion: a chain of 100k pending ops is freed in a loop, not
  /// 100k nested destructor calls (src/frontend/record.cpp).
  ~TensorImpl();
  TensorImpl(const TensorImpl&) = delete;
  TensorImpl& operator=(const TensorImpl&) = delete;
};

/// A mutex that rlx::frames_abandoned() can release. Each thread keeps a list of the FrameMutexes
/// it holds, so when a host longjmps out of frames that held one (a jitted function being traced,
/// a materialization), the thread unlocks it instead of hanging the next caller
/// (src/frontend/host.cpp).
class FrameMutex {
public:
  /// An InternalError when the calling thread holds it already (it would wait for itself).
  void lock();
  void unlock();
  /// Whether the calling thread holds it.
  bool held_by_this_thread() const;

private:
  friend void release_abandoned_locks() noexcept;
  std::mutex mu_;
  std::atomic<const void*> owner_{nullptr};
  FrameMutex* held_before_ = nullptr; ///< the thread's previous held lock (while held)
};
/// Unlock every FrameMutex the calling thread holds (its frames were abandoned).
void release_abandoned_locks() noexcept;

/// Guards the mutable fields of every TensorImpl (materialization publishes under it).
FrameMutex& eval_mutex();

std::shared_ptr<TensorImpl> make_computed(Buffer buffer, Loc loc = Loc::current());

// ---- Recording (src/frontend/record.cpp)

/// The NodeSink behind rlx::apply: the operands are nodes 0..n-1, and every node a Graph
/// builder appends becomes a pending TensorImpl at once (each node is made once; no scratch
/// graph is built and copied). Values built from traced operands join the innermost trace.
class Recorder final : public ir::NodeSink {
public:
  /// Checks the operands: defined, and not traced by a trace that has ended.
  Recorder(std::span<const Tensor> operands, const Loc& loc);
  std::size_t len() const override { return operands_.size() + made_.size(); }
  const ir::Shape& shape(ir::NodeId id) const override { return impl_at(id)->shape; }
  ir::NodeId append(ir::Op op, std::vector<ir::NodeId> inputs, ir::Shape shape,
                    const Loc& loc) override;
  void truncate(std::size_t len) override;
  /// The tensors of nodes `ids`. Outside traces, those whose pending graph grew past
  /// kAutoEvalNodes are computed now (in one graph).
  std::vector<Tensor> results(std::span<const ir::NodeId> ids);
  Tensor result(ir::NodeId id);

private:
  const std::shared_ptr<TensorImpl>& impl_at(ir::NodeId id) const {
    return id.index < operands_.size() ? operands_[id.index].impl()
                                       : made_[id.index - operands_.size()];
  }
  std::span<const Tensor> operands_;
  Loc loc_;
  uint64_t trace_ = 0;
  SmallVec<std::shared_ptr<TensorImpl>, 4> made_;
};

/// Pending graphs larger than this are evaluated as soon as they are recorded (outside traces).
inline constexpr uint64_t kAutoEvalNodes = 8192;

// ---- to_graph: the values reachable from some roots as one graph (src/frontend/to_graph.cpp)

/// How to_graph treats the values it does not expand into their ops, and what it outputs.
struct GraphPolicy {
  std::string name;
  /// A trace's placeholders: Inputs "arg<i>" in order, ahead of every other node.
  std::span<const Tensor> args{};
  /// Nonzero: a value traced by another trace is an error (it escaped that trace).
  uint64_t trace = 0;
  /// Computed values are Params "c<j>" (a trace's captures) instead of Inputs "in<j>" (eval).
  bool computed_as_params = false;
  /// Values of an enclosing trace that is still recording (a transform's function captured
  /// them) are Params "c<j>" too, with ExtractedGraph::outer holding them; otherwise an error.
  bool outer_as_leaves = false;
  /// Outputs: the pending roots (each once) plus the pending values that handles outside the
  /// graph still hold, so shared work is computed once (eval). Otherwise: every root, in order.
  bool share_pending = false;
};

struct ExtractedGraph {
  ir::Graph graph;
  /// The computed values' buffers, in the order of their Input / Param nodes.
  std::vector<std::shared_ptr<const Buffer>> leaves;
  /// With outer_as_leaves: per leaf, the enclosing trace's value (leaves[j] is then null).
  std::vector<std::shared_ptr<TensorImpl>> outer;
  /// With share_pending: the values of graph.outputs.
  std::vector<std::shared_ptr<TensorImpl>> outputs;
};

/// The graph of the values reachable from `roots`, in a deterministic depth-first order (the
/// same program gives the same canonical text, the compile cache's key). Caller holds
/// eval_mutex().
ExtractedGraph to_graph(std::span<const std::shared_ptr<TensorImpl>> roots,
                        const GraphPolicy& policy);

/// Compute the pending roots in one graph (already computed roots are skipped). Untraced only.
void materialize(std::span<const std::shared_ptr<TensorImpl>> roots, const Loc& loc);

// ---- Tracing (per thread; src/frontend/trace.cpp)
/// Whether trace `id` is being recorded on this thread.
bool trace_active(uint64_t id);
/// Whether any trace is being recorded on this thread.
bool in_trace();
/// Forget every trace of this thread (its frames were abandoned).
void clear_traces() noexcept;
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

/// Run `body` on placeholders of `shapes` in a fresh trace and return the graph of its outputs:
/// Inputs "arg<i>" are the placeholders in order, Params "c<j>" the computed tensors the
/// function captured (their buffers are the leaves). `what` names the caller in errors.
/// `capture_outer`: values of enclosing traces the function uses become leaves
/// (ExtractedGraph::outer) rather than an error (the transforms, which record their result into the
/// enclosing trace).
ExtractedGraph trace_graph(std::span<const Shape> shapes, const TraceBody& body, std::string name,
                           std::string_view what, const Loc& loc, bool capture_outer = false);

/// The error for reading a traced tensor's data on the host (`what` is item, to_vector...).
[[noreturn]] void fail_traced_read(const Tensor& t, std::string_view what, const Loc& loc);

/// Throws rlx::Error naming `what` when t is an undefined handle.
void check_defined(const Tensor& t, std::string_view what, const Loc& loc);

} // namespace rlx::detail
