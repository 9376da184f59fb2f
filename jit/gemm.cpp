// jit/gemm.cpp -- the blocked GEMM around the generated micro-kernels (the BLIS loop order),
// for f32 and f64 on AVX-512 or AVX2: for each block of kNc columns, for each block of kKc
// depth steps, B is packed into panels of nr columns (kept in L1 while a panel's tiles run); for
// each block of kMc rows A is packed into panels of mr rows (kept in L2); then every (column
// panel, row panel) pair runs one micro-kernel. Strided operands (transposes) only change the
// packing. The bias, relu and residual are applied by the micro-kernel at the last depth block,
// while the tile is in registers; other activations (an LLVM element-wise kernel) run over each
// row block right after, while it is in cache (then the residual is added after them). A call
// with a small kernel (gemm_small_kernel) runs it once per batch instead, on this thread unless
// the batches add up to work worth splitting.
#include "gemm.hpp"

#include "rlx/error.hpp"
#include "rlx/runtime.hpp"
#include "thread_pool.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <immintrin.h>
#include <memory>
#include <new>

// g++ 12's AVX-512 headers start some intrinsics (the unpacks and shuffles of the packing
// transposes) from an "undefined" vector that -Wmaybe-uninitialized flags wherever they are
// inlined (GCC bug 105593); the warning is about the header, not this file's values.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

