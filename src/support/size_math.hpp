// src/support/size_math.hpp -- overflow-checked arithmetic for element counts, byte counts and
// products of attributes: nullopt where int64 would wrap.
#pragma once

#include <cstdint>
#include <optional>
#include <span>

namespace rlx::detail {

/// a * b, or nullopt when it does not fit in int64.
inline std::optional<int64_t> checked_mul(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}

/// a + b, or nullopt when it does not fit in int64.
inline std::optional<int64_t> checked_add(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) return std::nullopt;
  return r;
}

/// The product of sizes (each >= 0), or nullopt when it exceeds `limit`. A zero size makes the
/// product 0, but the other sizes still count: [0, 2^40, 2^40] exceeds 2^48 (as in numpy, an
/// empty array may not have dimensions whose product could not be represented), which keeps
/// every stride of an accepted shape representable.
inline std::optional<int64_t> checked_product(std::span<const int64_t> sizes, int64_t limit) {
  int64_t nonzero = 1;
  bool empty = false;
  for (int64_t s : sizes) {
    if (s == 0) {
      empty = true;
      continue;
    }
    std::optional<int64_t> p = checked_mul(nonzero, s);
    if (!p || *p > limit) return std::nullopt;
    nonzero = *p;
  }
  return empty ? 0 : nonzero;
}

} // namespace rlx::detail
