// src/passes/shard_propagate.cpp -- rlx::dist::shard's pass. The program is the serial one, with
// its serial shapes; the annotations say which values to split over the ranks. The pass rewrites
// the graph into this rank's part: each value is replicated (the whole value on every rank),
// sharded (this rank's block along an axis, a local shape) or partial (this rank's term of a sum
// over ranks), and it adds the collectives so that every output is the whole value, with the
// serial shape, on every rank. In graph order:
// - an annotation becomes this rank's block (one rank: the whole value);
// - element-wise ops keep the sharded axis of their operands; a replicated operand spanning that
//   axis is cut to this rank's block (no communication);
// - matmul: rows of a sharded a or columns of a sharded b give a sharded product; a contraction
//   over a sharded axis (of both operands, or of one, the other cut locally) gives a partial one;
// - reductions over other axes keep the sharded axis (renumbered); over the sharded axis, the
//   local sum, mean, max or min is completed by the all_reduce of the same op (equal blocks make
//   the mean of the means the mean);
// - a partial value is completed by an all_reduce (sum) before anything reads it;
// - any other op, and operands sharded along different axes, read all-gathered (whole) values;
// - outputs are all-gathered (sharded) or all-reduced (partial).
// Shapes after a rewritten node are inferred again. Every rank has the same graph and so adds the
// same collectives in the same order. Not an optimization but what the annotation means, so
// compile_pipeline always runs it first (without an annotation it does nothing).
#include "dist/shard.hpp"
#include "rewriter.hpp"

#include "rlx/passes.hpp"

#include "rlx/ir/infer.hpp"

#include <algorithm>

namespace rlx::passes {

namespace {

/// " (at file.cpp:12)": the user's line of n, as rlx::Error messages name it.
std::string where(const ir::Node& n) {
  return n.loc.known() ? rlx::detail::cat(" (at ", n.loc.file, ":", n.loc.line, ")") : "";
}

struct Layout {
  enum Kind : uint8_t { Replicated, Sharded, Partial } kind = Replicated;
  int64_t axis = 0;  ///< Sharded: the axis split over ranks
  int64_t ranks = 1; ///< Sharded, Partial: how many ranks hold a block or a term
};

class Propagate {
public:
  explicit Propagate(const ir::Graph& g) : g_(g), rw_(g), lay_(g.len()) {}

  ir::Graph run() {
    for (const ir::Node& n : g_.nodes()) visit(n);
    std::vector<char> done(g_.len(), 0);
    for (ir::NodeId o : g_.outputs) {
      if (done[o.index]++) continue;
      const Layout& l = lay_[o.index];
      const ir::Node& n = g_.node(o);
      if (l.kind == Layout::Sharded) rw_.replace(n, gather(n, rw_[o], l));
      if (l.kind == Layout::Partial) rw_.replace(n, all_reduce(n, rw_[o], ir::CollectiveOp::Sum));
    }
    return rw_.finish();
  }

private:
  void visit(const ir::Node& n) {
    if (std::optional<dist::detail::ShardSpec> s = dist::detail::shard_spec(n); s && !s->block) {
      if (s->ranks == 1 || lay_[n.inputs[0].index].kind != Layout::Replicated) {
        // One rank, or a value split already: the annotation goes (so the pass, run again,
        // finds nothing to do).
        rw_.replace(n, rw_[n.inputs[0]]);
        lay_[n.id.index] = lay_[n.inputs[0].index];
        return;
      }
      rw_.replace(n, block(n, rw_[n.inputs[0]], s->axis, s->ranks));
      lay_[n.id.index] = Layout{Layout::Sharded, s->axis, s->ranks};
      return;
    }
    std::vector<ir::NodeId> ins = rw_.inputs_of(n);
    std::vector<Layout> ls;
    for (ir::NodeId in : n.inputs) ls.push_back(lay_[in.index]);
    bool spread = std::any_of(ls.begin(), ls.end(),
                              [](const Layout& l) { return l.kind != Layout::Replicated; });
    if (!spread) {
      emit(n, ins);
      return;
    }
    for (std::size_t i = 0; i < ins.size(); ++i)
      if (ls[i].kind == Layout::Partial) {
        ins[i] = all_reduce(n, ins[i], ir::CollectiveOp::Sum);
        ls[i] = Layout{};
      }
    ir::Family f = ir::op_family(n.op.kind());
    if (f == ir::Family::EwUnary || f == ir::Family::EwBinary || f == ir::Family::EwTernary)
      lay_[n.id.index] = elementwise(n, ins, ls);
    else if (n.op.kind() == ir::OpKind::MatMul)
      lay_[n.id.index] = matmul(n, ins, ls);
    else if (ir::as_reduce_op(n.op.kind()) && ls[0].kind == Layout::Sharded)
      return reduce(n, ins, ls[0]);
    else
      gather_all(n, ins, ls);
    emit(n, ins);
  }

