// jit/ssm_kernels.cpp -- the state-space scans on the CPU (jit/ssm_kernels.hpp), written by hand
// because the time loop must run inside one kernel with the state in registers or cache (the
// graph would be a dispatch per step). selective_scan: the recurrence of
// include/rlx/ir/graph.hpp, vectorized across a block of kW channels. For each block the loop over
// time runs inside: per step it reads kW steps and inputs (contiguous in [B,S,H]) and one row of
// b and c, computes the N x kW decays with a polynomial exp, updates the N x kW state and reduces
// it with c. The state and the arithmetic are double (f32 in, f32 out), so the result is the
// interpreter's (which computes in double and rounds once) within an ulp or two of f32. The
// block body is compiled for AVX-512, AVX2+FMA and the baseline, chosen once at run time.
// mamba2 (state in double) and gated_delta_net (state in f32, see gdn_head) run one (batch,
// head) per task, the state swept once or twice per step.
#include "ssm_kernels.hpp"

#include "thread_pool.hpp"

#include <bit>
#include <cmath>
#include <cstring>
#include <vector>

// The vector helpers below take and return 512-bit vectors; they are always inlined into the
// block bodies (internal linkage), so no call ever uses the ABI -Wpsabi warns about.
#pragma GCC diagnostic ignored "-Wpsabi"

