// tools/repl/sandbox.hpp -- run a function in a forked copy of this process, with a time limit.
//
// rlx-repl parses every cell in a copy first: a cell clang rejects never reaches the real
// interpreter (clang 19 does not always clean up after a failed input), and a cell on which
// clang crashes or loops forever costs the copy, not the session.
#pragma once

#include <functional>
#include <string>

namespace rlx::repl {

struct ChildOutcome {
  enum class Kind { Exited, Crashed, TimedOut, ForkFailed };
  Kind kind = Kind::Exited;
  int code = 0;  ///< the exit code (Exited) or the signal (Crashed)
  double ms = 0; ///< wall time from fork to the child's end
  /// "killed by signal 11 (Segmentation fault)", "still running after 20 s", ...
  std::string describe(double timeout_seconds) const;
};

/// Fork; the child runs `body` and exits with its result (0-255) at once, without running
/// destructors or atexit handlers; the parent waits at most `timeout_seconds`, then kills it.
ChildOutcome run_in_child(const std::function<int()>& body, double timeout_seconds);

} // namespace rlx::repl
