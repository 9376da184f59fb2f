// src/ops/spectral.cpp -- shape rules of the spectral family: fft, lfilter, conjugate,
// complex_norm_sq (semantics in include/rlx/ir/ops.def).
#include "infer_common.hpp"

namespace rlx::ir::detail {

namespace {

Shape fft_rule(const Op& op, std::span<const Shape> in) {
  const Shape& x = in[0];
  if (x.rank() == 0) shape_error(op, in, "needs rank >= 1");
  if (is_complex(x.dtype())) return x;
  if (x.dtype() != DType::F32 && x.dtype() != DType::F64)
    fail(ErrorKind::Type, op.name(), ": needs f32, f64 (2N real-block layout) or c64, got ",
         short_str(x));
  const Dim& last = x.dims().back();
  if (last.is_static() && last.size() % 2 != 0)
    shape_error(op, in, "the last axis holds [re..., im...] and must have even length, got ",
                last.size());
  return x;
}

Shape lfilter_rule(const Op& op, std::span<const Shape> in) {
  if (in.size() != 3 && in.size() != 4) shape_error(op, in, "takes (x, b, a) or (x, b, a, zi)");
  const Shape &x = in[0], &b = in[1], &a = in[2];
  for (const Shape& s : in)
    if (s.dtype() != DType::F32 && s.dtype() != DType::F64)
      fail(ErrorKind::Type, op.name(), ": needs f32 or f64 operands, got ", shapes_str(in));
  if (x.rank() == 0) shape_error(op, in, "x needs rank >= 1");
  if (b.rank() != 1 || a.rank() != 1) shape_error(op, in, "b and a must be 1-D");
  int64_t nb = static_size(b.dims()[0]), na = static_size(a.dims()[0]);
  if (nb < 1 || na < 1) shape_error(op, in, "b and a need at least one coefficient");
  if (in.size() == 4) {
    const Shape& zi = in[3];
    if (zi.rank() == 0) shape_error(op, in, "zi needs rank >= 1");
    int64_t k = static_size(zi.dims().back());
    if (k != std::max(na, nb) - 1)
      shape_error(op, in, "zi's last axis must be max(len a, len b) - 1 = ", std::max(na, nb) - 1);
    std::vector<Dim> lead(x.dims().begin(), x.dims().end() - 1);
    std::vector<Dim> zlead(zi.dims().begin(), zi.dims().end() - 1);
    Shape want(lead, x.dtype());
    Shape got = broadcast_shapes(op.name(), Shape(zlead, x.dtype()), want);
    if (got.rank() != want.rank() || !(got == want))
      shape_error(op, in, "zi's leading axes must broadcast to x's leading axes");
  }
  return x;
}

} // namespace

std::optional<Shape> infer_spectral(const Op& op, std::span<const Shape> in) {
  switch (op.kind()) {
  case OpKind::Fft:
    return fft_rule(op, in);
  case OpKind::Lfilter:
    return lfilter_rule(op, in);
  case OpKind::Conjugate:
  case OpKind::ComplexNormSq:
    if (!is_complex(in[0].dtype()))
      fail(ErrorKind::Type, op.name(), ": needs a c64 operand, got ", short_str(in[0]));
    return op.kind() == OpKind::Conjugate ? in[0] : Shape(in[0].dims(), DType::F32);
  default:
    return std::nullopt;
  }
}

} // namespace rlx::ir::detail
