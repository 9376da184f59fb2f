#!/usr/bin/env python3
# tests/repl/check_repl.py -- drives rlx-repl as a user would and checks what it prints.
#
#   check_repl.py session REPL SCRIPT EXPECTED   the script piped in; output (stdout and stderr
#                                                together) must be EXPECTED exactly, exit code 1
#   check_repl.py corpus REPL CORPUS             every bad cell fails with its message, the
#                                                session still answers (format: CORPUS's header;
#                                                clang may parse a cell for 5 s)
#   check_repl.py eof REPL                       input ending inside a cell: reported, no hang
#   check_repl.py cli REPL                       --help, --version, scripts, exit codes
#   check_repl.py interrupt REPL                 Ctrl-C (SIGINT) interrupts cells, not the session
#   check_repl.py jit-crash REPL                 a jitted function works after a crash in its trace
#   check_repl.py inline-vars REPL INCLUDE_DIR   rlx's inline variables link in a cell
#
# Every run is bounded by a timeout; a failure prints what differed and exits 1.
import os
import re
import signal
import subprocess
import sys
import tempfile
import time

TIMEOUT = 120


def run(repl, args=(), stdin="", merge=False, timeout=TIMEOUT):
    """Run rlx-repl; returns (exit code, stdout, stderr)."""
    try:
        p = subprocess.run([repl, *args], input=stdin, capture_output=not merge,
                           stdout=subprocess.PIPE if merge else None,
                           stderr=subprocess.STDOUT if merge else None,
                           text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        fail(f"rlx-repl {' '.join(args)} did not finish within {timeout} s")
    return p.returncode, p.stdout, p.stderr or ""


def fail(message):
    print("FAILED: " + message)
    sys.exit(1)


def check(condition, message):
    if not condition:
        fail(message)


def session(repl, script, expected_file):
    with open(script) as f:
        text = f.read()
    with open(expected_file) as f:
        expected = f.read()
    code, out, _ = run(repl, stdin=text, merge=True)
    if out != expected:
        import difflib
        diff = "".join(difflib.unified_diff(expected.splitlines(True), out.splitlines(True),
                                            "expected", "rlx-repl printed"))
        fail("the session's output differs:\n" + diff)
    check(code == 1, f"exit code {code}, expected 1 (one cell fails)")
    print(f"session output matches {os.path.basename(expected_file)} ({len(out.splitlines())} lines)")


def parse_corpus(path):
    """Cases (name, first line, last line, expected texts) and the final (expected) lines."""
    cases, finals = [], []
    current = None
    in_final = False
    with open(path) as f:
        lines = f.read().split("\n")
    for number, line in enumerate(lines, 1):
        if line.startswith("//# "):
            name = line[4:]
            if name == "the session still answers":
                in_final = True
                current = None
                continue
            current = {"name": name, "first": None, "last": None, "expect": []}
            cases.append(current)
        elif line.startswith("//= "):
            current["expect"].append(line[4:])
        elif line.startswith("//> "):
            finals.append(line[4:])
        elif current is not None and not in_final and line.strip():
            current["first"] = current["first"] or number
            current["last"] = number
    return cases, finals


def corpus(repl, path):
    cases, finals = parse_corpus(path)
    check(len(cases) >= 50, f"the corpus has {len(cases)} cases, fewer than 50")
    with open(path) as f:
        text = f.read()
    code, out, err = run(repl, ["--parse-timeout", "5"], stdin=text)
    # Each error line starts with <stdin>:LINE; lines without one (source snippets, notes in
    # headers) belong to the error before them.
    by_line = {}
    current = None
    for line in err.splitlines():
        m = re.match(r"<stdin>:(\d+):", line)
        if m:
            current = int(m.group(1))
        if current is not None:
            by_line.setdefault(current, []).append(line)
    problems = []
    claimed = set()
    for case in cases:
        lines = []
        for n in range(case["first"], case["last"] + 1):
            lines += by_line.get(n, [])
            claimed.add(n)
        block = "\n".join(lines)
        if not lines:
            problems.append(f"line {case['first']} ({case['name']}): no error reported")
            continue
        for want in case["expect"]:
            if want not in block:
                problems.append(f"line {case['first']} ({case['name']}): expected '{want}' in:\n"
                                + block)
    stray = sorted(set(by_line) - claimed)
    for n in stray:
        problems.append(f"an error outside the cases, at line {n}:\n" + "\n".join(by_line[n]))
    got = out.splitlines()
    if len(got) != len(finals) or any(
            not (g.startswith(w) if w.endswith(":") else g == w) for g, w in zip(got, finals)):
        problems.append("after the errors the session printed:\n" + out + "expected:\n" +
                        "\n".join(finals))
    if code != 1:
        problems.append(f"exit code {code}, expected 1")
    if problems:
        fail(f"{len(problems)} problems:\n" + "\n".join(problems))
    print(f"{len(cases)} bad cells failed with their messages; the session still answered "
          f"{len(finals)} cells")


def eof(repl):
    cases = [
        ("int ok = 1;\nok + 1\nvoid f() {\n  int y = 2;\n",
         "<stdin>:3: error: the input ended inside a cell: '{' opened on line 1 of the cell is "
         "not closed; the cell was not run"),
        ("int ok = 1;\nok + 1\nauto v = std::vector<int>{1, (2\n",
         "<stdin>:3: error: the input ended inside a cell: '(' opened on line 1 of the cell is "
         "not closed"),
        ("int ok = 1;\nok + 1\n/* a comment that never ends\n",
         "<stdin>:3: error: the input ended inside a cell: a block comment is not closed"),
        ("int ok = 1;\nok + 1\nauto s = R\"(a raw string\nthat never ends\n",
         "<stdin>:3: error: the input ended inside a cell: a raw string literal is not closed"),
    ]
    for text, want in cases:
        code, out, err = run(repl, stdin=text)
        check(out == "2\n", f"cells before the unclosed one printed {out!r}, expected '2'")
        check(want in err, f"for input {text!r} expected {want!r}, got:\n{err}")
        check(code == 1, f"exit code {code} for an unclosed cell, expected 1")
    print(f"{len(cases)} inputs ending inside a cell were reported without hanging")


def cli(repl):
    code, out, _ = run(repl, ["--help"])
    check(code == 0, f"--help exited {code}")
    for word in [":help", ":quit", ":timing on|off", ":dump", "--timing", "--no-sandbox",
                 "--no-pch", "--parse-timeout", "--history", "-I DIR", "--Xcc", "script.cpp",
                 "Exit status", "rlx::Error", "line editing"]:
        check(word in out, f"--help does not mention {word}")
    code, out, _ = run(repl, ["--version"])
    check(code == 0 and re.match(r"rlx-repl \S+ \(clang 19\.", out), f"--version printed {out!r}")
    code, _, err = run(repl, ["--no-such-option"])
    check(code == 2 and "unknown option '--no-such-option'" in err, f"bad option: {code} {err!r}")
    code, _, err = run(repl, ["/nonexistent/script.cpp"])
    check(code == 2 and "cannot read /nonexistent/script.cpp" in err, f"missing script: {err!r}")
    with tempfile.TemporaryDirectory() as d:
        good = os.path.join(d, "good.cpp")
        with open(good, "w") as f:
            f.write("// a script\nTensor v = rlx::ones({3});\nint square(int a)\n{\n"
                    "  return a * a;\n}\nsquare(7)\nv.sum()\n:quit\nthis line is never run\n")
        code, out, err = run(repl, [good])
        check(code == 0, f"a good script exited {code}: {err}")
        check(out == "49\ntensor(3., f32[])\n", f"a good script printed {out!r}")
        bad = os.path.join(d, "bad.cpp")
        with open(bad, "w") as f:
            f.write("int k = 1;\n\nk + undefined_here\nk + 1\n")
        code, out, err = run(repl, [bad])
        check(code == 1, f"a script with a failing cell exited {code}")
        check(f"{bad}:3:5: error: use of undeclared identifier 'undefined_here'" in err,
              f"the error does not name the script's line: {err!r}")
        check(out == "2\n", f"the cell after the failure printed {out!r}")
        code, out, err = run(repl, ["--timing", good])
        check(re.search(r"time [0-9.]+ ms: c\+\+ [0-9.]+ · trace [0-9.]+ · compile [0-9.]+ "
                        r"\(\d+ graphs?, \d+ kernels? compiled.*\) · run [0-9.]+", out),
              f"--timing printed no time line: {out!r}")
    code, out, err = run(repl, stdin="Tensor d = rlx::tanh(rlx::ones({64}) * 2.f);\n:dump\n"
                                     "d.sum()\n:dump\n")
    check(code == 0, f"the :dump session exited {code}: {err}")
    check(out.startswith("nothing has been materialized yet\n"), f":dump before any: {out!r}")
    check("# the last materialized graph" in out and "tanh" in out and "reduce_sum" in out,
          f":dump does not show the last graph: {out!r}")
    print("--help, --version, bad options, scripts, --timing and :dump behave")


class Running:
    """rlx-repl running a script, its output (stdout and stderr together) read as it comes."""

    def __init__(self, repl, script_text, tmpdir):
        path = os.path.join(tmpdir, "script.cpp")
        with open(path, "w") as f:
            f.write(script_text)
        self.path = path
        self.p = subprocess.Popen([repl, path], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        self.out = b""

    def wait_for(self, text, seconds=60):
        """Read until `text` has been printed (after what was waited for before)."""
        import select
        import time
        deadline = time.monotonic() + seconds
        while text.encode() not in self.out:
            left = deadline - time.monotonic()
            if left <= 0 or self.p.poll() is not None and not select.select(
                    [self.p.stdout], [], [], 0)[0]:
                self.p.kill()
                fail(f"rlx-repl never printed {text!r}; it printed:\n" + self.out.decode())
            if select.select([self.p.stdout], [], [], min(left, 0.2))[0]:
                chunk = os.read(self.p.stdout.fileno(), 65536)
                if not chunk and self.p.poll() is not None:
                    continue
                self.out += chunk
        at = self.out.index(text.encode()) + len(text)
        self.out = self.out[at:]

    def interrupt(self):
        self.p.send_signal(signal.SIGINT)

    def finish(self, seconds=60):
        try:
            rest, _ = self.p.communicate(timeout=seconds)
        except subprocess.TimeoutExpired:
            self.p.kill()
            fail("rlx-repl did not finish the script; it printed:\n" + self.out.decode())
        self.out += rest
        return self.p.returncode, self.out.decode()


def interrupt(repl):
    """Ctrl-C (SIGINT) interrupts the running cell only: C++ that never reaches an rlx safe
    point is abandoned after the grace period or at a second Ctrl-C, rlx work stops at its next
    safe point, a parse clang never finishes is given up; later cells see earlier definitions."""
    script = """int kept = 5;
std::puts("looping"); std::fflush(stdout); while (true) {}
kept + 1
std::puts("safe points"); std::fflush(stdout); for (;;) rlx::detail::check_interrupt("a loop of the cell");
kept + 2
std::puts("twice"); std::fflush(stdout); for (volatile int spin = 0; ; spin = spin + 1) {}
kept + 3
namespace never_parsed { int x = }
kept + 4
Tensor big_m = rlx::rand({3000, 3000}); big_m.sum().item<float>() > 0
std::puts("parallel"); std::fflush(stdout); big_m.matmul(big_m).matmul(big_m).matmul(big_m).matmul(big_m).sum()
std::this_thread::sleep_for(std::chrono::milliseconds(1500));
rlx::set_num_threads(rlx::num_threads()); (big_m * 0.f).sum()
kept + 5
"""
    os.environ["RLX_NUM_THREADS"] = "4"  # the GEMMs run on the pool even on a small machine
    with tempfile.TemporaryDirectory() as d:
        r = Running(repl, script, d)
        r.wait_for("looping")
        r.interrupt()  # one Ctrl-C: the loop is abandoned after the grace period
        r.wait_for(f"{r.path}:2: error: the cell was interrupted (Ctrl-C) and abandoned")
        r.wait_for("6\n")
        r.wait_for("safe points")
        r.interrupt()
        r.wait_for(f"{r.path}:4: rlx::Error: interrupted in a loop of the cell")
        r.wait_for("7\n")
        r.wait_for("twice")
        r.interrupt()
        r.interrupt()  # the second Ctrl-C abandons the loop at once
        r.wait_for(f"{r.path}:6: error: the cell was interrupted (Ctrl-C) and abandoned")
        r.wait_for("8\n")
        time.sleep(1.0)  # clang is now parsing the namespace that never ends
        r.interrupt()
        r.wait_for(f"{r.path}:8: error: the cell was interrupted (Ctrl-C) before it ran; "
                   "it was not run")
        r.wait_for("9\n")
        # Ctrl-C twice during a parallel step (GEMMs on rlx's thread pool): the pool's threads
        # read the cell's frames, so the cell ends when the chunks in flight do, and parallel
        # work, resizing the pool and earlier definitions work after it (the session crashed).
        # When the first Ctrl-C ends the cell at once, the second reaches the cell after it,
        # which sleeps shorter than the grace period and prints nothing.
        r.wait_for("true\n")
        r.wait_for("parallel")
        time.sleep(0.3)
        r.interrupt()
        time.sleep(0.1)
        r.interrupt()
        r.wait_for(f"{r.path}:11: ")
        r.wait_for("tensor(0., f32[])\n")
        r.wait_for("10\n")
        code, rest = r.finish()
        check(code == 1, f"exit code {code} after interrupted cells, expected 1")
        check("error" not in rest, f"more after the last cell: {rest!r}")
    print("Ctrl-C interrupted five cells (abandoned, rlx safe point, twice, while parsing, "
          "in a parallel step); the session went on with its definitions")


def jit_crash(repl):
    """A crash while rlx::jit traces a function leaves the function usable: rlx-repl calls
    rlx::frames_abandoned(), which releases the function's lock (else the next call hangs)."""
    script = """auto traced = rlx::jit([](Tensor t) {
  if (t.size(0) == 7) { volatile int* p = nullptr; *p = 1; }
  return t * 2.f;
});
traced(rlx::ones({7}))
traced(rlx::ones({3}))
"""
    code, out, err = run(repl, stdin=script, timeout=60)
    check("<stdin>:5: error: the cell crashed (signal 11, Segmentation fault)" in err,
          f"the crash was not reported: {err!r}")
    check(out == "tensor([2., 2., 2.], f32[3])\n",
          f"the call after the crash printed {out!r}: {err!r}")
    print("the jitted function works after a crash inside its trace")


def inline_vars(repl, include_dir):
    """Every namespace-scope inline variable of rlx's headers links in a cell (clang 19 does not
    emit one from the PCH; rlx-repl defines each, listed by tools/repl/inline_vars.sh from
    clang's AST). The headers are scanned here independently of that list."""
    names = []
    for root, _, files in os.walk(include_dir):
        for name in sorted(files):
            if not name.endswith(".hpp"):
                continue
            namespaces = []
            with open(os.path.join(root, name)) as f:
                for line in f:
                    m = re.match(r"namespace ([\w:]+) \{", line)
                    if m:
                        namespaces.append(m.group(1))
                    elif re.match(r"\} // namespace", line) and namespaces:
                        namespaces.pop()
                    # At namespace scope (not indented): any of inline, constexpr, const,
                    # thread_local in any order, one of them inline, then a type and a name.
                    m = re.match(r"((?:inline|constexpr|const|thread_local) )+([\w:<>, ]+?) "
                                 r"(\w+)(\[\])? *(=|\{|;)", line)
                    if m and "inline" in line[:m.end(1)] and namespaces:
                        names.append("::".join(namespaces) + "::" + m.group(3))
    check(len(names) >= 10, f"found only {len(names)} inline variables in {include_dir}")
    cells = "".join(f"const auto& inline_variable_{i} = {n};\n" for i, n in enumerate(names))
    code, out, err = run(repl, stdin=cells + 'std::puts("all linked");\n')
    check(code == 0 and out == "all linked\n",
          f"inline variables that do not link (tools/repl/inline_vars.sh missed them):\n{err}")
    print(f"{len(names)} inline variables of rlx's headers link in a cell")


def main():
    mode, repl, *rest = sys.argv[1:]
    if mode == "session":
        session(repl, *rest)
    elif mode == "corpus":
        corpus(repl, *rest)
    elif mode == "eof":
        eof(repl)
    elif mode == "cli":
        cli(repl)
    elif mode == "interrupt":
        interrupt(repl)
    elif mode == "jit-crash":
        jit_crash(repl)
    elif mode == "inline-vars":
        inline_vars(repl, *rest)
    else:
        fail("unknown mode " + mode)


if __name__ == "__main__":
    main()
