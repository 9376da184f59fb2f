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
/// working on them or a lock held: false while it waits for a job on rlx's thread pool (a
/// parallel step, whose chunks run on the pool's threads and read the job's frames), while it
/// compiles or runs an executable (its frames may hold rlx's locks or the C library's, malloc's
/// among them), and for two seconds after a safe point threw for an interrupt (the error is on
/// its way out of the cell). Async-signal-safe. A host that abandons a cell on an interrupt
/// waits until it is true: after an interrupt request each of those ends soon.
bool abandon_is_safe() noexcept;

namespace detail {
/// Throw rlx::Error (ErrorKind::Interrupted) naming `where` if an interrupt is pending.
void check_interrupt(std::string_view where);

/// rlx's own work on the calling thread (compiling a graph, running an executable): while one
/// lives, abandon_is_safe() is false. It must not span user code that may never return (a
/// traced lambda), or an interrupted cell could never be abandoned.
class WorkScope {
public:
  WorkScope() noexcept;
  ~WorkScope();
  WorkScope(const WorkScope&) = delete;
  WorkScope& operator=(const WorkScope&) = delete;
};

/// Whether no WorkScope lives on the calling thread and no safe point threw for an interrupt in
/// the last two seconds (abandon_is_safe's part outside the thread pool). Async-signal-safe.
bool work_allows_abandon() noexcept;
} // namespace detail

} // namespace rlx
