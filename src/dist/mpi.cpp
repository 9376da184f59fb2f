// src/dist/mpi.cpp -- the transport on MPI (the only file with MPI headers). rlx talks on its own
// duplicate of MPI_COMM_WORLD, so a program's own MPI traffic never matches rlx's messages, with
// MPI_ERRORS_RETURN on it: every call's return code is checked and turned into an rlx::Error
// naming the op and MPI's message (MPI's default handler would abort without saying which op).
// Calls are serialized by a mutex: rlx asks for MPI_THREAD_SERIALIZED (the thread pool never
// communicates; whichever thread evaluates a graph does) and accepts MPI_THREAD_FUNNELED, under
// which the thread that called init() must be the one that runs collectives.
#include "comm.hpp"

// The C++ bindings (deprecated, and not warning-free with clang) are not used.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace rlx::dist::detail {

namespace {

struct State {
  std::mutex mutex;
  MPI_Comm comm = MPI_COMM_NULL;
  int rank = 0, size = 1;
  bool started = false, we_initialized = false;
  bool broken = false; ///< a wait timed out: MPI's state is unknown, no call may follow
};
State& state() {
  static State s;
  return s;
}

/// Whether a launcher (mpirun, srun, hydra) started this process: only then is MPI joined. A
/// program run alone stays one process without MPI's singleton start-up.
bool launched() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_SIZE", "PMI_RANK"})
    if (std::getenv(v) != nullptr) return true;
  return false;
}

void check(int rc, std::string_view what) {
  if (rc == MPI_SUCCESS) return;
  char msg[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, msg, &len);
  fail(ErrorKind::Runtime, what, ": MPI failed: ", std::string_view(msg, std::size_t(len)));
}

MPI_Datatype mpi_type(ir::DType t, std::string_view what) {
  switch (t) {
  case ir::DType::F32:
    return MPI_FLOAT;
  case ir::DType::F64:
    return MPI_DOUBLE;
  case ir::DType::I32:
    return MPI_INT32_T;
  case ir::DType::I64:
    return MPI_INT64_T;
  default:
    fail(ErrorKind::Type, what, ": MPI cannot reduce ", ir::dtype_name(t), " values");
  }
}

MPI_Op mpi_op(ir::CollectiveOp op) {
  switch (op) {
  case ir::CollectiveOp::Max:
    return MPI_MAX;
  case ir::CollectiveOp::Min:
    return MPI_MIN;
  default:
    return MPI_SUM; // Mean divides the sum afterwards
  }
}

/// MPI counts are int: a larger message goes in pieces of at most INT_MAX / 2 elements.
constexpr int64_t kChunk = INT_MAX / 2;

int small_count(int64_t n, std::string_view what) {
  if (n > INT_MAX) fail(ErrorKind::Limit, what, ": ", n, " elements exceed MPI's int counts");
  return int(n);
}

template <class T> void divide(void* x, int64_t count, int by) {
  T* p = static_cast<T*>(x);
  for (int64_t i = 0; i < count; ++i) p[i] /= T(by);
}

} // namespace

int rank() { return state().rank; }
int size() { return state().size; }
bool is_mpi() { return true; }
bool started() { return state().started; }

void start() {
  State& s = state();
  std::lock_guard lock(s.mutex);
  if (s.started || !launched()) return;
  int flag = 0;
  MPI_Initialized(&flag);
  if (!flag) {
    int provided = 0;
    if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided) != MPI_SUCCESS)
      fail(ErrorKind::Runtime, "dist::init: MPI_Init_thread failed");
    s.we_initialized = true;
    if (provided < MPI_THREAD_FUNNELED)
      fail(ErrorKind::Runtime, "dist::init: this MPI gives no thread support (level ", provided,
           "); rlx needs MPI_THREAD_FUNNELED or higher");
  }
  check(MPI_Comm_dup(MPI_COMM_WORLD, &s.comm), "dist::init");
  check(MPI_Comm_set_errhandler(s.comm, MPI_ERRORS_RETURN), "dist::init");
  check(MPI_Comm_rank(s.comm, &s.rank), "dist::init");
  check(MPI_Comm_size(s.comm, &s.size), "dist::init");
  s.started = true;
  // A program that ends without finalize() still leaves the job cleanly (mpirun reports a
  // process that exits without MPI_Finalize as failed).
  static bool registered = false;
  if (!registered) {
    registered = true;
    std::atexit([] { stop(); });
  }
}

