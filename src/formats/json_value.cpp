// src/formats/json_value.cpp -- strict JSON (RFC 8259): a recursive-descent parser and a writer.
#include "formats/json_value.hpp"

#include "rlx/error.hpp"

#include <charconv>
#include <cmath>
#include <limits>
#include <system_error>
#include <unordered_set>

namespace rlx::ir::detail {

using JK = JsonValue::Kind;

JsonValue JsonValue::boolean(bool v) {
  JsonValue j;
  j.kind = JK::Bool;
  j.b = v;
  return j;
}

JsonValue JsonValue::integer(int64_t v) {
  JsonValue j;
  j.kind = JK::Int;
  j.i = v;
  return j;
}

JsonValue JsonValue::number(double v, bool is_f32) {
  JsonValue j;
  j.kind = JK::Float;
  j.f = v;
  j.f32 = is_f32;
  return j;
}

JsonValue JsonValue::string(std::string v) {
  JsonValue j;
  j.kind = JK::String;
  j.s = std::move(v);
  return j;
}

JsonValue JsonValue::make_array(std::vector<JsonValue> items) {
  JsonValue j;
  j.kind = JK::Array;
  j.array = std::move(items);
  return j;
}

JsonValue JsonValue::make_object(std::vector<Member> members) {
  JsonValue j;
  j.kind = JK::Object;
  j.object = std::move(members);
  return j;
}

const JsonValue* JsonValue::find(std::string_view key) const {
  if (kind != JK::Object) return nullptr;
  for (const Member& m : object)
    if (m.first == key) return &m.second;
  return nullptr;
}

std::string_view json_kind_name(JsonValue::Kind k) {
  switch (k) {
  case JK::Null:
    return "null";
  case JK::Bool:
    return "a boolean";
  case JK::Int:
    return "an integer";
  case JK::Float:
    return "a number";
  case JK::String:
    return "a string";
  case JK::Array:
    return "an array";
  case JK::Object:
    return "an object";
  }
  return "?";
}

// ---- Writer

namespace {

constexpr char kHex[] = "0123456789abcdef";
constexpr std::size_t kPrettyWidth = 100;

void write_number(std::string& out, double v, bool f32) {
  RLX_CHECK(std::isfinite(v), "write_json: JSON has no representation for ", v);
  char buf[64];
  std::to_chars_result r{};
  if (f32 && std::isfinite(static_cast<float>(v))) {
    auto fv = static_cast<float>(v);
    r = std::to_chars(buf, buf + sizeof buf, fv);
    // Readers parse numbers as doubles; for a few floats (7.038531e-26 is one) the shortest
    // float text, read as a double and rounded to float, lands on the neighbouring float.
    // Those get the (exact) shortest double text of the float instead.
    double back = 0;
    auto p = std::from_chars(buf, r.ptr, back);
    if (p.ec != std::errc() || static_cast<float>(back) != fv)
      r = std::to_chars(buf, buf + sizeof buf, static_cast<double>(fv));
  } else {
    r = std::to_chars(buf, buf + sizeof buf, v);
  }
  RLX_CHECK(r.ec == std::errc(), "write_json: to_chars failed");
  std::string_view text(buf, std::size_t(r.ptr - buf));
  out += text;
  // "1" would read back as an integer; keep the value a number.
  if (text.find_first_of(".eE") == std::string_view::npos) out += ".0";
}

/// Write v on one line; `spaced` puts a space after ',' and ':'. With a limit, stop and return
/// false as soon as out grows past it (the pretty printer's "does it fit" test).
bool write_line(std::string& out, const JsonValue& v, bool spaced,
                std::size_t limit = std::string::npos) {
  switch (v.kind) {
  case JK::Null:
    out += "null";
    break;
  case JK::Bool:
    out += v.b ? "true" : "false";
    break;
  case JK::Int:
    out += std::to_string(v.i);
    break;
  case JK::Float:
    write_number(out, v.f, v.f32);
    break;
  case JK::String:
    write_json_string(out, v.s);
    break;
  case JK::Array:
    out += '[';
    for (std::size_t k = 0; k < v.array.size(); ++k) {
      if (k) out += spaced ? ", " : ",";
      if (!write_line(out, v.array[k], spaced, limit)) return false;
    }
    out += ']';
    break;
  case JK::Object:
    out += '{';
    for (std::size_t k = 0; k < v.object.size(); ++k) {
      if (k) out += spaced ? ", " : ",";
      write_json_string(out, v.object[k].first);
      out += spaced ? ": " : ":";
      if (out.size() > limit) return false;
      if (!write_line(out, v.object[k].second, spaced, limit)) return false;
    }
    out += '}';
    break;
  }
  return out.size() <= limit;
}

void write_pretty(std::string& out, const JsonValue& v, std::size_t indent, std::size_t column) {
  bool container = v.kind == JK::Array || v.kind == JK::Object;
  if (!container || (v.kind == JK::Array ? v.array.empty() : v.object.empty())) {
    write_line(out, v, true);
    return;
  }
  std::string line;
  if (column < kPrettyWidth && write_line(line, v, true, kPrettyWidth - column)) {
    out += line;
    return;
  }
  std::string inner(indent + 2, ' ');
  if (v.kind == JK::Array) {
    out += "[\n";
    for (std::size_t k = 0; k < v.array.size(); ++k) {
      out += inner;
      write_pretty(out, v.array[k], indent + 2, indent + 2);
      out += k + 1 < v.array.size() ? ",\n" : "\n";
    }
    out.append(indent, ' ');
    out += ']';
  } else {
    out += "{\n";
    for (std::size_t k = 0; k < v.object.size(); ++k) {
      out += inner;
      std::size_t start = out.size();
      write_json_string(out, v.object[k].first);
      out += ": ";
      write_pretty(out, v.object[k].second, indent + 2, indent + 2 + (out.size() - start));
      out += k + 1 < v.object.size() ? ",\n" : "\n";
    }
    out.append(indent, ' ');
    out += '}';
  }
}

} // namespace

void write_json_string(std::string& out, std::string_view s) {
  out += '"';
  for (char ch : s) {
    auto c = static_cast<unsigned char>(ch);
    switch (c) {
    case '"':
      out += "\\\"";
      break;
    case '\\':
      out += "\\\\";
      break;
    case '\n':
      out += "\\n";
      break;
    case '\t':
      out += "\\t";
      break;
    case '\r':
      out += "\\r";
      break;
    case '\b':
      out += "\\b";
      break;
    case '\f':
      out += "\\f";
      break;
    default:
      if (c < 0x20) {
        out += "\\u00";
        out += kHex[c >> 4];
        out += kHex[c & 15];
      } else {
        out += ch;
      }
    }
  }
  out += '"';
}

std::string write_json(const JsonValue& v, bool pretty) {
  std::string out;
  if (pretty) {
    write_pretty(out, v, 0, 0);
    out += '\n';
  } else {
    write_line(out, v, false);
  }
  return out;
}

// ---- Parser

namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += char(cp);
  } else if (cp < 0x800) {
    out += char(0xC0 | (cp >> 6));
    out += char(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += char(0xE0 | (cp >> 12));
    out += char(0x80 | ((cp >> 6) & 0x3F));
    out += char(0x80 | (cp & 0x3F));
  } else {
    out += char(0xF0 | (cp >> 18));
    out += char(0x80 | ((cp >> 12) & 0x3F));
    out += char(0x80 | ((cp >> 6) & 0x3F));
    out += char(0x80 | (cp & 0x3F));
  }
}

