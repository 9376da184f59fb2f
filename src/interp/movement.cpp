// src/interp/movement.cpp -- interpreter kernels of the movement family (placeholder until they
// land).
#include "kernels.hpp"

namespace rlx::interp::detail {

bool movement_has(ir::OpKind) { return false; }

Buffer eval_movement(const ir::Node& n, Operands) {
  fail(ErrorKind::Unsupported, "interp: no kernel for op ", n.op.name(), " yet");
}

} // namespace rlx::interp::detail
