// include/rlx/ir/dtype.hpp -- element types: sizes, names, predicates and promotion.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <ostream>
#include <string_view>

namespace rlx::ir {

// X(Enum, "text", size in bytes, float?, integer?, signed?)
#define RLX_DTYPES(X)                                                                              \
  X(F32, "f32", 4, true, false, true)                                                              \
  X(F16, "f16", 2, true, false, true)                                                              \
  X(BF16, "bf16", 2, true, false, true)                                                            \
  X(F64, "f64", 8, true, false, true)                                                              \
  X(I8, "i8", 1, false, true, true)                                                                \
  X(I16, "i16", 2, false, true, true)                                                              \
  X(I32, "i32", 4, false, true, true)                                                              \
  X(I64, "i64", 8, false, true, true)                                                              \
  X(U8, "u8", 1, false, true, false)                                                               \
  X(U32, "u32", 4, false, true, false)                                                             \
  X(Bool, "bool", 1, false, false, false)                                                          \
  X(C64, "c64", 8, false, false, true)

enum class DType : uint8_t {
#define X(E, N, S, F, I, SG) E,
  RLX_DTYPES(X)
#undef X
};

inline constexpr std::size_t kNumDTypes = 0
#define X(E, N, S, F, I, SG) +1
    RLX_DTYPES(X)
#undef X
    ;

namespace detail {
struct DTypeInfo {
  std::string_view name;
  std::size_t size;
  bool is_float, is_int, is_signed;
};
inline constexpr DTypeInfo kDTypeInfo[] = {
#define X(E, N, S, F, I, SG) {N, S, F, I, SG},
    RLX_DTYPES(X)
#undef X
};
} // namespace detail

constexpr std::size_t size_bytes(DType t) { return detail::kDTypeInfo[int(t)].size; }
constexpr std::string_view dtype_name(DType t) { return detail::kDTypeInfo[int(t)].name; }
/// Real floating point types (F32, F16, BF16, F64).
constexpr bool is_float(DType t) { return detail::kDTypeInfo[int(t)].is_float; }
/// Integer types (signed and unsigned); Bool is not an integer.
constexpr bool is_int(DType t) { return detail::kDTypeInfo[int(t)].is_int; }
constexpr bool is_signed(DType t) { return detail::kDTypeInfo[int(t)].is_signed; }
constexpr bool is_complex(DType t) { return t == DType::C64; }
constexpr bool is_bool(DType t) { return t == DType::Bool; }
/// Float, integer or complex: anything that supports + and *.
constexpr bool is_numeric(DType t) { return !is_bool(t); }

std::optional<DType> parse_dtype(std::string_view text);

/// The dtype two operands are computed in (numpy-like; see docs/semantics.md).
DType promote(DType a, DType b);

std::ostream& operator<<(std::ostream& os, DType t);

} // namespace rlx::ir
