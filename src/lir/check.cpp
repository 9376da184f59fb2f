// src/lir/check.cpp -- the plan verifier: recomputes what the plan claims (order, homes, views,
// lifetimes, releases) from the graph and the steps, and sweeps the arena for two live values
// sharing bytes.
#include "rlx/ir/lir.hpp"
#include "rlx/ir/text.hpp"

#include <algorithm>
#include <set>

namespace rlx::ir {

namespace {

uint64_t bytes_of(const Shape& s) { return uint64_t(s.size_bytes().value_or(0)); }

class Checker {
public:
  explicit Checker(const LirModule& lir) : lir_(lir), g_(lir.mir), m_(lir.memory), n_(g_.len()) {}

  std::vector<std::string> run() {
    if (m_.places.size() != n_ || m_.lifetimes.size() != n_ ||
        m_.releases.size() != lir_.steps.size()) {
      error("the memory has ", m_.places.size(), " places, ", m_.lifetimes.size(),
            " lifetimes and ", m_.releases.size(), " release lists for ", n_, " nodes and ",
            lir_.steps.size(), " steps");
      return errors_;
    }
    if (m_.alignment == 0 || (m_.alignment & (m_.alignment - 1)) != 0)
      error("alignment ", m_.alignment, " is not a power of two");
    check_steps();
    if (!errors_.empty()) return errors_;
    check_homes();
    if (!errors_.empty()) return errors_;
    check_lifetimes();
    check_overlaps();
    return errors_;
  }

private:
  template <class... A> void error(const A&... a) { errors_.push_back(rlx::detail::cat(a...)); }
  std::string text(NodeId id) const { return node_to_text(g_, id); }
  bool external(NodeId id) const {
    Home h = m_.places[id.index].home;
    return h == Home::Fed || h == Home::Constant;
  }
  bool is_runtime(const LirStep& s) const { return lir_.policy && s.rule == lir_.policy->runtime; }
  /// Whether a step after start step s waits for its node.
  bool waited_later(uint32_t s) const {
    NodeId id = lir_.steps[s].node;
    return std::any_of(lir_.steps.begin() + s + 1, lir_.steps.end(), [&](const LirStep& o) {
      return o.rule == lir_.policy->wait && o.node == id;
    });
  }

  /// Every read is made before its step; every value is written once, by one step.
  void check_steps() {
    written_at_.assign(n_, kNever);
    for (uint32_t s = 0; s < lir_.steps.size(); ++s) {
      const LirStep& step = lir_.steps[s];
      if (step.rule == nullptr || step.node.index >= n_) {
        error("step ", s, " has no rule or names no node of the graph");
        continue;
      }
      for (NodeId in : step.reads) {
        if (in.index >= n_) {
          error("step ", s, " reads ", in, ", not a node of the graph");
          continue;
        }
        NodeId root = m_.places[in.index].root;
        if (external(in) || (root.index < n_ && external(root))) continue;
        if (written_at_[in.index] >= s || root.index >= n_ || written_at_[root.index] >= s)
          error("step ", s, " (", step.rule->name(), " ", text(step.node), ") reads ", in,
                " before a step writes it");
      }
      for (NodeId id : step.writes) {
        if (id.index >= n_) {
          error("step ", s, " writes ", id, ", not a node of the graph");
          continue;
        }
        if (written_at_[id.index] != kNever)
          error(id, " is written by steps ", written_at_[id.index], " and ", s);
        written_at_[id.index] = s;
      }
      if (lir_.policy && step.rule == lir_.policy->wait) { // finishes what a start step wrote
        if (written_at_[step.node.index] == kNever ||
            lir_.steps[written_at_[step.node.index]].rule != lir_.policy->start)
          error("step ", s, " waits for ", step.node, ", which no earlier start step began");
        else if (!waited_.insert(step.node.index).second)
          error("step ", s, " waits for ", step.node, " a second time");
        continue;
      }
      // A start step without a wait step runs its collective to the end (nothing to overlap).
      if (lir_.policy && step.rule == lir_.policy->start && waited_later(s))
        started_.push_back(step.node);
      // A value under way is read only after its wait.
      for (NodeId in : step.reads)
        if (std::find(started_.begin(), started_.end(), in) != started_.end() &&
            !waited_.count(in.index))
          error("step ", s, " (", step.rule->name(), " ", text(step.node), ") reads ", in,
                " before the step waiting for it");
      if (step.writes.empty()) { // a view: its bytes are its root's
        if (m_.places[step.node.index].home != Home::View)
          error("step ", s, " writes nothing but ", step.node, " is not a view");
        written_at_[step.node.index] = s;
      }
    }
    for (NodeId o : g_.outputs)
      if (o.index >= n_ || (!external(o) && written_at_[o.index] == kNever))
        error("output ", o, " is made by no step");
  }

