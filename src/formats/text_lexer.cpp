// src/formats/text_lexer.cpp -- the text IR lexer: tokens, UTF-8 validation, string quoting.
#include "formats/text_lexer.hpp"

#include "rlx/error.hpp"

#include <charconv>
#include <cmath>

namespace rlx::ir::detail {

using K = Token::Kind;

std::string_view token_kind_name(K k) {
  switch (k) {
  case K::End:
    return "end of input";
  case K::Ident:
    return "identifier";
  case K::Int:
    return "integer";
  case K::Float:
    return "number";
  case K::String:
    return "string";
  case K::Bytes:
    return "bytes";
  case K::Ref:
    return "value reference";
  case K::At:
    return "'@'";
  case K::Question:
    return "'?'";
  case K::LParen:
    return "'('";
  case K::RParen:
    return "')'";
  case K::LBracket:
    return "'['";
  case K::RBracket:
    return "']'";
  case K::LBrace:
    return "'{'";
  case K::RBrace:
    return "'}'";
  case K::Comma:
    return "','";
  case K::Equals:
    return "'='";
  case K::Colon:
    return "':'";
  case K::Hash:
    return "'#'";
  }
  return "?";
}

std::string describe(const Token& t) {
  switch (t.kind) {
  case K::Ident:
    return "identifier '" + t.text + "'";
  case K::Int:
  case K::Float:
    return "number " + t.text;
  case K::String:
    return "string " + quote_string(t.text);
  case K::Ref:
    return "%" + std::to_string(t.i);
  default:
    return std::string(token_kind_name(t.kind));
  }
}

std::size_t utf8_sequence_length(std::string_view s) {
  if (s.empty()) return 0;
  auto b = [&](std::size_t i) { return static_cast<unsigned char>(s[i]); };
  unsigned char c = b(0);
  if (c < 0x80) return 1;
  std::size_t n;
  unsigned lo = 0x80, hi = 0xBF; // allowed range of the second byte
  if (c >= 0xC2 && c <= 0xDF)
    n = 2;
  else if (c == 0xE0)
    n = 3, lo = 0xA0;
  else if (c >= 0xE1 && c <= 0xEC)
    n = 3;
  else if (c == 0xED)
    n = 3, hi = 0x9F; // no UTF-16 surrogates
  else if (c >= 0xEE && c <= 0xEF)
    n = 3;
  else if (c == 0xF0)
    n = 4, lo = 0x90;
  else if (c >= 0xF1 && c <= 0xF3)
    n = 4;
  else if (c == 0xF4)
    n = 4, hi = 0x8F;
  else
    return 0;
  if (s.size() < n) return 0;
  if (b(1) < lo || b(1) > hi) return 0;
  for (std::size_t i = 2; i < n; ++i)
    if (b(i) < 0x80 || b(i) > 0xBF) return 0;
  return n;
}

bool is_valid_utf8(std::string_view s) {
  while (!s.empty()) {
    std::size_t n = utf8_sequence_length(s);
    if (n == 0) return false;
    s.remove_prefix(n);
  }
  return true;
}

std::string quote_string(std::string_view s) {
  static const char* hex = "0123456789abcdef";
  std::string out = "\"";
  while (!s.empty()) {
    unsigned char c = static_cast<unsigned char>(s[0]);
    std::size_t n = utf8_sequence_length(s);
    if (c >= 0x80 && n > 1) {
      out.append(s.substr(0, n));
      s.remove_prefix(n);
      continue;
    }
    if (c == '"')
      out += "\\\"";
    else if (c == '\\')
      out += "\\\\";
    else if (c == '\n')
      out += "\\n";
    else if (c == '\t')
      out += "\\t";
    else if (c == '\r')
      out += "\\r";
    else if (c < 0x20 || c >= 0x7F)
      out += std::string("\\x") + hex[c >> 4] + hex[c & 15];
    else
      out += char(c);
    s.remove_prefix(1);
  }
  return out + "\"";
}

void Lexer::error_at(uint32_t line, uint32_t col, const std::string& message) const {
  fail(ErrorKind::Parse, source_, ":", line, ":", col, ": ", message);
}

void Lexer::advance(std::size_t n) {
  for (std::size_t k = 0; k < n && pos_ < text_.size(); ++k) {
    if (text_[pos_] == '\n')
      line_++, col_ = 1;
    else
      col_++;
    pos_++;
  }
}

void Lexer::skip_space_and_comments() {
  for (;;) {
    char c = peek();
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
      advance();
    } else if (c == '/' && peek(1) == '/') {
      while (pos_ < text_.size() && peek() != '\n') {
        std::size_t n = utf8_sequence_length(text_.substr(pos_));
        if (n == 0) error_at(line_, col_, "invalid UTF-8 in a comment");
        advance(n);
      }
    } else {
      return;
    }
  }
}

