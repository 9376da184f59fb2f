// jit/qgemm.cpp -- q_matmul on AVX-512 VNNI: vpdpbusd multiplies 4 u8 by 4 s8 and adds the four
// products to an i32 lane, 64 multiply-adds per instruction. The kernel computes
// sum_k xu[m,k] w[k,n] with xu = x (u8) or x + 128 (i8 x made unsigned), and the zero points
// come back through row and column sums:
//   acc = sum xu w - w_zp[n] rowsum(xu)[m] - xu_zp colsum(w)[n] + K xu_zp w_zp[n] + bias[n]
// with xu_zp = x_zp (+ 128 for an i8 x), all in i32 with wrap-around, which is the
// interpreter's acc bit for bit (integer arithmetic modulo 2^32). The requantization runs on 8
// doubles at a time with the same f64 product and round-half-even as the interpreter.
// Layout: w is packed into panels of 32 columns, each k-quad of a column as 4 consecutive bytes
// (one dword lane of a zmm); x into blocks of kMr rows, each row's k-quad a dword to broadcast.
// The tile is kMr x 32 i32 accumulators (24 zmm). B panels are blocked to stay in L2. A
// constant w (a weight the executable holds) is packed, with its column sums, once: on the first
// run, kept with the call.
// Written with intrinsics under function-level target attributes, so the rest of the library
// keeps its baseline ISA; qgemm_handles asks the CPU first.
#include "qgemm.hpp"

#include "thread_pool.hpp"

#include "rlx/ir/infer.hpp"

#include <immintrin.h>

// g++ 12's AVX-512 headers start some intrinsics from an "undefined" vector that
// -Wmaybe-uninitialized (and, for _mm512_extracti64x4_epi64, -Wuninitialized) flags wherever they
// are inlined (GCC bug 105593); the warning is about the header, not this file's values.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <mutex>
#include <vector>

namespace rlx::jit {

namespace {

constexpr int kMr = 12;          // rows of a tile
constexpr int kNr = 32;          // columns of a tile (two zmm of 16 i32)
constexpr int64_t kL2 = 1 << 19; // bytes of packed B per column block

bool host_has_vnni() {
  static const bool yes = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                          __builtin_cpu_supports("avx512vl") &&
                          __builtin_cpu_supports("avx512vnni");
  return yes;
}

#define RLX_VNNI __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni")))

std::atomic<int64_t> constant_w_packs{0};

/// w packed for the tiles: panel t, quad p, column j, byte q at ((t * kq + p) * 32 + j) * 4 + q
/// (zero-padded), and each column's sum.
struct PackedW {
  std::vector<int8_t> bytes;
  std::vector<int32_t> colsum;
};
RLX_VNNI PackedW pack_w(const int8_t* w, int64_t k, int64_t n) {
  const int64_t kq = (k + 3) / 4, panels = (n + kNr - 1) / kNr;
  PackedW p{std::vector<int8_t>(std::size_t(panels * kq * 128), 0),
            std::vector<int32_t>(std::size_t(panels * kNr), 0)};
  // Four rows of w at a time, 32 columns of each: byte interleaves give each column's k-quad as
  // one dword, and a dot product with ones adds the quad to the column sums. (A scalar loop over
  // the bytes took a sixth of q_matmul's time at 512^3 when w is not a constant.)
  const __m512i ones = _mm512_set1_epi8(1);
  for (int64_t q = 0; q < kq; ++q)
    for (int64_t t = 0; t < panels; ++t) {
      const int64_t j0 = t * kNr, cols = std::min<int64_t>(kNr, n - j0);
      const __mmask32 m = cols == kNr ? ~__mmask32(0) : (__mmask32(1) << cols) - 1;
      __m256i r[4];
      for (int s = 0; s < 4; ++s)
        r[s] = 4 * q + s < k ? _mm256_maskz_loadu_epi8(m, w + (4 * q + s) * n + j0)
                             : _mm256_setzero_si256();
      // Per 128-bit lane (columns 0-15 and 16-31): a, b pair rows 0-1 (columns 0-7, 8-15), c, d
      // rows 2-3; the 16-bit interleaves make quads of columns 0-3, 4-7, 8-11 and 12-15.
      const __m256i a = _mm256_unpacklo_epi8(r[0], r[1]), b = _mm256_unpackhi_epi8(r[0], r[1]);
      const __m256i c = _mm256_unpacklo_epi8(r[2], r[3]), d = _mm256_unpackhi_epi8(r[2], r[3]);
      const __m256i q0 = _mm256_unpacklo_epi16(a, c), q1 = _mm256_unpackhi_epi16(a, c);
      const __m256i q2 = _mm256_unpacklo_epi16(b, d), q3 = _mm256_unpackhi_epi16(b, d);
      const __m512i lo =
          _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_permute2x128_si256(q0, q1, 0x20)),
                             _mm256_permute2x128_si256(q2, q3, 0x20), 1); // columns 0-15
      const __m512i hi =
          _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_permute2x128_si256(q0, q1, 0x31)),
                             _mm256_permute2x128_si256(q2, q3, 0x31), 1); // columns 16-31
      int8_t* dst = p.bytes.data() + (t * kq + q) * 128;
      _mm512_storeu_si512(dst, lo);
      _mm512_storeu_si512(dst + 64, hi);
      int32_t* sum = p.colsum.data() + j0;
      _mm512_storeu_si512(sum, _mm512_dpbusd_epi32(_mm512_loadu_si512(sum), ones, lo));
      _mm512_storeu_si512(sum + 16, _mm512_dpbusd_epi32(_mm512_loadu_si512(sum + 16), ones, hi));
    }
  return p;
}

