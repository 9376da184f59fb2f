// include/rlx/passes.hpp -- the optimizer's passes, one line each (the table of contents), and
// the compile pipeline that runs them in order.
#pragma once

#include "rlx/interp.hpp"
#include "rlx/ir/graph.hpp"

#include <cstddef>
#include <cstdint>
#include <ostream>
#include <span>
#include <string_view>
#include <vector>

namespace rlx::passes {

/// What some passes need to know; one struct for all, so every pass has the same signature.
struct PassOptions {};

// Every pass takes the graph by reference, rewrites it in place (ids are renumbered densely when
// nodes go) and returns whether it changed anything. Each states what it assumes, what it
// guarantees and what it leaves to other passes. All of them assume a verified graph and leave a
// verified graph whose outputs compute the same values (as the interpreter computes them; the
// exceptions are named). Unchanged nodes keep their labels and source locations.

/// Rewrite every composite op (softmax, norms, attention, rope, fused matmul/SwiGLU, transposed
/// convolutions) into primitive ops. Guarantees: only primitive ops are left; values agree with
/// the composite kernels within rounding (not bit for bit). Does not remove dead code.
bool decompose(ir::Graph& g, const PassOptions& opts = {});

/// Whether `decompose` has a rule for the kind (every composite op must have one).
bool has_decomposition(ir::OpKind kind);

// ---- The catalogue: every pass, in pipeline order.

using PassFn = bool (*)(ir::Graph& g, const PassOptions& opts);

struct PassInfo {
  std::string_view name;    ///< as in RLX_DEBUG output, tests/passes/<name>/, and find_pass
  std::string_view summary; ///< one line
  PassFn run;
};

inline constexpr PassInfo kPasses[] = {
    {"decompose", "rewrite composite ops (softmax, norms, attention, ...) into primitives",
     &decompose},
};

/// The catalogue entry of a pass; nullptr when there is none of that name.
const PassInfo* find_pass(std::string_view name);

// ---- The compile pipeline

struct PipelineOptions {
  PassOptions passes;
  /// Run decompose. Off by default: every backend has a kernel for every composite op, and the
  /// JIT's row kernels are faster than the decomposed forms.
  bool decompose = false;
  /// ir::verify before the first pass (an rlx::Error for a bad input graph) and after each one
  /// (an InternalError naming the pass that broke the graph). Tests turn it on.
  bool verify_each = false;
  /// Print the graph's text IR after each pass that changed it (also: RLX_DEBUG=passes).
  bool dump_changed = false;
  /// Print one line per pass with its time and node count (also: RLX_DEBUG=pass-times).
  bool time_passes = false;
  /// Where dumps and times go; nullptr means std::cerr.
  std::ostream* log = nullptr;
};

/// What one pass did in a pipeline run.
struct PassRun {
  std::string_view name;
  bool changed = false;
  double seconds = 0;
  std::size_t nodes = 0; ///< after the pass
};

/// The compile pipeline (src/passes/pipeline.cpp lists the passes in order): [decompose]. Rewrites
/// g in place; returns one entry per pass run. RLX_DEBUG (a comma-separated list) adds `passes`
/// (dump_changed) and `pass-times` (time_passes) to the options; another item is an rlx::Error.
std::vector<PassRun> compile_pipeline(ir::Graph& g, const PipelineOptions& opts = {});

} // namespace rlx::passes
