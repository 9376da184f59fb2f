#!/usr/bin/env bash
# tests/check_format.sh -- every C++ source is formatted with clang-format-19 and .clang-format.
# Table files (*.def) are exempt so their columns stay aligned.
set -u
root=${1:?usage: check_format.sh SOURCE_ROOT}
cd "$root" || exit 2
files=$(find include src jit tests examples tools bench -type f \( -name '*.cpp' -o -name '*.hpp' \) 2>/dev/null | sort)
out=$(clang-format-19 --dry-run -Werror $files 2>&1)
if [ -n "$out" ]; then
  echo "$out" | grep -E '^[^ ].*(error|warning)' | cut -d: -f1 | sort -u | sed 's/^/not formatted: /'
  echo "run: clang-format-19 -i \$(find include src jit tests examples tools bench -name '*.cpp' -o -name '*.hpp')"
  exit 1
fi
echo "$(echo "$files" | wc -w) files formatted"
