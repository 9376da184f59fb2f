// src/frontend/linalg.cpp -- rlx::linalg (include/rlx/linalg.hpp): numpy.linalg on Tensors. The
// factorizations are the IR's Linalg primitives (solve, slogdet, cholesky, qr, svd, eigh; LAPACK
// computes them); the packed results of qr, svd and eigh are split here with narrows and
// reshapes. inv, det, lstsq, pinv, matrix_rank, matrix_power and norm are compositions, so their
// gradients come from the primitives' rules.
#include "rlx/linalg.hpp"

#include "frontend/impl.hpp"
#include "frontend/ops.hpp"

#include <cmath>
#include <limits>
#include <string>
#include <vector>

namespace rlx::linalg {

namespace {

using detail::at_loc;

void need_float(const Tensor& a, std::string_view what, const Loc& loc) {
  detail::check_defined(a, what, loc);
  if (a.dtype() != DType::F32 && a.dtype() != DType::F64)
    fail(ErrorKind::Type, what, ": needs f32 or f64, got ", ir::short_str(a.shape()), at_loc(loc));
}

/// a is f32/f64 with rank >= 2 (and square matrices when asked); returns (M, N).
std::pair<int64_t, int64_t> need_matrix(const Tensor& a, std::string_view what, bool square,
                                        const Loc& loc) {
  need_float(a, what, loc);
  if (a.ndim() < 2)
    fail(ErrorKind::Shape, what, ": needs a matrix (rank >= 2), got ", ir::short_str(a.shape()),
         at_loc(loc));
  int64_t m = a.size(a.ndim() - 2, loc), n = a.size(a.ndim() - 1, loc);
  if (square && m != n)
    fail(ErrorKind::Shape, what, ": needs square matrices in the last two axes, got ",
         ir::short_str(a.shape()), at_loc(loc));
  return {m, n};
}

Dims lead_of(const Tensor& a, int64_t tail) {
  Dims s = a.shape().sizes();
  return Dims(s.begin(), s.end() - tail);
}
Dims cat_dims(Dims a, std::initializer_list<int64_t> b) {
  a.insert(a.end(), b);
  return a;
}

/// One primitive of the Linalg family on the operands.
Tensor prim(std::initializer_list<Tensor> operands, const ir::Op& op, const Loc& loc) {
  return apply(
      operands,
      [&](ir::Graph& g, std::span<const ir::NodeId> ids) {
        return g.add_inferred(op, std::vector<ir::NodeId>(ids.begin(), ids.end()), loc);
      },
      loc);
}

Tensor mT(const Tensor& x, const Loc& loc) { return transpose(x, x.ndim() - 2, x.ndim() - 1, loc); }

/// Elements [start, start + r*c) of the packed last axis as [.., r, c] (c < 0: a vector [.., r]).
Tensor part(const Tensor& packed, int64_t start, int64_t r, int64_t c, const Loc& loc) {
  Dims lead = lead_of(packed, 1);
  Tensor p = narrow(packed, packed.ndim() - 1, start, c < 0 ? r : r * c, loc);
  return c < 0 ? p : reshape(p, cat_dims(lead, {r, c}), loc);
}

/// numpy's broadcast of two batch shapes, or an error naming `what`.
Dims broadcast_lead(const Dims& a, const Dims& b, std::string_view what, const Tensor& ta,
                    const Tensor& tb, const Loc& loc) {
  std::size_t r = std::max(a.size(), b.size());
  Dims out(r);
  for (std::size_t i = 0; i < r; ++i) {
    int64_t x = i < r - a.size() ? 1 : a[i - (r - a.size())];
    int64_t y = i < r - b.size() ? 1 : b[i - (r - b.size())];
    if (x != y && x != 1 && y != 1)
      fail(ErrorKind::Shape, what, ": the batch axes of ", ir::short_str(ta.shape()), " and ",
           ir::short_str(tb.shape()), " do not broadcast", at_loc(loc));
    out[i] = x == 1 ? y : x;
  }
  return out;
}

double eps_of(DType t) {
  return t == DType::F32 ? double(std::numeric_limits<float>::epsilon())
                         : std::numeric_limits<double>::epsilon();
}

/// V diag(1/S) U^T with singular values at most cutoff_factor * max(S) dropped.
Tensor pinv_cut(const Tensor& a, double cutoff_factor, const Loc& loc) {
  Svd f = svd(a, false, loc);
  Tensor cutoff = max(f.S, {-1}, true, loc) * cutoff_factor;
  Tensor keep = f.S > cutoff;
  Tensor sinv = where(keep, 1.0 / where(keep, f.S, 1.0, loc), 0.0, loc);
  return matmul(mT(f.Vh, loc), unsqueeze(sinv, -1, loc) * mT(f.U, loc), loc);
}

Tensor batch_eye(const Tensor& a, int64_t n, const Loc& loc) {
  return broadcast_to(eye(n, std::nullopt, 0, a.dtype(), loc), cat_dims(lead_of(a, 2), {n, n}),
                      loc);
}

} // namespace

Tensor solve(const Tensor& a, const Tensor& b, Loc loc) {
  auto [m, n] = need_matrix(a, "linalg.solve", true, loc);
  (void)m;
  need_float(b, "linalg.solve", loc);
  DType t = a.dtype() == DType::F64 || b.dtype() == DType::F64 ? DType::F64 : DType::F32;
  const bool vec = b.ndim() == 1;
  if (!vec && b.ndim() < 2)
    fail(ErrorKind::Shape, "linalg.solve: b must be a vector [N] or matrices [.., N, K], got ",
         ir::short_str(b.shape()), at_loc(loc));
  Tensor bm = vec ? unsqueeze(b, 1, loc) : b;
  if (bm.size(bm.ndim() - 2, loc) != n)
    fail(ErrorKind::Shape, "linalg.solve: a ", ir::short_str(a.shape()), " needs b with ", n,
         " rows, got ", ir::short_str(b.shape()), at_loc(loc));
  Dims lead = broadcast_lead(lead_of(a, 2), lead_of(bm, 2), "linalg.solve", a, b, loc);
  int64_t k = bm.size(bm.ndim() - 1, loc);
  Tensor aa = broadcast_to(a.astype(t, loc), cat_dims(lead, {n, n}), loc);
  Tensor bb = broadcast_to(bm.astype(t, loc), cat_dims(lead, {n, k}), loc);
  Tensor x = prim({aa, bb}, ir::Op(ir::OpKind::Solve), loc);
  return vec ? reshape(x, cat_dims(lead, {n}), loc) : x;
}

Tensor inv(const Tensor& a, Loc loc) {
  auto [m, n] = need_matrix(a, "linalg.inv", true, loc);
  (void)m;
  return prim({a, batch_eye(a, n, loc)}, ir::Op(ir::OpKind::Solve), loc);
}

Slogdet slogdet(const Tensor& a, Loc loc) {
  need_matrix(a, "linalg.slogdet", true, loc);
  Tensor p = prim({a}, ir::Op(ir::OpKind::Slogdet), loc);
  Dims lead = lead_of(a, 2);
  return {reshape(part(p, 0, 1, -1, loc), lead, loc), reshape(part(p, 1, 1, -1, loc), lead, loc)};
}

Tensor det(const Tensor& a, Loc loc) {
  need_matrix(a, "linalg.det", true, loc);
  Slogdet s = slogdet(a, loc);
  return s.sign * exp(s.logabsdet, loc);
}

Tensor cholesky(const Tensor& a, Loc loc) {
  need_matrix(a, "linalg.cholesky", true, loc);
  return prim({a}, ir::Op(ir::OpKind::Cholesky), loc);
}

std::pair<Tensor, Tensor> qr(const Tensor& a, Loc loc) {
  auto [m, n] = need_matrix(a, "linalg.qr", false, loc);
  int64_t k = std::min(m, n);
  Tensor p = prim({a}, ir::Op(ir::OpKind::Qr), loc);
  return {part(p, 0, m, k, loc), part(p, m * k, k, n, loc)};
}

Svd svd(const Tensor& a, bool full_matrices, Loc loc) {
  auto [m, n] = need_matrix(a, "linalg.svd", false, loc);
  int64_t k = std::min(m, n), pu = full_matrices ? m : k, pv = full_matrices ? n : k;
  Tensor p = prim({a}, ir::Op(ir::OpKind::Svd, ir::SvdAttrs{full_matrices}), loc);
  return {part(p, 0, m, pu, loc), part(p, m * pu, k, -1, loc), part(p, m * pu + k, pv, n, loc)};
}

Tensor svdvals(const Tensor& a, Loc loc) {
  need_matrix(a, "linalg.svdvals", false, loc);
  return svd(a, false, loc).S;
}

Eigh eigh(const Tensor& a, Loc loc) {
  auto [m, n] = need_matrix(a, "linalg.eigh", true, loc);
  (void)m;
  Tensor p = prim({a}, ir::Op(ir::OpKind::Eigh), loc);
  return {part(p, 0, n, -1, loc), part(p, n, n, n, loc)};
}

Tensor eigvalsh(const Tensor& a, Loc loc) {
  need_matrix(a, "linalg.eigvalsh", true, loc);
  return eigh(a, loc).eigenvalues;
}

Tensor lstsq(const Tensor& a, const Tensor& b, std::optional<double> rcond, Loc loc) {
  auto [m, n] = need_matrix(a, "linalg.lstsq", false, loc);
  need_float(b, "linalg.lstsq", loc);
  const bool vec = b.ndim() == 1;
  Tensor bm = vec ? unsqueeze(b, 1, loc) : b;
  if (bm.ndim() < 2 || bm.size(bm.ndim() - 2, loc) != m)
    fail(ErrorKind::Shape, "linalg.lstsq: a ", ir::short_str(a.shape()), " needs b with ", m,
         " rows, got ", ir::short_str(b.shape()), at_loc(loc));
  double rc = rcond ? *rcond : eps_of(a.dtype()) * double(std::max(m, n));
  Tensor x = matmul(pinv_cut(a, rc, loc), bm.astype(a.dtype(), loc), loc);
  return vec ? squeeze(x, -1, loc) : x;
}

Tensor pinv(const Tensor& a, double rcond, Loc loc) {
  need_matrix(a, "linalg.pinv", false, loc);
  return pinv_cut(a, rcond, loc);
}

Tensor matrix_rank(const Tensor& a, std::optional<double> tol, Loc loc) {
  auto [m, n] = need_matrix(a, "linalg.matrix_rank", false, loc);
  Tensor s = svdvals(a, loc);
  Tensor t = tol ? full_like(max(s, {-1}, true, loc), *tol, loc)
                 : max(s, {-1}, true, loc) * (double(std::max(m, n)) * eps_of(a.dtype()));
  return sum((s > t).astype(DType::I64, loc), {-1}, false, loc);
}

Tensor matrix_power(const Tensor& a, int64_t n, Loc loc) {
  auto [rows, cols] = need_matrix(a, "linalg.matrix_power", true, loc);
  (void)cols;
  if (n == 0) return batch_eye(a, rows, loc);
  Tensor base = n < 0 ? inv(a, loc) : a;
  uint64_t e = n < 0 ? uint64_t(0) - uint64_t(n) : uint64_t(n);
  std::optional<Tensor> acc;
  while (true) {
    if (e & 1u) acc = acc ? matmul(*acc, base, loc) : base;
    e >>= 1u;
    if (e == 0) break;
    base = matmul(base, base, loc);
  }
  return *acc;
}

namespace {

/// Normalized, distinct axes of x for norm (1 or 2 of them).
Dims norm_axes(const Tensor& x, Dims axis, const Loc& loc) {
  for (int64_t& a : axis) a = detail::norm_axis(a, x.ndim(), "linalg.norm", x.shape(), loc);
  if (axis.size() == 2 && axis[0] == axis[1])
    fail(ErrorKind::Value, "linalg.norm: duplicate axes ", axis[0], at_loc(loc));
  if (axis.empty() || axis.size() > 2)
    fail(ErrorKind::Value, "linalg.norm: axis must name one or two axes", at_loc(loc));
  return axis;
}

Tensor keep(const Tensor& r, const Tensor& x, const Dims& axes, bool keepdims, const Loc& loc) {
  if (!keepdims) return r;
  Dims s = x.shape().sizes();
  for (int64_t a : axes) s[std::size_t(a)] = 1;
  return reshape(r, s, loc);
}

Tensor vector_norm(const Tensor& x, std::optional<double> ord, int64_t axis, const Loc& loc) {
  Tensor ax = abs(x, loc);
  if (!ord || *ord == 2) return sqrt(sum(x * x, {axis}, false, loc), loc);
  double p = *ord;
  if (std::isinf(p)) return p > 0 ? max(ax, {axis}, false, loc) : min(ax, {axis}, false, loc);
  if (p == 0) return sum((x != 0.0).astype(x.dtype(), loc), {axis}, false, loc);
  if (p == 1) return sum(ax, {axis}, false, loc);
  return pow(sum(pow(ax, p, loc), {axis}, false, loc), 1.0 / p, loc);
}

/// The matrix with axes (r, c) moved last, for the SVD-based norms.
Tensor rows_cols_last(const Tensor& x, int64_t r, int64_t c, const Loc& loc) {
  Dims perm;
  for (int64_t i = 0; i < x.ndim(); ++i)
    if (i != r && i != c) perm.push_back(i);
  perm.push_back(r);
  perm.push_back(c);
  return permute(x, perm, loc);
}

Tensor matrix_norm(const Tensor& x, std::optional<double> ord, std::string_view named, int64_t r,
                   int64_t c, const Loc& loc) {
  if (named == "fro" || (named.empty() && !ord)) return sqrt(sum(x * x, {r, c}, false, loc), loc);
  if (named == "nuc") return sum(svdvals(rows_cols_last(x, r, c, loc), loc), {-1}, false, loc);
  if (!named.empty())
    fail(ErrorKind::Value, "linalg.norm: invalid norm order \"", named, "\" for matrices",
         at_loc(loc));
  double p = *ord;
  Tensor ax = abs(x, loc);
  // a reduction over one axis shifts the later one down
  auto after = [](int64_t a, int64_t removed) { return a > removed ? a - 1 : a; };
  if (p == 2 || p == -2) {
    Tensor s = svdvals(rows_cols_last(x, r, c, loc), loc);
    return p > 0 ? max(s, {-1}, false, loc) : min(s, {-1}, false, loc);
  }
  if (p == 1 || p == -1) {
    Tensor colsum = sum(ax, {r}, false, loc);
    return p > 0 ? max(colsum, {after(c, r)}, false, loc) : min(colsum, {after(c, r)}, false, loc);
  }
  if (std::isinf(p)) {
    Tensor rowsum = sum(ax, {c}, false, loc);
    return p > 0 ? max(rowsum, {after(r, c)}, false, loc) : min(rowsum, {after(r, c)}, false, loc);
  }
  fail(ErrorKind::Value, "linalg.norm: invalid norm order ", p, " for matrices", at_loc(loc));
}

Tensor norm_impl(const Tensor& x0, std::optional<double> ord, std::string_view named, Dims axis,
                 bool keepdims, const Loc& loc) {
  detail::check_defined(x0, "linalg.norm", loc);
  Tensor x = x0.astype(detail::float_dtype(x0.dtype()), loc);
  if (axis.empty()) {
    if (!ord && named.empty()) { // the 2-norm of every element
      Dims all(std::size_t(x.ndim()));
      for (std::size_t i = 0; i < all.size(); ++i) all[i] = int64_t(i);
      return keep(sqrt(sum(x * x, all, false, loc), loc), x, all, keepdims, loc);
    }
    if (x.ndim() != 1 && x.ndim() != 2)
      fail(ErrorKind::Shape, "linalg.norm: an ord without axis needs a 1-D or 2-D x, got ",
           ir::short_str(x.shape()), at_loc(loc));
    for (int64_t i = 0; i < x.ndim(); ++i) axis.push_back(i);
  }
  axis = norm_axes(x, axis, loc);
  if (axis.size() == 1) {
    if (!named.empty())
      fail(ErrorKind::Value, "linalg.norm: invalid norm order \"", named, "\" for vectors",
           at_loc(loc));
    return keep(vector_norm(x, ord, axis[0], loc), x, axis, keepdims, loc);
  }
  return keep(matrix_norm(x, ord, named, axis[0], axis[1], loc), x, axis, keepdims, loc);
}

} // namespace

Tensor norm(const Tensor& x, std::optional<double> ord, Dims axis, bool keepdims, Loc loc) {
  return norm_impl(x, ord, {}, std::move(axis), keepdims, loc);
}

Tensor norm(const Tensor& x, std::string_view ord, Dims axis, bool keepdims, Loc loc) {
  if (ord.empty())
    fail(ErrorKind::Value, "linalg.norm: an empty ord string (fro or nuc expected)", at_loc(loc));
  return norm_impl(x, std::nullopt, ord, std::move(axis), keepdims, loc);
}

} // namespace rlx::linalg
