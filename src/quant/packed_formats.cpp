// src/quant/packed_formats.cpp -- the block codecs of src/quant/packed_formats.hpp. The byte
// layouts of the GGUF types follow ggml's published block structs (ggml-common.h); the FP8 codes
// follow the OCP 8-bit floating point specification (E4M3: bias 7, no infinity, S.1111.111 is NaN;
// E5M2: bias 15, IEEE-like); NVFP4 is E2M1 (bias 1) with an E4M3 scale per 16 values.
//
// Decoders compute every value in f32 in the order the header writes it; contraction into fused
// multiply-adds is off in this file so the numpy transcription (tests/fixtures/make_packed.py)
// gives the same bits. The encoders are rlx's own round-to-nearest quantizers (division by the
// scale, rint, clamp), not ggml's searches for the best scales: any encoder's output is a valid
// block, and these are simple enough to transcribe exactly.
#include "quant/packed_formats.hpp"

#include "rlx/error.hpp"
#include "support/half.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>

// The decoders must round as the numpy transcription does: no fused multiply-adds. (g++ in ISO
// C++ mode, the library's -std=c++20, does not contract by default.)
#if defined(__clang__)
#pragma clang fp contract(off)
#endif

namespace rlx::quant {

namespace {

constexpr int64_t kQK = 256; // a K-quant super-block

float f16(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return rlx::detail::f16_to_f32(h);
}
void put_f16(uint8_t* p, float v) {
  uint16_t h = rlx::detail::f32_to_f16(v);
  std::memcpy(p, &h, 2);
}
/// Stores v as f16 and returns what it reads back as (the scale the decoder will use).
float store_f16(uint8_t* p, float v) {
  put_f16(p, v);
  return f16(p);
}
float f32_at(const uint8_t* p) {
  float v;
  std::memcpy(&v, p, 4);
  return v;
}
void put_f32(uint8_t* p, float v) { std::memcpy(p, &v, 4); }

/// rint to an integer in [lo, hi]; NaN gives lo.
int32_t qclamp(float v, int32_t lo, int32_t hi) {
  float r = std::nearbyint(v);
  if (!(r >= float(lo))) return lo;
  if (r > float(hi)) return hi;
  return int32_t(r);
}

float amax_of(const float* x, int64_t n) {
  float m = 0;
  for (int64_t i = 0; i < n; ++i) m = std::max(m, std::fabs(x[i]));
  return m;
}

/// The value of largest magnitude, with its sign (the first one on ties).
float signed_max(const float* x, int64_t n) {
  float m = 0, a = 0;
  for (int64_t i = 0; i < n; ++i)
    if (std::fabs(x[i]) > a) {
      a = std::fabs(x[i]);
      m = x[i];
    }
  return m;
}

/// x / d, or 0 when d is 0 (an all-zero block).
float over(float x, float d) { return d == 0.0f ? 0.0f : x / d; }

/// Widens [lo, hi] to take in x[0..n) (NaNs are passed over).
void widen(const float* x, int64_t n, float& lo, float& hi) {
  for (int64_t i = 0; i < n; ++i) lo = std::min(lo, x[i]), hi = std::max(hi, x[i]);
}

/// The affine K-quants' (Q2_K, Q4_K, Q5_K) sub-block parameters: for each of `count` sub-blocks
/// of `len` values, the step (hi - lo) / levels and the offset -lo, with 0 inside [lo, hi].
void affine_scales(const float* x, int count, int len, int levels, float* scale, float* mn) {
  for (int j = 0; j < count; ++j) {
    float lo = 0, hi = 0;
    widen(x + len * j, len, lo, hi);
    scale[j] = (hi - lo) / float(levels);
    mn[j] = -lo;
  }
}

/// The symmetric K-quants' (Q3_K, Q6_K) sub-block scales: each sub-block's signed largest value
/// over `lowest` (the most negative code, so that value gets it). Returns the largest |scale|.
float symmetric_scales(const float* x, int count, int len, float lowest, float* scale) {
  for (int j = 0; j < count; ++j) scale[j] = signed_max(x + len * j, len) / lowest;
  float dmax = 0;
  for (int j = 0; j < count; ++j) dmax = std::max(dmax, std::fabs(scale[j]));
  return dmax;
}

/// Int8Block's, Int8BlockAsym's or Int4Block's codes of n values: d * code, or d * (code - zp).
/// The packed blocks and the split form share it.
void dec_int_codes(QuantFormat f, const uint8_t* q, int64_t n, float d, float zp, float* y) {
  if (f == QuantFormat::Int8Block) {
    for (int64_t i = 0; i < n; ++i) y[i] = d * float(int8_t(q[i]));
  } else if (f == QuantFormat::Int8BlockAsym) {
    for (int64_t i = 0; i < n; ++i) y[i] = d * (float(q[i]) - zp);
  } else {
    for (int64_t i = 0; i < n / 2; ++i) {
      y[2 * i] = d * (float(q[i] & 15) - zp);
      y[2 * i + 1] = d * (float(q[i] >> 4) - zp);
    }
  }
}

/// 16 E2M1 codes, two a byte (low nibble first), times s: an NVFP4 block's values.
void dec_fp4x16(const uint8_t* q, float s, float* y) {
  for (int i = 0; i < 8; ++i) {
    y[2 * i] = fp4_e2m1_to_f32(q[i] & 15) * s;
    y[2 * i + 1] = fp4_e2m1_to_f32(q[i] >> 4) * s;
  }
}

// Every codec takes the scheme (only the Int* formats read it, for their block size), so that
// one table (kCodecs, below) holds them all.

// ---- GGUF legacy blocks (32 values)

void dec_q4_0(QuantScheme, const uint8_t* b, float* y) {
  const float d = f16(b);
  for (int j = 0; j < 16; ++j) {
    y[j] = float(int(b[2 + j] & 15) - 8) * d;
    y[j + 16] = float(int(b[2 + j] >> 4) - 8) * d;
  }
}
void enc_q4_0(QuantScheme, const float* x, uint8_t* b) {
  const float d = signed_max(x, 32) / -8.0f;
  put_f16(b, d);
  for (int j = 0; j < 16; ++j) {
    int lo = qclamp(over(x[j], d), -8, 7) + 8, hi = qclamp(over(x[j + 16], d), -8, 7) + 8;
    b[2 + j] = uint8_t(lo | (hi << 4));
  }
}
void dec_q4_1(QuantScheme, const uint8_t* b, float* y) {
  const float d = f16(b), m = f16(b + 2);
  for (int j = 0; j < 16; ++j) {
    y[j] = float(b[4 + j] & 15) * d + m;
    y[j + 16] = float(b[4 + j] >> 4) * d + m;
  }
}
void enc_q4_1(QuantScheme, const float* x, uint8_t* b) {
  float lo = x[0], hi = x[0];
  widen(x + 1, 31, lo, hi);
  const float d = (hi - lo) / 15.0f;
  put_f16(b, d);
  put_f16(b + 2, lo);
  for (int j = 0; j < 16; ++j) {
    int a = qclamp(over(x[j] - lo, d), 0, 15), c = qclamp(over(x[j + 16] - lo, d), 0, 15);
    b[4 + j] = uint8_t(a | (c << 4));
  }
}
uint32_t u32_at(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
/// Q5_0 and Q5_1 (with_min).
template <bool with_min> void dec_q5(QuantScheme, const uint8_t* b, float* y) {
  const float d = f16(b), m = with_min ? f16(b + 2) : 0.0f;
  const uint8_t* p = b + (with_min ? 4 : 2);
  const uint32_t qh = u32_at(p);
  const uint8_t* qs = p + 4;
  for (int j = 0; j < 16; ++j) {
    int q0 = int(qs[j] & 15) | int(((qh >> j) & 1) << 4);
    int q1 = int(qs[j] >> 4) | int(((qh >> (j + 16)) & 1) << 4);
    if (with_min) {
      y[j] = float(q0) * d + m;
      y[j + 16] = float(q1) * d + m;
    } else {
      y[j] = float(q0 - 16) * d;
      y[j + 16] = float(q1 - 16) * d;
    }
  }
}
template <bool with_min> void enc_q5(QuantScheme, const float* x, uint8_t* b) {
  int q[32];
  if (with_min) {
    float lo = x[0], hi = x[0];
    widen(x + 1, 31, lo, hi);
    const float d = (hi - lo) / 31.0f;
    put_f16(b, d);
    put_f16(b + 2, lo);
    for (int j = 0; j < 32; ++j) q[j] = qclamp(over(x[j] - lo, d), 0, 31);
  } else {
    const float d = signed_max(x, 32) / -16.0f;
    put_f16(b, d);
    for (int j = 0; j < 32; ++j) q[j] = qclamp(over(x[j], d), -16, 15) + 16;
  }
  uint8_t* p = b + (with_min ? 4 : 2);
  uint32_t qh = 0;
  for (int j = 0; j < 32; ++j) qh |= uint32_t(q[j] >> 4) << j;
  std::memcpy(p, &qh, 4);
  for (int j = 0; j < 16; ++j) p[4 + j] = uint8_t((q[j] & 15) | ((q[j + 16] & 15) << 4));
}
void dec_q8_0(QuantScheme, const uint8_t* b, float* y) {
  const float d = f16(b);
  for (int j = 0; j < 32; ++j) y[j] = float(int8_t(b[2 + j])) * d;
}
void enc_q8_0(QuantScheme, const float* x, uint8_t* b) {
  const float d = amax_of(x, 32) / 127.0f;
  put_f16(b, d);
  for (int j = 0; j < 32; ++j) b[2 + j] = uint8_t(int8_t(qclamp(over(x[j], d), -127, 127)));
}

// ---- K-quants (256 values)

/// Q2_K and Q3_K's 2-bit codes: value v's byte and shift.
inline int qs2_byte(int v) { return (v / 128) * 32 + v % 32; }
inline int qs2_shift(int v) { return 2 * ((v % 128) / 32); }

void dec_q2_k(QuantScheme, const uint8_t* b, float* y) {
  const uint8_t *sc = b, *qs = b + 16;
  const float d = f16(b + 80), dmin = f16(b + 82);
  for (int v = 0; v < kQK; ++v) {
    const int s = sc[v / 16];
    const float dl = d * float(s & 15), ml = dmin * float(s >> 4);
    y[v] = dl * float((qs[qs2_byte(v)] >> qs2_shift(v)) & 3) - ml;
  }
}
void enc_q2_k(QuantScheme, const float* x, uint8_t* b) {
  float scale[16], mn[16];
  affine_scales(x, 16, 16, 3, scale, mn);
  const float d = *std::max_element(scale, scale + 16) / 15.0f;
  const float dmin = *std::max_element(mn, mn + 16) / 15.0f;
  const float dh = store_f16(b + 80, d), mh = store_f16(b + 82, dmin);
  std::memset(b + 16, 0, 64);
  for (int j = 0; j < 16; ++j) {
    const int s = qclamp(over(scale[j], d), 0, 15), m = qclamp(over(mn[j], dmin), 0, 15);
    b[j] = uint8_t(s | (m << 4));
    const float dl = dh * float(s), ml = mh * float(m);
    for (int l = 0; l < 16; ++l) {
      const int v = 16 * j + l;
      const int q = qclamp(over(x[v] + ml, dl), 0, 3);
      b[16 + qs2_byte(v)] |= uint8_t(q << qs2_shift(v));
    }
  }
}

/// Q3_K's 16 six-bit scales (biased by 32) from its 12 bytes.
int q3_scale(const uint8_t* s, int i) {
  const int lo = i < 8 ? (s[i] & 15) : (s[i - 8] >> 4);
  const int hi = (s[8 + i % 4] >> (2 * (i / 4))) & 3;
  return lo | (hi << 4);
}
void dec_q3_k(QuantScheme, const uint8_t* b, float* y) {
  const uint8_t *hm = b, *qs = b + 32, *sc = b + 96;
  const float d = f16(b + 108);
  for (int v = 0; v < kQK; ++v) {
    const float dl = d * float(q3_scale(sc, v / 16) - 32);
    const int lo = (qs[qs2_byte(v)] >> qs2_shift(v)) & 3;
    const int h = (hm[v % 32] >> (v / 32)) & 1;
    y[v] = dl * float(lo - (h ? 0 : 4));
  }
}
void enc_q3_k(QuantScheme, const float* x, uint8_t* b) {
  float scale[16];
  const float d = symmetric_scales(x, 16, 16, -4.0f, scale) / 31.0f;
  const float dh = store_f16(b + 108, d);
  std::memset(b, 0, 108);
  uint8_t* sc = b + 96;
  for (int j = 0; j < 16; ++j) {
    const int s = qclamp(over(scale[j], d), -32, 31) + 32;
    if (j < 8)
      sc[j] |= uint8_t(s & 15);
    else
      sc[j - 8] |= uint8_t((s & 15) << 4);
    sc[8 + j % 4] |= uint8_t((s >> 4) << (2 * (j / 4)));
    const float dl = dh * float(s - 32);
    for (int l = 0; l < 16; ++l) {
      const int v = 16 * j + l;
      const int q = qclamp(over(x[v], dl), -4, 3) + 4;
      b[32 + qs2_byte(v)] |= uint8_t((q & 3) << qs2_shift(v));
      b[v % 32] |= uint8_t((q >> 2) << (v / 32));
    }
  }
}

/// Q4_K and Q5_K's eight six-bit scales and mins from their 12 bytes.
void k4_scale_min(const uint8_t* q, int j, int& sc, int& m) {
  if (j < 4) {
    sc = q[j] & 63;
    m = q[j + 4] & 63;
  } else {
    sc = (q[j + 4] & 15) | ((q[j - 4] >> 6) << 4);
    m = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
  }
}
void put_k4_scales(uint8_t* q, const int* sc, const int* m) {
  for (int j = 0; j < 4; ++j) {
    q[j] = uint8_t((sc[j] & 63) | ((sc[j + 4] >> 4) << 6));
    q[j + 4] = uint8_t((m[j] & 63) | ((m[j + 4] >> 4) << 6));
    q[j + 8] = uint8_t((sc[j + 4] & 15) | ((m[j + 4] & 15) << 4));
  }
}
/// Q4_K and Q5_K (five: with the fifth bits qh).
template <bool five> void dec_k45(QuantScheme, const uint8_t* b, float* y) {
  const float d = f16(b), dmin = f16(b + 2);
  const uint8_t* sc = b + 4;
  const uint8_t* qh = five ? b + 16 : nullptr;
  const uint8_t* qs = b + (five ? 48 : 16);
  for (int v = 0; v < kQK; ++v) {
    const int j = v / 32, g = v / 64, r = v % 64;
    int s, m;
    k4_scale_min(sc, j, s, m);
    const float dl = d * float(s), ml = dmin * float(m);
    int q = r < 32 ? (qs[32 * g + r] & 15) : (qs[32 * g + r - 32] >> 4);
    if (five) q |= ((qh[r % 32] >> j) & 1) << 4;
    y[v] = dl * float(q) - ml;
  }
}
template <bool five> void enc_k45(QuantScheme, const float* x, uint8_t* b) {
  const int levels = five ? 31 : 15;
  float scale[8], mn[8];
  affine_scales(x, 8, 32, levels, scale, mn);
  const float d = *std::max_element(scale, scale + 8) / 63.0f;
  const float dmin = *std::max_element(mn, mn + 8) / 63.0f;
  const float dh = store_f16(b, d), mh = store_f16(b + 2, dmin);
  int sc[8], m[8];
  for (int j = 0; j < 8; ++j)
    sc[j] = qclamp(over(scale[j], d), 0, 63), m[j] = qclamp(over(mn[j], dmin), 0, 63);
  put_k4_scales(b + 4, sc, m);
  uint8_t* qh = five ? b + 16 : nullptr;
  uint8_t* qs = b + (five ? 48 : 16);
  if (five) std::memset(qh, 0, 32);
  std::memset(qs, 0, 128);
  for (int v = 0; v < kQK; ++v) {
    const int j = v / 32, g = v / 64, r = v % 64;
    const float dl = dh * float(sc[j]), ml = mh * float(m[j]);
    const int q = qclamp(over(x[v] + ml, dl), 0, levels);
    if (r < 32)
      qs[32 * g + r] |= uint8_t(q & 15);
    else
      qs[32 * g + r - 32] |= uint8_t((q & 15) << 4);
    if (five) qh[r % 32] |= uint8_t((q >> 4) << j);
  }
}

/// Q6_K: value v's low-nibble byte (and whether it is the high nibble) and 2-bit byte and shift.
void q6_place(int v, int& ql, bool& high, int& qh, int& shift) {
  const int n = v / 128, r = v % 128, part = r / 32, l = r % 32;
  ql = 64 * n + l + (part & 1) * 32;
  high = part >= 2;
  qh = 32 * n + l;
  shift = 2 * part;
}
void dec_q6_k(QuantScheme, const uint8_t* b, float* y) {
  const uint8_t *ql = b, *qh = b + 128;
  const int8_t* sc = reinterpret_cast<const int8_t*>(b + 192);
  const float d = f16(b + 208);
  for (int v = 0; v < kQK; ++v) {
    int lb, hb, sh;
    bool high;
    q6_place(v, lb, high, hb, sh);
    const int lo = high ? (ql[lb] >> 4) : (ql[lb] & 15);
    const int q = (lo | (((qh[hb] >> sh) & 3) << 4)) - 32;
    y[v] = d * float(sc[v / 16]) * float(q);
  }
}
void enc_q6_k(QuantScheme, const float* x, uint8_t* b) {
  float scale[16];
  const float d = symmetric_scales(x, 16, 16, -32.0f, scale) / 127.0f;
  const float dh = store_f16(b + 208, d);
  std::memset(b, 0, 192);
  int sc[16];
  for (int j = 0; j < 16; ++j) {
    sc[j] = qclamp(over(scale[j], d), -127, 127);
    b[192 + j] = uint8_t(int8_t(sc[j]));
  }
  for (int v = 0; v < kQK; ++v) {
    const float dl = dh * float(sc[v / 16]);
    const int q = qclamp(over(x[v], dl), -32, 31) + 32;
    int lb, hb, sh;
    bool high;
    q6_place(v, lb, high, hb, sh);
    b[lb] |= uint8_t(high ? (q & 15) << 4 : (q & 15));
    b[128 + hb] |= uint8_t((q >> 4) << sh);
  }
}
void dec_q8_k(QuantScheme, const uint8_t* b, float* y) {
  const float d = f32_at(b);
  for (int v = 0; v < kQK; ++v) y[v] = d * float(int8_t(b[4 + v]));
}
void enc_q8_k(QuantScheme, const float* x, uint8_t* b) {
  const float d = amax_of(x, kQK) / 127.0f;
  put_f32(b, d);
  for (int j = 0; j < 16; ++j) {
    int16_t sum = 0;
    for (int l = 0; l < 16; ++l) {
      const int q = qclamp(over(x[16 * j + l], d), -127, 127);
      b[4 + 16 * j + l] = uint8_t(int8_t(q));
      sum = int16_t(sum + q);
    }
    std::memcpy(b + 260 + 2 * j, &sum, 2);
  }
}

// ---- rlx's own blocks of the Int*, FP8 and NVFP4 formats

void dec_int(QuantScheme s, const uint8_t* b, float* y) {
  if (s.format == QuantFormat::Int8Block)
    dec_int_codes(s.format, b + 4, s.block_size, f32_at(b), 0.0f, y);
  else
    dec_int_codes(s.format, b + 8, s.block_size, f32_at(b), f32_at(b + 4), y);
}
void enc_int(QuantScheme s, const float* x, uint8_t* b) {
  const int64_t bs = s.block_size;
  if (s.format == QuantFormat::Int8Block) {
    const float d = amax_of(x, bs) / 127.0f;
    put_f32(b, d);
    for (int64_t i = 0; i < bs; ++i) b[4 + i] = uint8_t(int8_t(qclamp(over(x[i], d), -127, 127)));
    return;
  }
  const int top = s.format == QuantFormat::Int8BlockAsym ? 255 : 15;
  float lo = 0, hi = 0;
  widen(x, bs, lo, hi);
  const float d = (hi - lo) / float(top);
  const float zp = float(qclamp(over(-lo, d), 0, top));
  put_f32(b, d);
  put_f32(b + 4, zp);
  auto q = [&](int64_t i) { return qclamp(over(x[i], d) + zp, 0, top); };
  if (top == 255) {
    for (int64_t i = 0; i < bs; ++i) b[8 + i] = uint8_t(q(i));
  } else {
    for (int64_t i = 0; i < bs / 2; ++i) b[8 + i] = uint8_t(q(2 * i) | (q(2 * i + 1) << 4));
  }
}

void dec_nvfp4(QuantScheme, const uint8_t* b, float* y) {
  dec_fp4x16(b + 1, fp8_e4m3_to_f32(b[0]), y);
}
void enc_nvfp4(QuantScheme, const float* x, uint8_t* b) {
  b[0] = f32_to_fp8_e4m3(amax_of(x, 16) / 6.0f);
  const float s = fp8_e4m3_to_f32(b[0]);
  for (int i = 0; i < 8; ++i)
    b[1 + i] =
        uint8_t(f32_to_fp4_e2m1(over(x[2 * i], s)) | (f32_to_fp4_e2m1(over(x[2 * i + 1], s)) << 4));
}

/// The value of every 8-bit code of a format (decode: its scalar decoder), built once.
template <float (*decode)(uint8_t)> const std::array<float, 256>& code_table() {
  static const std::array<float, 256> t = [] {
    std::array<float, 256> a{};
    for (int c = 0; c < 256; ++c) a[std::size_t(c)] = decode(uint8_t(c));
    return a;
  }();
  return t;
}
const std::array<float, 256>& e4m3_table() { return code_table<fp8_e4m3_to_f32>(); }
const std::array<float, 256>& e5m2_table() { return code_table<fp8_e5m2_to_f32>(); }

void dec_e4m3(QuantScheme, const uint8_t* b, float* y) { *y = e4m3_table()[*b]; }
void enc_e4m3(QuantScheme, const float* x, uint8_t* b) { *b = f32_to_fp8_e4m3(*x); }
void dec_e5m2(QuantScheme, const uint8_t* b, float* y) { *y = e5m2_table()[*b]; }
void enc_e5m2(QuantScheme, const float* x, uint8_t* b) { *b = f32_to_fp8_e5m2(*x); }

/// One row per format, in QuantFormat's order: its fixed block (values, bytes; 0 for the formats
/// with a block size, whose block_shape depends on it) and its codecs.
struct Codec {
  QuantFormat format;
  int64_t values, bytes;
  void (*decode)(QuantScheme, const uint8_t*, float*);
  void (*encode)(QuantScheme, const float*, uint8_t*);
};
constexpr Codec kCodecs[] = {
    {QuantFormat::Int8Block, 0, 0, dec_int, enc_int},
    {QuantFormat::Int8BlockAsym, 0, 0, dec_int, enc_int},
    {QuantFormat::Int4Block, 0, 0, dec_int, enc_int},
    {QuantFormat::Fp8E4m3, 1, 1, dec_e4m3, enc_e4m3},
    {QuantFormat::Fp8E5m2, 1, 1, dec_e5m2, enc_e5m2},
    {QuantFormat::Q4_0, 32, 18, dec_q4_0, enc_q4_0},
    {QuantFormat::Q4_1, 32, 20, dec_q4_1, enc_q4_1},
    {QuantFormat::Q5_0, 32, 22, dec_q5<false>, enc_q5<false>},
    {QuantFormat::Q5_1, 32, 24, dec_q5<true>, enc_q5<true>},
    {QuantFormat::Q8_0, 32, 34, dec_q8_0, enc_q8_0},
    {QuantFormat::Q2_K, 256, 84, dec_q2_k, enc_q2_k},
    {QuantFormat::Q3_K, 256, 110, dec_q3_k, enc_q3_k},
    {QuantFormat::Q4_K, 256, 144, dec_k45<false>, enc_k45<false>},
    {QuantFormat::Q5_K, 256, 176, dec_k45<true>, enc_k45<true>},
    {QuantFormat::Q6_K, 256, 210, dec_q6_k, enc_q6_k},
    {QuantFormat::Q8_K, 256, 292, dec_q8_k, enc_q8_k},
    {QuantFormat::Nvfp4Block, 16, 9, dec_nvfp4, enc_nvfp4},
};
constexpr bool codecs_in_order() {
  for (std::size_t i = 0; i < std::size(kCodecs); ++i)
    if (kCodecs[i].format != QuantFormat(i)) return false;
  return std::size(kCodecs) == enum_count<QuantFormat>();
}
static_assert(codecs_in_order(), "kCodecs needs one row per QuantFormat, in its order");

/// The row of s's format (block_shape has checked that the format exists).
const Codec& codec_of(QuantScheme s) { return kCodecs[std::size_t(s.format)]; }

/// Round |x| (finite, non-negative) to a float with `man` mantissa bits, exponent bias `bias`
/// and subnormals, to nearest even: returns (biased exponent, mantissa), exponent possibly past
/// the format's largest (the caller saturates).
std::pair<int, int> round_minifloat(float a, int man, int bias) {
  const int min_exp = 1 - bias;
  int e;
  std::frexp(a, &e);
  e -= 1;                         // a = 1.f * 2^e
  if (a == 0.0f || e < min_exp) { // subnormal: steps of 2^(min_exp - man)
    const int q = int(std::nearbyint(std::ldexp(a, man - min_exp)));
    return q >= (1 << man) ? std::pair{1, q - (1 << man)} : std::pair{0, q};
  }
  int m = int(std::nearbyint((std::ldexp(a, -e) - 1.0f) * float(1 << man)));
  if (m == (1 << man)) m = 0, ++e;
  return {e + bias, m};
}

} // namespace

// ---- Scalar codes

float fp8_e4m3_to_f32(uint8_t c) {
  const float sign = (c & 0x80) ? -1.0f : 1.0f;
  const int e = (c >> 3) & 15, m = c & 7;
  if (e == 15 && m == 7) return std::numeric_limits<float>::quiet_NaN();
  if (e == 0) return sign * std::ldexp(float(m), -9);
  return sign * std::ldexp(float(8 + m), e - 10);
}
float fp8_e5m2_to_f32(uint8_t c) { return rlx::detail::f16_to_f32(uint16_t(c << 8)); }

uint8_t f32_to_fp8_e4m3(float x) {
  const uint8_t sign = std::signbit(x) ? 0x80 : 0;
  if (std::isnan(x)) return uint8_t(sign | 0x7F);
  const float a = std::fabs(x);
  if (a >= 448.0f) return uint8_t(sign | 0x7E);
  auto [e, m] = round_minifloat(a, 3, 7);
  if (e > 15 || (e == 15 && m == 7)) return uint8_t(sign | 0x7E);
  return uint8_t(sign | (e << 3) | m);
}
uint8_t f32_to_fp8_e5m2(float x) {
  const uint8_t sign = std::signbit(x) ? 0x80 : 0;
  if (std::isnan(x)) return uint8_t(sign | 0x7E);
  const float a = std::fabs(x);
  if (a >= 57344.0f) return uint8_t(sign | 0x7B);
  auto [e, m] = round_minifloat(a, 2, 15);
  if (e > 30) return uint8_t(sign | 0x7B);
  return uint8_t(sign | (e << 2) | m);
}

float fp4_e2m1_to_f32(uint8_t c) {
  static constexpr float kValues[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
  const float v = kValues[c & 7];
  return (c & 8) ? -v : v;
}
uint8_t f32_to_fp4_e2m1(float x) {
  const uint8_t sign = std::signbit(x) ? 8 : 0;
  if (std::isnan(x)) return sign;
  const float a = std::fabs(x);
  if (a >= 6.0f) return uint8_t(sign | 7);
  auto [e, m] = round_minifloat(a, 1, 1);
  if (e > 3) return uint8_t(sign | 7);
  return uint8_t(sign | (e << 1) | m);
}

// ---- Blocks

BlockShape block_shape(QuantScheme s, std::string_view what) {
  if (s.has_block_size()) {
    const int64_t bs = s.block_size;
    if (bs <= 0 || bs > (int64_t(1) << 20) || (s.format == QuantFormat::Int4Block && bs % 2))
      fail(ErrorKind::Value, what, ": ", enum_name(s.format), " needs a ",
           s.format == QuantFormat::Int4Block ? "positive even" : "positive",
           " block size of at most 2^20, got ", bs);
    switch (s.format) {
    case QuantFormat::Int8Block:
      return {bs, 4 + bs};
    case QuantFormat::Int8BlockAsym:
      return {bs, 8 + bs};
    default:
      return {bs, 8 + bs / 2};
    }
  }
  if (std::size_t(s.format) >= std::size(kCodecs))
    fail(ErrorKind::Value, what, ": unknown quantization format ", int(s.format));
  return {codec_of(s).values, codec_of(s).bytes};
}

int64_t row_bytes(QuantScheme s, int64_t k, std::string_view what) {
  const BlockShape b = block_shape(s, what);
  if (k < 0 || k % b.values != 0)
    fail(ErrorKind::Shape, what, ": ", enum_name(s.format), " stores rows of whole blocks of ",
         b.values, " values; k = ", k, " is not a multiple of ", b.values);
  return k / b.values * b.bytes;
}

void decode_blocks(QuantScheme s, const uint8_t* p, int64_t count, float* y) {
  const BlockShape b = block_shape(s, "decode_blocks");
  const auto decode = codec_of(s).decode;
  for (int64_t i = 0; i < count; ++i, p += b.bytes, y += b.values) decode(s, p, y);
}

void encode_blocks(QuantScheme s, const float* x, int64_t count, uint8_t* p) {
  const BlockShape b = block_shape(s, "encode_blocks");
  const auto encode = codec_of(s).encode;
  for (int64_t i = 0; i < count; ++i, p += b.bytes, x += b.values) encode(s, x, p);
}

// ---- The split (4-input) form

int64_t split_block(QuantScheme s) {
  if (s.has_block_size()) return block_shape(s, "dequant_matmul").values;
  if (s.format == QuantFormat::Nvfp4Block) return 16;
  if (s.format == QuantFormat::Fp8E4m3 || s.format == QuantFormat::Fp8E5m2) return 1;
  return 0;
}

void decode_split(const SplitWeights& w, int64_t row, int64_t k0, int64_t len, float* y) {
  const QuantFormat f = w.scheme.format;
  const int64_t k = w.k;
  switch (f) {
  case QuantFormat::Fp8E4m3:
  case QuantFormat::Fp8E5m2: {
    const auto& t = f == QuantFormat::Fp8E4m3 ? e4m3_table() : e5m2_table();
    const float s = w.scale[w.scale_count == 1 ? 0 : row];
    const uint8_t* q = w.q + row * k + k0;
    for (int64_t i = 0; i < len; ++i) y[i] = t[q[i]] * s;
    return;
  }
  case QuantFormat::Nvfp4Block: {
    const uint8_t* q = w.q + row * (k / 2) + k0 / 2;
    const uint8_t* sc = w.scales8 + row * (k / 16) + k0 / 16;
    for (int64_t b = 0; b < len / 16; ++b)
      dec_fp4x16(q + 8 * b, fp8_e4m3_to_f32(sc[b]) * w.global, y + 16 * b);
    return;
  }
  default:
    break;
  }
  const int64_t bs = w.scheme.block_size, nb = k / bs;
  for (int64_t b = 0; b < len / bs; ++b) {
    const int64_t blk = row * nb + k0 / bs + b;
    const int64_t c0 = k0 + b * bs;
    const uint8_t* q = f == QuantFormat::Int4Block ? w.q + row * (k / 2) + c0 / 2 // two a byte
                                                   : w.q + row * k + c0;
    const float zp = f == QuantFormat::Int8Block ? 0.0f : w.zp[blk];
    dec_int_codes(f, q, bs, w.scale[blk], zp, y + b * bs);
  }
}

DequantRows dequant_rows(QuantScheme s, int64_t n, int64_t k, const void* const* weights,
                         int64_t num_weights, int64_t scale_count) {
  DequantRows r;
  r.scheme = s;
  r.n = n;
  r.k = k;
  if (num_weights == 1) {
    r.packed = static_cast<const uint8_t*>(weights[0]);
    r.row_bytes = row_bytes(s, k, "dequant_matmul");
    const BlockShape b = block_shape(s, "dequant_matmul");
    r.block = b.values;
    r.block_bytes = b.bytes;
    return r;
  }
  r.block = split_block(s);
  SplitWeights& w = r.split;
  w.scheme = s;
  w.n = n;
  w.k = k;
  w.q = static_cast<const uint8_t*>(weights[0]);
  if (s.format == QuantFormat::Nvfp4Block) {
    w.scales8 = static_cast<const uint8_t*>(weights[1]);
    w.global = *static_cast<const float*>(weights[2]);
  } else {
    w.scale = static_cast<const float*>(weights[1]);
    w.scale_count = scale_count;
    w.zp = static_cast<const float*>(weights[2]);
  }
  return r;
}

void DequantRows::decode(int64_t row, int64_t k0, int64_t len, float* out) const {
  if (packed)
    decode_blocks(scheme, packed + row * row_bytes + k0 / block * block_bytes, len / block, out);
  else
    decode_split(split, row, k0, len, out);
}

} // namespace rlx::quant
