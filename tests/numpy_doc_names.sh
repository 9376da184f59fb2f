#!/usr/bin/env bash
# tests/numpy_doc_names.sh DOC OUT -- writes OUT, a C++ file that names every rlx spelling in the
# tables of DOC (docs/numpy.md), so the `numpy_doc` test fails to build when a row names
# something rlx lacks. From the second column of each table row it takes
#  - qualified names (`rlx::fft::rfft`, `rlx::random::Key`, `rlx::fft::Norm::Ortho`): one
#    using-declaration each (in a namespace of its own), which compiles for any function
#    overload set, type or enumerator;
#  - methods (`x.var(...)`, `.T()`): a class derived from rlx::Tensor re-declaring the name
#    (`using rlx::Tensor::var;`), which compiles for any overload set of that member.
set -euo pipefail
doc=${1:?usage: numpy_doc_names.sh DOC OUT}
out=${2:?usage: numpy_doc_names.sh DOC OUT}
rows=$(grep -E '^\|' "$doc" | grep -vE '^\|[-| ]+\|$' | awk -F'|' 'NR > 0 {print $3}' |
       grep -F 'rlx' || true)
qualified=$(grep -oE 'rlx::[A-Za-z_][A-Za-z0-9_]*(::[A-Za-z_][A-Za-z0-9_]*)*' <<<"$rows" |
            sort -u || true)
# rlx::Tensor::from_blob is a member: a using-declaration at namespace scope cannot name it.
names=$(grep -v '^rlx::Tensor::' <<<"$qualified" || true)
methods=$( (grep -oE '(^|[^A-Za-z0-9_:>])[a-z]?\.[A-Za-z_][A-Za-z0-9_]*\(' <<<"$rows" |
              sed -E 's/.*\.([A-Za-z_][A-Za-z0-9_]*)\(/\1/'
            grep '^rlx::Tensor::' <<<"$qualified" | sed 's/^rlx::Tensor:://') | sort -u || true)
# rlx's namespaces, as the public headers declare them (`namespace rlx::linalg {`).
namespaces=$(grep -rhoE '^namespace rlx(::[a-z_]+)+' "$(dirname "$doc")/../include/rlx" |
             sed 's/^namespace //' | sort -u)
{
  echo "// Generated from docs/numpy.md by tests/numpy_doc_names.sh: every rlx name its tables spell."
  echo "#include <rlx/all.hpp>"
  echo "#include <cstdio>"
  echo "namespace numpy_doc {"
  i=0 # one namespace per name, so names that differ only in their namespace do not collide
  for n in $names; do
    if grep -qxF "$n" <<<"$namespaces"; then # rlx::linalg: a namespace alias checks it
      echo "namespace n$i = $n;"
    else
      echo "namespace n$i { using $n; }"
    fi
    i=$((i + 1))
  done
  echo "struct Methods : rlx::Tensor {"
  for m in $methods; do echo "  using rlx::Tensor::$m;"; done
  echo "};"
  echo "} // namespace numpy_doc"
  echo "int main() {"
  echo "  std::printf(\"docs/numpy.md: %d rlx names and %d Tensor methods exist\\n\", $(wc -w <<<"$names"), $(wc -w <<<"$methods"));"
  echo "}"
} >"$out"
