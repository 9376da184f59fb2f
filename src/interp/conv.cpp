// src/interp/conv.cpp -- interpreter kernels of the conv_pool family (placeholder until they land).
#include "kernels.hpp"

namespace rlx::interp::detail {

bool conv_pool_has(ir::OpKind) { return false; }

Buffer eval_conv_pool(const ir::Node& n, Operands) {
  fail(ErrorKind::Unsupported, "interp: no kernel for op ", n.op.name(), " yet");
}

} // namespace rlx::interp::detail
