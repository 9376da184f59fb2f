// src/runtime/jit_backend.hpp -- the JIT backend's entry point (implemented under jit/).
#pragma once

#include "rlx/runtime.hpp"

namespace rlx::jit {

/// Compile a static-shaped graph to native code (fused element-wise kernels; other nodes run
/// the runtime kernels). rlx::Error (ErrorKind::Runtime) when LLVM fails.
std::shared_ptr<const Executable> compile_graph(const ir::Graph& g);

/// Whether this host runs the JIT's generated GEMM (declared again from jit/gemm.hpp): the
/// compile pipeline then rewrites convolutions as products (passes::conv_as_matmul).
bool gemm_supported();

/// Fill the kernel counters of `stats` (kernels_compiled, disk_hits, ...).
void add_kernel_stats(CacheStats& stats);

} // namespace rlx::jit
