// src/runtime/backend.hpp -- what the runtime asks of a compiling backend, and the registry
// backends join as their library loads (the JIT: jit/backend.cpp), so the runtime calls no
// backend's functions by name.
#pragma once

#include "rlx/passes.hpp"
#include "rlx/runtime.hpp"

#include <memory>

namespace rlx::runtime {

class CompilingBackend {
public:
  virtual ~CompilingBackend() = default;
  virtual Backend kind() const = 0;
  /// The compile pipeline's options in front of this backend.
  virtual passes::PipelineOptions pipeline_options() const = 0;
  /// How this backend plans (its step policy, where outputs live).
  virtual ir::PlanOptions plan_options() const = 0;
  /// An executable of a plan made with plan_options(); rlx::Error (ErrorKind::Runtime) when
  /// code generation fails.
  virtual std::shared_ptr<const Executable> compile(ir::LirModule lir) const = 0;
  /// Its counters into `stats` (CacheStats' kernel and disk counters).
  virtual void add_stats(CacheStats& stats) const = 0;
};

/// An rlx::Error (ErrorKind::Unsupported) naming `what` when this build lacks `backend`.
void check_available(Backend backend, const char* what);
/// The graph verified, then optimized by the compile pipeline in front of `backend` (counted in
/// CacheStats::pipelines).
ir::Graph optimize(const ir::Graph& graph, Backend backend);
/// The executable of a static graph optimize() made: planned and prepared by `backend`.
std::shared_ptr<const Executable> build_optimized(ir::Graph opt, Backend backend);
/// One more executable made by SymbolicExecutable::specialize's reuse (CacheStats::respecialized).
void count_respecialized();

/// Make `backend` (an object that lives as long as the process) the one of its kind; returns
/// true, so that a backend registers itself in a namespace-scope initializer.
bool register_backend(const CompilingBackend& backend);
/// The registered backend of that kind, or nullptr (not built in).
const CompilingBackend* find_backend(Backend kind);

} // namespace rlx::runtime
