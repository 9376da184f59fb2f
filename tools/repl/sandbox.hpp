// tools/repl/sandbox.hpp -- a forked copy of the session that parses each cell first.
//
// A cell clang rejects never reaches the session's interpreter (clang 19 does not always clean
// up after a failed input), and a cell on which clang crashes or loops forever costs the copy,
// not the session. The copy lives on while cells parse: it parses what the session parses, so
// both stay identical, and each page either process writes faults (copy-on-write) once per
// copy, not once per cell. A failure discards the copy; the next cell forks a fresh one.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <sys/types.h>

namespace rlx::repl {

class Sandbox {
public:
  /// What the copy runs for each cell: parse(code, quiet), true when it parsed.
  using Parse = std::function<bool(std::string_view code, bool quiet)>;
  Sandbox(Parse parse, double timeout_seconds);
  ~Sandbox();
  Sandbox(const Sandbox&) = delete;
  Sandbox& operator=(const Sandbox&) = delete;

  struct Outcome {
    enum class Kind { Parsed, Failed, Crashed, TimedOut, Interrupted, ForkFailed };
    Kind kind = Kind::Parsed;
    int code = 0;  ///< the signal (Crashed) or errno (ForkFailed)
    double ms = 0; ///< wall time of the check, a fork included
    /// "killed by signal 11 (Segmentation fault)", "still running after 30 s", ...
    std::string describe(double timeout_seconds) const;
  };

  /// Parse `code` in the copy, forking one when there is none. Unless it parsed, the copy is
  /// discarded: its state may now differ from the session's. `interrupted` is asked while the
  /// copy works (at least every 50 ms); when it says yes the copy is discarded (Interrupted).
  Outcome check(std::string_view code, bool quiet, const std::function<bool()>& interrupted);
  /// Discard the copy: the session changed in a way the copy did not see (an input undone).
  void reset();
  /// Copies forked so far.
  int forks() const { return forks_; }

private:
  bool start(Outcome& out);
  void child_loop(int fd);

  Parse parse_;
  double timeout_;
  pid_t pid_ = -1;
  int fd_ = -1; ///< our end of the socket pair with the copy
  int forks_ = 0;
};

/// Run `fn` once in a forked copy of this process that is thrown away after (what it changes
/// never reaches the session; its standard error is discarded and it ignores SIGINT): its
/// result, or nullopt when it crashed, did not answer within `timeout_seconds`, or the fork
/// failed.
std::optional<std::string> run_in_copy(const std::function<std::string()>& fn,
                                       double timeout_seconds);

} // namespace rlx::repl
