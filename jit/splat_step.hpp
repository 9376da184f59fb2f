// jit/splat_step.hpp -- the Gaussian splatting ops as a library kernel (jit/library.hpp) of the
// JIT: the interpreter's kernels (src/splat/render.cpp) with tiles and Gaussians spread over the
// thread pool (jit/splat_step.cpp).
#pragma once

#include "library.hpp"

namespace rlx::jit {

/// The four Splat kinds with static shapes.
bool splat_handles(const ir::Graph& g, const ir::Node& n);

std::unique_ptr<LibraryCall> splat_prepare(const ir::Graph& g, const ir::Node& n);

} // namespace rlx::jit
