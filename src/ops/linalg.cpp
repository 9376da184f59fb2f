// src/ops/linalg.cpp -- shape rules of the linear-algebra family: solve, slogdet, cholesky, qr,
// svd, eigh (semantics in include/rlx/ir/ops.def). Every operand is f32 or f64 (one dtype),
// matrices are the last two axes and the leading axes are a batch that all operands share.
#include "infer_common.hpp"
#include "support/size_math.hpp"

#include <vector>

namespace rlx::ir::detail {

namespace {

void need_float(const Op& op, std::span<const Shape> in) {
  for (const Shape& s : in)
    if (s.dtype() != DType::F32 && s.dtype() != DType::F64)
      fail(ErrorKind::Type, op.name(), ": needs f32 or f64 operands, got ", shapes_str(in));
  for (const Shape& s : in)
    if (s.dtype() != in[0].dtype())
      fail(ErrorKind::Type, op.name(), ": operands must have one dtype, got ", shapes_str(in));
}

/// The leading (batch) axes of a matrix operand.
std::vector<Dim> batch_of(const Shape& s) { return {s.dims().begin(), s.dims().end() - 2}; }

Shape with_tail(const Shape& a, std::vector<Dim> tail) {
  std::vector<Dim> d = batch_of(a);
  d.insert(d.end(), tail.begin(), tail.end());
  return Shape(d, a.dtype());
}

void need_matrix(const Op& op, std::span<const Shape> in, bool square) {
  const Shape& a = in[0];
  if (a.rank() < 2) shape_error(op, in, "needs a matrix (rank >= 2)");
  if (square) {
    const Dim &m = a.dims()[a.rank() - 2], &n = a.dims().back();
    if (m.is_static() && n.is_static() && m.size() != n.size())
      shape_error(op, in, "needs square matrices, got ", m.size(), "x", n.size());
  }
}

Shape solve_rule(const Op& op, std::span<const Shape> in) {
  need_float(op, in);
  need_matrix(op, in, true);
  const Shape &a = in[0], &b = in[1];
  const bool vector = b.rank() + 1 == a.rank();
  if (!vector && b.rank() != a.rank())
    shape_error(op, in, "b must have a's rank (matrix right-hand sides) or one less (vectors)");
  for (std::size_t i = 0; i + 2 < a.rank(); ++i) {
    const Dim &x = a.dims()[i], &y = b.dims()[i];
    if (x.is_static() && y.is_static() && x.size() != y.size())
      shape_error(op, in, "a and b must have the same leading (batch) axes");
  }
  const Dim& n = a.dims().back();
  const Dim& rows = b.dims()[a.rank() - 2];
  if (n.is_static() && rows.is_static() && n.size() != rows.size())
    shape_error(op, in, "b needs ", n.size(), " rows, got ", rows.size());
  return b;
}

/// a*b + c*d + e, or an ErrorKind::Limit error (a full SVD of a tall matrix squares its height).
int64_t packed_size(const Op& op, int64_t a, int64_t b, int64_t c, int64_t d, int64_t e) {
  auto ab = rlx::detail::checked_mul(a, b), cd = rlx::detail::checked_mul(c, d);
  std::optional<int64_t> s = ab && cd ? rlx::detail::checked_add(*ab, *cd) : std::nullopt;
  if (s) s = rlx::detail::checked_add(*s, e);
  if (!s) fail(ErrorKind::Limit, op.name(), ": the packed result's size overflows int64");
  return *s;
}

} // namespace

std::optional<Shape> infer_linalg(const Op& op, std::span<const Shape> in) {
  switch (op.kind()) {
  case OpKind::Solve:
    return solve_rule(op, in);
  case OpKind::Slogdet:
    need_float(op, in);
    need_matrix(op, in, true);
    return with_tail(in[0], {Dim(2)});
  case OpKind::Cholesky:
    need_float(op, in);
    need_matrix(op, in, true);
    return in[0];
  case OpKind::Qr: {
    need_float(op, in);
    need_matrix(op, in, false);
    int64_t m = static_size(in[0].dims()[in[0].rank() - 2]), n = static_size(in[0].dims().back());
    int64_t k = std::min(m, n);
    return with_tail(in[0], {Dim(packed_size(op, m, k, k, n, 0))});
  }
  case OpKind::Svd: {
    need_float(op, in);
    need_matrix(op, in, false);
    int64_t m = static_size(in[0].dims()[in[0].rank() - 2]), n = static_size(in[0].dims().back());
    int64_t k = std::min(m, n);
    bool full = op.attrs<SvdAttrs>().full_matrices;
    return with_tail(in[0], {Dim(packed_size(op, m, full ? m : k, full ? n : k, n, k))});
  }
  case OpKind::Eigh: {
    need_float(op, in);
    need_matrix(op, in, true);
    int64_t n = static_size(in[0].dims().back());
    return with_tail(in[0], {Dim(packed_size(op, n, n, 0, 0, n))});
  }
  default:
    return std::nullopt;
  }
}

} // namespace rlx::ir::detail
