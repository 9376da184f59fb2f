// src/lir/partition.cpp -- the split of a graph into steps: greedy fusion of element-wise nodes
// into kernels in topological order, row ops with prologue kernels, native and interpreter
// steps, views, and movement folded into its readers.
#include "lir/partition.hpp"

#include <algorithm>
#include <map>

namespace rlx::ir {

namespace {

constexpr std::size_t kNone = std::numeric_limits<std::size_t>::max();

bool is_leaf(const Node& n) { return has_trait(n.op.kind(), kLeaf); }
bool is_reshape(const Node& n) { return n.op.kind() == OpKind::Reshape && n.shape.is_static(); }
bool is_expand(const Node& n) { return n.op.kind() == OpKind::Expand && n.shape.is_static(); }

/// Where a kernel reads the value of node `id` from: reshapes are the same bytes in another
/// shape (followed through chains of reshapes), expands are broadcasts the kernel's indexing
/// does itself (right-aligned, as numpy's broadcast_to, so broadcasting composes).
struct Source {
  NodeId buffer;
  Shape shape;
};
Source resolve(const Graph& g, NodeId id) {
  const Node& n = g.node(id);
  if (is_reshape(n)) {
    NodeId b = n.inputs[0];
    while (is_reshape(g.node(b))) b = g.node(b).inputs[0];
    if (!g.shape(b).is_static()) return {id, n.shape};
    return {b, n.shape};
  }
  if (is_expand(n)) {
    Source s = resolve(g, n.inputs[0]);
    if (!s.shape.is_static()) return {id, n.shape};
    return s;
  }
  return {id, n.shape};
}

/// Whether every operand runs the kernel's iteration space as one flat row: each has the
/// space's size in every dim of it that is not 1, or size 1 in every such dim (no broadcast
/// along part of the row).
bool one_flat_row(const FusedKernel& k) {
  std::vector<int64_t> os = k.shape.sizes();
  for (const Shape& r : k.read_shapes) {
    std::vector<int64_t> is = r.sizes();
    int full = 0, bcast = 0;
    for (std::size_t d = 0; d < os.size(); ++d) {
      if (os[d] == 1) continue;
      std::size_t off = os.size() - std::min(os.size(), is.size());
      int64_t s = d >= off && d - off < is.size() ? is[d - off] : 1;
      (s == os[d] ? full : bcast) = 1;
    }
    if (full && bcast) return false;
  }
  return true;
}

class Partitioner {
public:
  Partitioner(const Graph& g, const StepPolicy& p, bool outputs_in_arena)
      : g_(g), p_(p), outputs_in_arena_(outputs_in_arena), n_(g.len()) {}

  Partition run() {
    count_uses();
    mark_needed();
    make_steps();
    collect_kernel_operands();
    fuse_row_prologues();
    fill_step_operands();
    split_async();
    return std::move(out_);
  }

private:
  bool foldable(const Node& n) const {
    if (p_.elementwise && (is_reshape(n) || is_expand(n))) return true;
    return std::any_of(p_.native.begin(), p_.native.end(),
                       [&](const StepRule* r) { return r->folds(g_, n.id); });
  }
  bool folds_by_rule(const Node& n) const {
    return !(p_.elementwise && (is_reshape(n) || is_expand(n)));
  }
  bool folded(const Node& n) const { return foldable(n) && !needed_[n.id.index]; }
  bool fuses(const Node& n) const { return p_.elementwise && p_.elementwise->takes(g_, n); }
  /// The rule other than fusion and views that takes n (row, native, else the interpreter).
  const StepRule* rule_of(const Node& n) const {
    if (p_.row && p_.row->takes(g_, n)) return p_.row;
    if (p_.start && p_.wait && p_.start->takes(g_, n)) return p_.start;
    for (const StepRule* r : p_.native)
      if (r->takes(g_, n)) return r;
    return p_.runtime;
  }
  bool is_view(const Node& n) const {
    if (buffer_read_[n.id.index]) return false;
    std::optional<uint64_t> off = view_offset(g_, n);
    return off && *off % p_.view_alignment == 0;
  }

  void count_uses() {
    uses_.assign(n_, 0);
    live_.assign(n_, 0);
    for (NodeId o : g_.outputs) ++uses_[o.index], live_[o.index] = 1;
    for (std::size_t i = n_; i-- > 0;)
      if (live_[i])
        for (NodeId in : g_.nodes()[i].inputs) ++uses_[in.index], live_[in.index] = 1;
  }

