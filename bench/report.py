#!/usr/bin/python3
# bench/report.py -- turns the benchmarks' "@row" / "@note" lines (bench/bench_util.hpp) into one
# markdown table per workload, then checks every performance target of the open issues (25, 26,
# 27, 28) against them, one line each: met / NOT met / not measured (why), with the figures.
#   bench/report.py LOG [COMMAND]          the report (COMMAND: how the run was started)
#   bench/report.py --meta WHEN BUILD_DIR  "@meta" lines for the log: the CPU, cores, builds,
#                                          time and load average (WHEN: before or after the run)
# Times are per call (min/median/max over samples; p95 too for compile latency). In time tables
# "vs rlx" (tables that mark an rlx row as base) is median / median of that row with the same
# threads and size: above 1 the peer is slower than rlx, below 1 it is faster. Every ratio a
# target judges is of medians taken in the same run (each row is one program's samples; peers
# ran minutes apart at most), so under load read them with the load average of the header.
import datetime
import json
import os
import re
import subprocess
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


# ---- The machine (--meta)

def cpuinfo():
    fields, logical, cores = {}, 0, set()
    physical = "0"
    try:
        text = open("/proc/cpuinfo", encoding="utf-8").read()
    except OSError:
        return {}, 0, 0
    for line in text.splitlines():
        key, _, value = line.partition(":")
        key, value = key.strip(), value.strip()
        if key == "processor":
            logical += 1
        elif key == "physical id":
            physical = value
        elif key == "core id":
            cores.add((physical, value))
        fields.setdefault(key, value)
    return fields, logical, len(cores) or logical


def buildtype(build_dir):
    try:
        options = json.load(open(os.path.join(build_dir, "meson-info",
                                              "intro-buildoptions.json"), encoding="utf-8"))
    except (OSError, ValueError):
        return None
    for o in options:
        if o.get("name") == "buildtype":
            return o.get("value")
    return None


def meta(when, build_dir):
    now = datetime.datetime.now(datetime.timezone.utc)
    m = {"when": when, "time": now.strftime("%Y-%m-%d %H:%M:%S UTC"), "epoch": now.timestamp(),
         "load": open("/proc/loadavg", encoding="utf-8").read().split()[:3]}
    if when == "before":
        fields, logical, cores = cpuinfo()
        flags = set(fields.get("flags", "").split())
        m.update({
            "cpu": fields.get("model name", "unknown"),
            "family": fields.get("cpu family"), "model": fields.get("model"),
            "logical": logical, "cores": cores,
            "avx512f": "avx512f" in flags, "vnni": "avx512_vnni" in flags,
            "hypervisor": "hypervisor" in flags,
            "bench_buildtype": buildtype(build_dir),
            "demo_buildtype": buildtype("build"),
        })
        try:
            commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                                    text=True, check=True).stdout.strip()
            dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                                   capture_output=True, text=True, check=True).stdout.strip()
            m["commit"] = commit + (" with uncommitted changes" if dirty else "")
        except (OSError, subprocess.CalledProcessError):
            m["commit"] = None
    print("@meta " + json.dumps(m), flush=True)


# ---- Reading the log

DIST_HEAD = re.compile(r"^all_reduce \(sum, f32\) on (\d+) ranks")
# bytes | MPI in place | MPI out of place | MPI_Iallreduce | rlx (microseconds)
DIST_ROW = re.compile(r"^\| (\d+) \| ([0-9.]+) \| ([0-9.]+) \| ([0-9.]+) \| ([0-9.]+) \|")
STEP_HEAD = re.compile(r"^data-parallel step ")
# ranks | rows per rank | gradient bucket bytes | step ms
STEP_ROW = re.compile(r"^\| (\d+) \| (\d+) \| (\d+) \| ([0-9.]+) \|$")


