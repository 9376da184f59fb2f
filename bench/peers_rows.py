#!/usr/bin/python3
# bench/peers_rows.py -- the Python peers of bench_rows: softmax over the rows of f32[4096, 1024]
# and layer norm over the rows of f32[512, 768] (gamma, beta, eps 1e-5) with numpy (one thread)
# and PyTorch eager (torch.set_num_threads(n)), on the C++ bench's inputs, sampled by its rule
# (peers.py: measure), printed as "@row" lines. Each peer is checked against an f64 reference.
import sys

from peers import measure, parse_args, row, set_threads, weyl


def main():
    a, threads = parse_args()
    try:
        import numpy as np
    except ImportError as e:
        print(f"numpy and PyTorch: skipped ({e})")
        return 0
    try:
        import torch
        import torch.nn.functional as F
    except ImportError:
        torch = None

    x = weyl(4096 * 1024, 0, np).reshape(4096, 1024)
    xd = x.astype(np.float64)
    e = np.exp(xd - xd.max(axis=1, keepdims=True))
    sm_ref = e / e.sum(axis=1, keepdims=True)
    xn = weyl(512 * 768, 7, np).reshape(512, 768)
    g = (1.0 + weyl(768, 11, np) / 8.0).astype(np.float32)
    b = weyl(768, 13, np)
    xnd = xn.astype(np.float64)
    c = xnd - xnd.mean(axis=1, keepdims=True)
    ln_ref = c / np.sqrt((c * c).mean(axis=1, keepdims=True) + 1e-5) * g + b

    def np_softmax():
        m = np.exp(x - x.max(axis=1, keepdims=True))
        return m / m.sum(axis=1, keepdims=True)

    def np_norm():
        cc = xn - xn.mean(axis=1, keepdims=True)
        return cc / np.sqrt((cc * cc).mean(axis=1, keepdims=True) + np.float32(1e-5)) * g + b

    cases = [("softmax rows", x.size, sm_ref, [("numpy", [1], np_softmax)]),
             ("layer norm", xn.size, ln_ref, [("numpy", [1], np_norm)])]
    if torch is not None:
        xt, xnt, gt, bt = (torch.from_numpy(v) for v in (x, xn, g, b))
        cases[0][3].append(("PyTorch eager", threads, lambda: F.softmax(xt, dim=1)))
        cases[1][3].append(("PyTorch eager", threads,
                            lambda: F.layer_norm(xnt, (768,), gt, bt, 1e-5)))
    ok = True
    for table, size, ref, peers in cases:
        for name, peer_threads, fn in peers:
            for t in peer_threads:
                if t not in threads:
                    continue
                set_threads(t, torch)
                y = fn()
                y = np.asarray(y.numpy() if hasattr(y, "numpy") else y, dtype=np.float64)
                diff = float(np.max(np.abs(y - ref)))
                print(f"check {table} threads={t} {name}: max|y-f64 ref| = {diff:.3g}")
                if not diff <= 1e-4:
                    print(f"FAILED: {name} is off by more than 1e-4")
                    ok = False
                    continue
                samples, batch = measure(fn, a.budget)
                row(name, t, size, samples, batch, table)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
