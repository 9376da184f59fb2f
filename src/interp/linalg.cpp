// src/interp/linalg.cpp -- the linear-algebra kernels: solve, slogdet, cholesky, qr, svd, eigh.
// LAPACK does every factorization (through LAPACKE, Debian's liblapacke): factorizations are
// numerically delicate (pivoting, scaling, convergence of the iterative eigen- and singular-value
// solvers), and the project's rule is to use a well-kept library for them, never one written by
// hand. Unlike the other kernels they compute in the operands' dtype (LAPACK's s* routines for
// f32, d* for f64), as numpy and torch do, so f32 results match theirs. Each matrix of the batch
// (the leading axes) is copied into a work array and factored alone. The JIT runs these kernels
// through its interpreter steps, so both backends share them.
//
// LU (solve, slogdet) calls LAPACK in its own column-major layout, where a row-major A is A^T: it
// factors A^T and solves with the transpose (getrs trans = 'T'), so nothing is transposed but the
// right-hand sides when there are several. LAPACKE's row-major interface transposes A in and out
// of getrf and again into getrs: at N = 512 that doubled a solve's time.
#include "kernels.hpp"

#include <lapacke.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <vector>

namespace rlx::interp::detail {

using ir::DType;

namespace {

template <class T> T* data_of(Buffer& b) { return reinterpret_cast<T*>(b.bytes().data()); }
template <class T> const T* data_of(const Buffer& b) {
  return reinterpret_cast<const T*>(b.bytes().data());
}

/// The last two sizes of a matrix operand and how many matrices its leading axes hold.
struct Batch {
  int64_t count = 1, m = 0, n = 0;
};
Batch batch_of(const Buffer& a) {
  const auto& d = a.shape().dims();
  Batch b;
  b.m = d[d.size() - 2].size();
  b.n = d.back().size();
  for (std::size_t i = 0; i + 2 < d.size(); ++i) b.count *= d[i].size();
  return b;
}

/// LAPACK's info: negative is an argument we passed wrongly (a bug here), positive is the
/// matrix's fault and is reported by the caller.
void check_args(lapack_int info, const char* routine) {
  if (info < 0)
    throw InternalError(rlx::detail::cat("LAPACK ", routine, ": argument ", -info, " is invalid"));
}

// ---- The s*/d* pairs, chosen by T.

// LU of a square column-major matrix. The _work entries skip LAPACKE's layout handling and its
// NaN scan, which reported a NaN in A as an invalid argument (an internal error here): a NaN now
// goes into LAPACK like any value.
lapack_int getrf_col(int n, float* a, lapack_int* p) {
  return LAPACKE_sgetrf_work(LAPACK_COL_MAJOR, n, n, a, n, p);
}
lapack_int getrf_col(int n, double* a, lapack_int* p) {
  return LAPACKE_dgetrf_work(LAPACK_COL_MAJOR, n, n, a, n, p);
}
/// Solves M^T X = B for the column-major n x k matrix B (leading dimension n), M factored by
/// getrf_col.
lapack_int getrs_col_t(int n, int k, const float* a, const lapack_int* p, float* b) {
  return LAPACKE_sgetrs_work(LAPACK_COL_MAJOR, 'T', n, k, a, n, p, b, n);
}
lapack_int getrs_col_t(int n, int k, const double* a, const lapack_int* p, double* b) {
  return LAPACKE_dgetrs_work(LAPACK_COL_MAJOR, 'T', n, k, a, n, p, b, n);
}
lapack_int potrf(int n, float* a) { return LAPACKE_spotrf(LAPACK_ROW_MAJOR, 'L', n, a, n); }
lapack_int potrf(int n, double* a) { return LAPACKE_dpotrf(LAPACK_ROW_MAJOR, 'L', n, a, n); }
lapack_int geqrf(int m, int n, float* a, float* tau) {
  return LAPACKE_sgeqrf(LAPACK_ROW_MAJOR, m, n, a, n, tau);
}
lapack_int geqrf(int m, int n, double* a, double* tau) {
  return LAPACKE_dgeqrf(LAPACK_ROW_MAJOR, m, n, a, n, tau);
}
lapack_int orgqr(int m, int k, float* a, int lda, const float* tau) {
  return LAPACKE_sorgqr(LAPACK_ROW_MAJOR, m, k, k, a, lda, tau);
}
lapack_int orgqr(int m, int k, double* a, int lda, const double* tau) {
  return LAPACKE_dorgqr(LAPACK_ROW_MAJOR, m, k, k, a, lda, tau);
}
lapack_int gesdd(char job, int m, int n, float* a, float* s, float* u, int ldu, float* vt,
                 int ldvt) {
  return LAPACKE_sgesdd(LAPACK_ROW_MAJOR, job, m, n, a, n, s, u, ldu, vt, ldvt);
}
lapack_int gesdd(char job, int m, int n, double* a, double* s, double* u, int ldu, double* vt,
                 int ldvt) {
  return LAPACKE_dgesdd(LAPACK_ROW_MAJOR, job, m, n, a, n, s, u, ldu, vt, ldvt);
}
lapack_int syevd(int n, float* a, float* w) {
  return LAPACKE_ssyevd(LAPACK_ROW_MAJOR, 'V', 'L', n, a, n, w);
}
lapack_int syevd(int n, double* a, double* w) {
  return LAPACKE_dsyevd(LAPACK_ROW_MAJOR, 'V', 'L', n, a, n, w);
}

/// LAPACK takes 32-bit sizes; larger matrices are refused rather than truncated.
int lapack_size(const ir::Node& n, int64_t v) {
  if (v > std::numeric_limits<lapack_int>::max())
    fail(ErrorKind::Limit, n.op.name(), ": a matrix dimension of ", v,
         " exceeds LAPACK's 32-bit sizes");
  return int(v);
}

/// A work array that is overwritten before it is read (a std::vector would zero it first).
template <class T> std::unique_ptr<T[]> scratch(int64_t count) {
  return std::unique_ptr<T[]>(new T[static_cast<std::size_t>(std::max<int64_t>(count, 1))]);
}

/// Copies the rows x cols row-major matrix src into dst with its rows as columns (dst's leading
/// dimension is rows), in tiles so that both sides are read and written a cache line at a time.
template <class T> void transpose(const T* src, int64_t rows, int64_t cols, T* dst) {
  constexpr int64_t kTile = 32;
  for (int64_t r0 = 0; r0 < rows; r0 += kTile)
    for (int64_t c0 = 0; c0 < cols; c0 += kTile)
      for (int64_t r = r0; r < std::min(rows, r0 + kTile); ++r)
        for (int64_t c = c0; c < std::min(cols, c0 + kTile); ++c)
          dst[c * rows + r] = src[r * cols + c];
}

/// A X = B per batch element. The copy of A (row-major, so LAPACK's A^T) is factored as it
/// stands and A X = B is solved as (A^T)^T X = B. One right-hand side is a column already; k of
/// them (row-major [n, k], which LAPACK would read as B^T) are transposed into a column-major
/// work array and back, O(n k) against the solve's O(n^2 k).
template <class T> Buffer solve(const ir::Node& nd, const Buffer& a, const Buffer& b) {
  Batch g = batch_of(a);
  const int n = lapack_size(nd, g.n);
  const int k =
      b.shape().rank() == a.shape().rank() ? lapack_size(nd, b.shape().dims().back().size()) : 1;
  Buffer out = Buffer::uninitialized(nd.shape);
  if (out.numel() == 0) return out;
  const int64_t nn = int64_t(n) * n, nk = int64_t(n) * k;
  auto lu = scratch<T>(nn);
  auto piv = scratch<lapack_int>(n);
  auto cols = scratch<T>(k > 1 ? nk : 0);
  if (k == 1) std::memcpy(out.bytes().data(), b.bytes().data(), b.bytes().size());
  for (int64_t i = 0; i < g.count; ++i) {
    std::memcpy(lu.get(), data_of<T>(a) + i * nn, std::size_t(nn) * sizeof(T));
    lapack_int info = getrf_col(n, lu.get(), piv.get());
    check_args(info, "getrf");
    if (info > 0)
      fail(ErrorKind::Value, nd.op.name(), ": the matrix of batch element ", i,
           " is singular (LU pivot ", info - 1, " is zero)");
    T* x = data_of<T>(out) + i * nk;
    if (k == 1) {
      check_args(getrs_col_t(n, 1, lu.get(), piv.get(), x), "getrs");
      continue;
    }
    transpose(data_of<T>(b) + i * nk, n, k, cols.get());
    check_args(getrs_col_t(n, k, lu.get(), piv.get(), cols.get()), "getrs");
    transpose(cols.get(), k, n, x);
  }
  return out;
}

/// sign and log |det| from the LU of A^T (det A^T = det A, and a row swap of A^T changes the sign
/// as one of A would).
template <class T> Buffer slogdet(const ir::Node& nd, const Buffer& a) {
  Batch g = batch_of(a);
  const int n = lapack_size(nd, g.n);
  Buffer out = Buffer::uninitialized(nd.shape);
  const int64_t nn = int64_t(n) * n;
  auto lu = scratch<T>(nn);
  auto piv = scratch<lapack_int>(n);
  for (int64_t i = 0; i < g.count; ++i) {
    T sign = 1, logdet = 0;
    if (n > 0) {
      std::memcpy(lu.get(), data_of<T>(a) + i * nn, std::size_t(nn) * sizeof(T));
      lapack_int info = getrf_col(n, lu.get(), piv.get());
      check_args(info, "getrf");
      if (info > 0) {
        sign = 0;
        logdet = -std::numeric_limits<T>::infinity();
      } else {
        for (int j = 0; j < n; ++j) {
          T u = lu[std::size_t(j) * std::size_t(n) + std::size_t(j)];
          if (u < 0) sign = -sign;
          if (piv[std::size_t(j)] != j + 1) sign = -sign; // a row swap
          logdet += std::log(std::abs(u));
        }
      }
    }
    data_of<T>(out)[2 * i] = sign;
    data_of<T>(out)[2 * i + 1] = logdet;
  }
  return out;
}

template <class T> Buffer cholesky(const ir::Node& nd, const Buffer& a) {
  Batch g = batch_of(a);
  const int n = lapack_size(nd, g.n);
  Buffer out = Buffer::uninitialized(nd.shape);
  if (out.numel() == 0) return out;
  std::memcpy(out.bytes().data(), a.bytes().data(), a.bytes().size());
  for (int64_t i = 0; i < g.count; ++i) {
    T* l = data_of<T>(out) + i * n * n;
    lapack_int info = potrf(n, l);
    check_args(info, "potrf");
    if (info > 0)
      fail(ErrorKind::Value, nd.op.name(), ": the matrix of batch element ", i,
           " is not positive definite (leading minor ", info, ")");
    for (int r = 0; r < n; ++r) // potrf leaves the upper triangle as it was
      for (int c = r + 1; c < n; ++c) l[r * n + c] = 0;
  }
  return out;
}

template <class T> Buffer qr(const ir::Node& nd, const Buffer& a) {
  Batch g = batch_of(a);
  const int m = lapack_size(nd, g.m), n = lapack_size(nd, g.n), k = std::min(m, n);
  Buffer out(nd.shape); // zeros: R's lower part
  if (k == 0) return out;
  const int64_t per = int64_t(m) * k + int64_t(k) * n;
  std::vector<T> work(std::size_t(m) * std::size_t(n)), tau(static_cast<std::size_t>(k));
  for (int64_t i = 0; i < g.count; ++i) {
    std::copy_n(data_of<T>(a) + i * m * n, work.size(), work.data());
    check_args(geqrf(m, n, work.data(), tau.data()), "geqrf");
    T* q = data_of<T>(out) + i * per;
    T* r = q + int64_t(m) * k;
    for (int row = 0; row < k; ++row)
      for (int c = row; c < n; ++c) r[row * n + c] = work[std::size_t(row * n + c)];
    check_args(orgqr(m, k, work.data(), n, tau.data()), "orgqr"); // Q in the first k columns
    for (int row = 0; row < m; ++row)
      for (int c = 0; c < k; ++c) q[row * k + c] = work[std::size_t(row * n + c)];
  }
  return out;
}

template <class T> Buffer svd(const ir::Node& nd, const Buffer& a) {
  Batch g = batch_of(a);
  const int m = lapack_size(nd, g.m), n = lapack_size(nd, g.n), k = std::min(m, n);
  const bool full = nd.op.attrs<ir::SvdAttrs>().full_matrices;
  const int pu = full ? m : k, pv = full ? n : k;
  Buffer out(nd.shape);
  const int64_t per = int64_t(m) * pu + k + int64_t(pv) * n;
  if (per == 0) return out;
  std::vector<T> work(std::size_t(m) * std::size_t(n));
  for (int64_t i = 0; i < g.count; ++i) {
    T* u = data_of<T>(out) + i * per;
    T* s = u + int64_t(m) * pu;
    T* vt = s + k;
    if (k == 0) { // an empty matrix: the full factors are identities
      for (int j = 0; j < pu && j < m; ++j) u[j * pu + j] = 1;
      for (int j = 0; j < pv && j < n; ++j) vt[j * n + j] = 1;
      continue;
    }
    std::copy_n(data_of<T>(a) + i * m * n, work.size(), work.data());
    lapack_int info = gesdd(full ? 'A' : 'S', m, n, work.data(), s, u, pu, vt, n);
    check_args(info, "gesdd");
    if (info > 0)
      fail(ErrorKind::Value, nd.op.name(), ": the SVD of batch element ", i, " did not converge");
  }
  return out;
}

template <class T> Buffer eigh(const ir::Node& nd, const Buffer& a) {
  Batch g = batch_of(a);
  const int n = lapack_size(nd, g.n);
  Buffer out = Buffer::uninitialized(nd.shape);
  const int64_t per = int64_t(n) + int64_t(n) * n;
  if (per == 0) return out;
  for (int64_t i = 0; i < g.count; ++i) {
    T* w = data_of<T>(out) + i * per;
    T* v = w + n;
    std::copy_n(data_of<T>(a) + i * n * n, std::size_t(n) * std::size_t(n), v);
    lapack_int info = syevd(n, v, w);
    check_args(info, "syevd");
    if (info > 0)
      fail(ErrorKind::Value, nd.op.name(), ": the eigensolver did not converge on batch element ",
           i);
  }
  return out;
}

/// The kernel for f32 or f64 (the shape rule admits nothing else).
template <class F> Buffer by_dtype(const ir::Node& n, F f) {
  if (n.shape.dtype() == DType::F32) return f(float{});
  return f(double{});
}

} // namespace

RLX_KERNEL(Solve) {
  return by_dtype(n, [&](auto t) { return solve<decltype(t)>(n, *in[0], *in[1]); });
}
RLX_KERNEL(Slogdet) {
  return by_dtype(n, [&](auto t) { return slogdet<decltype(t)>(n, *in[0]); });
}
RLX_KERNEL(Cholesky) {
  return by_dtype(n, [&](auto t) { return cholesky<decltype(t)>(n, *in[0]); });
}
RLX_KERNEL(Qr) {
  return by_dtype(n, [&](auto t) { return qr<decltype(t)>(n, *in[0]); });
}
RLX_KERNEL(Svd) {
  return by_dtype(n, [&](auto t) { return svd<decltype(t)>(n, *in[0]); });
}
RLX_KERNEL(Eigh) {
  return by_dtype(n, [&](auto t) { return eigh<decltype(t)>(n, *in[0]); });
}

} // namespace rlx::interp::detail
