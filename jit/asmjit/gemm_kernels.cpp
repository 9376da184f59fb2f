// jit/asmjit/gemm_kernels.cpp -- GEMM kernels generated with asmjit for AVX-512 (zmm, opmasks)
// or AVX2 (ymm, FMA3, vmaskmov), f32 or f64: micro-kernels, one per (rows, column vectors, how
// B is read), and kernels for one whole small product; generated on first use, kept for the
// process. Which ISA the GEMM uses (the host's best, or one forced for tests) lives here too.
//
// A micro-kernel computes an mr x (lanes * nv) tile of C from a packed A panel (k steps of mr
// elements) and a B panel (k steps of lanes * nv elements, packed or B's rows in place): per
// step, nv vector loads of B, then per row one broadcast of A and nv FMAs into the row's
// accumulators (AVX-512: up to 14 x 2 = 28 zmm; AVX2: 6 x 2 = 12 ymm). The depth loop is
// unrolled four times; on AVX-512 B alternates between two register pairs and the broadcasts
// between two registers when there is room. At the end the tile is optionally added to C, a
// per-column bias added, relu applied and a residual added, then stored; the last vector of
// each row is loaded and stored under a mask (an opmask, or on AVX2 a ymm of lanes taken from a
// table embedded after the code).
//
// A small kernel (gemm_small_kernel) does the same for every tile of one product, unrolled,
// with A and B read where they are: the shape and strides are constants, so every address is a
// base register plus a displacement, each depth loop has a constant trip count and its
// remainder is unrolled, and the masks are immediates. With one vector of columns the AVX-512
// FMAs take A from memory with an embedded broadcast ({1to16}).
#include "../gemm.hpp"

#include "rlx/error.hpp"

#include <asmjit/x86.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string_view>
#include <tuple>

namespace rlx::jit {

namespace {

using namespace asmjit;

asmjit::JitRuntime& runtime() {
  static asmjit::JitRuntime rt;
  return rt;
}

/// Instructions of one ISA and element type.
struct Emit {
  x86::Assembler& as;
  GemmIsa isa;
  GemmType type;

  bool zmm() const { return isa == GemmIsa::Avx512; }
  bool f64() const { return type == GemmType::F64; }
  int es() const { return f64() ? 8 : 4; }
  int vbytes() const { return zmm() ? 64 : 32; }
  int lanes() const { return vbytes() / es(); }
  x86::Vec v(int i) const {
    return zmm() ? x86::Vec(x86::zmm(uint32_t(i))) : x86::Vec(x86::ymm(uint32_t(i)));
  }
  /// AVX2: the register holding the lanes of the last vector.
  x86::Vec ymask() const { return x86::ymm(15); }
  x86::Mem elem(const x86::Gp& base, int64_t disp) const {
    return f64() ? x86::qword_ptr(base, int32_t(disp)) : x86::dword_ptr(base, int32_t(disp));
  }