void stop() {
  State& s = state();
  std::lock_guard lock(s.mutex);
  // After a timed-out wait MPI's state is unknown (MPI_Finalize could wait for the lost rank):
  // the process ends without it, and mpirun reports the job as failed.
  if (!s.started || s.broken) return;
  MPI_Comm_free(&s.comm);
  s.started = false;
  s.rank = 0;
  s.size = 1;
  int done = 0;
  MPI_Finalized(&done);
  if (s.we_initialized && !done) MPI_Finalize();
}

void abort_job(int code) {
  State& s = state();
  if (s.started) MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code);
}

namespace {

void no_broken_job(const State& s, std::string_view what) {
  if (s.broken)
    fail(ErrorKind::Runtime, what, ": rank ", s.rank, " of ", s.size,
         ": an earlier wait timed out, so the job cannot go on (end it: rlx::dist::abort)");
}

/// The watchdog of blocking calls: a thread that wakes every tenth of the timeout (at most once
/// a second) and ends the process when the call armed for longer than RLX_DIST_TIMEOUT is still
/// running. A blocking MPI call cannot be interrupted, and another MPI call (MPI_Abort) from
/// this thread would break MPI_THREAD_SERIALIZED: the process prints the message and exits
/// with 1, and mpirun (or any launcher) ends the other ranks of a job one of whose processes
/// exited without MPI_Finalize. Arming is a clock read and three atomic stores: nothing a call
/// pays for.
struct Watchdog {
  std::atomic<int64_t> since_ns{0}; ///< when the running blocking call began; 0: none runs
  std::atomic<const char*> what{nullptr};
  std::atomic<std::size_t> what_len{0};
};

int64_t steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

Watchdog* watchdog() {
  const double limit = wait_timeout();
  if (!(limit > 0)) return nullptr;
  // Never freed: the thread outlives main() (it is detached), so the state must too.
  static Watchdog* w = [limit] {
    auto* d = new Watchdog;
    std::thread([d, limit] {
      const auto period = std::chrono::duration<double>(std::clamp(limit / 10, 0.01, 1.0));
      for (;;) {
        std::this_thread::sleep_for(period);
        int64_t since = d->since_ns.load(std::memory_order_acquire);
        if (since == 0 || double(steady_ns() - since) * 1e-9 <= limit) continue;
        const State& s = state();
        std::string_view what(d->what.load(), d->what_len.load());
        std::fprintf(stderr,
                     "rlx::dist: rank %d of %d: %.*s: rank %d of %d waited %g s for the other "
                     "ranks (RLX_DIST_TIMEOUT) and gives up: a rank skipped this collective, "
                     "stopped, or waits in another one; this process ends the job\n",
                     s.rank, s.size, int(what.size()), what.data(), s.rank, s.size, limit);
        std::fflush(stderr);
        std::_Exit(1);
      }
    }).detach();
    return d;
  }();
  return w;
}

/// Runs the blocking MPI call(s) in f under the lock and the watchdog.
template <class F> void blocking(std::string_view what, F&& f) {
  State& s = state();
  Watchdog* w = watchdog();
  std::lock_guard lock(s.mutex);
  no_broken_job(s, what);
  if (w) {
    w->what.store(what.data());
    w->what_len.store(what.size());
    w->since_ns.store(steady_ns(), std::memory_order_release);
  }
  // Disarmed however f ends: a failed call throws rlx::Error, which the caller may catch.
  struct Disarm {
    Watchdog* w;
    ~Disarm() {
      if (w) w->since_ns.store(0, std::memory_order_release);
    }
  } disarm{w};
  f();
}

/// A collective under way: its requests, and the division a mean still needs.
struct Pending {
  std::vector<MPI_Request> requests;
  void* mean_of = nullptr;
  int64_t count = 0;
  ir::DType dtype = ir::DType::F32;
  int ranks = 1;
};

/// Polls the requests (MPI_Testall, so the timeout can be checked) until they are done, or
/// fails after wait_timeout() seconds. The lock is taken per poll: another thread's MPI call
/// may come between two polls.
void finish(Pending& p, std::string_view what) {
  State& s = state();
  const double limit = wait_timeout();
  const auto t0 = std::chrono::steady_clock::now();
  for (uint64_t polls = 0; !p.requests.empty(); ++polls) {
    int done = 0;
    {
      std::lock_guard lock(s.mutex);
      check(MPI_Testall(int(p.requests.size()), p.requests.data(), &done, MPI_STATUSES_IGNORE),
            what);
    }
    if (done) break;
    if (polls % 64 != 63) continue;
    // Between polls, the other processes of an oversubscribed machine get its cores.
    std::this_thread::yield();
    double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (limit > 0 && waited > limit) {
      s.broken = true;
      fail(ErrorKind::Runtime, what, ": rank ", s.rank, " of ", s.size, " waited ", limit,
           " s for the other ranks (RLX_DIST_TIMEOUT) and gives up: a rank skipped this ",
           "collective, stopped, or waits in another one; the job cannot go on");
    }
  }
  if (p.mean_of) {
    if (p.dtype == ir::DType::F32)
      divide<float>(p.mean_of, p.count, p.ranks);
    else
      divide<double>(p.mean_of, p.count, p.ranks);
  }
}

Pending begin_all_reduce(void* x, int64_t count, ir::DType t, ir::CollectiveOp op,
                         std::string_view what) {
  State& s = state();
  MPI_Datatype type = mpi_type(t, what);
  Pending p;
  if (!s.started || s.size == 1) return p; // one rank: the value is its own sum, max and mean
  std::lock_guard lock(s.mutex);
  no_broken_job(s, what);
  auto* data = static_cast<std::byte*>(x);
  std::size_t elem = ir::size_bytes(t);
  for (int64_t at = 0; at < count; at += kChunk) {
    int n = int(std::min(kChunk, count - at));
    check(MPI_Iallreduce(MPI_IN_PLACE, data + std::size_t(at) * elem, n, type, mpi_op(op), s.comm,
                         &p.requests.emplace_back()),
          what);
  }
  if (op == ir::CollectiveOp::Mean) {
    p.mean_of = x;
    p.count = count;
    p.dtype = t;
    p.ranks = s.size;
  }
  return p;
}

Pending begin_all_gather(const void* in, void* out, int64_t bytes, std::string_view what) {
  State& s = state();
  Pending p;
  if (!s.started || s.size == 1) {
    std::memcpy(out, in, std::size_t(bytes));
    return p;
  }
  std::lock_guard lock(s.mutex);
  no_broken_job(s, what);
  int n = small_count(bytes, what);
  check(MPI_Iallgather(in, n, MPI_BYTE, out, n, MPI_BYTE, s.comm, &p.requests.emplace_back()),
        what);
  return p;
}

Pending begin_reduce_scatter_sum(const void* in, void* out, int64_t count, ir::DType t,
                                 std::string_view what) {
  State& s = state();
  MPI_Datatype type = mpi_type(t, what);
  Pending p;
  if (!s.started || s.size == 1) {
    std::memcpy(out, in, std::size_t(count) * ir::size_bytes(t));
    return p;
  }
  std::lock_guard lock(s.mutex);
  no_broken_job(s, what);
  check(MPI_Ireduce_scatter_block(in, out, small_count(count, what), type, MPI_SUM, s.comm,
                                  &p.requests.emplace_back()),
        what);
  return p;
}

Pending begin_broadcast(void* x, int64_t bytes, int root, std::string_view what) {
  State& s = state();
  Pending p;
  if (!s.started || s.size == 1) return p;
  std::lock_guard lock(s.mutex);
  no_broken_job(s, what);
  auto* data = static_cast<std::byte*>(x);
  for (int64_t at = 0; at < bytes; at += kChunk)
    check(MPI_Ibcast(data + at, int(std::min(kChunk, bytes - at)), MPI_BYTE, root, s.comm,
                     &p.requests.emplace_back()),
          what);
  return p;
}

/// Collectives started by the JIT, by the address of their result.
std::map<const void*, Pending>& under_way() {
  static std::map<const void*, Pending> m;
  return m;
}

void keep(const void* key, Pending p, std::string_view what) {
  if (p.requests.empty()) return;
  std::lock_guard lock(state().mutex);
  if (!under_way().emplace(key, std::move(p)).second)
    throw InternalError(
        rlx::detail::cat(what, ": a collective is already under way on its result"));
}

} // namespace

