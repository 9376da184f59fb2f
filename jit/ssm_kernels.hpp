// jit/ssm_kernels.hpp -- native kernels of the state-space scans (jit/ssm_kernels.cpp), a
// library kernel (jit/library.hpp).
#pragma once

#include "library.hpp"

namespace rlx::jit {

/// selective_scan, mamba2 (state_size a multiple of 8) and gated_delta_net (state_size a
/// multiple of 8, at most 1024) of static f32 operands (what the interpreter accepts). The time
/// loop runs inside the kernel, the state (a block of 8 channels; one head's [P, N] or [N, N])
/// stays in registers / L1 and is kept in double, so the result is the interpreter's within a
/// few ulps of f32; blocks and heads run on the thread pool. f64 and other state sizes stay on
/// the interpreter's kernels.
bool ssm_handles(const ir::Graph& g, const ir::Node& n);

std::unique_ptr<LibraryCall> ssm_prepare(const ir::Graph& g, const ir::Node& n);

} // namespace rlx::jit
