#!/usr/bin/env bash
# tests/cli/run_cli_tests.sh -- drives the rlx command-line tool as a user would: round trips,
# runs checked against numpy's results (tests/cli/data/make_data.py), and error cases (exit status
# and a piece of the message). Prints `ok - ...` / `not ok - ...` per check; exits 1 if any failed.
# usage: run_cli_tests.sh RLX_BINARY DATA_DIR SCRATCH_DIR
set -u
rlx=${1:?usage: run_cli_tests.sh RLX_BINARY DATA_DIR SCRATCH_DIR}
data=${2:?usage: run_cli_tests.sh RLX_BINARY DATA_DIR SCRATCH_DIR}
scratch=${3:?usage: run_cli_tests.sh RLX_BINARY DATA_DIR SCRATCH_DIR}
# meson passes the binary relative to the build directory: make every path absolute.
absolute() { case $1 in /*) echo "$1" ;; *) echo "$PWD/$1" ;; esac; }
rlx=$(absolute "$rlx")
data=$(absolute "$data")
scratch=$(absolute "$scratch")
if [ ! -x "$rlx" ]; then
  echo "not ok - the rlx binary $rlx is not an executable file"
  exit 1
fi
mkdir -p "$scratch" || exit 2
tmp=$(mktemp -d "$scratch/cli.XXXXXX") || exit 2
cd "$data" || exit 2
unset RLX_BACKEND

passed=0
failed=0
ok() { echo "ok - $1"; passed=$((passed + 1)); }
not_ok() { # not_ok DESCRIPTION DETAIL...
  echo "not ok - $1"
  shift
  for line in "$@"; do echo "#   $line"; done
  [ -s "$tmp/stderr" ] && sed 's/^/#   stderr: /' "$tmp/stderr" | head -5
  failed=$((failed + 1))
}

# run_rlx ARGS...: run the tool; stdout in $tmp/stdout, stderr in $tmp/stderr, status in $status.
# A run that hangs (a read that never ends) is stopped after a minute: status 124.
run_rlx() {
  timeout 60 "$rlx" "$@" >"$tmp/stdout" 2>"$tmp/stderr"
  status=$?
}

# expect_ok DESCRIPTION ARGS...: the tool succeeds.
expect_ok() {
  local desc=$1
  shift
  run_rlx "$@"
  if [ "$status" -eq 0 ]; then ok "$desc"; else not_ok "$desc" "exit status $status, wanted 0"; fi
}

# expect_error DESCRIPTION STATUS SUBSTRING ARGS...: the tool fails with STATUS and a one-line-per-
# problem message `rlx: error: ...` on stderr containing SUBSTRING, and no crash or C++ type name.
expect_error() {
  local desc=$1 want=$2 needle=$3
  shift 3
  run_rlx "$@"
  if [ "$status" -ne "$want" ]; then
    not_ok "$desc" "exit status $status, wanted $want"
  elif ! grep -qF -- "$needle" "$tmp/stderr"; then
    not_ok "$desc" "stderr lacks: $needle"
  elif ! head -1 "$tmp/stderr" | grep -q '^rlx: error: '; then
    not_ok "$desc" "stderr does not start with 'rlx: error: '"
  elif grep -qE 'terminate called|what\(\)|std::|rlx::|Sanitizer' "$tmp/stderr"; then
    not_ok "$desc" "stderr shows a crash or a C++ type"
  else
    ok "$desc"
  fi
}

# expect_close DESCRIPTION ACTUAL EXPECTED [compare options]: rlx compare says the files are close.
expect_close() {
  local desc=$1 actual=$2 expected=$3
  shift 3
  run_rlx compare "$actual" "$expected" "$@"
  if [ "$status" -eq 0 ]; then ok "$desc"; else not_ok "$desc" "compare exit status $status"; fi
}

# expect_stdout DESCRIPTION TEXT: the last command's stdout is exactly TEXT (plus a newline).
expect_stdout() {
  if [ "$(cat "$tmp/stdout")" == "$2" ]; then
    ok "$1"
  else
    not_ok "$1" "stdout: $(head -3 "$tmp/stdout" | tr '\n' '|')" "wanted: $2"
  fi
}

# expect_stdout_has DESCRIPTION SUBSTRING
expect_stdout_has() {
  if grep -qF -- "$2" "$tmp/stdout"; then ok "$1"; else not_ok "$1" "stdout lacks: $2"; fi
}

mlp_feeds=(--in x=mlp_x.npy --param w=mlp_w.npy --param b=mlp_b.npy)
dyn_feeds=(--in x=dyn_x.npy --param w=dyn_w.npy)

# ---- help and version
expect_ok "rlx --version succeeds" --version
if grep -qE '^rlx [0-9]+\.[0-9]+' "$tmp/stdout"; then ok "--version prints 'rlx X.Y.Z'"; else
  not_ok "--version prints 'rlx X.Y.Z'"; fi
for args in "--help" "help" "-h" "help run" "run --help" "check --help" "compare --help" \
  "check -h"; do
  # shellcheck disable=SC2086
  expect_ok "rlx $args succeeds" $args
  expect_stdout_has "rlx $args prints usage" "usage: rlx"
done
run_rlx --help
expect_stdout_has "--help documents compare" "compare A.npy B.npy"
run_rlx run --help
expect_stdout_has "run --help documents --backend" "--backend"

# ---- check: text IR and JSON round trips
expect_ok "check mlp.rlx" check mlp.rlx
cp "$tmp/stdout" "$tmp/mlp_printed.rlx"
expect_stdout_has "check prints the labelled node" '%5 = relu(%4) : [2, 4] f32 #"hidden"'
expect_ok "check parses its own text output" check "$tmp/mlp_printed.rlx"
if cmp -s "$tmp/stdout" "$tmp/mlp_printed.rlx"; then ok "text output is a fixed point"; else
  not_ok "text output is a fixed point"; fi
expect_ok "check --json mlp.rlx" check --json mlp.rlx
cp "$tmp/stdout" "$tmp/mlp.json"
expect_ok "check reads the JSON it printed" check "$tmp/mlp.json"
if cmp -s "$tmp/stdout" "$tmp/mlp_printed.rlx"; then ok "text -> JSON -> text is the same text"
else not_ok "text -> JSON -> text is the same text"; fi
expect_ok "check ints.json" check ints.json
cp "$tmp/stdout" "$tmp/ints.rlx"
expect_stdout_has "JSON graph prints as text IR" '%3 = add(%2, %0) : [4] i32 #"a*b+a"'
expect_ok "check parses the text of a JSON graph" check "$tmp/ints.rlx"
if cmp -s "$tmp/stdout" "$tmp/ints.rlx"; then ok "JSON -> text -> text is the same text"; else
  not_ok "JSON -> text -> text is the same text"; fi
expect_ok "check --json ints.json" check --json ints.json
if cmp -s "$tmp/stdout" ints.json; then ok "check --json reproduces ints.json byte for byte"; else
  not_ok "check --json reproduces ints.json byte for byte"; fi
expect_ok "check --json of the text form" check --json "$tmp/ints.rlx"
if cmp -s "$tmp/stdout" ints.json; then ok "JSON -> text -> JSON is the same JSON"; else
  not_ok "JSON -> text -> JSON is the same JSON"; fi
cp ints.json "$tmp/ints_json_no_ext"
expect_ok "check detects JSON by content" check "$tmp/ints_json_no_ext"
expect_ok "check - reads standard input" check - <mlp.rlx
if cmp -s "$tmp/stdout" "$tmp/mlp_printed.rlx"; then ok "stdin gives the same text"; else
  not_ok "stdin gives the same text"; fi
expect_ok "check --inspect" check --inspect dynamic.rlx
expect_stdout_has "--inspect lists dynamic symbols" "dynamic symbols: ?batch"
expect_ok "check --bind batch=3" check dynamic.rlx --bind batch=3
expect_stdout_has "--bind specializes ?batch" '%0 = input("x") : [3, 3] f32'
expect_ok "check --inspect stats.rlx" check --inspect stats.rlx
expect_stdout_has "--inspect prints a scalar constant as its number" \
  '%2 = constant(2.0) : [] f32 #"two"'
expect_ok "check stats.rlx" check stats.rlx
expect_stdout_has "the text IR keeps the constant's exact bytes" 'constant(data=x"00000040")'
onnx_bert=$data/../../fixtures/onnx_bert/model.onnx
expect_ok "check --inspect of an ONNX model" check --inspect "$onnx_bert"
expect_stdout_has "--inspect labels an ONNX model's nodes with their ONNX node names" \
  ' #"/self_attn/MatMul"'
expect_stdout_has "... and its output with the output's value name" ' #"y"   // output'
if grep -F 'param("self_attn.out_proj.bias")' "$tmp/stdout" | grep -qvF '#"'; then
  ok "... but not a param its first user made (the initializer's name stays the only name)"
else not_ok "... but not a param its first user made" "$(grep -F 'out_proj.bias' "$tmp/stdout")"; fi
expect_stdout_has "--inspect prints an ONNX model's one-element constants as numbers" \
  '= constant(-1) : [1] i64 #"/self_attn/Constant"'

# ---- check --dot and --lir: Graphviz export and the plan the JIT runs
expect_ok "check --dot mlp.rlx" check --dot mlp.rlx
expect_stdout_has "--dot prints a digraph named by stage and graph" 'digraph "mir @mlp" {'
expect_stdout_has "--dot draws the add+relu region as a cluster" 'subgraph cluster_0'
expect_stdout_has "--dot draws the matmul -> add edge" 'n3 -> n4;'
expect_stdout_has "--dot draws the output double-bordered" 'relu(%4) : [2, 4] f32 #\"hidden\"", peripheries=2'
expect_ok "check --lir --bind batch=3 dynamic.rlx" check --lir dynamic.rlx --bind batch=3
expect_stdout_has "--lir prints the arena" 'lir @dynamic (arena '
expect_stdout_has "--lir runs the matmul as a GEMM step" '0: gemm %2 = matmul(%0, %1) : [3, 2] f32 #"y/projected"'
expect_stdout_has "--lir gives the output a buffer of its own, live to the end" '-> %2 own buffer live 0..2'
expect_stdout_has "--lir computes tanh inside the row sum" '1: row %4 = reduce_sum(%3, axes=[1]) : [3] f32 #"row sums" (operand 0 computed by k0)'
expect_ok "check --lir --dot" check --lir --dot mlp.rlx
expect_stdout_has "--lir --dot labels slots" 'live 0..'
expect_error "check --lir needs a static graph" 1 "--bind SYMBOL=SIZE" check --lir dynamic.rlx
expect_error "check --dot --json is a usage error" 2 "cannot be combined" check --dot --json mlp.rlx

# ---- run: values against numpy
expect_ok "run mlp.rlx (matmul + add + relu)" run mlp.rlx "${mlp_feeds[@]}" --out "$tmp/mlp"
expect_stdout "run prints one line per output" \
  "out0 f32[2,4] -> $tmp/mlp/out0.npy, $tmp/mlp/hidden.npy"
expect_close "mlp out0.npy matches numpy" "$tmp/mlp/out0.npy" mlp_expected.npy --rtol 1e-5 --atol 1e-6
expect_close "mlp hidden.npy (the label) matches numpy" "$tmp/mlp/hidden.npy" mlp_expected.npy \
  --rtol 1e-5 --atol 1e-6
expect_ok "run with --opt=value spellings and --backend interp" run mlp.rlx --in=x=mlp_x.npy \
  --param=w=mlp_w.npy --param b=mlp_b.npy --out="$tmp/mlp2/a/b" --backend=interp
expect_close "nested --out DIR is created" "$tmp/mlp2/a/b/out0.npy" mlp_expected.npy \
  --rtol 1e-5 --atol 1e-6
expect_ok "run dynamic.rlx (?batch from the input)" run dynamic.rlx "${dyn_feeds[@]}" \
  --out "$tmp/dyn"
expect_stdout "dynamic run binds ?batch=5" \
  "out0 f32[5,2] -> $tmp/dyn/out0.npy, $tmp/dyn/y_projected.npy
out1 f32[5] -> $tmp/dyn/out1.npy, $tmp/dyn/row_sums.npy"
expect_close "dynamic out0.npy matches numpy" "$tmp/dyn/out0.npy" dyn_expected_y.npy \
  --rtol 1e-5 --atol 1e-6
expect_close "dynamic y_projected.npy (sanitized label)" "$tmp/dyn/y_projected.npy" \
  dyn_expected_y.npy --rtol 1e-5 --atol 1e-6
expect_close "dynamic out1.npy matches numpy" "$tmp/dyn/out1.npy" dyn_expected_sums.npy \
  --rtol 1e-5 --atol 1e-6
expect_close "dynamic row_sums.npy matches numpy" "$tmp/dyn/row_sums.npy" dyn_expected_sums.npy \
  --rtol 1e-5 --atol 1e-6
expect_ok "run dynamic.rlx with an explicit --bind" run dynamic.rlx "${dyn_feeds[@]}" \
  --bind '?batch=5' --out "$tmp/dyn_bound"
expect_close "explicitly bound run matches numpy" "$tmp/dyn_bound/out1.npy" dyn_expected_sums.npy \
  --rtol 1e-5 --atol 1e-6
expect_ok "run ints.json (a JSON graph, i32)" run ints.json --in a=ints_a.npy --in b=ints_b.npy \
  --out "$tmp/ints"
expect_close "ints out0.npy equals numpy exactly" "$tmp/ints/out0.npy" ints_expected.npy \
  --rtol 0 --atol 0
expect_close "ints a_b_a.npy (label a*b+a sanitized)" "$tmp/ints/a_b_a.npy" ints_expected.npy \
  --rtol 0 --atol 0

# ---- run --stats, --random-inputs, --time (issue 22)
expect_ok "run --stats without --out" run stats.rlx --in x=x_i32.npy --stats
expect_stdout "--stats prints the known statistics of x = 0..5 and of sqrt(x - 2)" \
  "out0 i32[2,3]: min 0 max 5 mean 2.5 std 1.70783 nan 0
out1 f32[2,3]: min 0 max 1.73205 mean 1.03657 std 0.652327 nan 2"
if [ ! -e "$data/out0.npy" ]; then ok "--stats without --out writes no file"; else
  not_ok "--stats without --out writes no file"; fi
expect_ok "run --stats with --out" run stats.rlx --in x=x_i32.npy --stats --out "$tmp/stats"
expect_stdout_has "--stats with --out also writes the outputs" "out1 f32[2,3] -> $tmp/stats/out1.npy"
expect_ok "run --random-inputs=7" run mlp.rlx --random-inputs=7 --out "$tmp/r7a"
expect_ok "run --random-inputs=7 again" run mlp.rlx --random-inputs=7 --out "$tmp/r7b"
expect_ok "run --random-inputs=8" run mlp.rlx --random-inputs=8 --out "$tmp/r8"
expect_ok "run --random-inputs (no value)" run mlp.rlx --random-inputs --out "$tmp/r0"
expect_ok "run --random-inputs=0" run mlp.rlx --random-inputs=0 --out "$tmp/r0b"
if cmp -s "$tmp/r7a/out0.npy" "$tmp/r7b/out0.npy"; then
  ok "--random-inputs with the same number gives identical outputs"
else not_ok "--random-inputs with the same number gives identical outputs"; fi
if ! cmp -s "$tmp/r7a/out0.npy" "$tmp/r8/out0.npy"; then
  ok "--random-inputs with another number gives different outputs"
else not_ok "--random-inputs with another number gives different outputs"; fi
if cmp -s "$tmp/r0/out0.npy" "$tmp/r0b/out0.npy"; then ok "--random-inputs means --random-inputs=0"
else not_ok "--random-inputs means --random-inputs=0"; fi
expect_ok "run --random-inputs with a --param" run mlp.rlx --random-inputs=7 --param w=mlp_w.npy \
  --param b=mlp_b.npy --out "$tmp/r7w"
if ! cmp -s "$tmp/r7a/out0.npy" "$tmp/r7w/out0.npy"; then ok "--param overrides a random param"
else not_ok "--param overrides a random param"; fi
expect_ok "random integers: --stats of x itself" run stats.rlx --random-inputs=3 --stats
if awk 'NR == 1 { exit !($4 >= 0 && $6 <= 9 && $6 > $4 && $12 == 0) }' "$tmp/stdout"; then
  ok "random i32 inputs lie in [0, 10) and are not all equal"
else not_ok "random i32 inputs lie in [0, 10) and are not all equal" "$(head -1 "$tmp/stdout")"; fi
expect_ok "random floats: two_inputs.rlx with --bind" run two_inputs.rlx --random-inputs=1 \
  --bind batch=500 --stats
if awk 'NR == 1 { exit !($2 == "f32[500,3]:" && $4 >= -2 && $6 < 2 && $8 > -0.2 && $8 < 0.2) }' \
  "$tmp/stdout"; then
  ok "random f32 inputs lie in [-1, 1) with a mean near 0 (a + b of 1500 pairs)"
else not_ok "random f32 inputs lie in [-1, 1) with a mean near 0" "$(head -1 "$tmp/stdout")"; fi
expect_error "--random-inputs names an unbound dynamic dim" 1 \
  'input "x" of graph @dynamic has the dynamic dim ?batch' run dynamic.rlx --random-inputs --stats
if grep -qF -- "--bind batch=SIZE" "$tmp/stderr"; then ok "... and says how to bind it"; else
  not_ok "... and says how to bind it"; fi
expect_ok "--random-inputs with --bind batch=4" run dynamic.rlx --random-inputs --bind batch=4 \
  --out "$tmp/rdyn"
expect_stdout_has "the bound random run has 4 rows" "out0 f32[4,2] -> $tmp/rdyn/out0.npy"
expect_error "--random-inputs with --in" 2 "cannot be combined with --in" run mlp.rlx \
  --random-inputs --in x=mlp_x.npy --out "$tmp/e"
expect_error "--random-inputs=abc" 2 "--random-inputs 'abc': expected an integer >= 0" run mlp.rlx \
  --random-inputs=abc --out "$tmp/e"
expect_error "--random-inputs= (empty)" 2 "--random-inputs needs a value after '='" run mlp.rlx \
  --random-inputs= --out "$tmp/e"
expect_ok "run --time --iterations 5 --warmup 2" run mlp.rlx "${mlp_feeds[@]}" --time \
  --iterations 5 --warmup 2
if awk '/^time: / { found = 1; gsub(",", ""); min = $3; med = $6; max = $9
  ok = $3 ~ /^[0-9.e+-]+$/ && $6 ~ /^[0-9.e+-]+$/ && $9 ~ /^[0-9.e+-]+$/ && min + 0 <= med + 0 && med + 0 <= max + 0 && min + 0 >= 0 }
  END { exit !(found && ok) }' "$tmp/stdout"; then
  ok "--time prints three numbers, min <= median <= max"
else not_ok "--time prints three numbers, min <= median <= max" "$(head -2 "$tmp/stdout")"; fi
expect_stdout_has "--time names the counts" "(5 runs after 2 warm-up)"
expect_ok "run --time --out still writes the outputs" run mlp.rlx "${mlp_feeds[@]}" --time \
  --out "$tmp/timed"
expect_stdout_has "--time defaults to 10 runs after 1 warm-up" "(10 runs after 1 warm-up)"
expect_close "the timed run's output matches numpy" "$tmp/timed/out0.npy" mlp_expected.npy \
  --rtol 1e-5 --atol 1e-6
expect_error "--iterations 0" 2 "--iterations '0': expected an integer >= 1" run mlp.rlx \
  "${mlp_feeds[@]}" --time --iterations 0
expect_error "--warmup -1" 2 "--warmup '-1': expected an integer >= 0" run mlp.rlx \
  "${mlp_feeds[@]}" --time --warmup=-1
expect_error "--iterations without --time" 2 "--iterations needs --time" run mlp.rlx \
  "${mlp_feeds[@]}" --iterations 3 --out "$tmp/e"
expect_error "--stats takes no value" 2 "option --stats takes no value" run mlp.rlx \
  "${mlp_feeds[@]}" --stats=yes

# ---- compare itself
expect_close "compare: a file is close to itself" mlp_x.npy mlp_x.npy --rtol 0 --atol 0
expect_stdout_has "compare reports the max error" "max abs error 0"
run_rlx compare ints_a.npy ints_expected.npy
if [ "$status" -eq 1 ] && grep -qF "max abs error" "$tmp/stderr"; then
  ok "compare: different values exit 1 naming the max abs error"
else not_ok "compare: different values exit 1 naming the max abs error" "status $status"; fi
run_rlx compare mlp_x.npy mlp_expected.npy
if [ "$status" -eq 1 ] && grep -qF "f32[2,4]" "$tmp/stderr"; then
  ok "compare: different shapes exit 1 naming them"
else not_ok "compare: different shapes exit 1 naming them" "status $status"; fi
expect_close "compare: --atol loosens the test" ints_a.npy ints_expected.npy --atol 1e5

# ---- errors: status 1 for bad files, graphs and feeds; 2 for usage
expect_error "check: missing file" 1 "cannot open 'no_such_graph.rlx'" check no_such_graph.rlx
expect_error "check: a directory" 1 "is a directory" check .
expect_error "check: malformed text IR names line and column" 1 \
  "bad_op.rlx:3:8: unknown op 'relux'" check bad_op.rlx
expect_error "check: malformed JSON names line and column" 1 "bad.json:2:1:" check bad.json
expect_error "check: bad JSON value names its path" 1 'bad_key.json: $.nodes[0].shape.dtype' \
  check bad_key.json
printf '' >"$tmp/empty.rlx"
expect_error "check: empty file" 1 "expected 'graph'" check "$tmp/empty.rlx"
expect_error "check: graph that does not verify" 1 "bad_shape.rlx: %2 (matmul)" check bad_shape.rlx
expect_error "check: --json with --inspect" 2 "cannot be combined" check --json --inspect mlp.rlx
expect_error "check: no FILE" 2 "missing the graph FILE" check
expect_error "run: missing graph file" 1 "cannot open 'nope.rlx'" run nope.rlx \
  "${mlp_feeds[@]}" --out "$tmp/e"
expect_error "run: missing .npy file" 1 "--in x=nope.npy" run mlp.rlx --in x=nope.npy \
  --param w=mlp_w.npy --param b=mlp_b.npy --out "$tmp/e"
expect_error "run: truncated .npy" 1 "truncated.npy: npy: data is truncated" run mlp.rlx \
  --in x=truncated.npy --param w=mlp_w.npy --param b=mlp_b.npy --out "$tmp/e"
expect_error "run: a file that is not .npy" 1 "bad magic" run mlp.rlx --in x=not_npy.npy \
  --param w=mlp_w.npy --param b=mlp_b.npy --out "$tmp/e"
expect_error "run: wrong-shape input" 1 'shape f32[3,3] does not match input "x"' run mlp.rlx \
  --in x=x_3x3.npy --param w=mlp_w.npy --param b=mlp_b.npy --out "$tmp/e"
expect_error "run: wrong-dtype input" 1 'dtype i32 does not match input "x"' run mlp.rlx \
  --in x=x_i32.npy --param w=mlp_w.npy --param b=mlp_b.npy --out "$tmp/e"
expect_error "run: wrong-shape param" 1 'param "w" of graph @dynamic, which expects f32[3,2]' \
  run dynamic.rlx --in x=dyn_x.npy --param w=dyn_x.npy --out "$tmp/e"
expect_error "run: missing input" 1 "needs --in x=FILE.npy" run mlp.rlx --param w=mlp_w.npy \
  --param b=mlp_b.npy --out "$tmp/e"
expect_error "run: missing param" 1 "--param b=FILE.npy" run mlp.rlx --in x=mlp_x.npy \
  --param w=mlp_w.npy --out "$tmp/e"
expect_error "run: unknown input name" 1 'has no input named "z"' run mlp.rlx \
  "${mlp_feeds[@]}" --in z=mlp_x.npy --out "$tmp/e"
expect_error "run: a param fed with --in" 1 "use --param" run mlp.rlx --in x=mlp_x.npy \
  --in w=mlp_w.npy --param b=mlp_b.npy --out "$tmp/e"
expect_error "run: unknown option" 2 "unknown option '--frobnicate'" run mlp.rlx \
  "${mlp_feeds[@]}" --frobnicate --out "$tmp/e"
expect_error "run: missing --out" 2 "missing --out" run mlp.rlx "${mlp_feeds[@]}"
expect_error "run: --out without a value" 2 "--out needs a value" run mlp.rlx "${mlp_feeds[@]}" \
  --out
expect_error "run: --out is a file" 1 "--out mlp.rlx" run mlp.rlx "${mlp_feeds[@]}" --out mlp.rlx
expect_error "run: --backend nonsense" 2 "expected interp or jit" run mlp.rlx "${mlp_feeds[@]}" \
  --out "$tmp/e" --backend nonsense
expect_ok "run with --backend jit" run mlp.rlx "${mlp_feeds[@]}" --out "$tmp/mlp_jit" --backend jit
expect_close "the jit backend's mlp out0.npy matches numpy" "$tmp/mlp_jit/out0.npy" \
  mlp_expected.npy --rtol 1e-5 --atol 1e-6
RLX_BACKEND=bogus expect_error "run: bad RLX_BACKEND" 1 "RLX_BACKEND=bogus" run mlp.rlx \
  "${mlp_feeds[@]}" --out "$tmp/e"
expect_error "run: feed without NAME=" 2 "expected NAME=PATH" run mlp.rlx --in mlp_x.npy \
  --out "$tmp/e"
expect_error "run: the same --in twice" 2 "given more than once" run mlp.rlx "${mlp_feeds[@]}" \
  --in x=mlp_x.npy --out "$tmp/e"
expect_error "run: inconsistent dynamic sizes" 1 "gave ?batch = 2" run two_inputs.rlx \
  --in a=two_a.npy --in b=two_b.npy --out "$tmp/e"
expect_error "run: wrong rank for a dynamic input" 1 "(rank 1 vs 2)" run dynamic.rlx \
  --in x=x_rank1.npy --param w=dyn_w.npy --out "$tmp/e"
expect_error "run: --bind disagrees with the input" 1 "--bind batch=4 gave ?batch = 4" \
  run dynamic.rlx "${dyn_feeds[@]}" --bind batch=4 --out "$tmp/e"
expect_error "run: --bind of a symbol the graph lacks" 1 "no dynamic dim ?seq" run dynamic.rlx \
  "${dyn_feeds[@]}" --bind seq=4 --out "$tmp/e"
expect_error "run: --bind with a bad size" 2 "expected a non-negative integer" run dynamic.rlx \
  "${dyn_feeds[@]}" --bind batch=-3 --out "$tmp/e"
expect_error "run: malformed graph" 1 "bad_op.rlx:3:8" run bad_op.rlx --in x=mlp_x.npy \
  --out "$tmp/e"
expect_error "unknown command" 2 "unknown command 'frob'" frob
expect_error "unknown top-level option" 2 "unknown option '--frob'" --frob
expect_error "help for an unknown command" 2 "unknown command 'frob'" help frob
expect_error "compare: bad tolerance" 2 "--rtol" compare mlp_x.npy mlp_x.npy --rtol nan
expect_error "compare: one file" 2 "expected two .npy files" compare mlp_x.npy
# ---- hardening (issue 20): files that are not regular, impossible sizes, the memory limit
mkfifo "$tmp/fifo"
start=$SECONDS
expect_error "check /dev/zero fails at once: a device is not read" 1 \
  "cannot read '/dev/zero': it is a device" check /dev/zero
expect_error "check of a FIFO without a writer fails at once" 1 "it is a FIFO" check "$tmp/fifo"
expect_error "check of a directory" 1 "it is a directory" check "$tmp"
expect_error "run --in from /dev/zero" 1 "it is a device" run mlp.rlx --in x=/dev/zero \
  --param w=mlp_w.npy --param b=mlp_b.npy --out "$tmp/e"
if [ $((SECONDS - start)) -lt 30 ]; then ok "devices and FIFOs are refused within seconds"
else not_ok "devices and FIFOs are refused within seconds" "took $((SECONDS - start)) s"; fi
cat >"$tmp/expand.rlx" <<'GRAPH'
graph @g {
  %0 = input("x") : [1, 1] f32
  %1 = expand(%0, target_shape=[2147483648, 2147483648]) : [2147483648, 2147483648] f32
  return %1
}
GRAPH
expect_error "a shape of 2^64 bytes is refused, not wrapped" 1 \
  "f32[2147483648,2147483648] is too large" check "$tmp/expand.rlx"
cat >"$tmp/heads.rlx" <<'GRAPH'
graph @g {
  %0 = input("q") : [1, 2, 8] f32
  %1 = attention(%0, %0, %0, num_heads=4611686018427387906, head_dim=4) : [1, 2, 8] f32
  return %1
}
GRAPH
expect_error "num_heads*head_dim that wraps to the width is refused" 1 \
  "num_heads*head_dim = 4611686018427387906*4 exceeds 2^48" check "$tmp/heads.rlx"
cat >"$tmp/big.rlx" <<'GRAPH'
graph @big {
  %0 = input("x") : [3] f32
  %1 = reshape(%0, new_shape=[3, 1]) : [3, 1] f32
  %2 = expand(%1, target_shape=[3, 1431655765]) : [3, 1431655765] f32
  %3 = exp(%2) : [3, 1431655765] f32
  return %3
}
GRAPH
for backend in interp jit; do
  RLX_MAX_MEMORY=8G expect_error "a graph needing 16 GiB is over RLX_MAX_MEMORY=8G ($backend)" 1 \
    "RLX_MAX_MEMORY" run "$tmp/big.rlx" --in x=x_rank1.npy --backend $backend --out "$tmp/e"
  if grep -qF "16 GiB" "$tmp/stderr" && grep -qF "limit 8 GiB" "$tmp/stderr"; then
    ok "the memory error names the size and the limit ($backend)"
  else not_ok "the memory error names the size and the limit ($backend)"; fi
done
RLX_MAX_MEMORY=lots expect_ok "a malformed RLX_MAX_MEMORY is a warning" run mlp.rlx \
  "${mlp_feeds[@]}" --out "$tmp/warned"
if grep -qF "RLX_MAX_MEMORY='lots' is not a size" "$tmp/stderr"; then
  ok "the warning names the variable and its value"
else not_ok "the warning names the variable and its value"; fi
run_rlx
if [ "$status" -eq 2 ] && grep -qF "usage: rlx" "$tmp/stderr"; then
  ok "no arguments: usage on stderr, status 2"
else not_ok "no arguments: usage on stderr, status 2" "status $status"; fi

echo "# $passed passed, $failed failed"
if [ "$failed" -ne 0 ]; then
  echo "# scratch files kept in $tmp"
  exit 1
fi
rm -rf -- "$tmp"
exit 0
