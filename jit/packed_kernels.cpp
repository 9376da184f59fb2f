// jit/packed_kernels.cpp -- dequant_matmul on the thread pool (see packed_kernels.hpp). The packed
// bytes are the traffic that matters for a decode step (m = 1): each row's blocks are decoded into
// a 1 KB buffer and consumed at once, Q4_0 and Q8_0 (the common GGUF weights) by decoders inlined
// into the vectorized loop, the other formats by the block codecs (src/quant/packed_formats.cpp).
// On AVX-512, Q4_0 and Q8_0 skip the buffer: both forms decode each block into registers with one
// decoder (gemv at m = 1; the adjoint at any m: adjoint_gemv and adjoint_gemm).
#include "packed_kernels.hpp"

#include "quant/packed_formats.hpp"
#include "support/half.hpp"
#include "thread_pool.hpp"

#include <rlx/settings.hpp>

#if defined(__x86_64__)
#include <immintrin.h>

// g++ 12's AVX-512 headers start some intrinsics from an "undefined" vector that
// -Wmaybe-uninitialized flags wherever they are inlined (GCC bug 105593); the warning is about the
// header, not this file's values.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#endif

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

namespace rlx::jit {

namespace {

using quant::QuantFormat;

constexpr int64_t kChunk = 256;
constexpr int kLanes = 16;

/// The sum of a[i] * b[i] in 16 lanes added in a fixed order (the same result on every thread
/// count).
[[gnu::always_inline]] inline float dot(const float* a, const float* b, int64_t len) {
  float acc[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= len; i += kLanes)
    for (int l = 0; l < kLanes; ++l) acc[l] += a[i + l] * b[i + l];
  for (int l = 0; i < len; ++i, ++l) acc[l] += a[i] * b[i];
  float s = 0;
  for (float v : acc) s += v;
  return s;
}

[[gnu::always_inline]] inline void decode_q4_0(const uint8_t* p, int64_t blocks, float* y) {
  for (int64_t b = 0; b < blocks; ++b, p += 18, y += 32) {
    uint16_t h;
    std::memcpy(&h, p, 2);
    const float d = rlx::detail::f16_to_f32(h);
    for (int j = 0; j < 16; ++j) {
      y[j] = float(int(p[2 + j] & 15) - 8) * d;
      y[j + 16] = float(int(p[2 + j] >> 4) - 8) * d;
    }
  }
}
[[gnu::always_inline]] inline void decode_q8_0(const uint8_t* p, int64_t blocks, float* y) {
  for (int64_t b = 0; b < blocks; ++b, p += 34, y += 32) {
    uint16_t h;
    std::memcpy(&h, p, 2);
    const float d = rlx::detail::f16_to_f32(h);
    for (int j = 0; j < 32; ++j) y[j] = float(int8_t(p[2 + j])) * d;
  }
}

struct Job {
  const quant::DequantRows* rows;
  const float* x;
  float* y;
  int64_t m, chunk;
};

/// Values [k0, k0 + len) of row j of W into out: Q4_0 and Q8_0 by the inlined decoders above, the
/// other formats by their block codecs.
[[gnu::always_inline]] inline void decode_chunk(const quant::DequantRows& r, int64_t j, int64_t k0,
                                                int64_t len, float* out) {
  const QuantFormat f = r.scheme.format;
  if (r.packed && f == QuantFormat::Q4_0)
    decode_q4_0(r.packed + j * r.row_bytes + k0 / 32 * 18, len / 32, out);
  else if (r.packed && f == QuantFormat::Q8_0)
    decode_q8_0(r.packed + j * r.row_bytes + k0 / 32 * 34, len / 32, out);
  else
    r.decode(j, k0, len, out);
}

/// Rows [j0, j1) of W against every row of x.
[[gnu::always_inline]] inline void rows_body(const Job& job, int64_t j0, int64_t j1, float* buf,
                                             float* acc) {
  const quant::DequantRows& r = *job.rows;
  const int64_t k = r.k, m = job.m, n = r.n;
  for (int64_t j = j0; j < j1; ++j) {
    std::fill(acc, acc + m, 0.0f);
    for (int64_t k0 = 0; k0 < k; k0 += job.chunk) {
      const int64_t len = std::min(job.chunk, k - k0);
      decode_chunk(r, j, k0, len, buf);
      for (int64_t i = 0; i < m; ++i) acc[i] += dot(job.x + i * k + k0, buf, len);
    }
    for (int64_t i = 0; i < m; ++i) job.y[i * n + j] = acc[i];
  }
}

// ---- The adjoint form (adjoint=true): y [m, k] = g [m, n] . W, dequant_matmul's VJP with respect
// to x. The k columns of y are split over the thread pool in chunks of whole blocks (at most 256
// values, or one block); a task zeroes its chunk of every row of y, then for each row j of W
// decodes that chunk of row j into an L1 buffer and adds g[i, j] times it to row i (four rows at a
// time). Every packed byte is read once per call, W is never held in f32, and each sum over j runs
// in f32 in row order (the same bits on any thread count). On AVX-512, Q4_0 and Q8_0 take
// adjoint_gemv (m = 1, a decode step's backward) or adjoint_gemm below instead, with y in
// registers.
constexpr int64_t kAdjointRows = 4;

/// buf holds kAdjointRows chunks.
[[gnu::always_inline]] inline void adjoint_body(const Job& job, int64_t c0, int64_t c1,
                                                float* buf) {
  const quant::DequantRows& r = *job.rows;
  const int64_t k = r.k, n = r.n, m = job.m;
  for (int64_t k0 = c0; k0 < c1; k0 += job.chunk) {
    const int64_t len = std::min(job.chunk, c1 - k0);
    for (int64_t i = 0; i < m; ++i) std::fill_n(job.y + i * k + k0, len, 0.0f);
    // kAdjointRows rows of W at a time, so each row of y is loaded and stored once per group; the
    // sum is still formed in row order.
    for (int64_t j0 = 0; j0 < n; j0 += kAdjointRows) {
      const int64_t rows = std::min<int64_t>(kAdjointRows, n - j0);
      for (int64_t q = 0; q < rows; ++q) {
        decode_chunk(r, j0 + q, k0, len, buf + q * job.chunk);
      }
      for (int64_t i = 0; i < m; ++i) {
        const float* g = job.x + i * n + j0;
        float* o = job.y + i * k + k0;
        if (rows == kAdjointRows) {
          const float *b0 = buf, *b1 = buf + job.chunk, *b2 = buf + 2 * job.chunk,
                      *b3 = buf + 3 * job.chunk;
          for (int64_t c = 0; c < len; ++c)
            o[c] = o[c] + g[0] * b0[c] + g[1] * b1[c] + g[2] * b2[c] + g[3] * b3[c];
        } else {
          for (int64_t q = 0; q < rows; ++q)
            for (int64_t c = 0; c < len; ++c) o[c] += g[q] * buf[q * job.chunk + c];
        }
      }
    }
  }
}

using RowsFn = void (*)(const Job&, int64_t, int64_t, float*, float*);
using AdjointFn = void (*)(const Job&, int64_t, int64_t, float*);

#if defined(__x86_64__)
#define RLX_PACKED_AVX512 "avx512f,avx512bw,avx512vl,avx2,fma,f16c"

// ---- Q4_0 and Q8_0 on AVX-512 without a buffer (the forward at m = 1, a decode step; the adjoint
// at any m): both forms run the same block decoder, the forward dotting each block with x, the
// adjoint adding it, scaled, into rows of y.

/// A block's 32 codes at p as f32 (values 0-15 in lo, 16-31 in hi), before its scale. Q4_0 by a
/// table lookup: vpermps indexes with each lane's low 4 bits and the table holds q - 8, so no mask,
/// conversion or subtraction remains (20% faster than converting).
template <bool Q4>
[[gnu::target(RLX_PACKED_AVX512)]] [[gnu::always_inline]] inline void
block_codes(__m512 table, const uint8_t* p, __m512& lo, __m512& hi) {
  if constexpr (Q4) {
    const __m512i q =
        _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 2)));
    lo = _mm512_permutexvar_ps(q, table);
    hi = _mm512_permutexvar_ps(_mm512_srli_epi32(q, 4), table);
  } else {
    lo = _mm512_cvtepi32_ps(
        _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 2))));
    hi = _mm512_cvtepi32_ps(
        _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 18))));
  }
}

