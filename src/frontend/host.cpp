// src/frontend/host.cpp -- FrameMutex, and recovering the frontend's state after a host
// abandoned frames (rlx::frames_abandoned).
//
// A host that runs code under a crash guard (rlx-repl) siglongjmps out of a crash or an
// interrupt without unwinding: locks the abandoned frames held stay locked, and the thread's
// trace stack keeps their ids. Every lock the frontend holds across user code or a long step is
// a FrameMutex (a jitted function's build lock, eval_mutex), which the holding thread lists; so
// frames_abandoned() can unlock what the thread held (a later call traces afresh, and threads
// waiting on the lock go on) and clear the trace stack.
#include "rlx/host.hpp"
#include "frontend/impl.hpp"

namespace rlx {

namespace detail {

namespace {
/// The locks the thread holds, innermost first (linked through FrameMutex::held_before_). Its
/// address names the thread in FrameMutex::owner_.
struct HeldLocks {
  FrameMutex* innermost = nullptr;
};
thread_local HeldLocks t_held;
} // namespace

void FrameMutex::lock() {
  HeldLocks& me = t_held;
  RLX_CHECK(owner_.load(std::memory_order_relaxed) != &me,
            "a thread locked a FrameMutex it holds (it would wait for itself)");
  mu_.lock();
  owner_.store(&me, std::memory_order_relaxed);
  held_before_ = me.innermost;
  me.innermost = this;
}

void FrameMutex::unlock() {
  HeldLocks& me = t_held;
  // Usually the innermost; otherwise unlink it from the thread's list.
  if (me.innermost == this) {
    me.innermost = held_before_;
  } else {
    for (FrameMutex* m = me.innermost; m != nullptr; m = m->held_before_)
      if (m->held_before_ == this) {
        m->held_before_ = held_before_;
        break;
      }
  }
  held_before_ = nullptr;
  owner_.store(nullptr, std::memory_order_relaxed);
  mu_.unlock();
}

bool FrameMutex::held_by_this_thread() const {
  // Only this thread stores its own address, so a stale read can never be &t_held.
  return owner_.load(std::memory_order_relaxed) == &t_held;
}

void release_abandoned_locks() noexcept {
  HeldLocks& me = t_held;
  while (me.innermost != nullptr) {
    FrameMutex* m = me.innermost;
    me.innermost = m->held_before_;
    m->held_before_ = nullptr;
    m->owner_.store(nullptr, std::memory_order_relaxed);
    m->mu_.unlock(); // locked by this thread, in the abandoned frames
  }
}

} // namespace detail

void frames_abandoned() noexcept {
  detail::release_abandoned_locks();
  detail::clear_traces();
}

} // namespace rlx
