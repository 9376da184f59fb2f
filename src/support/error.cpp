// src/support/error.cpp -- error kind names and the internal-error thrower.
#include "rlx/error.hpp"

#include <cstring>

namespace rlx {

std::string_view error_kind_name(ErrorKind kind) {
  switch (kind) {
  case ErrorKind::Shape:
    return "shape";
  case ErrorKind::Type:
    return "type";
  case ErrorKind::Value:
    return "value";
  case ErrorKind::Parse:
    return "parse";
  case ErrorKind::Verify:
    return "verify";
  case ErrorKind::Bind:
    return "bind";
  case ErrorKind::Unsupported:
    return "unsupported";
  case ErrorKind::Io:
    return "io";
  case ErrorKind::Runtime:
    return "runtime";
  case ErrorKind::Trace:
    return "trace";
  case ErrorKind::Limit:
    return "limit";
  case ErrorKind::Interrupted:
    return "interrupted";
  }
  return "unknown";
}

namespace detail {

void internal_fail(const char* file, int line, const char* cond, const std::string& msg) {
  std::string text = cat("rlx internal error at ", file, ":", line, ": check '", cond, "' failed");
  if (!msg.empty()) text += ": " + msg;
  text += " (this is a bug in rlx; please report it)";
  throw InternalError(text);
}

std::string at_loc(const Loc& loc) {
  if (loc.line() == 0 || loc.file_name() == nullptr || *loc.file_name() == '\0') return "";
  const char* file = loc.file_name();
  return cat(" (at ", file, ":", loc.line(), ")");
}

} // namespace detail
} // namespace rlx
