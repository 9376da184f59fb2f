// src/ir/lir_plan.cpp -- the buffer plan: schedule, views, lifetimes, and greedy arena offsets.
#include "rlx/ir/lir.hpp"

#include <algorithm>
#include <numeric>

namespace rlx::ir {

namespace {

uint64_t bytes_of(const Shape& s) { return uint64_t(s.size_bytes().value_or(0)); }
uint64_t align_up(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }

/// Inputs, Params and Constants: values the caller feeds or the graph holds.
bool is_leaf(const Node& n) { return has_trait(n.op.kind(), kLeaf); }

/// Byte offset of a contiguous range [start, start + len) of `axis` of shape `in`: contiguous
/// when every dim before the axis is 1.
std::optional<uint64_t> narrow_offset(const Shape& in, int64_t axis, int64_t start) {
  auto rank = int64_t(in.rank());
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank || start < 0) return std::nullopt;
  std::vector<int64_t> d = in.sizes();
  for (int64_t i = 0; i < axis; ++i)
    if (d[std::size_t(i)] != 1) return std::nullopt;
  int64_t inner = 1;
  for (int64_t i = axis + 1; i < rank; ++i) inner *= d[std::size_t(i)];
  return uint64_t(start * inner) * size_bytes(in.dtype());
}

} // namespace

std::optional<uint64_t> view_offset(const Graph& g, const Node& n) {
  if (n.inputs.empty() || !n.shape.is_static()) return std::nullopt;
  const Shape& in = g.shape(n.inputs[0]);
  if (!in.is_static() || in.dtype() != n.shape.dtype()) return std::nullopt;
  OpKind k = n.op.kind();
  if (has_trait(k, kView)) return 0; // reshape, stop_gradient: the same bytes
  if (k == OpKind::Narrow) {
    const auto& a = n.op.attrs<NarrowAttrs>();
    return narrow_offset(in, a.axis, a.start);
  }
  if (k == OpKind::Slice) {
    const auto& a = n.op.attrs<SliceAttrs>();
    if (a.step != 1) return std::nullopt;
    return narrow_offset(in, a.axis, a.start);
  }
  return std::nullopt;
}

BufferPlan plan_buffers(const Graph& g, const PlanOptions& opts) {
  if (g.has_dynamic_dims()) {
    std::string syms;
    for (uint32_t s : g.dynamic_symbols())
      syms += (syms.empty() ? "" : ", ") + rlx::detail::cat(Dim::dynamic(s));
    fail(ErrorKind::Bind, "plan_buffers: graph @", g.name, " has dynamic dims (", syms,
         "); bind them first (Graph::bind)");
  }
  if (opts.alignment == 0 || (opts.alignment & (opts.alignment - 1)) != 0)
    fail(ErrorKind::Value, "plan_buffers: alignment ", opts.alignment, " is not a power of two");
  BufferPlan plan;
  plan.alignment = opts.alignment;
  const std::size_t n = g.len();
  std::vector<char> needed(n, 0), is_output(n, 0);
  for (NodeId o : g.outputs) needed[o.index] = is_output[o.index] = 1;
  for (std::size_t i = n; i-- > 0;)
    if (needed[i])
      for (NodeId in : g.nodes()[i].inputs) needed[in.index] = 1;

  // The manifest, the schedule, and where each scheduled value's bytes live.
  constexpr uint32_t kNotScheduled = ~0u;
  std::vector<uint32_t> pos(n, kNotScheduled);
  std::vector<NodeId> root(n);
  std::vector<uint64_t> offset(n, 0);
  std::vector<char> arena(n, 0); // roots with an arena slot
  for (const Node& node : g.nodes()) {
    std::size_t i = node.id.index;
    root[i] = node.id;
    if (node.op.kind() == OpKind::Input) plan.io.inputs.push_back(node.id);
    if (node.op.kind() == OpKind::Param) plan.io.params.push_back(node.id);
    if (node.op.kind() == OpKind::Constant) plan.io.constants.push_back(node.id);
    if (is_leaf(node) || !needed[i]) continue;
    pos[i] = uint32_t(plan.schedule.size());
    plan.schedule.push_back(node.id);
    bool own_buffer = is_output[i] && !opts.outputs_in_arena;
    if (auto off = view_offset(g, node); off && !own_buffer) {
      NodeId src = node.inputs[0];
      root[i] = root[src.index];
      offset[i] = offset[src.index] + *off;
      plan.view_aliases[node.id] = ViewAlias{root[i], offset[i]};
    } else if (own_buffer) {
      plan.unplaced_outputs.push_back(node.id);
    } else {
      arena[i] = 1;
    }
  }
  plan.io.outputs = g.outputs;

  // Lifetimes of the arena roots: reads through views count as reads of the root.
  auto end = uint32_t(plan.schedule.size());
  for (NodeId id : plan.schedule)
    if (arena[id.index]) plan.lifetimes[id] = Lifetime{pos[id.index], pos[id.index]};
  for (NodeId id : plan.schedule)
    for (NodeId in : g.node(id).inputs)
      if (NodeId r = root[in.index]; arena[r.index])
        plan.lifetimes[r].last = std::max(plan.lifetimes[r].last, pos[id.index]);
  for (NodeId o : g.outputs)
    if (NodeId r = root[o.index]; arena[r.index]) plan.lifetimes[r].last = end;

  // Largest first (then earliest), each at the lowest aligned offset that no buffer live at the
  // same time occupies.
  std::vector<NodeId> order;
  for (const auto& [id, life] : plan.lifetimes) order.push_back(id);
  std::sort(order.begin(), order.end(), [&](NodeId a, NodeId b) { // a total order
    uint64_t sa = bytes_of(g.shape(a)), sb = bytes_of(g.shape(b));
    return sa != sb ? sa > sb : pos[a.index] < pos[b.index];
  });
  std::vector<NodeId> placed;
  for (NodeId id : order) {
    uint64_t size = bytes_of(g.shape(id));
    Lifetime life = plan.lifetimes[id];
    std::vector<BufferSlot> busy;
    for (NodeId other : placed) {
      Lifetime o = plan.lifetimes[other];
      if (o.first <= life.last && life.first <= o.last) busy.push_back(plan.assignments[other]);
    }
    std::sort(busy.begin(), busy.end(),
              [](const BufferSlot& a, const BufferSlot& b) { return a.offset < b.offset; });
    uint64_t at = 0;
    for (const BufferSlot& b : busy) {
      if (b.size == 0) continue;
      if (at + size <= b.offset) break;
      at = std::max(at, align_up(b.offset + b.size, plan.alignment));
    }
    plan.assignments[id] = BufferSlot{at, size};
    plan.arena_size = std::max(plan.arena_size, align_up(at + size, plan.alignment));
    plan.naive_size += align_up(size, plan.alignment);
    placed.push_back(id);
  }
  return plan;
}

LirModule plan_lir(Graph g, const PlanOptions& opts) {
  BufferPlan plan = plan_buffers(g, opts);
  return LirModule{std::move(g), std::move(plan)};
}

} // namespace rlx::ir
