#!/usr/bin/python3
# bench/report.py -- turns the benchmarks' "@row" / "@note" lines (bench/bench_util.hpp) into one
# markdown table per workload, then checks the targets against them:
#   bench/report.py LOG [COMMAND]
# Times are per call (min/median/max over samples; p95 too for compile latency). In time tables
# "vs rlx" (tables that mark an rlx row as base) is median / median of that row with the same
# threads and size: above 1 the peer is slower than rlx, below 1 it is faster.
import json
import sys

P95_TABLES = {"compile"}


def fmt_time(s):
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if s >= scale:
            return f"{s / scale:.3g} {unit}"
    return f"{s / 1e-9:.3g} ns"


def fmt_size(n):
    if n == 0:
        return "–"
    for k in range(9, 2, -1):
        if n % 10**k == 0 and n // 10**k < 10:
            return f"{n // 10**k}e{k}"
    return str(n)


def load(path):
    tables, notes, peer_order = {}, {}, {}
    for line in open(path, encoding="utf-8"):
        if line.startswith("@row "):
            r = json.loads(line[5:])
            tables.setdefault(r["table"], []).append(r)
            order = peer_order.setdefault(r["table"], {})
            order.setdefault(r["peer"], len(order))
        elif line.startswith("@note "):
            n = json.loads(line[6:])
            notes.setdefault(n["table"], []).append(n["text"])
            tables.setdefault(n["table"], [])
    return tables, notes, peer_order


def print_table(name, rows, notes, order):
    print(f"\n### {name}\n")
    for text in notes:
        print(f"- {text}")
    if not rows:
        return
    print()
    rows = sorted(rows, key=lambda r: (r["threads"], r["size"], order[r["peer"]]))
    if rows[0]["unit"] != "s":
        unit = rows[0]["unit"]
        print(f"| peer | threads | size | min {unit} | median {unit} | max {unit} | samples |")
        print("|---|---:|---:|---:|---:|---:|---:|")
        for r in rows:
            print(f"| {r['peer']} | {r['threads']} | {fmt_size(r['size'])} | {r['min']:.4g} "
                  f"| {r['median']:.4g} | {r['max']:.4g} | {r['samples']}×{r['batch']} |")
        return
    base = {(r["threads"], r["size"]): r for r in rows if r.get("base")}
    p95 = name in P95_TABLES
    print("| peer | threads | size | min | median | " + ("p95 | " if p95 else "") +
          "max | samples" + (" | vs rlx |" if base else " |"))
    print("|---|---:|---:|---:|---:|" + ("---:|" if p95 else "") + "---:|---:|" +
          ("---:|" if base else ""))
    for r in rows:
        b = base.get((r["threads"], r["size"]))
        ratio = "–" if b is None else f"{r['median'] / b['median']:.3g}"
        if b is r:
            ratio = "1 (base)"
        print(f"| {r['peer']} | {r['threads']} | {fmt_size(r['size'])} | {fmt_time(r['min'])} "
              f"| {fmt_time(r['median'])} | " + (f"{fmt_time(r['p95'])} | " if p95 else "") +
              f"{fmt_time(r['max'])} | {r['samples']}×{r['batch']} |" +
              (f" {ratio} |" if base else ""))


def find(rows, peer, threads=None, size=None):
    for r in rows:
        if r["peer"] == peer and (threads is None or r["threads"] == threads) and \
                (size is None or r["size"] == size):
            return r
    return None


