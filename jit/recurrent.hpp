// jit/recurrent.hpp -- lstm, gru and rnn on the JIT's GEMM (jit/recurrent_step.cpp), a library
// kernel (jit/library.hpp).
#pragma once

#include "library.hpp"

namespace rlx::jit {

/// A recurrent node of static f32 or f64 operands on a host that runs the generated GEMM.
bool recurrent_handles(const ir::Graph& g, const ir::Node& n);
/// Per layer and direction: the input projections of all steps in one GEMM (bias added), then
/// per step h x W_hh^T (W_hh transposed once per call) and a fused gate loop.
std::unique_ptr<LibraryCall> recurrent_prepare(const ir::Graph& g, const ir::Node& n);

} // namespace rlx::jit