  void load(const x86::Vec& d, const x86::Mem& m) {
    if (f64())
      as.vmovupd(d, m);
    else
      as.vmovups(d, m);
  }
  void store(const x86::Mem& m, const x86::Vec& s) {
    if (f64())
      as.vmovupd(m, s);
    else
      as.vmovups(m, s);
  }
  void load_masked(const x86::Vec& d, const x86::Mem& m) {
    if (zmm()) {
      if (f64())
        as.k(x86::k1).z().vmovupd(d, m);
      else
        as.k(x86::k1).z().vmovups(d, m);
    } else if (f64()) {
      as.vmaskmovpd(d, ymask(), m);
    } else {
      as.vmaskmovps(d, ymask(), m);
    }
  }
  void store_masked(const x86::Mem& m, const x86::Vec& s) {
    if (zmm()) {
      if (f64())
        as.k(x86::k1).vmovupd(m, s);
      else
        as.k(x86::k1).vmovups(m, s);
    } else if (f64()) {
      as.vmaskmovpd(m, ymask(), s);
    } else {
      as.vmaskmovps(m, ymask(), s);
    }
  }
  void load_maybe_masked(const x86::Vec& d, const x86::Mem& m, bool masked) {
    if (masked)
      load_masked(d, m);
    else
      load(d, m);
  }
  void broadcast(const x86::Vec& d, const x86::Mem& m) {
    if (f64())
      as.vbroadcastsd(d, m);
    else
      as.vbroadcastss(d, m);
  }
  void fma(const x86::Vec& acc, const x86::Vec& b, const x86::Vec& a) {
    if (f64())
      as.vfmadd231pd(acc, b, a);
    else
      as.vfmadd231ps(acc, b, a);
  }
  /// acc += b * (the element at m, broadcast in the instruction): AVX-512 only.
  void fma_broadcast(const x86::Vec& acc, const x86::Vec& b, x86::Mem m) {
    if (f64())
      as.vfmadd231pd(acc, b, m._1to8());
    else
      as.vfmadd231ps(acc, b, m._1to16());
  }
  void add(const x86::Vec& d, const x86::Vec& a, const x86::Vec& b) {
    if (f64())
      as.vaddpd(d, a, b);
    else
      as.vaddps(d, a, b);
  }
  void add(const x86::Vec& d, const x86::Vec& a, const x86::Mem& b) {
    if (f64())
      as.vaddpd(d, a, b);
    else
      as.vaddps(d, a, b);
  }
  void max(const x86::Vec& d, const x86::Vec& a, const x86::Vec& b) {
    if (f64())
      as.vmaxpd(d, a, b);
    else
      as.vmaxps(d, a, b);
  }
  void zero(const x86::Vec& d) { as.vxorps(d, d, d); }

