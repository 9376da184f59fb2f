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
  ScanState st;
  bool directive = false;
  std::size_t offset = 0;
  while (offset <= cell.size()) {
    std::size_t nl = cell.find('\n', offset);
    std::size_t end = nl == std::string_view::npos ? cell.size() : nl;
    std::string_view line = cell.substr(offset, end - offset);
    scan(st, line, directive, [&](std::size_t pos, char c, Kind kind, std::size_t depth, bool dir) {
      if (c == ' ' || c == '\t' || c == '\r') return;
      sh.last = c;
      sh.last_pos = offset + pos;
      sh.last_in_directive = dir;
      if (kind != Kind::Code || depth != 0 || dir) return;
      if (c == ';') sh.split = offset + pos + 1;
      if (c == '=') {
        char prev = pos > 0 ? line[pos - 1] : '\0';
        char prev2 = pos > 1 ? line[pos - 2] : '\0';
        char next = pos + 1 < line.size() ? line[pos + 1] : '\0';
        bool comparison = next == '=' || prev == '=' || prev == '!' ||
                          (prev == '<' && prev2 != '<') || (prev == '>' && prev2 != '>');
        if (!comparison) sh.assigns.push_back(offset + pos);
      }
    });
    if (directive && !st.continued) sh.split = end;
    if (nl == std::string_view::npos) break;
    offset = nl + 1;
  }
  return sh;
}

} // namespace

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
  ScanState st;
  bool directive = false;
  bool at_start = true;
  std::size_t offset = 0;
  while (offset <= cell.size()) {
    std::size_t nl = cell.find('\n', offset);
    std::size_t end = nl == std::string_view::npos ? cell.size() : nl;
    scan(st, cell.substr(offset, end - offset), directive,
         [&](std::size_t pos, char c, Kind kind, std::size_t depth, bool dir) {
           if (c == ' ' || c == '\t' || c == '\r' || dir) return;
           if (at_start) starts.push_back(offset + pos);
           at_start = kind == Kind::Code && depth == 0 && (c == ';' || c == '}');
         });
    if (directive && !st.continued) at_start = true;
    if (nl == std::string_view::npos) break;
    offset = nl + 1;
  }
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

bool is_meta_command(std::string_view text) {
  text = trim(text);
  return text.size() >= 2 && text[0] == ':' && std::isalpha(static_cast<unsigned char>(text[1]));
}

} // namespace rlx::repl
