#!/usr/bin/python3
"""tools/fit/fit_exp.py -- the polynomial of the JIT's f32 exp, expm1 step and tanh
(jit/llvm/vmath.cpp: exp_poly).

After the reduction x = n ln2 + r, |r| <= ln2/2, e^r = 1 + r + r^2 P(r) with P of degree 4
(degree 6 in all): fitted by weighted least squares on Chebyshev nodes for the relative error
of e^r - 1 - r against r^2 (numpy, double), then rounded to f32; the f32 evaluation (fma
Horner, as vmath.cpp emits it) is simulated to report the error in ulps of e^r.
Run: /usr/bin/python3 tools/fit/fit_exp.py
"""
import numpy as np

HALF_LN2 = np.log(2) / 2


def cheb_nodes(a, b, n):
    k = np.arange(n)
    return (a + b) / 2 + (b - a) / 2 * np.cos((2 * k + 1) * np.pi / (2 * n))


r = cheb_nodes(-HALF_LN2 * 1.001, HALF_LN2 * 1.001, 4000)
target = (np.expm1(r) - r) / (r * r)  # P(r)
weight = r * r / np.exp(r)  # error in P scaled to the relative error of e^r
a = np.vander(r, 5) * weight[:, None]
c, *_ = np.linalg.lstsq(a, target * weight, rcond=None)
c32 = [np.float32(v) for v in c]

rs = np.linspace(-HALF_LN2, HALF_LN2, 2_000_001).astype(np.float32)
rd = rs.astype(np.float64)
acc = np.full_like(rs, c32[0])
for ci in c32[1:]:
    acc = (acc.astype(np.float64) * rd + np.float64(ci)).astype(np.float32)
r2 = (rs * rs).astype(np.float32)
m = (acc.astype(np.float64) * r2 + rd).astype(np.float32)  # fma(p, r^2, r)
got = (m + np.float32(1)).astype(np.float32)
want = np.exp(rd).astype(np.float32)
ulps = np.abs(got.view(np.int32).astype(np.int64) - want.view(np.int32).astype(np.int64))
exact = np.abs(np.polyval(c, r) * r * r + r + 1 - np.exp(r)) / np.exp(r)
print("P (highest power first):", ", ".join("%.10ef" % v for v in c32))
print("approximation error (relative, double): %.3g" % exact.max())
print("f32 evaluation of e^r: max %d ulp, %.4f%% of points off by one" % (ulps.max(), 100 * (ulps > 0).mean()))
