// jit/gemm.hpp -- the JIT's GEMM (f32 and f64): packed panels and micro-kernels generated with
// asmjit for AVX-512 or AVX2 (jit/asmjit/gemm_kernels.cpp), blocked for the caches and split
// over the one thread pool (jit/gemm.cpp), and kernels specialized for a whole small product.
// No LLVM or asmjit types here.
#pragma once

#include <cstdint>

namespace rlx::jit {

/// The instruction sets the GEMM generates code for (None: the host has neither; matmul then
/// stays on the runtime kernels).
enum class GemmIsa : uint8_t { None, Avx2, Avx512 };

/// The element types the GEMM computes in.
enum class GemmType : uint8_t { F32, F64 };

/// The register tile of the generated micro-kernels for an ISA and type: up to `mr` rows by
/// 2 vectors of `lanes` elements (AVX-512: 14 x 32 f32 / 14 x 16 f64, 28 of the 32 zmm
/// accumulating; AVX2: 6 x 16 f32 / 6 x 8 f64, 12 of the 16 ymm accumulating).
struct GemmTile {
  int mr = 14, lanes = 16;
  int nr() const { return 2 * lanes; }
};
GemmTile gemm_tile(GemmIsa isa, GemmType type);

/// The AVX-512 f32 register tile: kGemmMr rows by kGemmNr columns of C.
inline constexpr int kGemmMr = 14;
inline constexpr int kGemmNr = 32;

/// What a micro-kernel reads and does (the generated code loads these fields; keep the layout).
/// Pointers are to elements of the kernel's type.
struct MicroArgs {
  int64_t k = 0;              ///< depth: packed A holds k steps of mr elements, packed B of nr
  const void* a = nullptr;    ///< packed A panel: a[p * mr + i]
  const void* b = nullptr;    ///< packed B panel: b[p * nr + j] (nr = lanes * vectors)
  void* c = nullptr;          ///< C tile, row i at c + i * ldc bytes
  int64_t ldc = 0;            ///< bytes between C rows (and residual rows)
  const void* bias = nullptr; ///< per-column bias (kGemmBias), bias[j]
  int64_t ldb = 0;            ///< GemmBMode::Strided*: bytes between B rows
  uint64_t flags = 0;         ///< kGemmAccumulate | kGemmBias | kGemmRelu | kGemmResidual
  uint64_t mask = 0xffff;     ///< lanes of the last vector of each row stored (and loaded): the
                              ///< low bits, (1 << lanes) - 1
  const void* r = nullptr;    ///< kGemmResidual: the residual tile, row i at r + i * ldc bytes
};
inline constexpr uint64_t kGemmAccumulate = 1; ///< C += A B (else C = A B)
inline constexpr uint64_t kGemmBias = 2;       ///< then + bias (per column)
inline constexpr uint64_t kGemmRelu = 4;       ///< then max(., 0)
inline constexpr uint64_t kGemmResidual = 8;   ///< then + residual (same layout as C)

using MicroKernel = void (*)(const MicroArgs*);

/// The ISA the GEMM uses: the host's best (AVX-512F, else AVX2 with FMA3, else None), or a
/// lower one forced by the environment (`RLX_GEMM_ISA=avx2`) or set_gemm_isa.
GemmIsa gemm_isa();
/// Forces an ISA (tests run both on an AVX-512 host); None goes back to the host's best. One
/// the host lacks throws rlx::Error. Products lowered afterwards use it.
void set_gemm_isa(GemmIsa isa);
/// The host's best ISA, whatever is forced.
GemmIsa gemm_host_isa();

/// Whether this host runs the generated GEMM (gemm_isa() != None); without it the JIT keeps
/// matmul on the runtime kernels.
bool gemm_supported();

/// How a micro-kernel reads B: a packed panel, or the row-major matrix itself (rows ldb bytes
/// apart; when few rows of A share B, packing it costs more than it saves), its last vector
/// under the mask when the panel is narrower than the tile (so nothing past B is read).
enum class GemmBMode : uint8_t { Packed, Strided, StridedMasked };

/// Which micro-kernel: mr rows (1..tile mr) by `vectors` (1 or 2) vectors of columns.
struct MicroSpec {
  GemmIsa isa = GemmIsa::Avx512;
  GemmType type = GemmType::F32;
  int mr = 1, vectors = 1;
  GemmBMode mode = GemmBMode::Packed;
};

/// The micro-kernel for a spec, generated on first use and kept for the process.
MicroKernel gemm_micro_kernel(const MicroSpec& spec);
/// The AVX-512 f32 micro-kernel for mr rows (1..kGemmMr) by `vectors` (1 or 2) 16-float vectors.
MicroKernel gemm_micro_kernel(int mr, int vectors, GemmBMode mode = GemmBMode::Packed);

/// An operand as a strided matrix: element (i, j) of batch t at p[off[t] + i * rs + j * cs].
template <class T> struct GemmMatrixT {
  const T* p = nullptr;
  int64_t rs = 0, cs = 0;
};
using GemmMatrix = GemmMatrixT<float>;

/// An element-wise function applied to C in place after the product and bias (an activation
/// compiled by the LLVM lowering): fn(bufs = {src, dst}, begin, end) over flat elements.
using GemmEpilogueFn = void (*)(void* const* bufs, int64_t begin, int64_t end);

/// What a kernel specialized for a whole product reads (gemm_small_kernel).
struct SmallArgs {
  const void* a = nullptr;    ///< A of one batch
  const void* b = nullptr;    ///< B of one batch
  void* c = nullptr;          ///< C of one batch, row-major [m, n]
  const void* bias = nullptr; ///< n elements, when the kernel adds a bias
  const void* r = nullptr;    ///< the residual [m, n], when the kernel adds one
};
using SmallKernel = void (*)(const SmallArgs*);

/// C[t] = act(A[t] B[t] + bias) + residual[t] for t < batches, C row-major [batches, m, n]
/// (contiguous). a_off/b_off: element offsets of each batch's operand (nullptr: all batches at
/// offset 0).
template <class T> struct GemmCallT {
  int64_t batches = 1, m = 0, n = 0, k = 0;
  GemmMatrixT<T> a, b;
  const int64_t* a_off = nullptr;
  const int64_t* b_off = nullptr;
  T* c = nullptr;
  const T* bias = nullptr; ///< n elements, added to every row, or nullptr
  bool relu = false;
  GemmEpilogueFn epilogue = nullptr; ///< applied after bias (and relu), in place
  const T* residual = nullptr;       ///< [batches, m, n] like C, added last, or nullptr
  GemmIsa isa = GemmIsa::None;       ///< None: gemm_isa()
  /// From gemm_small_kernel for this very call's shape, strides and epilogue: then the product
  /// runs as one call of it per batch, without packing (nullptr: the blocked path).
  SmallKernel small = nullptr;
  /// B already packed by gemm_pack_b for `packed_isa` (a B that every batch shares and that
  /// never changes, such as a weight): the blocked path then reads it instead of packing B on
  /// every call. Ignored on another ISA and by a small kernel.
  const T* packed_b = nullptr;
  GemmIsa packed_isa = GemmIsa::None;
};
using GemmCall = GemmCallT<float>;
using DGemmCall = GemmCallT<double>;

/// Run the GEMM on up to `threads` threads of the rlx pool (0: rlx::num_threads(), fewer for
/// small products).
void sgemm(const GemmCall& call, int threads = 0);
void dgemm(const DGemmCall& call, int threads = 0);

/// The elements gemm_pack_b writes for `call` on `isa`: B in the blocked path's layout, per
/// depth block every column panel (zero-padded to whole panels). 0 when the call has no use for
/// it: a small kernel, no depth or no columns, or batches that read different B.
int64_t gemm_packed_b_elements(const GemmCall& call, GemmIsa isa);
int64_t gemm_packed_b_elements(const DGemmCall& call, GemmIsa isa);
/// Packs B of `call` (call.b, at call.b_off[0]) for `isa` into dst (gemm_packed_b_elements
/// of them, 64-byte aligned), for GemmCallT::packed_b.
void gemm_pack_b(const GemmCall& call, GemmIsa isa, float* dst);
void gemm_pack_b(const DGemmCall& call, GemmIsa isa, double* dst);

/// A kernel computing one batch of `call` whole (its shape, strides, relu, epilogue and ISA are
/// built in, its pointers ignored; `bias` / `residual`: whether the calls pass one): the tiles
/// unrolled, the operands read in place (no packing), each depth loop's trip count and every
/// address a constant. nullptr when the product is not small (operands beyond about L1) or B's
/// rows are not contiguous. Generated once per shape and kept for the process; meant for JIT
/// time (the step keeps it in its call's `small`).
SmallKernel gemm_small_kernel(const GemmCall& call, bool bias, bool residual);
SmallKernel gemm_small_kernel(const DGemmCall& call, bool bias, bool residual);

} // namespace rlx::jit
