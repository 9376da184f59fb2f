#!/usr/bin/env bash
# tests/check_spectrogram.sh PROGRAM -- run examples/spectrogram into a temporary file: it must
# report a rising loudest mel band, and the .npy it writes must hold f32 [59, 40].
set -u
dir=$(mktemp -d) || exit 2
trap 'rm -rf "$dir"' EXIT
out=$("$1" "$dir/logmel.npy") || { echo "$1 failed:"; echo "$out"; exit 1; }
echo "$out"
echo "$out" | grep -q "^log-mel spectrogram \[59, 40\] written to " || { echo "wrong shape line"; exit 1; }
echo "$out" | grep -q "falls: no$" || { echo "the loudest band falls"; exit 1; }
header=$(head -c 128 "$dir/logmel.npy" | tr -d '\0')
case "$header" in
  *"'descr': '<f4'"*"'shape': (59, 40)"*) ;;
  *) echo "unexpected .npy header: $header"; exit 1 ;;
esac
echo "spectrogram as expected"
