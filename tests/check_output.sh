#!/usr/bin/env bash
# tests/check_output.sh PROGRAM EXPECTED -- run PROGRAM and compare its stdout with EXPECTED
# (a string with \n escapes).
set -u
actual=$("$1") || { echo "$1 exited with status $?"; exit 1; }
expected=$(printf "$2")
if [ "$actual" != "$expected" ]; then
  echo "stdout differs; expected:"; echo "$expected"; echo "got:"; echo "$actual"; exit 1
fi
echo "output as expected"
