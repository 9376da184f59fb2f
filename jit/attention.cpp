// jit/attention.cpp -- attention of f32 on the generated GEMM: per (batch, head), one task of the
// thread pool computes the scores Q Kᵀ (the GEMM reads Q and K in place: a head is a column
// block of rows `row_stride` apart, K through swapped strides), the masked, scaled softmax of
// each row (max, exp and sum in double, the weights stored as f32), then the weights times V
// (again read in place), and copies the head's [Sq, D] result into its columns of the output.
// The interpreter's semantics (src/interp/attention.cpp): queries aligned to the end of the
// keys, a row whose every key is masked (and no score NaN) outputs zeros, a masked key is
// skipped (even when its value is inf or NaN: such a head takes a loop that skips it instead
// of the GEMM, which would multiply it by zero). On AVX-512 hosts the softmax of a row without
// a softcap or a bias mask runs 16 keys at a time (row_softmax_avx512: scale, max and exp in
// f32, the sum in double); the others take the scalar loop.
#include "attention.hpp"

#include "gemm.hpp"
#include "support/size_math.hpp"
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
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>

namespace rlx::jit {

namespace {

using ir::MaskType;

bool has_mask_operand(MaskType m) { return m == MaskType::Custom || m == MaskType::Bias; }

bool static_f32(const ir::Shape& s) { return s.is_static() && s.dtype() == ir::DType::F32; }

/// The dims a mask of this kind broadcasts to.
std::vector<int64_t> mask_target(MaskType m, int64_t b, int64_t h, int64_t sq, int64_t sk) {
  return m == MaskType::Custom ? std::vector<int64_t>{b, sk} : std::vector<int64_t>{b, h, sq, sk};
}

/// Element strides of a mask of dims `dims` broadcast (right-aligned) to `target`: 0 along
/// broadcast dims. Empty when it does not broadcast.
std::optional<std::vector<int64_t>> broadcast_strides(const std::vector<int64_t>& dims,
                                                      const std::vector<int64_t>& target) {
  if (dims.size() > target.size()) return std::nullopt;
  std::vector<int64_t> strides(target.size(), 0);
  std::size_t off = target.size() - dims.size();
  int64_t stride = 1;
  for (std::size_t i = dims.size(); i-- > 0;) {
    if (dims[i] != 1 && dims[i] != target[off + i]) return std::nullopt;
    if (dims[i] != 1) strides[off + i] = stride;
    stride *= dims[i];
  }
  return strides;
}

struct Geometry {
  int64_t batch = 0, sq = 0, sk = 0, heads = 0, dim = 0, width = 0;
  int64_t q_col = 0, k_col = 0, v_col = 0, q_ld = 0, k_ld = 0, v_ld = 0;
  MaskType mask = MaskType::None;
  int64_t window = 0;
  double scale = 1, cap = 0;
  std::vector<int64_t> mask_strides; ///< per target dim (mask_target)
};

#if defined(__x86_64__)
#define RLX_AVX512 [[gnu::target("avx512f,avx512bw,avx512vl,avx512dq")]]

bool host_has_avx512() {
  static const bool yes = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                          __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
  return yes;
}

/// e^x of 16 floats x <= 0 (NaN stays NaN, -inf and anything below -104 give 0): x = n ln2 + r
/// with |r| <= ln2 / 2 (ln2 in two parts), e^r by its Taylor polynomial of degree 7 (truncation
/// 5e-9 relative), 2^n by vscalefps, which also rounds results below the normal range.
RLX_AVX512 inline __m512 exp_nonpositive(__m512 x) {
  x = _mm512_max_ps(_mm512_set1_ps(-104.0f), x); // max(lo, NaN) is the NaN
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693145751953125f), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(1.428606765330187045e-06f), r);
  __m512 p = _mm512_set1_ps(1.0f / 5040);
  for (float c : {1.0f / 720, 1.0f / 120, 1.0f / 24, 1.0f / 6, 0.5f, 1.0f, 1.0f})
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(c));
  return _mm512_scalef_ps(p, n);
}

