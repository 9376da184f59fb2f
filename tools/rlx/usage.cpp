// tools/rlx/usage.cpp -- the rlx tool's help texts.
#include "commands.hpp"

namespace rlx::cli {

namespace {

constexpr std::string_view kMain = R"(usage: rlx <command> [options]

Check and run rlx graphs (text IR or JSON) from the command line.

commands:
  check FILE            parse and verify a graph, print it as text IR (or --json, --inspect,
                        --dot; --lir: optimized and planned)
  run FILE --out DIR    run a graph on .npy inputs and write its outputs as .npy files
  compare A.npy B.npy   test helper: exit 0 when two .npy files are close (numpy.allclose)
  help [COMMAND]        print this text, or a command's usage

options:
  -h, --help            print usage (also `rlx COMMAND --help`)
  --version             print the version

exit status: 0 success, 1 error (bad file, shapes, feeds; compare: not close),
             2 usage error, 3 internal error (a bug in rlx)
)";

constexpr std::string_view kCheck =
    R"(usage: rlx check FILE [--json | --inspect | --dot] [--lir] [--bind SYMBOL=SIZE ...]

Parse FILE (text IR, or JSON when it starts with '{' or ends in .json, or an ONNX model when it
ends in .onnx; '-' reads standard input), verify it and print it as text IR on standard output.

options:
  --json                print the graph as JSON instead
  --inspect             print the annotated dump (Graph::inspect) instead: users, outputs,
                        source lines; one-element constants as numbers; an ONNX model's nodes
                        labelled with their ONNX node names
  --dot                 print a Graphviz DOT graph instead (the JIT's fused steps as clusters;
                        render with `dot -Tsvg`)
  --lir                 run the compile pipeline and print the plan the JIT runs: its steps
                        (fused kernels, row ops, GEMMs, views, interpreter steps) and memory
                        (one arena, offsets from lifetimes) as text, or DOT with --dot; the
                        graph must be static (see --bind)
  --bind SYMBOL=SIZE    bind a dynamic dim (e.g. --bind batch=4) before printing; repeatable
  -h, --help            print this text
)";

constexpr std::string_view kRun =
    R"(usage: rlx run FILE --out DIR [--in NAME=X.npy ...] [--param NAME=W.npy ...]
                      [--backend interp|jit] [--bind SYMBOL=SIZE ...]
       rlx run FILE --random-inputs[=N] [--stats] [--time [--iterations N] [--warmup K]] ...

Run the graph in FILE (text IR, JSON or an .onnx model) on tensors read from .npy files. Every
graph input needs one --in and every param one --param, with the exact dtype and shape (f32 data
may feed a bf16 leaf); an ONNX model's initializers feed its params (--param overrides one). Dynamic dims (?batch, ...) are bound by --bind, else inferred from the fed shapes
(?rows = ?batch * ?seq when only that is missing).

Each output i is written to DIR/out<i>.npy, and also to DIR/<label>.npy when its node has a label
(#"label" in the text IR; characters outside [A-Za-z0-9_.-] become '_'). DIR is created when
missing. One line per output is printed: out0 f32[2,3] -> DIR/out0.npy

options:
  --in NAME=PATH        feed the graph input NAME; repeatable
  --param NAME=PATH     feed the graph param NAME; repeatable
  --out DIR             where to write the outputs (required unless --stats or --time is given)
  --random-inputs[=N]   instead of --in, feed every input (and every param that no --param
                        or ONNX initializer feeds) with random values: floats uniform in
                        [-1, 1), integers in [0, 10), bools 0/1. N (default 0) picks the
                        values: the same N gives the same inputs on every machine. Dynamic
                        dims need --bind SYMBOL=SIZE
  --stats               print one line per output: min, max, mean and std (population) of its
                        non-NaN elements (of the real part for c64) and its NaN count:
                        out0 f32[2,4]: min -1 max 3 mean 0.5 std 1.25 nan 0
  --time                run the compiled graph K + N times and print the wall time of the last N:
                        time: min 0.01 ms, median 0.012 ms, max 0.02 ms (N runs after K warm-up)
  --iterations N        timed runs of --time (N >= 1, default 10)
  --warmup K            untimed runs of --time before them (default 1)
  --backend B           interp (the reference interpreter) or jit (native code); default:
                        $RLX_BACKEND, else jit
  --bind SYMBOL=SIZE    bind a dynamic dim explicitly; repeatable
  -h, --help            print this text
)";

constexpr std::string_view kCompare = R"(usage: rlx compare A.npy B.npy [--rtol R] [--atol A]

Test helper: exit 0 when A and B have the same dtype and shape and every element satisfies
|a - b| <= atol + rtol * |b| (numpy.allclose; NaN equals NaN, an infinity only itself); else
print the number of mismatches and the max abs error on standard error and exit 1.

options:
  --rtol R              relative tolerance (default 1e-05)
  --atol A              absolute tolerance (default 1e-08)
  -h, --help            print this text
)";

} // namespace

std::string_view main_usage() { return kMain; }

std::string_view command_usage(std::string_view command) {
  if (command == "check") return kCheck;
  if (command == "run") return kRun;
  if (command == "compare") return kCompare;
  return "";
}

} // namespace rlx::cli
