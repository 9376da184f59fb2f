// src/ops/elementwise.cpp -- shape rules of the element-wise families (unary, binary, ternary).
#include "infer_common.hpp"

namespace rlx::ir::detail {

std::optional<Shape> infer_elementwise(const Op& op, std::span<const Shape> in) {
  switch (op.family()) {
  case Family::EwUnary: {
    const Shape& x = in[0];
    if (op.kind() == OpKind::Cast) return x.with_dtype(op.attrs<CastAttrs>().to);
    if (as_activation(op.kind()) && !is_float(x.dtype()) && !has_trait(op.kind(), kIntegerOk))
      fail(ErrorKind::Type, op.name(), ": needs a floating-point operand, got ", short_str(x));
    return x;
  }
  case Family::EwBinary: {
    const Shape &a = in[0], &b = in[1];
    Shape out = broadcast_shapes(op.name(), a, b);
    bool logical = op.kind() == OpKind::And || op.kind() == OpKind::Or;
    if (!logical && (is_bool(a.dtype()) != is_bool(b.dtype())))
      fail(ErrorKind::Type, op.name(), ": cannot mix bool and numeric operands: ", short_str(a),
           ", ", short_str(b), " (cast one first)");
    if (has_trait(op.kind(), kBoolResult)) return out.with_dtype(DType::Bool);
    if (is_bool(a.dtype()) && !logical)
      fail(ErrorKind::Type, op.name(), ": needs numeric operands, got ", short_str(a), ", ",
           short_str(b));
    return out.with_dtype(promote(a.dtype(), b.dtype()));
  }
  case Family::EwTernary: {
    Shape s = broadcast_shapes(op.name(), broadcast_shapes(op.name(), in[0], in[1]), in[2]);
    return s.with_dtype(promote(in[1].dtype(), in[2].dtype()));
  }
  default:
    return std::nullopt;
  }
}

} // namespace rlx::ir::detail
