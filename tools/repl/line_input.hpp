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
  /// The next line without its newline, or nullopt at end of input. `prompt` is shown on a
  /// terminal only.
  virtual std::optional<std::string> read(const std::string& prompt) = 0;
  /// The line read() will return next, without consuming it (nullopt at end of input).
  virtual std::optional<std::string> peek() = 0;
};

/// Lines typed at a terminal. With libedit: editing, and history kept in `history_file`
/// ("" keeps none); without it, plain reads with the prompt.
std::unique_ptr<LineInput> terminal_input(const std::string& history_file);

/// Lines of a stream (not owned).
std::unique_ptr<LineInput> stream_input(std::istream& in);

/// Whether line editing was built in.
bool have_line_editing();

} // namespace rlx::repl