/// Lanes [j, end) of a 16-key block starting at j, and of those the keys `keys` leaves (null:
/// all).
RLX_AVX512 inline __mmask16 block_lanes(int64_t j, int64_t end, const char* keys) {
  __mmask16 lanes = end - j >= 16 ? __mmask16(0xffff) : __mmask16((1u << (end - j)) - 1);
  if (!keys) return lanes;
  __m128i k = _mm_maskz_loadu_epi8(lanes, keys + j);
  return _mm_test_epi8_mask(k, k);
}

/// The largest of v's 16 lanes, by swaps of halves. (g++ 12's _mm512_reduce_max_ps, and the
/// unmasked max and shuffles inlined here, take an undefined vector as the masked-off source and
/// warn that it is uninitialized, which -Werror makes an error; the zero-masking forms with every
/// lane set are the same instructions.)
RLX_AVX512 inline float reduce_max(__m512 v) {
  constexpr __mmask16 kAll = 0xffff;
  v = _mm512_maskz_max_ps(kAll, v, _mm512_maskz_shuffle_f32x4(kAll, v, v, 0x4E)); // halves
  v = _mm512_maskz_max_ps(kAll, v, _mm512_maskz_shuffle_f32x4(kAll, v, v, 0xB1)); // quarters
  v = _mm512_maskz_max_ps(kAll, v, _mm512_maskz_permute_ps(kAll, v, 0x4E)); // pairs in a quarter
  v = _mm512_maskz_max_ps(kAll, v, _mm512_maskz_permute_ps(kAll, v, 0xB1)); // neighbours
  return _mm512_cvtss_f32(v);
}

/// The softmax of row[lo, hi) in place, 16 keys at a time: x = row[j] * scale, max over the
/// keys left (those of `keys`, null: all), e^(x - max) in f32, their sum in double, then each
/// times 1 / sum; keys left out are 0. Returns false, touching nothing, when every key is left
/// out or -inf and no x is NaN (the caller's all-masked row).
RLX_AVX512 bool row_softmax_avx512(float* row, int64_t lo, int64_t hi, float scale,
                                   const char* keys) {
  const __m512 s = _mm512_set1_ps(scale);
  __m512 vmax = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
  __mmask16 nan = 0;
  for (int64_t j = lo; j < hi; j += 16) {
    __mmask16 k = block_lanes(j, hi, keys);
    __m512 x = _mm512_mul_ps(_mm512_maskz_loadu_ps(k, row + j), s);
    nan |= _mm512_mask_cmp_ps_mask(k, x, x, _CMP_UNORD_Q);
    vmax = _mm512_mask_max_ps(vmax, k, x, vmax); // a NaN x keeps vmax, as the scalar loop
  }
  const float max = reduce_max(vmax);
  if (!nan && max == -std::numeric_limits<float>::infinity()) return false;
  const __m512 m = _mm512_set1_ps(max);
  __m512d sum_lo = _mm512_setzero_pd(), sum_hi = _mm512_setzero_pd();
  for (int64_t j = lo; j < hi; j += 16) {
    __mmask16 all = block_lanes(j, hi, nullptr), k = keys ? block_lanes(j, hi, keys) : all;
    __m512 x = _mm512_mul_ps(_mm512_maskz_loadu_ps(k, row + j), s);
    __m512 e = _mm512_maskz_mov_ps(k, exp_nonpositive(_mm512_sub_ps(x, m)));
    _mm512_mask_storeu_ps(row + j, all, e);
    sum_lo = _mm512_add_pd(sum_lo, _mm512_cvtps_pd(_mm512_castps512_ps256(e)));
    sum_hi = _mm512_add_pd(
        sum_hi, _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(e), 1))));
  }
  const __m512 inv =
      _mm512_set1_ps(float(1.0 / _mm512_reduce_add_pd(_mm512_add_pd(sum_lo, sum_hi))));
  for (int64_t j = lo; j < hi; j += 16) {
    __mmask16 all = block_lanes(j, hi, nullptr);
    _mm512_mask_storeu_ps(row + j, all, _mm512_mul_ps(_mm512_maskz_loadu_ps(all, row + j), inv));
  }
  return true;
}
#endif

