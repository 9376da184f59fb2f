// jit/asmjit/gemm_kernels.cpp -- AVX-512 f32 GEMM micro-kernels generated with asmjit, one per
// (rows, column vectors), on first use, kept for the process.
//
// A kernel computes an mr x (16 * nv) tile of C from a packed A panel (k steps of mr floats) and
// a packed B panel (k steps of 16 * nv floats): per step, nv vector loads of B, then per row one
// broadcast of A and nv FMAs into the row's accumulators (up to 14 x 2 = 28 zmm). The depth loop
// is unrolled four times; B alternates between two register pairs and the broadcasts between
// two registers so loads run ahead of the FMAs that use them. At the end the tile is optionally
// added to C, a per-column bias added and relu applied, then stored; the last vector of each
// row is stored under the opmask `mask` (edge columns).
#include "../gemm.hpp"

#include "rlx/error.hpp"

#include <asmjit/x86.h>

#include <array>
#include <atomic>
#include <cstddef>
#include <mutex>

namespace rlx::jit {

namespace {

using namespace asmjit;

asmjit::JitRuntime& runtime() {
  static asmjit::JitRuntime rt;
  return rt;
}

MicroKernel generate(int mr, int nv, GemmBMode mode) {
  CodeHolder code;
  code.init(runtime().environment());
  x86::Assembler as(&code);
  using x86::ptr;
  const x86::Gp args = x86::rdi, kk = x86::rax, pa = x86::rsi, pb = x86::rdx, pc = x86::rcx,
                ldc = x86::r8, row = x86::r9, unrolled = x86::r10, flags = x86::r11;
  auto acc = [&](int i, int v) { return x86::zmm(i * nv + v); };
  // With 28 accumulators the B registers are zmm28/29 only; smaller tiles double-buffer B
  // (odd steps below zmm28).
  const int acc_count = mr * nv;
  auto breg = [&](int step, int v) {
    int base = acc_count <= 28 - 2 * nv ? 28 - 2 * nv * (step & 1) : 28;
    return x86::zmm(base + v);
  };
  auto areg = [&](int i) { return x86::zmm(30 + (i & 1)); };
  const int a_step = mr * 4, b_step = nv * 64;
  const bool strided = mode != GemmBMode::Packed, masked = mode == GemmBMode::StridedMasked;
  const x86::Gp ldb = x86::r11, ldb3 = x86::r9; // strided B: bytes per row, three rows
  const x86::KReg mask = x86::k1;

  // Fetch the C tile while the depth loop runs (it is read, or written, at the end).
  as.mov(pc, ptr(args, offsetof(MicroArgs, c)));
  as.mov(ldc, ptr(args, offsetof(MicroArgs, ldc)));
  as.mov(row, pc);
  for (int i = 0; i < mr; ++i) {
    for (int v = 0; v < nv; ++v) as.prefetcht0(ptr(row, v * 64));
    if (i + 1 < mr) as.add(row, ldc);
  }
  as.mov(kk, ptr(args, offsetof(MicroArgs, k)));
  as.mov(pa, ptr(args, offsetof(MicroArgs, a)));
  as.mov(pb, ptr(args, offsetof(MicroArgs, b)));
  as.kmovw(mask, x86::word_ptr(args, offsetof(MicroArgs, mask)));
  if (strided) {
    as.mov(ldb, ptr(args, offsetof(MicroArgs, ldb)));
    as.lea(ldb3, ptr(ldb, ldb, 1));
  }
  for (int i = 0; i < acc_count; ++i) as.vxorps(x86::zmm(i), x86::zmm(i), x86::zmm(i));

  // Row u of the B panel: packed rows are b_step bytes apart, strided ones ldb.
  auto b_row = [&](int u, int v) {
    if (!strided) return ptr(pb, u * b_step + v * 64);
    if (u == 0) return ptr(pb, v * 64);
    if (u == 1) return ptr(pb, ldb, 0, v * 64);
    if (u == 2) return ptr(pb, ldb, 1, v * 64);
    return ptr(pb, ldb3, 0, v * 64);
  };
  auto step = [&](int u) { // one depth step at offset u steps from pa / pb
    for (int v = 0; v < nv; ++v) {
      if (masked && v + 1 == nv)
        as.k(mask).z().vmovups(breg(u, v), b_row(u, v));
      else
        as.vmovups(breg(u, v), b_row(u, v));
    }
    for (int i = 0; i < mr; ++i) {
      as.vbroadcastss(areg(i), x86::dword_ptr(pa, u * a_step + i * 4));
      for (int v = 0; v < nv; ++v) as.vfmadd231ps(acc(i, v), breg(u, v), areg(i));
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
  const x86::Zmm tmp = x86::zmm30, zero = x86::zmm31;
  // C += tile
  Label no_acc = as.newLabel(), no_bias = as.newLabel(), no_relu = as.newLabel();
  as.test(flags, kGemmAccumulate);
  as.jz(no_acc);
  as.mov(row, pc);
  for (int i = 0; i < mr; ++i) {
    for (int v = 0; v < nv; ++v) {
      if (v + 1 < nv) {
        as.vaddps(acc(i, v), acc(i, v), ptr(row, v * 64));
      } else {
        as.k(mask).z().vmovups(tmp, ptr(row, v * 64));
        as.vaddps(acc(i, v), acc(i, v), tmp);
      }
    }
    if (i + 1 < mr) as.add(row, ldc);
  }
  as.bind(no_acc);
  // + bias[j]
  as.test(flags, kGemmBias);
  as.jz(no_bias);
  as.mov(row, ptr(args, offsetof(MicroArgs, bias)));
  for (int v = 0; v < nv; ++v) {
    x86::Zmm bv = x86::zmm(28 + v);
    if (v + 1 < nv)
      as.vmovups(bv, ptr(row, v * 64));
    else
      as.k(mask).z().vmovups(bv, ptr(row, v * 64));
    for (int i = 0; i < mr; ++i) as.vaddps(acc(i, v), acc(i, v), bv);
  }
  as.bind(no_bias);
  as.test(flags, kGemmRelu);
  as.jz(no_relu);
  as.vxorps(zero, zero, zero);
  for (int i = 0; i < acc_count; ++i) as.vmaxps(x86::zmm(i), x86::zmm(i), zero);
  as.bind(no_relu);
  as.mov(row, pc);
  for (int i = 0; i < mr; ++i) {
    for (int v = 0; v < nv; ++v) {
      if (v + 1 < nv)
        as.vmovups(ptr(row, v * 64), acc(i, v));
      else
        as.k(mask).vmovups(ptr(row, v * 64), acc(i, v));
    }
    if (i + 1 < mr) as.add(row, ldc);
  }
  as.vzeroupper();
  as.ret();

  MicroKernel fn = nullptr;
  if (runtime().add(&fn, &code) != kErrorOk)
    fail(ErrorKind::Unsupported, "gemm: asmjit could not add the micro-kernel for ", mr, "x",
         16 * nv);
  return fn;
}

} // namespace

bool gemm_supported() {
  static const bool ok = CpuInfo::host().hasFeature(CpuFeatures::X86::kAVX512_F);
  return ok;
}

MicroKernel gemm_micro_kernel(int mr, int vectors, GemmBMode mode) {
  if (mr < 1 || mr > kGemmMr || vectors < 1 || vectors > kGemmNr / 16)
    fail(ErrorKind::Runtime, "gemm: no micro-kernel for ", mr, " rows and ", vectors, " vectors");
  if (!gemm_supported()) fail(ErrorKind::Unsupported, "gemm: this host has no AVX-512F");
  // Generated once under the mutex; later lookups read the atomic without locking.
  static std::mutex m;
  constexpr int kModes = 3;
  static std::array<std::atomic<MicroKernel>, kGemmMr*(kGemmNr / 16) * kModes> cache{};
  std::atomic<MicroKernel>& slot =
      cache[std::size_t(((mr - 1) * (kGemmNr / 16) + vectors - 1) * kModes + int(mode))];
  if (MicroKernel fn = slot.load(std::memory_order_acquire)) return fn;
  std::lock_guard lock(m);
  if (!slot.load(std::memory_order_relaxed))
    slot.store(generate(mr, vectors, mode), std::memory_order_release);
  return slot.load(std::memory_order_relaxed);
}

} // namespace rlx::jit
