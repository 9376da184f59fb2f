// src/interp/collective.cpp -- the collectives' kernels: each hands its operand's bytes to the
// transport (src/dist/comm.hpp: MPI, or one process) in the operand's own dtype, so a sum over
// ranks rounds as MPI's reduction does and every rank gets the same bytes. Axis layouts are
// rearranged here: MPI gathers and scatters contiguous blocks in rank order, so all_gather
// gathers [outer, len, inner] blocks and interleaves them to [outer, ranks * len, inner], and
// reduce_scatter does the reverse before reducing.
#include "dist/comm.hpp"
#include "kernels.hpp"

#include <cstring>

namespace rlx::interp::detail {

namespace {

std::byte* data(Buffer& b) { return b.bytes().data(); }
const std::byte* data(const Buffer& b) { return b.bytes().data(); }

/// The job must still have the size the node was built for (its shape depends on it).
int64_t job_ranks(const ir::Node& n) {
  int64_t built = n.op.attrs<ir::GatherRanksAttrs>().ranks;
  if (built != rlx::dist::detail::size())
    fail(ErrorKind::Runtime, n.op.name(), ": built for ", built, " ranks, but the job has ",
         rlx::dist::detail::size(), " (", ir::short_str(n.shape), ")");
  return built;
}

void check_rank(const ir::Node& n, int64_t r, const char* what) {
  if (r >= rlx::dist::detail::size())
    fail(ErrorKind::Runtime, n.op.name(), ": ", what, " ", r, " is not a rank of this job of ",
         rlx::dist::detail::size());
}

/// Block b of `blocks` equal blocks of each of `outer` rows (bytes each) copied between a
/// [outer, blocks, len] and a [blocks, outer, len] layout.
void interleave(const std::byte* from, std::byte* to, int64_t outer, int64_t blocks, int64_t len,
                bool to_rank_major) {
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t b = 0; b < blocks; ++b) {
      int64_t row_major = (o * blocks + b) * len, rank_major = (b * outer + o) * len;
      if (to_rank_major)
        std::memcpy(to + rank_major, from + row_major, std::size_t(len));
      else
        std::memcpy(to + row_major, from + rank_major, std::size_t(len));
    }
}

} // namespace

RLX_KERNEL(AllReduce) {
  Buffer out = Buffer::uninitialized(n.shape);
  if (out.numel() == 0) return out;
  std::memcpy(data(out), data(*in[0]), out.bytes().size());
  rlx::dist::detail::all_reduce(data(out), out.numel(), out.dtype(),
                                n.op.attrs<ir::AllReduceAttrs>().op, n.op.name());
  return out;
}

RLX_KERNEL(AllGather) {
  int64_t ranks = job_ranks(n);
  Buffer out = Buffer::uninitialized(n.shape);
  if (out.numel() == 0) return out;
  const Buffer& x = *in[0];
  AxisSplit s =
      split_at(x.shape(), norm_axis(n.op.attrs<ir::GatherRanksAttrs>().axis, x.shape().rank()));
  int64_t block = s.len * s.inner * int64_t(ir::size_bytes(x.dtype()));
  if (s.outer == 1) {
    rlx::dist::detail::all_gather(data(x), data(out), int64_t(x.bytes().size()), n.op.name());
    return out;
  }
  Buffer gathered = Buffer::uninitialized(n.shape); // [ranks, outer, len, inner]
  rlx::dist::detail::all_gather(data(x), data(gathered), int64_t(x.bytes().size()), n.op.name());
  interleave(data(gathered), data(out), s.outer, ranks, block, false);
  return out;
}

RLX_KERNEL(ReduceScatter) {
  int64_t ranks = job_ranks(n);
  Buffer out = Buffer::uninitialized(n.shape);
  if (out.numel() == 0) return out;
  const Buffer& x = *in[0];
  AxisSplit s =
      split_at(n.shape, norm_axis(n.op.attrs<ir::GatherRanksAttrs>().axis, n.shape.rank()));
  int64_t block = s.len * s.inner * int64_t(ir::size_bytes(x.dtype()));
  if (s.outer == 1) {
    rlx::dist::detail::reduce_scatter_sum(data(x), data(out), out.numel(), x.dtype(), n.op.name());
    return out;
  }
  Buffer ranked = Buffer::uninitialized(x.shape()); // [ranks, outer, len, inner]
  interleave(data(x), data(ranked), s.outer, ranks, block, true);
  rlx::dist::detail::reduce_scatter_sum(data(ranked), data(out), out.numel(), x.dtype(),
                                        n.op.name());
  return out;
}

RLX_KERNEL(Broadcast) {
  int64_t root = n.op.attrs<ir::RootAttrs>().root;
  check_rank(n, root, "root");
  Buffer out = Buffer::uninitialized(n.shape);
  if (out.numel() == 0) return out;
  std::memcpy(data(out), data(*in[0]), out.bytes().size());
  rlx::dist::detail::broadcast(data(out), int64_t(out.bytes().size()), int(root), n.op.name());
  return out;
}

RLX_KERNEL(ReduceToRoot) {
  int64_t root = n.op.attrs<ir::RootAttrs>().root;
  check_rank(n, root, "root");
  Buffer out(n.shape); // zeros: what the ranks other than root hold
  if (out.numel() == 0) return out;
  rlx::dist::detail::reduce_sum(data(*in[0]), data(out), out.numel(), out.dtype(), int(root),
                                n.op.name());
  return out;
}

RLX_KERNEL(Send) {
  const auto& a = n.op.attrs<ir::PeerAttrs>();
  check_rank(n, a.peer, "peer");
  Buffer out = Buffer::uninitialized(n.shape);
  if (out.numel() == 0) return out;
  std::memcpy(data(out), data(*in[0]), out.bytes().size());
  rlx::dist::detail::send(data(out), int64_t(out.bytes().size()), int(a.peer), int(a.tag),
                          n.op.name());
  return out;
}

RLX_KERNEL(Recv) {
  const auto& a = n.op.attrs<ir::PeerAttrs>();
  check_rank(n, a.peer, "peer");
  Buffer out = Buffer::uninitialized(n.shape);
  if (out.numel() == 0) return out;
  rlx::dist::detail::recv(data(out), int64_t(out.bytes().size()), int(a.peer), int(a.tag),
                          n.op.name());
  return out;
}

} // namespace rlx::interp::detail
