// jit/attention.hpp -- attention of f32 on the JIT's GEMM (jit/attention.cpp), a library kernel
// (jit/library.hpp).
#pragma once

#include "library.hpp"

namespace rlx::jit {

/// attention(q, k, v, [mask]) of static f32 [B, S, H*D] operands (a Custom mask broadcast to
/// [B, Sk], a Bias to [B, H, Sq, Sk], both f32) on a host that runs the generated GEMM, with
/// shapes and attributes the interpreter accepts.
bool attention_handles(const ir::Graph& g, const ir::Node& n);

/// q, k, v (a narrow along the last axis replaced by its operand, read with a row stride: the
/// split of a fused QKV projection costs no copy), then the mask.
std::vector<ir::NodeId> attention_reads(const ir::Graph& g, const ir::Node& n);

std::unique_ptr<LibraryCall> attention_prepare(const ir::Graph& g, const ir::Node& n);

} // namespace rlx::jit
