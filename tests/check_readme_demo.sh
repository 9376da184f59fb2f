#!/usr/bin/env bash
# tests/check_readme_demo.sh README DEMO -- the README shows the demo's output as the demo prints
# it: the ```text block after the line "`demo` builds and runs ..." must equal DEMO's stdout.
set -u
readme=${1:?usage: check_readme_demo.sh README DEMO}
demo=${2:?usage: check_readme_demo.sh README DEMO}
want=$(awk '/^`demo` builds and runs/ {found = 1} found && /^```text$/ {inblock = 1; next}
            inblock && /^```$/ {exit} inblock {print}' "$readme")
if [ -z "$want" ]; then
  echo "no demo output block found in $readme"
  exit 1
fi
got=$("$demo") || { echo "the demo failed"; exit 1; }
if [ "$want" != "$got" ]; then
  echo "README's demo output differs from what the demo prints:"
  diff <(printf '%s\n' "$want") <(printf '%s\n' "$got")
  exit 1
fi
echo "README's demo output is current"
