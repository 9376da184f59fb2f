// tools/repl/session.hpp -- one REPL session: cells in, values and clear errors out.
#pragma once

#include "crash_guard.hpp"
#include "engine.hpp"
#include "options.hpp"
#include "sandbox.hpp"

#include <memory>
#include <string>
#include <vector>

namespace rlx::repl {

struct SessionOptions {
  std::vector<std::string> compiler_args; ///< for clang (see options.hpp)
  bool timing = false;                    ///< print the time of each cell
  bool sandbox = true;                    ///< parse each cell in a forked copy first
  double parse_timeout = 30;              ///< seconds a cell's parse may take in the copy
  double interrupt_grace = 2;             ///< seconds from Ctrl-C until a running cell is abandoned
  bool print_failures = true; ///< print each failure on stderr (rlx-kernel reports them itself)
};

/// Why the last cell failed: `name` is the kind ("CompileError", "Interrupted", "Crash",
/// "LinkError", "CommandError") or the type of the exception the cell threw ("rlx::Error",
/// "std::out_of_range", ...), `message` its text (empty for a compile error: clang printed the
/// errors on stderr) and `printed` the line rlx-repl prints after the cell's source and line.
struct Failure {
  std::string name;
  std::string message;
  std::string printed;
};

/// What a meta command asks of the input loop.
enum class Next { Continue, Quit };

class Session {
public:
  /// Starts clang and loads the prelude (rlx, `using namespace rlx;`, the value printer).
  /// Throws std::runtime_error when clang or the prelude fails.
  explicit Session(SessionOptions options);
  ~Session();

  /// Run one complete cell. `source` and `line` name where it came from (`<stdin>`, a script,
  /// `<cell 3>`): errors and rlx's messages point there. Returns whether the cell succeeded.
  bool run_cell(const std::string& cell, const std::string& source, int line);
  /// `:help`, `:quit`, `:timing on|off`, `:dump`; an unknown command is an error (counted).
  Next run_meta(const std::string& command, const std::string& source, int line);
  /// The names completing the identifier at the end of `code` (the text of the cell before the
  /// cursor), from clang's code completer run in a throwaway copy of the session (a crash or a
  /// hang there costs the copy). Sorted; empty when there are none or clang failed.
  std::vector<std::string> complete(const std::string& code);
  /// Report a cell cut off by the end of input (counted as a failure).
  void report_unclosed(const std::string& source, int line, const std::string& what);

  /// The failure of the last cell or command (empty names when it succeeded).
  const Failure& last_failure() const { return last_failure_; }
  int cells() const { return cells_; }
  int failures() const { return failures_; }
  double startup_ms() const { return startup_ms_; }

private:
  enum class Checked { Parsed, Failed, Interrupted };
  /// Parse `code` in the sandbox (or here without it, where Ctrl-C cannot stop it).
  Checked check(const std::string& code, bool quiet, double& ms);
  /// Run the parsed cell under the crash guard; false (and the message) when it failed.
  bool execute(Failure& failure);
  void fail(const std::string& name, const std::string& message);
  void fail(const Failure& failure);

  SessionOptions options_;
  std::unique_ptr<Engine> engine_;
  std::unique_ptr<Sandbox> sandbox_;
  std::string where_; ///< "source:line" of the cell being run, the prefix of its errors
  InterruptCounter* presses_ = nullptr; ///< Ctrl-C while the cell is checked and parsed
  int next_wrapper_ = 0;                ///< numbers the functions cells' statements are wrapped in
  Failure last_failure_;
  int cells_ = 0;
  int failures_ = 0;
  double startup_ms_ = 0;
};

/// A session for the command line `options` with `so`'s other settings (its compiler_args are
/// set here): the precompiled prelude when it applies (prelude_pch.hpp); when it does not
/// load, a warning on stderr and the headers parsed instead. Throws std::runtime_error when no
/// session starts.
std::unique_ptr<Session> start_session(const Options& options, SessionOptions so);

/// The text of `:help`.
std::string meta_help();

} // namespace rlx::repl
