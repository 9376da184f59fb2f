// src/ir/dtype.cpp -- dtype parsing and promotion.
#include "rlx/ir/dtype.hpp"

namespace rlx::ir {

std::optional<DType> parse_dtype(std::string_view text) {
  for (std::size_t i = 0; i < kNumDTypes; ++i)
    if (detail::kDTypeInfo[i].name == text) return static_cast<DType>(i);
  return std::nullopt;
}

namespace {
// Bool < U8,I8 < I16,BF16 < F16 < U32,I32 < I64 < F32 < F64 < C64 (the original's promotion rank).
int promotion_rank(DType t) {
  switch (t) {
  case DType::Bool:
    return 0;
  case DType::U8:
  case DType::I8:
    return 1;
  case DType::I16:
  case DType::BF16:
    return 2;
  case DType::F16:
    return 3;
  case DType::U32:
  case DType::I32:
    return 4;
  case DType::I64:
    return 5;
  case DType::F32:
    return 6;
  case DType::F64:
    return 7;
  case DType::C64:
    return 8;
  }
  return 0;
}
} // namespace

DType promote(DType a, DType b) {
  if (a == b) return a;
  if ((a == DType::F16 && b == DType::BF16) || (a == DType::BF16 && b == DType::F16))
    return DType::F32;
  bool af = is_float(a), bf = is_float(b);
  if (af != bf && !is_complex(a) && !is_complex(b)) {
    DType f = af ? a : b, other = af ? b : a;
    if (is_bool(other)) return f;
    if (f == DType::F16 || f == DType::BF16) return DType::F32;
    if (f == DType::F32 && other == DType::I64) return DType::F64;
    return f;
  }
  if (is_int(a) && is_int(b) && is_signed(a) != is_signed(b)) {
    // Mixed signedness: the signed type wide enough for both (u8+i8 -> i16, u32+i32 -> i64).
    DType u = is_signed(a) ? b : a, s = is_signed(a) ? a : b;
    if (size_bytes(s) > size_bytes(u)) return s;
    return size_bytes(u) < 4 ? (size_bytes(u) == 1 ? DType::I16 : DType::I32) : DType::I64;
  }
  return promotion_rank(a) >= promotion_rank(b) ? a : b;
}

std::ostream& operator<<(std::ostream& os, DType t) { return os << dtype_name(t); }

} // namespace rlx::ir
