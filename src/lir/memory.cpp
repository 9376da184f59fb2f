// src/lir/memory.cpp -- where each value of a plan lives: views, buffers of their own, and one
// arena placed from lifetimes (largest first, each at the lowest aligned offset free while it
// lives), with an interval index so that planning stays near-linear in the graph.
#include "rlx/memory.hpp"
#include "lir/partition.hpp"

#include <algorithm>

namespace rlx::ir {

namespace {

uint64_t bytes_of(const Shape& s) { return uint64_t(s.size_bytes().value_or(0)); }
uint64_t align_up(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }

/// Intervals of step positions [first, last] in a segment tree: each interval is in the
/// `cover` list of the nodes its range decomposes into and in the `touch` list of their
/// ancestors, so the intervals overlapping a query are found in time proportional to their
/// number (times the tree's depth), not to every interval inserted.
class IntervalIndex {
public:
  explicit IntervalIndex(uint32_t positions) : size_(std::max<uint32_t>(positions, 1)) {
    cover_.resize(4 * std::size_t(size_));
    touch_.resize(4 * std::size_t(size_));
  }
  void insert(uint32_t first, uint32_t last, uint32_t value) {
    insert(1, 0, size_ - 1, first, last, value);
  }
  /// Calls fn(value) for each inserted interval overlapping [first, last], possibly repeatedly.
  template <class Fn> void overlapping(uint32_t first, uint32_t last, const Fn& fn) const {
    query(1, 0, size_ - 1, first, last, fn);
  }

private:
  void insert(std::size_t node, uint32_t lo, uint32_t hi, uint32_t f, uint32_t l, uint32_t v) {
    if (l < lo || hi < f) return;
    if (f <= lo && hi <= l) {
      cover_[node].push_back(v);
      return;
    }
    touch_[node].push_back(v);
    uint32_t mid = lo + (hi - lo) / 2;
    insert(2 * node, lo, mid, f, l, v);
    insert(2 * node + 1, mid + 1, hi, f, l, v);
  }
  template <class Fn>
  void query(std::size_t node, uint32_t lo, uint32_t hi, uint32_t f, uint32_t l,
             const Fn& fn) const {
    if (l < lo || hi < f) return;
    for (uint32_t v : cover_[node]) fn(v);
    if (f <= lo && hi <= l) {
      for (uint32_t v : touch_[node]) fn(v);
      return;
    }
    uint32_t mid = lo + (hi - lo) / 2;
    query(2 * node, lo, mid, f, l, fn);
    query(2 * node + 1, mid + 1, hi, f, l, fn);
  }