/// acc (kMr x 32 i32, row stride 32) = sum over kq k-quads of a (kMr dwords per quad) times b
/// (32 dwords per quad).
RLX_VNNI void tile(const uint8_t* a, const int8_t* b, int64_t kq, int32_t* acc) {
  __m512i c[kMr][2];
  for (int i = 0; i < kMr; ++i) c[i][0] = c[i][1] = _mm512_setzero_si512();
  for (int64_t p = 0; p < kq; ++p) {
    __m512i b0 = _mm512_loadu_si512(b + p * 128), b1 = _mm512_loadu_si512(b + p * 128 + 64);
    const uint8_t* ap = a + p * kMr * 4;
    for (int i = 0; i < kMr; ++i) {
      int32_t quad;
      std::memcpy(&quad, ap + i * 4, 4);
      __m512i x = _mm512_set1_epi32(quad);
      c[i][0] = _mm512_dpbusd_epi32(c[i][0], x, b0);
      c[i][1] = _mm512_dpbusd_epi32(c[i][1], x, b1);
    }
  }
  for (int i = 0; i < kMr; ++i) {
    _mm512_storeu_si512(acc + i * kNr, c[i][0]);
    _mm512_storeu_si512(acc + i * kNr + 16, c[i][1]);
  }
}

/// Requantize 8 i32 accumulators: clamp(round_half_even(acc * mult) + out_zp, lo, hi).
RLX_VNNI __m256i requant8(__m256i acc, __m512d mult, double zp, double lo, double hi) {
  __m512d v = _mm512_mul_pd(_mm512_cvtepi32_pd(acc), mult);
  v = _mm512_roundscale_pd(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  v = _mm512_add_pd(v, _mm512_set1_pd(zp));
  v = _mm512_min_pd(_mm512_max_pd(v, _mm512_set1_pd(lo)), _mm512_set1_pd(hi));
  return _mm512_cvtpd_epi32(v);
}

/// sum over k bytes of row[i] ^ flip (x made unsigned), wrapping as the i32 row sums do.
RLX_VNNI int32_t flipped_sum(const uint8_t* row, int64_t k, uint8_t flip) {
  const __m512i f = _mm512_set1_epi8(char(flip)), zero = _mm512_setzero_si512();
  __m512i s = zero;
  int64_t i = 0;
  for (; i + 64 <= k; i += 64)
    s = _mm512_add_epi64(s,
                         _mm512_sad_epu8(_mm512_xor_si512(_mm512_loadu_si512(row + i), f), zero));
  if (i < k) {
    const __mmask64 m = (__mmask64(1) << (k - i)) - 1;
    const __m512i v = _mm512_xor_si512(_mm512_maskz_loadu_epi8(m, row + i), f);
    s = _mm512_add_epi64(s, _mm512_sad_epu8(_mm512_maskz_mov_epi8(m, v), zero));
  }
  return int32_t(uint32_t(uint64_t(_mm512_reduce_add_epi64(s))));
}

class QGemm final : public LibraryCall {
public:
  explicit QGemm(const ir::Node& n) {
    const auto& a = n.op.attrs<ir::QMatMulAttrs>();
    const auto& xd = n.shape.dims();
    n_ = xd.back().size();
    out_ = a.dtype;
    x_u8_ = false; // set from the operand dtype below
    has_bias_ = n.inputs.size() == 3;
    out_zp_ = double(a.out_zp);
    if (out_ == ir::DType::I8) lo_ = -128, hi_ = 127;
    if (out_ == ir::DType::U8) lo_ = 0, hi_ = 255;
    w_zp_.resize(std::size_t(n_));
    mult_.resize(std::size_t(n_));
    for (int64_t j = 0; j < n_; ++j) {
      w_zp_[std::size_t(j)] = int32_t(a.w_zp.size() == 1 ? a.w_zp[0] : a.w_zp[std::size_t(j)]);
      mult_[std::size_t(j)] = double(a.mult.size() == 1 ? a.mult[0] : a.mult[std::size_t(j)]);
    }
    x_zp_ = a.x_zp;
  }
  void set_operands(const ir::Shape& x, const ir::Shape& w, bool constant_w) {
    k_ = w.dims()[0].size();
    m_ = k_ == 0 ? 0 : x.num_elements().value_or(0) / k_;
    x_u8_ = x.dtype() == ir::DType::U8;
    constant_w_ = constant_w;
  }
  void run(const std::byte* const* reads, std::byte* out) const override;

private:
  int64_t m_ = 0, k_ = 0, n_ = 0, x_zp_ = 0;
  bool x_u8_ = false, has_bias_ = false;
  ir::DType out_ = ir::DType::I8;
  double out_zp_ = 0, lo_ = 0, hi_ = 0;
  std::vector<int32_t> w_zp_;
  std::vector<double> mult_;
  /// w is a constant of the executable: packed by the first run (once, whichever thread runs
  /// first), read by the later ones while w is at the address packed.
  bool constant_w_ = false;
  mutable std::once_flag w_once_;
  mutable PackedW w_packed_;
  mutable const int8_t* w_source_ = nullptr;

  void epilogue(const int32_t* acc, int64_t m0, int64_t rows, int64_t j0, int64_t cols,
                const int32_t* rowsum, const int32_t* colterm, std::byte* out) const;
};

/// Rows [m0, m0 + rows) and columns [j0, j0 + cols) of the result from the tile's acc, 16 columns
/// at a time: acc - w_zp[c] rowsum[r] + colterm[c] (colterm: the column's zero-point terms and
/// bias, formed once per call), then requantized to 8 bits or stored as i32.
RLX_VNNI void QGemm::epilogue(const int32_t* acc, int64_t m0, int64_t rows, int64_t j0,
                              int64_t cols, const int32_t* rowsum, const int32_t* colterm,
                              std::byte* out) const {
  for (int64_t j = 0; j < cols; j += 16) {
    const int64_t c = j0 + j;
    const __mmask16 m = cols - j >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << (cols - j)) - 1);
    const __m512i zp = _mm512_maskz_loadu_epi32(m, w_zp_.data() + c);
    const __m512i ct = _mm512_maskz_loadu_epi32(m, colterm + c);
    const __m512d mult_lo = _mm512_maskz_loadu_pd(__mmask8(m), mult_.data() + c);
    const __m512d mult_hi = _mm512_maskz_loadu_pd(__mmask8(m >> 8), mult_.data() + c + 8);
    for (int64_t i = 0; i < rows; ++i) {
      const __m512i v =
          _mm512_add_epi32(_mm512_sub_epi32(_mm512_load_si512(acc + i * kNr + j),
                                            _mm512_mullo_epi32(zp, _mm512_set1_epi32(rowsum[i]))),
                           ct);
      const int64_t r = m0 + i;
      if (out_ == ir::DType::I32) {
        _mm512_mask_storeu_epi32(out + (r * n_ + c) * 4, m, v);
        continue;
      }
      const __m256i lo = requant8(_mm512_castsi512_si256(v), mult_lo, out_zp_, lo_, hi_);
      const __m256i hi = requant8(_mm512_extracti64x4_epi64(v, 1), mult_hi, out_zp_, lo_, hi_);
      // Clamped to the 8-bit range, so truncating each lane to its low byte is the value.
      _mm_mask_storeu_epi8(
          out + r * n_ + c, m,
          _mm512_cvtepi32_epi8(_mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1)));
    }
  }
}