def load(path):
    tables, notes, peer_order, metas, dist, steps = {}, {}, {}, {}, [], []
    ranks, in_step = None, False
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
        elif line.startswith("@meta "):
            m = json.loads(line[6:])
            metas[m["when"]] = m
        elif DIST_HEAD.match(line):
            ranks, in_step = int(DIST_HEAD.match(line).group(1)), False
        elif STEP_HEAD.match(line):
            in_step = True
        elif ranks is not None and not in_step and DIST_ROW.match(line):
            b, mpi_in, mpi, _, rlx = DIST_ROW.match(line).groups()
            dist.append({"ranks": ranks, "bytes": int(b), "mpi": float(mpi) * 1e-6,
                         "mpi_in": float(mpi_in) * 1e-6, "rlx": float(rlx) * 1e-6})
        elif in_step and STEP_ROW.match(line.rstrip("\n")):
            r, rows, grad, ms = STEP_ROW.match(line.rstrip("\n")).groups()
            steps.append({"ranks": int(r), "rows": int(rows), "bucket": int(grad),
                          "seconds": float(ms) * 1e-3})
    return tables, notes, peer_order, metas, (dist, steps)


def print_header(metas, command):
    print("## Machine and run\n")
    b, a = metas.get("before"), metas.get("after")
    if b:
        kind = f"family {b.get('family')}, model {b.get('model')}"
        print(f"- CPU: {b['cpu']} ({kind}), {b['logical']} logical CPUs on {b['cores']} cores"
              f"{', a virtual machine (hypervisor flag)' if b.get('hypervisor') else ''}; "
              f"AVX-512F: {'yes' if b.get('avx512f') else 'no'}, "
              f"AVX-512 VNNI: {'yes' if b.get('vnni') else 'no'}")
    else:
        print("- CPU: unknown (the log has no @meta lines: a log from an older bench/run)")
    load_b = " ".join(b["load"]) if b else "?"
    load_a = " ".join(a["load"]) if a else "? (the run did not finish)"
    print(f"- load average (1, 5, 15 min) before the run: {load_b}; after: {load_a}")
    if b:
        took = f" ({(a['epoch'] - b['epoch']) / 60:.1f} min)" if a else ""
        print(f"- run: {b['time']}{' to ' + a['time'] if a else ''}{took}, "
              f"commit {b.get('commit') or '?'}")
        print(f"- builds: build-bench is {b.get('bench_buildtype') or '?'} (the benchmarks "
              "themselves -O3 -march=native); the demo's build/ is "
              f"{b.get('demo_buildtype') or 'not configured (meson.build default: debugoptimized)'}")
    if command:
        print(f"- reproduce with: {command}")


def print_table(name, rows, notes, order):
    print(f"\n### {name}\n")
    for text in notes:
        print(f"- {text}")
    if not rows:
        return
    print()
    rows = sorted(rows, key=lambda r: (r["threads"], r["size"], order[r["peer"]]))
    if all(r.get("value") for r in rows):
        print("| peer | threads | size | value |")
        print("|---|---:|---:|---:|")
        for r in rows:
            print(f"| {r['peer']} | {r['threads']} | {fmt_size(r['size'])} "
                  f"| {r['median']:.4g} {r['unit']} |")
        return
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


def print_dist(dist_and_steps, notes):
    dist, steps = dist_and_steps
    print("\n### all_reduce (sum, f32): rlx's op against MPI_Allreduce (bench_dist)\n")
    for text in notes:
        print(f"- {text}")
    if not dist:
        return
    print("- the slowest rank's mean time per call; rlx: a compiled graph of one all_reduce "
          "run on a Buffer (its operand stays intact, as MPI's out-of-place call's does)\n")
    print("| ranks | bytes | MPI_Allreduce (out of place) | MPI_Allreduce (in place) "
          "| rlx all_reduce | rlx / MPI out of place |")
    print("|---:|---:|---:|---:|---:|---:|")
    for d in dist:
        print(f"| {d['ranks']} | {d['bytes']} | {fmt_time(d['mpi'])} | {fmt_time(d['mpi_in'])} "
              f"| {fmt_time(d['rlx'])} | {d['rlx'] / d['mpi']:.3g} |")
    if steps:
        print("\n### data-parallel training step (bench_dist)\n")
        print("| ranks | rows per rank | gradient bucket | step |")
        print("|---:|---:|---:|---:|")
        for d in steps:
            print(f"| {d['ranks']} | {d['rows']} | {d['bucket']} B | {fmt_time(d['seconds'])} |")


