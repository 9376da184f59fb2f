// src/support/interrupt.cpp -- the interrupt request a host (rlx-repl) raises and rlx's safe
// points check.
#include "rlx/error.hpp"
#include "rlx/host.hpp"

#include <atomic>
#include <csignal>
#include <cstdint>
#include <ctime>

namespace rlx {

namespace {
std::atomic<bool> g_interrupt{false};
static_assert(std::atomic<bool>::is_always_lock_free, "request_interrupt must be signal-safe");

/// When a safe point last threw for an interrupt (CLOCK_MONOTONIC, ns; 0: not since the last
/// clear_interrupt).
std::atomic<int64_t> g_thrown_ns{0};
static_assert(std::atomic<int64_t>::is_always_lock_free, "abandon_is_safe must be signal-safe");

/// WorkScopes alive on this thread. Read by signal handlers.
thread_local volatile std::sig_atomic_t t_work_depth = 0;

int64_t now_ns() noexcept { // clock_gettime is async-signal-safe
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t(ts.tv_sec) * 1000000000 + int64_t(ts.tv_nsec);
}

} // namespace

void request_interrupt() noexcept { g_interrupt.store(true, std::memory_order_relaxed); }
void clear_interrupt() noexcept {
  g_interrupt.store(false, std::memory_order_relaxed);
  g_thrown_ns.store(0, std::memory_order_relaxed);
}
bool interrupt_requested() noexcept { return g_interrupt.load(std::memory_order_relaxed); }

namespace detail {
void check_interrupt(std::string_view where) {
  if (g_interrupt.load(std::memory_order_relaxed)) {
    g_interrupt.store(false, std::memory_order_relaxed);
    g_thrown_ns.store(now_ns(), std::memory_order_relaxed);
    fail(ErrorKind::Interrupted, "interrupted in ", where);
  }
}

WorkScope::WorkScope() noexcept { t_work_depth = t_work_depth + 1; }
WorkScope::~WorkScope() { t_work_depth = t_work_depth - 1; }

bool work_allows_abandon() noexcept {
  if (t_work_depth != 0) return false;
  const int64_t thrown = g_thrown_ns.load(std::memory_order_relaxed);
  return thrown == 0 || now_ns() - thrown > 2000000000;
}
} // namespace detail

} // namespace rlx
