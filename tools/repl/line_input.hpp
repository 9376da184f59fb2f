// tools/repl/line_input.hpp -- where lines come from: a terminal with line editing and history
// (libedit, when the build found it), or a stream (a script file, piped standard input).
#pragma once

#include <istream>
#include <memory>
#include <optional>
#include <string>

namespace rlx::repl {

class LineInput {
public:
  virtual ~LineInput() = default;
  /// The next line without its newline, or nullopt at end of input or after Ctrl-C (then
  /// interrupted() tells). `prompt` is shown on a terminal only.
  virtual std::optional<std::string> read(const std::string& prompt) = 0;
  /// Whether the last read() that returned nullopt was interrupted by Ctrl-C (at a terminal).
  virtual bool interrupted() const { return false; }
  /// The line read() will return next, without consuming it (nullopt at end of input).
  virtual std::optional<std::string> peek() = 0;
};

/// Lines typed at a terminal. With libedit: editing, and history kept in `history_file`
/// ("" keeps none); without it, plain reads with the prompt. Ctrl-C while reading drops the
/// line (interrupted()); while a cell runs it ends rlx-repl, as in a shell.
std::unique_ptr<LineInput> terminal_input(const std::string& history_file);

/// Lines of a stream (not owned).
std::unique_ptr<LineInput> stream_input(std::istream& in);

/// Whether line editing was built in.
bool have_line_editing();

} // namespace rlx::repl