namespace rlx::jit {

namespace {

constexpr int kW = 8; // channels per block: one 512-bit vector of doubles

// GNU vector types (clang and gcc): kW doubles; without AVX-512 the compiler splits them.
using V = double __attribute__((vector_size(kW * sizeof(double))));
using U = uint64_t __attribute__((vector_size(kW * sizeof(double))));

[[gnu::always_inline]] inline V splat(double v) { return V{} + v; }
/// m ? a : b lane by lane (m from a comparison: all ones or all zeros).
template <class M> [[gnu::always_inline]] inline V sel(M m, V a, V b) {
  U mu = U(m);
  return std::bit_cast<V>((mu & std::bit_cast<U>(a)) | (~mu & std::bit_cast<U>(b)));
}

/// exp(x) lane by lane: x = k ln2 + r with |r| <= ln2/2, exp(r) by its Taylor polynomial to
/// degree 12 (relative error < 2e-16 on that interval), scaled by 2^k through the exponent bits.
/// Underflows to 0 below -708 (the interpreter's libm gives subnormals there; both round to 0
/// in f32), inf above 709.7; NaN stays NaN.
[[gnu::always_inline]] inline V vexp(V x) {
  const V shift = splat(0x1.8p52); // adding it rounds to an integer held in the low bits
  V xc = sel(x < splat(-708.0), splat(-708.0), x);
  xc = sel(xc > splat(709.0), splat(709.0), xc);
  const V ks = xc * 1.4426950408889634 + shift;
  const V k = ks - shift;
  const V r = (xc - k * 6.93147180369123816490e-01) - k * 1.90821492927058770002e-10;
  V p = splat(1.0 / 479001600.0);
  p = p * r + 1.0 / 39916800.0;
  p = p * r + 1.0 / 3628800.0;
  p = p * r + 1.0 / 362880.0;
  p = p * r + 1.0 / 40320.0;
  p = p * r + 1.0 / 5040.0;
  p = p * r + 1.0 / 720.0;
  p = p * r + 1.0 / 120.0;
  p = p * r + 1.0 / 24.0;
  p = p * r + 1.0 / 6.0;
  p = p * r + 0.5;
  p = p * r + 1.0;
  p = p * r + 1.0;
  // 2^k: k sits in the low mantissa bits of ks (the bits above shift out).
  const V scale = std::bit_cast<V>((std::bit_cast<U>(ks) + 1023) << 52);
  V e = p * scale;
  e = sel(x < splat(-708.0), splat(0.0), e);
  e = sel(x > splat(709.7), splat(HUGE_VAL), e);
  return sel(x != x, x, e);
}

struct Dims {
  int64_t b, s, h, n;
};

/// One block of kW channels [h0, h0 + kW) of batch bi (lanes past H compute on zeros and are
/// not stored). at: a transposed to [N, H] in double; scratch: 2 N vectors (a, state).
[[gnu::always_inline]] inline void block(const Dims& d, const float* x, const float* dl,
                                         const double* at, const float* b, const float* c, float* y,
                                         int64_t bi, int64_t h0, V* scratch) {
  const int64_t lanes = std::min<int64_t>(kW, d.h - h0), nn = d.n;
  V* a = scratch;
  V* st = scratch + nn;
  for (int64_t k = 0; k < nn; ++k) {
    V v{};
    for (int w = 0; w < lanes; ++w) v[w] = at[k * d.h + h0 + w];
    a[k] = v;
    st[k] = V{};
  }
  for (int64_t t = 0; t < d.s; ++t) {
    const int64_t row = (bi * d.s + t) * d.h + h0;
    V dv{}, u{};
    for (int w = 0; w < lanes; ++w) {
      dv[w] = double(dl[row + w]);
      u[w] = double(x[row + w]);
    }
    const float* bt = b + (bi * d.s + t) * nn;
    const float* ct = c + (bi * d.s + t) * nn;
    V acc{};
    for (int64_t k = 0; k < nn; ++k) {
      st[k] = vexp(dv * a[k]) * st[k] + dv * double(bt[k]) * u;
      acc += double(ct[k]) * st[k];
    }
    for (int w = 0; w < lanes; ++w) y[row + w] = float(acc[w]);
  }
}

using BlockFn = void (*)(const Dims&, const float*, const float*, const double*, const float*,
                         const float*, float*, int64_t, int64_t, V*);

#if defined(__x86_64__)
[[gnu::target("avx512f,avx512dq,avx512vl,avx2,fma")]] void
block_avx512(const Dims& d, const float* x, const float* dl, const double* at, const float* b,
             const float* c, float* y, int64_t bi, int64_t h0, V* scratch) {
  block(d, x, dl, at, b, c, y, bi, h0, scratch);
}
[[gnu::target("avx2,fma")]] void block_avx2(const Dims& d, const float* x, const float* dl,
                                            const double* at, const float* b, const float* c,
                                            float* y, int64_t bi, int64_t h0, V* scratch) {
  block(d, x, dl, at, b, c, y, bi, h0, scratch);
}
#endif
void block_base(const Dims& d, const float* x, const float* dl, const double* at, const float* b,
                const float* c, float* y, int64_t bi, int64_t h0, V* scratch) {
  block(d, x, dl, at, b, c, y, bi, h0, scratch);
}

BlockFn pick_block() {
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
      __builtin_cpu_supports("avx512vl"))
    return block_avx512;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return block_avx2;
#endif
  return block_base;
}

class SelectiveScanCall final : public LibraryCall {
public:
  explicit SelectiveScanCall(const ir::Node& n) {
    auto xs = n.shape.sizes();
    dims_ = {xs[0], xs[1], xs[2], n.op.attrs<ir::SelectiveScanAttrs>().state_size};
  }
  void run(const std::byte* const* reads, std::byte* out) const override {
    const auto* x = reinterpret_cast<const float*>(reads[0]);
    const auto* dl = reinterpret_cast<const float*>(reads[1]);
    const auto* a = reinterpret_cast<const float*>(reads[2]);
    const auto* b = reinterpret_cast<const float*>(reads[3]);
    const auto* c = reinterpret_cast<const float*>(reads[4]);
    auto* y = reinterpret_cast<float*>(out);
    const Dims d = dims_;
    std::vector<double> at(std::size_t(d.n * d.h)); // a as [N, H]
    for (int64_t h = 0; h < d.h; ++h)
      for (int64_t k = 0; k < d.n; ++k) at[std::size_t(k * d.h + h)] = double(a[h * d.n + k]);
    static const BlockFn fn = pick_block();
    const int64_t blocks = (d.h + kW - 1) / kW;
    threads::parallel_for(d.b * blocks, 1, [&](int64_t i0, int64_t i1) {
      std::vector<V> scratch(std::size_t(2 * d.n));
      for (int64_t i = i0; i < i1; ++i)
        fn(d, x, dl, at.data(), b, c, y, i / blocks, (i % blocks) * kW, scratch.data());
    });
  }

private:
  Dims dims_{};
};

// ---- mamba2 and gated_delta_net: the state of one (batch, head) as rows of kW-double vectors
// along the state axis N (a multiple of kW); one task per (batch, head) on the thread pool.

/// Load kW floats as doubles.
[[gnu::always_inline]] inline V load(const float* p) {
  V v;
  for (int w = 0; w < kW; ++w) v[w] = double(p[w]);
  return v;
}

[[gnu::always_inline]] inline double hsum(V v) {
  double s = 0;
  for (int w = 0; w < kW; ++w) s += v[w];
  return s;
}

struct Mamba2Dims {
  int64_t b, s, h, p, g, n;
};

/// One (batch bi, head h) of mamba2: state [P, N] in scratch (P * N / kW vectors), plus N / kW
/// vectors each for b_t and c_t.
[[gnu::always_inline]] inline void mamba2_head(const Mamba2Dims& d, const float* const* in,
                                               float* y, int64_t bi, int64_t h, V* scratch) {
  const float *x = in[0], *dt = in[1], *a = in[2], *b = in[3], *c = in[4];
  const int64_t nv = d.n / kW, g = h / (d.h / d.g);
  V* st = scratch;
  V* bv = st + d.p * nv;
  V* cv = bv + nv;
  for (int64_t i = 0; i < d.p * nv; ++i) st[i] = V{};
  for (int64_t t = 0; t < d.s; ++t) {
    const double dd = double(dt[(bi * d.s + t) * d.h + h]);
    const double decay = std::exp(dd * double(a[h]));
    const int64_t bo = ((bi * d.s + t) * d.g + g) * d.n;
    for (int64_t j = 0; j < nv; ++j) {
      bv[j] = load(b + bo + j * kW);
      cv[j] = load(c + bo + j * kW);
    }
    const int64_t xo = ((bi * d.s + t) * d.h + h) * d.p;
    for (int64_t p = 0; p < d.p; ++p) {
      const double u = dd * double(x[xo + p]);
      V acc{};
      V* row = st + p * nv;
      for (int64_t j = 0; j < nv; ++j) {
        row[j] = decay * row[j] + u * bv[j];
        acc += row[j] * cv[j];
      }
      y[xo + p] = float(hsum(acc));
    }
  }
}

struct GdnDims {
  int64_t b, s, h, n;
  bool carry;
};

/// kW floats: gated_delta_net keeps its state in f32 (see gdn_head).
using F = float __attribute__((vector_size(kW * sizeof(float))));

[[gnu::always_inline]] inline F loadf(const float* p) {
  F v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

/// One (batch bi, head h) of gated_delta_net: S [N, N] key-major in f32 (N * N / kW vectors of
/// kW floats) plus N / kW vectors for u. Per step two sweeps over S: u = S^T k (reading only;
/// the decay is applied to u, (exp(g) S)^T k = exp(g) S^T k), then S = exp(g) S + k u^T and
/// o = S^T q together. The state is f32 unlike the other ssm kernels: S is N^2 values per head
/// (64 KiB at N = 128), so the step is bound by the cache's bandwidth and double would halve
/// it; the f32 result stays within the backends' tolerance of the interpreter's double
/// recurrence (the decay keeps the rounding errors from growing along the sequence).
[[gnu::always_inline]] inline void gdn_head(const GdnDims& d, const float* const* in, float* out,
                                            int64_t bi, int64_t h, F* scratch) {
  const float *q = in[0], *k = in[1], *v = in[2], *g = in[3], *beta = in[4];
  const int64_t nv = d.n / kW, rows = d.carry ? d.s + d.n : d.s;
  F* st = scratch;
  F* u = st + d.n * nv;
  const float* init = d.carry ? in[5] + (bi * d.h + h) * d.n * d.n : nullptr;
  for (int64_t i = 0; i < d.n * nv; ++i) st[i] = init ? loadf(init + i * kW) : F{};
  for (int64_t t = 0; t < d.s; ++t) {
    const int64_t si = (bi * d.s + t) * d.h + h, vo = si * d.n;
    const float decay = std::exp(g[si]), bt = beta[si];
    for (int64_t j = 0; j < nv; ++j) u[j] = F{};
    for (int64_t i = 0; i < d.n; ++i) { // u = S^T k, before the decay
      const float ki = k[vo + i];
      const F* row = st + i * nv;
      for (int64_t j = 0; j < nv; ++j) u[j] += row[j] * ki;
    }
    for (int64_t j = 0; j < nv; ++j) u[j] = bt * (loadf(v + vo + j * kW) - decay * u[j]);
    float* o = out + ((bi * rows + t) * d.h + h) * d.n;
    F acc[1024 / kW];
    for (int64_t j = 0; j < nv; ++j) acc[j] = F{};
    for (int64_t i = 0; i < d.n; ++i) { // S = decay S + k u^T, o = S^T q
      const float ki = k[vo + i], qi = q[vo + i];
      F* row = st + i * nv;
      for (int64_t j = 0; j < nv; ++j) {
        row[j] = decay * row[j] + ki * u[j];
        acc[j] += row[j] * qi;
      }
    }
    std::memcpy(o, acc, std::size_t(d.n) * sizeof(float));
  }
  if (d.carry)
    for (int64_t i = 0; i < d.n; ++i)
      std::memcpy(out + ((bi * rows + d.s + i) * d.h + h) * d.n, st + i * nv,
                  std::size_t(d.n) * sizeof(float));
}

/// A head function compiled for AVX-512, AVX2+FMA and the baseline, picked once.
#if defined(__x86_64__)
#define RLX_SSM_VARIANTS(NAME, BODY, DIMS, SCRATCH)                                                \
  [[gnu::target("avx512f,avx512dq,avx512vl,avx2,fma")]] void NAME##_avx512(                        \
      const DIMS& d, const float* const* in, float* out, int64_t bi, int64_t h,                    \
      SCRATCH* scratch) {                                                                          \
    BODY(d, in, out, bi, h, scratch);                                                              \
  }                                                                                                \
  [[gnu::target("avx2,fma")]] void NAME##_avx2(const DIMS& d, const float* const* in, float* out,  \
                                               int64_t bi, int64_t h, SCRATCH* scratch) {          \
    BODY(d, in, out, bi, h, scratch);                                                              \
  }                                                                                                \
  void NAME##_base(const DIMS& d, const float* const* in, float* out, int64_t bi, int64_t h,       \
                   SCRATCH* scratch) {                                                             \
    BODY(d, in, out, bi, h, scratch);                                                              \
  }                                                                                                \
  auto pick_##NAME() {                                                                             \
    __builtin_cpu_init();                                                                          \
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&                 \
        __builtin_cpu_supports("avx512vl"))                                                        \
      return NAME##_avx512;                                                                        \
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return NAME##_avx2;       \
    return NAME##_base;                                                                            \
  }