/// The block's scale d (the f16 at its start).
[[gnu::target(RLX_PACKED_AVX512)]] [[gnu::always_inline]] inline float
block_scale(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return _cvtsh_ss(h);
}

/// Q4_0's lookup table: q - 8 for q = 0..15.
[[gnu::target(RLX_PACKED_AVX512)]] [[gnu::always_inline]] inline __m512 q4_table() {
  return _mm512_setr_ps(-8, -7, -6, -5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5, 6, 7);
}

template <bool Q4> constexpr int64_t kBlockBytes = Q4 ? 18 : 34;

/// Whether the kernels below take this product (either form).
bool gemv_form(const Job& job) {
  const QuantFormat f = job.rows->scheme.format;
  return job.m == 1 && job.rows->packed && (f == QuantFormat::Q4_0 || f == QuantFormat::Q8_0);
}

/// Blocks of a row whose Q4_0 scales gemv converts at once, into a stack array.
constexpr int64_t kScaleRun = 128;

/// The f32 scales of `blocks` Q4_0 blocks from p into d. A block is 9 16-bit words and its scale
/// the first, so 8 blocks' scales are words 0, 9, ..., 63 of the 128 bytes from the first: one
/// two-register word permute and one conversion per 8 blocks, in place of a scalar load,
/// conversion and broadcast per block.
[[gnu::target(RLX_PACKED_AVX512)]] inline void q4_scales(const uint8_t* p, int64_t blocks,
                                                         float* d) {
  const __m512i words = _mm512_setr_epi32(9 << 16, (27 << 16) | 18, (45 << 16) | 36,
                                          (63 << 16) | 54, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
  int64_t b = 0;
  for (; b + 8 <= blocks; b += 8, p += 8 * 18) {
    const __m512i h =
        _mm512_permutex2var_epi16(_mm512_loadu_si512(p), words, _mm512_loadu_si512(p + 64));
    _mm256_storeu_ps(d + b, _mm256_cvtph_ps(_mm512_castsi512_si128(h)));
  }
  for (; b < blocks; ++b, p += 18) d[b] = block_scale(p);
}

/// Rows ahead of the current one whose Q4_0 blocks gemv prefetches into L1 as it goes: without it
/// the scale pass (q4_scales) waits for memory at the start of each row.
constexpr int64_t kPrefetchRows = 2;

/// acc + d * (x . block p); for Q4_0, `ahead` (the same block kPrefetchRows rows on) is
/// prefetched when `prefetch` (every other block: 36 bytes). Q8_0 reads as fast without.
template <bool Q4>
[[gnu::target(RLX_PACKED_AVX512)]] [[gnu::always_inline]] inline __m512
gemv_block(__m512 table, const uint8_t* p, const uint8_t* ahead, bool prefetch, const float* x,
           float d, __m512 acc) {
  if (Q4 && prefetch) _mm_prefetch(reinterpret_cast<const char*>(ahead), _MM_HINT_T0);
  __m512 lo, hi;
  block_codes<Q4>(table, p, lo, hi);
  const __m512 sum =
      _mm512_fmadd_ps(hi, _mm512_loadu_ps(x + 16), _mm512_mul_ps(lo, _mm512_loadu_ps(x)));
  return _mm512_fmadd_ps(sum, _mm512_set1_ps(d), acc);
}

/// Forward: y[j] = x . W[j, :] for rows [j0, j1). Each block's sum is scaled by its d once (d *
/// sum(q x) rather than sum((d q) x): the same products, rounded differently within the f32
/// accumulation bound). Q4_0, bound by the decoder's instructions rather than by memory, converts
/// a run of blocks' scales first (q4_scales), adds even and odd blocks into two accumulators (so
/// consecutive blocks' additions do not wait for each other) and prefetches kPrefetchRows ahead;
/// Q8_0, which reads at 70-90% of STREAM already, keeps its one-accumulator loop (the Q4_0 form
/// measured no faster for it).
/// Tried for Q4_0 and no faster (one thread, data in L2 or memory): two or four rows at once (x
/// loaded once for them); a row's scales by a gather; the high nibble without a shift (its byte
/// masked into a float's mantissa, 2^23 subtracted; the low nibble's table scaled by 16 to match,
/// the same bits); codes by conversion with the -8 folded into the products or into a per-block
/// sum of x; by shifts and a signed conversion; by a bf16 word lookup with x split exactly into
/// three bf16 parts for vdpbf16ps. Quantizing x to int8 for VNNI is faster but moves the outputs
/// far outside the f32 bound.
template <bool Q4>
[[gnu::target(RLX_PACKED_AVX512)]] void gemv(const Job& job, int64_t j0, int64_t j1) {
  const quant::DequantRows& r = *job.rows;
  constexpr int64_t bb = kBlockBytes<Q4>;
  const int64_t blocks = r.k / 32;
  const __m512 table = q4_table();
  alignas(64) float scales[kScaleRun];
  for (int64_t j = j0; j < j1; ++j) {
    const uint8_t* row = r.packed + j * r.row_bytes;
    if constexpr (!Q4) {
      __m512 acc = _mm512_setzero_ps();
      for (int64_t b = 0; b < blocks; ++b)
        acc = gemv_block<false>(table, row + b * bb, nullptr, false, job.x + 32 * b,
                                block_scale(row + b * bb), acc);
      job.y[j] = _mm512_reduce_add_ps(acc);
      continue;
    }
    const uint8_t* ahead = r.packed + std::min(j + kPrefetchRows, j1 - 1) * r.row_bytes;
    __m512 even = _mm512_setzero_ps(), odd = _mm512_setzero_ps();
    for (int64_t b0 = 0; b0 < blocks; b0 += kScaleRun) {
      const int64_t b1 = std::min(blocks, b0 + kScaleRun);
      q4_scales(row + b0 * bb, b1 - b0, scales);
      int64_t b = b0;
      for (; b + 2 <= b1; b += 2) {
        const uint8_t* p = row + b * bb;
        even = gemv_block<Q4>(table, p, ahead + b * bb, true, job.x + 32 * b, scales[b - b0], even);
        odd = gemv_block<Q4>(table, p + bb, nullptr, false, job.x + 32 * b + 32, scales[b + 1 - b0],
                             odd);
      }
      if (b < b1)
        even = gemv_block<Q4>(table, row + b * bb, ahead + b * bb, true, job.x + 32 * b,
                              scales[b - b0], even);
    }
    job.y[j] = _mm512_reduce_add_ps(_mm512_add_ps(even, odd));
  }
}

/// Adjoint: for MR rows i of y and g, y[i, c] += sum over `rows` rows j of g[i, j] W[j, c] for B
/// blocks of columns, y held in MR * 2B zmm across the rows and each block decoded once for the
/// MR rows. p: the first row's first block; g: g[0, 0] of the rows' weights (g_stride apart);
/// y: y[0, first column] (y_stride apart).
template <bool Q4, int B, int MR>
[[gnu::target(RLX_PACKED_AVX512)]] [[gnu::always_inline]] inline void
adjoint_strip(__m512 table, const uint8_t* p, int64_t row_bytes, const float* g, int64_t g_stride,
              int64_t rows, float* y, int64_t y_stride) {
  __m512 acc[MR][2 * B];
#pragma GCC unroll 4
  for (int i = 0; i < MR; ++i)
#pragma GCC unroll 16
    for (int t = 0; t < 2 * B; ++t) acc[i][t] = _mm512_loadu_ps(y + i * y_stride + 16 * t);
  for (int64_t j = 0; j < rows; ++j, p += row_bytes) {
#pragma GCC unroll 8
    for (int t = 0; t < B; ++t) {
      const uint8_t* blk = p + t * kBlockBytes<Q4>;
      __m512 lo, hi;
      block_codes<Q4>(table, blk, lo, hi);
      const float d = block_scale(blk);
      if constexpr (MR == 1) {
        const __m512 s = _mm512_set1_ps(g[j] * d);
        acc[0][2 * t] = _mm512_fmadd_ps(lo, s, acc[0][2 * t]);
        acc[0][2 * t + 1] = _mm512_fmadd_ps(hi, s, acc[0][2 * t + 1]);
      } else {
        // The block's values d q once, then g[i, j] broadcast from memory for each row of y:
        // fewer scalar products and register broadcasts than g[i, j] d per row.
        const __m512 dv = _mm512_set1_ps(d);
        lo = _mm512_mul_ps(lo, dv);
        hi = _mm512_mul_ps(hi, dv);
#pragma GCC unroll 4
        for (int i = 0; i < MR; ++i) {
          const __m512 s = _mm512_set1_ps(g[i * g_stride + j]);
          acc[i][2 * t] = _mm512_fmadd_ps(lo, s, acc[i][2 * t]);
          acc[i][2 * t + 1] = _mm512_fmadd_ps(hi, s, acc[i][2 * t + 1]);
        }
      }
    }
  }
#pragma GCC unroll 4
  for (int i = 0; i < MR; ++i)
#pragma GCC unroll 16
    for (int t = 0; t < 2 * B; ++t) _mm512_storeu_ps(y + i * y_stride + 16 * t, acc[i][t]);
}

/// adjoint_strip over the blocks [b, b1) of a tile: strips of 8, 4, 2 and 1 blocks for one row of
/// y (16 accumulators), of 2 and 1 for four rows.
template <bool Q4, int MR>
[[gnu::target(RLX_PACKED_AVX512)]] [[gnu::always_inline]] inline void
adjoint_strips(__m512 table, const uint8_t* tile, int64_t row_bytes, const float* g,
               int64_t g_stride, int64_t rows, float* y, int64_t y_stride, int64_t b, int64_t b1) {
  constexpr int64_t bb = kBlockBytes<Q4>;
#define RLX_STRIP(B)                                                                               \
  adjoint_strip<Q4, B, MR>(table, tile + b * bb, row_bytes, g, g_stride, rows, y + 32 * b, y_stride)
  if constexpr (MR == 1) {
    for (; b + 8 <= b1; b += 8) RLX_STRIP(8);
    if (b + 4 <= b1) {
      RLX_STRIP(4);
      b += 4;
    }
  }
  for (; b + 2 <= b1; b += 2) RLX_STRIP(2);
  if (b < b1) RLX_STRIP(1);
#undef RLX_STRIP
}

/// Rows of W per tile of the adjoint: the strips cross a tile's rows, so y's registers are loaded
/// and stored once per kTileRows rows. At m = 1, k = n = 4096 on one thread 8 rows read 5-10%
/// faster than 1, 4 or 16 (Q4_0 and Q8_0); prefetching each row a few strips ahead did not help.
constexpr int64_t kTileRows = 8;

/// Adjoint: y[c] = sum_j g[j] W[j, c] for the columns [c0, c1) (whole blocks). Each value's sum
/// runs over j in row order in f32 (fma(q, g[j] d, y)), as the general kernel's does.
template <bool Q4>
[[gnu::target(RLX_PACKED_AVX512)]] void adjoint_gemv(const Job& job, int64_t c0, int64_t c1) {
  const quant::DequantRows& r = *job.rows;
  const __m512 table = q4_table();
  std::fill(job.y + c0, job.y + c1, 0.0f);
  for (int64_t j0 = 0; j0 < r.n; j0 += kTileRows)
    adjoint_strips<Q4, 1>(table, r.packed + j0 * r.row_bytes, r.row_bytes, job.x + j0, 1,
                          std::min(kTileRows, r.n - j0), job.y, 0, c0 / 32, c1 / 32);
}

/// Columns of y that adjoint_gemm finishes over every row of W before the next: the m rows of
/// this chunk of y stay in cache while W's rows pass once.
constexpr int64_t kAdjointCols = 256;

/// Adjoint at m > 1: y [m, k] = g [m, n] . W for the columns [c0, c1), per chunk of kAdjointCols
/// columns and tile of kTileRows rows of W, four rows of y at a time in registers (then one at a
/// time): each block is decoded once per four rows of y and W's bytes are read from memory once.
/// The sums run over j in row order in f32, as at m = 1.
template <bool Q4>
[[gnu::target(RLX_PACKED_AVX512)]] void adjoint_gemm(const Job& job, int64_t c0, int64_t c1) {
  const quant::DequantRows& r = *job.rows;
  const int64_t m = job.m, n = r.n, k = r.k;
  const __m512 table = q4_table();
  for (int64_t k0 = c0; k0 < c1; k0 += kAdjointCols) {
    const int64_t k1 = std::min(c1, k0 + kAdjointCols);
    for (int64_t i = 0; i < m; ++i) std::fill(job.y + i * k + k0, job.y + i * k + k1, 0.0f);
    for (int64_t j0 = 0; j0 < n; j0 += kTileRows) {
      const uint8_t* tile = r.packed + j0 * r.row_bytes;
      const int64_t rows = std::min(kTileRows, n - j0);
      int64_t i = 0;
      for (; i + 4 <= m; i += 4)
        adjoint_strips<Q4, 4>(table, tile, r.row_bytes, job.x + i * n + j0, n, rows, job.y + i * k,
                              k, k0 / 32, k1 / 32);
      for (; i < m; ++i)
        adjoint_strips<Q4, 1>(table, tile, r.row_bytes, job.x + i * n + j0, n, rows, job.y + i * k,
                              k, k0 / 32, k1 / 32);
    }
  }
}

[[gnu::target(RLX_PACKED_AVX512)]] void rows_avx512(const Job& job, int64_t j0, int64_t j1,
                                                    float* buf, float* acc) {
  if (!gemv_form(job)) return rows_body(job, j0, j1, buf, acc);
  if (job.rows->scheme.format == QuantFormat::Q4_0) return gemv<true>(job, j0, j1);
  gemv<false>(job, j0, j1);
}
[[gnu::target(RLX_PACKED_AVX512)]] void adjoint_avx512(const Job& job, int64_t c0, int64_t c1,
                                                       float* buf) {
  const QuantFormat f = job.rows->scheme.format;
  if (!job.rows->packed || (f != QuantFormat::Q4_0 && f != QuantFormat::Q8_0))
    return adjoint_body(job, c0, c1, buf);
  const bool q4 = f == QuantFormat::Q4_0;
  if (job.m == 1) return q4 ? adjoint_gemv<true>(job, c0, c1) : adjoint_gemv<false>(job, c0, c1);
  q4 ? adjoint_gemm<true>(job, c0, c1) : adjoint_gemm<false>(job, c0, c1);
}
[[gnu::target("avx2,fma,f16c")]] void rows_avx2(const Job& job, int64_t j0, int64_t j1, float* buf,
                                                float* acc) {
  rows_body(job, j0, j1, buf, acc);
}
[[gnu::target("avx2,fma,f16c")]] void adjoint_avx2(const Job& job, int64_t c0, int64_t c1,
                                                   float* buf) {
  adjoint_body(job, c0, c1, buf);
}
#undef RLX_PACKED_AVX512
#endif
void rows_base(const Job& job, int64_t j0, int64_t j1, float* buf, float* acc) {
  rows_body(job, j0, j1, buf, acc);
}
void adjoint_base(const Job& job, int64_t c0, int64_t c1, float* buf) {
  adjoint_body(job, c0, c1, buf);
}

/// Both forms' kernels for the best instruction set the CPU has, picked once.
struct Kernels {
  RowsFn rows;
  AdjointFn adjoint;
};
const Kernels& kernels() {
  static const Kernels picked = [] {
#if defined(__x86_64__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512vl"))
      return Kernels{rows_avx512, adjoint_avx512};
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
        __builtin_cpu_supports("f16c"))
      return Kernels{rows_avx2, adjoint_avx2};
#endif
    return Kernels{rows_base, adjoint_base};
  }();
  return picked;
}

