// src/dist/dist.cpp -- rlx::dist's job functions on the transport (comm.hpp), and the failure
// rule: after init(), an exception nobody catches prints its message with the rank and ends the
// whole job (MPI_Abort), so the other ranks do not wait forever in their next collective.
#include "rlx/dist.hpp"

#include "comm.hpp"

#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <exception>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace rlx::dist {

namespace {

[[noreturn]] void on_terminate() {
  std::string what = "terminate called without an active exception";
  if (std::exception_ptr e = std::current_exception()) {
    try {
      std::rethrow_exception(e);
    } catch (const std::exception& x) {
      what = x.what();
    } catch (...) {
      what = "an exception of unknown type";
    }
  }
  abort("uncaught exception: " + what, 1);
}

} // namespace

bool built_with_mpi() { return detail::is_mpi(); }

void init(int expected_size, Loc loc) {
  (void)detail::wait_timeout(); // a bad RLX_DIST_TIMEOUT fails here, not in the first wait
  detail::start();
  std::set_terminate(on_terminate);
  if (expected_size > 0 && expected_size != detail::size())
    fail(ErrorKind::Runtime, "dist::init: the program needs ", expected_size,
         " processes but the job has ", detail::size(), " (start it with mpirun -np ",
         expected_size, detail::is_mpi() ? ")" : "; this rlx is built without MPI)",
         rlx::detail::at_loc(loc));
}

bool initialized() { return detail::started(); }
int rank() { return detail::rank(); }
int size() { return detail::size(); }
void barrier(Loc) { detail::barrier("dist::barrier"); }
void finalize() { detail::stop(); }

void abort(std::string_view message, int code) {
  std::fprintf(stderr, "rlx::dist: rank %d of %d: %.*s\n", rank(), size(), int(message.size()),
               message.data());
  std::fflush(stderr);
  detail::abort_job(code);
}

namespace {

std::atomic<int64_t> overlapped{0}, steps_overlapped{0};

} // namespace

Stats stats() { return Stats{overlapped.load(), steps_overlapped.load()}; }
void reset_stats() {
  overlapped = 0;
  steps_overlapped = 0;
}

namespace detail {

void note_overlap(int64_t steps) {
  ++overlapped;
  steps_overlapped += steps;
}

double wait_timeout() {
  // Long enough for a rank that compiles a large graph on a loaded machine while the others
  // already wait in the first collective; short enough that a lost rank ends the job.
  static const double seconds = [] {
    const char* env = std::getenv("RLX_DIST_TIMEOUT");
    if (env == nullptr || *env == '\0') return 300.0;
    char* end = nullptr;
    double v = std::strtod(env, &end);
    if (*end != '\0' || !(v >= 0) || !std::isfinite(v))
      fail(ErrorKind::Value, "RLX_DIST_TIMEOUT=", env,
           ": expected the seconds a wait may last, a number >= 0 (0: no limit)");
    return v;
  }();
  return seconds;
}

namespace {

struct SelfQueue {
  std::mutex mutex;
  std::map<int, std::deque<std::vector<std::byte>>> by_tag;
};
SelfQueue& self_queue() {
  static SelfQueue q;
  return q;
}

} // namespace

void send(const void* x, int64_t bytes, int peer, int tag, std::string_view what) {
  if (peer != rank()) return send_to(x, bytes, peer, tag, what);
  const auto* p = static_cast<const std::byte*>(x);
  SelfQueue& q = self_queue();
  std::lock_guard lock(q.mutex);
  q.by_tag[tag].emplace_back(p, p + bytes);
}

void recv(void* x, int64_t bytes, int peer, int tag, std::string_view what) {
  if (peer != rank()) return recv_from(x, bytes, peer, tag, what);
  SelfQueue& q = self_queue();
  std::lock_guard lock(q.mutex);
  auto it = q.by_tag.find(tag);
  if (it == q.by_tag.end() || it->second.empty())
    fail(ErrorKind::Runtime, what, ": no message from this rank (", peer, ") under tag ", tag,
         " was sent before; a message to itself must be sent first");
  std::vector<std::byte>& m = it->second.front();
  if (int64_t(m.size()) != bytes)
    fail(ErrorKind::Runtime, what, ": the message under tag ", tag, " has ", m.size(),
         " bytes, the receiving tensor ", bytes);
  std::memcpy(x, m.data(), m.size());
  it->second.pop_front();
}

void start_send(const void* x, int64_t bytes, int peer, int tag, std::string_view what) {
  if (peer != rank()) return start_send_to(x, bytes, peer, tag, what);
  send(x, bytes, peer, tag, what);
}

void start_recv(void* x, int64_t bytes, int peer, int tag, std::string_view what) {
  if (peer != rank()) return start_recv_from(x, bytes, peer, tag, what);
  recv(x, bytes, peer, tag, what);
}

} // namespace detail

} // namespace rlx::dist