void all_reduce_into(const void* in, void* out, int64_t count, ir::DType t, ir::CollectiveOp op,
                     std::string_view what) {
  State& s = state();
  MPI_Datatype type = mpi_type(t, what);
  std::size_t elem = ir::size_bytes(t);
  if (!s.started || s.size == 1) { // one rank: the value is its own sum, max and mean
    if (in != out) std::memcpy(out, in, std::size_t(count) * elem);
    return;
  }
  blocking(what, [&] {
    const auto* i = static_cast<const std::byte*>(in);
    auto* o = static_cast<std::byte*>(out);
    for (int64_t at = 0; at < count; at += kChunk) {
      std::size_t off = std::size_t(at) * elem;
      check(MPI_Allreduce(in == out ? MPI_IN_PLACE : i + off, o + off,
                          int(std::min(kChunk, count - at)), type, mpi_op(op), s.comm),
            what);
    }
  });
  if (op == ir::CollectiveOp::Mean) {
    if (t == ir::DType::F32)
      divide<float>(out, count, s.size);
    else
      divide<double>(out, count, s.size);
  }
}

void all_reduce(void* x, int64_t count, ir::DType t, ir::CollectiveOp op, std::string_view what) {
  all_reduce_into(x, x, count, t, op, what);
}

void all_gather(const void* in, void* out, int64_t bytes, std::string_view what) {
  State& s = state();
  if (!s.started || s.size == 1) {
    std::memcpy(out, in, std::size_t(bytes));
    return;
  }
  int n = small_count(bytes, what);
  blocking(what, [&] { check(MPI_Allgather(in, n, MPI_BYTE, out, n, MPI_BYTE, s.comm), what); });
}

