// jit/collective_step.cpp -- collectives as two steps of the JIT's plan (StepPolicy::start and
// ::wait): the start step hands the operand to a non-blocking MPI call (src/dist/comm.hpp) as
// soon as the operand is made, and the wait step, which the planner puts just before the first
// step reading the result, finishes it; the steps between run while the data travels. Taken:
// all_reduce and broadcast (in place on the result), all_gather and reduce_scatter along an axis
// with only size-1 dims before it (each rank's block is contiguous). The other collectives, and
// gathers along inner axes, stay blocking interpreter steps.
#include "steps.hpp"

#include "dist/comm.hpp"
#include "interp/kernels.hpp"

#include <cstring>

namespace rlx::jit {

namespace {

namespace dd = rlx::dist::detail;

/// Whether each rank's block of n's gathered (or scattered) axis is contiguous.
bool contiguous_blocks(const ir::Graph& g, const ir::Node& n) {
  const auto& a = n.op.attrs<ir::GatherRanksAttrs>();
  const ir::Shape& x = g.shape(n.inputs[0]);
  int64_t axis = interp::detail::norm_axis(a.axis, x.rank());
  return x.is_static() && interp::detail::split_at(x, axis).outer == 1;
}

bool overlaps(const ir::Graph& g, const ir::Node& n) {
  if (!n.shape.is_static()) return false;
  switch (n.op.kind()) {
  case ir::OpKind::AllReduce:
  case ir::OpKind::Broadcast:
    return true;
  case ir::OpKind::AllGather:
  case ir::OpKind::ReduceScatter:
    return contiguous_blocks(g, n);
  default:
    return false;
  }
}

/// The job must have the size and ranks the node was built for (as the interpreter's kernels
/// check).
void check_job(const ir::Node& n) {
  if (n.op.kind() == ir::OpKind::Broadcast) {
    int64_t root = n.op.attrs<ir::RootAttrs>().root;
    if (root >= dd::size())
      fail(ErrorKind::Runtime, n.op.name(), ": root ", root, " is not a rank of this job of ",
           dd::size());
    return;
  }
  if (n.op.kind() == ir::OpKind::AllReduce) return;
  int64_t built = n.op.attrs<ir::GatherRanksAttrs>().ranks;
  if (built != dd::size())
    fail(ErrorKind::Runtime, n.op.name(), ": built for ", built, " ranks, but the job has ",
         dd::size(), " (", ir::short_str(n.shape), ")");
}

class StartStep final : public PreparedStep {
public:
  StartStep(const ir::Graph& g, const ir::Node& n)
      : node_(n), in_(n.inputs[0]), in_bytes_(uint64_t(*g.shape(in_).size_bytes())),
        out_bytes_(uint64_t(*n.shape.size_bytes())) {}
  void run(RunState& s) const override {
    check_job(node_);
    std::byte* out = s.result(node_.id);
    const std::byte* in = s.ptr[in_.index];
    if (out_bytes_ == 0 || in_bytes_ == 0) return;
    ir::DType t = node_.shape.dtype();
    std::string_view what = node_.op.name();
    switch (node_.op.kind()) {
    case ir::OpKind::AllReduce:
      std::memcpy(out, in, out_bytes_);
      dd::start_all_reduce(out, *node_.shape.num_elements(), t,
                           node_.op.attrs<ir::AllReduceAttrs>().op, what);
      break;
    case ir::OpKind::Broadcast:
      std::memcpy(out, in, out_bytes_);
      dd::start_broadcast(out, int64_t(out_bytes_), int(node_.op.attrs<ir::RootAttrs>().root),
                          what);
      break;
    case ir::OpKind::AllGather:
      dd::start_all_gather(in, out, int64_t(in_bytes_), what);
      break;
    case ir::OpKind::ReduceScatter:
      dd::start_reduce_scatter_sum(in, out, *node_.shape.num_elements(), t, what);
      break;
    default:
      throw InternalError("jit: a start step for " + std::string(what));
    }
  }

private:
  const ir::Node& node_;
  ir::NodeId in_;
  uint64_t in_bytes_, out_bytes_;
};

class WaitStep final : public PreparedStep {
public:
  WaitStep(const ir::Node& n, int64_t between) : node_(n), between_(between) {}
  void run(RunState& s) const override {
    dd::wait(s.ptr[node_.id.index], node_.op.name());
    dd::note_overlap(between_);
  }

private:
  const ir::Node& node_;
  int64_t between_; ///< steps of the plan between the start and this wait
};

class StartRule final : public JitRule {
public:
  using JitRule::JitRule;
  bool takes(const ir::Graph& g, const ir::Node& n) const override { return overlaps(g, n); }
  std::unique_ptr<PreparedStep> prepare(PrepareContext& c, std::size_t i) const override {
    return std::make_unique<StartStep>(c.lir.mir, c.lir.mir.node(c.lir.steps[i].node));
  }
};

class WaitRule final : public JitRule {
public:
  using JitRule::JitRule;
  /// The planner adds wait steps after start steps; no node is one of its own.
  bool takes(const ir::Graph&, const ir::Node&) const override { return false; }
  std::unique_ptr<PreparedStep> prepare(PrepareContext& c, std::size_t i) const override {
    const ir::LirStep& step = c.lir.steps[i];
    std::size_t start = i;
    while (start-- > 0)
      if (c.lir.steps[start].node == step.node && c.lir.steps[start].rule != this) break;
    if (start >= i) throw InternalError("jit: a wait step without its start step");
    return std::make_unique<WaitStep>(c.lir.mir.node(step.node), int64_t(i - start - 1));
  }
};

} // namespace

const JitRule& collective_start_rule() {
  static const StartRule rule("start");
  return rule;
}

const JitRule& collective_wait_rule() {
  static const WaitRule rule("wait");
  return rule;
}

} // namespace rlx::jit
