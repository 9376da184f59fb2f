#!/usr/bin/python3
"""tools/fit/try_rational_tanh.py -- why the JIT's tanh is not a rational function (a record).

Fits tanh(x) = x P(x^2) / Q(x^2) on [0, 9.02] (tanh rounds to 1 in f32 above 9.01) for the
relative error, by iteratively reweighted linear least squares (a Loeb / Lawson style iteration
towards minimax) in double, in the scaled variable u = x^2 / 9.02^2 so the basis stays
well-conditioned, with P(0) = Q(0) = 1 so tiny x returns x exactly. Then rounds the
coefficients to f32 and simulates the f32 evaluation as vmath.cpp would emit it (fma Horner,
a correctly rounded division, optionally one refinement step of the quotient) against the
correctly rounded tanh, reporting the worst ulp error.

Result on numpy 1.24 (2026-12-03): even where the approximation itself is within 0.2 ulp
(degrees 4/4 and up), the f32 evaluation of P and Q costs 5-6 ulp near |x| = 4-5, against the
2 ulp bound of the expm1 form vmath.cpp uses (tanh|x| = E / (E + 2), E = e^(2|x|) - 1).
Run: /usr/bin/python3 tools/fit/try_rational_tanh.py
"""
import numpy as np

TOP = 9.02
S = TOP * TOP


def fit_rational(u, r, m, n, iters=80):
    """r(u) ~ (1 + u P1(u)) / (1 + u Q1(u)), deg P = m, deg Q = n, minimax-like in relative error."""
    w = np.ones_like(u)
    q_prev = np.ones_like(u)
    for _ in range(iters):
        a = np.hstack([np.vander(u, m + 1, increasing=True)[:, 1:],
                       -(r[:, None]) * np.vander(u, n + 1, increasing=True)[:, 1:]])
        s = np.sqrt(w) / (r * q_prev)
        c, *_ = np.linalg.lstsq(a * s[:, None], (r - 1) * s, rcond=None)
        p = np.concatenate([[1.0], c[:m]])
        q = np.concatenate([[1.0], c[m:]])
        pv = np.polyval(p[::-1], u)
        qv = np.polyval(q[::-1], u)
        err = np.abs(pv / qv / r - 1)
        q_prev = qv
        w = w * err
        w /= w.sum()
    return p, q, err.max()


def horner_f32(c, x):
    """c lowest power first; each step one fma (one rounding)."""
    acc = np.full_like(x, np.float32(c[-1]))
    for ci in c[-2::-1]:
        acc = (acc.astype(np.float64) * x + np.float64(np.float32(ci))).astype(np.float32)
    return acc


def fma32(a, b, c):
    return (a.astype(np.float64) * b + c).astype(np.float32)


x = np.linspace(1e-4, TOP, 40000)
u = x * x / S
r = np.tanh(x) / x
xs = np.concatenate([np.linspace(0, TOP, 3_000_001), np.geomspace(1e-6, 1, 200001)]).astype(np.float32)
want = np.tanh(xs.astype(np.float64)).astype(np.float32)
z = (xs * xs).astype(np.float32)
for m, n in [(3, 3), (4, 3), (3, 4), (4, 4), (5, 4), (4, 5), (5, 5)]:
    p, q, exact = fit_rational(u, r, m, n)
    pz = [np.float32(c / S**k) for k, c in enumerate(p)]
    qz = [np.float32(c / S**k) for k, c in enumerate(q)]
    pv = horner_f32(pz, z)
    qv = horner_f32(qz, z)
    num = (xs.astype(np.float64) * pv).astype(np.float32)
    y = (num.astype(np.float64) / qv).astype(np.float32)  # correctly rounded division
    refined = fma32(fma32(-y, qv, num), (1.0 / qv.astype(np.float64)).astype(np.float32), y)
    for name, got in (("division", y), ("division + refinement", refined)):
        d = np.abs(got.view(np.int32).astype(np.int64) - want.view(np.int32).astype(np.int64))
        print("P deg %d / Q deg %d (in x^2): approximation %.2g relative; f32 %s: max %d ulp at x = %g"
              % (m, n, exact, name, d.max(), xs[d.argmax()]))
