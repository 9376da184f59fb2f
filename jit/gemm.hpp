// jit/gemm.hpp -- the JIT's f32 GEMM: packed panels and micro-kernels generated with asmjit
// (jit/asmjit/gemm_kernels.cpp), blocked for the caches and split over the one thread pool
// (jit/gemm.cpp). No LLVM or asmjit types here.
#pragma once

#include <cstdint>

namespace rlx::jit {

/// The register tile of the generated micro-kernels: kGemmMr rows by kGemmNr columns of C
/// (28 of the 32 zmm registers accumulate; two hold B, two broadcast A).
inline constexpr int kGemmMr = 14;
inline constexpr int kGemmNr = 32;

/// What a micro-kernel reads and does (the generated code loads these fields; keep the layout).
struct MicroArgs {
  int64_t k = 0;               ///< depth: packed A holds k steps of mr floats, packed B of nr
  const float* a = nullptr;    ///< packed A panel: a[p * mr + i]
  const float* b = nullptr;    ///< packed B panel: b[p * nr + j] (nr = 16 * vectors)
  float* c = nullptr;          ///< C tile, row i at c + i * ldc bytes
  int64_t ldc = 0;             ///< bytes between C rows
  const float* bias = nullptr; ///< per-column bias (kGemmBias), bias[j]
  int64_t ldb = 0;             ///< GemmBMode::Strided*: bytes between B rows
  uint64_t flags = 0;          ///< kGemmAccumulate | kGemmBias | kGemmRelu
  uint64_t mask = 0xffff;      ///< lanes of the last vector of each row stored (and loaded)
};
inline constexpr uint64_t kGemmAccumulate = 1; ///< C += A B (else C = A B)
inline constexpr uint64_t kGemmBias = 2;       ///< then + bias (per column)
inline constexpr uint64_t kGemmRelu = 4;       ///< then max(., 0)

using MicroKernel = void (*)(const MicroArgs*);

/// Whether this host runs the generated GEMM (AVX-512F); without it the JIT keeps matmul on
/// the runtime kernels.
bool gemm_supported();

/// How a micro-kernel reads B: a packed panel, or the row-major matrix itself (rows ldb bytes
/// apart; when few rows of A share B, packing it costs more than it saves), its last vector
/// under the mask when the panel is narrower than the tile (so nothing past B is read).
enum class GemmBMode : uint8_t { Packed, Strided, StridedMasked };

/// The micro-kernel for mr rows (1..kGemmMr) by `vectors` (1 or 2) 16-float vectors of columns,
/// generated on first use and kept for the process.
MicroKernel gemm_micro_kernel(int mr, int vectors, GemmBMode mode = GemmBMode::Packed);

/// An operand as a strided matrix: element (i, j) of batch t at p[off[t] + i * rs + j * cs].
struct GemmMatrix {
  const float* p = nullptr;
  int64_t rs = 0, cs = 0;
};

/// An element-wise function applied to C in place after the product and bias (an activation
/// compiled by the LLVM lowering): fn(bufs = {src, dst}, begin, end) over flat elements.
using GemmEpilogueFn = void (*)(void* const* bufs, int64_t begin, int64_t end);

/// C[t] = act(A[t] B[t] + bias) for t < batches, C row-major [batches, m, n] (contiguous).
/// a_off/b_off: element offsets of each batch's operand (nullptr: all batches at offset 0).
struct GemmCall {
  int64_t batches = 1, m = 0, n = 0, k = 0;
  GemmMatrix a, b;
  const int64_t* a_off = nullptr;
  const int64_t* b_off = nullptr;
  float* c = nullptr;
  const float* bias = nullptr; ///< n floats, added to every row, or nullptr
  bool relu = false;
  GemmEpilogueFn epilogue = nullptr; ///< applied after bias (and relu), in place
};

/// Run the GEMM on up to `threads` threads of the rlx pool (0: rlx::num_threads(), fewer for
/// small products).
void sgemm(const GemmCall& call, int threads = 0);

} // namespace rlx::jit
