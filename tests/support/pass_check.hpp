// tests/support/pass_check.hpp -- running a pass under test and checking what it did: the graph
// stays valid, `changed` tells the truth, a second run changes nothing, and the interpreter
// computes the same outputs before and after.
#pragma once

#include "compare.hpp"

#include <rlx/all.hpp>

#include <initializer_list>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace rlx::test {

/// The Input and Param buffers of a graph, by name (what interp::run takes).
struct Feeds {
  interp::Feed inputs, params;
};

/// `leaves` (one per Input and Param of g, in graph order) by name.
inline Feeds feeds_by_name(const ir::Graph& g, const std::vector<Buffer>& leaves) {
  Feeds f;
  std::size_t i = 0;
  for (const ir::Node& n : g.nodes()) {
    ir::OpKind k = n.op.kind();
    if (k != ir::OpKind::Input && k != ir::OpKind::Param) continue;
    (k == ir::OpKind::Input ? f.inputs : f.params)[n.op.attrs<ir::LeafAttrs>().name] =
        leaves.at(i++);
  }
  return f;
}

/// What the interpreter computes for g on feeds, or the error it throws.
inline RunResult interp_run(const ir::Graph& g, const Feeds& f) {
  RunResult r;
  try {
    r.outputs = interp::run(g, f.inputs, f.params);
  } catch (const Error& e) {
    r.error = e.what();
    r.rlx_error = true;
  }
  return r;
}

/// "" when `after` computes what `before` computed on the same feeds; else a report. Values are
/// compared exactly (NaN equals NaN, and -0.0 equals +0.0), or, with `rounding` (passes that
/// change how a value is computed: not PassInfo::exact), within output_tolerance of `before`.
inline std::string compare_graphs(const ir::Graph& before, const RunResult& want,
                                  const ir::Graph& after, const Feeds& f, bool rounding) {
  RunResult got = interp_run(after, f);
  if (got.error) return "the rewritten graph throws: " + *got.error;
  if (got.outputs.size() != want.outputs.size())
    return std::to_string(got.outputs.size()) + " outputs, want " +
           std::to_string(want.outputs.size());
  std::string problems;
  for (std::size_t k = 0; k < want.outputs.size(); ++k) {
    Tolerance tol = rounding ? output_tolerance(before, before.outputs[k]) : Tolerance{0, 0};
    std::string r = mismatch_report(want.outputs[k], got.outputs[k], tol);
    if (!r.empty()) problems += output_str(before, k) + ": " + r + "\n";
  }
  return problems;
}

/// The graph's interface: "input x f32[4]" for each Input and Param, in graph order; params
/// named in `baked` are left out.
inline std::vector<std::string> interface_of(const ir::Graph& g, const interp::Feed& baked = {}) {
  std::vector<std::string> leaves;
  for (const ir::Node& n : g.nodes()) {
    ir::OpKind k = n.op.kind();
    const std::string* name = k == ir::OpKind::Input || k == ir::OpKind::Param
                                  ? &n.op.attrs<ir::LeafAttrs>().name
                                  : nullptr;
    if (name == nullptr || (k == ir::OpKind::Param && baked.count(*name))) continue;
    leaves.push_back(std::string(n.op.name()) + " " + *name + " " + ir::short_str(n.shape));
  }
  return leaves;
}

/// What running a pass on a graph found.
struct PassCheck {
  bool changed = false;
  std::string problems; ///< "" when every check holds
};

/// Run `info` on g (replaced by the result) with `opts`, and check: the result verifies;
/// `changed` is true exactly when the graph differs; a second run reports no change and changes
/// nothing; the inputs and params are the same but for those opts.params bakes; the interpreter
/// computes the same outputs on each set of `feeds` (on which it runs `before` at all).
inline PassCheck run_and_check(const passes::PassInfo& info, ir::Graph& g,
                               const passes::PassOptions& opts,
                               std::initializer_list<Feeds> feeds) {
  PassCheck c;
  const ir::Graph before = g;
  std::string name(info.name);
  try {
    c.changed = info.run(g, opts);
  } catch (const std::exception& e) {
    c.problems = name + " threw: " + e.what() + "\n";
    return c;
  }
  std::vector<std::string> bad = ir::verify_all(g);
  if (!bad.empty()) {
    c.problems = name + " left an invalid graph: " + bad.front() + "\n" + ir::to_text(g);
    return c;
  }
  if (c.changed != !(g == before))
    c.problems += name + " returned changed=" + (c.changed ? "true" : "false") + " but the graph " +
                  (c.changed ? "is the same" : "differs") + "\n";
  if (interface_of(g) != interface_of(before, opts.params))
    c.problems += name + " changed the inputs and params the caller feeds\n";
  ir::Graph again = g;
  if (info.run(again, opts) || !(again == g))
    c.problems += name + " changes the graph again on a second run:\n" + ir::to_text(again);
  for (const Feeds& f : feeds) {
    RunResult want = interp_run(before, f);
    if (want.error) continue;
    std::string diff = compare_graphs(before, want, g, f, !info.exact);
    if (!diff.empty()) c.problems += "outputs differ after " + name + ":\n" + diff;
  }
  if (!c.problems.empty()) c.problems += "after " + name + ":\n" + ir::to_text(g);
  return c;
}

} // namespace rlx::test
