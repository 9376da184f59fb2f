// src/passes/pipeline.cpp -- the compile pipeline: the passes in order, with dumps and timings.
#include "rlx/passes.hpp"

#include "rlx/ir/text.hpp"
#include "rlx/ir/verify.hpp"

#include <chrono>
#include <cstdlib>
#include <iomanip>
#include <iostream>
#include <sstream>
#include <string>

namespace rlx::passes {
namespace {

/// opts with the items of RLX_DEBUG (a comma-separated list) turned on.
PipelineOptions with_environment(PipelineOptions opts) {
  const char* env = std::getenv("RLX_DEBUG");
  if (env == nullptr) return opts;
  std::string_view rest = env;
  while (!rest.empty()) {
    std::size_t comma = rest.find(',');
    std::string_view item = rest.substr(0, comma);
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    if (item == "passes")
      opts.dump_changed = true;
    else if (item == "pass-times")
      opts.time_passes = true;
    else if (!item.empty())
      fail(ErrorKind::Value, "RLX_DEBUG=", env, ": unknown item '", item,
           "'; expected a comma-separated subset of passes,pass-times");
  }
  return opts;
}

/// Runs passes on one graph: verifies, times, dumps and records each run as the options say.
class PassRunner {
public:
  PassRunner(ir::Graph& g, const PipelineOptions& opts)
      : g_(g), opts_(with_environment(opts)), log_(opts_.log ? *opts_.log : std::cerr) {
    if (opts_.verify_each) ir::verify(g_); // a bad input graph is the caller's error
  }

  void operator()(PassFn pass) {
    const PassInfo* info = nullptr;
    for (const PassInfo& p : kPasses)
      if (p.run == pass) info = &p;
    RLX_CHECK(info != nullptr, "the pipeline runs a pass that is not in the catalogue");
    auto t0 = std::chrono::steady_clock::now();
    bool changed = pass(g_, opts_.passes);
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    runs_.push_back(PassRun{info->name, changed, seconds, g_.len()});
    if (opts_.verify_each) check(info->name);
    if (opts_.time_passes) { // formatted apart, so the log stream's flags stay as they were
      std::ostringstream line;
      line << "rlx pass " << std::left << std::setw(20) << info->name << std::right << std::fixed
           << std::setprecision(3) << std::setw(9) << seconds * 1e3 << " ms  " << g_.len()
           << " nodes" << (changed ? "" : "  (unchanged)") << "\n";
      log_ << line.str();
    }
    if (opts_.dump_changed && changed) log_ << "// after " << info->name << "\n" << ir::to_text(g_);
  }

  std::vector<PassRun> report() { return std::move(runs_); }

private:
  /// A pass that breaks the graph is a bug in rlx.
  void check(std::string_view pass) {
    std::vector<std::string> problems = ir::verify_all(g_);
    RLX_CHECK(problems.empty(), "pass ", pass, " left graph @", g_.name,
              " invalid: ", problems.front());
  }

  ir::Graph& g_;
  PipelineOptions opts_;
  std::ostream& log_;
  std::vector<PassRun> runs_;
};

} // namespace

const PassInfo* find_pass(std::string_view name) {
  for (const PassInfo& p : kPasses)
    if (p.name == name) return &p;
  return nullptr;
}

std::vector<PassRun> compile_pipeline(ir::Graph& g, const PipelineOptions& opts) {
  PassRunner run(g, opts);
  // Before all: rlx::dist::shard's annotations get their collectives. Not an optimization but
  // what the annotation means, so always run (nothing happens without one).
  run(shard_propagate);
  // First: user-defined sub-graphs become ordinary nodes every later pass (and the JIT's
  // fusion) sees through.
  run(inline_custom_fn);
  // Weights given as values become constants, so that their math folds below.
  run(param_specialize);
  // Off by default: every backend runs every composite op.
  if (opts.decompose) run(decompose);
  run(constant_fold);
  // After folding, which makes the constants the identities look for.
  run(algebraic_simplify);
  // After simplifying, which makes more nodes alike.
  run(cse);
  // Before the fusions, so a product it makes is a product like any other.
  if (opts.conv_as_matmul) run(conv_as_matmul);
  // Fusion on the smallest graph, each as PipelineOptions::fuse says (FuseOptions: which are on
  // by default and why). Products of one input first, so that a SwiGLU's two projections become
  // one product whose halves fuse_swiglu finds.
  if (opts.fuse.shared_matmul) run(fuse_shared_matmul);
  if (opts.fuse.swiglu) run(fuse_swiglu);
  if (opts.fuse.matmul_bias_act) run(fuse_matmul_bias_act);
  // After the bias fusion: a residual add of its result still fuses into the norm after it.
  if (opts.fuse.residual_norm) run(fuse_residual_norm);
  // Last: the passes above leave the nodes they bypass.
  run(dce);
  return run.report();
}

} // namespace rlx::passes
