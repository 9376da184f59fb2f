// src/interp/attention.cpp -- interpreter kernels of the attention family (placeholder until they
// land).
#include "kernels.hpp"

namespace rlx::interp::detail {

bool attention_has(ir::OpKind) { return false; }

Buffer eval_attention(const ir::Node& n, Operands) {
  fail(ErrorKind::Unsupported, "interp: no kernel for op ", n.op.name(), " yet");
}

} // namespace rlx::interp::detail