namespace rlx::jit {

namespace {

// Blocking (B panels are 64 or 128 bytes per depth step whatever the type).
constexpr int64_t kKc = 384;         // depth block: an f32 AVX-512 B panel is 384 x 32 = 48 KiB
constexpr int64_t kMcBytes = 516096; // row block: A is 336 x 384 floats = 504 KiB (L2)
constexpr int64_t kNcPanels = 64;    // column block: 64 panels (f32 AVX-512: 2048 columns)
// Up to this many rows of A, a row-major B is read in place instead of packed: each B panel
// serves few A panels, so packing (reading B, writing the copy, reading it again) costs more
// than it saves. For the BERT projections (60 rows) B is 1.7 MiB, read once either way.
constexpr int64_t kDirectBRows = 96;
// Work worth a thread: 2 MFLOP is about 10 µs here (a 100^3 product).
constexpr double kMinFlopsPerThread = 2e6;

template <class T> constexpr GemmType type_of() {
  return sizeof(T) == 8 ? GemmType::F64 : GemmType::F32;
}

/// Packing buffers, one pair per thread, grown as needed (64-byte aligned), in bytes.
struct Scratch {
  struct Free {
    void operator()(void* p) const { std::free(p); }
  };
  std::unique_ptr<void, Free> a, b;
  std::size_t a_len = 0, b_len = 0;
  template <class T>
  static T* grow(std::unique_ptr<void, Free>& p, std::size_t& len, std::size_t want) {
    want *= sizeof(T);
    if (want > len) {
      std::size_t bytes = (want + 63) / 64 * 64;
      p.reset(std::aligned_alloc(64, bytes));
      if (!p) throw std::bad_alloc();
      len = want;
    }
    return static_cast<T*>(p.get());
  }
};
thread_local Scratch scratch;

/// Whether the host runs the AVX-512F transposing copy below (whatever ISA the GEMM is forced to:
/// packing is plain copying, the panels' layout does not depend on it).
bool host_avx512f() {
  static const bool yes = __builtin_cpu_supports("avx512f");
  return yes;
}

/// The 16 x 16 block r[i][j] transposed in place (r[j][i]): unpacks of pairs, then 64- and
/// 128-bit lane shuffles.
[[gnu::target("avx512f")]] inline void transpose16(__m512 (&r)[16]) {
  __m512 t[16];
  for (int i = 0; i < 16; i += 2) {
    t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
  }
  for (int i = 0; i < 16; i += 4) {
    r[i] = _mm512_shuffle_ps(t[i], t[i + 2], _MM_SHUFFLE(1, 0, 1, 0));
    r[i + 1] = _mm512_shuffle_ps(t[i], t[i + 2], _MM_SHUFFLE(3, 2, 3, 2));
    r[i + 2] = _mm512_shuffle_ps(t[i + 1], t[i + 3], _MM_SHUFFLE(1, 0, 1, 0));
    r[i + 3] = _mm512_shuffle_ps(t[i + 1], t[i + 3], _MM_SHUFFLE(3, 2, 3, 2));
  }
  for (int i = 0; i < 16; i += 8)
    for (int j = 0; j < 4; ++j) {
      t[i + j] = _mm512_shuffle_f32x4(r[i + j], r[i + j + 4], 0x88);
      t[i + j + 4] = _mm512_shuffle_f32x4(r[i + j], r[i + j + 4], 0xdd);
    }
  for (int j = 0; j < 8; ++j) {
    r[j] = _mm512_shuffle_f32x4(t[j], t[j + 8], 0x88);
    r[j + 8] = _mm512_shuffle_f32x4(t[j], t[j + 8], 0xdd);
  }
}

/// dst[p * ld + i] = src[i * stride + p] for i < rows (at most 16) and p < depth: the rows of a
/// row-major A panel (or the columns of a transposed B) laid out depth step by depth step, 16
/// steps at a time through registers instead of one scattered store per element (the scalar
/// loop was a tenth of a BERT training step).
[[gnu::target("avx512f")]] void transpose_rows_avx512(const float* src, int64_t stride, int rows,
                                                      int64_t depth, float* dst, int64_t ld) {
  const __mmask16 keep = __mmask16((1u << rows) - 1);
  int64_t p = 0;
  for (; p + 16 <= depth; p += 16) {
    __m512 r[16];
    for (int i = 0; i < 16; ++i)
      r[i] = i < rows ? _mm512_loadu_ps(src + i * stride + p) : _mm512_setzero_ps();
    transpose16(r);
    for (int q = 0; q < 16; ++q) _mm512_mask_storeu_ps(dst + (p + q) * ld, keep, r[q]);
  }
  for (; p < depth; ++p)
    for (int i = 0; i < rows; ++i) dst[p * ld + i] = src[i * stride + p];
}

/// dst[p * width + i] = src[p * stride + i] for i < width (at most 16) and p < depth: a panel
/// of a transposed A, one masked vector per depth step (not a loop of `width` scalar copies).
[[gnu::target("avx512f")]] void copy_rows_avx512(const float* src, int64_t stride, int width,
                                                 int64_t depth, float* dst) {
  const __mmask16 keep = __mmask16((1u << width) - 1);
  for (int64_t p = 0; p < depth; ++p)
    _mm512_mask_storeu_ps(dst + p * width, keep, _mm512_maskz_loadu_ps(keep, src + p * stride));
}

/// B rows [p0, p0 + kc), columns [j0, j0 + nc) into panels of nr columns: panel q at
/// q * kc * nr, laid out [p][j] with lanes or nr columns (the last panel's zero-padded width).
template <class T>
void pack_b(const T* b, int64_t rs, int64_t cs, int64_t p0, int64_t kc, int64_t j0, int64_t nc,
            GemmTile tile, T* dst) {
  const int64_t nr = tile.nr();
  for (int64_t q = 0; q * nr < nc; ++q) {
    int64_t j = j0 + q * nr, w = std::min<int64_t>(nr, j0 + nc - j);
    int64_t width = w > tile.lanes ? nr : tile.lanes;
    T* d = dst + q * kc * nr;
    if (cs == 1) {
      for (int64_t p = 0; p < kc; ++p) {
        const T* s = b + (p0 + p) * rs + j;
        std::memcpy(d + p * width, s, std::size_t(w) * sizeof(T));
        std::fill(d + p * width + w, d + (p + 1) * width, T(0));
      }
    } else {
      if constexpr (sizeof(T) == 4) {
        if (rs == 1 && host_avx512f()) { // a transposed B: its columns are contiguous
          for (int64_t jj = 0; jj < w; jj += 16)
            transpose_rows_avx512(b + (j + jj) * cs + p0, cs, int(std::min<int64_t>(16, w - jj)),
                                  kc, d + jj, width);
          for (int64_t p = 0; p < kc; ++p) std::fill(d + p * width + w, d + (p + 1) * width, T(0));
          continue;
        }
      }
      for (int64_t jj = 0; jj < w; ++jj) {
        const T* s = b + (j + jj) * cs + p0 * rs;
        for (int64_t p = 0; p < kc; ++p) d[p * width + jj] = s[p * rs];
      }
      for (int64_t p = 0; p < kc; ++p) std::fill(d + p * width + w, d + (p + 1) * width, T(0));
    }
  }
}

/// A rows [i0, i0 + mc), depth [p0, p0 + kc) into panels of mr rows: panel r at
/// r * kc * tile_mr, laid out [p][i] with as many rows as the panel has (no padding).
template <class T>
void pack_a(const T* a, int64_t rs, int64_t cs, int64_t i0, int64_t mc, int64_t p0, int64_t kc,
            int64_t mr, int64_t tile_mr, T* dst) {
  for (int64_t r = 0; r * mr < mc; ++r) {
    int64_t i = i0 + r * mr, h = std::min<int64_t>(mr, i0 + mc - i);
    T* d = dst + r * kc * tile_mr;
    if constexpr (sizeof(T) == 4) {
      if (cs == 1 && h <= 16 && host_avx512f()) {
        transpose_rows_avx512(a + i * rs + p0, rs, int(h), kc, d, h);
        continue;
      }
    }
    if (cs == 1) {
      for (int64_t ii = 0; ii < h; ++ii) {
        const T* s = a + (i + ii) * rs + p0;
        for (int64_t p = 0; p < kc; ++p) d[p * h + ii] = s[p];
      }
    } else {
      if constexpr (sizeof(T) == 4) {
        if (rs == 1 && h <= 16 && host_avx512f()) { // a transposed A: its columns are contiguous
          copy_rows_avx512(a + i + p0 * cs, cs, int(h), kc, d);
          continue;
        }
      }
      for (int64_t p = 0; p < kc; ++p) {
        const T* s = a + i * rs + (p0 + p) * cs;
        for (int64_t ii = 0; ii < h; ++ii) d[p * h + ii] = s[ii * rs];
      }
    }
  }
}

/// The depth blocks of a product of depth k: `count` blocks of `size` steps (the last one
/// shorter), equal ones (K = 512 runs as 2 x 256, not 384 + 128). Shared by the blocked path and
/// gemm_pack_b, so a packed B has the blocks the path reads.
struct DepthBlocks {
  int64_t count = 1, size = 0;
};
DepthBlocks depth_blocks(int64_t k) {
  int64_t kc_max = std::min(kKc, std::max<int64_t>(k, 1));
  int64_t count = std::max<int64_t>(1, (k + kc_max - 1) / kc_max);
  return {count, (k + count - 1) / count};
}

/// The epilogue over `len` elements of one row, in place: the element-wise kernels shift their
/// last vector back over elements already computed when a range is not whole vectors, so the
/// range is split into whole vectors and a remainder shorter than one vector (which the kernel
/// runs through a stack copy).
void apply_epilogue(GemmEpilogueFn fn, void* row, int64_t len) {
  void* bufs[2] = {row, row};
  int64_t whole = len / 16 * 16;
  if (whole) fn(bufs, 0, whole);
  if (whole < len) fn(bufs, whole, len);
}

template <class T> void add_rows(T* c, const T* r, int64_t len) {
  for (int64_t i = 0; i < len; ++i) c[i] += r[i];
}

/// One task: C rows [m0, m1), columns [n0, n1) of batch t.
template <class T>
void run_block(const GemmCallT<T>& g, GemmIsa isa, int64_t t, int64_t m0, int64_t m1, int64_t n0,
               int64_t n1) {
  const GemmTile tile = gemm_tile(isa, type_of<T>());
  const int64_t nr = tile.nr(), lanes = tile.lanes;
  const T* a = g.a.p + (g.a_off ? g.a_off[t] : 0);
  const T* b = g.b.p + (g.b_off ? g.b_off[t] : 0);
  T* c = g.c + t * g.m * g.n;
  const T* res = g.residual ? g.residual + t * g.m * g.n : nullptr;
  const int64_t nc_cap = kNcPanels * nr;
  // Whole panels of rows per row block.
  const int64_t mc_cap =
      std::max<int64_t>(1, kMcBytes / (kKc * int64_t(sizeof(T))) / tile.mr * tile.mr);
  const DepthBlocks depth = depth_blocks(g.k);
  const int64_t kblocks = depth.count, kc_even = depth.size;
  // B packed once (gemm_pack_b): depth block at pc * b_width, column panel Q at Q * kc * nr.
  const T* pre = g.packed_b && g.packed_isa == isa ? g.packed_b : nullptr;
  const int64_t b_width = (g.n + nr - 1) / nr * nr;
  T* pb = pre ? nullptr
              : Scratch::grow<T>(
                    scratch.b, scratch.b_len,
                    std::size_t(kc_even * ((std::min(nc_cap, n1 - n0) + nr - 1) / nr * nr)));
  // Panels of equal height (60 rows run as 5 x 12, not 4 x 14 + 4), in equal row blocks of
  // whole panels (1024 rows as 4 x 266, not 3 x 336 + 16).
  int64_t rows = m1 - m0, panels = (rows + tile.mr - 1) / tile.mr;
  int64_t mr = (rows + panels - 1) / panels;
  // A packed B costs nothing per call, so it is read whatever the rows.
  bool direct = !pre && g.b.cs == 1 && rows <= kDirectBRows;
  MicroKernel kernels[2][3][3] = {}; // [full panel, last panel][vectors][GemmBMode]
  for (int nv = 1; nv <= 2; ++nv)
    for (GemmBMode mode : {GemmBMode::Packed, GemmBMode::Strided, GemmBMode::StridedMasked}) {
      if (direct != (mode != GemmBMode::Packed)) continue;
      kernels[0][nv][int(mode)] =
          gemm_micro_kernel(MicroSpec{isa, type_of<T>(), int(mr), nv, mode});
      if (rows % mr)
        kernels[1][nv][int(mode)] =
            gemm_micro_kernel(MicroSpec{isa, type_of<T>(), int(rows % mr), nv, mode});
    }
  int64_t mblocks = (rows + mc_cap - 1) / mc_cap;
  int64_t mc_even = ((rows + mblocks - 1) / mblocks + mr - 1) / mr * mr;
  T* pa =
      Scratch::grow<T>(scratch.a, scratch.a_len, std::size_t(kc_even * (mc_even / mr) * tile.mr));
  // The residual goes into the micro-kernel's store unless an activation kernel runs after it.
  bool late_residual = res && g.epilogue;
  MicroArgs args;
  args.ldc = g.n * int64_t(sizeof(T));
  for (int64_t jc = n0; jc < n1; jc += nc_cap) {
    int64_t nc = std::min(nc_cap, n1 - jc);
    for (int64_t pc = 0, blk = 0; blk < kblocks; ++blk) {
      int64_t kc = std::min(kc_even, g.k - pc);
      bool last = blk + 1 == kblocks;
      if (!direct && !pre) pack_b(b, g.b.rs, g.b.cs, pc, kc, jc, nc, tile, pb);
      for (int64_t ic = m0; ic < m1; ic += mc_even) {
        int64_t mc = std::min(mc_even, m1 - ic);
        pack_a(a, g.a.rs, g.a.cs, ic, mc, pc, kc, mr, int64_t(tile.mr), pa);
        uint64_t flags = (blk ? kGemmAccumulate : 0) | (last && g.bias ? kGemmBias : 0) |
                         (last && g.relu ? kGemmRelu : 0) |
                         (last && res && !late_residual ? kGemmResidual : 0);
        for (int64_t q = 0; q * nr < nc; ++q) {
          int64_t j = jc + q * nr, w = std::min<int64_t>(nr, jc + nc - j);
          int nv = w > lanes ? 2 : 1;
          int64_t rest = w - lanes * (nv - 1);
          GemmBMode mode = !direct         ? GemmBMode::Packed
                           : rest == lanes ? GemmBMode::Strided
                                           : GemmBMode::StridedMasked;
          args.b = direct ? b + pc * g.b.rs + j
                   : pre  ? pre + pc * b_width + j / nr * kc * nr
                          : pb + q * kc * nr;
          args.ldb = g.b.rs * int64_t(sizeof(T));
          args.mask = (uint64_t(1) << rest) - 1;
          args.bias = g.bias ? g.bias + j : nullptr;
          args.flags = flags;
          args.k = kc;
          for (int64_t r = 0; r * mr < mc; ++r) {
            int64_t i = ic + r * mr;
            args.a = pa + r * kc * tile.mr;
            args.c = c + i * g.n + j;
            args.r = res ? res + i * g.n + j : nullptr;
            kernels[i + mr > m1][nv][int(mode)](&args);
          }
        }
        if (last && g.epilogue)
          for (int64_t i = ic; i < ic + mc; ++i) {
            apply_epilogue(g.epilogue, c + i * g.n + jc, nc);
            if (late_residual) add_rows(c + i * g.n + jc, res + i * g.n + jc, nc);
          }
      }
      pc += kc;
    }
  }
}

/// One batch through the call's small kernel.
template <class T> void run_small(const GemmCallT<T>& g, int64_t t) {
  SmallArgs args;
  args.a = g.a.p + (g.a_off ? g.a_off[t] : 0);
  args.b = g.b.p + (g.b_off ? g.b_off[t] : 0);
  T* c = g.c + t * g.m * g.n;
  args.c = c;
  args.bias = g.bias;
  const T* res = g.residual ? g.residual + t * g.m * g.n : nullptr;
  args.r = res;
  g.small(&args);
  if (g.epilogue) {
    for (int64_t i = 0; i < g.m; ++i) apply_epilogue(g.epilogue, c + i * g.n, g.n);
    if (res) add_rows(c, res, g.m * g.n);
  }
}

template <class T> void gemm(const GemmCallT<T>& g, int threads) {
  if (g.batches <= 0 || g.m <= 0 || g.n <= 0) return;
  GemmIsa isa = g.isa == GemmIsa::None ? gemm_isa() : g.isa;
  if (isa == GemmIsa::None) fail(ErrorKind::Unsupported, "gemm: this host has no AVX2 or AVX-512");
  int64_t t = threads > 0 ? threads : num_threads();
  // Unless told how many, a thread takes at least kMinFlopsPerThread of work (waking one costs
  // microseconds).
  double flops = 2.0 * double(g.batches) * double(g.m) * double(g.n) * double(g.k);
  if (threads <= 0)
    t = std::max<int64_t>(1, std::min<int64_t>(t, int64_t(flops / kMinFlopsPerThread)));
  if (g.small) {
    auto run = [&](int64_t begin, int64_t end) {
      for (int64_t bt = begin; bt < end; ++bt) run_small(g, bt);
    };
    if (t <= 1 || g.batches <= 1)
      run(0, g.batches);
    else
      threads::parallel_for(g.batches, std::max<int64_t>(1, g.batches / t), run);
    return;
  }
  const GemmTile tile = gemm_tile(isa, type_of<T>());
  // Split the work into about `t` parts: whole batches first, then column stripes (whole
  // panels; each thread packs its own B and A), else row stripes (whole row panels).
  int64_t n_parts = 1, m_parts = 1;
  const int64_t n_panels = (g.n + tile.nr() - 1) / tile.nr(),
                m_panels = (g.m + tile.mr - 1) / tile.mr;
  if (g.batches < t) {
    int64_t per_batch = (t + g.batches - 1) / g.batches;
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
      int64_t n0 = std::min(g.n, n_panels * pn / n_parts * tile.nr());
      int64_t n1 = std::min(g.n, n_panels * (pn + 1) / n_parts * tile.nr());
      int64_t m0 = std::min(g.m, m_panels * pm / m_parts * tile.mr);
      int64_t m1 = std::min(g.m, m_panels * (pm + 1) / m_parts * tile.mr);
      if (n0 < n1 && m0 < m1) run_block(g, isa, bt, m0, m1, n0, n1);
    }
  };
  if (t <= 1 || tasks <= 1)
    run(0, tasks);
  else
    threads::parallel_for(tasks, std::max<int64_t>(1, tasks / t), run);
}

template <class T> int64_t packed_b_elements(const GemmCallT<T>& g, GemmIsa isa) {
  if (g.small || g.k <= 0 || g.n <= 0 || g.batches <= 0 || isa == GemmIsa::None) return 0;
  if (g.b_off &&
      std::any_of(g.b_off, g.b_off + g.batches, [&](int64_t off) { return off != g.b_off[0]; }))
    return 0;
  const int64_t nr = gemm_tile(isa, type_of<T>()).nr();
  return g.k * ((g.n + nr - 1) / nr * nr);
}

/// Every depth block of B with every column panel, as run_block's pack_b calls lay them out
/// (their column blocks start at whole panels, so panel Q of the matrix is panel Q here).
template <class T> void pack_whole_b(const GemmCallT<T>& g, GemmIsa isa, T* dst) {
  const GemmTile tile = gemm_tile(isa, type_of<T>());
  const int64_t width = (g.n + tile.nr() - 1) / tile.nr() * tile.nr();
  const T* b = g.b.p + (g.b_off ? g.b_off[0] : 0);
  const DepthBlocks depth = depth_blocks(g.k);
  for (int64_t pc = 0, blk = 0; blk < depth.count; ++blk) {
    int64_t kc = std::min(depth.size, g.k - pc);
    pack_b(b, g.b.rs, g.b.cs, pc, kc, 0, g.n, tile, dst + pc * width);
    pc += kc;
  }
}

} // namespace

void sgemm(const GemmCall& call, int threads) { gemm(call, threads); }
void dgemm(const DGemmCall& call, int threads) { gemm(call, threads); }

int64_t gemm_packed_b_elements(const GemmCall& call, GemmIsa isa) {
  return packed_b_elements(call, isa);
}
int64_t gemm_packed_b_elements(const DGemmCall& call, GemmIsa isa) {
  return packed_b_elements(call, isa);
}
void gemm_pack_b(const GemmCall& call, GemmIsa isa, float* dst) { pack_whole_b(call, isa, dst); }
void gemm_pack_b(const DGemmCall& call, GemmIsa isa, double* dst) { pack_whole_b(call, isa, dst); }

} // namespace rlx::jit
