#!/bin/bash
# tests/check_train_mlp_dp.sh MPIRUN TRAIN_MLP_DP -- the loss curve train_mlp_dp prints under
# `mpirun -np 2` (each rank half the batch, gradients all-reduced) is the one it prints alone on
# the full batch: the same lines, to the 5 decimals printed. Both runs must succeed.
set -u
mpirun=$1 exe=$2
one=$("$exe") || { echo "one process failed:"; echo "$one"; exit 1; }
two=$("$mpirun" -np 2 --oversubscribe "$exe") || { echo "mpirun -np 2 failed:"; echo "$two"; exit 1; }
echo "one process:"; echo "$one"; echo "two processes:"; echo "$two"
curve() { grep '^step'; }
if [ "$(curve <<<"$one")" != "$(curve <<<"$two")" ]; then echo "the loss curves differ"; exit 1; fi
[ -n "$(curve <<<"$one")" ] || { echo "no loss curve printed"; exit 1; }
echo "same loss curve"
