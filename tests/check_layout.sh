#!/usr/bin/env bash
# tests/check_layout.sh -- the project's layout rules, checked on the source tree:
#  1. no hand list of op kinds outside ops.def and the family files (below): a list is a `case
#     OpKind::` label, a table row `{OpKind::X, ...}`, or several kinds on one line joined by
#     || / && or in braces. Every other fact about a kind is a column of ops.def (a trait) or a
#     hook of its family that the table makes the build require. Tests are not checked: their
#     per-op cases state what each op must do independently of the table;
#  2. public headers include only the standard library and rlx/...;
#  3. LLVM headers only under jit/llvm/ (and rlx-repl's tools/repl/engine.cpp), clang's only in
#     tools/repl/engine.cpp, asmjit only under jit/asmjit/, FFTW only in jit/fft*.cpp (the
#     probe and the JIT's FFT steps, fftw_kernels.cpp), ONNX and protobuf headers only in
#     src/onnx/proto.cpp (the importer reads protobuf-free structs), LAPACKE only in
#     src/interp/linalg.cpp (the factorization kernels), MPI only in src/dist/mpi.cpp (the
#     transport under rlx::dist).
set -u
root=${1:?usage: check_layout.sh SOURCE_ROOT}
cd "$root" || exit 2
status=0
# The family files: per-family code that names the kinds of its family, one rule per kind.
family_files='^(include/rlx/ir/ops\.def'
family_files+='|src/ops/'                                  # shape, scalar and decomposition rules
family_files+='|src/interp/'                               # kernels
family_files+='|src/autodiff/(vjp_rules|jvp_rules|vmap)\.cpp' # hand rows of the structural ops
family_files+='|src/passes/algebraic_simplify\.cpp'        # the identities, one row each
family_files+='|src/passes/fuse_[a-z_]+\.cpp'              # a fusion names the ops it fuses
family_files+='|src/frontend/ops_[a-z_]+\.cpp'             # the frontend's per-family functions
family_files+='|src/onnx/'                                 # ONNX op types mapped onto kinds
family_files+='|jit/)'                                     # lowering and capability checks
kind='(ir::)?OpKind::[A-Za-z0-9]+'
list="case +$kind|^[[:space:]]*[{]$kind,|$kind.*(\\|\\||&&).*OpKind::|$kind *(\\|\\||&&) *\$|[{]$kind, *$kind"
bad=$(grep -rnE "$list" src jit tools 2>/dev/null | grep -vE "$family_files")
if [ -n "$bad" ]; then
  echo "a hand list of op kinds outside ops.def and the family files (make it a trait column of"
  echo "ops.def, or a hook of the kind's family):"; echo "$bad"; status=1
fi
bad=$(grep -rhn '^#include *<' include/rlx | grep -vE '#include <(rlx/[^>]+|[a-z_]+)>' )
if [ -n "$bad" ]; then
  echo "public headers may include only the standard library and rlx/...:"; echo "$bad"; status=1
fi
bad=$(grep -rln '#include *<llvm/' src include tools tests 2>/dev/null | grep -v '^tools/repl/engine.cpp$'; grep -rln '#include *<llvm/' jit | grep -v '^jit/llvm/')
if [ -n "$bad" ]; then echo "LLVM headers outside jit/llvm/ and tools/repl/engine.cpp:"; echo "$bad"; status=1; fi
bad=$(grep -rln '#include *<clang/' src include tools tests jit 2>/dev/null | grep -v '^tools/repl/engine.cpp$')
if [ -n "$bad" ]; then echo "clang headers outside tools/repl/engine.cpp:"; echo "$bad"; status=1; fi
bad=$(grep -rln '#include *<asmjit/' src include tools tests jit 2>/dev/null | grep -v '^jit/asmjit/')
if [ -n "$bad" ]; then echo "asmjit headers outside jit/asmjit/:"; echo "$bad"; status=1; fi
bad=$(grep -rln '#include *<fftw3.h>' src include tools tests jit examples 2>/dev/null | grep -vE '^jit/fft[^/]*\.cpp$')
if [ -n "$bad" ]; then echo "FFTW outside jit/fft*.cpp:"; echo "$bad"; status=1; fi
bad=$(grep -rlnE '#include *<lapacke[a-z_]*\.h>' src include tools tests jit examples 2>/dev/null | grep -v '^src/interp/linalg.cpp$')
if [ -n "$bad" ]; then echo "LAPACKE outside src/interp/linalg.cpp:"; echo "$bad"; status=1; fi
bad=$(grep -rlnE '#include *<mpi\.h>' src include tools tests jit examples 2>/dev/null | grep -v '^src/dist/mpi.cpp$')
if [ -n "$bad" ]; then echo "MPI outside src/dist/mpi.cpp:"; echo "$bad"; status=1; fi
bad=$(grep -rlnE '#include *<(onnx|google/protobuf)/' src include tools tests jit 2>/dev/null | grep -v '^src/onnx/proto.cpp$')
if [ -n "$bad" ]; then echo "ONNX or protobuf headers outside src/onnx/proto.cpp:"; echo "$bad"; status=1; fi
[ $status -eq 0 ] && echo "layout rules hold"
exit $status
