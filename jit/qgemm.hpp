// jit/qgemm.hpp -- the JIT's int8 GEMM for q_matmul (jit/qgemm.cpp), a library kernel
// (jit/library.hpp): AVX-512 VNNI (vpdpbusd) on hosts that have it; elsewhere q_matmul stays on
// the interpreter's kernel, the portable one. Its bits are the interpreter's.
#pragma once

#include "library.hpp"

namespace rlx::jit {

/// q_matmul of static operands with an i8 w (x i8 or u8), on a host with AVX-512 VNNI.
bool qgemm_handles(const ir::Graph& g, const ir::Node& n);

/// A w that is a Constant node is packed once per executable (on its first run), not per call.
std::unique_ptr<LibraryCall> qgemm_prepare(const ir::Graph& g, const ir::Node& n);

/// How many times q_matmul calls have packed a constant w in this process (tests).
int64_t qgemm_constant_w_packs();

} // namespace rlx::jit
