// include/rlx/enum.hpp -- enum classes that know their own names (for printing and parsing).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace rlx::detail {

constexpr std::size_t count_enumerators(std::string_view s) {
  std::size_t n = 1;
  for (char c : s) n += (c == ',');
  return n;
}

/// Split "A, B, C" (a stringized enumerator list) into {"A", "B", "C"} at compile time.
template <std::size_t N>
constexpr std::array<std::string_view, N> split_enumerators(std::string_view s) {
  std::array<std::string_view, N> out{};
  std::size_t i = 0;
  while (i < N) {
    std::size_t comma = s.find(',');
    std::string_view part = s.substr(0, comma);
    while (!part.empty() && (part.front() == ' ' || part.front() == '\n')) part.remove_prefix(1);
    while (!part.empty() && (part.back() == ' ' || part.back() == '\n')) part.remove_suffix(1);
    out[i++] = part;
    if (comma == std::string_view::npos) break;
    s.remove_prefix(comma + 1);
  }
  return out;
}

} // namespace rlx::detail

/// Declare `enum class Name : uint8_t { ... }` plus rlx_enum_names(Name) for generic code.
/// The printed name of an enumerator is its C++ name (e.g. Activation::GeluApprox -> "GeluApprox").
#define RLX_ENUM(Name, ...)                                                                        \
  enum class Name : uint8_t { __VA_ARGS__ };                                                       \
  inline constexpr auto rlx_enum_names(Name) {                                                     \
    constexpr std::string_view text = #__VA_ARGS__;                                                \
    return ::rlx::detail::split_enumerators<::rlx::detail::count_enumerators(text)>(text);         \
  }

namespace rlx {

template <class E>
concept NamedEnum = std::is_enum_v<E> && requires(E e) { rlx_enum_names(e); };

template <NamedEnum E> constexpr std::string_view enum_name(E e) {
  auto names = rlx_enum_names(E{});
  auto i = static_cast<std::size_t>(e);
  return i < names.size() ? names[i] : std::string_view("<invalid>");
}

template <NamedEnum E> constexpr std::optional<E> parse_enum(std::string_view text) {
  auto names = rlx_enum_names(E{});
  for (std::size_t i = 0; i < names.size(); ++i)
    if (names[i] == text) return static_cast<E>(i);
  return std::nullopt;
}

template <NamedEnum E> constexpr std::size_t enum_count() { return rlx_enum_names(E{}).size(); }

} // namespace rlx
