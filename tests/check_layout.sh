#!/usr/bin/env bash
# tests/check_layout.sh -- the project's layout rules, checked on the source tree:
#  1. `case OpKind::` only in family files (src/ops/, src/interp/, jit/*/lower_*.cpp);
#  2. public headers include only the standard library and rlx/...;
#  3. LLVM headers only under jit/llvm/ (and rlx-repl's tools/repl/engine.cpp), clang's only in
#     tools/repl/engine.cpp, asmjit only under jit/asmjit/, FFTW only in jit/fft*.cpp (the
#     probe and the JIT's FFT steps, fftw_kernels.cpp), ONNX and protobuf headers only in
#     src/onnx/proto.cpp (the importer reads protobuf-free structs).
set -u
root=${1:?usage: check_layout.sh SOURCE_ROOT}
cd "$root" || exit 2
status=0
bad=$(grep -rlnE 'case +(ir::)?OpKind::' src jit tools 2>/dev/null | grep -vE '^(src/ops/|src/interp/|jit/[^/]+/lower_)')
if [ -n "$bad" ]; then
  echo "switch over OpKind outside family files (passes ask traits and families):"; echo "$bad"; status=1
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
bad=$(grep -rlnE '#include *<(onnx|google/protobuf)/' src include tools tests jit 2>/dev/null | grep -v '^src/onnx/proto.cpp$')
if [ -n "$bad" ]; then echo "ONNX or protobuf headers outside src/onnx/proto.cpp:"; echo "$bad"; status=1; fi
[ $status -eq 0 ] && echo "layout rules hold"
exit $status