  void check_homes() {
    for (std::size_t i = 0; i < n_; ++i) {
      NodeId id{uint32_t(i)};
      const Placement& p = m_.places[i];
      bool written = written_at_[i] != kNever;
      if (p.home == Home::View) {
        check_view(id, p);
        continue;
      }
      if (written != (p.home == Home::Arena || p.home == Home::Own))
        error(id, " (", text(id), ") is ", written ? "" : "not ",
              "written by a step but its home is ", home_name(p.home));
      if (p.home != Home::Arena) continue;
      uint64_t need = bytes_of(g_.shape(id));
      if (p.offset % m_.alignment)
        error(id, ": offset ", p.offset, " is not ", m_.alignment, "-byte aligned");
      if (p.offset + need > m_.arena_size)
        error(id, ": slot [", p.offset, ", ", p.offset + need, ") ends past the arena (",
              m_.arena_size, " bytes)");
    }
    for (NodeId o : g_.outputs)
      if (o.index < n_ && m_.places[o.index].home == Home::Arena && !m_.outputs_in_arena)
        error("output ", o, " is in the arena, which holds no outputs");
    if (m_.runtime_in_arena) return;
    for (const LirStep& step : lir_.steps) {
      if (!is_runtime(step)) continue;
      auto own = [&](NodeId id) {
        Home h = m_.places[id.index].home;
        if (h != Home::Own && h != Home::Fed && h != Home::Constant)
          error("interpreter step ", text(step.node), " takes ", id, " (", home_name(h),
                "), not a buffer of its own");
      };
      for (NodeId in : step.reads) own(in);
      for (NodeId out : step.writes) own(out);
    }
  }

  void check_view(NodeId id, const Placement& p) {
    const Node& node = g_.node(id);
    std::optional<uint64_t> off = view_offset(g_, node);
    if (!off) {
      error(id, " (", node.op.name(), ") cannot be a view of its operand");
      return;
    }
    const Placement& from = m_.places[node.inputs[0].index];
    uint64_t expect = *off + (from.home == Home::View ? from.offset : 0);
    NodeId root = from.home == Home::View ? from.root : node.inputs[0];
    if (p.root != root || p.offset != expect)
      error(id, ": view of ", p.root, " at +", p.offset, ", but its bytes are ", root, " at +",
            expect);
    if (p.root.index < n_ && expect + bytes_of(node.shape) > bytes_of(g_.shape(p.root)))
      error(id, ": view ends past its root ", p.root);
  }