/// What both directions of dequant_matmul read: the weights' rows, x (or g), and the sizes. The
/// forward's x is [m, k] and its result [m, n]; the adjoint's g is [m, n] and its result [m, k].
class DequantCall : public LibraryCall {
public:
  DequantCall(const ir::Graph& g, const ir::Node& n)
      : scheme_(n.op.attrs<ir::DequantMatMulAttrs>().scheme), weights_(n.inputs.size() - 1) {
    const auto in = g.shape(n.inputs[0]).sizes();
    const bool adjoint = n.op.attrs<ir::DequantMatMulAttrs>().adjoint;
    m_ = in[0];
    k_ = adjoint ? n.shape.sizes()[1] : in[1];
    n_ = adjoint ? in[1] : n.shape.sizes()[1];
    if (weights_ == 3) scale_count_ = *g.shape(n.inputs[2]).num_elements();
  }

protected:
  /// The packed rows of one call and the decode chunk (whole blocks).
  struct Prepared {
    quant::DequantRows rows;
    int64_t chunk;
  };
  Prepared prepare(const std::byte* const* reads) const {
    const void* w[3] = {};
    for (int64_t i = 0; i < weights_; ++i) w[i] = reads[1 + i];
    Prepared p{quant::dequant_rows(scheme_, n_, k_, w, weights_, scale_count_), 0};
    p.chunk = std::max(p.rows.block, kChunk / p.rows.block * p.rows.block);
    return p;
  }
  Job job(const Prepared& p, const std::byte* const* reads, std::byte* out) const {
    return Job{&p.rows, reinterpret_cast<const float*>(reads[0]), reinterpret_cast<float*>(out), m_,
               p.chunk};
  }

