// src/ir/lir_print.cpp -- LirModule::to_string: the plan next to each scheduled node.
#include "rlx/ir/lir.hpp"
#include "rlx/ir/text.hpp"

#include <algorithm>
#include <sstream>

namespace rlx::ir {

std::string LirModule::to_string() const {
  const BufferPlan& p = buffers;
  std::ostringstream os;
  os << "lir @" << mir.name << " (arena " << human_bytes(p.arena_size) << ", naive "
     << human_bytes(p.naive_size) << ", " << p.assignments.size() << " buffers, "
     << p.view_aliases.size() << " views, align " << p.alignment << ") {\n";
  auto leaves = [&](std::string_view what, const std::vector<NodeId>& ids) {
    for (NodeId id : ids) os << "  " << node_to_text(mir, id) << "   // " << what << "\n";
  };
  leaves("input", p.io.inputs);
  leaves("param", p.io.params);
  leaves("constant", p.io.constants);
  for (NodeId id : p.schedule) {
    os << "  " << node_to_text(mir, id) << "   // ";
    if (auto s = p.assignments.find(id); s != p.assignments.end()) {
      const Lifetime& l = p.lifetimes.at(id);
      os << "@[" << s->second.offset << ", " << s->second.offset + s->second.size << ") live "
         << l.first << ".." << l.last;
    } else if (auto v = p.view_aliases.find(id); v != p.view_aliases.end()) {
      os << "view of " << v->second.root << " +" << v->second.byte_offset;
    } else {
      os << "own output buffer";
    }
    os << "\n";
  }
  os << "  return";
  for (std::size_t i = 0; i < p.io.outputs.size(); ++i) os << (i ? ", " : " ") << p.io.outputs[i];
  os << "\n}\n";
  return os.str();
}

} // namespace rlx::ir
