#!/usr/bin/env bash
# bench/compile_time.sh -- what a user file pays to compile against rlx's headers, next to an
# Eigen hello-world (Debian's libeigen3-dev). Each file is compiled -std=c++20 -O0 -c by clang++-19
# and g++, REPS times; the user CPU time (of the compiler and its children, bash's `time`) is
# reported as min and median, with the ratio of each rlx file's median to Eigen's.
#   bench/compile_time.sh [-n REPS] [INCLUDE_DIR]
# INCLUDE_DIR (default: this tree's include/) lets another version's headers be measured, e.g.
#   git archive BASE include | tar -x -C /tmp/base && bench/compile_time.sh /tmp/base/include
# The files: eigen_hello (a 2x2 matrix product printed), rlx_hello (the same with rlx::Tensor),
# numpy_like (examples/numpy_like.cpp, lesson 2 of the README), each including only its
# library's everyday header (<Eigen/Dense>, <rlx/rlx.hpp>).
set -euo pipefail
cd "$(dirname "$0")/.."

reps=5
if [ "${1:-}" = "-n" ]; then
  reps=${2:?-n needs a count}
  shift 2
fi
include=${1:-include}
[ -f "$include/rlx/rlx.hpp" ] || { echo "no rlx/rlx.hpp under '$include'" >&2; exit 2; }
[ -f /usr/include/eigen3/Eigen/Dense ] || { echo "needs Debian's libeigen3-dev" >&2; exit 2; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat >"$tmp/eigen_hello.cpp" <<'EOF'
#include <Eigen/Dense>
#include <iostream>
int main() {
  Eigen::MatrixXf m(2, 2);
  m << 1, 2, 3, 4;
  std::cout << m * m << "\n";
}
EOF
cat >"$tmp/rlx_hello.cpp" <<'EOF'
#include <rlx/rlx.hpp>
#include <iostream>
int main() {
  rlx::Tensor m = rlx::tensor({{1.f, 2.f}, {3.f, 4.f}});
  std::cout << rlx::matmul(m, m) << "\n";
}
EOF
cp examples/numpy_like.cpp "$tmp/numpy_like.cpp"

# user_seconds COMPILER FILE FLAGS...: one compile's user CPU time in seconds.
user_seconds() {
  local cxx=$1 file=$2
  shift 2
  local TIMEFORMAT=%U
  { time "$cxx" -std=c++20 -O0 -c "$file" -o "$tmp/out.o" "$@" 2>"$tmp/err"; } 2>&1
}

# stats: min and median of the numbers on stdin.
stats() { sort -g | awk '{ v[NR] = $1 } END { m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2;
  printf "%.2f %.2f\n", v[1], m }'; }

echo "# compile time, user CPU s over $reps runs (-std=c++20 -O0 -c); headers: $include"
echo "# $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores," \
  "load average $(cut -d' ' -f1-3 /proc/loadavg)"
printf '| %-10s | %-12s | %8s | %8s | %16s |\n' compiler file min median "median / Eigen's"
printf '|%s|%s|%s|%s|%s|\n' ------------ -------------- ---------- ---------- ------------------
for cxx in clang++-19 g++; do
  command -v "$cxx" >/dev/null || { echo "| $cxx | (not installed) |"; continue; }
  eigen_median=""
  for name in eigen_hello rlx_hello numpy_like; do
    flags=(-I/usr/include/eigen3)
    [ "$name" = eigen_hello ] || flags=(-I"$include")
    samples=""
    for ((i = 0; i < reps; i++)); do
      if ! t=$(user_seconds "$cxx" "$tmp/$name.cpp" "${flags[@]}"); then
        echo "$cxx failed on $name:" >&2
        cat "$tmp/err" >&2
        exit 1
      fi
      samples+="$t"$'\n'
    done
    read -r min median < <(printf '%s' "$samples" | stats)
    [ "$name" = eigen_hello ] && eigen_median=$median
    ratio=$(awk -v a="$median" -v b="$eigen_median" 'BEGIN { printf "%.2f", a / b }')
    printf '| %-10s | %-12s | %8s | %8s | %16s |\n' "$cxx" "$name" "$min" "$median" "$ratio"
  done
done
