// src/ir/module.cpp -- GraphModule: one model at HIR, MIR or LIR stage, and RLX's stage
// conversions on Graph.
#include "rlx/ir/module.hpp"

#include <sstream>

namespace rlx::ir {

std::string_view stage_name(Stage s) {
  switch (s) {
  case Stage::Hir:
    return "hir";
  case Stage::Mir:
    return "mir";
  case Stage::Lir:
    return "lir";
  }
  return "?";
}

namespace {
[[noreturn]] void wrong_stage(const GraphModule& m, Stage wanted) {
  fail(ErrorKind::Value, "module @", m.name(), " is at stage ", stage_name(m.stage()), ", not ",
       stage_name(wanted));
}
} // namespace

const std::string& GraphModule::name() const {
  return std::visit(
      [](const auto& v) -> const std::string& {
        if constexpr (std::is_same_v<std::decay_t<decltype(v)>, LirModule>)
          return v.mir.name;
        else
          return v.name;
      },
      v_);
}

HirModule& GraphModule::hir() {
  if (auto* h = std::get_if<HirModule>(&v_)) return *h;
  wrong_stage(*this, Stage::Hir);
}
const HirModule& GraphModule::hir() const { return const_cast<GraphModule*>(this)->hir(); }

const Graph& GraphModule::mir() const {
  if (auto* g = std::get_if<Graph>(&v_)) return *g;
  if (auto* l = std::get_if<LirModule>(&v_)) return l->mir;
  wrong_stage(*this, Stage::Mir);
}

const LirModule& GraphModule::lir() const {
  if (auto* l = std::get_if<LirModule>(&v_)) return *l;
  wrong_stage(*this, Stage::Lir);
}

GraphModule GraphModule::lower(const PlanOptions& opts) && {
  if (auto* h = std::get_if<HirModule>(&v_)) return GraphModule(Graph::from_hir(*h));
  if (auto* g = std::get_if<Graph>(&v_)) return GraphModule(plan_lir(std::move(*g), opts));
  fail(ErrorKind::Value, "module @", name(), " is at stage lir already: there is no lower stage");
}

Graph GraphModule::into_mir() && {
  if (auto* h = std::get_if<HirModule>(&v_)) return Graph::from_hir(*h);
  if (auto* g = std::get_if<Graph>(&v_)) return std::move(*g);
  return std::move(std::get<LirModule>(v_).mir);
}

std::string GraphModule::inspect() const {
  std::ostringstream os;
  os << "module @" << name() << ": " << stage_name(stage()) << "\n";
  std::visit(
      [&](const auto& v) {
        if constexpr (std::is_same_v<std::decay_t<decltype(v)>, Graph>)
          os << v.inspect();
        else
          os << v.to_string();
      },
      v_);
  return os.str();
}

std::string inspect_module(const GraphModule& module) { return module.inspect(); }

// ---- RLX's stage conversions on Graph

GraphModule Graph::define(std::string name, const std::function<HirNodeId(HirModule&)>& build) {
  HirModule hir(std::move(name));
  HirNodeId out = build(hir);
  hir.set_outputs({out});
  return GraphModule(std::move(hir));
}

GraphModule Graph::hir(std::string name) { return GraphModule(HirModule(std::move(name))); }

GraphModule Graph::module() && { return GraphModule(std::move(*this)); }

Graph Graph::from_lir(LirModule lir) { return std::move(lir.mir); }

} // namespace rlx::ir
