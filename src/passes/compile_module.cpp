// src/passes/compile_module.cpp -- any stage in, LIR out: lower HIR, run the compile pipeline on
// the MIR, plan its buffers.
#include "rlx/ir/module.hpp"
#include "rlx/passes.hpp"

namespace rlx::passes {

ir::LirModule compile_module(ir::GraphModule module, const PipelineOptions& opts,
                             const ir::PlanOptions& plan) {
  ir::Graph g = std::move(module).into_mir();
  compile_pipeline(g, opts);
  return ir::plan_lir(std::move(g), plan);
}

} // namespace rlx::passes
