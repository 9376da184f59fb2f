// src/interp/reduce.cpp -- interpreter kernels of the reduce_scan family (placeholder until they
// land).
#include "kernels.hpp"

namespace rlx::interp::detail {

bool reduce_scan_has(ir::OpKind) { return false; }

Buffer eval_reduce_scan(const ir::Node& n, Operands) {
  fail(ErrorKind::Unsupported, "interp: no kernel for op ", n.op.name(), " yet");
}

} // namespace rlx::interp::detail