  Layout elementwise(const ir::Node& n, std::vector<ir::NodeId>& ins, std::vector<Layout>& ls) {
    auto out_rank = int64_t(n.shape.rank());
    std::optional<Layout> out;
    for (std::size_t i = 0; i < ins.size(); ++i) {
      if (ls[i].kind != Layout::Sharded) continue;
      Layout at = ls[i];
      at.axis += out_rank - rank_of(ins[i]);
      if (!out) {
        out = at;
      } else if (at.axis != out->axis || at.ranks != out->ranks) {
        ins[i] = gather(n, ins[i], ls[i]);
        ls[i] = Layout{};
      }
    }
    if (!out) return Layout{}; // only partial operands, completed above
    // A replicated operand that spans the sharded axis (not broadcast along it): its block.
    for (std::size_t i = 0; i < ins.size(); ++i) {
      if (ls[i].kind != Layout::Replicated) continue;
      int64_t d = out->axis - (out_rank - rank_of(ins[i]));
      if (d >= 0 && rw_.out().shape(ins[i]).sizes()[std::size_t(d)] != 1)
        ins[i] = block(n, ins[i], d, out->ranks);
    }
    return *out;
  }

  Layout matmul(const ir::Node& n, std::vector<ir::NodeId>& ins, std::vector<Layout>& ls) {
    int64_t ra = rank_of(ins[0]), rb = rank_of(ins[1]);
    auto out_rank = int64_t(n.shape.rank());
    const Layout &a = ls[0], &b = ls[1];
    auto sharded = [](const Layout& l, int64_t axis) {
      return l.kind == Layout::Sharded && l.axis == axis;
    };
    bool whole_a = a.kind == Layout::Replicated, whole_b = b.kind == Layout::Replicated;
    if (ra >= 2 && rb >= 2) {
      if (sharded(a, ra - 1) && sharded(b, rb - 2) && a.ranks == b.ranks)
        return Layout{Layout::Partial, 0, a.ranks};
      if (sharded(a, ra - 1) && whole_b) { // the contraction: b's rows cut to match
        ins[1] = block(n, ins[1], rb - 2, a.ranks);
        return Layout{Layout::Partial, 0, a.ranks};
      }
      if (whole_a && sharded(b, rb - 2)) {
        ins[0] = block(n, ins[0], ra - 1, b.ranks);
        return Layout{Layout::Partial, 0, b.ranks};
      }
      if (sharded(a, ra - 2) && whole_b) return Layout{Layout::Sharded, out_rank - 2, a.ranks};
      if (whole_a && sharded(b, rb - 1)) return Layout{Layout::Sharded, out_rank - 1, b.ranks};
    }
    gather_all(n, ins, ls);
    return Layout{};
  }

  void reduce(const ir::Node& n, std::vector<ir::NodeId>& ins, const Layout& x) {
    const auto& a = n.op.attrs<ir::ReduceAttrs>();
    int64_t rank = rank_of(ins[0]), before = 0;
    bool over = false;
    for (int64_t ax : a.axes) {
      int64_t k = ax < 0 ? ax + rank : ax;
      over |= k == x.axis;
      before += k < x.axis;
    }
    if (!over) {
      emit(n, ins);
      lay_[n.id.index] = Layout{Layout::Sharded, a.keep_dim ? x.axis : x.axis - before, x.ranks};
      return;
    }
    std::optional<ir::CollectiveOp> op = completing(*ir::as_reduce_op(n.op.kind()));
    if (!op) { // a product over ranks: reduce the gathered value
      std::vector<Layout> ls{x};
      gather_all(n, ins, ls);
      emit(n, ins);
      return;
    }
    ir::NodeId local = emit(n, ins);
    rw_.replace(n, all_reduce(n, local, *op));
  }

