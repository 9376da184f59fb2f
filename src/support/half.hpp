// src/support/half.hpp -- IEEE binary16 and bfloat16 <-> float, round to nearest even.
#pragma once

#include <bit>
#include <cstdint>

namespace rlx::detail {

inline float f16_to_f32(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu, man = h & 0x3ffu;
  uint32_t bits;
  if (exp == 0) {
    if (man == 0) {
      bits = sign;
    } else { // subnormal: normalize
      int e = -1;
      do {
        man <<= 1;
        ++e;
      } while ((man & 0x400u) == 0);
      bits = sign | (uint32_t(127 - 15 - e) << 23) | ((man & 0x3ffu) << 13);
    }
  } else if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (man << 13) | (man ? 0x400000u : 0); // inf or quiet NaN
  } else {
    bits = sign | ((exp + 127 - 15) << 23) | (man << 13);
  }
  return std::bit_cast<float>(bits);
}

inline uint16_t f32_to_f16(float f) {
  uint32_t x = std::bit_cast<uint32_t>(f);
  uint16_t sign = uint16_t((x >> 16) & 0x8000u);
  uint32_t abs = x & 0x7fffffffu;
  if (abs >= 0x7f800000u) return uint16_t(sign | 0x7c00u | (abs > 0x7f800000u ? 0x200u : 0));
  if (abs >= 0x477ff000u) return uint16_t(sign | 0x7c00u); // rounds past 65504: inf
  if (abs < 0x38800000u) {                                 // result is subnormal or zero
    if (abs < 0x33000000u) return sign;                    // below half the smallest subnormal
    uint32_t e = abs >> 23, man = (abs & 0x7fffffu) | 0x800000u;
    uint32_t shift = 126 - e; // 14..24 (value = man * 2^(e-150), target unit 2^-24)
    uint32_t q = man >> shift, rem = man & ((1u << shift) - 1), half = 1u << (shift - 1);
    if (rem > half || (rem == half && (q & 1))) ++q;
    return uint16_t(sign | q);
  }
  uint32_t q = abs - 0x38000000u; // rebias exponent by (127-15) << 23
  uint32_t rem = q & 0x1fffu;
  q >>= 13;
  if (rem > 0x1000u || (rem == 0x1000u && (q & 1))) ++q;
  return uint16_t(sign | q);
}

inline float bf16_to_f32(uint16_t h) { return std::bit_cast<float>(uint32_t(h) << 16); }

inline uint16_t f32_to_bf16(float f) {
  uint32_t x = std::bit_cast<uint32_t>(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return uint16_t((x >> 16) | 0x40u); // quiet NaN
  uint32_t rounding = 0x7fffu + ((x >> 16) & 1u);
  return uint16_t((x + rounding) >> 16);
}

} // namespace rlx::detail
