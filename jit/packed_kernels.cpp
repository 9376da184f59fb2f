// jit/packed_kernels.cpp -- dequant_matmul on the thread pool (see packed_kernels.hpp). The
// packed bytes are the traffic that matters for a decode step (m = 1): each row's blocks are
// decoded into a 1 KB buffer and consumed at once, Q4_0 and Q8_0 (the common GGUF weights)
// by decoders inlined into the vectorized loop, the other formats by the block codecs
// (src/quant/packed_formats.cpp).
#include "packed_kernels.hpp"

#include "quant/packed_formats.hpp"
#include "support/half.hpp"
#include "thread_pool.hpp"

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

/// Rows [j0, j1) of W against every row of x.
[[gnu::always_inline]] inline void rows_body(const Job& job, int64_t j0, int64_t j1, float* buf,
                                             float* acc) {
  const quant::DequantRows& r = *job.rows;
  const int64_t k = r.k, m = job.m, n = r.n;
  const QuantFormat f = r.scheme.format;
  const bool q4 = r.packed && f == QuantFormat::Q4_0, q8 = r.packed && f == QuantFormat::Q8_0;
  for (int64_t j = j0; j < j1; ++j) {
    std::fill(acc, acc + m, 0.0f);
    for (int64_t k0 = 0; k0 < k; k0 += job.chunk) {
      const int64_t len = std::min(job.chunk, k - k0);
      if (q4)
        decode_q4_0(r.packed + j * r.row_bytes + k0 / 32 * 18, len / 32, buf);
      else if (q8)
        decode_q8_0(r.packed + j * r.row_bytes + k0 / 32 * 34, len / 32, buf);
      else
        r.decode(j, k0, len, buf);
      for (int64_t i = 0; i < m; ++i) acc[i] += dot(job.x + i * k + k0, buf, len);
    }
    for (int64_t i = 0; i < m; ++i) job.y[i * n + j] = acc[i];
  }
}

using RowsFn = void (*)(const Job&, int64_t, int64_t, float*, float*);

#if defined(__x86_64__)
/// A block's products q x in 16 lanes (their sum is the block's dot product): codes at p.
[[gnu::target("avx512f,avx512bw,avx512vl,avx2,fma,f16c")]] [[gnu::always_inline]] inline __m512
block_products(bool q4, __m512 table, const uint8_t* p, const float* x) {
  __m512 a, c;
  if (q4) {
    const __m512i q =
        _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 2)));
    a = _mm512_permutexvar_ps(q, table);
    c = _mm512_permutexvar_ps(_mm512_srli_epi32(q, 4), table);
  } else {
    a = _mm512_cvtepi32_ps(
        _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 2))));
    c = _mm512_cvtepi32_ps(
        _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 18))));
  }
  return _mm512_fmadd_ps(c, _mm512_loadu_ps(x + 16), _mm512_mul_ps(a, _mm512_loadu_ps(x)));
}

/// The block's scale d broadcast to 16 lanes.
[[gnu::target("avx512f,avx512bw,avx512vl,avx2,fma,f16c")]] [[gnu::always_inline]] inline __m512
block_scale(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return _mm512_set1_ps(_cvtsh_ss(h));
}