  /// The collective completing a reduction over ranks, if there is one.
  static std::optional<ir::CollectiveOp> completing(ir::ReduceOp r) {
    if (r == ir::ReduceOp::Sum) return ir::CollectiveOp::Sum;
    if (r == ir::ReduceOp::Mean) return ir::CollectiveOp::Mean;
    if (r == ir::ReduceOp::Max) return ir::CollectiveOp::Max;
    if (r == ir::ReduceOp::Min) return ir::CollectiveOp::Min;
    return std::nullopt;
  }

  void gather_all(const ir::Node& n, std::vector<ir::NodeId>& ins, std::vector<Layout>& ls) {
    for (std::size_t i = 0; i < ins.size(); ++i)
      if (ls[i].kind == Layout::Sharded) {
        ins[i] = gather(n, ins[i], ls[i]);
        ls[i] = Layout{};
      }
  }

  /// n with operands ins, its shape inferred again when an operand's shape changed.
  ir::NodeId emit(const ir::Node& n, const std::vector<ir::NodeId>& ins) {
    std::vector<ir::Shape> shapes;
    bool same = true;
    for (std::size_t i = 0; i < ins.size(); ++i) {
      shapes.push_back(rw_.out().shape(ins[i]));
      same = same && shapes.back() == g_.shape(n.inputs[i]);
    }
    if (same) return rw_.emit(n, n.op, ins);
    std::optional<ir::Shape> s = ir::infer_shape(n.op, shapes);
    if (!s)
      fail(ErrorKind::Unsupported, "shard_propagate: ", n.op.name(),
           " reads a gathered value, but its shape cannot be inferred again", where(n));
    ir::NodeId id = rw_.append(n, n.op, ins, *s);
    rw_.replace(n, id);
    return id;
  }

  ir::NodeId gather(const ir::Node& n, ir::NodeId x, const Layout& l) {
    ir::Op op(ir::OpKind::AllGather, ir::GatherRanksAttrs{l.axis, l.ranks});
    ir::Shape s = *ir::infer_shape(op, std::vector<ir::Shape>{rw_.out().shape(x)});
    return rw_.append(n, std::move(op), {x}, std::move(s));
  }

  /// This rank's block of the whole value x along axis (no communication).
  ir::NodeId block(const ir::Node& n, ir::NodeId x, int64_t axis, int64_t ranks) {
    ir::Shape s = rw_.out().shape(x);
    std::vector<int64_t> d = s.sizes();
    if (d[std::size_t(axis)] % ranks != 0)
      fail(ErrorKind::Shape, "shard_propagate: ", n.op.name(), " needs this rank's block of ",
           ir::short_str(s), " along axis ", axis, ", which does not split into ", ranks,
           " equal blocks", where(n));
    std::vector<ir::Dim> dims = s.dims();
    dims[std::size_t(axis)] = ir::Dim(d[std::size_t(axis)] / ranks);
    return rw_.append(n, dist::detail::shard_op(dist::detail::ShardSpec{axis, ranks, 1}), {x},
                      ir::Shape(std::move(dims), s.dtype()));
  }

  ir::NodeId all_reduce(const ir::Node& n, ir::NodeId x, ir::CollectiveOp how) {
    ir::Op op(ir::OpKind::AllReduce, ir::AllReduceAttrs{how});
    ir::Shape s = *ir::infer_shape(op, std::vector<ir::Shape>{rw_.out().shape(x)});
    return rw_.append(n, std::move(op), {x}, std::move(s));
  }

  int64_t rank_of(ir::NodeId id) const { return int64_t(rw_.out().shape(id).rank()); }

  const ir::Graph& g_;
  Rewriter rw_;
  std::vector<Layout> lay_; ///< per node of g_
};

} // namespace

bool shard_propagate(ir::Graph& g, const PassOptions&) {
  if (std::none_of(g.nodes().begin(), g.nodes().end(), [](const ir::Node& n) {
        std::optional<dist::detail::ShardSpec> s = dist::detail::shard_spec(n);
        return s && !s->block;
      }))
    return false;
  g = Propagate(g).run();
  return true;
}

} // namespace rlx::passes
