// tools/repl/cells.cpp -- the lexical scan behind cell splitting and cell plans.
#include "cells.hpp"

#include <cctype>

namespace rlx::repl {

namespace {

enum class Kind { Code, Literal };

bool ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

/// Whether the identifier ending just before `quote` is a raw-string prefix (R, LR, uR, UR, u8R).
bool raw_prefix(std::string_view line, std::size_t quote) {
  std::size_t start = quote;
  while (start > 0 && ident_char(line[start - 1])) --start;
  std::string_view word = line.substr(start, quote - start);
  return word == "R" || word == "LR" || word == "uR" || word == "UR" || word == "u8R";
}

/// Position just past the literal closed by `quote` starting after `from`, honouring escapes;
/// npos when the line ends first.
std::size_t literal_end(std::string_view line, std::size_t from, char quote) {
  for (std::size_t i = from; i < line.size(); ++i) {
    if (line[i] == '\\') {
      ++i;
      continue;
    }
    if (line[i] == quote) return i + 1;
  }
  return std::string_view::npos;
}

char closer_of(char open) { return open == '(' ? ')' : open == '[' ? ']' : '}'; }

/// Scan one line; `visit(pos, ch, kind, depth, directive)` sees every character that is code or
/// part of a literal (not comments, not the skipped parts of raw strings' delimiters).
template <class Visit>
void scan(ScanState& st, std::string_view line, bool& directive, Visit&& visit) {
  ++st.lines;
  std::size_t i = 0;
  bool line_start = !st.continued && !st.block_comment && !st.raw_delimiter;
  if (!st.continued) directive = false;
  if (line_start) {
    std::size_t first = line.find_first_not_of(" \t");
    if (first != std::string_view::npos && line[first] == '#') directive = true;
  }
  bool in_number = false;
  while (i < line.size()) {
    if (st.raw_delimiter) {
      std::string end = ")" + *st.raw_delimiter + "\"";
      std::size_t at = line.find(end, i);
      std::size_t stop = at == std::string_view::npos ? line.size() : at + end.size();
      for (std::size_t j = i; j < stop; ++j)
        visit(j, line[j], Kind::Literal, st.open.size(), false);
      if (at != std::string_view::npos) st.raw_delimiter.reset();
      i = stop;
      continue;
    }
    if (st.block_comment) {
      std::size_t at = line.find("*/", i);
      if (at == std::string_view::npos) return;
      st.block_comment = false;
      i = at + 2;
      continue;
    }
    char c = line[i];
    char next = i + 1 < line.size() ? line[i + 1] : '\0';
    if (c == '/' && next == '/') break;
    if (c == '/' && next == '*') {
      st.block_comment = true;
      i += 2;
      in_number = false;
      continue;
    }
    if (in_number) {
      char prev = line[i - 1];
      bool exponent_sign =
          (c == '+' || c == '-') && (prev == 'e' || prev == 'E' || prev == 'p' || prev == 'P');
      if (ident_char(c) || c == '.' || c == '\'' || exponent_sign) {
        visit(i, c, Kind::Code, st.open.size(), directive);
        ++i;
        continue;
      }
      in_number = false;
    }
    if (c == '"' && raw_prefix(line, i)) {
      std::size_t paren = line.find('(', i + 1);
      if (paren != std::string_view::npos && paren - i - 1 <= 16) {
        st.raw_delimiter = std::string(line.substr(i + 1, paren - i - 1));
        for (std::size_t j = i; j <= paren; ++j)
          visit(j, line[j], Kind::Literal, st.open.size(), false);
        i = paren + 1;
        continue;
      }
    }
    if (c == '"' || c == '\'') {
      std::size_t end = literal_end(line, i + 1, c);
      std::size_t stop = end == std::string_view::npos ? line.size() : end;
      for (std::size_t j = i; j < stop; ++j)
        visit(j, line[j], Kind::Literal, st.open.size(), false);
      i = stop;
      continue;
    }
    if (std::isdigit(static_cast<unsigned char>(c)) && (i == 0 || !ident_char(line[i - 1])))
      in_number = true;
    else if (c == '.' && std::isdigit(static_cast<unsigned char>(next)))
      in_number = true;
    std::size_t depth = st.open.size();
    if (!directive) {
      if (c == '(' || c == '[' || c == '{') {
        st.open.push_back({c, st.lines});
      } else if (c == ')' || c == ']' || c == '}') {
        if (st.open.empty() || closer_of(st.open.back().bracket) != c)
          st.mismatched = true;
        else
          st.open.pop_back();
        depth = st.open.size();
      }
    }
    visit(i, c, Kind::Code, depth, directive);
    ++i;
  }
  st.continued = !line.empty() && line.back() == '\\' && !st.block_comment;
}

std::string_view bracket_name(char c) { return c == '(' ? "'('" : c == '[' ? "'['" : "'{'"; }

/// Scan every line of a complete `cell`: `visit(at, ch, kind, depth, directive, line_start)`
/// as scan's, with `at` and `line_start` offsets in the cell; `line_end(end, directive)` after
/// each line, `directive` telling whether a preprocessor line ended there.
template <class Visit, class LineEnd>
void scan_cell(std::string_view cell, Visit&& visit, LineEnd&& line_end) {
  ScanState st;
  bool directive = false;
  std::size_t offset = 0;
  while (offset <= cell.size()) {
    std::size_t nl = cell.find('\n', offset);
    std::size_t end = nl == std::string_view::npos ? cell.size() : nl;
    scan(st, cell.substr(offset, end - offset), directive,
         [&](std::size_t pos, char c, Kind kind, std::size_t depth, bool dir) {
           visit(offset + pos, c, kind, depth, dir, offset);
         });
    line_end(end, directive && !st.continued);
    if (nl == std::string_view::npos) break;
    offset = nl + 1;
  }
}

} // namespace

std::string_view trim(std::string_view s) {
  std::size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string_view::npos) return {};
  std::size_t e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

void scan_line(ScanState& state, std::string_view line) {
  bool directive = false;
  scan(state, line, directive, [](std::size_t, char, Kind, std::size_t, bool) {});
}

void CellSplitter::add_line(std::string_view line) {
  if (!text_.empty() || state_.lines > 0) text_ += '\n';
  text_ += line;
  bool directive = directive_;
  scan(state_, line, directive, [&](std::size_t, char c, Kind, std::size_t, bool) {
    if (c != ' ' && c != '\t' && c != '\r') has_code_ = true;
  });
  directive_ = directive;
}

bool CellSplitter::complete() const {
  if (state_.block_comment || state_.raw_delimiter || state_.continued) return false;
  return state_.open.empty() || state_.mismatched;
}

bool CellSplitter::blank() const { return !has_code_; }

std::string CellSplitter::unclosed() const {
  if (state_.raw_delimiter) return "a raw string literal is not closed";
  if (state_.block_comment) return "a block comment is not closed";
  if (!state_.open.empty() && !state_.mismatched) {
    const ScanState::Open& o = state_.open.back();
    return std::string(bracket_name(o.bracket)) + " opened on line " + std::to_string(o.line) +
           " of the cell is not closed";
  }
  if (state_.continued) return "the last line ends with a backslash";
  return "";
}

void CellSplitter::clear() {
  state_ = {};
  text_.clear();
  has_code_ = false;
  directive_ = false;
}

namespace {

/// What plan_cell and terminated need to know about a complete cell.
struct CellShape {
  std::size_t split = 0;              ///< just past the last top-level `;` or directive line
  std::optional<char> last{};         ///< the last code or literal character
  std::size_t last_pos = 0;           ///< ... and its offset in the cell
  bool last_in_directive = false;     ///< ... and whether it was on a preprocessor line
  std::vector<std::size_t> assigns{}; ///< top-level assignment operators (positions)
};

CellShape shape_of(std::string_view cell) {
  CellShape sh;
  scan_cell(
      cell,
      [&](std::size_t at, char c, Kind kind, std::size_t depth, bool dir, std::size_t line) {
        if (c == ' ' || c == '\t' || c == '\r') return;
        sh.last = c;
        sh.last_pos = at;
        sh.last_in_directive = dir;
        if (kind != Kind::Code || depth != 0 || dir) return;
        if (c == ';') sh.split = at + 1;
        if (c == '=') {
          char prev = at > line ? cell[at - 1] : '\0';
          char prev2 = at > line + 1 ? cell[at - 2] : '\0';
          char next = at + 1 < cell.size() ? cell[at + 1] : '\0';
          bool comparison = next == '=' || prev == '=' || prev == '!' ||
                            (prev == '<' && prev2 != '<') || (prev == '>' && prev2 != '>');
          if (!comparison) sh.assigns.push_back(at);
        }
      },
      [&](std::size_t end, bool directive) {
        if (directive) sh.split = end;
      });
  return sh;
}

} // namespace

std::vector<InputCell> split_cells(std::string_view text, std::string& unclosed,
                                   int& unclosed_line) {
  std::vector<std::string_view> lines;
  for (std::size_t at = 0; at <= text.size();) {
    std::size_t nl = text.find('\n', at);
    if (nl == std::string_view::npos) nl = text.size();
    lines.push_back(text.substr(at, nl - at));
    at = nl + 1;
  }
  if (!lines.empty() && lines.back().empty()) lines.pop_back(); // the text's last newline
  std::vector<InputCell> cells;
  CellSplitter cell;
  int first_line = 1;
  unclosed.clear();
  for (std::size_t i = 0; i < lines.size(); ++i) {
    int line_no = int(i) + 1;
    bool fresh = cell.blank() && cell.complete();
    if (fresh && is_meta_command(lines[i])) {
      cell.clear();
      cells.push_back({std::string(trim(lines[i])), line_no, true});
      continue;
    }
    if (fresh) {
      cell.clear();
      first_line = line_no;
    }
    cell.add_line(lines[i]);
    if (!cell.complete()) continue;
    if (cell.blank()) {
      cell.clear();
      continue;
    }
    if (i + 1 < lines.size() && trim(lines[i + 1]).starts_with("{")) continue;
    cells.push_back({cell.text(), first_line, false});
    cell.clear();
  }
  if (!cell.complete()) {
    unclosed = cell.unclosed();
    unclosed_line = first_line;
  }
  return cells;
}

CellPlan plan_cell(std::string_view cell) {
  CellShape sh = shape_of(cell);
  CellPlan plan{std::string(cell), ""};
  if (!sh.last || *sh.last == ';' || *sh.last == '}' || sh.last_in_directive) return plan;
  for (std::size_t a : sh.assigns)
    if (a >= sh.split) return plan; // `y = x * 2` runs as a statement, printing nothing
  std::string_view tail = cell.substr(sh.split);
  if (trim(tail).empty()) return plan;
  plan.statements = std::string(cell.substr(0, sh.split));
  plan.expression = std::string(tail);
  return plan;
}

std::string terminated(std::string_view cell) {
  CellShape sh = shape_of(cell);
  std::string out(cell);
  if (sh.last && *sh.last != ';' && !sh.last_in_directive) out.insert(sh.last_pos + 1, ";");
  return out;
}

std::vector<std::size_t> auto_declarations(std::string_view cell) {
  std::vector<std::size_t> starts;
  bool at_start = true;
  scan_cell(
      cell,
      [&](std::size_t at, char c, Kind kind, std::size_t depth, bool dir, std::size_t) {
        if (c == ' ' || c == '\t' || c == '\r' || dir) return;
        if (at_start) starts.push_back(at);
        at_start = kind == Kind::Code && depth == 0 && (c == ';' || c == '}');
      },
      [&](std::size_t, bool directive) {
        if (directive) at_start = true;
      });
  std::vector<std::size_t> out;
  for (std::size_t s : starts) {
    std::string_view rest = cell.substr(s);
    if (!rest.starts_with("auto") || (rest.size() > 4 && ident_char(rest[4]))) continue;
    std::size_t next = rest.find_first_not_of(" \t\r\n", 4);
    if (next != std::string_view::npos && rest[next] == '[') continue; // auto [a, b] = ...
    out.push_back(s);
  }
  return out;
}

namespace {

/// The (possibly qualified) name at `pos` of `text` and where it ends; empty when none.
std::string_view name_at(std::string_view text, std::size_t pos, std::size_t& end) {
  std::size_t i = pos;
  for (;;) {
    if (text.substr(i).starts_with("::")) i += 2;
    std::size_t start = i;
    while (i < text.size() && ident_char(text[i])) ++i;
    if (i == start) break;
    if (!text.substr(i).starts_with("::")) break;
  }
  end = i;
  return text.substr(pos, i - pos);
}

/// The first word of the statement at `pos` ("" when it starts with punctuation).
std::string_view first_word(std::string_view text, std::size_t pos) {
  std::size_t i = pos;
  while (i < text.size() && ident_char(text[i])) ++i;
  return text.substr(pos, i - pos);
}

bool is_control_statement(std::string_view text, std::size_t pos) {
  std::string_view w = first_word(text, pos);
  return text[pos] == '{' || w == "for" || w == "while" || w == "do" || w == "if" ||
         w == "switch" || w == "try";
}

/// Whether the statement at `pos` is an expression statement: a lambda or parenthesized
/// expression, `throw`/`delete`, or a name followed by a call, a member access, a subscript,
/// an assignment or an increment. Declarations (`Tensor x = ...`, `int f() {...}`,
/// `std::vector<int> v`) are not; neither is anything this cannot tell.
bool is_expression_statement(std::string_view text, std::size_t pos) {
  if (text.substr(pos).starts_with("[[")) return false;
  if (text[pos] == '[' || text[pos] == '(') return true;
  std::string_view w = first_word(text, pos);
  if (w == "throw" || w == "delete") return true;
  static constexpr std::string_view kDeclarationWords[] = {
      "auto",     "int",      "void",         "const",     "constexpr", "consteval", "constinit",
      "static",   "inline",   "extern",       "template",  "typedef",   "using",     "struct",
      "class",    "union",    "enum",         "namespace", "unsigned",  "signed",    "long",
      "short",    "char",     "float",        "double",    "bool",      "typename",  "decltype",
      "volatile", "mutable",  "thread_local", "friend",    "virtual",   "explicit",  "operator",
      "return",   "register", "wchar_t",      "char8_t",   "char16_t",  "char32_t",  "export"};
  for (std::string_view k : kDeclarationWords)
    if (w == k) return false;
  std::size_t end = pos;
  if (name_at(text, pos, end).empty()) return false;
  std::size_t next = text.find_first_not_of(" \t\r\n", end);
  if (next == std::string_view::npos) return false;
  std::string_view rest = text.substr(next);
  if (rest[0] == '(' || rest[0] == '.' || rest[0] == '[' || rest.starts_with("->") ||
      rest.starts_with("++") || rest.starts_with("--"))
    return true;
  if (rest[0] == '=') return !rest.starts_with("==");
  for (std::string_view op : {"+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<=", ">>="})
    if (rest.starts_with(op)) return true;
  return false;
}

} // namespace

/// Whether the `{` at `at` (at the top level of the control statement starting at `begin`)
/// opens its block, rather than a lambda's body: it starts the statement, or follows the
/// condition's `)`, or `do`, `else` or `try`. (`for (...) y = [](int a) { ... }(1);` is read
/// wrongly: the cell then fails with clang's message on the rewritten line.)
bool opens_block(std::string_view cell, std::size_t begin, std::size_t at, char before) {
  if (at == begin || before == ')') return true;
  std::size_t end = cell.find_last_not_of(" \t\r\n", at - 1);
  if (end == std::string_view::npos) return false;
  std::size_t start = end + 1;
  while (start > 0 && ident_char(cell[start - 1])) --start;
  std::string_view word = cell.substr(start, end + 1 - start);
  return word == "do" || word == "else" || word == "try";
}

std::string wrap_lambda_statements(std::string_view cell, int& next_id) {
  struct Piece {
    std::size_t begin = 0, end = 0;
    bool control = false, lambda = false, after_do = false;
  };
  std::vector<Piece> done;
  Piece cur;
  bool open = false;         // inside a statement
  bool can_continue = false; // the last statement was a control statement ending at `}` or `;`
  char prev = ';';           // the last code character before this one
  bool block = false;        // the last top-level `{` opened a control statement's block
  scan_cell(
      cell,
      [&](std::size_t at, char c, Kind kind, std::size_t depth, bool dir, std::size_t) {
        if (c == ' ' || c == '\t' || c == '\r' || dir) return;
        if (!open) {
          std::string_view w = first_word(cell, at);
          bool continues = can_continue && !done.empty() &&
                           (w == "else" || w == "catch" || (w == "while" && done.back().after_do));
          if (continues) {
            cur = done.back();
            done.pop_back();
            cur.after_do = false;
          } else {
            cur = Piece{at, at, is_control_statement(cell, at), false, false};
          }
          open = true;
          can_continue = false;
          block = false;
        }
        if (kind == Kind::Code && c == '[' && !ident_char(prev) && prev != ')' && prev != ']' &&
            prev != '[' && (at + 1 >= cell.size() || cell[at + 1] != '['))
          cur.lambda = true;
        char before = prev;
        if (kind == Kind::Code) prev = c;
        if (kind != Kind::Code || depth != 0) return;
        if (c == '{') block = cur.control && opens_block(cell, cur.begin, at, before);
        if (c == ';' || (c == '}' && block)) {
          cur.end = at + 1;
          cur.after_do = c == '}' && first_word(cell, cur.begin) == "do";
          can_continue = cur.control;
          done.push_back(cur);
          open = false;
        }
      },
      [](std::size_t, bool) {});
  std::string out(cell);
  for (auto it = done.rbegin(); it != done.rend(); ++it) {
    if (!it->lambda || !(it->control || is_expression_statement(cell, it->begin))) continue;
    std::string name = "__rlx_repl_stmt_" + std::to_string(next_id++);
    out.insert(it->end, " } " + name + "();");
    out.insert(it->begin, "void " + name + "() { ");
  }
  return out;
}

bool is_meta_command(std::string_view text) {
  text = trim(text);
  return text.size() >= 2 && text[0] == ':' && std::isalpha(static_cast<unsigned char>(text[1]));
}

} // namespace rlx::repl
