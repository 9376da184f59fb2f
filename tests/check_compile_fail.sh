#!/usr/bin/env bash
# tests/check_compile_fail.sh INCLUDE_DIR CXX... -- misuse of the transforms that the types reveal is
# a compile error with a sentence: each snippet must fail to compile with its message, and a
# correct snippet must compile (so the failures are not from a broken setup).
set -u
inc=$1
shift
cxx=("$@")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
status=0

# expect NAME "MESSAGE" < snippet: compile the snippet; it must fail with MESSAGE in the output.
expect() {
  local name=$1 needle=$2
  { echo '#include <rlx/rlx.hpp>'; echo 'using rlx::Tensor;'; cat; } > "$tmp/$name.cpp"
  if out=$("${cxx[@]}" -std=c++20 -fsyntax-only -I"$inc" "$tmp/$name.cpp" 2>&1); then
    if [ "$needle" = "" ]; then echo "ok: $name compiles"; return; fi
    echo "FAIL: $name compiled; expected an error containing: $needle"; status=1; return
  fi
  if [ "$needle" = "" ]; then echo "FAIL: $name should compile:"; echo "$out" | head -20; status=1; return; fi
  if grep -qF -- "$needle" <<< "$out"; then echo "ok: $name: $needle"
  else echo "FAIL: $name: no '$needle' in:"; echo "$out" | head -20; status=1; fi
}

expect correct_program "" <<'EOF2'
struct P { Tensor w; int k; };
RLX_PYTREE(P, w, k)
int main() {
  auto f = rlx::jit([](const P& p) { return p.w * float(p.k); });
  P g = rlx::grad([](const P& p) { return rlx::sum(p.w); })(P{rlx::ones({2}), 1});
  (void)f(g);
}
EOF2

expect jit_returning_float "rlx::jit / vmap / jvp / vjp: the function must return Tensors" <<'EOF2'
int main() { (void)rlx::jit([](Tensor t) { return 1.0f; })(rlx::ones({2})); }
EOF2

expect grad_returning_a_pair "rlx::grad / value_and_grad: the function must return a Tensor (the loss" <<'EOF2'
int main() { (void)rlx::grad([](Tensor t) { return std::pair{t, t}; })(rlx::ones({2})); }
EOF2

expect grad_returning_double "rlx::grad / value_and_grad: the function must return a Tensor" <<'EOF2'
int main() { (void)rlx::value_and_grad([](Tensor t) { return 2.0; })(rlx::ones({2})); }
EOF2

expect argument_not_a_pytree "every argument must be a pytree" <<'EOF2'
#include <set>
int main() {
  std::set<int> s;
  (void)rlx::jit([](const std::set<int>&) { return rlx::ones({2}); })(s);
}
EOF2

expect struct_member_not_a_pytree "RLX_PYTREE: every listed member must be a pytree" <<'EOF2'
struct Q { Tensor w; int* p; };
RLX_PYTREE(Q, w, p)
int main() { (void)rlx::tree_leaves(Q{rlx::ones({1}), nullptr}); }
EOF2

expect argnum_out_of_range "rlx::grad: an argnum is out of range" <<'EOF2'
int main() { (void)rlx::grad([](Tensor t) { return rlx::sum(t); }, rlx::argnums<1>)(rlx::ones({2})); }
EOF2

expect argnum_names_a_static "an argnum names a static (non-Tensor) argument" <<'EOF2'
int main() {
  (void)rlx::grad([](Tensor t, float k) { return rlx::sum(t) * k; }, rlx::argnums<1>)(
      rlx::ones({2}), 2.0f);
}
EOF2

expect tree_map_returning_float "rlx::tree_map: the function must return a Tensor" <<'EOF2'
int main() { (void)rlx::tree_map([](const Tensor&) { return 1.0f; }, std::vector<Tensor>{}); }
EOF2

exit $status