void reduce_scatter_sum(const void* in, void* out, int64_t count, ir::DType t,
                        std::string_view what) {
  State& s = state();
  MPI_Datatype type = mpi_type(t, what);
  if (!s.started || s.size == 1) {
    std::memcpy(out, in, std::size_t(count) * ir::size_bytes(t));
    return;
  }
  int n = small_count(count, what);
  blocking(what, [&] { check(MPI_Reduce_scatter_block(in, out, n, type, MPI_SUM, s.comm), what); });
}

void broadcast(void* x, int64_t bytes, int root, std::string_view what) {
  State& s = state();
  if (!s.started || s.size == 1) return;
  blocking(what, [&] {
    auto* data = static_cast<std::byte*>(x);
    for (int64_t at = 0; at < bytes; at += kChunk)
      check(MPI_Bcast(data + at, int(std::min(kChunk, bytes - at)), MPI_BYTE, root, s.comm), what);
  });
}

void start_all_reduce(void* x, int64_t count, ir::DType t, ir::CollectiveOp op,
                      std::string_view what) {
  keep(x, begin_all_reduce(x, count, t, op, what), what);
}

void start_all_gather(const void* in, void* out, int64_t bytes, std::string_view what) {
  keep(out, begin_all_gather(in, out, bytes, what), what);
}

void start_reduce_scatter_sum(const void* in, void* out, int64_t count, ir::DType t,
                              std::string_view what) {
  keep(out, begin_reduce_scatter_sum(in, out, count, t, what), what);
}

void start_broadcast(void* x, int64_t bytes, int root, std::string_view what) {
  keep(x, begin_broadcast(x, bytes, root, what), what);
}

void wait(const void* key, std::string_view what) {
  Pending p;
  {
    std::lock_guard lock(state().mutex);
    auto it = under_way().find(key);
    if (it == under_way().end()) return;
    p = std::move(it->second);
    under_way().erase(it);
  }
  finish(p, what);
}

