#!/usr/bin/env bash
# tests/repl/interactive_tmux.sh REPL -- rlx-repl at a terminal, typed at through tmux: values,
# line editing (backspace), history (up arrow), a multi-line cell, an error, Ctrl-C (dropping
# a line, interrupting a cell), Tab completion, :timing, :quit.
# A private tmux server (-L) is used and killed at the end; every wait has a deadline.
set -u
repl=${1:?usage: interactive_tmux.sh REPL}
sock="rlx-repl-test-$$"
dir=$(mktemp -d)
t() { tmux -L "$sock" "$@"; }
cleanup() { t kill-server 2>/dev/null; rm -rf "$dir"; }
trap cleanup EXIT

screen() { t capture-pane -p -t repl 2>/dev/null; }
fail() {
  echo "FAILED: $1"
  echo "---- screen ----"
  screen
  exit 1
}
# wait_for REGEX [SECONDS]: until a line of the screen matches (extended regex). The deadline
# only catches a hang: a cell answers in well under a second on a quiet machine, but clang under
# ASan on a loaded CI machine once took over 30 s for one, so the default is 90 s.
wait_for() {
  local deadline=$((SECONDS + ${2:-90}))
  while [ $SECONDS -lt $deadline ]; do
    screen | grep -Eq -- "$1" && return 0
    sleep 0.1
  done
  fail "the screen never showed /$1/"
}
# type TEXT: literal keys, then Enter as its own call (tmux eats a trailing ';' in an argument,
# so text ending in ';' gets a trailing space).
type_line() {
  local text=$1
  [[ $text == *";" ]] && text="$text "
  t send-keys -t repl -l "$text"
  t send-keys -t repl Enter
}

t new-session -d -s repl -x 120 -y 50 \
  "RLX_CACHE_DIR=$dir/cache $repl --history $dir/history" || fail "tmux could not start"
wait_for '^rlx-repl .*:help for help' 120
wait_for '^rlx> ?$'

type_line 'Tensor x = rlx::ones({2, 2}) * 3;'
type_line 'x.sum()'
wait_for '^tensor\(12\., f32\[\]\)$'

# Line editing: three backspaces turn "1 + 1000" into "1 + 1".
t send-keys -t repl -l '1 + 1000'
t send-keys -t repl BSpace BSpace BSpace
t send-keys -t repl Enter
wait_for '^2$'

# History: the up arrow brings back "1 + 1"; a typed 0 makes it "1 + 10".
t send-keys -t repl Up
t send-keys -t repl -l '0'
t send-keys -t repl Enter
wait_for '^11$'

# A cell over two lines: the second prompt says the cell goes on.
type_line 'auto twice = [](Tensor t) {'
wait_for '^\.\.\.> ?$'
type_line '  return t * 2.f; }; twice(x).sum()'
wait_for '^tensor\(24\., f32\[\]\)$'

# An error names the shapes and the cell; the next cell still works.
type_line 'x.matmul(rlx::ones({3, 3}))'
wait_for '^<cell [0-9]+>:1: rlx::Error: matmul: contracting dims differ: f32\[2,2\] @ f32\[3,3\]'
type_line 'x.sum() + 1'
wait_for '^tensor\(13\., f32\[\]\)$'

# Ctrl-C drops a half-typed line, and a cell left open over lines, not the session.
t send-keys -t repl -l 'int dropped = 1'
t send-keys -t repl C-c
type_line 'auto open = std::vector<int>{'
wait_for '^\.\.\.> ?$'
t send-keys -t repl C-c
type_line '40 + 2'
wait_for '^42$'

# tab_completes TEXT REGEX: TEXT then Tab makes the line REGEX.
tab_completes() {
  t send-keys -t repl -l "$1"
  t send-keys -t repl Tab
  wait_for "^rlx> $2\$"
}
# Tab completes through clang: "x.su" becomes "x.sum", a member of a Tensor.
tab_completes 'x.su' 'x\.sum'
type_line '()'
wait_for '^tensor\(12\., f32\[\]\)$'
# ... and a type name: "Tens" becomes "Tensor".
tab_completes 'Tens' 'Tensor'
type_line ' doubled = x * 2;'
type_line 'doubled.max()'
wait_for '^tensor\(6\., f32\[\]\)$'

# Tab at the start of a line indents.
t send-keys -t repl Tab
type_line '5 * 5'
wait_for $'^rlx> \t5 \\* 5$|^rlx>  +5 \\* 5$'
wait_for '^25$'

# Ctrl-C while a cell runs interrupts the cell only (a second one abandons it at once).
type_line 'while (true) {}'
sleep 1
t send-keys -t repl C-c
t send-keys -t repl C-c
wait_for '<cell [0-9]+>:1: error: the cell was interrupted \(Ctrl-C\) and abandoned'
type_line 'doubled.sum()'
wait_for '^tensor\(24\., f32\[\]\)$'

type_line ':timing on'
wait_for '^timing is on$'
type_line 'x.max()'
wait_for '^time [0-9.]+ ms: c\+\+ '
wait_for '^tensor\(3\., f32\[\]\)$'

type_line ':quit'
deadline=$((SECONDS + 30))
while t has-session -t repl 2>/dev/null; do
  [ $SECONDS -lt $deadline ] || fail ":quit did not end the session"
  sleep 0.1
done
# libedit writes spaces as \040.
grep -qxF '1\040+\0401' "$dir/history" || fail "the history file lacks '1 + 1': $(cat "$dir/history")"
echo "the interactive session answered every step"
