// src/autodiff/linalg.cpp -- VJP and JVP rules of the linear-algebra kinds (ops.def's Linalg
// family), written with the graph's own ops (matmul, solve, transposes, masks) so their
// derivatives are graphs too. The formulas are the standard ones (numpy has none; these follow
// PyTorch's and JAX's): solve by the implicit function theorem, log|det| through A^-T, cholesky,
// qr (tall, square or wide), eigh (distinct eigenvalues) and svd (reduced or square, distinct
// non-zero singular values) through their factors. Packed results (qr, svd, eigh) are split into
// their factors here, the cotangent likewise. eigh and cholesky read a's lower triangle: their VJPs
// give the symmetric gradient (PyTorch's and JAX's convention), their JVPs take the tangent's lower
// triangle as the symmetric matrix it stands for, so both agree with the kernel on symmetric
// perturbations.
#include "linalg.hpp"

#include <numeric>

namespace rlx::autodiff::linalg {

namespace {

using Grads = std::vector<Grad>;
using Want = std::span<const char>;

/// The matrix helpers of one node: its dtype and batch (leading) sizes.
struct La {
  Builder& b;
  DType t;
  Ints lead;

  La(Builder& bb, NodeId a) : b(bb), t(bb.shape(a).dtype()) {
    Ints s = bb.sizes(a);
    lead.assign(s.begin(), s.end() - 2);
  }
  Ints with(std::initializer_list<int64_t> tail) const {
    Ints d = lead;
    d.insert(d.end(), tail);
    return d;
  }
  int64_t last(NodeId x) const { return b.rank(x) - 1; }
  NodeId mT(NodeId x) {
    Ints p(std::size_t(b.rank(x)));
    std::iota(p.begin(), p.end(), 0);
    std::swap(p[p.size() - 2], p[p.size() - 1]);
    return b.transpose(x, p);
  }
  NodeId mm(NodeId x, NodeId y) { return b.op(OpKind::MatMul, {x, y}); }
  NodeId solve(NodeId a, NodeId x) { return b.op(OpKind::Solve, {a, x}); }
  NodeId scale(NodeId x, double s) { return b.mul(x, b.like(s, x)); }
  /// An [n, n] constant: `diag` on the diagonal, `below` under it, `above` over it.
  NodeId mask(int64_t n, double diag, double below, double above) {
    std::vector<double> v(std::size_t(n * n));
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < n; ++j)
        v[std::size_t(i * n + j)] = i == j ? diag : i > j ? below : above;
    return b.tensor(v, Shape({n, n}, t));
  }
  NodeId eye(int64_t n) { return mask(n, 1, 0, 0); }
  /// The identity repeated over the batch (solve needs equal leading axes).
  NodeId batch_eye(int64_t n) { return b.expand_to(eye(n), Shape::of(with({n, n}), t)); }
  /// Elements [start, start + r*c) of the packed last axis as [.., r, c].
  NodeId mat(NodeId packed, int64_t start, int64_t r, int64_t c) {
    return b.reshape(b.narrow(packed, last(packed), start, r * c), with({r, c}));
  }
  NodeId vec(NodeId packed, int64_t start, int64_t len) {
    return b.narrow(packed, last(packed), start, len);
  }
  NodeId row(NodeId v) { return b.reshape(v, with({1, b.sizes(v).back()})); } ///< [.., 1, k]
  NodeId col(NodeId v) { return b.reshape(v, with({b.sizes(v).back(), 1})); } ///< [.., k, 1]
  NodeId flat(NodeId m) {
    Ints s = b.sizes(m);
    return b.reshape(m, with({s[s.size() - 2] * s.back()}));
  }
  NodeId pack(std::vector<NodeId> parts) {
    std::vector<NodeId> p;
    for (NodeId x : parts)
      if (b.sizes(x).back() > 0) p.push_back(x);
    if (p.empty()) return b.zeros(Shape::of(with({0}), t));
    return b.concat(p, b.rank(parts[0]) - 1);
  }
  NodeId diag(NodeId m, int64_t n) { return b.sum(b.mul(m, eye(n)), {b.rank(m) - 1}, false); }
  NodeId skew(NodeId x) { return b.sub(x, mT(x)); }
  /// The symmetric matrix a's lower triangle stands for: tril(a) + tril(a, -1)^T.
  NodeId sym_lower(NodeId a, int64_t n) {
    return b.add(b.mul(a, mask(n, 1, 1, 0)), mT(b.mul(a, mask(n, 0, 1, 0))));
  }
  /// x B^-1 for a square B: (B^-T x^T)^T.
  NodeId right_solve(NodeId x, NodeId bm) { return mT(solve(mT(bm), mT(x))); }
};

NodeId tangent_or_zero(Builder& b, const Node& n, std::span<const Grad> t, std::size_t i) {
  return t[i] ? *t[i] : b.zeros(b.shape(n.inputs[i]));
}

struct Sizes {
  int64_t m, n, k;
};
Sizes sizes_of(Builder& b, NodeId a) {
  Ints s = b.sizes(a);
  int64_t m = s[s.size() - 2], n = s.back();
  return {m, n, std::min(m, n)};
}

void need_reduced_svd(const Node& n, const Sizes& s) {
  if (n.op.attrs<ir::SvdAttrs>().full_matrices && s.m != s.n)
    fail(ErrorKind::Unsupported, "autodiff: the derivative of svd with full_matrices of a ", s.m,
         "x", s.n,
         " matrix is not defined (the extra singular vectors are not unique); use "
         "full_matrices = false");
}

} // namespace