std::string hex_byte(unsigned char c) { return std::string("0x") + kHex[c >> 4] + kHex[c & 15]; }

/// A number literal for an error message, cut after 40 characters.
std::string shorten(std::string_view tok) {
  return tok.size() > 40 ? std::string(tok.substr(0, 40)) + "..." : std::string(tok);
}

/// Whether a number literal that from_chars reported out of range is too large (rather than
/// too small, which reads as zero): the decimal exponent of its leading significant digit.
bool literal_overflows(std::string_view tok) {
  std::size_t i = tok[0] == '-' ? 1 : 0;
  constexpr int64_t kUnset = std::numeric_limits<int64_t>::min();
  int64_t lead = kUnset;
  std::size_t int_start = i;
  while (i < tok.size() && is_digit(tok[i])) ++i;
  for (std::size_t j = int_start; j < i; ++j)
    if (tok[j] != '0') {
      lead = int64_t(i - j) - 1;
      break;
    }
  if (i < tok.size() && tok[i] == '.') {
    ++i;
    for (int64_t k = 0; i < tok.size() && is_digit(tok[i]); ++i, ++k)
      if (lead == kUnset && tok[i] != '0') lead = -(k + 1);
  }
  int64_t exp = 0;
  if (i < tok.size() && (tok[i] == 'e' || tok[i] == 'E')) {
    ++i;
    bool neg = false;
    if (tok[i] == '+' || tok[i] == '-') neg = tok[i++] == '-';
    for (; i < tok.size() && is_digit(tok[i]); ++i)
      if (exp < 1'000'000'000) exp = exp * 10 + (tok[i] - '0');
    if (neg) exp = -exp;
  }
  return lead != kUnset && lead + exp > 0;
}

class Parser {
public:
  explicit Parser(std::string_view text) : text_(text) {}

  JsonValue parse_document() {
    skip_ws();
    if (at_end()) fail(text_.empty() ? "empty input" : "expected a value, got end of input");
    JsonValue v = parse_value(0);
    skip_ws();
    if (!at_end()) fail("unexpected " + describe_here() + " after the JSON value");
    return v;
  }

private:
  [[noreturn]] void fail_at(std::size_t pos, const std::string& message) const {
    std::size_t line = 1, col = 1;
    for (std::size_t k = 0; k < pos && k < text_.size(); ++k) {
      if (text_[k] == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
    throw Error(ErrorKind::Parse, rlx::detail::cat("json:", line, ":", col, ": ", message));
  }
  [[noreturn]] void fail(const std::string& message) const { fail_at(pos_, message); }

  bool at_end() const { return pos_ >= text_.size(); }
  char peek() const { return text_[pos_]; }

  /// The current character for an error message: 'x', byte 0xNN, or end of input.
  std::string describe_here() const {
    if (at_end()) return "end of input";
    auto c = static_cast<unsigned char>(text_[pos_]);
    if (c >= 0x20 && c < 0x7F) return std::string("'") + char(c) + "'";
    return "byte " + hex_byte(c);
  }

  void skip_ws() {
    while (!at_end()) {
      char c = peek();
      if (c != ' ' && c != '\t' && c != '\n' && c != '\r') break;
      ++pos_;
    }
  }

  JsonValue parse_value(int depth) {
    if (at_end()) fail("expected a value, got end of input");
    switch (peek()) {
    case '{':
      return parse_object(depth + 1);
    case '[':
      return parse_array(depth + 1);
    case '"':
      return JsonValue::string(parse_string());
    case 't':
      return parse_literal("true", JsonValue::boolean(true));
    case 'f':
      return parse_literal("false", JsonValue::boolean(false));
    case 'n':
      return parse_literal("null", JsonValue::null());
    default:
      if (peek() == '-' || is_digit(peek())) return parse_number();
      fail("expected a value, got " + describe_here());
    }
  }

  void check_depth(int depth) const {
    if (depth > kJsonMaxDepth)
      fail(
          rlx::detail::cat("arrays and objects are nested deeper than ", kJsonMaxDepth, " levels"));
  }

  JsonValue parse_literal(std::string_view word, JsonValue value) {
    if (text_.substr(pos_, word.size()) != word)
      fail("invalid literal (expected true, false or null)");
    pos_ += word.size();
    return value;
  }

  JsonValue parse_array(int depth) {
    check_depth(depth);
    JsonValue v = JsonValue::make_array();
    ++pos_; // '['
    skip_ws();
    if (!at_end() && peek() == ']') {
      ++pos_;
      return v;
    }
    while (true) {
      skip_ws();
      if (!at_end() && peek() == ']') fail("trailing comma in array");
      v.array.push_back(parse_value(depth));
      skip_ws();
      if (at_end()) fail("unterminated array (expected ',' or ']', got end of input)");
      if (peek() == ',') {
        ++pos_;
      } else if (peek() == ']') {
        ++pos_;
        return v;
      } else {
        fail("expected ',' or ']' in array, got " + describe_here());
      }
    }
  }

  JsonValue parse_object(int depth) {
    check_depth(depth);
    JsonValue v = JsonValue::make_object();
    ++pos_; // '{'
    skip_ws();
    if (!at_end() && peek() == '}') {
      ++pos_;
      return v;
    }
    std::unordered_set<std::string> keys; // used once the object is large
    constexpr std::size_t kLinearKeys = 16;
    while (true) {
      skip_ws();
      if (at_end()) fail("unterminated object (expected a key, got end of input)");
      if (peek() == '}') fail("trailing comma in object");
      if (peek() != '"') fail("expected a string key in object, got " + describe_here());
      std::size_t key_pos = pos_;
      std::string key = parse_string();
      bool duplicate = false;
      if (v.object.size() < kLinearKeys) {
        for (const auto& m : v.object) duplicate = duplicate || m.first == key;
      } else {
        if (keys.empty())
          for (const auto& m : v.object) keys.insert(m.first);
        duplicate = !keys.insert(key).second;
      }
      if (duplicate) {
        std::string quoted;
        write_json_string(quoted, key);
        fail_at(key_pos, "duplicate key " + quoted + " in object");
      }
      skip_ws();
      if (at_end() || peek() != ':') fail("expected ':' after object key, got " + describe_here());
      ++pos_;
      skip_ws();
      JsonValue value = parse_value(depth);
      v.object.emplace_back(std::move(key), std::move(value));
      skip_ws();
      if (at_end()) fail("unterminated object (expected ',' or '}', got end of input)");
      if (peek() == ',') {
        ++pos_;
      } else if (peek() == '}') {
        ++pos_;
        return v;
      } else {
        fail("expected ',' or '}' in object, got " + describe_here());
      }
    }
  }

  uint32_t parse_hex4() {
    if (text_.size() - pos_ < 4) fail("invalid \\u escape (expected 4 hex digits)");
    uint32_t cp = 0;
    for (int k = 0; k < 4; ++k) {
      int h = hex_value(text_[pos_ + std::size_t(k)]);
      if (h < 0) fail("invalid \\u escape (expected 4 hex digits)");
      cp = cp * 16 + uint32_t(h);
    }
    pos_ += 4;
    return cp;
  }

  /// After the backslash of an escape; appends the decoded character.
  void parse_escape(std::string& out) {
    std::size_t start = pos_ - 1;
    if (at_end()) fail_at(start, "unterminated string");
    char e = text_[pos_++];
    switch (e) {
    case '"':
      out += '"';
      return;
    case '\\':
      out += '\\';
      return;
    case '/':
      out += '/';
      return;
    case 'b':
      out += '\b';
      return;
    case 'f':
      out += '\f';
      return;
    case 'n':
      out += '\n';
      return;
    case 'r':
      out += '\r';
      return;
    case 't':
      out += '\t';
      return;
    case 'u':
      break;
    default:
      --pos_;
      fail("invalid escape sequence (a backslash followed by " + describe_here() + ")");
    }
    uint32_t cp = parse_hex4();
    if (cp >= 0xDC00 && cp <= 0xDFFF)
      fail_at(start,
              "lone low surrogate \\u" + std::string(text_.substr(start + 2, 4)) + " in string");
    if (cp >= 0xD800 && cp <= 0xDBFF) {
      if (text_.substr(pos_, 2) != "\\u")
        fail_at(start, "lone high surrogate \\u" + std::string(text_.substr(start + 2, 4)) +
                           " in string (expected a \\uDC00-\\uDFFF escape after it)");
      pos_ += 2;
      uint32_t lo = parse_hex4();
      if (lo < 0xDC00 || lo > 0xDFFF)
        fail_at(start, "lone high surrogate \\u" + std::string(text_.substr(start + 2, 4)) +
                           " in string (expected a \\uDC00-\\uDFFF escape after it)");
      cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
    }
    append_utf8(out, cp);
  }

  /// One UTF-8 encoded character starting at pos_ (its lead byte is >= 0x80).
  void parse_utf8(std::string& out) {
    auto c = static_cast<unsigned char>(text_[pos_]);
    std::size_t need = 0;
    unsigned char lo = 0x80, hi = 0xBF;
    const char* range_error = "";
    if (c >= 0xC2 && c <= 0xDF) {
      need = 1;
    } else if (c == 0xE0) {
      need = 2;
      lo = 0xA0;
      range_error = "overlong encoding";
    } else if ((c >= 0xE1 && c <= 0xEC) || c == 0xEE || c == 0xEF) {
      need = 2;
    } else if (c == 0xED) {
      need = 2;
      hi = 0x9F;
      range_error = "UTF-16 surrogate encoded in UTF-8";
    } else if (c == 0xF0) {
      need = 3;
      lo = 0x90;
      range_error = "overlong encoding";
    } else if (c >= 0xF1 && c <= 0xF3) {
      need = 3;
    } else if (c == 0xF4) {
      need = 3;
      hi = 0x8F;
      range_error = "code point above U+10FFFF";
    } else if (c == 0xC0 || c == 0xC1) {
      fail("invalid UTF-8 in string: overlong encoding (byte " + hex_byte(c) + ")");
    } else if (c < 0xC0) {
      fail("invalid UTF-8 in string: unexpected continuation byte " + hex_byte(c));
    } else {
      fail("invalid UTF-8 in string: byte " + hex_byte(c) + " never appears in UTF-8");
    }
    for (std::size_t k = 1; k <= need; ++k) {
      if (pos_ + k >= text_.size()) fail("invalid UTF-8 in string: truncated sequence");
      auto b = static_cast<unsigned char>(text_[pos_ + k]);
      if ((b & 0xC0) != 0x80) fail("invalid UTF-8 in string: truncated sequence");
      if (k == 1 && (b < lo || b > hi))
        fail(std::string("invalid UTF-8 in string: ") + range_error);
    }
    out.append(text_.substr(pos_, need + 1));
    pos_ += need + 1;
  }

  std::string parse_string() {
    std::size_t start = pos_;
    ++pos_; // '"'
    std::string out;
    while (true) {
      if (at_end()) fail_at(start, "unterminated string");
      auto c = static_cast<unsigned char>(peek());
      if (c == '"') {
        ++pos_;
        return out;
      }
      if (c == '\\') {
        ++pos_;
        parse_escape(out);
      } else if (c < 0x20) {
        fail("control character " + hex_byte(c) + " in string (it must be escaped)");
      } else if (c < 0x80) {
        // Copy the run of plain ASCII at once.
        std::size_t end = pos_ + 1;
        while (end < text_.size()) {
          auto d = static_cast<unsigned char>(text_[end]);
          if (d == '"' || d == '\\' || d < 0x20 || d >= 0x80) break;
          ++end;
        }
        out.append(text_.substr(pos_, end - pos_));
        pos_ = end;
      } else {
        parse_utf8(out);
      }
    }
  }

  JsonValue parse_number() {
    std::size_t start = pos_;
    if (peek() == '-') ++pos_;
    if (at_end() || !is_digit(peek())) fail("invalid number (expected a digit)");
    if (peek() == '0') {
      ++pos_;
      if (!at_end() && is_digit(peek())) fail("invalid number (leading zeros are not allowed)");
    } else {
      while (!at_end() && is_digit(peek())) ++pos_;
    }
    bool integral = true;
    if (!at_end() && peek() == '.') {
      integral = false;
      ++pos_;
      if (at_end() || !is_digit(peek())) fail("invalid number (expected a digit after '.')");
      while (!at_end() && is_digit(peek())) ++pos_;
    }
    if (!at_end() && (peek() == 'e' || peek() == 'E')) {
      integral = false;
      ++pos_;
      if (!at_end() && (peek() == '+' || peek() == '-')) ++pos_;
      if (at_end() || !is_digit(peek())) fail("invalid number (expected a digit in the exponent)");
      while (!at_end() && is_digit(peek())) ++pos_;
    }
    std::string_view tok = text_.substr(start, pos_ - start);
    const char* first = tok.data();
    const char* last = tok.data() + tok.size();
    if (integral) {
      int64_t v = 0;
      auto r = std::from_chars(first, last, v);
      if (r.ec == std::errc::result_out_of_range)
        fail_at(start,
                "number out of range: " + shorten(tok) + " does not fit in a 64-bit integer");
      if (r.ec != std::errc() || r.ptr != last) fail_at(start, "invalid number");
      return JsonValue::integer(v);
    }
    double d = 0;
    auto r = std::from_chars(first, last, d);
    if (r.ec == std::errc::result_out_of_range) {
      if (literal_overflows(tok))
        fail_at(start, "number out of range: " + shorten(tok) + " is too large for a double");
      d = tok[0] == '-' ? -0.0 : 0.0; // underflow: rounds to zero
    } else if (r.ec != std::errc() || r.ptr != last) {
      fail_at(start, "invalid number");
    }
    return JsonValue::number(d);
  }

  std::string_view text_;
  std::size_t pos_ = 0;
};

} // namespace

JsonValue parse_json(std::string_view text) { return Parser(text).parse_document(); }

} // namespace rlx::ir::detail