/// The decode step (m = 1) of Q4_0 and Q8_0 without a buffer: each block's 32 codes become two
/// zmm of f32 (Q4_0 by a table lookup: vpermps indexes with each lane's low 4 bits and the table
/// holds q - 8, so no mask, conversion or subtraction remains: 20% faster than converting),
/// multiply x, and the block's sum is scaled by its d once (d * sum(q x) rather than
/// sum((d q) x): the same products, rounded differently within the f32 accumulation bound).
/// Tried and slower here: four rows at once (x loaded once for them), and converting a row's
/// scales 16 at a time with a gather before its products.
[[gnu::target("avx512f,avx512bw,avx512vl,avx2,fma,f16c")]] void
gemv_avx512(const Job& job, int64_t j0, int64_t j1) {
  const quant::DequantRows& r = *job.rows;
  const bool q4 = r.scheme.format == QuantFormat::Q4_0;
  const int64_t blocks = r.k / 32, bb = q4 ? 18 : 34;
  const __m512 table = _mm512_setr_ps(-8, -7, -6, -5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5, 6, 7);
  for (int64_t j = j0; j < j1; ++j) {
    const uint8_t* p = r.packed + j * r.row_bytes;
    __m512 acc = _mm512_setzero_ps();
    for (int64_t b = 0; b < blocks; ++b, p += bb)
      acc = _mm512_fmadd_ps(block_products(q4, table, p, job.x + 32 * b), block_scale(p), acc);
    job.y[j] = _mm512_reduce_add_ps(acc);
  }
}
[[gnu::target("avx512f,avx512bw,avx512vl,avx2,fma,f16c")]] void
rows_avx512(const Job& job, int64_t j0, int64_t j1, float* buf, float* acc) {
  const quant::DequantRows& r = *job.rows;
  if (job.m == 1 && r.packed &&
      (r.scheme.format == QuantFormat::Q4_0 || r.scheme.format == QuantFormat::Q8_0))
    return gemv_avx512(job, j0, j1);
  rows_body(job, j0, j1, buf, acc);
}
[[gnu::target("avx2,fma,f16c")]] void rows_avx2(const Job& job, int64_t j0, int64_t j1, float* buf,
                                                float* acc) {
  rows_body(job, j0, j1, buf, acc);
}
#endif
void rows_base(const Job& job, int64_t j0, int64_t j1, float* buf, float* acc) {
  rows_body(job, j0, j1, buf, acc);
}

RowsFn pick_rows() {
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vl"))
    return rows_avx512;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
      __builtin_cpu_supports("f16c"))
    return rows_avx2;
#endif
  return rows_base;
}

class DequantMatMulCall final : public LibraryCall {
public:
  DequantMatMulCall(const ir::Graph& g, const ir::Node& n)
      : scheme_(n.op.attrs<ir::DequantMatMulAttrs>().scheme), weights_(n.inputs.size() - 1) {
    const auto xs = g.shape(n.inputs[0]).sizes();
    m_ = xs[0];
    k_ = xs[1];
    n_ = n.shape.sizes()[1];
    if (weights_ == 3) scale_count_ = *g.shape(n.inputs[2]).num_elements();
  }
  void run(const std::byte* const* reads, std::byte* out) const override {
    const void* w[3] = {};
    for (int64_t i = 0; i < weights_; ++i) w[i] = reads[1 + i];
    const quant::DequantRows rows = quant::dequant_rows(scheme_, n_, k_, w, weights_, scale_count_);
    const int64_t chunk = std::max(rows.block, kChunk / rows.block * rows.block);
    const Job job{&rows, reinterpret_cast<const float*>(reads[0]), reinterpret_cast<float*>(out),
                  m_, chunk};
    static const RowsFn fn = pick_rows();
    // Enough rows per task that a task reads tens of KB of packed weights.
    const int64_t grain = std::max<int64_t>(1, 16384 / std::max<int64_t>(1, k_));
    threads::parallel_for(n_, grain, [&](int64_t b, int64_t e) {
      std::vector<float> buf(static_cast<std::size_t>(chunk));
      std::vector<float> acc(static_cast<std::size_t>(std::max<int64_t>(1, m_)));
      fn(job, b, e, buf.data(), acc.data());
    });
  }

private:
  quant::QuantScheme scheme_;
  int64_t weights_ = 1, m_ = 0, k_ = 0, n_ = 0, scale_count_ = 0;
};

// ---- The adjoint form (adjoint=true): y [m, k] = g [m, n] . W, dequant_matmul's VJP with
// respect to x. The k columns of y are split over the thread pool in chunks of whole blocks (at
// most 256 values, or one block); a task zeroes its chunk of every row of y, then for each row j
// of W decodes that chunk of row j into an L1 buffer and adds g[i, j] times it to row i (four
// rows at a time). Every packed byte is read once per call, W is never held in f32, and each sum
// over j runs in f32 in row order (the same bits on any thread count).
constexpr int64_t kAdjointRows = 4;

