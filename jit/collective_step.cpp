// jit/collective_step.cpp -- collectives as steps of the JIT's plan (StepPolicy::start and
// ::wait). Where the plan has independent steps to run meanwhile, the start step hands the
// operand to a non-blocking MPI call (src/dist/comm.hpp) as soon as the operand is made, and the
// wait step, which the planner puts just before the first step reading the result, finishes it.
// Where it has none, the planner leaves the wait out and the start step makes the blocking call
// (MPI_Allreduce, ...): Open MPI's blocking algorithms beat its non-blocking ones, and the call
// reads the operand where it is (no copy into the result first). Taken: all_reduce, broadcast,
// reduce_to_root, send, recv, and all_gather / reduce_scatter along an axis with only size-1
// dims before it (each rank's block is contiguous). Gathers along inner axes stay blocking
// interpreter steps.
#include "steps.hpp"

#include "dist/comm.hpp"
#include "interp/kernels.hpp"

#include <algorithm>
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
  case ir::OpKind::ReduceToRoot:
  case ir::OpKind::Send:
  case ir::OpKind::Recv:
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
void check_rank(const ir::Node& n, int64_t r, const char* what) {
  if (r >= dd::size())
    fail(ErrorKind::Runtime, n.op.name(), ": ", what, " ", r, " is not a rank of this job of ",
         dd::size());
}

void check_job(const ir::Node& n) {
  switch (n.op.kind()) {
  case ir::OpKind::AllReduce:
    return;
  case ir::OpKind::Broadcast:
  case ir::OpKind::ReduceToRoot:
    return check_rank(n, n.op.attrs<ir::RootAttrs>().root, "root");
  case ir::OpKind::Send:
  case ir::OpKind::Recv:
    return check_rank(n, n.op.attrs<ir::PeerAttrs>().peer, "peer");
  default:
    break;
  }
  int64_t built = n.op.attrs<ir::GatherRanksAttrs>().ranks;
  if (built != dd::size())
    fail(ErrorKind::Runtime, n.op.name(), ": built for ", built, " ranks, but the job has ",
         dd::size(), " (", ir::short_str(n.shape), ")");
}

/// A collective's start step, or its whole blocking call when the plan has no wait step for it.
class StartStep final : public PreparedStep {
public:
  StartStep(const ir::Graph& g, const ir::Node& n, bool blocking)
      : node_(n), in_(n.inputs[0]), in_bytes_(uint64_t(*g.shape(in_).size_bytes())),
        out_bytes_(uint64_t(*n.shape.size_bytes())), blocking_(blocking) {}
  void run(RunState& s) const override {
    check_job(node_);
    std::byte* out = s.result(node_.id);
    const std::byte* in = s.ptr[in_.index];
    if (out_bytes_ == 0) return;
    ir::DType t = node_.shape.dtype();
    std::string_view what = node_.op.name();
    int64_t count = *node_.shape.num_elements();
    switch (node_.op.kind()) {
    case ir::OpKind::AllReduce: {
      ir::CollectiveOp op = node_.op.attrs<ir::AllReduceAttrs>().op;
      if (blocking_) return dd::all_reduce_into(in, out, count, t, op, what);
      std::memcpy(out, in, out_bytes_); // MPI_Iallreduce in place: the operand stays intact
      return dd::start_all_reduce(out, count, t, op, what);
    }
    case ir::OpKind::Broadcast: {
      int root = int(node_.op.attrs<ir::RootAttrs>().root);
      if (dd::rank() == root) std::memcpy(out, in, out_bytes_); // the others' is overwritten
      if (blocking_) return dd::broadcast(out, int64_t(out_bytes_), root, what);
      return dd::start_broadcast(out, int64_t(out_bytes_), root, what);
    }
    case ir::OpKind::ReduceToRoot: {
      int root = int(node_.op.attrs<ir::RootAttrs>().root);
      if (dd::rank() != root) std::memset(out, 0, out_bytes_); // what the others hold
      if (blocking_) return dd::reduce_sum(in, out, count, t, root, what);
      return dd::start_reduce_sum(in, out, count, t, root, what);
    }
    case ir::OpKind::Send: {
      const auto& a = node_.op.attrs<ir::PeerAttrs>();
      std::memcpy(out, in, out_bytes_); // the value sent is the result
      if (blocking_) return dd::send(out, int64_t(out_bytes_), int(a.peer), int(a.tag), what);
      return dd::start_send(out, int64_t(out_bytes_), int(a.peer), int(a.tag), what);
    }
    case ir::OpKind::Recv: {
      const auto& a = node_.op.attrs<ir::PeerAttrs>();
      if (blocking_) return dd::recv(out, int64_t(out_bytes_), int(a.peer), int(a.tag), what);
      return dd::start_recv(out, int64_t(out_bytes_), int(a.peer), int(a.tag), what);
    }
    case ir::OpKind::AllGather:
      if (in_bytes_ == 0) return;
      if (blocking_) return dd::all_gather(in, out, int64_t(in_bytes_), what);
      return dd::start_all_gather(in, out, int64_t(in_bytes_), what);
    case ir::OpKind::ReduceScatter:
      if (blocking_) return dd::reduce_scatter_sum(in, out, count, t, what);
      return dd::start_reduce_scatter_sum(in, out, count, t, what);
    default:
      throw InternalError("jit: a start step for " + std::string(what));
    }
  }

private:
  const ir::Node& node_;
  ir::NodeId in_;
  uint64_t in_bytes_, out_bytes_;
  bool blocking_; ///< no wait step follows: the call runs to the end here
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
    const ir::LirStep& step = c.lir.steps[i];
    bool waited = std::any_of(c.lir.steps.begin() + std::ptrdiff_t(i) + 1, c.lir.steps.end(),
                              [&](const ir::LirStep& o) {
                                return o.node == step.node && o.rule == &collective_wait_rule();
                              });
    return std::make_unique<StartStep>(c.lir.mir, c.lir.mir.node(step.node), !waited);
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
