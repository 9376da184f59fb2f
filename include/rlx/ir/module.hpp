// include/rlx/ir/module.hpp -- GraphModule: a model at any stage (HIR blocks, MIR graph, LIR
// graph + buffer plan), with RLX's stage conversions and a stage-aware dump.
#pragma once

#include "rlx/ir/graph.hpp"
#include "rlx/ir/hir.hpp"
#include "rlx/ir/lir.hpp"

#include <string>
#include <variant>

namespace rlx::ir {

enum class Stage : uint8_t { Hir, Mir, Lir };
std::string_view stage_name(Stage s); ///< "hir", "mir", "lir"

class GraphModule {
public:
  explicit GraphModule(HirModule hir) : v_(std::move(hir)) {}
  explicit GraphModule(Graph mir) : v_(std::move(mir)) {}
  explicit GraphModule(LirModule lir) : v_(std::move(lir)) {}

  Stage stage() const { return Stage(v_.index()); }
  const std::string& name() const;

  /// The stage's contents; an rlx::Error naming both stages when the module is at another one.
  /// mir() also serves a LIR module (its optimized graph).
  HirModule& hir();
  const HirModule& hir() const;
  const Graph& mir() const;
  const LirModule& lir() const;

  /// One stage down: HIR -> MIR (Graph::from_hir), MIR -> LIR (plan_lir, without optimizing:
  /// passes::compile_module runs the pipeline first). A LIR module is an rlx::Error.
  GraphModule lower(const PlanOptions& opts = {}) &&;
  /// The MIR graph: lowered from HIR, as is, or taken out of LIR.
  Graph into_mir() &&;

  /// The stage's dump (HirModule::to_string, Graph::inspect, LirModule::to_string) under a
  /// `module @name: <stage>` header.
  std::string inspect() const;

private:
  std::variant<HirModule, Graph, LirModule> v_; ///< index = Stage
};

/// Stage-aware dump of a module (GraphModule::inspect).
std::string inspect_module(const GraphModule& module);

} // namespace rlx::ir
