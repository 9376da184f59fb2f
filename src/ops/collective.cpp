// src/ops/collective.cpp -- shape rules of the collectives (semantics in include/rlx/ir/ops.def).
// A rule sees shapes only, never the running job: all_gather and reduce_scatter carry the number
// of ranks they were built for, and the kernels check it against the job's size.
#include "infer_common.hpp"
#include "support/size_math.hpp"

namespace rlx::ir::detail {

namespace {

void need_reducible(const Op& op, std::span<const Shape> in, CollectiveOp how) {
  DType t = in[0].dtype();
  bool ok = t == DType::F32 || t == DType::F64 ||
            (how != CollectiveOp::Mean && (t == DType::I32 || t == DType::I64));
  if (!ok)
    fail(ErrorKind::Type, op.name(), ": ", how == CollectiveOp::Mean ? "mean" : "reducing",
         " needs f32 or f64", how == CollectiveOp::Mean ? "" : " (or i32, i64)", " operands, got ",
         shapes_str(in));
}

Shape scaled_axis(const Op& op, std::span<const Shape> in, bool gather) {
  const auto& a = op.attrs<GatherRanksAttrs>();
  const Shape& x = in[0];
  if (x.rank() == 0) shape_error(op, in, "needs an operand of rank >= 1");
  if (a.ranks < 1) shape_error(op, in, "ranks must be >= 1, got ", a.ranks);
  int64_t axis = norm_axis(op, in, a.axis, x.rank());
  int64_t len = static_size(x.dims()[std::size_t(axis)]);
  std::vector<Dim> d = x.dims();
  if (gather) {
    std::optional<int64_t> n = rlx::detail::checked_mul(len, a.ranks);
    if (!n) fail(ErrorKind::Limit, op.name(), ": the gathered axis's size overflows int64");
    d[std::size_t(axis)] = Dim(*n);
  } else {
    if (len % a.ranks != 0)
      shape_error(op, in, "axis ", axis, " (size ", len, ") must split into ", a.ranks,
                  " equal blocks, one per rank");
    d[std::size_t(axis)] = Dim(len / a.ranks);
  }
  return Shape(d, x.dtype());
}

void need_rank_index(const Op& op, std::span<const Shape> in, int64_t r, const char* what) {
  if (r < 0) shape_error(op, in, what, " must be a rank index >= 0, got ", r);
}

} // namespace

std::optional<Shape> infer_collective(const Op& op, std::span<const Shape> in) {
  switch (op.kind()) {
  case OpKind::AllReduce:
    need_reducible(op, in, op.attrs<AllReduceAttrs>().op);
    return in[0];
  case OpKind::AllGather:
    return scaled_axis(op, in, true);
  case OpKind::ReduceScatter:
    need_reducible(op, in, CollectiveOp::Sum);
    return scaled_axis(op, in, false);
  case OpKind::Broadcast:
    need_rank_index(op, in, op.attrs<RootAttrs>().root, "root");
    return in[0];
  case OpKind::ReduceToRoot:
    need_reducible(op, in, CollectiveOp::Sum);
    need_rank_index(op, in, op.attrs<RootAttrs>().root, "root");
    return in[0];
  case OpKind::Send:
  case OpKind::Recv:
    need_rank_index(op, in, op.attrs<PeerAttrs>().peer, "peer");
    if (op.attrs<PeerAttrs>().tag < 0 || op.attrs<PeerAttrs>().tag > 32767)
      shape_error(op, in, "tag must be in [0, 32767], got ", op.attrs<PeerAttrs>().tag);
    return in[0];
  default:
    return std::nullopt;
  }
}

} // namespace rlx::ir::detail
