// include/rlx/linalg.hpp -- numpy.linalg on Tensors (rlx::linalg), with numpy's semantics:
// every function works on the last two axes and is batched over the leading ones, on f32 or f64
// operands (other dtypes are an ErrorKind::Type error), computing in the operand's dtype. LAPACK
// does the factorizations (solve, slogdet, cholesky, qr, svd, eigh are primitives of the IR's
// Linalg family); inv, det, lstsq, pinv, norm, matrix_rank and matrix_power are compositions of
// them. Gradients: solve, inv, det, slogdet, cholesky, qr (full rank), eigh (distinct eigenvalues),
// svd (reduced, distinct singular values) and the compositions through them. Deliberate differences
// from numpy are listed in docs/semantics.md, the names in docs/numpy.md.
#pragma once

#include "rlx/tensor.hpp"

#include <cstdint>
#include <optional>
#include <string_view>
#include <utility>

namespace rlx::linalg {

/// numpy.linalg.solve: x with a x = b. a [.., N, N]; b [.., N, K], or [N] (numpy 2: only a 1-D
/// b is a vector). Leading axes broadcast. An exactly singular a is an rlx::Error (ErrorKind::
/// Value, numpy's LinAlgError) naming the batch element, raised when the value is computed.
Tensor solve(const Tensor& a, const Tensor& b, Loc loc = Loc::current());
/// numpy.linalg.inv: solve(a, eye(N)).
Tensor inv(const Tensor& a, Loc loc = Loc::current());
/// numpy.linalg.det: sign * exp(logabsdet) of slogdet (0 for a singular a).
Tensor det(const Tensor& a, Loc loc = Loc::current());
/// numpy.linalg.slogdet: (sign, log|det a|); a singular a gives (0, -inf).
struct Slogdet {
  Tensor sign, logabsdet;
};
Slogdet slogdet(const Tensor& a, Loc loc = Loc::current());
/// numpy.linalg.cholesky: the lower L with a = L L^T, read from a's lower triangle. An a that is
/// not positive definite is an rlx::Error naming the batch element.
Tensor cholesky(const Tensor& a, Loc loc = Loc::current());
/// numpy.linalg.qr(a, mode="reduced"): (Q [.., M, K], R [.., K, N]), K = min(M, N). Signs are
/// LAPACK's (geqrf: R's diagonal may be negative), as numpy's.
std::pair<Tensor, Tensor> qr(const Tensor& a, Loc loc = Loc::current());
/// numpy.linalg.svd(a, full_matrices): a = U diag(S) Vh with S descending. numpy's default
/// full_matrices = true gives U [.., M, M] and Vh [.., N, N]; false the reduced [.., M, K],
/// [.., K, N]. The singular vectors' signs are LAPACK's (gesdd), as numpy's.
struct Svd {
  Tensor U, S, Vh;
};
Svd svd(const Tensor& a, bool full_matrices = true, Loc loc = Loc::current());
/// numpy.linalg.svdvals (numpy 2): the singular values, descending.
Tensor svdvals(const Tensor& a, Loc loc = Loc::current());
/// numpy.linalg.eigh(a, UPLO="L"): eigenvalues ascending and the eigenvectors as columns, from
/// a's lower triangle.
struct Eigh {
  Tensor eigenvalues, eigenvectors;
};
Eigh eigh(const Tensor& a, Loc loc = Loc::current());
/// numpy.linalg.eigvalsh: eigh's eigenvalues.
Tensor eigvalsh(const Tensor& a, Loc loc = Loc::current());
/// numpy.linalg.lstsq(a, b, rcond)[0]: the minimum-norm least-squares solution through the SVD;
/// singular values at most rcond * max(S) count as zero. rcond nullopt: eps * max(M, N) (numpy's
/// default). a [.., M, N], b [.., M, K] or [M].
Tensor lstsq(const Tensor& a, const Tensor& b, std::optional<double> rcond = std::nullopt,
             Loc loc = Loc::current());
/// numpy.linalg.pinv(a, rcond=1e-15): V diag(1/S) U^T, singular values at most rcond * max(S)
/// dropped.
Tensor pinv(const Tensor& a, double rcond = 1e-15, Loc loc = Loc::current());
/// numpy.linalg.matrix_rank(a, tol): the number of singular values above tol (nullopt: numpy's
/// max(S) * max(M, N) * eps), as i64.
Tensor matrix_rank(const Tensor& a, std::optional<double> tol = std::nullopt,
                   Loc loc = Loc::current());
/// numpy.linalg.matrix_power: a^n by repeated squaring; n = 0 gives the identity, n < 0 inverts
/// first.
Tensor matrix_power(const Tensor& a, int64_t n, Loc loc = Loc::current());

/// numpy.linalg.norm(x, ord, axis, keepdims). ord nullopt: the 2-norm of the flattened x (no
/// axis), of a vector (one axis) or Frobenius (two axes). Vector ords: any p (inf: max |x|, -inf:
/// min |x|, 0: the count of non-zeros). Matrix ords: 1, -1 (max/min column sum of |x|), 2, -2
/// (largest/smallest singular value), inf, -inf (max/min row sum). axis: empty means every axis
/// for ord nullopt and otherwise the rank (1: the vector, 2: the matrix) of x.
Tensor norm(const Tensor& x, std::optional<double> ord = std::nullopt, Dims axis = {},
            bool keepdims = false, Loc loc = Loc::current());
/// numpy.linalg.norm with ord "fro" (Frobenius) or "nuc" (the sum of the singular values) over
/// two axes (empty: the last two of a 2-D x).
Tensor norm(const Tensor& x, std::string_view ord, Dims axis = {}, bool keepdims = false,
            Loc loc = Loc::current());

} // namespace rlx::linalg
