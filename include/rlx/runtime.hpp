// include/rlx/runtime.hpp -- backends, the compiled-executable cache and its counters.
#pragma once

#include "rlx/buffer.hpp"
#include "rlx/enum.hpp"
#include "rlx/ir/graph.hpp"
#include "rlx/ir/lir.hpp"

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace rlx {

/// Where graphs run: the reference interpreter, or native code from the LLVM ORC JIT.
RLX_ENUM(Backend, Interp, Jit)

/// The backend used by Tensor materialization, rlx::jit and `rlx run` unless told otherwise.
/// Starts as RLX_BACKEND from the environment (interp|jit) when set, else Jit.
Backend default_backend();
void set_default_backend(Backend backend);
/// Whether this build can run graphs on `backend`.
bool backend_available(Backend backend);

/// Threads that compiled kernels use: one pool for the process. Starts as RLX_NUM_THREADS when
/// set, else the number of physical cores; set_num_threads(n) changes it (1 <= n <= 1024).
int num_threads();
void set_num_threads(int n);

/// How the JIT's element-wise kernels treat the sizes of a binding (runtime extents).
/// Generic: a kernel whose operands all run its iteration space as one flat row (the same
/// shape, or one element; no broadcasting along it) takes its length at run time, so one
/// machine code serves every size of a dynamic dimension (each new binding still plans its
/// graph and then finds the kernel among the loaded code: CacheStats::kernel_memory_hits).
/// Specialize: every kernel is compiled for the binding's sizes, as constants in the code (each
/// new size compiles). Kernels that broadcast are always specialized. Starts as RLX_EXTENTS
/// (generic|specialize) when set, else Generic; executables are cached per policy.
RLX_ENUM(ExtentPolicy, Generic, Specialize)
ExtentPolicy extent_policy();
void set_extent_policy(ExtentPolicy policy);

/// A graph compiled for one shape binding on one backend; immutable and safe to share.
class Executable {
public:
  virtual ~Executable() = default;
  /// Run on the leaves in graph order: every Input and Param node, as they appear in the graph.
  virtual std::vector<Buffer> run(std::span<const Buffer* const> leaves) const = 0;
  /// The graph that was compiled (static shapes).
  virtual const ir::Graph& graph() const = 0;
  virtual Backend backend() const = 0;
  /// What the backend made of the graph, for people: the JIT's plan (its kernels with their
  /// nodes, then the steps, as RLX_DUMP=lir writes it); the interpreter's one line.
  virtual std::string describe() const;
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

struct CacheStats {
  int64_t compiles = 0; ///< executables built
  int64_t hits = 0;     ///< lookups served from the cache
  int64_t entries = 0;  ///< executables held now
  double compile_ms = 0;
  int64_t pipelines = 0;     ///< graphs verified and optimized by the compile pipeline
  int64_t respecialized = 0; ///< executables a SymbolicExecutable made by its reuse (no pipeline)
  int64_t runs = 0; ///< executables run by run_executable (materializations, rlx::jit calls)
  double run_ms = 0;
  // The JIT's native kernels (one per fused region), counted for the whole process:
  int64_t kernels_compiled{};   ///< optimized and compiled to machine code
  int64_t kernel_memory_hits{}; ///< already loaded in this process (the code is shared)
  int64_t kernels_reused{};     ///< not even lowered again: a kernel with the same emission key
                                ///< (everything its code depends on) is loaded (see jit.md)
  int64_t disk_hits{};          ///< loaded from the disk cache: nothing compiled
  int64_t disk_misses{};        ///< not on disk (compiled, then written there)
  int64_t disk_rejected{};      ///< entries found corrupt, truncated or foreign (recompiled)
  int64_t disk_write_errors{};  ///< entries that could not be written (the cache is optional)
  // Element-wise kernels lowered, by how their extents were treated (see ExtentPolicy):
  int64_t kernels_generic{};     ///< the length is a run-time argument (any size)
  int64_t kernels_specialized{}; ///< compiled for the binding's sizes
};
CacheStats cache_stats();
/// Drop every cached executable and last_run() (those still referenced stay alive with their
/// users). The disk cache is kept.
void clear_cache();

/// The directory where compiled kernels are kept as object code, so another process running the
/// same program compiles nothing; "" when the disk cache is off. Starts as RLX_CACHE_DIR when set
/// (`off` disables it), else $XDG_CACHE_HOME/rlx, else $HOME/.cache/rlx. Entries live in a
/// subdirectory named after the rlx version, one file per kernel, keyed by a digest of its code,
/// the target CPU and features, and the rlx and LLVM versions; they are written atomically, and a
/// corrupt, truncated or foreign entry is recompiled, never loaded.
std::string disk_cache_dir();
/// Use another directory from the next compile on; "" or "off" turns the disk cache off.
void set_disk_cache_dir(const std::string& dir);

/// What the JIT reports while compiling. Starts from the environment: RLX_LOG=compile,
/// RLX_DUMP=graph,lir,llvm,asm (any subset) and RLX_DUMP_DIR.
struct DebugOptions {
  bool log_compile{};     ///< one line per kernel on stderr: name, ops, origin, milliseconds
  std::string dump{};     ///< comma-separated subset of graph,lir,llvm,asm; files per compile
  std::string dump_dir{}; ///< where dumps go ("" means rlx_dump in the current directory)
};
DebugOptions debug_options();
/// An rlx::Error (ErrorKind::Value) for a dump item other than graph, lir, llvm and asm.
void set_debug_options(const DebugOptions& options);

} // namespace rlx
