// src/interp/norm.cpp -- interpreter kernels of the norm family (placeholder until they land).
#include "kernels.hpp"

namespace rlx::interp::detail {

bool norm_has(ir::OpKind) { return false; }

Buffer eval_norm(const ir::Node& n, Operands) {
  fail(ErrorKind::Unsupported, "interp: no kernel for op ", n.op.name(), " yet");
}

} // namespace rlx::interp::detail