def targets(tables):
    """The issue's targets: one line each, met / not met and by how much."""
    out = []
    ew = tables.get("elementwise", [])
    for n in sorted({r["size"] for r in ew}):
        rlx, eig = find(ew, "rlx", 1, n), find(ew, "Eigen 3.4", 1, n)
        if rlx and eig:
            q = rlx["median"] / eig["median"]
            out.append(f"1 thread, n={fmt_size(n)}: rlx ≤ Eigen: "
                       + ("met" if q <= 1 else "NOT met")
                       + f" (rlx {fmt_time(rlx['median'])}, Eigen {fmt_time(eig['median'])}: "
                       f"rlx takes {q:.3g}× Eigen's time)")
    rlx, hand = find(ew, "rlx", 2, 10**7), find(ew, "AVX-512 by hand", 2, 10**7)
    if rlx and hand:
        q = rlx["median"] / hand["median"]
        out.append("2 threads, n=1e7: rlx within 10% of the AVX-512 loop: "
                   + ("met" if q <= 1.10 else "NOT met")
                   + f" (rlx {fmt_time(rlx['median'])}, hand {fmt_time(hand['median'])}: "
                   f"{q:.3g}×)")
    comp = find(tables.get("compile", []), "rlx::compile(g, Jit), graph built outside")
    if comp:
        out.append("cold compile median ≤ 3 ms: " + ("met" if comp["median"] <= 3e-3 else "NOT met")
                   + f" ({fmt_time(comp['median'])})")
        out.append("cold compile p95 ≤ 10 ms: " + ("met" if comp["p95"] <= 10e-3 else "NOT met")
                   + f" ({fmt_time(comp['p95'])})")
    calls = tables.get("call overhead", [])
    for n in sorted({r["size"] for r in calls}):
        jit, loop = find(calls, "rlx::jit cached call, a+b", 1, n), \
            find(calls, "C++ loop, a+b (no allocation)", 1, n)
        if jit and loop:
            over = jit["median"] - loop["median"]
            out.append(f"cached rlx::jit call overhead ≤ 0.5 µs, n={n}: "
                       + ("met" if over <= 0.5e-6 else "NOT met")
                       + f" ({fmt_time(over)} = {fmt_time(jit['median'])} per call "
                       f"- {fmt_time(loop['median'])} of work)")
    gemm = tables.get("gemm", [])
    blas = "OpenBLAS cblas_sgemm"
    for t, lo in ((1, 256), (2, 512)):
        for n in sorted({r["size"] for r in gemm if r["size"] >= lo}):
            rlx, ob = find(gemm, "rlx", t, n), find(gemm, blas, t, n)
            if rlx and ob:
                q = rlx["median"] / ob["median"]
                out.append(f"GEMM {t} thread{'s' if t > 1 else ''}, n={n}: rlx ≥ OpenBLAS: "
                           + ("met" if q <= 1 else "NOT met")
                           + f" (rlx {fmt_time(rlx['median'])}, OpenBLAS "
                           f"{fmt_time(ob['median'])}: rlx takes {q:.3g}× OpenBLAS's time)")
    for n in (16, 32, 64):
        for peer in ("rlx", "rlx GEMM call"):
            rlx, xs = find(gemm, peer, 1, n), find(gemm, "libxsmm", 1, n)
            if rlx and xs:
                q = xs["median"] / rlx["median"]
                out.append(f"GEMM 1 thread, n={n}: {peer} ≥ 0.9× libxsmm: "
                           + ("met" if q >= 0.9 else "NOT met")
                           + f" ({peer} {fmt_time(rlx['median'])}, libxsmm "
                           f"{fmt_time(xs['median'])}: {q:.3g}× libxsmm's speed)")
    rates = tables.get("gemm GFLOP/s", [])
    for n in (1152, 1536):
        r = find(rates, "rlx (BERT)", 1, n)
        if r:
            out.append(f"GEMM 1 thread, 60x384 @ 384x{n}: ≥ 180 GFLOP/s: "
                       + ("met" if r["median"] >= 180 else "NOT met")
                       + f" (median {r['median']:.4g}, best {r['max']:.4g} GFLOP/s)")
    bert = tables.get("bert layer", [])
    goals = {(1, 60): 1.2e-3, (2, 60): 0.8e-3, (1, 1024): 75e-3, (2, 1024): 38e-3}
    for (t, n), goal in goals.items():
        rlx = find(bert, "rlx", t, n)
        if not rlx:
            continue
        out.append(f"BERT layer, size {n}, {t} thread{'s' if t > 1 else ''}: ≤ "
                   f"{fmt_time(goal)}: " + ("met" if rlx["median"] <= goal else "NOT met")
                   + f" ({fmt_time(rlx['median'])})")
        for peer in ("PyTorch eager", "PyTorch jit.trace+freeze"):
            p = find(bert, peer, t, n)
            if p:
                q = rlx["median"] / p["median"]
                out.append(f"BERT layer, size {n}, {t} thread{'s' if t > 1 else ''}: rlx faster "
                           f"than {peer}: " + ("met" if q < 1 else "NOT met")
                           + f" (rlx takes {q:.3g}× its time)")
    lstm = tables.get("lstm inference", [])
    for t in (1, 2):
        rlx, pt = find(lstm, "rlx", t, 8 * 128 * 256), find(lstm, "PyTorch nn.LSTM", t, 8 * 128 * 256)
        if rlx and pt:
            q = rlx["median"] / pt["median"]
            out.append(f"LSTM inference (hidden 256, batch 8, seq 128), {t} thread"
                       f"{'s' if t > 1 else ''}: rlx at least as fast as PyTorch's nn.LSTM: "
                       + ("met" if q <= 1 else "NOT met")
                       + f" (rlx {fmt_time(rlx['median'])}, PyTorch {fmt_time(pt['median'])}: "
                       f"rlx takes {q:.3g}× its time)")
    ssm = tables.get("selective scan", [])
    rlx, loop = find(ssm, "rlx", 1), find(ssm, "C++ loop (-O3, std::exp)", 1)
    if rlx and loop:
        q = rlx["median"] / loop["median"]
        out.append("selective scan [1, 2048, 768, 16], 1 thread: rlx within 2× of the C++ loop: "
                   + ("met" if q <= 2 else "NOT met")
                   + f" (rlx {fmt_time(rlx['median'])}, loop {fmt_time(loop['median'])}: "
                   f"rlx takes {q:.3g}× its time)")
    return out


def main():
    if len(sys.argv) < 2:
        print("usage: bench/report.py LOG [COMMAND]", file=sys.stderr)
        return 2
    tables, notes, order = load(sys.argv[1])
    if len(sys.argv) > 2:
        print(f"reproduce with: {sys.argv[2]}")
    first = ["machine", "memory", "compute: peak FMA", "elementwise", "gemm",
             "gemm: BERT shapes", "gemm f64", "gemm GFLOP/s", "bert layer", "compile", "call overhead"]
    names = [t for t in first if t in tables] + [t for t in tables if t not in first]
    for name in names:
        print_table(name, tables[name], notes.get(name, []), order.get(name, {}))
    lines = targets(tables)
    if lines:
        print("\n### targets\n")
        for line in lines:
            print(f"- {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
