// include/rlx/settings.hpp -- process-wide settings and counters: the default backend, threads,
// the extent policy, the executable cache's counters, the disk cache and debug dumps. Light (no
// IR) so Tensor code can set them; compiling graphs is rlx/runtime.hpp.
#pragma once

#include "rlx/enum.hpp"

#include <cstdint>
#include <string>

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
  int64_t kernels_recompiled{};  ///< hot kernels compiled again by the full code generator
                                 ///< (the second tier; jit.md, "Tiers")
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