/// Scratch of one task, per thread, grown as needed.
struct Scratch {
  std::vector<float> scores, ctx;
  std::vector<char> visible, empty_rows;
};
thread_local Scratch scratch;

class AttentionCall final : public LibraryCall {
public:
  explicit AttentionCall(Geometry geo) : geo_(std::move(geo)) {}

  void run(const std::byte* const* reads, std::byte* out) const override {
    const Geometry& g = geo_;
    // Zero-length sequences: empty operands have no storage (null), so no pointer into them may
    // be formed. No keys leaves every query fully masked: zeros, as in the interpreter.
    if (g.batch == 0 || g.sq == 0) return;
    if (g.sk == 0) {
      std::fill(reinterpret_cast<float*>(out),
                reinterpret_cast<float*>(out) + g.batch * g.sq * g.width, 0.0f);
      return;
    }
    const float* q = reinterpret_cast<const float*>(reads[0]) + g.q_col;
    const float* k = reinterpret_cast<const float*>(reads[1]) + g.k_col;
    const float* v = reinterpret_cast<const float*>(reads[2]) + g.v_col;
    const float* mask =
        has_mask_operand(g.mask) ? reinterpret_cast<const float*>(reads[3]) : nullptr;
    float* o = reinterpret_cast<float*>(out);
    threads::parallel_for(g.batch * g.heads, 1, [&](int64_t t0, int64_t t1) {
      for (int64_t t = t0; t < t1; ++t) head(t / g.heads, t % g.heads, q, k, v, mask, o);
    });
  }

private:
  bool visible(int64_t b, int64_t i, int64_t j, const float* mask) const {
    const Geometry& g = geo_;
    int64_t shift = g.sk - g.sq;
    switch (g.mask) {
    case MaskType::Causal:
      return j <= i + shift;
    case MaskType::SlidingWindow:
      return j <= i + shift && j > i + shift - g.window;
    case MaskType::Custom:
      return double(mask[b * g.mask_strides[0] + j * g.mask_strides[1]]) >= 0.5;
    default:
      return true;
    }
  }

