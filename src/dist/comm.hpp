// src/dist/comm.hpp -- the transport under rlx::dist and the Collective kernels: MPI calls on raw
// buffers (src/dist/mpi.cpp, the only file with MPI headers), or one process without MPI
// (src/dist/serial.cpp). Every function checks MPI's return code and throws rlx::Error naming
// `what` (the op) and MPI's message.
#pragma once

#include "rlx/error.hpp"
#include "rlx/ir/attr_enums.hpp"
#include "rlx/ir/dtype.hpp"

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace rlx::dist::detail {

// The blocking calls (all_reduce ... reduce_sum) run one blocking MPI call each; one that lasts
// longer than wait_timeout() ends the process with a message naming `what` and the rank (a
// watchdog thread: a blocking call cannot throw), and the launcher ends the job.

/// x <- op over ranks of x, count elements of dtype t (f32, f64, i32, i64), in place.
void all_reduce(void* x, int64_t count, ir::DType t, ir::CollectiveOp op, std::string_view what);
/// out <- op over ranks of in (in == out: in place). No copy of in is made first: MPI reads it.
void all_reduce_into(const void* in, void* out, int64_t count, ir::DType t, ir::CollectiveOp op,
                     std::string_view what);
/// out <- the ranks' `in` (bytes each) one after the other, in rank order.
void all_gather(const void* in, void* out, int64_t bytes, std::string_view what);
/// out (count elements) <- block `rank` of the sum over ranks of in (size() * count elements).
void reduce_scatter_sum(const void* in, void* out, int64_t count, ir::DType t,
                        std::string_view what);
/// x <- root's x (bytes), in place.
void broadcast(void* x, int64_t bytes, int root, std::string_view what);
/// out <- sum over ranks of in on root (count elements); out is untouched elsewhere.
void reduce_sum(const void* in, void* out, int64_t count, ir::DType t, int root,
                std::string_view what);
/// Point to point. A message to this rank itself (peer == rank()) is queued in the process and
/// taken by the next recv of that tag, so a graph may send to itself (and a single process can
/// run send and recv); a recv with no such message queued is an rlx::Error, not a wait.
void send(const void* x, int64_t bytes, int peer, int tag, std::string_view what);
void recv(void* x, int64_t bytes, int peer, int tag, std::string_view what);
/// The transport's own send and recv (other ranks only).
void send_to(const void* x, int64_t bytes, int peer, int tag, std::string_view what);
void recv_from(void* x, int64_t bytes, int peer, int tag, std::string_view what);

/// Non-blocking forms (the JIT's start steps): the collective begins now; its buffers must stay
/// untouched until wait(key) returns, key being the result's address (x or out). Every rank
/// must start the same collectives in the same order, as for the blocking ones.
void start_all_reduce(void* x, int64_t count, ir::DType t, ir::CollectiveOp op,
                      std::string_view what);
void start_all_gather(const void* in, void* out, int64_t bytes, std::string_view what);
void start_reduce_scatter_sum(const void* in, void* out, int64_t count, ir::DType t,
                              std::string_view what);
void start_broadcast(void* x, int64_t bytes, int root, std::string_view what);
/// Keyed on out; out is untouched on the ranks other than root.
void start_reduce_sum(const void* in, void* out, int64_t count, ir::DType t, int root,
                      std::string_view what);
/// Keyed on x. A message to this rank itself is queued (send) or taken (recv) at once, as by
/// send and recv: nothing is left under way.
void start_send(const void* x, int64_t bytes, int peer, int tag, std::string_view what);
void start_recv(void* x, int64_t bytes, int peer, int tag, std::string_view what);
/// The transport's own non-blocking send and recv (other ranks only).
void start_send_to(const void* x, int64_t bytes, int peer, int tag, std::string_view what);
void start_recv_from(void* x, int64_t bytes, int peer, int tag, std::string_view what);
/// Finishes the collective started on key (nothing when none is under way there). Like every
/// non-blocking wait of the transport, it polls at most wait_timeout() seconds, then throws
/// rlx::Error naming `what`, the rank and the wait, and every later call fails at once: the job
/// cannot go on (the terminate handler ends every rank when nobody catches it).
void wait(const void* key, std::string_view what);

/// RLX_DIST_TIMEOUT: how many seconds a wait lasts before it fails (default 300; 0: no limit).
/// rlx::Error for a value that is not a number >= 0.
double wait_timeout();
/// A JIT wait step finished a collective its start step began `steps` steps before it.
void note_overlap(int64_t steps);

/// The job's state: rank 0 of 1 until start() and after stop().
int rank();
int size();
/// Whether this transport is MPI.
bool is_mpi();
/// Joins the job (idempotent); whether it is joined.
void start();
bool started();
void barrier(std::string_view what);
void stop();
/// Ends every process of the job with `code` (MPI_Abort), or this one without MPI.
[[noreturn]] void abort_job(int code);

} // namespace rlx::dist::detail
