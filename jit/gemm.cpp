// jit/gemm.cpp -- the blocked f32 GEMM around the generated micro-kernels (the BLIS loop
// order): for each block of kNc columns, for each block of kKc depth steps, B is packed into
// panels of kGemmNr columns (kept in L1 while a panel's tiles run); for each block of kMc rows A
// is packed into panels of kGemmMr rows (kept in L2); then every (column panel, row panel) pair
// runs one micro-kernel. Strided operands (transposes) only change the packing. The bias and
// relu are applied by the micro-kernel at the last depth block, while the tile is in registers;
// other activations (an LLVM element-wise kernel) run over each row block right after, while
// it is in cache.
#include "gemm.hpp"

#include "rlx/runtime.hpp"
#include "runtime/thread_pool.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>

namespace rlx::jit {

namespace {

constexpr int64_t kKc = 384;          // depth block: a B panel is 384 x 32 floats = 48 KiB
constexpr int64_t kMc = 24 * kGemmMr; // row block: A is 336 x 384 floats = 504 KiB (L2)
constexpr int64_t kNc = 64 * kGemmNr; // column block: B is 384 x 2048 floats = 3 MiB (L3)
// Up to this many rows of A, a row-major B is read in place instead of packed: each B panel
// serves few A panels, so packing (reading B, writing the copy, reading it again) costs more
// than it saves. For the BERT projections (60 rows) B is 1.7 MiB, read once either way.
constexpr int64_t kDirectBRows = 96;
// Work worth a thread: 2 MFLOP is about 10 µs here (a 100^3 product).
constexpr double kMinFlopsPerThread = 2e6;

/// Packing buffers, one pair per thread, grown as needed (64-byte aligned).
struct Scratch {
  struct Free {
    void operator()(float* p) const { std::free(p); }
  };
  std::unique_ptr<float[], Free> a, b;
  std::size_t a_len = 0, b_len = 0;
  static float* grow(std::unique_ptr<float[], Free>& p, std::size_t& len, std::size_t want) {
    if (want > len) {
      std::size_t bytes = (want * sizeof(float) + 63) / 64 * 64;
      p.reset(static_cast<float*>(std::aligned_alloc(64, bytes)));
      if (!p) throw std::bad_alloc();
      len = want;
    }
    return p.get();
  }
};
thread_local Scratch scratch;

/// B rows [p0, p0 + kc), columns [j0, j0 + nc) into panels of kGemmNr columns: panel q at
/// q * kc * kGemmNr, laid out [p][j] with 16 or 32 columns (the last panel's zero-padded width).
void pack_b(const float* b, int64_t rs, int64_t cs, int64_t p0, int64_t kc, int64_t j0, int64_t nc,
            float* dst) {
  for (int64_t q = 0; q * kGemmNr < nc; ++q) {
    int64_t j = j0 + q * kGemmNr, w = std::min<int64_t>(kGemmNr, j0 + nc - j);
    int64_t width = w > 16 ? 32 : 16;
    float* d = dst + q * kc * kGemmNr;
    if (cs == 1) {
      for (int64_t p = 0; p < kc; ++p) {
        const float* s = b + (p0 + p) * rs + j;
        std::memcpy(d + p * width, s, std::size_t(w) * sizeof(float));
        std::fill(d + p * width + w, d + (p + 1) * width, 0.0f);
      }
    } else {
      for (int64_t jj = 0; jj < w; ++jj) {
        const float* s = b + (j + jj) * cs + p0 * rs;
        for (int64_t p = 0; p < kc; ++p) d[p * width + jj] = s[p * rs];
      }
      for (int64_t p = 0; p < kc; ++p) std::fill(d + p * width + w, d + (p + 1) * width, 0.0f);
    }
  }
}

/// A rows [i0, i0 + mc), depth [p0, p0 + kc) into panels of mr rows: panel r at
/// r * kc * kGemmMr, laid out [p][i] with as many rows as the panel has (no padding).
void pack_a(const float* a, int64_t rs, int64_t cs, int64_t i0, int64_t mc, int64_t p0, int64_t kc,
            int64_t mr, float* dst) {
  for (int64_t r = 0; r * mr < mc; ++r) {
    int64_t i = i0 + r * mr, h = std::min<int64_t>(mr, i0 + mc - i);
    float* d = dst + r * kc * kGemmMr;
    if (cs == 1) {
      for (int64_t ii = 0; ii < h; ++ii) {
        const float* s = a + (i + ii) * rs + p0;
        for (int64_t p = 0; p < kc; ++p) d[p * h + ii] = s[p];
      }
    } else {
      for (int64_t p = 0; p < kc; ++p) {
        const float* s = a + i * rs + (p0 + p) * cs;
        for (int64_t ii = 0; ii < h; ++ii) d[p * h + ii] = s[ii * rs];
      }
    }
  }
}

/// The epilogue over `len` floats of one row, in place: the element-wise kernels shift their
/// last vector back over elements already computed when a range is not whole vectors, so the
/// range is split into whole vectors and a remainder shorter than one vector (which the kernel
/// runs through a stack copy).
void apply_epilogue(GemmEpilogueFn fn, float* row, int64_t len) {
  void* bufs[2] = {row, row};
  int64_t whole = len / 16 * 16;
  if (whole) fn(bufs, 0, whole);
  if (whole < len) fn(bufs, whole, len);
}

/// One task: C rows [m0, m1), columns [n0, n1) of batch t.
void run_block(const GemmCall& g, int64_t t, int64_t m0, int64_t m1, int64_t n0, int64_t n1) {
  const float* a = g.a.p + (g.a_off ? g.a_off[t] : 0);
  const float* b = g.b.p + (g.b_off ? g.b_off[t] : 0);
  float* c = g.c + t * g.m * g.n;
  int64_t kc_max = std::min(kKc, std::max<int64_t>(g.k, 1));
  // Equal depth blocks (K = 512 runs as 2 x 256, not 384 + 128).
  int64_t kblocks = (g.k + kc_max - 1) / kc_max;
  if (kblocks == 0) kblocks = 1;
  int64_t kc_even = (g.k + kblocks - 1) / kblocks;
  float* pb = Scratch::grow(
      scratch.b, scratch.b_len,
      std::size_t(kc_even * ((std::min(kNc, n1 - n0) + kGemmNr - 1) / kGemmNr * kGemmNr)));
  float* pa = Scratch::grow(scratch.a, scratch.a_len, std::size_t(kc_even * kMc));
  // Panels of equal height (60 rows run as 5 x 12, not 4 x 14 + 4), in equal row blocks of
  // whole panels (1024 rows as 4 x 266, not 3 x 336 + 16).
  int64_t rows = m1 - m0, panels = (rows + kGemmMr - 1) / kGemmMr;
  int64_t mr = (rows + panels - 1) / panels;
  bool direct = g.b.cs == 1 && rows <= kDirectBRows;
  MicroKernel kernels[2][3][3] = {}; // [full panel, last panel][vectors][GemmBMode]
  for (int nv = 1; nv <= 2; ++nv)
    for (GemmBMode mode : {GemmBMode::Packed, GemmBMode::Strided, GemmBMode::StridedMasked}) {
      if (direct != (mode != GemmBMode::Packed)) continue;
      kernels[0][nv][int(mode)] = gemm_micro_kernel(int(mr), nv, mode);
      if (rows % mr) kernels[1][nv][int(mode)] = gemm_micro_kernel(int(rows % mr), nv, mode);
    }
  int64_t mblocks = (rows + kMc - 1) / kMc;
  int64_t mc_even = ((rows + mblocks - 1) / mblocks + mr - 1) / mr * mr;
  MicroArgs args;
  args.ldc = g.n * int64_t(sizeof(float));
  for (int64_t jc = n0; jc < n1; jc += kNc) {
    int64_t nc = std::min(kNc, n1 - jc);
    for (int64_t pc = 0, blk = 0; blk < kblocks; ++blk) {
      int64_t kc = std::min(kc_even, g.k - pc);
      bool last = blk + 1 == kblocks;
      if (!direct) pack_b(b, g.b.rs, g.b.cs, pc, kc, jc, nc, pb);
      for (int64_t ic = m0; ic < m1; ic += mc_even) {
        int64_t mc = std::min(mc_even, m1 - ic);
        pack_a(a, g.a.rs, g.a.cs, ic, mc, pc, kc, mr, pa);
        uint64_t flags = (blk ? kGemmAccumulate : 0) | (last && g.bias ? kGemmBias : 0) |
                         (last && g.relu ? kGemmRelu : 0);
        for (int64_t q = 0; q * kGemmNr < nc; ++q) {
          int64_t j = jc + q * kGemmNr, w = std::min<int64_t>(kGemmNr, jc + nc - j);
          int nv = w > 16 ? 2 : 1;
          int64_t lanes = w - 16 * (nv - 1);
          GemmBMode mode = !direct       ? GemmBMode::Packed
                           : lanes == 16 ? GemmBMode::Strided
                                         : GemmBMode::StridedMasked;
          args.b = direct ? b + pc * g.b.rs + j : pb + q * kc * kGemmNr;
          args.ldb = g.b.rs * int64_t(sizeof(float));
          args.mask = lanes == 16 ? 0xffff : (uint64_t(1) << lanes) - 1;
          args.bias = g.bias ? g.bias + j : nullptr;
          args.flags = flags;
          args.k = kc;
          for (int64_t r = 0; r * mr < mc; ++r) {
            int64_t i = ic + r * mr;
            args.a = pa + r * kc * kGemmMr;
            args.c = c + i * g.n + j;
            kernels[i + mr > m1][nv][int(mode)](&args);
          }
        }
        if (last && g.epilogue)
          for (int64_t i = ic; i < ic + mc; ++i) apply_epilogue(g.epilogue, c + i * g.n + jc, nc);
      }
      pc += kc;
    }
  }
}

} // namespace

void sgemm(const GemmCall& g, int threads) {
  if (g.batches <= 0 || g.m <= 0 || g.n <= 0) return;
  int64_t t = threads > 0 ? threads : num_threads();
  // Unless told how many, a thread takes at least kMinFlopsPerThread of work (waking one costs
  // microseconds).
  double flops = 2.0 * double(g.batches) * double(g.m) * double(g.n) * double(g.k);
  if (threads <= 0)
    t = std::max<int64_t>(1, std::min<int64_t>(t, int64_t(flops / kMinFlopsPerThread)));
  // Split the work into about `t` parts: whole batches first, then column stripes (whole
  // panels; each thread packs its own B and A), else row stripes (whole row panels).
  int64_t n_parts = 1, m_parts = 1;
  if (g.batches < t) {
    int64_t per_batch = (t + g.batches - 1) / g.batches;
    int64_t n_panels = (g.n + kGemmNr - 1) / kGemmNr, m_panels = (g.m + kGemmMr - 1) / kGemmMr;
    if (n_panels >= 2 * per_batch || n_panels >= m_panels)
      n_parts = std::min(per_batch, n_panels);
    else
      m_parts = std::min(per_batch, m_panels);
  }
  int64_t tasks = g.batches * n_parts * m_parts;
  auto run = [&](int64_t begin, int64_t end) {
    for (int64_t task = begin; task < end; ++task) {
      int64_t bt = task / (n_parts * m_parts), part = task % (n_parts * m_parts);
      int64_t pn = part % n_parts, pm = part / n_parts;
      int64_t n_panels = (g.n + kGemmNr - 1) / kGemmNr, m_panels = (g.m + kGemmMr - 1) / kGemmMr;
      int64_t n0 = std::min(g.n, n_panels * pn / n_parts * kGemmNr);
      int64_t n1 = std::min(g.n, n_panels * (pn + 1) / n_parts * kGemmNr);
      int64_t m0 = std::min(g.m, m_panels * pm / m_parts * kGemmMr);
      int64_t m1 = std::min(g.m, m_panels * (pm + 1) / m_parts * kGemmMr);
      if (n0 < n1 && m0 < m1) run_block(g, bt, m0, m1, n0, n1);
    }
  };
  if (t <= 1 || tasks <= 1)
    run(0, tasks);
  else
    runtime::parallel_for(tasks, std::max<int64_t>(1, tasks / t), run);
}

} // namespace rlx::jit
