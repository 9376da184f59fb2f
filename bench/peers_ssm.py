#!/usr/bin/python3
# bench/peers_ssm.py -- the Python peers of bench_ssm: Mamba's selective scan at [B=1, S=2048,
# H=768, N=16], Mamba-2's SSD scan at [B=1, S=1024, H=24, P=64, N=64] and Gated DeltaNet at
# [B=1, S=512, H=16, N=128], in f32, as numpy loops over time (each step vectorized over heads
# and state, one thread), on the C++ bench's inputs, sampled by its rule (peers.py: measure),
# printed as "@row" lines. Each result is checked against its recurrence in float64 before it
# is timed.
import sys

from peers import measure, parse_args, row, weyl

TABLE = "selective scan"
B, S, H, N = 1, 2048, 768, 16


def scan(x, delta, a, b, c, np, dtype):
    """y[t] = sum_n c[t, n] h[:, n], h = exp(delta[t] a) h + delta[t] b[t] x[t] (per channel)."""
    x, delta, a, b, c = (v.astype(dtype) for v in (x, delta, a, b, c))
    y = np.empty(x.shape, dtype)
    for bi in range(x.shape[0]):
        h = np.zeros(a.shape, dtype)
        for t in range(x.shape[1]):
            d = delta[bi, t][:, None]
            h = np.exp(d * a) * h + (d * x[bi, t][:, None]) * b[bi, t][None, :]
            y[bi, t] = h @ c[bi, t]
    return y


def mamba2(x, dt, a, b, c, np, dtype):
    """Per head h [P, N] = exp(dt a) h + dt x b^T; y = h c (one group)."""
    x, dt, a, b, c = (v.astype(dtype) for v in (x, dt, a, b, c))
    y = np.empty(x.shape, dtype)
    for bi in range(x.shape[0]):
        h = np.zeros((x.shape[2], x.shape[3], b.shape[2]), dtype)  # [H, P, N]
        for t in range(x.shape[1]):
            d = dt[bi, t][:, None, None]
            h = np.exp(d * a[:, None, None]) * h + (d * x[bi, t][:, :, None]) * b[bi, t][None, None, :]
            y[bi, t] = h @ c[bi, t]
    return y


def gated_delta_net(q, k, v, g, beta, np, dtype):
    """Per head S [N, N] key-major: S = exp(g) S; u = beta (v - S^T k); S += k u^T; o = S^T q."""
    q, k, v, g, beta = (w.astype(dtype) for w in (q, k, v, g, beta))
    o = np.empty(q.shape, dtype)
    n = q.shape[3]
    for bi in range(q.shape[0]):
        st = np.zeros((q.shape[2], n, n), dtype)  # [H, K, V]
        for t in range(q.shape[1]):
            st = np.exp(g[bi, t])[:, None, None] * st
            kt = k[bi, t]
            u = beta[bi, t][:, None] * (v[bi, t] - np.einsum("hij,hi->hj", st, kt))
            st = st + kt[:, :, None] * u[:, None, :]
            o[bi, t] = np.einsum("hij,hi->hj", st, q[bi, t])
    return o


def timed(name, fn, np, table, size, budget):
    """Checks fn(np.float32) against fn(np.float64), then prints its row; 1 on a wrong value."""
    ref = fn(np.float64)
    y = fn(np.float32)
    worst = float(np.max(np.abs(y - ref)))
    print(f"check {table}: {name}: max|y-f64 ref| = {worst:.3g}")
    if worst > 1e-4:
        print(f"FAILED: {table}: {name} is off by more than 1e-4")
        return 1
    samples, batch = measure(lambda: fn(np.float32), budget)
    row(name, 1, size, samples, batch, table)
    return 0


def main():
    a_, _ = parse_args()
    try:
        import numpy as np
    except ImportError as e:
        print(f"numpy: skipped ({e})")
        return 0
    name = f"numpy {np.__version__} (loop over time)"
    x = weyl(B * S * H, 1, np, -2, 2).reshape(B, S, H)
    delta = weyl(B * S * H, 2, np, 0.01, 0.5).reshape(B, S, H)
    a = np.tile(-np.arange(1, N + 1, dtype=np.float32), (H, 1))
    b = weyl(B * S * N, 3, np, -1, 1).reshape(B, S, N)
    c = weyl(B * S * N, 4, np, -1, 1).reshape(B, S, N)
    failed = timed(name, lambda dt: scan(x, delta, a, b, c, np, dt), np, TABLE, B * S * H * N,
                   a_.budget)

    b2, s2, h2, p2, n2 = 1, 1024, 24, 64, 64
    x = weyl(b2 * s2 * h2 * p2, 5, np, -1, 1).reshape(b2, s2, h2, p2)
    dt = weyl(b2 * s2 * h2, 6, np, 0.01, 0.2).reshape(b2, s2, h2)
    a = (-(np.arange(h2, dtype=np.float32) + 1) / 4).astype(np.float32)
    b = weyl(b2 * s2 * n2, 7, np, -0.5, 0.5).reshape(b2, s2, n2)
    c = weyl(b2 * s2 * n2, 8, np, -0.5, 0.5).reshape(b2, s2, n2)
    failed += timed(name, lambda d: mamba2(x, dt, a, b, c, np, d), np, "mamba2",
                    b2 * s2 * h2 * p2 * n2, a_.budget)

    b3, s3, h3, n3 = 1, 512, 16, 128
    rows = b3 * s3 * h3

    def unit(w):
        w = w.reshape(rows, n3).astype(np.float64)
        return (w / np.sqrt((w * w).sum(1, keepdims=True))).astype(np.float32).reshape(b3, s3, h3, n3)

    q = unit(weyl(rows * n3, 9, np, -1, 1))
    k = unit(weyl(rows * n3, 10, np, -1, 1))
    v = weyl(rows * n3, 11, np, -1, 1).reshape(b3, s3, h3, n3)
    g = weyl(rows, 12, np, -0.2, 0.0).reshape(b3, s3, h3)
    beta = weyl(rows, 13, np, 0.1, 0.9).reshape(b3, s3, h3)
    failed += timed(name, lambda d: gated_delta_net(q, k, v, g, beta, np, d), np,
                    "gated delta net", rows * n3 * n3, a_.budget)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