// ---- solve: x = A^-1 b. dB = A^-T dX, dA = -dB X^T; forward dX = A^-1 (dB - dA X).

Grads vjp_solve(Builder& b, const Node& n, NodeId dy, Want want) {
  NodeId a = n.inputs[0];
  La l(b, a);
  const bool vec = b.rank(n.inputs[1]) + 1 == b.rank(a);
  NodeId db = l.solve(l.mT(a), dy);
  Grads g(2);
  if (want[1]) g[1] = db;
  if (want[0]) g[0] = b.neg(l.mm(vec ? l.col(db) : db, l.mT(vec ? l.col(n.id) : n.id)));
  return g;
}

Grad jvp_solve(Builder& b, const Node& n, std::span<const Grad> t) {
  NodeId a = n.inputs[0];
  La l(b, a);
  const bool vec = b.rank(n.inputs[1]) + 1 == b.rank(a);
  NodeId rhs = tangent_or_zero(b, n, t, 1);
  if (t[0]) {
    NodeId ax = l.mm(*t[0], vec ? l.col(n.id) : n.id);
    rhs = b.sub(rhs, vec ? b.reshape(ax, b.sizes(n.id)) : ax);
  }
  return l.solve(a, rhs);
}

// ---- slogdet: d log|det A| = tr(A^-1 dA), so its cotangent is g A^-T; the sign is constant.

Grads vjp_slogdet(Builder& b, const Node& n, NodeId dy, Want) {
  NodeId a = n.inputs[0];
  La l(b, a);
  int64_t sz = b.sizes(a).back();
  NodeId g = b.reshape(l.vec(dy, 1, 1), l.with({1, 1}));
  return {b.mul(g, l.solve(l.mT(a), l.batch_eye(sz)))};
}

Grad jvp_slogdet(Builder& b, const Node& n, std::span<const Grad> t) {
  NodeId a = n.inputs[0];
  La l(b, a);
  int64_t sz = b.sizes(a).back();
  int64_t r = b.rank(a);
  NodeId tr = b.sum(b.mul(l.solve(a, *t[0]), l.eye(sz)), {r - 2, r - 1}, false);
  NodeId d = b.reshape(tr, l.with({1}));
  return b.concat({b.zeros(b.shape(d)), d}, r - 2);
}

// ---- cholesky: A = L L^T. With Phi(X) = the lower triangle of X, diagonal halved:
// dL = L Phi(L^-1 dA L^-T); the cotangent is sym(L^-T Phi(L^T dL) L^-1).

Grads vjp_cholesky(Builder& b, const Node& n, NodeId dy, Want) {
  La l(b, n.inputs[0]);
  int64_t sz = b.sizes(n.id).back();
  NodeId lm = n.id;
  NodeId p = b.mul(l.mm(l.mT(lm), dy), l.mask(sz, 0.5, 1, 0));
  NodeId s = l.right_solve(l.solve(l.mT(lm), p), lm);
  return {l.scale(b.add(s, l.mT(s)), 0.5)};
}

Grad jvp_cholesky(Builder& b, const Node& n, std::span<const Grad> t) {
  La l(b, n.inputs[0]);
  int64_t sz = b.sizes(n.id).back();
  NodeId lm = n.id;
  NodeId inner = l.right_solve(l.solve(lm, l.sym_lower(*t[0], sz)), l.mT(lm));
  return l.mm(lm, b.mul(inner, l.mask(sz, 0.5, 1, 0)));
}

