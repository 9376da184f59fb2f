// tools/repl/line_input.hpp -- where lines come from: a terminal with line editing and history
// (libedit, when the build found it), or a stream (a script file, piped standard input).
#pragma once

#include <functional>
#include <istream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

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

/// Names completing the identifier that ends `before_cursor` (the line up to the cursor).
using Completer = std::function<std::vector<std::string>(const std::string& before_cursor)>;

/// Lines typed at a terminal. With libedit: editing, history kept in `history_file` ("" keeps
/// none), and Tab completing the identifier before the cursor through `complete` (at the start
/// of a line, or after blanks, Tab indents); without it, plain reads with the prompt. Ctrl-C
/// while reading drops the line (interrupted()).
std::unique_ptr<LineInput> terminal_input(const std::string& history_file, Completer complete);

/// Lines of a stream (not owned).
std::unique_ptr<LineInput> stream_input(std::istream& in);

/// Whether line editing was built in.
bool have_line_editing();

} // namespace rlx::repl
