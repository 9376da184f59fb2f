// include/rlx/error.hpp -- the two error tiers: rlx::Error for users, rlx::InternalError for bugs.
#pragma once

#include <cstdint>
#include <source_location>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>

namespace rlx {

/// What kind of user mistake an Error reports.
enum class ErrorKind : uint8_t {
  Shape,       ///< operand shapes do not fit the op
  Type,        ///< operand dtypes do not fit the op
  Value,       ///< an attribute or argument value is out of range
  Parse,       ///< malformed text IR, JSON or another file format
  Verify,      ///< a graph breaks an IR invariant (found by verify())
  Bind,        ///< a dynamic dimension binding is missing or inconsistent
  Unsupported, ///< valid request that this build cannot do
  Io,          ///< a file could not be read or written
  Runtime,     ///< missing inputs, bad buffers at run time
  Trace,       ///< a traced value used where a concrete one is needed (inside rlx::jit)
  Limit,       ///< a size or the memory limit would be exceeded
  Interrupted, ///< the host asked running work to stop (rlx::request_interrupt, Ctrl-C)
};

std::string_view error_kind_name(ErrorKind kind);

/// A user-facing error: bad input, bad shapes, malformed files. Never a crash.
class Error : public std::runtime_error {
public:
  Error(ErrorKind kind, const std::string& message) : std::runtime_error(message), kind_(kind) {}
  ErrorKind kind() const { return kind_; }

private:
  ErrorKind kind_;
};

/// A broken invariant inside rlx: a bug in rlx, not in the caller's program.
class InternalError : public std::logic_error {
public:
  explicit InternalError(const std::string& message) : std::logic_error(message) {}
};

/// Where a user's call came from; captured by every builder and frontend entry point.
using Loc = std::source_location;

namespace detail {

template <class... Args> std::string cat(const Args&... args) {
  std::ostringstream os;
  (os << ... << args);
  return os.str();
}

[[noreturn]] void internal_fail(const char* file, int line, const char* cond,
                                const std::string& msg);

/// " (at file.cpp:12)" for a user location, or "" when the location is unknown.
std::string at_loc(const Loc& loc);

} // namespace detail

/// Throw an rlx::Error whose message is the concatenation of args.
template <class... Args> [[noreturn]] void fail(ErrorKind kind, const Args&... args) {
  throw Error(kind, detail::cat(args...));
}

} // namespace rlx

/// Check an internal invariant; on failure throw rlx::InternalError with the message parts.
#define RLX_CHECK(cond, ...)                                                                       \
  do {                                                                                             \
    if (!(cond))                                                                                   \
      ::rlx::detail::internal_fail(__FILE__, __LINE__, #cond, ::rlx::detail::cat(__VA_ARGS__));    \
  } while (0)