  void head(int64_t b, int64_t h, const float* q, const float* k, const float* v, const float* mask,
            float* out) const {
    const Geometry& g = geo_;
    Scratch& s = scratch;
    s.scores.resize(std::size_t(g.sq * g.sk));
    s.ctx.resize(std::size_t(g.sq * g.dim));
    s.visible.resize(std::size_t(g.sk));
    s.empty_rows.assign(std::size_t(g.sq), 0);
    const float* qh = q + b * g.sq * g.q_ld + h * g.dim;
    const float* kh = k + b * g.sk * g.k_ld + h * g.dim;
    const float* vh = v + b * g.sk * g.v_ld + h * g.dim;
    float* scores = s.scores.data();
    if (g.sk > 0) {
      GemmCall qk;
      qk.m = g.sq, qk.n = g.sk, qk.k = g.dim;
      qk.a = {qh, g.q_ld, 1};
      qk.b = {kh, 1, g.k_ld}; // Kᵀ: element (d, j) at kh[j * ld + d]
      qk.c = scores;
      sgemm(qk, 1);
    }
    constexpr double kInf = std::numeric_limits<double>::infinity();
    bool skips = false; // some row leaves a key out (a masked key, or every key)
    // A Custom mask is the same for every query of a batch: which keys it leaves, once.
    const char* keys = nullptr;
    if (g.mask == MaskType::Custom) {
      for (int64_t j = 0; j < g.sk; ++j)
        s.visible[std::size_t(j)] =
            double(mask[b * g.mask_strides[0] + j * g.mask_strides[1]]) >= 0.5;
      keys = s.visible.data();
    }
    int64_t shift = g.sk - g.sq;
#if defined(__x86_64__)
    const bool vector = g.cap == 0 && g.mask != MaskType::Bias && host_has_avx512();
    if (vector && keys) skips = std::find(keys, keys + g.sk, 0) != keys + g.sk;
#endif
    for (int64_t i = 0; i < g.sq; ++i) {
      float* row = scores + i * g.sk;
      // Causal and sliding-window masks leave the keys [lo, hi) to query i.
      int64_t lo = 0, hi = g.sk;
      if (g.mask == MaskType::Causal || g.mask == MaskType::SlidingWindow)
        hi = std::clamp<int64_t>(i + shift + 1, 0, g.sk);
      if (g.mask == MaskType::SlidingWindow)
        lo = std::clamp<int64_t>(i + shift - g.window + 1, 0, hi);
      skips = skips || lo > 0 || hi < g.sk;
#if defined(__x86_64__)
      if (vector) {
        if (!row_softmax_avx512(row, lo, hi, float(g.scale), keys)) {
          std::fill(row, row + g.sk, 0.0f);
          s.empty_rows[std::size_t(i)] = 1;
          skips = true;
          continue;
        }
        std::fill(row, row + lo, 0.0f);
        std::fill(row + hi, row + g.sk, 0.0f);
        continue;
      }
#endif
      const float* bias =
          g.mask == MaskType::Bias
              ? mask + b * g.mask_strides[0] + h * g.mask_strides[1] + i * g.mask_strides[2]
              : nullptr;
      double max = -kInf;
      bool nan = false;
      for (int64_t j = lo; j < hi; ++j) {
        if (keys && !keys[j]) {
          skips = true;
          continue;
        }
        double x = double(row[j]) * g.scale;
        if (g.cap > 0) x = g.cap * std::tanh(x / g.cap);
        if (bias) x += double(bias[j * g.mask_strides[3]]);
        row[j] = float(x);
        nan = nan || std::isnan(x);
        max = x > max ? x : max;
      }
      if (!nan && max == -kInf) { // every key masked: zeros
        std::fill(row, row + g.sk, 0.0f);
        s.empty_rows[std::size_t(i)] = 1;
        skips = true;
        continue;
      }
      std::fill(row, row + lo, 0.0f);
      std::fill(row + hi, row + g.sk, 0.0f);
      double sum = 0;
      for (int64_t j = lo; j < hi; ++j) {
        if (keys && !keys[j]) {
          row[j] = 0;
          continue;
        }
        row[j] = std::exp(float(double(row[j]) - max));
        sum += double(row[j]);
      }
      float inv = float(1.0 / sum);
      for (int64_t j = lo; j < hi; ++j) row[j] *= inv;
    }
    // The interpreter never reads a value its row leaves out; the GEMM multiplies it by zero,
    // which is zero unless the value is inf or NaN.
    bool skip_masked = false;
    for (int64_t j = 0; skips && j < g.sk && !skip_masked; ++j)
      for (int64_t d = 0; d < g.dim; ++d)
        if (!std::isfinite(vh[j * g.v_ld + d])) {
          skip_masked = true;
          break;
        }
    float* ctx = s.ctx.data();
    if (g.sk == 0) {
      std::fill(ctx, ctx + g.sq * g.dim, 0.0f);
    } else if (!skip_masked) {
      GemmCall pv;
      pv.m = g.sq, pv.n = g.dim, pv.k = g.sk;
      pv.a = {scores, g.sk, 1};
      pv.b = {vh, g.v_ld, 1};
      pv.c = ctx;
      sgemm(pv, 1);
    } else {
      for (int64_t i = 0; i < g.sq; ++i)
        for (int64_t d = 0; d < g.dim; ++d) {
          double acc = 0;
          for (int64_t j = 0; j < g.sk && !s.empty_rows[std::size_t(i)]; ++j)
            if (visible(b, i, j, mask)) acc += double(scores[i * g.sk + j]) * vh[j * g.v_ld + d];
          ctx[i * g.dim + d] = float(acc);
        }
    }
    for (int64_t i = 0; i < g.sq; ++i)
      std::memcpy(out + (b * g.sq + i) * g.width + h * g.dim, ctx + i * g.dim,
                  std::size_t(g.dim) * sizeof(float));
  }

