#!/usr/bin/env bash
# tests/install/run_repl_pch_test.sh BUILD_DIR -- the installed rlx-repl and its precompiled
# prelude (tools/repl/prelude_pch.cpp): installed into a temporary staging tree (meson install
# --destdir), it runs a Tensor cell with an empty cache (building the PCH into it), again
# (reusing it: same file, same inode and modification time), after the PCH file is damaged
# (built again, the cell still works), after an installed header changed (a new key: built
# again), with a cache it cannot write (no PCH, one notice), and
# twice at once with an empty cache (both work, and the PCH left is whole and reused). The
# start times are printed, not asserted. Any failing step fails the test.
set -euo pipefail
build=$1
tmp=$(mktemp -d)
trap 'chmod -R u+w "$tmp"; rm -rf "$tmp"' EXIT

step() { echo "== $*"; }
fail() { echo "FAILED: $*"; exit 1; }

meson install -C "$build" --no-rebuild --quiet --destdir "$tmp/stage" >"$tmp/install.log" 2>&1 ||
  { cat "$tmp/install.log"; exit 1; }
prefix=$(meson introspect "$build" --buildoptions |
  /usr/bin/python3 -c 'import json,sys; print(next(o["value"] for o in json.load(sys.stdin) if o["name"]=="prefix"))')
repl=$tmp/stage$prefix/bin/rlx-repl
[ -x "$repl" ] || fail "no installed rlx-repl at $repl"

# The cell: arange(0, 6, 1) holds 0..5, whose sum is 15.
printf 'Tensor t = arange(0, 6, 1);\nt.sum()\n' >"$tmp/cell.repl"
expected='tensor(15., f32[])'

# run NAME CACHE_DIR [rlx-repl options]: runs the cell, checks its value, keeps stdout and
# stderr in $tmp/NAME.out and $tmp/NAME.err and the wall time in $tmp/NAME.time.
run() {
  local name=$1 cache=$2
  shift 2
  local t0 t1
  t0=$(date +%s.%N)
  RLX_CACHE_DIR=$cache "$repl" "$@" "$tmp/cell.repl" >"$tmp/$name.out" 2>"$tmp/$name.err" ||
    { cat "$tmp/$name.out" "$tmp/$name.err"; fail "$name: rlx-repl exited with $?"; }
  t1=$(date +%s.%N)
  echo "$t0 $t1" | awk '{printf "%.2f", $2 - $1}' >"$tmp/$name.time"
  grep -qxF "$expected" "$tmp/$name.out" ||
    { cat "$tmp/$name.out" "$tmp/$name.err"; fail "$name: the cell did not print $expected"; }
  echo "   $name: $(cat "$tmp/$name.time") s; stderr:"
  sed 's/^/     /' "$tmp/$name.err"
}
has() { grep -qF "$2" "$tmp/$1.err" || fail "$1: stderr lacks '$2'"; }
lacks() { ! grep -qF "$2" "$tmp/$1.err" || fail "$1: stderr has '$2'"; }
# The PCH file the cache's link names (exactly one link and its target).
pch_file() {
  local links=("$1"/*/repl-prelude-????????????????.pch)
  [ ${#links[@]} -eq 1 ] && [ -L "${links[0]}" ] || fail "not one PCH link in $1: ${links[*]}"
  local target
  target=$(dirname "${links[0]}")/$(readlink "${links[0]}")
  [ -f "$target" ] || fail "the link ${links[0]} names no file"
  echo "$target"
}
identity() { stat -c 'inode %i, modified %y, %s bytes' "$1"; }

cache=$tmp/cache
step "an empty cache: the first start builds the PCH"
run first "$cache" --verbose
has first "precompiling rlx's headers into $cache/"
has first "(built in"
pch=$(pch_file "$cache")
before=$(identity "$pch")

step "the second start reuses it"
run second "$cache" --verbose
has second "precompiled prelude $pch (reused)"
lacks second "precompiling"
[ "$(identity "$pch")" = "$before" ] || fail "the PCH file changed: $before -> $(identity "$pch")"

step "a damaged PCH is built again and the cell still works"
size=$(stat -c %s "$pch")
printf 'damaged!' | dd of="$pch" bs=1 seek=$((size / 2)) conv=notrunc status=none
run damaged "$cache" --verbose
has damaged "is not usable (its contents do not match their checksum); building it again"
has damaged "(built in"
pch=$(pch_file "$cache")
run after_damage "$cache" --verbose
has after_damage "(reused)"

step "an installed header changed: a PCH under a new key is built and used"
touch -d '2 minutes ago' "$tmp/stage$prefix/include/rlx/tensor.hpp"
run stale "$cache" --verbose
has stale "precompiling rlx's headers into $cache/"
has stale "(built in"
links=("$cache"/*/repl-prelude-????????????????.pch)
[ ${#links[@]} -eq 2 ] || fail "stale: expected the old and the new key's links: ${links[*]}"
run after_stale "$cache" --verbose
has after_stale "(reused)"
if grep -qF "$pch" "$tmp/after_stale.err"; then fail "after_stale: the old key's PCH was used"; fi

step "a cache directory rlx-repl cannot write: no PCH, one notice"
readonly_cache=$tmp/readonly
mkdir -p "$readonly_cache"
chmod 500 "$readonly_cache"
if touch "$readonly_cache/probe" 2>/dev/null; then
  # root writes anywhere: a path below a regular file cannot be written by anyone
  rm -f "$readonly_cache/probe"
  touch "$tmp/a-file"
  readonly_cache=$tmp/a-file/cache
fi
run readonly "$readonly_cache"
has readonly "parsing rlx's headers instead"
[ "$(grep -c '^rlx-repl:' "$tmp/readonly.err")" -eq 1 ] || fail "readonly: not one notice"

step "two sessions starting at once with an empty cache"
both=$tmp/both
run_bg() { RLX_CACHE_DIR=$both "$repl" "$tmp/cell.repl" >"$tmp/$1.out" 2>"$tmp/$1.err"; }
run_bg racer1 & p1=$!
run_bg racer2 & p2=$!
wait $p1 || fail "racer1 exited with $?"
wait $p2 || fail "racer2 exited with $?"
for r in racer1 racer2; do
  grep -qxF "$expected" "$tmp/$r.out" || { cat "$tmp/$r.err"; fail "$r did not print $expected"; }
done
pch_file "$both" >/dev/null
run after_race "$both" --verbose
has after_race "(reused)"

step "start times of the installed rlx-repl (not asserted)"
echo "   building the PCH: $(cat "$tmp/first.time") s, reusing it: $(cat "$tmp/second.time") s," \
  "without one (unwritable cache): $(cat "$tmp/readonly.time") s"
echo "the installed rlx-repl builds, reuses and rebuilds its precompiled prelude"
