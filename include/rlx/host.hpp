// include/rlx/host.hpp -- hooks for programs that host rlx code cell by cell (rlx-repl, a notebook
// kernel): interrupting running work, and recovering after frames were abandoned by a longjmp.
#pragma once

#include <string_view>

namespace rlx {

/// Ask rlx work running on any thread to stop at its next safe point (between the steps of an
/// executable, between the nodes the interpreter runs): it throws rlx::Error with
/// ErrorKind::Interrupted there. Async-signal-safe: a SIGINT handler may call it.
void request_interrupt() noexcept;
/// Drop a pending request (a host calls it before it runs the next cell).
void clear_interrupt() noexcept;
/// Whether a request is pending.
bool interrupt_requested() noexcept;

/// A host that abandoned frames of the calling thread (siglongjmp out of a crash or an
/// interrupt) calls this before running more rlx code on the thread: it releases what those
/// frames held inside rlx (the lock of a jitted function being traced or compiled) and resets
/// the thread's tracing state, so later calls work instead of hanging.
void frames_abandoned() noexcept;

/// Whether the calling thread's frames may be abandoned now without leaving other threads
/// working on them: false while it waits for a job on rlx's thread pool (a parallel step, whose
/// chunks run on the pool's threads and read the job's frames). Async-signal-safe. A host that
/// abandons a cell on an interrupt waits until it is true: after an interrupt request the job's
/// threads skip their remaining chunks, so it ends when the chunks in flight do.
bool abandon_is_safe() noexcept;

namespace detail {
/// Throw rlx::Error (ErrorKind::Interrupted) naming `where` if an interrupt is pending.
void check_interrupt(std::string_view where);
} // namespace detail

} // namespace rlx