  Geometry geo_;
};

} // namespace

bool attention_handles(const ir::Graph& g, const ir::Node& n) {
  if (n.op.kind() != ir::OpKind::Attention || !static_f32(n.shape) || !gemm_supported())
    return false;
  const auto& a = n.op.attrs<ir::AttentionAttrs>();
  bool masked = has_mask_operand(a.mask);
  if (n.inputs.size() != (masked ? 4u : 3u)) return false;
  for (ir::NodeId in : n.inputs)
    if (!static_f32(g.shape(in))) return false;
  std::vector<int64_t> qs = g.shape(n.inputs[0]).sizes(), ks = g.shape(n.inputs[1]).sizes();
  int64_t heads = a.num_heads, dim = a.head_dim;
  if (heads < 1 || dim < 1 || qs.size() != 3 || ks.size() != 3 ||
      rlx::detail::checked_mul(heads, dim) != qs[2] || ks[2] != qs[2] || ks[0] != qs[0] ||
      g.shape(n.inputs[2]).sizes() != ks || n.shape.sizes() != qs)
    return false;
  if (a.mask == MaskType::SlidingWindow && a.window < 1) return false;
  if (a.attn_logit_softcap && !(*a.attn_logit_softcap > 0 && std::isfinite(*a.attn_logit_softcap)))
    return false;
  if (masked && !broadcast_strides(g.shape(n.inputs[3]).sizes(),
                                   mask_target(a.mask, qs[0], heads, qs[1], ks[1])))
    return false;
  return true;
}

std::vector<ir::NodeId> attention_reads(const ir::Graph& g, const ir::Node& n) {
  std::vector<ir::NodeId> reads;
  for (std::size_t i = 0; i < n.inputs.size(); ++i)
    reads.push_back(i < 3 ? row_view(g, n.inputs[i]).buffer : n.inputs[i]);
  return reads;
}

std::unique_ptr<LibraryCall> attention_prepare(const ir::Graph& g, const ir::Node& n) {
  const auto& a = n.op.attrs<ir::AttentionAttrs>();
  std::vector<int64_t> qs = g.shape(n.inputs[0]).sizes(), ks = g.shape(n.inputs[1]).sizes();
  Geometry geo;
  geo.batch = qs[0], geo.sq = qs[1], geo.sk = ks[1], geo.width = qs[2];
  geo.heads = a.num_heads, geo.dim = a.head_dim;
  RowView qv = row_view(g, n.inputs[0]), kv = row_view(g, n.inputs[1]),
          vv = row_view(g, n.inputs[2]);
  geo.q_col = qv.column, geo.q_ld = qv.row_stride;
  geo.k_col = kv.column, geo.k_ld = kv.row_stride;
  geo.v_col = vv.column, geo.v_ld = vv.row_stride;
  geo.mask = a.mask;
  geo.window = a.window;
  geo.scale = a.score_scale ? double(*a.score_scale) : 1.0 / std::sqrt(double(a.head_dim));
  geo.cap = a.attn_logit_softcap ? double(*a.attn_logit_softcap) : 0.0;
  if (has_mask_operand(a.mask))
    geo.mask_strides = *broadcast_strides(g.shape(n.inputs[3]).sizes(),
                                          mask_target(a.mask, qs[0], a.num_heads, qs[1], ks[1]));
  return std::make_unique<AttentionCall>(std::move(geo));
}

} // namespace rlx::jit