// ---- qr. Square or tall (M >= N): with M = R dR^T - dQ^T Q, the cotangent is
// (dQ + Q copyltu(M)) R^-T, where copyltu mirrors the lower triangle upwards. Forward (JAX's
// rule): C = Q^T dA R^-1, W = tril(C, -1) - tril(C, -1)^T, dQ = Q (W - C) + dA R^-1,
// dR = (C - W) R. Wide (M < N, PyTorch's split): A = [X | Y] with X square, R = [U | V],
// Q U = X and V = Q^T Y; X goes through the square rule with dQ + Y dV^T, and dY = Q dV.

namespace {

/// The square/tall rule's cotangent of A given Q, R and their cotangents (R square).
NodeId qr_vjp_tall(La& l, NodeId q, NodeId r, NodeId dq, NodeId dr, int64_t k) {
  Builder& b = l.b;
  NodeId mm = b.sub(l.mm(r, l.mT(dr)), l.mm(l.mT(dq), q));
  NodeId copyltu = b.add(b.mul(mm, l.mask(k, 1, 1, 0)), l.mT(b.mul(mm, l.mask(k, 0, 1, 0))));
  return l.right_solve(b.add(dq, l.mm(q, copyltu)), l.mT(r));
}

/// The square/tall rule's (dQ, dR) given Q, R and the tangent of A (R square).
std::pair<NodeId, NodeId> qr_jvp_tall(La& l, NodeId q, NodeId r, NodeId da, int64_t k) {
  Builder& b = l.b;
  NodeId da_rinv = l.right_solve(da, r);
  NodeId c = l.mm(l.mT(q), da_rinv);
  NodeId low = b.mul(c, l.mask(k, 0, 1, 0));
  NodeId w = b.sub(low, l.mT(low));
  return {b.add(l.mm(q, b.sub(w, c)), da_rinv), l.mm(b.sub(c, w), r)};
}

} // namespace

Grads vjp_qr(Builder& b, const Node& n, NodeId dy, Want) {
  NodeId a = n.inputs[0];
  Sizes s = sizes_of(b, a);
  La l(b, a);
  NodeId q = l.mat(n.id, 0, s.m, s.k), r = l.mat(n.id, s.m * s.k, s.k, s.n);
  NodeId dq = l.mat(dy, 0, s.m, s.k), dr = l.mat(dy, s.m * s.k, s.k, s.n);
  if (s.m >= s.n) return {qr_vjp_tall(l, q, r, dq, dr, s.k)};
  const int64_t last = b.rank(a) - 1, rest = s.n - s.m;
  NodeId u = b.narrow(r, last, 0, s.m), du = b.narrow(dr, last, 0, s.m);
  NodeId dv = b.narrow(dr, last, s.m, rest), y = b.narrow(a, last, s.m, rest);
  NodeId dx = qr_vjp_tall(l, q, u, b.add(dq, l.mm(y, l.mT(dv))), du, s.k);
  return {b.concat({dx, l.mm(q, dv)}, last)};
}

Grad jvp_qr(Builder& b, const Node& n, std::span<const Grad> t) {
  NodeId a = n.inputs[0];
  Sizes s = sizes_of(b, a);
  La l(b, a);
  NodeId q = l.mat(n.id, 0, s.m, s.k), r = l.mat(n.id, s.m * s.k, s.k, s.n);
  if (s.m >= s.n) {
    auto [dq, dr] = qr_jvp_tall(l, q, r, *t[0], s.k);
    return l.pack({l.flat(dq), l.flat(dr)});
  }
  const int64_t last = b.rank(a) - 1, rest = s.n - s.m;
  NodeId u = b.narrow(r, last, 0, s.m), y = b.narrow(a, last, s.m, rest);
  NodeId dx = b.narrow(*t[0], last, 0, s.m), dyy = b.narrow(*t[0], last, s.m, rest);
  auto [dq, du] = qr_jvp_tall(l, q, u, dx, s.k);
  NodeId dv = b.add(l.mm(l.mT(dq), y), l.mm(l.mT(q), dyy)); // V = Q^T Y
  return l.pack({l.flat(dq), l.flat(b.concat({du, dv}, last))});
}

// ---- eigh: A = V diag(w) V^T. With F_ij = 1/(w_j - w_i) off the diagonal: dw = diag(V^T dA V),
// dV = V (F o V^T dA V); the cotangent is V (diag(dw) + F o skew(V^T dV) / 2) V^T.

Grads vjp_eigh(Builder& b, const Node& n, NodeId dy, Want) {
  NodeId a = n.inputs[0];
  La l(b, a);
  int64_t sz = b.sizes(a).back();
  NodeId w = l.vec(n.id, 0, sz), v = l.mat(n.id, sz, sz, sz);
  NodeId dw = l.vec(dy, 0, sz), dv = l.mat(dy, sz, sz, sz);
  NodeId e = b.add(b.sub(l.row(w), l.col(w)), l.eye(sz)); // w_j - w_i, 1 on the diagonal
  NodeId inner =
      b.add(b.div(l.scale(l.skew(l.mm(l.mT(v), dv)), 0.5), e), b.mul(l.row(dw), l.eye(sz)));
  return {l.mm(l.mm(v, inner), l.mT(v))};
}

