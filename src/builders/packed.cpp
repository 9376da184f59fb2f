// src/builders/packed.cpp -- RLX's dequant-matmul builders (ops.def's Packed family): one kind,
// dequant_matmul, whose inputs depend on the scheme; the three names are RLX's spellings of its
// forms. The shape rule (src/ops/packed.cpp) checks every operand.
#include "rlx/ir/graph.hpp"

namespace rlx::ir {

NodeId Graph::dequant_matmul(NodeId x, NodeId w_q, NodeId scale, NodeId zp, QuantScheme scheme,
                             Shape out_shape, Loc loc) {
  check_id(x, "dequant_matmul");
  check_id(w_q, "dequant_matmul");
  Op op(OpKind::DequantMatMul, DequantMatMulAttrs{scheme});
  if (scheme.is_gguf()) // GGUF's blocks carry their scales: RLX's 2-input form
    return build(std::move(op), {x, w_q}, out_shape, loc);
  check_id(scale, "dequant_matmul");
  check_id(zp, "dequant_matmul");
  return build(std::move(op), {x, w_q, scale, zp}, out_shape, loc);
}

NodeId Graph::dequant_matmul_packed(NodeId x, NodeId packed_w, QuantScheme scheme, Shape out_shape,
                                    Loc loc) {
  check_id(x, "dequant_matmul_packed");
  check_id(packed_w, "dequant_matmul_packed");
  return build(Op(OpKind::DequantMatMul, DequantMatMulAttrs{scheme}), {x, packed_w}, out_shape,
               loc);
}

NodeId Graph::dequant_matmul_nvfp4(NodeId x, NodeId w_q, NodeId block_scales, NodeId global_scale,
                                   Shape out_shape, Loc loc) {
  for (NodeId id : {x, w_q, block_scales, global_scale}) check_id(id, "dequant_matmul_nvfp4");
  return build(
      Op(OpKind::DequantMatMul, DequantMatMulAttrs{QuantScheme::of(QuantFormat::Nvfp4Block)}),
      {x, w_q, block_scales, global_scale}, out_shape, loc);
}

} // namespace rlx::ir
