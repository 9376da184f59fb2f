// src/ir/lir_check.cpp -- the buffer plan verifier: recomputes what the plan claims (order,
// views, lifetimes) from the graph and checks that no two live buffers share bytes.
#include "rlx/ir/lir.hpp"
#include "rlx/ir/text.hpp"

#include <algorithm>

namespace rlx::ir {

namespace {
/// Inputs, Params and Constants: values the caller feeds or the graph holds.
bool is_leaf(const Node& n) { return has_trait(n.op.kind(), kLeaf); }
uint64_t bytes_of(const Shape& s) { return uint64_t(s.size_bytes().value_or(0)); }
} // namespace

std::vector<std::string> check_plan(const Graph& g, const BufferPlan& plan) {
  using rlx::detail::cat;
  std::vector<std::string> errors;
  const std::size_t n = g.len();
  auto valid = [&](NodeId id) { return id.index < n; };

  // The schedule: real non-leaf nodes, once each, operands first.
  constexpr uint32_t kNone = ~0u;
  std::vector<uint32_t> pos(n, kNone);
  for (std::size_t p = 0; p < plan.schedule.size(); ++p) {
    NodeId id = plan.schedule[p];
    if (!valid(id)) {
      errors.push_back(cat("schedule[", p, "]: ", id, " is not a node of the graph"));
      return errors;
    }
    if (is_leaf(g.node(id))) errors.push_back(cat("schedule[", p, "]: ", id, " is a leaf"));
    if (pos[id.index] != kNone) errors.push_back(cat("schedule: ", id, " appears twice"));
    pos[id.index] = uint32_t(p);
    for (NodeId in : g.node(id).inputs)
      if (!is_leaf(g.node(in)) && (pos[in.index] == kNone || pos[in.index] >= p))
        errors.push_back(cat("schedule: ", id, " runs before its operand ", in));
  }
  for (NodeId o : g.outputs)
    if (!is_leaf(g.node(o)) && pos[o.index] == kNone)
      errors.push_back(cat("output ", o, " is not scheduled"));
  if (plan.alignment == 0 || (plan.alignment & (plan.alignment - 1)) != 0)
    errors.push_back(cat("alignment ", plan.alignment, " is not a power of two"));
  if (!errors.empty()) return errors;

  // Where each scheduled node's bytes are: its slot, its view's root, or its own buffer.
  enum class Home : uint8_t { External, Arena, View };
  std::vector<Home> home(n, Home::External);
  std::vector<NodeId> root(n);
  for (std::size_t i = 0; i < n; ++i) root[i] = NodeId(uint32_t(i));
  for (NodeId id : plan.schedule) {
    bool slot = plan.assignments.count(id) != 0, view = plan.view_aliases.count(id) != 0;
    bool own = std::find(plan.unplaced_outputs.begin(), plan.unplaced_outputs.end(), id) !=
               plan.unplaced_outputs.end();
    if (int(slot) + int(view) + int(own) != 1) {
      errors.push_back(cat(id, " (", node_to_text(g, id), ") has ",
                           int(slot) + int(view) + int(own),
                           " homes (a slot, a view or its own output buffer: exactly one)"));
      continue;
    }
    if (own && std::find(g.outputs.begin(), g.outputs.end(), id) == g.outputs.end())
      errors.push_back(cat(id, " has its own buffer but is not an output"));
    if (slot) {
      home[id.index] = Home::Arena;
      const BufferSlot& s = plan.assignments.at(id);
      uint64_t need = bytes_of(g.shape(id));
      if (s.offset % plan.alignment)
        errors.push_back(
            cat(id, ": offset ", s.offset, " is not ", plan.alignment, "-byte aligned"));
      if (s.size < need)
        errors.push_back(cat(id, ": slot of ", s.size, " bytes for ", need, " bytes of ",
                             short_str(g.shape(id))));
      if (s.offset + s.size > plan.arena_size)
        errors.push_back(cat(id, ": slot [", s.offset, ", ", s.offset + s.size,
                             ") ends past the arena (", plan.arena_size, " bytes)"));
    }
    if (view) {
      home[id.index] = Home::View;
      const Node& node = g.node(id);
      const ViewAlias& v = plan.view_aliases.at(id);
      auto off = view_offset(g, node);
      if (!off) {
        errors.push_back(cat(id, " (", node.op.name(), ") cannot be a view of its operand"));
        continue;
      }
      NodeId src = node.inputs[0];
      uint64_t expect = *off;
      if (home[src.index] == Home::View) expect += plan.view_aliases.at(src).byte_offset;
      root[id.index] = root[src.index];
      if (v.root != root[id.index] || v.byte_offset != expect)
        errors.push_back(cat(id, ": view of ", v.root, " at +", v.byte_offset,
                             ", but its bytes are ", root[id.index], " at +", expect));
      if (valid(v.root) && expect + bytes_of(node.shape) > bytes_of(g.shape(v.root)))
        errors.push_back(cat(id, ": view ends past its root ", v.root));
    }
  }
  if (!errors.empty()) return errors;

  // Lifetimes from the schedule, then every pair of arena buffers live at once.
  auto end = uint32_t(plan.schedule.size());
  std::map<NodeId, Lifetime> life;
  for (NodeId id : plan.schedule)
    if (home[id.index] == Home::Arena) life[id] = Lifetime{pos[id.index], pos[id.index]};
  for (NodeId id : plan.schedule)
    for (NodeId in : g.node(id).inputs)
      if (auto it = life.find(root[in.index]); it != life.end())
        it->second.last = std::max(it->second.last, pos[id.index]);
  for (NodeId o : g.outputs)
    if (auto it = life.find(root[o.index]); it != life.end()) it->second.last = end;
  for (const auto& [id, l] : life)
    if (auto it = plan.lifetimes.find(id); it == plan.lifetimes.end() || !(it->second == l))
      errors.push_back(cat(id, ": the plan's lifetime differs from the schedule's (", l.first, "..",
                           l.last, ")"));
  std::vector<std::pair<NodeId, Lifetime>> live(life.begin(), life.end());
  for (std::size_t a = 0; a < live.size(); ++a)
    for (std::size_t b = a + 1; b < live.size(); ++b) {
      const auto& [ia, la] = live[a];
      const auto& [ib, lb] = live[b];
      if (la.first > lb.last || lb.first > la.last) continue;
      const BufferSlot &sa = plan.assignments.at(ia), &sb = plan.assignments.at(ib);
      uint64_t ua = bytes_of(g.shape(ia)), ub = bytes_of(g.shape(ib));
      if (ua && ub && sa.offset < sb.offset + ub && sb.offset < sa.offset + ua)
        errors.push_back(cat(ia, " [", sa.offset, ", ", sa.offset + ua, ") live ", la.first, "..",
                             la.last, " overlaps ", ib, " [", sb.offset, ", ", sb.offset + ub,
                             ") live ", lb.first, "..", lb.last));
    }
  return errors;
}

void verify_plan(const Graph& g, const BufferPlan& plan) {
  std::vector<std::string> errors = check_plan(g, plan);
  if (errors.empty()) return;
  std::string msg = "buffer plan of graph @" + g.name + " is invalid:";
  for (const std::string& e : errors) msg += "\n  " + e;
  throw InternalError(msg);
}

} // namespace rlx::ir