  /// AVX2 masks: `lanes` of -1 then `lanes` of 0, as elements of es() bytes, bound at `table`
  /// after the code; the mask of c lanes is the vector at table + (lanes - c) * es.
  void embed_mask_table(const Label& table) {
    as.align(AlignMode::kData, 32);
    as.bind(table);
    std::array<uint8_t, 64> bytes{};
    std::memset(bytes.data(), 0xff, 32);
    as.embed(bytes.data(), 64);
  }
};

MicroKernel add_to_runtime(CodeHolder& code, std::string_view what) {
  MicroKernel fn = nullptr;
  if (runtime().add(&fn, &code) != kErrorOk)
    fail(ErrorKind::Unsupported, "gemm: asmjit could not add the ", what);
  return fn;
}

MicroKernel generate(const MicroSpec& s) {
  CodeHolder code;
  code.init(runtime().environment());
  x86::Assembler as(&code);
  Emit e{as, s.isa, s.type};
  using x86::ptr;
  const int mr = s.mr, nv = s.vectors;
  const x86::Gp args = x86::rdi, kk = x86::rax, pa = x86::rsi, pb = x86::rdx, pc = x86::rcx,
                ldc = x86::r8, row = x86::r9, unrolled = x86::r10, flags = x86::r11;
  auto acc = [&](int i, int v) { return e.v(i * nv + v); };
  const int acc_count = mr * nv;
  // AVX-512: with 28 accumulators the B registers are zmm28/29 only; smaller tiles
  // double-buffer B (odd steps below zmm28); broadcasts alternate zmm30/31. AVX2: B in
  // ymm12/13, broadcasts in ymm14, the mask in ymm15.
  auto breg = [&](int step, int v) {
    if (!e.zmm()) return e.v(12 + v);
    int base = acc_count <= 28 - 2 * nv ? 28 - 2 * nv * (step & 1) : 28;
    return e.v(base + v);
  };
  auto areg = [&](int i) { return e.zmm() ? e.v(30 + (i & 1)) : e.v(14); };
  const int a_step = mr * e.es(), b_step = nv * e.vbytes();
  const bool strided = s.mode != GemmBMode::Packed, masked = s.mode == GemmBMode::StridedMasked;
  const x86::Gp ldb = x86::r11, ldb3 = x86::r9; // strided B: bytes per row, three rows
  Label table = as.newLabel();

  // The mask of the last vector: an opmask, or (AVX2) the table's row for popcount(mask) lanes.
  if (e.zmm()) {
    as.kmovw(x86::k1, x86::word_ptr(args, offsetof(MicroArgs, mask)));
  } else {
    as.mov(unrolled, ptr(args, offsetof(MicroArgs, mask)));
    as.popcnt(unrolled, unrolled);
    as.neg(unrolled);
    as.lea(kk, ptr(table, e.lanes() * e.es()));
    as.vmovdqu(e.ymask(), ptr(kk, unrolled, e.f64() ? 3 : 2));
  }
  // Fetch the C tile while the depth loop runs (it is read, or written, at the end).
  as.mov(pc, ptr(args, offsetof(MicroArgs, c)));
  as.mov(ldc, ptr(args, offsetof(MicroArgs, ldc)));
  as.mov(row, pc);
  for (int i = 0; i < mr; ++i) {
    for (int v = 0; v < nv; ++v) as.prefetcht0(ptr(row, v * e.vbytes()));
    if (i + 1 < mr) as.add(row, ldc);
  }
  as.mov(kk, ptr(args, offsetof(MicroArgs, k)));
  as.mov(pa, ptr(args, offsetof(MicroArgs, a)));
  as.mov(pb, ptr(args, offsetof(MicroArgs, b)));
  if (strided) {
    as.mov(ldb, ptr(args, offsetof(MicroArgs, ldb)));
    as.lea(ldb3, ptr(ldb, ldb, 1));
  }
  for (int i = 0; i < acc_count; ++i) e.zero(e.v(i));

  // Row u of the B panel: packed rows are b_step bytes apart, strided ones ldb.
  auto b_row = [&](int u, int v) {
    int disp = v * e.vbytes();
    if (!strided) return ptr(pb, u * b_step + disp);
    if (u == 0) return ptr(pb, disp);
    if (u == 1) return ptr(pb, ldb, 0, disp);
    if (u == 2) return ptr(pb, ldb, 1, disp);
    return ptr(pb, ldb3, 0, disp);
  };
  auto step = [&](int u) { // one depth step at offset u steps from pa / pb
    for (int v = 0; v < nv; ++v)
      e.load_maybe_masked(breg(u, v), b_row(u, v), masked && v + 1 == nv);
    for (int i = 0; i < mr; ++i) {
      e.broadcast(areg(i), e.elem(pa, u * a_step + i * e.es()));
      for (int v = 0; v < nv; ++v) e.fma(acc(i, v), breg(u, v), areg(i));
    }
  };
  Label main_loop = as.newLabel(), tail = as.newLabel(), tail_loop = as.newLabel(),
        store = as.newLabel();
  as.mov(unrolled, kk);
  as.shr(unrolled, 2);
  as.and_(kk, 3);
  as.test(unrolled, unrolled);
  as.jz(tail);
  as.bind(main_loop);
  as.prefetcht0(ptr(pa, 4 * a_step + 256));
  for (int u = 0; u < 4; ++u) step(u);
  as.add(pa, 4 * a_step);
  if (strided)
    as.lea(pb, ptr(pb, ldb, 2));
  else
    as.add(pb, 4 * b_step);
  as.dec(unrolled);
  as.jnz(main_loop);
  as.bind(tail);
  as.test(kk, kk);
  as.jz(store);
  as.bind(tail_loop);
  step(0);
  as.add(pa, a_step);
  if (strided)
    as.add(pb, ldb);
  else
    as.add(pb, b_step);
  as.dec(kk);
  as.jnz(tail_loop);

  as.bind(store);
  as.mov(flags, ptr(args, offsetof(MicroArgs, flags)));
  const x86::Vec tmp = e.zmm() ? e.v(30) : e.v(12), zero = e.zmm() ? e.v(31) : e.v(13);
  // Adds the tile at `base` (rows ldc apart) to the accumulators.
  auto add_tile = [&](const x86::Gp& base) {
    as.mov(row, base);
    for (int i = 0; i < mr; ++i) {
      for (int v = 0; v < nv; ++v) {
        if (v + 1 < nv) {
          e.add(acc(i, v), acc(i, v), ptr(row, v * e.vbytes()));
        } else {
          e.load_masked(tmp, ptr(row, v * e.vbytes()));
          e.add(acc(i, v), acc(i, v), tmp);
        }
      }
      if (i + 1 < mr) as.add(row, ldc);
    }
  };
  Label no_acc = as.newLabel(), no_bias = as.newLabel(), no_relu = as.newLabel(),
        no_residual = as.newLabel();
  as.test(flags, kGemmAccumulate);
  as.jz(no_acc);
  add_tile(pc);
  as.bind(no_acc);
  // + bias[j]
  as.test(flags, kGemmBias);
  as.jz(no_bias);
  as.mov(row, ptr(args, offsetof(MicroArgs, bias)));
  for (int v = 0; v < nv; ++v) {
    x86::Vec bv = e.zmm() ? e.v(28 + v) : e.v(12 + v);
    e.load_maybe_masked(bv, ptr(row, v * e.vbytes()), v + 1 == nv);
    for (int i = 0; i < mr; ++i) e.add(acc(i, v), acc(i, v), bv);
  }
  as.bind(no_bias);
  as.test(flags, kGemmRelu);
  as.jz(no_relu);
  e.zero(zero);
  for (int i = 0; i < acc_count; ++i) e.max(e.v(i), e.v(i), zero);
  as.bind(no_relu);
  as.test(flags, kGemmResidual);
  as.jz(no_residual);
  as.mov(kk, ptr(args, offsetof(MicroArgs, r)));
  add_tile(kk);
  as.bind(no_residual);
  as.mov(row, pc);
  for (int i = 0; i < mr; ++i) {
    for (int v = 0; v < nv; ++v) {
      if (v + 1 < nv)
        e.store(ptr(row, v * e.vbytes()), acc(i, v));
      else
        e.store_masked(ptr(row, v * e.vbytes()), acc(i, v));
    }
    if (i + 1 < mr) as.add(row, ldc);
  }
  as.vzeroupper();
  as.ret();
  if (!e.zmm()) e.embed_mask_table(table);
  return add_to_runtime(code, "micro-kernel");
}

/// What a small kernel is specialized for.
struct SmallSpec {
  GemmIsa isa = GemmIsa::Avx512;
  GemmType type = GemmType::F32;
  int64_t m = 0, n = 0, k = 0, a_rs = 0, a_cs = 0, b_rs = 0;
  bool bias = false, relu = false, residual = false;
  auto key() const {
    return std::tuple(isa, type, m, n, k, a_rs, a_cs, b_rs, bias, relu, residual);
  }
  bool operator<(const SmallSpec& o) const { return key() < o.key(); }
};

SmallKernel generate_small(const SmallSpec& s) {
  CodeHolder code;
  code.init(runtime().environment());
  x86::Assembler as(&code);
  Emit e{as, s.isa, s.type};
  using x86::ptr;
  const x86::Gp args = x86::rdi, a = x86::r8, b = x86::r9, c = x86::r10, bias = x86::r11,
                res = x86::rcx, pa = x86::rsi, pb = x86::rdx, count = x86::rax, tile = x86::rsi;
  as.mov(a, ptr(args, offsetof(SmallArgs, a)));
  as.mov(b, ptr(args, offsetof(SmallArgs, b)));
  as.mov(c, ptr(args, offsetof(SmallArgs, c)));
  if (s.bias) as.mov(bias, ptr(args, offsetof(SmallArgs, bias)));
  if (s.residual) as.mov(res, ptr(args, offsetof(SmallArgs, r)));
  const int64_t es = e.es(), L = e.lanes(), vb = e.vbytes();
  const int64_t ldc = s.n * es;
  const int acc_budget = e.zmm() ? 28 : 12;
  Label table = as.newLabel();
  // Column panels of two vectors (the last one narrower), rows in panels of equal height.
  for (int64_t j0 = 0; j0 < s.n; j0 += 2 * L) {
    const int64_t w = std::min(2 * L, s.n - j0);
    const int nv = int((w + L - 1) / L);
    const int64_t last_lanes = w - (nv - 1) * L;
    const bool masked = last_lanes < L;
    const int mr_max = acc_budget / nv;
    const int64_t panels = (s.m + mr_max - 1) / mr_max, height = (s.m + panels - 1) / panels;
    if (masked) {
      if (e.zmm()) {
        as.mov(count.r32(), uint32_t((uint64_t(1) << last_lanes) - 1));
        as.kmovw(x86::k1, count.r32());
      } else {
        as.vmovdqu(e.ymask(), ptr(table, int32_t((L - last_lanes) * es)));
      }
    }
    // AVX-512 with one vector: the FMAs broadcast A from memory; else B and a broadcast
    // register as in the micro-kernel.
    const bool embedded = e.zmm() && nv == 1;
    for (int64_t i0 = 0; i0 < s.m; i0 += height) {
      const int mr = int(std::min(height, s.m - i0));
      const int accs = mr * nv;
      auto acc = [&](int i, int v) { return e.v(i * nv + v); };
      auto breg = [&](int u, int v) {
        if (!e.zmm()) return e.v(12 + v);
        int base = accs <= 28 - 2 * nv ? 28 - 2 * nv * (u & 1) : 28;
        return e.v(base + v);
      };
      auto areg = [&](int i) { return e.zmm() ? e.v(30 + (i & 1)) : e.v(14); };
      for (int i = 0; i < accs; ++i) e.zero(e.v(i));
      as.lea(pa, ptr(a, int32_t(i0 * s.a_rs * es)));
      as.lea(pb, ptr(b, int32_t(j0 * es)));
      auto step = [&](int u) {
        for (int v = 0; v < nv; ++v)
          e.load_maybe_masked(breg(u, v), ptr(pb, int32_t(u * s.b_rs * es + v * vb)),
                              masked && v + 1 == nv);
        for (int i = 0; i < mr; ++i) {
          x86::Mem ai = e.elem(pa, (i * s.a_rs + u * s.a_cs) * es);
          if (embedded) {
            e.fma_broadcast(acc(i, 0), breg(u, 0), ai);
          } else {
            e.broadcast(areg(i), ai);
            for (int v = 0; v < nv; ++v) e.fma(acc(i, v), breg(u, v), areg(i));
          }
        }
      };
      const int64_t loops = s.k / 4, rest = s.k % 4;
      if (loops > 0) {
        Label loop = as.newLabel();
        as.mov(count, loops);
        as.bind(loop);
        for (int u = 0; u < 4; ++u) step(u);
        as.add(pa, int32_t(4 * s.a_cs * es));
        as.add(pb, int32_t(4 * s.b_rs * es));
        as.dec(count);
        as.jnz(loop);
      }
      for (int u = 0; u < rest; ++u) step(u);
      // Epilogue: + bias, relu, + residual, store.
      const x86::Vec tmp = e.zmm() ? e.v(30) : e.v(12);
      if (s.bias)
        for (int v = 0; v < nv; ++v) {
          x86::Vec bv = e.zmm() ? e.v(28 + v) : e.v(12 + v);
          e.load_maybe_masked(bv, ptr(bias, int32_t(j0 * es + v * vb)), masked && v + 1 == nv);
          for (int i = 0; i < mr; ++i) e.add(acc(i, v), acc(i, v), bv);
        }
      if (s.relu) {
        const x86::Vec zero = e.zmm() ? e.v(31) : e.v(13);
        e.zero(zero);
        for (int i = 0; i < accs; ++i) e.max(e.v(i), e.v(i), zero);
      }
      const int32_t tile_off = int32_t(i0 * ldc + j0 * es);
      if (s.residual) {
        as.lea(tile, ptr(res, tile_off));
        for (int i = 0; i < mr; ++i)
          for (int v = 0; v < nv; ++v) {
            x86::Mem r = ptr(tile, int32_t(i * ldc + v * vb));
            if (masked && v + 1 == nv) {
              e.load_masked(tmp, r);
              e.add(acc(i, v), acc(i, v), tmp);
            } else {
              e.add(acc(i, v), acc(i, v), r);
            }
          }
      }
      as.lea(tile, ptr(c, tile_off));
      for (int i = 0; i < mr; ++i)
        for (int v = 0; v < nv; ++v) {
          x86::Mem d = ptr(tile, int32_t(i * ldc + v * vb));
          if (masked && v + 1 == nv)
            e.store_masked(d, acc(i, v));
          else
            e.store(d, acc(i, v));
        }
    }
  }
  as.vzeroupper();
  as.ret();
  if (!e.zmm()) e.embed_mask_table(table);
  return reinterpret_cast<SmallKernel>(add_to_runtime(code, "small-product kernel"));
}

GemmIsa host_isa() {
  static const GemmIsa isa = [] {
    const CpuInfo& cpu = CpuInfo::host();
    if (cpu.hasFeature(CpuFeatures::X86::kAVX512_F)) return GemmIsa::Avx512;
    if (cpu.hasFeature(CpuFeatures::X86::kAVX2) && cpu.hasFeature(CpuFeatures::X86::kFMA) &&
        cpu.hasFeature(CpuFeatures::X86::kPOPCNT))
      return GemmIsa::Avx2;
    return GemmIsa::None;
  }();
  return isa;
}

/// The forced ISA (None: none forced), from RLX_GEMM_ISA at first use, then set_gemm_isa.
std::atomic<GemmIsa>& forced_isa() {
  static std::atomic<GemmIsa> forced = [] {
    const char* env = std::getenv("RLX_GEMM_ISA");
    std::string_view v = env ? env : "";
    if (v == "avx2" && host_isa() != GemmIsa::None) return GemmIsa::Avx2;
    if (v == "avx512" && host_isa() == GemmIsa::Avx512) return GemmIsa::Avx512;
    return GemmIsa::None;
  }();
  return forced;
}

const char* isa_name(GemmIsa isa) {
  return isa == GemmIsa::Avx512 ? "AVX-512" : isa == GemmIsa::Avx2 ? "AVX2" : "no SIMD";
}

void check_isa(GemmIsa isa) {
  if (isa == GemmIsa::None || int(isa) > int(host_isa()))
    fail(ErrorKind::Unsupported, "gemm: this host cannot run ", isa_name(isa), " kernels (it has ",
         isa_name(host_isa()), ")");
}

template <class T>
SmallKernel small_kernel(const GemmCallT<T>& call, GemmType type, bool bias, bool residual) {
  GemmIsa isa = call.isa == GemmIsa::None ? gemm_isa() : call.isa;
  if (isa == GemmIsa::None) return nullptr;
  SmallSpec s;
  s.isa = isa;
  s.type = type;
  s.m = call.m;
  s.n = call.n;
  s.k = call.k;
  s.a_rs = call.a.rs;
  s.a_cs = call.a.cs;
  s.b_rs = call.b.rs;
  s.bias = bias;
  s.relu = call.relu;
  s.residual = residual && call.epilogue == nullptr;
  const int64_t es = int64_t(sizeof(T));
  // Small: both operands fit in L1 (48 KiB here) with room to spare, and so does C.
  constexpr int64_t kMaxBytes = 40 << 10;
  if (call.m <= 0 || call.n <= 0 || call.k < 0 || (call.b.cs != 1 && call.n != 1)) return nullptr;
  if ((call.m * call.k + call.k * call.n) * es > kMaxBytes || call.m * call.n * es > kMaxBytes)
    return nullptr;
  // Every displacement must fit in 32 bits (strides of a view may be large).
  int64_t reach = (call.m * std::abs(call.a.rs) + (call.k + 4) * std::abs(call.a.cs) +
                   (call.k + 4) * std::abs(call.b.rs) + call.n) *
                  es;
  if (reach >= (int64_t(1) << 30)) return nullptr;
  static std::mutex mu;
  static std::map<SmallSpec, SmallKernel> cache;
  std::lock_guard lock(mu);
  auto it = cache.find(s);
  if (it != cache.end()) return it->second;
  SmallKernel fn = generate_small(s);
  cache.emplace(s, fn);
  return fn;
}

} // namespace

GemmIsa gemm_host_isa() { return host_isa(); }

GemmIsa gemm_isa() {
  GemmIsa f = forced_isa().load(std::memory_order_relaxed);
  return f != GemmIsa::None ? f : host_isa();
}

void set_gemm_isa(GemmIsa isa) {
  if (isa != GemmIsa::None) check_isa(isa);
  forced_isa().store(isa, std::memory_order_relaxed);
}

bool gemm_supported() { return gemm_isa() != GemmIsa::None; }

GemmTile gemm_tile(GemmIsa isa, GemmType type) {
  int lanes = (isa == GemmIsa::Avx512 ? 64 : 32) / (type == GemmType::F64 ? 8 : 4);
  return {isa == GemmIsa::Avx512 ? kGemmMr : 6, lanes};
}

MicroKernel gemm_micro_kernel(const MicroSpec& s) {
  check_isa(s.isa);
  GemmTile tile = gemm_tile(s.isa, s.type);
  if (s.mr < 1 || s.mr > tile.mr || s.vectors < 1 || s.vectors > 2)
    fail(ErrorKind::Runtime, "gemm: no micro-kernel for ", s.mr, " rows and ", s.vectors,
         " vectors");
  // Generated once under the mutex; later lookups read the atomic without locking.
  static std::mutex m;
  constexpr int kModes = 3;
  static std::array<std::atomic<MicroKernel>, 2 * 2 * kGemmMr * 2 * kModes> cache{};
  std::size_t index =
      ((((std::size_t(s.isa == GemmIsa::Avx512) * 2 + std::size_t(s.type)) * kGemmMr +
         std::size_t(s.mr - 1)) *
            2 +
        std::size_t(s.vectors - 1)) *
           kModes +
       std::size_t(s.mode));
  std::atomic<MicroKernel>& slot = cache[index];
  if (MicroKernel fn = slot.load(std::memory_order_acquire)) return fn;
  std::lock_guard lock(m);
  if (!slot.load(std::memory_order_relaxed)) slot.store(generate(s), std::memory_order_release);
  return slot.load(std::memory_order_relaxed);
}

MicroKernel gemm_micro_kernel(int mr, int vectors, GemmBMode mode) {
  return gemm_micro_kernel(MicroSpec{GemmIsa::Avx512, GemmType::F32, mr, vectors, mode});
}

SmallKernel gemm_small_kernel(const GemmCall& call, bool bias, bool residual) {
  return small_kernel(call, GemmType::F32, bias, residual);
}
SmallKernel gemm_small_kernel(const DGemmCall& call, bool bias, bool residual) {
  return small_kernel(call, GemmType::F64, bias, residual);
}

} // namespace rlx::jit