void QGemm::run(const std::byte* const* reads, std::byte* out) const {
  const auto* x = reinterpret_cast<const uint8_t*>(reads[0]);
  const auto* w = reinterpret_cast<const int8_t*>(reads[1]);
  const auto* bias = has_bias_ ? reinterpret_cast<const int32_t*>(reads[2]) : nullptr;
  const int64_t kq = (k_ + 3) / 4, panels = (n_ + kNr - 1) / kNr;
  const uint8_t flip = x_u8_ ? 0 : 0x80; // i8 -> u8: x + 128 is x with its top bit flipped
  PackedW per_call;
  const PackedW* packed = &per_call;
  if (constant_w_) {
    std::call_once(w_once_, [&] {
      w_packed_ = pack_w(w, k_, n_);
      w_source_ = w;
      constant_w_packs.fetch_add(1, std::memory_order_relaxed);
    });
    if (w_source_ == w) packed = &w_packed_;
  }
  if (packed == &per_call) per_call = pack_w(w, k_, n_);
  const std::vector<int8_t>& bp = packed->bytes;
  const std::vector<int32_t>& colsum = packed->colsum;
  // Pack x: row block b, quad p, row i, byte q at ((b * kq + p) * kMr + i) * 4 + q, a quad at a
  // time (k's last partial quad byte by byte; the padding stays 0).
  const int64_t blocks = (m_ + kMr - 1) / kMr;
  std::vector<uint8_t> ap(std::size_t(blocks * kq * kMr * 4), 0);
  std::vector<int32_t> rowsum(std::size_t(blocks * kMr), 0);
  const uint32_t flip4 = uint32_t(flip) * 0x01010101u;
  for (int64_t r = 0; r < m_; ++r) {
    const uint8_t* row = x + r * k_;
    uint8_t* dst = ap.data() + ((r / kMr) * kq * kMr + r % kMr) * 4;
    int64_t p = 0;
    for (; 4 * p + 4 <= k_; ++p) {
      uint32_t v;
      std::memcpy(&v, row + 4 * p, 4);
      v ^= flip4;
      std::memcpy(dst + p * kMr * 4, &v, 4);
    }
    for (int64_t kk = 4 * p; kk < k_; ++kk) dst[p * kMr * 4 + kk % 4] = uint8_t(row[kk] ^ flip);
    rowsum[std::size_t(r)] = flipped_sum(row, k_, flip);
  }
  // Each column's terms that do not depend on the row (u32: the i32 arithmetic wraps).
  const uint32_t xzp = uint32_t(x_zp_ + (x_u8_ ? 0 : 128)), kk = uint32_t(k_);
  std::vector<int32_t> colterm(std::size_t(panels * kNr), 0);
  for (int64_t j = 0; j < n_; ++j) {
    const uint32_t zp = uint32_t(w_zp_[std::size_t(j)]);
    uint32_t v = kk * xzp * zp - xzp * uint32_t(colsum[std::size_t(j)]);
    if (bias) v += uint32_t(bias[j]);
    colterm[std::size_t(j)] = int32_t(v);
  }
  // Column blocks of panels whose packed w fits the L2 budget; every row block runs over one
  // before the next is touched.
  const int64_t per_block = std::max<int64_t>(1, kL2 / std::max<int64_t>(1, kq * 128));
  for (int64_t t0 = 0; t0 < panels; t0 += per_block) {
    const int64_t t1 = std::min(panels, t0 + per_block);
    threads::parallel_for(blocks, 1, [&](int64_t b0, int64_t b1) {
      alignas(64) int32_t acc[kMr * kNr];
      for (int64_t b = b0; b < b1; ++b) {
        const int64_t m0 = b * kMr, rows = std::min<int64_t>(kMr, m_ - m0);
        for (int64_t t = t0; t < t1; ++t) {
          tile(ap.data() + b * kq * kMr * 4, bp.data() + t * kq * 128, kq, acc);
          epilogue(acc, m0, rows, t * kNr, std::min<int64_t>(kNr, n_ - t * kNr), rowsum.data() + m0,
                   colterm.data(), out);
        }
      }
    });
  }
}

} // namespace