  quant::QuantScheme scheme_;
  int64_t weights_ = 1, m_ = 0, k_ = 0, n_ = 0, scale_count_ = 0;
};

class DequantMatMulCall final : public DequantCall {
public:
  using DequantCall::DequantCall;
  void run(const std::byte* const* reads, std::byte* out) const override {
    const Prepared p = prepare(reads);
    const Job j = job(p, reads, out);
    const RowsFn fn = kernels().rows;
    // Enough rows per task that a task reads tens of KB of packed weights.
    const int64_t grain = std::max<int64_t>(1, 16384 / std::max<int64_t>(1, k_));
    threads::parallel_for(n_, grain, [&](int64_t b, int64_t e) {
      std::vector<float> buf(static_cast<std::size_t>(p.chunk));
      std::vector<float> acc(static_cast<std::size_t>(std::max<int64_t>(1, m_)));
      fn(j, b, e, buf.data(), acc.data());
    });
  }
};

class DequantMatMulAdjointCall final : public DequantCall {
public:
  using DequantCall::DequantCall;
  void run(const std::byte* const* reads, std::byte* out) const override {
    const Prepared p = prepare(reads);
    const Job j = job(p, reads, out);
    const AdjointFn fn = kernels().adjoint;
    // One task per thread, of at least 1024 columns (32 Q4_0 or Q8_0 blocks, whole cache lines): a
    // task reads a long run of each row, which the prefetchers follow.
    const int64_t chunk = p.chunk;
    const int64_t units = (k_ + chunk - 1) / chunk;
    const int64_t per_thread = (units + rlx::num_threads() - 1) / rlx::num_threads();
    threads::parallel_for(units, std::max<int64_t>({1, 1024 / chunk, per_thread}),
                          [&](int64_t b, int64_t e) {
                            std::vector<float> buf(static_cast<std::size_t>(kAdjointRows * chunk));
                            fn(j, b * chunk, std::min(e * chunk, k_), buf.data());
                          });
  }
};

} // namespace

bool packed_handles(const ir::Graph& g, const ir::Node& n) {
  if (n.op.kind() != ir::OpKind::DequantMatMul || !n.shape.is_static()) return false;
  for (ir::NodeId in : n.inputs)
    if (!g.shape(in).is_static()) return false;
  return true;
}

std::unique_ptr<LibraryCall> packed_prepare(const ir::Graph& g, const ir::Node& n) {
  if (n.op.attrs<ir::DequantMatMulAttrs>().adjoint)
    return std::make_unique<DequantMatMulAdjointCall>(g, n);
  return std::make_unique<DequantMatMulCall>(g, n);
}

} // namespace rlx::jit