# ---- The targets

class Missing(Exception):
    """A row a target needs is not in the log: the target is not measured."""


def threads_text(t):
    return f"{t} thread{'s' if t > 1 else ''}"


class Targets:
    def __init__(self, tables):
        self.tables = tables
        self.lines = []  # (issue, text)

    def row(self, table, peer, threads=None, size=None, suffix=False):
        """The row of `peer` (a peer name ending with `peer` when suffix) in `table`."""
        for r in self.tables.get(table, []):
            name_ok = r["peer"].endswith(peer) if suffix else r["peer"] == peer
            if name_ok and (threads is None or r["threads"] == threads) and \
                    (size is None or r["size"] == size):
                return r
        where = "".join([f", {threads_text(threads)}" if threads else "",
                         f", size {fmt_size(size)}" if size is not None else ""])
        if table not in self.tables:
            raise Missing(f"no table '{table}' in the log: its program did not run or failed")
        raise Missing(f"no row '{peer}'{where} in '{table}'")

    def judge(self, issue, what, fn):
        """fn() -> (ok, figures) or raises Missing; ok None means figures only (no target)."""
        try:
            ok, figures = fn()
        except Missing as e:
            self.lines.append((issue, f"**not measured** ({e}) — {what}"))
            return
        status = "figures (no target)" if ok is None else ("met" if ok else "NOT met")
        self.lines.append((issue, f"**{status}** — {what}: {figures}"))

    def not_measured(self, issue, what, why):
        self.lines.append((issue, f"**not measured** ({why}) — {what}"))


def time_ratio(t, table, peer, base_peer, threads, size, limit):
    """rlx's median time over a peer's: met when at most `limit`."""
    def fn():
        a, b = t.row(table, peer, threads, size), t.row(table, base_peer, threads, size)
        if not b["median"] > 0:
            raise Missing(f"'{base_peer}' has no time in '{table}'")
        q = a["median"] / b["median"]
        return q <= limit, (f"{peer} {fmt_time(a['median'])}, {base_peer} "
                            f"{fmt_time(b['median'])}: {q:.3g}× {base_peer}'s time")
    return fn