/// buf holds kAdjointRows chunks.
[[gnu::always_inline]] inline void adjoint_body(const Job& job, int64_t c0, int64_t c1,
                                                float* buf) {
  const quant::DequantRows& r = *job.rows;
  const int64_t k = r.k, n = r.n, m = job.m;
  const QuantFormat f = r.scheme.format;
  const bool q4 = r.packed && f == QuantFormat::Q4_0, q8 = r.packed && f == QuantFormat::Q8_0;
  for (int64_t k0 = c0; k0 < c1; k0 += job.chunk) {
    const int64_t len = std::min(job.chunk, c1 - k0);
    for (int64_t i = 0; i < m; ++i) std::fill_n(job.y + i * k + k0, len, 0.0f);
    // kAdjointRows rows of W at a time, so each row of y is loaded and stored once per group;
    // the sum is still formed in row order.
    for (int64_t j0 = 0; j0 < n; j0 += kAdjointRows) {
      const int64_t rows = std::min<int64_t>(kAdjointRows, n - j0);
      for (int64_t q = 0; q < rows; ++q) {
        const int64_t j = j0 + q;
        float* b = buf + q * job.chunk;
        if (q4)
          decode_q4_0(r.packed + j * r.row_bytes + k0 / 32 * 18, len / 32, b);
        else if (q8)
          decode_q8_0(r.packed + j * r.row_bytes + k0 / 32 * 34, len / 32, b);
        else
          r.decode(j, k0, len, b);
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

using AdjointFn = void (*)(const Job&, int64_t, int64_t, float*);

#if defined(__x86_64__)
[[gnu::target("avx512f,avx512bw,avx512vl,avx2,fma,f16c")]] void
adjoint_avx512(const Job& job, int64_t c0, int64_t c1, float* buf) {
  adjoint_body(job, c0, c1, buf);
}
[[gnu::target("avx2,fma,f16c")]] void adjoint_avx2(const Job& job, int64_t c0, int64_t c1,
                                                   float* buf) {
  adjoint_body(job, c0, c1, buf);
}
#endif
void adjoint_base(const Job& job, int64_t c0, int64_t c1, float* buf) {
  adjoint_body(job, c0, c1, buf);
}

AdjointFn pick_adjoint() {
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vl"))
    return adjoint_avx512;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
      __builtin_cpu_supports("f16c"))
    return adjoint_avx2;
#endif
  return adjoint_base;
}

class DequantMatMulAdjointCall final : public LibraryCall {
public:
  DequantMatMulAdjointCall(const ir::Graph& g, const ir::Node& n)
      : scheme_(n.op.attrs<ir::DequantMatMulAttrs>().scheme), weights_(n.inputs.size() - 1) {
    const auto gs = g.shape(n.inputs[0]).sizes();
    m_ = gs[0];
    n_ = gs[1];
    k_ = n.shape.sizes()[1];
    if (weights_ == 3) scale_count_ = *g.shape(n.inputs[2]).num_elements();
  }
  void run(const std::byte* const* reads, std::byte* out) const override {
    const void* w[3] = {};
    for (int64_t i = 0; i < weights_; ++i) w[i] = reads[1 + i];
    const quant::DequantRows rows = quant::dequant_rows(scheme_, n_, k_, w, weights_, scale_count_);
    const int64_t chunk = std::max(rows.block, kChunk / rows.block * rows.block);
    const Job job{&rows, reinterpret_cast<const float*>(reads[0]), reinterpret_cast<float*>(out),
                  m_, chunk};
    static const AdjointFn fn = pick_adjoint();
    threads::parallel_for((k_ + chunk - 1) / chunk, 1, [&](int64_t b, int64_t e) {
      std::vector<float> buf(static_cast<std::size_t>(kAdjointRows * chunk));
      fn(job, b * chunk, std::min(e * chunk, k_), buf.data());
    });
  }

private:
  quant::QuantScheme scheme_;
  int64_t weights_ = 1, m_ = 0, n_ = 0, k_ = 0, scale_count_ = 0;
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