bool qgemm_handles(const ir::Graph& g, const ir::Node& n) {
  if (n.op.kind() != ir::OpKind::QMatMul || !host_has_vnni()) return false;
  if (!n.shape.is_static() || g.shape(n.inputs[1]).dtype() != ir::DType::I8) return false;
  if (g.shape(n.inputs[1]).dims()[0].is_static() && g.shape(n.inputs[1]).dims()[0].size() == 0)
    return false; // K = 0: the bias alone, left to the interpreter
  for (ir::NodeId in : n.inputs)
    if (!g.shape(in).is_static()) return false;
  // The interpreter's rule must accept the operands (it reports what does not fit).
  std::vector<ir::Shape> shapes;
  for (ir::NodeId in : n.inputs) shapes.push_back(g.shape(in));
  std::optional<ir::Shape> s = ir::infer_shape(n.op, shapes);
  return s && *s == n.shape;
}

std::unique_ptr<LibraryCall> qgemm_prepare(const ir::Graph& g, const ir::Node& n) {
  auto call = std::make_unique<QGemm>(n);
  // A Constant node's bytes are evaluated once, when the executable is built (Home::Constant).
  call->set_operands(g.shape(n.inputs[0]), g.shape(n.inputs[1]),
                     g.node(n.inputs[1]).op.kind() == ir::OpKind::Constant);
  return call;
}

int64_t qgemm_constant_w_packs() { return constant_w_packs.load(std::memory_order_relaxed); }

} // namespace rlx::jit
