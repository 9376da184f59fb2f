#!/usr/bin/python3
# bench/peers.py -- the Python peers of bench_elementwise: y = tanh(0.5x+0.1)*sigmoid(x) + x^2
# over f32 arrays with numpy (single-threaded: numpy's ufuncs do not use threads) and with
# PyTorch eager (torch.set_num_threads(n)). Same input as the C++ bench, same sampling rule
# (bench/bench_util.hpp: measure), same "@row" lines. A missing package is skipped with a note.
# Each peer's output is checked against an f64 evaluation before it is timed.
import argparse
import json
import math
import sys
import time

TABLE = "elementwise"
TOLERANCE = 1e-4


def note(text):
    print("@note " + json.dumps({"table": TABLE, "text": text}), flush=True)


def row(peer, threads, size, samples, batch, table=None):
    """One "@row" line: min / median / p95 / max of the per-call samples (table: TABLE at the
    time of the call, so a script that sets peers.TABLE gets its own table)."""
    table = TABLE if table is None else table
    v = sorted(samples)
    k = len(v)
    median = v[k // 2] if k % 2 else 0.5 * (v[k // 2 - 1] + v[k // 2])
    p95 = v[min(k - 1, math.ceil(0.95 * k) - 1)]
    print("@row " + json.dumps({"table": table, "peer": peer, "threads": threads, "size": size,
                                "base": False, "unit": "s", "min": v[0], "median": median,
                                "p95": p95, "max": v[-1], "samples": k, "batch": batch}),
          flush=True)


def _openblas_libraries():
    """The OpenBLAS libraries loaded into this process (Debian's numpy and torch call the system
    libblas, which is OpenBLAS when libopenblas-dev is installed), found in /proc/self/maps."""
    import ctypes
    libs = []
    try:
        with open("/proc/self/maps") as maps:
            paths = {line.split()[-1] for line in maps if "blas" in line and ".so" in line}
    except OSError:
        return libs
    for path in sorted(paths):
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        if hasattr(lib, "openblas_set_num_threads"):
            libs.append(lib)
    return libs


def set_threads(t, torch=None):
    """Run the peers on t threads: torch's own pool and the BLAS underneath. OpenBLAS's pthread
    pool ignores torch.set_num_threads and uses every core, so without this a "1 thread" torch
    GEMM ran on 2 (the BERT layer and the LSTM looked up to 1.8x faster than one thread allows).
    Call it after torch or numpy is imported."""
    if torch is not None:
        torch.set_num_threads(t)
    for lib in _openblas_libraries():
        lib.openblas_set_num_threads(t)


def weyl(n, salt, np, lo=-4.0, hi=4.0):
    """The C++ benches' Weyl sequence in [lo, hi) as float32 (bench/bench_util.hpp: weyl)."""
    k = (np.arange(n, dtype=np.uint64) * np.uint64(2654435761) + np.uint64(salt)) % np.uint64(2**32)
    return (lo + (hi - lo) * k.astype(np.float64) / 2.0**32).astype(np.float32)


def measure(fn, budget, min_sample_s=2e-3, min_samples=5, max_samples=21):
    """Per-call seconds: the C++ bench's rule (warm-up, batch so a sample lasts min_sample_s)."""
    t0 = time.perf_counter()
    fn()
    first = time.perf_counter() - t0
    batch = 1
    if first > budget / 2:
        min_samples = min(3, min_samples)
    if first < min_sample_s:
        batch = max(1, int(min_sample_s / max(first, 1e-9)))
        t0 = time.perf_counter()
        for _ in range(batch):
            fn()
        per_call = (time.perf_counter() - t0) / batch
        batch = max(1, math.ceil(min_sample_s / per_call))
    samples = []
    start = time.perf_counter()
    while len(samples) < max_samples:
        if len(samples) >= min_samples and time.perf_counter() - start > budget:
            break
        t0 = time.perf_counter()
        for _ in range(batch):
            fn()
        samples.append((time.perf_counter() - t0) / batch)
    return samples, batch


def parse_args(sizes=None):
    """The options every Python peer takes (--budget, --threads, and --sizes when it has
    sizes); returns the parsed options and the thread counts as ints."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--budget", type=float, default=1.0)
    if sizes is not None:
        ap.add_argument("--sizes", default=sizes)
    ap.add_argument("--threads", default="1,2")
    a = ap.parse_args()
    return a, [int(t) for t in a.threads.split(",")]


def main():
    a, threads = parse_args("1000,10000,100000,1000000,10000000")
    sizes = [int(float(s)) for s in a.sizes.split(",")]

    try:
        import numpy as np
    except ImportError as e:
        note(f"numpy and PyTorch: skipped (numpy is not importable by {sys.executable}: {e})")
        return 0
    try:
        import torch
    except ImportError as e:
        torch = None
        note(f"PyTorch eager: skipped (torch is not importable by {sys.executable}: {e})")
    note(f"numpy {np.__version__}: one thread (ufuncs are single-threaded), so no 2-thread row")
    if torch is not None:
        note(f"PyTorch {torch.__version__} eager: torch.set_num_threads(n); "
             "each op allocates its result")

    ok = True
    for n in sizes:
        k = (np.arange(n, dtype=np.uint64) * np.uint64(2654435761)) % np.uint64(2**32)
        x = (-4.0 + 8.0 * k.astype(np.float64) / 2.0**32).astype(np.float32)
        xd = x.astype(np.float64)
        ref = np.tanh(float(np.float32(0.5)) * xd + float(np.float32(0.1))) / (1.0 + np.exp(-xd)) \
            + xd * xd

        def numpy_expr():
            return np.tanh(0.5 * x + 0.1) * (1.0 / (1.0 + np.exp(-x))) + x * x

        peers = [("numpy", [1], numpy_expr)]
        if torch is not None:
            xt = torch.from_numpy(x)

            def torch_expr():
                return torch.tanh(0.5 * xt + 0.1) * torch.sigmoid(xt) + xt * xt

            peers.append(("PyTorch eager", threads, torch_expr))
        for name, peer_threads, fn in peers:
            for t in peer_threads:
                if t not in threads:
                    continue
                set_threads(t, torch)
                y = fn()
                y = np.asarray(y.numpy() if hasattr(y, "numpy") else y)
                if y.dtype != np.float32:
                    print(f"FAILED: {name} computed {y.dtype}, not float32")
                    ok = False
                    continue
                diff = float(np.max(np.abs(y.astype(np.float64) - ref)))
                print(f"check n={n} threads={t} {name}: max|y-f64 ref| = {diff:.3g}")
                if not diff <= TOLERANCE:
                    print(f"FAILED: {name} is off by more than {TOLERANCE}")
                    ok = False
                    continue
                samples, batch = measure(fn, a.budget)
                row(name, t, n, samples, batch)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