def issue26(t, metas):
    add = t.judge
    # -- New sizes without compiling
    sweep = "new size: 100-size sweep"
    loads = [r["peer"][:-len(": LLVM kernels per binding")] for r in t.tables.get(sweep, [])
             if r["peer"].endswith(": LLVM kernels per binding")]
    if not loads:
        t.not_measured(26, "a sweep over 100 sizes of a dynamic dim compiles ≤ 2 LLVM kernels "
                       "per fused region", "no sweep rows: bench_overhead did not run or failed")
    for name in loads:
        def kernels(name=name):
            per = t.row(sweep, name + ": LLVM kernels per binding")["median"]
            made = t.row(sweep, name + ": LLVM kernels compiled by the sweep")["median"]
            if per == 0:
                raise Missing("a binding of it has no LLVM kernel")
            return made <= 2 * per, (f"{made:.0f} LLVM kernels compiled over 100 sizes, "
                                     f"{per:.0f} per binding: {made / per:.3g} per fused region")
        add(26, f"100-size sweep of {name}: ≤ 2 LLVM kernels compiled per fused region", kernels)
    bind_rows = [r["peer"] for r in t.tables.get("new size of a dynamic dim", [])
                 if r["peer"].endswith(": rlx::jit call")]
    bind_rows += [r["peer"] for r in t.tables.get(sweep, [])
                  if r["peer"].endswith(": rlx::jit call at a new size")]
    if not bind_rows:
        t.not_measured(26, "a new binding whose kernels exist costs ≤ 0.2 ms",
                       "no rows: bench_overhead did not run or failed")
    for peer in bind_rows:
        table = sweep if peer.endswith("at a new size") else "new size of a dynamic dim"

        def binding(peer=peer, table=table):
            r = t.row(table, peer)
            extra = ""
            if table == sweep:
                name = peer[:-len(": rlx::jit call at a new size")]
                made = t.row(sweep, name + ": LLVM kernels compiled by the sweep")["median"]
                extra = f"; the sweep compiled {made:.0f} kernels"
            return r["median"] <= 0.2e-3, (f"median {fmt_time(r['median'])}, p95 "
                                           f"{fmt_time(r['p95'])} per call at a new size{extra}")
        add(26, f"a new binding costs ≤ 0.2 ms: {peer}", binding)
    b = metas.get("before", {})
    built = (f" (build-bench {b.get('bench_buildtype') or '?'}; the demo's build/ "
             f"{b.get('demo_buildtype') or 'debugoptimized by default'})")
    comp = ("compile", "rlx::compile(g, Jit), graph built outside")
    add(26, "cold compile of a fused 16-op kernel: median ≤ 3 ms" + built,
        lambda: (t.row(*comp)["median"] <= 3e-3, fmt_time(t.row(*comp)["median"])))
    add(26, "cold compile of a fused 16-op kernel: p95 ≤ 6 ms" + built,
        lambda: (t.row(*comp)["p95"] <= 6e-3, fmt_time(t.row(*comp)["p95"])))

    # -- Kernels
    ew = "elementwise"
    add(26, "fused element-wise chain at 1e6, 1 thread: ≤ 1.0× Eigen's time",
        time_ratio(t, ew, "rlx", "Eigen 3.4", 1, 10**6, 1.0))
    add(26, "fused element-wise chain at 1e6, 1 thread: ≤ 1.0× the hand AVX-512 loop's time",
        time_ratio(t, ew, "rlx", "AVX-512 by hand", 1, 10**6, 1.0))
    add(26, "fused element-wise chain at 1e7, 2 threads: ≤ 1.05× the hand AVX-512 loop's time",
        time_ratio(t, ew, "rlx", "AVX-512 by hand", 2, 10**7, 1.05))
    t.not_measured(26, "tanh / sigmoid / exp within 2 ulp", "an accuracy bound: "
                   "tests/test_vmath.cpp asserts it; bench/ checks 1e-4 absolute only")

    def peak():
        try:
            return t.row("compute: peak FMA", "zmm (AVX-512) FMA", 1), "zmm"
        except Missing:
            return t.row("compute: peak FMA", "ymm (AVX2) FMA", 1), "ymm (no AVX-512)"

    def gemm_rate(label, rate_fn):
        def fn():
            p, kind = peak()
            rate, extra = rate_fn()
            q = rate / p["median"]
            return q >= 0.9, (f"{rate:.4g} GFLOP/s median{extra} = {100 * q:.3g}% of the "
                              f"{kind} peak {p['median']:.4g} GFLOP/s (1 thread, same run)")
        add(26, f"GEMM, 1 thread, {label}: ≥ 90% of the measured peak FMA rate", fn)

    def square_rate():
        r = t.row("gemm GFLOP/s", "rlx", 1, 1024)
        try:
            call = f" (the bare GEMM call {t.row('gemm GFLOP/s', 'rlx GEMM call', 1, 1024)['median']:.4g})"
        except Missing:
            call = ""
        return r["median"], " through Executable::run" + call
    gemm_rate("1024³", square_rate)
    for n in (1152, 1536):
        gemm_rate(f"60x384 @ 384x{n} ([4,15,384])",
                  lambda n=n: (t.row("gemm GFLOP/s", "rlx (BERT)", 1, n)["median"],
                               " through Executable::run"))
    q8 = "int8 q_matmul vs f32 matmul"
    for m, k, n in ((1024, 768, 768), (1024, 768, 3072)):
        def big(m=m, k=k, n=n):
            r = t.row(q8, "rlx f32 matmul (JIT GEMM)", 1, m * k * n)
            return 2.0 * m * k * n / r["median"] / 1e9, " through Executable::run (bench_qgemm)"
        gemm_rate(f"{m}x{k} @ {k}x{n} ([8,128,768])", big)
    # Small products through the executable: its bound call (Executable::bind, into the
    # caller's C, checked once) is the call judged, as libxsmm's dispatched kernel is; run_into
    # (checked per call), run (allocating the result) and the bare GEMM call are shown beside it.
    for n in (16, 32, 64):
        def small(n=n):
            b, x = t.row("gemm", "rlx bound call", 1, n), t.row("gemm", "libxsmm", 1, n)
            q = x["median"] / b["median"]
            others = []
            for peer, label in (("rlx run_into", "run_into"), ("rlx", "Executable::run"),
                                ("rlx GEMM call", "the bare GEMM call")):
                try:
                    r = t.row("gemm", peer, 1, n)
                    others.append(f"{label} {fmt_time(r['median'])} "
                                  f"({x['median'] / r['median']:.3g}×)")
                except Missing:
                    pass
            extra = "; " + ", ".join(others) if others else ""
            return q >= 0.9, (f"bound call {fmt_time(b['median'])}, libxsmm "
                              f"{fmt_time(x['median'])}: {q:.3g}× libxsmm's speed{extra}")
        add(26, f"GEMM {n}³, 1 thread, through the executable (Executable::bind's bound call "
                "into the caller's C): ≥ 0.9× libxsmm's speed", small)
    for n in (1, 4):
        for peer, label in (("Executable::run, a+b", "Executable::run"),
                            ("Executable::run_into, a+b", "Executable::run_into"),
                            ("bound call (Executable::bind), a+b", "a bound call (Executable::bind)")):
            def overhead(n=n, peer=peer):
                r = t.row("call overhead", peer, 1, n)
                loop = t.row("call overhead", "C++ loop, a+b (no allocation)", 1, n)
                over = r["median"] - loop["median"]
                return over <= 0.1e-6, (f"{fmt_time(over)} = {fmt_time(r['median'])} per call - "
                                        f"{fmt_time(loop['median'])} of work")
            add(26, f"{label} per-call overhead ≤ 0.1 µs (a+b on {n} element"
                    f"{'s' if n > 1 else ''})", overhead)
    # Bandwidth limits: bytes moved (each input read once, the output written once, as STREAM
    # counts) over the STREAM triad's median rate on the same threads.
    for table, label, extra_bytes in (("softmax rows", "softmax rows [4096×1024]", 0),
                                      ("layer norm", "layer norm [512×768]", 2 * 768 * 4)):
        for th in (1, 2):
            def bw(table=table, th=th, extra_bytes=extra_bytes):
                r = t.row(table, "rlx", th)
                triad = t.row("memory", "STREAM triad", th)
                moved = 8 * r["size"] + extra_bytes
                limit = moved / (triad["median"] * 1e9)
                q = r["median"] / limit
                return q <= 1.1, (f"{fmt_time(r['median'])} for {moved / 1e6:.3g} MB moved; "
                                  f"limit {fmt_time(limit)} at the triad's "
                                  f"{triad['median']:.3g} GB/s: {q:.3g}× the limit")
            add(26, f"{label}, {threads_text(th)}: within 1.1× of the memory-bandwidth limit",
                bw)
    bert = "bert layer"
    for size, label, limit in ((1024, "[8,128,768]", 0.8), (60, "[4,15,384]", 0.6)):
        for th in (1, 2):
            add(26, f"BERT encoder layer {label}, {threads_text(th)}: ≤ {limit}× PyTorch "
                    "eager's time", time_ratio(t, bert, "rlx", "PyTorch eager", th, size, limit))
    for size, label in ((1024, "[8,128,768]"), (60, "[4,15,384]")):
        def arena(size=size):
            mem = "bert layer memory"
            a = t.row(mem, "arena (the JIT's plan)", size=size)["median"]
            lb = t.row(mem, "liveness lower bound", size=size)["median"]
            naive = t.row(mem, "every value its own slot", size=size)["median"]
            rss = t.row(mem, "RSS after one run (VmRSS)", size=size)["median"]
            hwm = t.row(mem, "peak RSS so far (VmHWM)", size=size)["median"]
            q = a / lb if lb else float("inf")
            return q <= 1.1, (f"arena {a:.4g} MiB, lower bound {lb:.4g} MiB: {q:.3g}×; every "
                              f"value its own slot {naive:.4g} MiB; RSS {rss:.4g} MiB, "
                              f"peak {hwm:.4g} MiB")
        add(26, f"BERT layer {label}: arena peak within 1.1× of the liveness lower bound", arena)
    t.not_measured(26, "BERT layer: constant weights packed once per executable, attention's "
                   "softmax vectorized", "properties of the code, seen in its time above and "
                   "in a profile, not timed apart")
    for size, label in ((64, "the MLP example (2-32-1, batch 64)"),
                        (1024, "the BERT layer [8,128,768]")):
        add(26, f"training step of {label}, 1 thread: ≤ 0.7× PyTorch eager's time",
            time_ratio(t, "training step", "rlx (jit of value_and_grad, SGD)",
                       "PyTorch eager (autograd, optim.SGD)", 1, size, 0.7))


