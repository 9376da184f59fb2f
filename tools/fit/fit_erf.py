#!/usr/bin/python3
"""tools/fit/fit_erf.py -- the polynomial coefficients of the JIT's f32 erf (jit/llvm/vmath.cpp).

Two pieces, each fitted by weighted least squares on Chebyshev nodes (relative error) with
numpy/scipy in double, then the coefficients are rounded to f32 and the f32 evaluation (fma
Horner, as vmath.cpp emits it) is simulated to report the error in ulps:
  |x| <  kSplit: erf(x) = x + x * P(x^2)
  |x| >= kSplit: erf(x) = 1 - exp(-x^2) * Q(1/|x|)   (Q(u) ~ erfc(x) e^(x^2), smooth in u)
Run: /usr/bin/python3 tools/fit/fit_erf.py
"""
import numpy as np
from scipy.special import erf, erfc

SPLIT = 0.875
TOP = 3.92  # erf(x) rounds to 1 in f32 above ~3.9192


def cheb_nodes(a, b, n):
    k = np.arange(n)
    return (a + b) / 2 + (b - a) / 2 * np.cos((2 * k + 1) * np.pi / (2 * n))


def fit(x, y, basis_x, degree, weight):
    a = np.vander(basis_x, degree + 1) * weight[:, None]
    c, *_ = np.linalg.lstsq(a, y * weight, rcond=None)
    return c  # highest power first


def horner_f32(c, x):
    acc = np.full_like(x, np.float32(c[0]))
    for ci in c[1:]:
        acc = (acc.astype(np.float64) * x + np.float32(ci)).astype(np.float32)  # fma: one rounding
    return acc


def ulps(got, want):
    g = got.astype(np.float32).view(np.int32).astype(np.int64)
    w = want.astype(np.float32).view(np.int32).astype(np.int64)
    return np.abs(g - w)


# Piece 1: (erf(x) - x) / x = P(x^2) on [0, SPLIT].
x = cheb_nodes(1e-4, SPLIT, 4000)
p = fit(x, (erf(x) - x) / x, x * x, 5, 1 / (erf(x) / x))
# Piece 2: Q(u) = erfc(x) exp(x^2) with u = 1/x on [1/TOP, 1/SPLIT].
x2 = cheb_nodes(SPLIT, TOP, 4000)
q = fit(x2, erfc(x2) * np.exp(x2 * x2), 1 / x2, 9, 1 / (erfc(x2) * np.exp(x2 * x2)))

xs = np.linspace(0, 4.5, 2_000_001).astype(np.float32)
xd = xs.astype(np.float64)
want = erf(xd).astype(np.float32)
z = (xs * xs).astype(np.float32)
small = (xs + (xs.astype(np.float64) * horner_f32(p, z)).astype(np.float32)).astype(np.float32)
u = (np.float32(1) / np.maximum(xs, np.float32(SPLIT))).astype(np.float32)
hi = (xs * xs).astype(np.float32)
lo = (xd * xd - hi).astype(np.float32)
e = np.exp(-hi.astype(np.float64)).astype(np.float32)  # vmath's exp: within 1 ulp
e = (e - (e.astype(np.float64) * lo)).astype(np.float32)
large = (np.float32(1) - (e.astype(np.float64) * horner_f32(q, u)).astype(np.float32)).astype(np.float32)
got = np.where(xs < SPLIT, small, large)
err = ulps(got, want)
print("P (x^2, highest first):", ", ".join(f"{np.float32(c)!r}f" for c in p))
print("Q (1/x, highest first):", ", ".join(f"{np.float32(c)!r}f" for c in q))
print("max ulp small:", err[xs < SPLIT].max(), " large:", err[xs >= SPLIT].max())
