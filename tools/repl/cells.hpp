// tools/repl/cells.hpp -- cutting REPL input into cells, and deciding how a cell runs.
//
// A cell ends at the end of a line where every (, [ and { is closed and no block comment, raw
// string or backslash continuation is open; string and character literals, comments, digit
// separators and preprocessor lines are skipped when counting. No clang here: this is plain
// text scanning, so clang never sees an unbalanced cell (clang 19 busy-loops on one).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace rlx::repl {

/// The lexical state carried from one line to the next.
struct ScanState {
  struct Open {
    char bracket;
    int line; ///< 1-based line of the cell where it was opened
  };
  std::vector<Open> open{}; ///< brackets not closed yet
  bool mismatched = false;  ///< a closer that matches nothing: the cell is complete (and wrong)
  bool block_comment = false;
  std::optional<std::string> raw_delimiter{}; ///< inside R"delim( ... )delim"
  bool continued = false;                     ///< the last line ended with a backslash
  int lines = 0;
};

/// Scan `line` (without its newline) from `state`, updating it.
void scan_line(ScanState& state, std::string_view line);

/// Accumulates input lines until they form a complete cell.
class CellSplitter {
public:
  /// Add one line, without its newline.
  void add_line(std::string_view line);
  /// The lines so far form a complete cell (also true for blank or comment-only text).
  bool complete() const;
  /// Only blanks and comments so far.
  bool blank() const;
  /// The lines so far, joined with newlines.
  const std::string& text() const { return text_; }
  int lines() const { return state_.lines; }
  /// What keeps an incomplete cell open, for the message at end of input: "'{' opened on line 2
  /// of the cell is not closed", "a block comment is not closed", ...
  std::string unclosed() const;
  void clear();

private:
  ScanState state_;
  std::string text_;
  bool has_code_ = false;
  bool directive_ = false; ///< the last line was a preprocessor line ending in a backslash
};

/// One cell of a text cut as rlx-repl cuts a script: its text, its first line in the text
/// (1-based), and whether it is a meta command (`:timing on`).
struct InputCell {
  std::string text;
  int line = 1;
  bool meta = false;
};
/// Cut `text` (a notebook cell, a script) into the cells rlx-repl runs one by one: a line
/// starting with `{` continues the cell before it (Allman style), blank and comment-only cells
/// are dropped. When the text ends inside a cell, that cell is not returned and `unclosed` says
/// what is open (see CellSplitter::unclosed) with `unclosed_line` its first line; else
/// `unclosed` is cleared.
std::vector<InputCell> split_cells(std::string_view text, std::string& unclosed,
                                   int& unclosed_line);

/// How a complete cell runs: `statements` as written, then, when the cell ends with an
/// expression (no `;`, not an assignment, not a preprocessor line), that expression is printed.
struct CellPlan {
  std::string statements; ///< the cell up to its trailing expression (or the whole cell)
  std::string expression; ///< the trailing expression; empty when the cell prints nothing
};
CellPlan plan_cell(std::string_view cell);

/// The cell with a `;` after its last token when it would otherwise end without one (after an
/// expression that cannot be printed, or a declaration typed without its semicolon).
std::string terminated(std::string_view cell);

/// Offsets of the top-level statements of `cell` that declare a variable with `auto` (not a
/// structured binding). rlx-repl makes them `inline`: clang 19 gives a closure type internal
/// linkage, so a variable holding a lambda, or rlx::jit of one, would otherwise be emitted again,
/// uninitialized, by every later cell that uses it (an inline variable's lambda has linkage).
std::vector<std::size_t> auto_declarations(std::string_view cell);

/// The cell with each complete top-level statement that contains a lambda and is an expression
/// statement (`std::sort(b, e, [](int x, int y) { ... });`, `rlx::jit([](Tensor t) {...})(x);`)
/// or a control statement (for, while, do, if, switch, try, a block) moved into a function
/// called at once:  `void __rlx_repl_stmt_N() { <statement> } __rlx_repl_stmt_N();`  on the
/// same lines. clang 19 crashes mangling a lambda whose context is a top-level statement; in a
/// function, it is a local lambda. Declarations are left alone (a declaration's lambda is
/// mangled in the declaration's context). `next_id` numbers the functions and is advanced.
std::string wrap_lambda_statements(std::string_view cell, int& next_id);

/// Whether the text (trimmed) is a meta command: `:` followed by a letter (`::x` is C++).
bool is_meta_command(std::string_view text);

std::string_view trim(std::string_view s);

} // namespace rlx::repl
