// src/support/interrupt.cpp -- the interrupt request a host (rlx-repl) raises and rlx's safe
// points check.
#include "rlx/error.hpp"
#include "rlx/host.hpp"

#include <atomic>

namespace rlx {

namespace {
std::atomic<bool> g_interrupt{false};
static_assert(std::atomic<bool>::is_always_lock_free, "request_interrupt must be signal-safe");
} // namespace

void request_interrupt() noexcept { g_interrupt.store(true, std::memory_order_relaxed); }
void clear_interrupt() noexcept { g_interrupt.store(false, std::memory_order_relaxed); }
bool interrupt_requested() noexcept { return g_interrupt.load(std::memory_order_relaxed); }

namespace detail {
void check_interrupt(std::string_view where) {
  if (g_interrupt.load(std::memory_order_relaxed)) {
    g_interrupt.store(false, std::memory_order_relaxed);
    fail(ErrorKind::Interrupted, "interrupted in ", where);
  }
}
} // namespace detail

} // namespace rlx