  /// Which values must exist as buffers (graph outputs and what steps read), walking backwards
  /// so that a foldable node knows whether it is needed before its operands are marked.
  void mark_needed() {
    needed_.assign(n_, 0);
    buffer_read_.assign(n_, 0);
    absorbed_.assign(n_, 0);
    absorber_.assign(n_, nullptr);
    view_.assign(n_, 0);
    for (NodeId o : g_.outputs) {
      needed_[o.index] = 1;
      // The caller receives a buffer of its own where interpreter steps cannot take views.
      if (!p_.runtime_in_arena || !outputs_in_arena_) buffer_read_[o.index] = 1;
    }
    for (std::size_t i = n_; i-- > 0;) {
      const Node& n = g_.nodes()[i];
      if (!live_[i] || is_leaf(n) || absorbed_[i] || folded(n)) continue;
      auto need = [&](const std::vector<NodeId>& ids) {
        for (NodeId in : ids) needed_[in.index] = 1;
      };
      bool taken = false;
      for (const StepRule* r : p_.native)
        if (std::optional<NodeId> x = r->absorbs(g_, n, uses_)) {
          absorber_[i] = r;
          absorbed_[x->index] = 1;
          need(r->reads(g_, n));
          taken = true;
          break;
        }
      if (taken) continue;
      if (is_view(n)) { // every reader of n has been seen (readers come later)
        view_[i] = 1;
        needed_[n.inputs[0].index] = 1;
        continue;
      }
      if (fuses(n)) {
        for (NodeId in : n.inputs) needed_[resolve(g_, in).buffer.index] = 1;
        continue;
      }
      const StepRule* r = rule_of(n);
      need(r->reads(g_, n));
      if (r == p_.runtime && !p_.runtime_in_arena)
        for (NodeId in : n.inputs) buffer_read_[in.index] = 1;
    }
  }

  void make_steps() {
    region_.assign(n_, kNone);
    // step_of[i]: 1 + the step producing node i (for a folded node, the step producing the
    // buffer it reads); 0 for leaves.
    step_of_.assign(n_, 0);
    for (const Node& n : g_.nodes()) {
      std::size_t i = n.id.index;
      if (!live_[i] || is_leaf(n) || absorbed_[i]) continue;
      if (folded(n)) {
        NodeId from = folds_by_rule(n) ? n.inputs[0] : resolve(g_, n.id).buffer;
        step_of_[i] = step_of_[from.index];
        continue;
      }
      if (view_[i] || absorber_[i] || !fuses(n)) {
        const StepRule* r = view_[i] ? p_.view : absorber_[i] ? absorber_[i] : rule_of(n);
        step_of_[i] = out_.steps.size() + 1;
        LirStep step{r, n.id, {n.id}, {}, {}, kNoKernel};
        if (absorber_[i]) {
          NodeId x = *r->absorbs(g_, n, uses_);
          step.nodes.insert(step.nodes.begin(), x);
          step_of_[x.index] = step_of_[i];
        }
        out_.steps.push_back(std::move(step));
        continue;
      }
      join_kernel(n);
    }
  }

