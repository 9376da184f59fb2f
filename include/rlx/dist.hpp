// include/rlx/dist.hpp -- rlx::dist: the processes of an MPI job (started by mpirun), and the
// collectives between them on Tensors. The collectives are op kinds of the graph (ops.def's
// Collective family), so they are recorded, jitted and differentiated like any other op; MPI
// carries the data (src/dist/). Semantics and launching: docs/distributed.md.
//
//   rlx::dist::init();                                   // once, before any collective
//   Tensor g = rlx::dist::all_reduce(local_grad, rlx::dist::CollectiveOp::Mean);
//   rlx::dist::finalize();                               // or let the process exit
//
// Without MPI at build time, or run without a launcher, the job is one process: rank() == 0,
// size() == 1 and every collective is a copy. A failure on one rank must not leave the others
// waiting: init() installs a terminate handler that prints the uncaught exception with the rank
// and calls MPI_Abort, which ends every process of the job.
#pragma once

#include "rlx/error.hpp"
#include "rlx/ir/attr_enums.hpp"
#include "rlx/tensor.hpp"

#include <string_view>
#include <vector>

namespace rlx::dist {

using ir::CollectiveOp;

/// Whether this build of rlx has MPI (the meson feature `mpi`).
bool built_with_mpi();

/// Joins the job (MPI_Init_thread, at least MPI_THREAD_FUNNELED: rlx's thread pool never calls
/// MPI, the calling thread does). Calling it again is a no-op. expected_size > 0 is the number
/// of processes the program needs: a job of another size is an rlx::Error (for instance
/// expected_size 4 run without mpirun, or with `mpirun -np 2`).
void init(int expected_size = 0, Loc loc = Loc::current());
/// Whether init() ran (and finalize() did not).
bool initialized();
/// This process's index in [0, size()); 0 before init().
int rank();
/// The number of processes of the job; 1 before init().
int size();
/// Waits until every rank reaches it.
void barrier(Loc loc = Loc::current());
/// Leaves the job (MPI_Finalize); later collectives run as on one process.
void finalize();
/// Prints message with this rank's index to stderr and ends every process of the job
/// (MPI_Abort; std::exit without MPI).
[[noreturn]] void abort(std::string_view message, int code = 1);

/// Counters of this process's collectives, to check that the JIT overlaps them with other work.
struct Stats {
  /// Collectives the JIT started with a non-blocking call and finished in a later wait step.
  int64_t overlapped = 0;
  /// Plan steps the JIT ran between those starts and their waits (while the data travelled).
  int64_t steps_overlapped = 0;
};
Stats stats();
void reset_stats();

/// op over every rank's x (same shape and dtype on every rank); the same result on each.
/// Differentiable: the cotangent of a sum is the all_reduce (sum) of the cotangents.
Tensor all_reduce(const Tensor& x, CollectiveOp op = CollectiveOp::Sum, Loc loc = Loc::current());
/// The ranks' x concatenated along axis in rank order (torch.distributed.all_gather_into_tensor).
Tensor all_gather(const Tensor& x, int64_t axis = 0, Loc loc = Loc::current());
/// The sum over ranks of x, split along axis into size() equal blocks: this rank's block.
Tensor reduce_scatter(const Tensor& x, int64_t axis = 0, Loc loc = Loc::current());
/// root's x on every rank.
Tensor broadcast(const Tensor& x, int root = 0, Loc loc = Loc::current());
/// The sum over ranks of x on root; zeros on the other ranks.
Tensor reduce(const Tensor& x, int root = 0, Loc loc = Loc::current());
/// Sends x to rank peer under tag when the result is evaluated (rlx::eval, or reading it, or
/// returning it from a jitted function); its value is x. Lazy like every op, so a discarded
/// result sends nothing: hence [[nodiscard]]. peer may be this rank (the message waits in the
/// process for the recv of that tag).
[[nodiscard]] Tensor send(const Tensor& x, int peer, int tag = 0, Loc loc = Loc::current());
/// What rank peer sends under tag, when evaluated: a tensor of like's shape and dtype. Recording
/// a recv after the send whose result it waits for keeps the two in order on the same rank.
[[nodiscard]] Tensor recv(const Tensor& like, int peer, int tag = 0, Loc loc = Loc::current());

/// Tensor parallelism: this rank's block of x (the same full value on every rank) split along
/// axis into size() equal blocks, marked as a shard. The compile pipeline's shard_propagate pass
/// follows the mark through element-wise ops, matmuls and reductions and adds the collectives
/// that make every graph output the full (replicated) value: a column-split matmul stays
/// sharded, a contraction over a sharded axis becomes a partial sum completed by an all_reduce,
/// and a sharded value is all-gathered where a replicated one is needed. So a serial program
/// with shard() on its weights computes the serial result (docs/distributed.md).
Tensor shard(const Tensor& x, int64_t axis, Loc loc = Loc::current());

/// Data parallelism: every tensor of `grads` all-reduced with op (Mean: each rank holds the
/// gradient of its shard's mean loss) as ONE bucket: the leaves are flattened and concatenated
/// per dtype, reduced by one all_reduce, split and reshaped back. Use inside the jitted step.
std::vector<Tensor> all_reduce_bucket(const std::vector<Tensor>& grads,
                                      CollectiveOp op = CollectiveOp::Mean,
                                      Loc loc = Loc::current());

} // namespace rlx::dist
