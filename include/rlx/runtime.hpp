// include/rlx/runtime.hpp -- compiling graphs: executables, their cache, symbolic graphs and
// plans (the process-wide settings and counters are in rlx/settings.hpp).
#pragma once

#include "rlx/buffer.hpp"
#include "rlx/error.hpp"
#include "rlx/ir/graph.hpp"
#include "rlx/ir/lir.hpp"
#include "rlx/settings.hpp"

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace rlx {

class BoundCall;

/// A graph compiled for one shape binding on one backend; immutable and safe to share.
class Executable : public std::enable_shared_from_this<Executable> {
public:
  virtual ~Executable() = default;
  /// Run on the leaves in graph order: every Input and Param node, as they appear in the graph.
  virtual std::vector<Buffer> run(std::span<const Buffer* const> leaves) const = 0;

  /// Run on the leaves (as run) writing output j into *outputs[j], memory the caller owns: a
  /// Buffer of exactly that output's shape and dtype (Buffer::uninitialized(shape), or
  /// Buffer::external over the caller's own bytes). Nothing is allocated for the results, and
  /// the kernels write straight into the outputs where the plan allows. Checked on every call:
  /// the number of leaves and outputs, each one's shape and dtype, and that no output shares
  /// bytes with a leaf or another output (an output written while a later step still reads the
  /// leaf would corrupt it); a failed check is an rlx::Error (ErrorKind::Runtime) naming the
  /// function, the buffer, both shapes and the caller's line. Thread-safe as run is.
  void run_into(std::span<const Buffer* const> leaves, std::span<Buffer* const> outputs,
                Loc loc = Loc::current()) const;
  void run_into(std::initializer_list<const Buffer*> leaves, std::initializer_list<Buffer*> outputs,
                Loc loc = Loc::current()) const {
    run_into(std::span(leaves.begin(), leaves.size()), std::span(outputs.begin(), outputs.size()),
             loc);
  }
  /// The call run_into(leaves, outputs) would make, checked once, here, and prepared once: the
  /// call's arena and every kernel's arguments are worked out now, so BoundCall::run() goes
  /// straight into the kernels, allocating and checking nothing (what a JIT's user expects of
  /// a dispatched kernel: libxsmm's function pointer, XLA's executable on pre-allocated
  /// buffers). The caller keeps every bound Buffer alive and in place while the call is used
  /// (no assigning to it, moving from it or destroying it); writing their elements between
  /// runs is what the call is for. The bound call keeps the executable alive (as compile and
  /// specialize return it: in a shared_ptr).
  std::unique_ptr<BoundCall> bind(std::span<const Buffer* const> leaves,
                                  std::span<Buffer* const> outputs, Loc loc = Loc::current()) const;
  std::unique_ptr<BoundCall> bind(std::initializer_list<const Buffer*> leaves,
                                  std::initializer_list<Buffer*> outputs,
                                  Loc loc = Loc::current()) const {
    return bind(std::span(leaves.begin(), leaves.size()),
                std::span(outputs.begin(), outputs.size()), loc);
  }

  /// The graph that was compiled (static shapes).
  virtual const ir::Graph& graph() const = 0;
  virtual Backend backend() const = 0;
  /// What the backend made of the graph, for people: the JIT's plan (its kernels with their
  /// nodes, then the steps, as RLX_DUMP=lir writes it); the interpreter's one line.
  virtual std::string describe() const;

protected:
  /// run_into once its arguments are checked. The default runs run() and copies the results.
  virtual void run_into_checked(std::span<const Buffer* const> leaves,
                                std::span<Buffer* const> outputs) const;
  /// bind once its arguments are checked. The default's run() is run_into_checked.
  virtual std::unique_ptr<BoundCall> bind_checked(std::span<const Buffer* const> leaves,
                                                  std::span<Buffer* const> outputs) const;
};

/// A call of an executable on fixed leaves and outputs (Executable::bind): run() computes the
/// outputs from the leaves' current elements. Not thread-safe: one bound call per thread (each
/// has its own arena); several bound calls of one executable may run at once.
class BoundCall {
public:
  explicit BoundCall(std::shared_ptr<const Executable> keep) : keep_(std::move(keep)) {}
  virtual ~BoundCall() = default;
  BoundCall(const BoundCall&) = delete;
  BoundCall& operator=(const BoundCall&) = delete;
  virtual void run() = 0;

private:
  std::shared_ptr<const Executable> keep_; ///< null when the executable is not in a shared_ptr
};

/// Compile a static-shaped graph (an rlx::Error for dynamic dims or a backend this build lacks).
/// The process-wide cache is consulted first: the key is the graph's canonical text and the
/// backend; `hit` (when given) tells whether it was found there.
std::shared_ptr<const Executable> compile(const ir::Graph& graph, Backend backend,
                                          bool* hit = nullptr);

/// A graph with dynamic dims, compiled for each binding of its symbols (rlx::jit's entries):
/// specialize(binding) returns the executable of graph.bind(binding). The first binding is
/// compiled as compile() does. At the second, the graph itself (symbolic) is verified and
/// optimized once; when that optimized graph, bound to the first binding, is the graph the
/// first compile optimized (the pipeline decided nothing from the sizes), this and every later
/// binding binds the optimized graph and only plans it and prepares its steps: no verify, no pass,
/// no cache key (CacheStats::respecialized). Otherwise (a pass used static sizes, say a convolution
/// lowered to a product) each binding is compiled as compile() does. Element-wise kernels of
/// ExtentPolicy::Generic are still found by their code among the loaded ones, so the LLVM IR of
/// each kernel is emitted per binding; machine code is not made again. Thread-safe; executables are
/// not put in the process cache (the caller keeps them).
class SymbolicExecutable {
public:
  SymbolicExecutable(const ir::Graph& graph, Backend backend);
  ~SymbolicExecutable();
  SymbolicExecutable(const SymbolicExecutable&) = delete;
  SymbolicExecutable& operator=(const SymbolicExecutable&) = delete;

  /// The executable of graph().bind(binding) (an rlx::Error when the binding leaves a symbol
  /// unbound or makes shapes disagree).
  std::shared_ptr<const Executable> specialize(const ir::DimBinding& binding) const;
  /// The symbolic graph as given.
  const ir::Graph& graph() const;
  Backend backend() const;
  /// Whether specialize reuses the optimized symbolic graph (decided at the second binding).
  bool reuses_pipeline() const;

private:
  struct State;
  std::unique_ptr<State> state_;
};
/// A SymbolicExecutable of `graph` on `backend` (an rlx::Error for a backend this build lacks).
std::shared_ptr<const SymbolicExecutable> compile_symbolic(const ir::Graph& graph, Backend backend);

/// How `backend` plans a graph (its step policy and where outputs live), for ir::plan_lir.
ir::PlanOptions plan_options(Backend backend);
/// The plan `backend` runs a static graph by: the compile pipeline compile() runs, then the
/// graph's steps and memory by the backend's policy (what `rlx check --lir` prints). An
/// rlx::Error for dynamic dims.
ir::LirModule plan_for(const ir::Graph& graph, Backend backend);

/// Run `exe` on its leaves, as Tensor materialization and rlx::jit calls do: counted in
/// cache_stats() (runs, run_ms) and remembered as last_run().
std::vector<Buffer> run_executable(const std::shared_ptr<const Executable>& exe,
                                   std::span<const Buffer* const> leaves);
/// The executable most recently run by run_executable in this process (the last materialized
/// graph: its graph() and describe()); null before the first and after clear_cache(). It keeps
/// that executable's compiled code loaded.
std::shared_ptr<const Executable> last_run();

} // namespace rlx
