#!/usr/bin/python3
# bench/peers_ssm.py -- the Python peer of bench_ssm: Mamba's selective scan at [B=1, S=2048,
# H=768, N=16] in f32 as a numpy loop over time (each step vectorized over H x N, one thread),
# on the C++ bench's inputs, sampled by its rule (peers.py: measure), printed as "@row" lines.
# The result is checked against the recurrence in float64 before it is timed.
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


def main():
    a_, _ = parse_args()
    try:
        import numpy as np
    except ImportError as e:
        print(f"numpy: skipped ({e})")
        return 0
    x = weyl(B * S * H, 1, np, -2, 2).reshape(B, S, H)
    delta = weyl(B * S * H, 2, np, 0.01, 0.5).reshape(B, S, H)
    a = np.tile(-np.arange(1, N + 1, dtype=np.float32), (H, 1))
    b = weyl(B * S * N, 3, np, -1, 1).reshape(B, S, N)
    c = weyl(B * S * N, 4, np, -1, 1).reshape(B, S, N)
    ref = scan(x, delta, a, b, c, np, np.float64)
    y = scan(x, delta, a, b, c, np, np.float32)
    worst = float(np.max(np.abs(y - ref)))
    print(f"check numpy loop: max|y-f64 ref| = {worst:.3g}")
    if worst > 1e-4:
        print("FAILED: numpy loop is off by more than 1e-4")
        return 1
    samples, batch = measure(lambda: scan(x, delta, a, b, c, np, np.float32), a_.budget)
    row(f"numpy {np.__version__} (loop over time)", 1, B * S * H * N, samples, batch, TABLE)
    return 0


if __name__ == "__main__":
    sys.exit(main())
