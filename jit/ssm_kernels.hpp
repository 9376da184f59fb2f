// jit/ssm_kernels.hpp -- native kernels of the state-space scans (jit/ssm_kernels.cpp), a
// library kernel (jit/library.hpp).
#pragma once

#include "library.hpp"

namespace rlx::jit {

/// selective_scan of static f32 operands (what the interpreter accepts). The time loop runs
/// inside the kernel; the state of a block of channels stays in registers / L1 and is kept in
/// double, so the result is the interpreter's within a few ulps of f32; blocks of channels of
/// each batch run on the thread pool. f64 stays on the interpreter's kernel.
bool ssm_handles(const ir::Graph& g, const ir::Node& n);

std::unique_ptr<LibraryCall> ssm_prepare(const ir::Graph& g, const ir::Node& n);

} // namespace rlx::jit