  /// Join a kernel when every operand not in it is ready before that kernel runs (so no cycle
  /// through other steps can form): first an operand's kernel, else the latest kernel of the
  /// same shape (independent chains over the same elements share one pass, e.g.
  /// tanh(x) * sigmoid(x) + x * x is one loop).
  void join_kernel(const Node& n) {
    auto can_join = [&](std::size_t r) {
      const FusedKernel& k = out_.kernels[r];
      if (k.shape.dims() != n.shape.dims() || k.nodes.size() >= p_.max_kernel_nodes) return false;
      for (NodeId other : n.inputs) {
        if (region_[other.index] == r) continue;
        if (step_of_[other.index] > kernel_step_[r]) return false;
        // A folded operand reading a buffer this very kernel writes: not within one loop.
        if (region_[resolve(g_, other).buffer.index] == r) return false;
      }
      return true;
    };
    std::size_t join = kNone;
    for (NodeId in : n.inputs)
      if (region_[in.index] != kNone && can_join(region_[in.index])) {
        join = region_[in.index];
        break;
      }
    // Else the latest kernel of its shape that runs after every operand is made (kernels of a
    // shape are listed in step order, so the search stops at the first one that runs too early).
    std::vector<std::size_t>& same =
        by_shape_[n.shape.is_static() ? n.shape.sizes() : std::vector<int64_t>{-1}];
    std::size_t ready = 0;
    for (NodeId in : n.inputs) ready = std::max(ready, step_of_[in.index]);
    for (std::size_t i = same.size(); join == kNone && i-- > 0;) {
      std::size_t r = same[i];
      if (kernel_step_[r] < ready) break;
      if (out_.kernels[r].nodes.size() >= p_.max_kernel_nodes) {
        same.erase(same.begin() + std::ptrdiff_t(i)); // full for good
        continue;
      }
      if (can_join(r)) join = r;
    }
    if (join == kNone) {
      join = out_.kernels.size();
      out_.kernels.push_back(FusedKernel{{}, {}, {}, n.shape});
      kernel_step_.push_back(out_.steps.size() + 1);
      out_.steps.push_back(LirStep{p_.elementwise, n.id, {}, {}, {}, join});
      same.push_back(join);
    }
    out_.kernels[join].nodes.push_back(n.id);
    region_[n.id.index] = join;
    step_of_[n.id.index] = kernel_step_[join];
  }

  /// Operands from outside and values needed outside each kernel.
  void collect_kernel_operands() {
    std::vector<char> is_output(n_, 0);
    for (NodeId o : g_.outputs) is_output[o.index] = 1;
    for (const Node& n : g_.nodes())
      if (live_[n.id.index])
        for (NodeId in : n.inputs)
          if (region_[in.index] != kNone && region_[in.index] != region_[n.id.index])
            is_output[in.index] = 1;
    std::vector<std::size_t> seen(n_, kNone); // the kernel that last took node i as an input
    for (std::size_t r = 0; r < out_.kernels.size(); ++r) {
      FusedKernel& k = out_.kernels[r];
      for (NodeId id : k.nodes) {
        for (NodeId in : g_.node(id).inputs)
          if (region_[in.index] != r && seen[in.index] != r) {
            seen[in.index] = r;
            Source src = resolve(g_, in);
            k.inputs.push_back(in);
            k.buffers.push_back(src.buffer);
            k.read_shapes.push_back(src.shape);
          }
        if (is_output[id.index]) k.outputs.push_back(id);
      }
      k.runtime_extent = p_.runtime_extents && one_flat_row(k);
    }
  }

  /// Row steps whose first operand is the single result of a kernel that nothing else reads
  /// take that kernel as their prologue; its own step goes.
  void fuse_row_prologues() {
    if (!p_.row) return;
    for (LirStep& step : out_.steps) {
      if (step.rule != p_.row) continue;
      const Node& n = g_.node(step.node);
      NodeId x = n.inputs[0];
      std::size_t r = region_[x.index];
      if (r == kNone || uses_[x.index] != 1) continue;
      FusedKernel& k = out_.kernels[r];
      if (k.row_prologue || k.outputs.size() != 1 || k.outputs[0] != x) continue;
      if (!p_.row->takes_prologue(g_, n, k)) continue;
      k.row_prologue = true;
      step.kernel = r;
    }
    std::erase_if(out_.steps, [&](const LirStep& s) {
      return s.rule == p_.elementwise && out_.kernels[s.kernel].row_prologue;
    });
  }

  void fill_step_operands() {
    for (LirStep& step : out_.steps) {
      const Node& n = g_.node(step.node);
      if (step.rule == p_.elementwise) {
        const FusedKernel& k = out_.kernels[step.kernel];
        step.nodes = k.nodes;
        step.reads = k.buffers;
        step.writes = k.outputs;
        continue;
      }
      if (step.rule == p_.view) {
        step.reads = {n.inputs[0]};
        continue;
      }
      step.writes = {n.id};
      if (step.kernel == kNoKernel) {
        step.reads = step.rule->reads(g_, n);
        continue;
      }
      const FusedKernel& k = out_.kernels[step.kernel]; // a row op with its prologue
      step.nodes.insert(step.nodes.begin(), k.nodes.begin(), k.nodes.end());
      step.reads = k.buffers;
      step.reads.insert(step.reads.end(), n.inputs.begin() + 1, n.inputs.end());
    }
  }

