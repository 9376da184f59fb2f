// src/lir/print.cpp -- LirModule::to_string: the kernels, then the steps with the home and
// lifetime of what each writes (RLX_DUMP=lir, Executable::describe, rlx check --lir).
#include "rlx/ir/lir.hpp"
#include "rlx/ir/text.hpp"

#include <sstream>

namespace rlx::ir {

namespace {

void id_list(std::ostream& os, const std::vector<NodeId>& ids) {
  for (std::size_t i = 0; i < ids.size(); ++i) os << (i ? " %" : "%") << ids[i].index;
}

} // namespace

std::string LirModule::to_string(const LirNames& names) const {
  const Memory& m = memory;
  auto kernel_name = [&](std::size_t k) {
    return k < names.kernels.size() ? names.kernels[k] : "k" + std::to_string(k);
  };
  std::ostringstream os;
  std::size_t views = 0, arena = 0;
  for (const Placement& p : m.places) {
    views += p.home == Home::View;
    arena += p.home == Home::Arena;
  }
  os << "lir @" << mir.name << " (arena " << human_bytes(m.arena_size) << ", naive "
     << human_bytes(m.naive_size) << ", " << kernels.size() << " kernels, " << steps.size()
     << " steps, " << arena << " arena values, " << views << " views, align " << m.alignment
     << ") {\n";
  auto leaves = [&](std::string_view what, const std::vector<NodeId>& ids) {
    for (NodeId id : ids) os << "  " << node_to_text(mir, id) << "   // " << what << "\n";
  };
  leaves("input", m.io.inputs);
  leaves("param", m.io.params);
  leaves("constant", m.io.constants);
  for (std::size_t k = 0; k < kernels.size(); ++k) {
    const FusedKernel& kern = kernels[k];
    os << "kernel " << kernel_name(k) << " over " << short_str(kern.shape)
       << (kern.row_prologue ? " (a row kernel's prologue)" : "")
       << (kern.runtime_extent ? " (any length)" : "") << "\n  inputs: ";
    id_list(os, kern.inputs);
    os << " (buffers ";
    id_list(os, kern.buffers);
    os << ")\n";
    for (NodeId id : kern.nodes) os << "    " << node_to_text(mir, id) << "\n";
    os << "  outputs: ";
    id_list(os, kern.outputs);
    os << "\n";
  }
  os << "steps:\n";
  for (std::size_t s = 0; s < steps.size(); ++s) {
    const LirStep& step = steps[s];
    std::string code = s < names.steps.size() ? names.steps[s] : "";
    os << "  " << s << ": " << step.rule->name() << " ";
    bool elementwise = step.kernel != kNoKernel && kernels[step.kernel].nodes.front() == step.node;
    if (elementwise)
      os << kernel_name(step.kernel);
    else
      os << (code.empty() ? "" : "kernel " + code + ": ") << node_to_text(mir, step.node);
    if (step.kernel != kNoKernel && !elementwise)
      os << " (operand 0 computed by " << kernel_name(step.kernel) << ")";
    const Placement& own = place(step.node);
    if (own.home == Home::View)
      os << " (at byte " << own.offset - view_offset(mir, mir.node(step.node)).value_or(0)
         << " of the operand: bytes of %" << own.root.index << " from " << own.offset << ")";
    for (NodeId id : step.writes) {
      const Placement& p = place(id);
      const Lifetime& l = m.lifetimes[id.index];
      os << "\n      -> %" << id.index << " ";
      if (p.home == Home::Arena)
        os << "@[" << p.offset << ", "
           << p.offset + uint64_t(mir.shape(id).size_bytes().value_or(0)) << ")";
      else
        os << "own buffer";
      os << " live " << l.first << ".." << l.last;
    }
    if (!m.releases[s].empty()) {
      os << "\n      frees ";
      id_list(os, m.releases[s]);
    }
    os << "\n";
  }
  os << "  return";
  for (std::size_t i = 0; i < m.io.outputs.size(); ++i) os << (i ? ", " : " ") << m.io.outputs[i];
  os << "\n}\n";
  return os.str();
}

} // namespace rlx::ir
