// src/passes/cse.cpp -- common subexpression elimination by hash-consing.
//
// Assumes a verified graph. Guarantees the same outputs with no two pure nodes of the same op,
// attributes, operands (either order for commutative ops) and shape; equal constants merge,
// Inputs and Params (not pure: the interface) never do. Does not fold or simplify.
#include "rlx/passes.hpp"

#include "ir/attr_value.hpp"
#include "rewriter.hpp"

#include <algorithm>
#include <unordered_map>
#include <utility>
#include <vector>

namespace rlx::passes {
namespace {

/// The operands as the key sees them: sorted for a commutative binary op.
std::vector<ir::NodeId> key_inputs(const ir::Op& op, std::vector<ir::NodeId> ins) {
  if (ir::has_trait(op.kind(), ir::kCommutative) && ins.size() == 2 && ins[1] < ins[0])
    std::swap(ins[0], ins[1]);
  return ins;
}

std::size_t mix(std::size_t h, std::size_t v) {
  return h ^ (v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2));
}

std::size_t hash_node(const ir::Op& op, const std::vector<ir::NodeId>& ins, const ir::Shape& s) {
  std::size_t h = ir::detail::hash_op(op);
  for (ir::NodeId id : ins) h = mix(h, id.index);
  h = mix(h, std::size_t(s.dtype()));
  for (const ir::Dim& d : s.dims())
    h = mix(h, d.is_static() ? std::size_t(d.size()) : ~std::size_t(d.symbol()));
  return h;
}

} // namespace

bool cse(ir::Graph& g, const PassOptions&) {
  Rewriter rw(g);
  std::unordered_multimap<std::size_t, ir::NodeId> seen; // hash -> node of the new graph
  bool changed = false;
  for (const ir::Node& n : g.nodes()) {
    if (!ir::is_pure(n.op)) {
      rw.copy(n);
      continue;
    }
    std::vector<ir::NodeId> ins = key_inputs(n.op, rw.inputs_of(n));
    std::size_t h = hash_node(n.op, ins, n.shape);
    auto [first, last] = seen.equal_range(h);
    auto same = std::find_if(first, last, [&](const auto& entry) {
      const ir::Node& c = rw.out().node(entry.second);
      return c.op == n.op && c.shape == n.shape && key_inputs(c.op, c.inputs) == ins;
    });
    if (same != last) {
      rw.replace(n, same->second);
      changed = true;
      continue;
    }
    seen.emplace(h, rw.copy(n));
  }
  if (!changed) return false;
  g = rw.finish();
  return true;
}

} // namespace rlx::passes
