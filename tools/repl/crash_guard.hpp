// tools/repl/crash_guard.hpp -- survive a cell whose code crashes (a null pointer, a stack
// overflow, abort()) or runs until Ctrl-C: the signal jumps back to the session instead of
// ending the process.
#pragma once

#include <csignal>
#include <functional>
#include <string>

namespace rlx::repl {

/// How a guarded body ended.
struct Guarded {
  enum class Kind {
    Returned,    ///< the body returned or threw (the exception passes through)
    Crashed,     ///< a signal abandoned it
    Interrupted, ///< Ctrl-C abandoned it (a second Ctrl-C, or the grace period ran out)
  };
  Kind kind = Kind::Returned;
  int signal = 0;            ///< Crashed: the signal
  bool other_thread = false; ///< Crashed: on another thread of the cell's, now stopped for good
  std::string terminate;     ///< Crashed by std::terminate: what it was handling ("" if none)
};

/// Run `body` on this thread. A SIGSEGV, SIGBUS, SIGFPE, SIGILL or SIGABRT (abort(), a failed
/// assert, std::terminate) raised while it runs (on an alternate stack, so that a stack
/// overflow is caught too) abandons it. A crash on another thread stops that thread for good
/// and abandons the body. Ctrl-C (SIGINT) calls rlx::request_interrupt(), so rlx work stops at
/// its next safe point with an rlx::Error (the body throws it); a second Ctrl-C, or
/// `grace_seconds` without the body returning, abandons it. C++ exceptions pass through.
/// Best effort: the abandoned frames are not unwound, so what they were changing stays half
/// done; rlx::frames_abandoned() releases what they held inside rlx, and a pending interrupt
/// request is dropped.
Guarded run_guarded(const std::function<void()>& body, double grace_seconds);

/// While one lives, SIGINT only counts presses (pressed()), so that a blocking wait can give up
/// (a system call it makes returns EINTR). For the phases of a cell before it runs.
class InterruptCounter {
public:
  InterruptCounter();
  ~InterruptCounter();
  InterruptCounter(const InterruptCounter&) = delete;
  InterruptCounter& operator=(const InterruptCounter&) = delete;
  bool pressed() const;

private:
  struct sigaction old_{};
};

} // namespace rlx::repl
