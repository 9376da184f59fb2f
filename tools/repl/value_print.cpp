// tools/repl/value_print.cpp -- the compiled half of the value printer in rlx_repl_prelude.hpp.
#include "rlx_repl_prelude.hpp"

#include <charconv>
#include <cmath>
#include <cstdio>

namespace rlx::repl {

namespace {
ValueSink g_value_sink;
} // namespace

ValueSink set_value_sink(ValueSink sink) {
  std::swap(g_value_sink, sink);
  return sink;
}

void print_line(std::string_view text) {
  if (g_value_sink) {
    g_value_sink(text);
    return;
  }
  std::fflush(stdout);
  std::string line(text);
  line += '\n';
  std::fwrite(line.data(), 1, line.size(), stdout);
  std::fflush(stdout);
}

std::string quote(std::string_view s, char delimiter) {
  std::string out(1, delimiter);
  for (char c : s) {
    switch (c) {
    case '\n':
      out += "\\n";
      break;
    case '\t':
      out += "\\t";
      break;
    case '\r':
      out += "\\r";
      break;
    case '\\':
      out += "\\\\";
      break;
    default:
      if (c == delimiter) {
        out += '\\';
        out += c;
      } else if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
        char hex[8];
        std::snprintf(hex, sizeof hex, "\\x%02x", unsigned(static_cast<unsigned char>(c)));
        out += hex;
      } else {
        out += c;
      }
    }
  }
  out += delimiter;
  return out;
}

namespace {

template <class F> std::string shortest(F v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  std::string s(buf, ec == std::errc() ? end : buf);
  // Python writes integral floats with ".0" so that 2.0 does not read as the integer 2.
  if (s.find_first_of(".en") == std::string::npos) s += ".0";
  return s;
}

} // namespace

std::string number(double v) { return shortest(v); }
std::string number(float v) { return shortest(v); }

std::string type_from_signature(std::string_view pretty) {
  // clang: "std::string rlx::repl::name_of() [T = rlx::Tensor]"
  std::size_t at = pretty.find("[T = ");
  if (at == std::string_view::npos) return std::string(pretty);
  std::string_view t = pretty.substr(at + 5);
  if (!t.empty() && t.back() == ']') t.remove_suffix(1);
  return std::string(t);
}

} // namespace rlx::repl
