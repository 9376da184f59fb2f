// tools/repl/rlx_repl_prelude.hpp -- what every rlx-repl session starts with: rlx, and the printer
// that a cell's trailing expression is wrapped in (clang 19's own value printing is a stub).
//
// rlx-repl runs `x + 1` (a cell ending in an expression) as
//     ::rlx::repl::show(((x + 1), ::rlx::repl::NoValue{}));
// The comma keeps void expressions legal: for a value, the overloaded comma below wraps it in a
// Shown; for void, the built-in comma yields NoValue, which prints nothing. repr() is the text:
// tensors as rlx prints them, numbers as Python would, strings quoted, containers bracketed,
// anything with an operator<< through it, and other types as their name.
// The out-of-line functions are compiled into rlx-repl (value_print.cpp); everything here is
// also compiled by tests/repl/test_repl_units.cpp, so the printer is tested without clang.
// <atomic>, <future>, <mutex> and <thread> are here for cells that include them: the PCH's
// -D__always_inline__=__used__ is on the templates of <bits/atomic_base.h> (the prelude needs
// them), so a cell including <atomic> itself would instantiate and emit every member of
// atomic<T> for each T (3 s), atomic<long double>'s calling libatomic's __atomic_load_16.
#pragma once

#include <rlx/all.hpp>
#include <rlx/host.hpp>

#include <array>
#include <atomic>
#include <cmath>
#include <complex>
#include <concepts>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <future>
#include <iostream>
#include <map>
#include <mutex>
#include <optional>
#include <ostream>
#include <span>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

namespace rlx::repl {

/// What a void expression leaves after `, NoValue{}`.
struct NoValue {};

/// A non-void expression's value, held until show() prints it.
template <class T> struct Shown {
  T&& value;
};
template <class T> Shown<T> operator,(T&& value, NoValue) {
  return Shown<T>{std::forward<T>(value)};
}

// ---- Compiled into rlx-repl (value_print.cpp).
/// Print a value's text: to the sink a host installed (rlx-kernel: an execute_result), else
/// `text` and a newline on stdout, flushed.
void print_line(std::string_view text);
/// What print_line calls instead of writing to stdout; `{}` removes it. Returns the previous one.
using ValueSink = std::function<void(std::string_view)>;
ValueSink set_value_sink(ValueSink sink);
/// A string literal of `s` between `delimiter`s, escaping the delimiter, backslashes and
/// control characters as C++ would.
std::string quote(std::string_view s, char delimiter = '"');
/// The shortest text that reads back as the same number (Python's repr of a float).
std::string number(double v);
std::string number(float v);
/// The readable type name inside a __PRETTY_FUNCTION__ of name_of<T>().
std::string type_from_signature(std::string_view pretty);

template <class T> std::string name_of() { return type_from_signature(__PRETTY_FUNCTION__); }

template <class T>
concept Streamable = requires(std::ostream& os, const T& v) { os << v; };

template <class T>
concept Range = requires(const T& v) {
  std::begin(v);
  std::end(v);
};

template <class T> struct IsOptional : std::false_type {};
template <class T> struct IsOptional<std::optional<T>> : std::true_type {};

template <class T> std::string repr(const T& v);

template <class Tuple> std::string repr_tuple(const Tuple& t) {
  std::string s = "(";
  std::apply(
      [&](const auto&... xs) {
        std::size_t i = 0;
        ((s += (i++ ? ", " : "") + repr(xs)), ...);
      },
      t);
  return s + ")";
}

template <class T> std::string repr(const T& v) {
  using U = std::remove_cvref_t<T>;
  if constexpr (std::is_same_v<U, Tensor>) {
    return v.str();
  } else if constexpr (std::is_same_v<U, Shape>) {
    return ir::short_str(v);
  } else if constexpr (std::is_same_v<U, bool>) {
    return v ? "true" : "false";
  } else if constexpr (std::is_same_v<U, char>) {
    return quote(std::string_view(&v, 1), '\'');
  } else if constexpr (std::is_floating_point_v<U>) {
    if constexpr (std::is_same_v<U, float>)
      return number(v);
    else
      return number(double(v));
  } else if constexpr (std::is_integral_v<U>) {
    return std::to_string(v);
  } else if constexpr (std::is_null_pointer_v<U>) {
    return "nullptr";
  } else if constexpr (std::is_pointer_v<U> && std::is_convertible_v<U, const char*>) {
    return v ? quote(v) : std::string("nullptr"); // a C string
  } else if constexpr (std::is_convertible_v<const U&, std::string_view>) {
    return quote(std::string_view(v));
  } else if constexpr (std::is_enum_v<U> && Streamable<U>) {
    std::ostringstream os;
    os << v;
    return os.str();
  } else if constexpr (NamedEnum<U>) {
    return name_of<U>() + "::" + std::string(enum_name(v));
  } else if constexpr (std::is_enum_v<U>) {
    return name_of<U>() + "(" + std::to_string(std::underlying_type_t<U>(v)) + ")";
  } else if constexpr (std::is_pointer_v<U>) {
    std::ostringstream os;
    os << static_cast<const void*>(v);
    return "(" + name_of<U>() + ") " + os.str();
  } else if constexpr (IsOptional<U>::value) {
    return v ? repr(*v) : std::string("nullopt");
  } else if constexpr (requires { std::tuple_size<U>::value; } && !Range<U>) {
    return repr_tuple(v);
  } else if constexpr (requires { typename U::mapped_type; } && Range<U>) {
    std::string s = "{";
    for (const auto& [key, value] : v)
      s += (s.size() > 1 ? ", " : "") + repr(key) + ": " + repr(value);
    return s + "}";
  } else if constexpr (Range<U> && !Streamable<U>) {
    std::string s = "[";
    bool first = true;
    for (const auto& x : v) {
      s += (first ? "" : ", ") + repr(x);
      first = false;
    }
    return s + "]";
  } else if constexpr (std::is_class_v<U> && requires { &U::operator(); }) {
    return "<" + name_of<U>() + ">"; // a lambda: not its conversion to a function pointer
  } else if constexpr (Streamable<U>) {
    std::ostringstream os;
    os << v;
    return os.str();
  } else {
    return "<" + name_of<U>() + ">";
  }
}

inline void show(NoValue) {}

template <class T> void show(Shown<T> s) {
  using U = std::remove_cvref_t<T>;
  if constexpr (std::is_base_of_v<std::ios_base, U>) {
    return; // `std::cout << x` typed without `;`: what it wrote is the output
  } else {
    print_line(repr(s.value));
  }
}

} // namespace rlx::repl