  /// Start steps move up to just after the steps that make their operands, but never above an
  /// earlier step of the Collective family (every rank must issue collectives in the same
  /// order, and every rank plans the same graph the same way); each then gets a wait step just
  /// before the first step that reads its value (at the end when only the caller does). The
  /// steps between run while the collective is under way. A wait that would come right after
  /// its start is left out: with nothing to overlap, the start step runs the blocking call
  /// (Open MPI's blocking collectives are faster than its non-blocking ones plus a wait).
  void split_async() {
    if (!p_.start || !p_.wait) return;
    std::vector<LirStep>& steps = out_.steps;
    auto starts = [&](const LirStep& s) { return s.rule == p_.start; };
    if (std::none_of(steps.begin(), steps.end(), starts)) return;
    auto collective = [&](const LirStep& s) {
      return op_family(g_.node(s.node).op.kind()) == Family::Collective;
    };
    auto makes = [](const LirStep& s, NodeId id) {
      if (s.writes.empty()) return s.node == id; // a view
      return std::find(s.writes.begin(), s.writes.end(), id) != s.writes.end();
    };
    std::vector<LirStep> order;
    order.reserve(steps.size());
    for (LirStep& step : steps) {
      std::size_t at = order.size();
      if (starts(step)) {
        at = 0;
        for (std::size_t i = order.size(); i-- > 0;) {
          const LirStep& o = order[i];
          if (collective(o) || std::any_of(step.reads.begin(), step.reads.end(),
                                           [&](NodeId r) { return makes(o, r); })) {
            at = i + 1;
            break;
          }
        }
      }
      order.insert(order.begin() + std::ptrdiff_t(at), std::move(step));
    }
    steps.clear();
    std::vector<LirStep> open; // the wait steps of collectives under way, in start order
    for (LirStep& step : order) {
      for (auto w = open.begin(); w != open.end();) {
        if (std::find(step.reads.begin(), step.reads.end(), w->node) == step.reads.end()) {
          ++w;
          continue;
        }
        if (!started_last(*w)) steps.push_back(std::move(*w));
        w = open.erase(w);
      }
      if (starts(step)) {
        LirStep wait{p_.wait, step.node, {}, step.reads, {}, kNoKernel};
        wait.reads.push_back(step.node);
        open.push_back(std::move(wait));
      }
      steps.push_back(std::move(step));
    }
    for (LirStep& w : open)
      if (!started_last(w)) steps.push_back(std::move(w));
  }
  /// Whether the last step of the plan so far is the start of wait step w's collective.
  bool started_last(const LirStep& w) const {
    return !out_.steps.empty() && out_.steps.back().rule == p_.start &&
           out_.steps.back().node == w.node;
  }

  const Graph& g_;
  const StepPolicy& p_;
  bool outputs_in_arena_;
  std::size_t n_;
  std::vector<int> uses_;
  std::vector<char> live_, needed_, buffer_read_, absorbed_, view_;
  std::vector<const StepRule*> absorber_;
  std::vector<std::size_t> region_, step_of_, kernel_step_;
  std::map<std::vector<int64_t>, std::vector<std::size_t>> by_shape_; ///< kernels by shape
  Partition out_;
};

} // namespace

std::optional<uint64_t> view_offset(const Graph& g, const Node& n) {
  if (n.inputs.empty() || !n.shape.is_static()) return std::nullopt;
  const Shape& in = g.shape(n.inputs[0]);
  if (!in.is_static() || in.dtype() != n.shape.dtype()) return std::nullopt;
  OpKind k = n.op.kind();
  if (has_trait(k, kView)) return 0; // reshape, stop_gradient: the same bytes
  int64_t axis = 0, start = 0;
  if (k == OpKind::Narrow) {
    const auto& a = n.op.attrs<NarrowAttrs>();
    axis = a.axis, start = a.start;
  } else if (k == OpKind::Slice) {
    const auto& a = n.op.attrs<SliceAttrs>();
    if (a.step != 1) return std::nullopt;
    axis = a.axis, start = a.start;
  } else {
    return std::nullopt;
  }
  // A contiguous range [start, start + len) of `axis`: every dim before the axis is 1.
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

Partition partition(const Graph& g, const StepPolicy& policy, bool outputs_in_arena) {
  return Partitioner(g, policy, outputs_in_arena).run();
}

} // namespace rlx::ir
