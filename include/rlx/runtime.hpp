// include/rlx/runtime.hpp -- backends, the compiled-executable cache and its counters.
#pragma once

#include "rlx/enum.hpp"
#include "rlx/interp.hpp"
#include "rlx/ir/graph.hpp"

#include <cstdint>
#include <memory>
#include <span>
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

/// A graph compiled for one shape binding on one backend; immutable and safe to share.
class Executable {
public:
  virtual ~Executable() = default;
  /// Run on the leaves in graph order: every Input and Param node, as they appear in the graph.
  virtual std::vector<interp::Buffer> run(std::span<const interp::Buffer* const> leaves) const = 0;
  /// The graph that was compiled (static shapes).
  virtual const ir::Graph& graph() const = 0;
  virtual Backend backend() const = 0;
};

/// Compile a static-shaped graph (an rlx::Error for dynamic dims or a backend this build lacks).
/// The process-wide cache is consulted first: the key is the graph's canonical text and the
/// backend; `hit` (when given) tells whether it was found there.
std::shared_ptr<const Executable> compile(const ir::Graph& graph, Backend backend,
                                          bool* hit = nullptr);

struct CacheStats {
  int64_t compiles = 0; ///< executables built
  int64_t hits = 0;     ///< lookups served from the cache
  int64_t entries = 0;  ///< executables held now
  double compile_ms = 0;
};
CacheStats cache_stats();
/// Drop every cached executable (those still referenced stay alive with their users).
void clear_cache();

} // namespace rlx
