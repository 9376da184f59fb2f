// jit/packed_kernels.hpp -- the JIT's dequant_matmul (jit/packed_kernels.cpp), a library kernel
// (jit/library.hpp).
#pragma once

#include "library.hpp"

namespace rlx::jit {

/// dequant_matmul nodes of static shapes. Rows of W are split over the thread pool; each thread
/// dequantizes a chunk of blocks of one row (at most 256 values, or one block) into a buffer in
/// L1 and accumulates x . chunk in f32 (16 lanes, AVX-512 or AVX2 where the CPU has them), so W is
/// never held in f32 and each packed byte is read once per call. The adjoint form (g . W) splits
/// the columns of its result instead and adds g[i, j] times each decoded chunk of row j.
bool packed_handles(const ir::Graph& g, const ir::Node& n);

std::unique_ptr<LibraryCall> packed_prepare(const ir::Graph& g, const ir::Node& n);

} // namespace rlx::jit