def issue25(t):
    q8 = "int8 q_matmul vs f32 matmul"
    for m, k, n in ((512, 512, 512), (1024, 768, 768), (1024, 768, 3072)):
        def speedup(m=m, k=k, n=n):
            f = t.row(q8, "rlx f32 matmul (JIT GEMM)", 1, m * k * n)
            q = t.row(q8, "rlx q_matmul int8 (VNNI)", 1, m * k * n)
            s = f["median"] / q["median"]
            return s >= 2, (f"f32 {fmt_time(f['median'])}, int8 {fmt_time(q['median'])}: "
                            f"{s:.3g}× the f32 GEMM's throughput")
        t.judge(25, f"q_matmul int8 {m}x{k} @ {k}x{n}, 1 thread: ≥ 2× the f32 GEMM's "
                    "throughput", speedup)
    dq = "decode dequant_matmul (m = 1, k = n = 4096): packed weights read"
    for fmt in ("Q4_0", "Q8_0"):
        for th in (1, 2):
            def decode(fmt=fmt, th=th):
                r = t.row(dq, "rlx " + fmt, th)
                s = t.row(dq, "STREAM triad (24 B per element)", th)
                q = r["median"] / s["median"]
                return q >= 0.7, (f"{r['median']:.3g} GB/s of packed weights, triad "
                                  f"{s['median']:.3g} GB/s: {100 * q:.3g}%")
            t.judge(25, f"decode dequant_matmul {fmt} (m = 1, k = n = 4096), "
                        f"{threads_text(th)}: ≥ 70% of the STREAM bandwidth", decode)
    for th in (1, 2):
        t.judge(25, f"dense_solve N = 512, {threads_text(th)}: ≤ 1.2× LAPACKE_sgesv's time",
                time_ratio(t, "dense_solve", "rlx dense_solve", "LAPACKE_sgesv (copies included)",
                           th, 512, 1.2))