  /// Lifetimes from the steps' reads, and releases of values of their own after their last read.
  void check_lifetimes() {
    auto end = uint32_t(lir_.steps.size());
    std::vector<Lifetime> life(n_);
    for (std::size_t i = 0; i < n_; ++i)
      if (written_at_[i] != kNever && m_.places[i].home != Home::View)
        life[i] = Lifetime{written_at_[i], written_at_[i]};
    for (uint32_t s = 0; s < end; ++s)
      for (NodeId in : lir_.steps[s].reads)
        if (NodeId r = m_.places[in.index].root; r.index < n_ && written_at_[r.index] != kNever)
          life[r.index].last = std::max(life[r.index].last, s);
    std::vector<char> is_output(n_, 0);
    for (NodeId o : g_.outputs) {
      is_output[o.index] = 1;
      if (NodeId r = m_.places[o.index].root; r.index < n_ && written_at_[r.index] != kNever)
        life[r.index].last = end;
    }
    std::vector<uint32_t> released(n_, kNever);
    for (uint32_t s = 0; s < end; ++s)
      for (NodeId id : m_.releases[s]) {
        if (id.index >= n_ || m_.places[id.index].home != Home::Own || is_output[id.index])
          error("step ", s, " releases ", id, ", which is not an intermediate of its own");
        else
          released[id.index] = s;
      }
    for (std::size_t i = 0; i < n_; ++i) {
      Home h = m_.places[i].home;
      if (h != Home::Arena && h != Home::Own) continue;
      NodeId id{uint32_t(i)};
      if (!(m_.lifetimes[i] == life[i]))
        error(id, ": the plan's lifetime ", m_.lifetimes[i].first, "..", m_.lifetimes[i].last,
              " differs from the steps' (", life[i].first, "..", life[i].last, ")");
      if (h == Home::Own && !is_output[i] && released[i] != life[i].last)
        error(id, " is released at step ", released[i] == kNever ? -1 : int64_t(released[i]),
              ", not after its last read (step ", life[i].last, ")");
    }
    lives_ = std::move(life);
  }

  /// Sweep the step positions: the arena values live at each one, by offset, are disjoint.
  void check_overlaps() {
    std::vector<NodeId> arena;
    for (std::size_t i = 0; i < n_; ++i)
      if (m_.places[i].home == Home::Arena && bytes_of(g_.shape(NodeId(uint32_t(i)))))
        arena.push_back(NodeId(uint32_t(i)));
    auto end = uint32_t(lir_.steps.size());
    std::vector<std::vector<NodeId>> starts(end + 1), ends(end + 2);
    for (NodeId id : arena) {
      starts[lives_[id.index].first].push_back(id);
      ends[lives_[id.index].last + 1].push_back(id);
    }
    auto lo = [&](NodeId id) { return m_.places[id.index].offset; };
    auto hi = [&](NodeId id) { return lo(id) + bytes_of(g_.shape(id)); };
    std::set<std::pair<uint64_t, NodeId>> live;
    for (uint32_t t = 0; t <= end; ++t) {
      for (NodeId id : ends[t]) live.erase({lo(id), id});
      for (NodeId id : starts[t]) {
        auto it = live.insert({lo(id), id}).first;
        for (auto next = std::next(it); next != live.end() && next->first < hi(id); ++next)
          overlap(id, next->second);
        for (auto prev = it; prev != live.begin();) {
          --prev;
          if (hi(prev->second) <= lo(id)) break;
          overlap(id, prev->second);
        }
      }
    }
  }

  void overlap(NodeId a, NodeId b) {
    auto range = [&](NodeId id) {
      const Lifetime& l = lives_[id.index];
      uint64_t at = m_.places[id.index].offset;
      return rlx::detail::cat(id, " [", at, ", ", at + bytes_of(g_.shape(id)), ") live ", l.first,
                              "..", l.last);
    };
    error(range(a), " overlaps ", range(b));
  }

  static std::string_view home_name(Home h) {
    constexpr std::string_view names[] = {"none", "fed", "constant", "arena", "view", "own"};
    return names[std::size_t(h)];
  }

  static constexpr uint32_t kNever = ~0u;
  const LirModule& lir_;
  const Graph& g_;
  const Memory& m_;
  std::size_t n_;
  std::vector<uint32_t> written_at_;
  std::vector<NodeId> started_; ///< nodes of start steps, in order
  std::set<uint32_t> waited_;   ///< nodes whose wait step has run
  std::vector<Lifetime> lives_;
  std::vector<std::string> errors_;
};

} // namespace

std::vector<std::string> check_plan(const LirModule& lir) { return Checker(lir).run(); }

void verify_plan(const LirModule& lir) {
  std::vector<std::string> errors = check_plan(lir);
  if (errors.empty()) return;
  std::string msg = "the plan of graph @" + lir.mir.name + " is invalid:";
  for (const std::string& e : errors) msg += "\n  " + e;
  throw InternalError(msg);
}

} // namespace rlx::ir