namespace {

Pending begin_reduce_sum(const void* in, void* out, int64_t count, ir::DType t, int root,
                         std::string_view what) {
  State& s = state();
  MPI_Datatype type = mpi_type(t, what);
  std::size_t elem = ir::size_bytes(t);
  Pending p;
  if (!s.started || s.size == 1) {
    std::memcpy(out, in, std::size_t(count) * elem);
    return p;
  }
  std::lock_guard lock(s.mutex);
  no_broken_job(s, what);
  auto* o = static_cast<std::byte*>(out);
  const auto* i = static_cast<const std::byte*>(in);
  for (int64_t at = 0; at < count; at += kChunk) {
    int n = int(std::min(kChunk, count - at));
    std::size_t off = std::size_t(at) * elem;
    check(MPI_Ireduce(i + off, s.rank == root ? o + off : nullptr, n, type, MPI_SUM, root, s.comm,
                      &p.requests.emplace_back()),
          what);
  }
  return p;
}

Pending begin_send(const void* x, int64_t bytes, int peer, int tag, std::string_view what) {
  State& s = state();
  if (!s.started) fail(ErrorKind::Runtime, what, ": the job has one rank; nothing to send to");
  Pending p;
  std::lock_guard lock(s.mutex);
  no_broken_job(s, what);
  const auto* data = static_cast<const std::byte*>(x);
  for (int64_t at = 0; at < bytes; at += kChunk)
    check(MPI_Isend(data + at, int(std::min(kChunk, bytes - at)), MPI_BYTE, peer, tag, s.comm,
                    &p.requests.emplace_back()),
          what);
  return p;
}

Pending begin_recv(void* x, int64_t bytes, int peer, int tag, std::string_view what) {
  State& s = state();
  if (!s.started) fail(ErrorKind::Runtime, what, ": the job has one rank; nothing to receive");
  Pending p;
  std::lock_guard lock(s.mutex);
  no_broken_job(s, what);
  auto* data = static_cast<std::byte*>(x);
  for (int64_t at = 0; at < bytes; at += kChunk)
    check(MPI_Irecv(data + at, int(std::min(kChunk, bytes - at)), MPI_BYTE, peer, tag, s.comm,
                    &p.requests.emplace_back()),
          what);
  return p;
}

} // namespace

void reduce_sum(const void* in, void* out, int64_t count, ir::DType t, int root,
                std::string_view what) {
  State& s = state();
  MPI_Datatype type = mpi_type(t, what);
  std::size_t elem = ir::size_bytes(t);
  if (!s.started || s.size == 1) {
    std::memcpy(out, in, std::size_t(count) * elem);
    return;
  }
  blocking(what, [&] {
    auto* o = static_cast<std::byte*>(out);
    const auto* i = static_cast<const std::byte*>(in);
    for (int64_t at = 0; at < count; at += kChunk) {
      std::size_t off = std::size_t(at) * elem;
      check(MPI_Reduce(i + off, s.rank == root ? o + off : nullptr,
                       int(std::min(kChunk, count - at)), type, MPI_SUM, root, s.comm),
            what);
    }
  });
}

void start_reduce_sum(const void* in, void* out, int64_t count, ir::DType t, int root,
                      std::string_view what) {
  keep(out, begin_reduce_sum(in, out, count, t, root, what), what);
}

void start_send_to(const void* x, int64_t bytes, int peer, int tag, std::string_view what) {
  keep(x, begin_send(x, bytes, peer, tag, what), what);
}

void start_recv_from(void* x, int64_t bytes, int peer, int tag, std::string_view what) {
  keep(x, begin_recv(x, bytes, peer, tag, what), what);
}

// Standard-mode sends and receives stay non-blocking and polled: a timed-out one throws.
void send_to(const void* x, int64_t bytes, int peer, int tag, std::string_view what) {
  Pending p = begin_send(x, bytes, peer, tag, what);
  finish(p, what);
}

void recv_from(void* x, int64_t bytes, int peer, int tag, std::string_view what) {
  Pending p = begin_recv(x, bytes, peer, tag, what);
  finish(p, what);
}

void barrier(std::string_view what) {
  State& s = state();
  if (!s.started) return;
  Pending p;
  {
    std::lock_guard lock(s.mutex);
    no_broken_job(s, what);
    check(MPI_Ibarrier(s.comm, &p.requests.emplace_back()), what);
  }
  finish(p, what);
}

} // namespace rlx::dist::detail