def issue27(t):
    for pass_ in ("forward", "backward"):
        for th in (1, 2):
            def splat(pass_=pass_, th=th):
                r = t.row(f"splat 512x512 {pass_}", "rlx", th)
                return None, (f"{r['median'] * 1e3:.4g} ms/frame median "
                              f"({fmt_size(r['size'])} Gaussians)")
            t.judge(27, f"splatting 512×512, {pass_}, rlx, {threads_text(th)}", splat)

    def numpy_ref():
        rows = t.tables.get("splat 512x512 forward", [])
        r = next((x for x in rows if x["peer"].startswith("numpy reference")), None)
        if r is None:
            raise Missing("no numpy reference row: bench/peers_splat.py did not run")
        return None, f"{r['median'] * 1e3:.4g} ms/frame ({r['peer']})"
    t.judge(27, "splatting 512×512, forward, the numpy reference, 1 thread", numpy_ref)


def issue28(t, dist_and_steps, notes):
    dist = dist_and_steps[0]
    if not dist:
        why = "; ".join(notes) or "bench_dist printed no table"
        t.not_measured(28, "all_reduce adds < 5% over raw MPI_Allreduce at ≥ 1 MB", why)
        return
    # One rank has no communication (both sides copy the operand): the target is about MPI's.
    for ranks in sorted({d["ranks"] for d in dist if d["ranks"] > 1}):
        big = [d for d in dist if d["ranks"] == ranks and d["bytes"] >= 1 << 20]

        def fn(big=big):
            if not big:
                raise Missing("no message of 1 MiB or more")
            worst = max(d["rlx"] / d["mpi"] for d in big)
            each = ", ".join(f"{d['bytes'] >> 20} MiB {d['rlx'] / d['mpi']:.3g}×" for d in big)
            return worst < 1.05, f"rlx / MPI: {each}"
        t.judge(28, f"all_reduce on {ranks} processes adds < 5% over raw MPI_Allreduce (out of "
                    "place, as osu_allreduce calls it) at ≥ 1 MB", fn)


