#!/usr/bin/env bash
# tests/onnx/check_onnx_cli.sh RLX FIXTURE_DIR SCRATCH -- `rlx run model.onnx` on the exported
# BERT layer (tests/fixtures/make_onnx_bert.py) matches PyTorch's output on both backends, and
# `rlx check` prints the imported graph.
set -u
rlx=$1 fixture=$2 scratch=$3
rm -rf "$scratch" && mkdir -p "$scratch" || exit 2
status=0
for backend in jit interp; do
  if ! "$rlx" run "$fixture/model.onnx" --in "x=$fixture/x.npy" --out "$scratch/$backend" \
      --backend $backend > "$scratch/$backend.txt"; then
    echo "FAIL: rlx run --backend $backend"; status=1; continue
  fi
  grep -q '^out0 f32\[2,5,32\] ->' "$scratch/$backend.txt" || { echo "FAIL: $backend printed:"; cat "$scratch/$backend.txt"; status=1; }
  "$rlx" compare "$scratch/$backend/y.npy" "$fixture/y.npy" --rtol 1e-4 --atol 1e-5 ||
    { echo "FAIL: $backend output differs from PyTorch's"; status=1; }
done
"$rlx" check "$fixture/model.onnx" > "$scratch/check.txt" || { echo "FAIL: rlx check"; status=1; }
grep -q 'layer_norm\|reduce_mean' "$scratch/check.txt" || { echo "FAIL: rlx check printed no graph"; status=1; }
# A symbolic batch dim is bound from the fed tensor.
dyn=$(dirname "$fixture")/onnx_dynamic
"$rlx" run "$dyn/model.onnx" --in "x=$dyn/x.npy" --out "$scratch/dyn" > "$scratch/dyn.txt" &&
  grep -q '^out0 f32\[3,6\] ->' "$scratch/dyn.txt" &&
  "$rlx" compare "$scratch/dyn/y.npy" "$dyn/y.npy" --rtol 1e-4 --atol 1e-6 ||
  { echo "FAIL: the model with a symbolic batch dim"; cat "$scratch/dyn.txt"; status=1; }
"$rlx" check "$dyn/model.onnx" | grep -q '?batch' || { echo "FAIL: rlx check shows no ?batch"; status=1; }
# A truncated model is an error naming the file, not a crash.
head -c 1000 "$fixture/model.onnx" > "$scratch/cut.onnx"
"$rlx" run "$scratch/cut.onnx" --in "x=$fixture/x.npy" --out "$scratch/cut" 2> "$scratch/cut.err"
rc=$?
[ $rc -eq 1 ] && grep -q "cut.onnx" "$scratch/cut.err" || { echo "FAIL: truncated model: rc $rc"; cat "$scratch/cut.err"; status=1; }
[ $status -eq 0 ] && echo "rlx runs the ONNX BERT layer and matches PyTorch"
exit $status
