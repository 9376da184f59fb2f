// src/interp/contract.cpp -- interpreter kernels of the contract family (placeholder until they
// land).
#include "kernels.hpp"

namespace rlx::interp::detail {

bool contract_has(ir::OpKind) { return false; }

Buffer eval_contract(const ir::Node& n, Operands) {
  fail(ErrorKind::Unsupported, "interp: no kernel for op ", n.op.name(), " yet");
}

} // namespace rlx::interp::detail