def targets(tables, metas, dist, notes):
    t = Targets(tables)
    issue26(t, metas)
    issue25(t)
    issue28(t, dist, notes.get("all_reduce", []))
    issue27(t)
    return t.lines


def main():
    if len(sys.argv) >= 2 and sys.argv[1] == "--meta":
        if len(sys.argv) != 4 or sys.argv[2] not in ("before", "after"):
            print("usage: bench/report.py --meta before|after BUILD_DIR", file=sys.stderr)
            return 2
        meta(sys.argv[2], sys.argv[3])
        return 0
    if len(sys.argv) < 2:
        print("usage: bench/report.py LOG [COMMAND]", file=sys.stderr)
        return 2
    tables, notes, order, metas, dist = load(sys.argv[1])
    print_header(metas, sys.argv[2] if len(sys.argv) > 2 else None)
    first = ["machine", "memory", "compute: peak FMA", "elementwise", "gemm",
             "gemm: BERT shapes", "gemm f64", "gemm GFLOP/s", "bert layer", "bert layer memory",
             "training step", "compile", "call overhead"]
    names = [t for t in first if t in tables] + [t for t in tables if t not in first]
    for name in names:
        if name == "all_reduce":
            continue
        print_table(name, tables[name], notes.get(name, []), order.get(name, {}))
    print_dist(dist, notes.get("all_reduce", []))
    titles = {26: "issue 26: performance, round 2", 25: "issue 25: quantized inference and "
              "linear algebra (speed)", 28: "issue 28: scale-out (benchmark)",
              27: "issue 27: Gaussian splatting (benchmark: ms/frame, no target)"}
    lines = targets(tables, metas, dist, notes)
    print("\n## Targets\n")
    b, a = metas.get("before"), metas.get("after")
    if b:
        print(f"On {b['cpu']} ({b['logical']} logical CPUs, {b['cores']} cores), load average "
              f"{' '.join(b['load'])} before and {' '.join(a['load']) if a else '?'} after the "
              "run. Ratios are of medians within this run.")
    for issue in (26, 25, 28, 27):
        print(f"\n### {titles[issue]}\n")
        for i, text in lines:
            if i == issue:
                print(f"- {text}")
    counts = {s: sum(1 for _, x in lines if x.startswith(f"**{s}**"))
              for s in ("met", "NOT met", "not measured")}
    print(f"\n{counts['met']} met, {counts['NOT met']} not met, {counts['not measured']} not "
          "measured")
    return 0


if __name__ == "__main__":
    sys.exit(main())