  uint32_t size_;
  std::vector<std::vector<uint32_t>> cover_, touch_;
};

struct ArenaValue {
  NodeId id;
  Lifetime life;
  uint64_t bytes;
};

/// Largest first (then earliest, then by node), each at the lowest aligned offset that no value
/// live at the same time occupies. Returns the arena's size.
uint64_t place_arena(std::vector<ArenaValue> values, uint32_t positions, uint64_t alignment,
                     std::vector<Placement>& places) {
  std::sort(values.begin(), values.end(), [](const ArenaValue& a, const ArenaValue& b) {
    if (a.bytes != b.bytes) return a.bytes > b.bytes;
    return a.life.first != b.life.first ? a.life.first < b.life.first : a.id < b.id;
  });
  IntervalIndex index(positions + 1);
  std::vector<uint32_t> seen(values.size(), ~0u);
  std::vector<std::pair<uint64_t, uint64_t>> busy;
  uint64_t arena = 0;
  for (uint32_t v = 0; v < values.size(); ++v) {
    const ArenaValue& value = values[v];
    busy.clear();
    index.overlapping(value.life.first, value.life.last, [&](uint32_t other) {
      if (seen[other] == v) return;
      seen[other] = v;
      uint64_t at = places[values[other].id.index].offset;
      if (values[other].bytes) busy.emplace_back(at, at + values[other].bytes);
    });
    std::sort(busy.begin(), busy.end());
    uint64_t at = 0;
    for (auto [lo, hi] : busy) {
      if (at + value.bytes <= lo) break;
      at = std::max(at, align_up(hi, alignment));
    }
    places[value.id.index] = Placement{Home::Arena, value.id, at};
    arena = std::max(arena, align_up(at + value.bytes, alignment));
    index.insert(value.life.first, value.life.last, v);
  }
  return arena;
}

} // namespace

uint64_t final_arena_size(const Graph& g, uint64_t bytes) {
  // The one place where a plan's arena size is known for good: refuse a plan the memory limit
  // cannot hold before anything is allocated for it.
  rlx::detail::check_memory_budget(bytes, "graph @" + g.name + "'s arena (its intermediates)");
  return bytes;
}

Memory plan_memory(const Graph& g, const std::vector<LirStep>& steps, const StepPolicy& policy,
                   const PlanOptions& opts) {
  Memory m;
  const std::size_t n = g.len();
  m.alignment = opts.alignment;
  m.outputs_in_arena = opts.outputs_in_arena;
  m.runtime_in_arena = policy.runtime_in_arena;
  m.places.resize(n);
  m.lifetimes.resize(n);
  m.releases.resize(steps.size());
  for (const Node& node : g.nodes()) {
    OpKind k = node.op.kind();
    Placement& p = m.places[node.id.index];
    p.root = node.id;
    if (k == OpKind::Input) m.io.inputs.push_back(node.id);
    if (k == OpKind::Param) m.io.params.push_back(node.id);
    if (has_trait(k, kFed)) p.home = Home::Fed;
    if (k == OpKind::Constant) {
      m.io.constants.push_back(node.id);
      p.home = Home::Constant;
    }
  }
  m.io.outputs = g.outputs;
  std::vector<char> is_output(n, 0), runtime_read(n, 0);
  for (NodeId o : g.outputs) is_output[o.index] = 1;
  for (const LirStep& step : steps)
    if (step.rule == policy.runtime && !policy.runtime_in_arena)
      for (NodeId in : step.reads) runtime_read[in.index] = 1;

  // Homes, then lifetimes: reads through views count as reads of the root.
  auto end = uint32_t(steps.size());
  std::vector<char> written(n, 0);
  for (uint32_t s = 0; s < steps.size(); ++s) {
    const LirStep& step = steps[s];
    if (step.rule == policy.view) {
      const Node& node = g.node(step.node);
      const Placement& from = m.places[node.inputs[0].index];
      uint64_t base = from.home == Home::View ? from.offset : 0;
      m.places[node.id.index] = Placement{Home::View, from.root, base + *view_offset(g, node)};
    }
    for (NodeId id : step.writes) {
      std::size_t i = id.index;
      bool own = (is_output[i] && !opts.outputs_in_arena) ||
                 (!policy.runtime_in_arena && (step.rule == policy.runtime || runtime_read[i]));
      m.places[i] = Placement{own ? Home::Own : Home::Arena, id, 0};
      m.lifetimes[i] = Lifetime{s, s};
      written[i] = 1;
    }
    for (NodeId in : step.reads)
      if (NodeId r = m.places[in.index].root; written[r.index])
        m.lifetimes[r.index].last = std::max(m.lifetimes[r.index].last, s);
  }
  for (NodeId o : g.outputs)
    if (NodeId r = m.places[o.index].root; written[r.index]) m.lifetimes[r.index].last = end;

  std::vector<ArenaValue> arena;
  for (const LirStep& step : steps)
    for (NodeId id : step.writes) {
      const Placement& p = m.places[id.index];
      if (p.home == Home::Own && !is_output[id.index])
        m.releases[m.lifetimes[id.index].last].push_back(id);
      if (p.home != Home::Arena) continue;
      uint64_t bytes = align_up(bytes_of(g.shape(id)), opts.alignment);
      arena.push_back({id, m.lifetimes[id.index], bytes});
      m.naive_size += bytes;
    }
  m.arena_size = final_arena_size(g, place_arena(std::move(arena), end, opts.alignment, m.places));
  return m;
}

} // namespace rlx::ir
