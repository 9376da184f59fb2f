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
// -Wmaybe-uninitialized flags wherever they are inlined (GCC bug 105593); the warning is about the
// header, not this file's values.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
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
                          __builtin_cpu_supports("avx512vnni");
  return yes;
}

#define RLX_VNNI __attribute__((target("avx512f,avx512bw,avx512vnni")))

std::atomic<int64_t> constant_w_packs{0};

/// w packed for the tiles: panel t, quad p, column j, byte q at ((t * kq + p) * 32 + j) * 4 + q
/// (zero-padded), and each column's sum.
struct PackedW {
  std::vector<int8_t> bytes;
  std::vector<int32_t> colsum;
};
PackedW pack_w(const int8_t* w, int64_t k, int64_t n) {
  const int64_t kq = (k + 3) / 4, panels = (n + kNr - 1) / kNr;
  PackedW p{std::vector<int8_t>(std::size_t(panels * kq * 128), 0),
            std::vector<int32_t>(std::size_t(panels * kNr), 0)};
  for (int64_t kk = 0; kk < k; ++kk)
    for (int64_t j = 0; j < n; ++j) {
      int8_t v = w[kk * n + j];
      int64_t t = j / kNr, jj = j % kNr;
      p.bytes[std::size_t(((t * kq + kk / 4) * kNr + jj) * 4 + kk % 4)] = v;
      p.colsum[std::size_t(j)] += v;
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
RLX_VNNI __m256i requant8(__m256i acc, const double* mult, double zp, double lo, double hi) {
  __m512d v = _mm512_mul_pd(_mm512_cvtepi32_pd(acc), _mm512_loadu_pd(mult));
  v = _mm512_roundscale_pd(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  v = _mm512_add_pd(v, _mm512_set1_pd(zp));
  v = _mm512_min_pd(_mm512_max_pd(v, _mm512_set1_pd(lo)), _mm512_set1_pd(hi));
  return _mm512_cvtpd_epi32(v);
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
                const int32_t* rowsum, const int32_t* colsum, const int32_t* bias,
                std::byte* out) const;
};

RLX_VNNI void QGemm::epilogue(const int32_t* acc, int64_t m0, int64_t rows, int64_t j0,
                              int64_t cols, const int32_t* rowsum, const int32_t* colsum,
                              const int32_t* bias, std::byte* out) const {
  const uint32_t xzp = uint32_t(x_zp_ + (x_u8_ ? 0 : 128)), kk = uint32_t(k_);
  alignas(64) int32_t row[kNr];
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t j = 0; j < cols; ++j) {
      const std::size_t c = std::size_t(j0 + j);
      uint32_t v = uint32_t(acc[i * kNr + j]) - uint32_t(w_zp_[c]) * uint32_t(rowsum[i]) -
                   xzp * uint32_t(colsum[c]) + kk * xzp * uint32_t(w_zp_[c]);
      if (bias) v += uint32_t(bias[c]);
      row[j] = int32_t(v);
    }
    const int64_t r = m0 + i;
    if (out_ == ir::DType::I32) {
      std::memcpy(out + (r * n_ + j0) * 4, row, std::size_t(cols) * 4);
      continue;
    }
    int64_t j = 0;
    for (; j + 8 <= cols; j += 8) {
      __m256i q = requant8(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + j)),
                           mult_.data() + j0 + j, out_zp_, lo_, hi_);
      alignas(32) int32_t lanes[8];
      _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), q);
      for (int t = 0; t < 8; ++t) out[r * n_ + j0 + j + t] = std::byte(uint8_t(lanes[t]));
    }
    for (; j < cols; ++j) {
      double v = std::nearbyint(double(row[j]) * mult_[std::size_t(j0 + j)]) + out_zp_;
      out[r * n_ + j0 + j] = std::byte(uint8_t(int32_t(std::clamp(v, lo_, hi_))));
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
  // Pack x: row block b, quad p, row i, byte q at ((b * kq + p) * kMr + i) * 4 + q.
  const int64_t blocks = (m_ + kMr - 1) / kMr;
  std::vector<uint8_t> ap(std::size_t(blocks * kq * kMr * 4), 0);
  std::vector<int32_t> rowsum(std::size_t(blocks * kMr), 0);
  for (int64_t r = 0; r < m_; ++r)
    for (int64_t k = 0; k < k_; ++k) {
      uint8_t v = uint8_t(x[r * k_ + k] ^ flip);
      int64_t b = r / kMr, i = r % kMr;
      ap[std::size_t(((b * kq + k / 4) * kMr + i) * 4 + k % 4)] = v;
      rowsum[std::size_t(r)] += v;
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
                   colsum.data(), bias, out);
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