Grad jvp_eigh(Builder& b, const Node& n, std::span<const Grad> t) {
  NodeId a = n.inputs[0];
  La l(b, a);
  int64_t sz = b.sizes(a).back();
  NodeId w = l.vec(n.id, 0, sz), v = l.mat(n.id, sz, sz, sz);
  NodeId m = l.mm(l.mT(v), l.mm(l.sym_lower(*t[0], sz), v));
  NodeId e = b.add(b.sub(l.row(w), l.col(w)), l.eye(sz));
  NodeId f = b.div(l.mask(sz, 0, 1, 1), e);
  NodeId dv = l.mm(v, b.mul(f, m));
  return l.pack({l.diag(m, sz), l.flat(dv)});
}

// ---- svd: A = U diag(S) Vh (reduced). PyTorch's svd_backward and JAX's svd_jvp_rule, real case,
// with E_ij = S_j^2 - S_i^2; the terms with (I - U U^T) and (I - V V^T) exist when M > K or N > K.

Grads vjp_svd(Builder& b, const Node& n, NodeId dy, Want) {
  NodeId a = n.inputs[0];
  Sizes s = sizes_of(b, a);
  need_reduced_svd(n, s);
  La l(b, a);
  const int64_t k = s.k, us = s.m * k, vs = us + k;
  NodeId u = l.mat(n.id, 0, s.m, k), sv = l.vec(n.id, us, k), vh = l.mat(n.id, vs, k, s.n);
  NodeId gu = l.mat(dy, 0, s.m, k), gs = l.vec(dy, us, k), gvh = l.mat(dy, vs, k, s.n);
  NodeId s2 = b.mul(sv, sv);
  NodeId e = b.add(b.sub(l.row(s2), l.col(s2)), l.eye(k));
  NodeId uhgu = l.skew(l.mm(l.mT(u), gu)), vhgv = l.skew(l.mm(vh, l.mT(gvh)));
  NodeId core = b.div(b.add(b.mul(uhgu, l.row(sv)), b.mul(l.col(sv), vhgv)), e);
  core = b.add(core, b.mul(l.row(gs), l.eye(k)));
  NodeId ga = l.mm(l.mm(u, core), vh);
  if (s.m > k) {
    NodeId gus = b.div(gu, l.row(sv));
    ga = b.add(ga, l.mm(b.sub(gus, l.mm(u, l.mm(l.mT(u), gus))), vh));
  }
  if (s.n > k) {
    NodeId sgvh = b.div(gvh, l.col(sv));
    ga = b.add(ga, l.mm(u, b.sub(sgvh, l.mm(l.mm(sgvh, l.mT(vh)), vh))));
  }
  return {ga};
}

Grad jvp_svd(Builder& b, const Node& n, std::span<const Grad> t) {
  NodeId a = n.inputs[0];
  Sizes s = sizes_of(b, a);
  need_reduced_svd(n, s);
  La l(b, a);
  const int64_t k = s.k, us = s.m * k, vs = us + k;
  NodeId u = l.mat(n.id, 0, s.m, k), sv = l.vec(n.id, us, k), vh = l.mat(n.id, vs, k, s.n);
  NodeId v = l.mT(vh), da = *t[0];
  NodeId ds = l.mm(l.mT(u), l.mm(da, v));
  NodeId s2 = b.mul(sv, sv);
  NodeId f = b.div(l.mask(k, 0, 1, 1), b.add(b.sub(l.row(s2), l.col(s2)), l.eye(k)));
  NodeId dss = b.mul(ds, l.row(sv)), sds = b.mul(l.col(sv), ds);
  NodeId du = l.mm(u, b.mul(f, b.add(dss, l.mT(dss))));
  NodeId dv = l.mm(v, b.mul(f, b.add(sds, l.mT(sds))));
  if (s.m > k) {
    NodeId dav = l.mm(da, v);
    du = b.add(du, b.div(b.sub(dav, l.mm(u, l.mm(l.mT(u), dav))), l.row(sv)));
  }
  if (s.n > k) {
    NodeId dahu = l.mm(l.mT(da), u);
    dv = b.add(dv, b.div(b.sub(dahu, l.mm(v, l.mm(vh, dahu))), l.row(sv)));
  }
  return l.pack({l.flat(du), l.diag(ds, k), l.flat(l.mT(dv))});
}

} // namespace rlx::autodiff::linalg