namespace {
bool is_ident_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_ident_char(char c) { return is_ident_start(c) || (c >= '0' && c <= '9') || c == '.'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
} // namespace

Token Lexer::next() {
  skip_space_and_comments();
  Token t;
  t.line = line_;
  t.col = col_;
  if (pos_ >= text_.size()) return t;
  char c = peek();
  auto single = [&](K k) {
    t.kind = k;
    t.text = std::string(1, c);
    advance();
    return t;
  };
  switch (c) {
  case '@':
    return single(K::At);
  case '?':
    return single(K::Question);
  case '(':
    return single(K::LParen);
  case ')':
    return single(K::RParen);
  case '[':
    return single(K::LBracket);
  case ']':
    return single(K::RBracket);
  case '{':
    return single(K::LBrace);
  case '}':
    return single(K::RBrace);
  case ',':
    return single(K::Comma);
  case '=':
    return single(K::Equals);
  case ':':
    return single(K::Colon);
  case '#':
    return single(K::Hash);
  case '"':
    return lex_string(t);
  default:
    break;
  }
  if (c == '%') {
    advance();
    if (!is_digit(peek())) error_at(t.line, t.col, "expected a number after '%'");
    Token n = lex_number(t);
    if (n.kind != K::Int || n.i < 0 || n.i > int64_t(UINT32_MAX))
      error_at(t.line, t.col, "value reference %" + n.text + " is not a valid node number");
    n.kind = K::Ref;
    return n;
  }
  if (c == 'x' && peek(1) == '"') {
    advance();
    Token s = lex_string(t);
    for (char h : s.text)
      if (!is_digit(h) && !((h >= 'a' && h <= 'f') || (h >= 'A' && h <= 'F')))
        error_at(t.line, t.col, "bytes literal x\"...\" must hold hex digits only");
    if (s.text.size() % 2)
      error_at(t.line, t.col, "bytes literal needs an even number of hex digits");
    s.kind = K::Bytes;
    return s;
  }
  if (c == '-' && peek(1) == 'i' && peek(2) == 'n' && peek(3) == 'f' && !is_ident_char(peek(4))) {
    advance(4);
    t.kind = K::Ident;
    t.text = "-inf";
    return t;
  }
  if (is_digit(c) || ((c == '-' || c == '+') && (is_digit(peek(1)) || peek(1) == '.')) ||
      (c == '.' && is_digit(peek(1))))
    return lex_number(t);
  if (is_ident_start(c)) {
    std::size_t start = pos_;
    while (is_ident_char(peek())) advance();
    t.kind = K::Ident;
    t.text = std::string(text_.substr(start, pos_ - start));
    return t;
  }
  unsigned char uc = static_cast<unsigned char>(c);
  if (uc >= 0x80 && utf8_sequence_length(text_.substr(pos_)) == 0)
    error_at(line_, col_, "invalid UTF-8");
  if (uc < 0x20 || uc >= 0x7F)
    error_at(line_, col_,
             "unexpected character (byte 0x" + std::string(1, "0123456789abcdef"[uc >> 4]) +
                 std::string(1, "0123456789abcdef"[uc & 15]) + ")");
  error_at(line_, col_, std::string("unexpected character '") + c + "'");
}

Token Lexer::lex_number(Token t) {
  std::size_t start = pos_;
  if (peek() == '-' || peek() == '+') advance();
  bool is_float = false;
  while (is_digit(peek())) advance();
  if (peek() == '.') {
    is_float = true;
    advance();
    while (is_digit(peek())) advance();
  }
  if (peek() == 'e' || peek() == 'E') {
    is_float = true;
    advance();
    if (peek() == '-' || peek() == '+') advance();
    if (!is_digit(peek())) error_at(line_, col_, "expected digits in the exponent");
    while (is_digit(peek())) advance();
  }
  if (is_ident_char(peek())) error_at(line_, col_, "unexpected character after a number");
  std::string_view spelled = text_.substr(start, pos_ - start);
  t.text = std::string(spelled);
  std::string_view digits = spelled.front() == '+' ? spelled.substr(1) : spelled;
  if (!is_float) {
    auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), t.i);
    if (ec != std::errc() || p != digits.data() + digits.size())
      error_at(t.line, t.col, "integer " + t.text + " is out of range (64-bit)");
    t.kind = K::Int;
  } else {
    auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), t.f);
    if (ec != std::errc() || p != digits.data() + digits.size() || !std::isfinite(t.f))
      error_at(t.line, t.col, "number " + t.text + " is out of range (write inf for infinity)");
    t.kind = K::Float;
  }
  return t;
}

Token Lexer::lex_string(Token t) {
  advance(); // opening quote
  std::string out;
  for (;;) {
    if (pos_ >= text_.size()) error_at(t.line, t.col, "unterminated string");
    char c = peek();
    if (c == '"') {
      advance();
      break;
    }
    if (c == '\n') error_at(t.line, t.col, "unterminated string (newline inside; write \\n)");
    if (c == '\\') {
      uint32_t l = line_, co = col_;
      char e = peek(1);
      advance(2);
      switch (e) {
      case '"':
        out += '"';
        break;
      case '\\':
        out += '\\';
        break;
      case 'n':
        out += '\n';
        break;
      case 't':
        out += '\t';
        break;
      case 'r':
        out += '\r';
        break;
      case 'x': {
        auto hexv = [](char h) {
          return is_digit(h)              ? h - '0'
                 : (h >= 'a' && h <= 'f') ? h - 'a' + 10
                 : (h >= 'A' && h <= 'F') ? h - 'A' + 10
                                          : -1;
        };
        int hi = hexv(peek()), lo = hexv(peek(1));
        if (hi < 0 || lo < 0) error_at(l, co, "\\x needs two hex digits");
        out += char(hi * 16 + lo);
        advance(2);
        break;
      }
      default:
        error_at(l, co, std::string("unknown escape '\\") + (e ? std::string(1, e) : "") + "'");
      }
      continue;
    }
    unsigned char uc = static_cast<unsigned char>(c);
    if (uc < 0x20) error_at(line_, col_, "control character in a string (escape it)");
    std::size_t n = utf8_sequence_length(text_.substr(pos_));
    if (n == 0) error_at(line_, col_, "invalid UTF-8 in a string");
    out.append(text_.substr(pos_, n));
    advance(n);
  }
  t.kind = K::String;
  t.text = std::move(out);
  return t;
}

} // namespace rlx::ir::detail
