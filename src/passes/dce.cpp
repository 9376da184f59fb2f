// src/passes/dce.cpp -- dead code elimination: drop pure nodes no output depends on.
//
// Assumes a verified graph. Guarantees the same outputs, every Input and Param kept (in order:
// the graph's interface) and every node without the kPure trait kept. Does not merge or rewrite.
#include "rlx/passes.hpp"

#include "rewriter.hpp"

#include <algorithm>

namespace rlx::passes {

bool dce(ir::Graph& g, const PassOptions&) {
  std::vector<uint8_t> live(g.len(), 0);
  for (ir::NodeId o : g.outputs) live[o.index] = 1;
  for (const ir::Node& n : g.nodes())
    if (!ir::is_pure(n.op)) live[n.id.index] = 1;
  // Ids are topological, so one backward sweep reaches every node a live node reads.
  for (std::size_t i = g.len(); i-- > 0;)
    if (live[i])
      for (ir::NodeId in : g.nodes()[i].inputs) live[in.index] = 1;
  if (std::all_of(live.begin(), live.end(), [](uint8_t l) { return l != 0; })) return false;
  Rewriter rw(g);
  for (const ir::Node& n : g.nodes())
    if (live[n.id.index]) rw.copy(n);
  g = rw.finish();
  return true;
}

} // namespace rlx::passes