#else
#define RLX_SSM_VARIANTS(NAME, BODY, DIMS, SCRATCH)                                                \
  void NAME##_base(const DIMS& d, const float* const* in, float* out, int64_t bi, int64_t h,       \
                   SCRATCH* scratch) {                                                             \
    BODY(d, in, out, bi, h, scratch);                                                              \
  }                                                                                                \
  auto pick_##NAME() { return NAME##_base; }
#endif

RLX_SSM_VARIANTS(mamba2, mamba2_head, Mamba2Dims, V)
RLX_SSM_VARIANTS(gdn, gdn_head, GdnDims, F)
#undef RLX_SSM_VARIANTS

class Mamba2Call final : public LibraryCall {
public:
  explicit Mamba2Call(const ir::Node& n, const ir::Graph& g) {
    auto xs = n.shape.sizes();
    auto bs = g.shape(n.inputs[3]).sizes();
    dims_ = {xs[0], xs[1], xs[2], xs[3], bs.size() == 4 ? bs[2] : 1, bs.back()};
  }
  void run(const std::byte* const* reads, std::byte* out) const override {
    const float* in[5];
    for (int i = 0; i < 5; ++i) in[i] = reinterpret_cast<const float*>(reads[i]);
    auto* y = reinterpret_cast<float*>(out);
    static const auto fn = pick_mamba2();
    const Mamba2Dims d = dims_;
    threads::parallel_for(d.b * d.h, 1, [&](int64_t i0, int64_t i1) {
      std::vector<V> scratch(std::size_t((d.p + 2) * (d.n / kW)));
      for (int64_t i = i0; i < i1; ++i) fn(d, in, y, i / d.h, i % d.h, scratch.data());
    });
  }

private:
  Mamba2Dims dims_{};
};

class GdnCall final : public LibraryCall {
public:
  explicit GdnCall(const ir::Node& n, const ir::Graph& g) {
    auto qs = g.shape(n.inputs[0]).sizes();
    dims_ = {qs[0], qs[1], qs[2], qs[3], n.op.attrs<ir::GatedDeltaNetAttrs>().carry_state};
  }
  void run(const std::byte* const* reads, std::byte* out) const override {
    const float* in[6];
    for (int i = 0; i < (dims_.carry ? 6 : 5); ++i)
      in[i] = reinterpret_cast<const float*>(reads[i]);
    auto* o = reinterpret_cast<float*>(out);
    static const auto fn = pick_gdn();
    const GdnDims d = dims_;
    threads::parallel_for(d.b * d.h, 1, [&](int64_t i0, int64_t i1) {
      std::vector<F> scratch(std::size_t((d.n + 1) * (d.n / kW)));
      for (int64_t i = i0; i < i1; ++i) fn(d, in, o, i / d.h, i % d.h, scratch.data());
    });
  }

private:
  GdnDims dims_{};
};

} // namespace

bool ssm_handles(const ir::Graph& g, const ir::Node& n) {
  if (!n.shape.is_static() || n.shape.dtype() != ir::DType::F32) return false;
  for (ir::NodeId in : n.inputs)
    if (!g.shape(in).is_static()) return false;
  switch (n.op.kind()) {
  case ir::OpKind::SelectiveScan:
    return n.op.attrs<ir::SelectiveScanAttrs>().state_size >= 1;
  case ir::OpKind::Mamba2: {
    const auto& at = n.op.attrs<ir::Mamba2Attrs>();
    return at.state_size >= kW && at.state_size % kW == 0;
  }
  case ir::OpKind::GatedDeltaNet: {
    const int64_t nn = n.op.attrs<ir::GatedDeltaNetAttrs>().state_size;
    return nn >= kW && nn % kW == 0 && nn <= 1024;
  }
  default:
    return false;
  }
}

std::unique_ptr<LibraryCall> ssm_prepare(const ir::Graph& g, const ir::Node& n) {
  switch (n.op.kind()) {
  case ir::OpKind::Mamba2:
    return std::make_unique<Mamba2Call>(n, g);
  case ir::OpKind::GatedDeltaNet:
    return std::make_unique<GdnCall>(n, g);
  default:
    return std::make_unique<SelectiveScanCall>(n);
  }
}

} // namespace rlx::jit
