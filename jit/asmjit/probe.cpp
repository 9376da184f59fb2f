// jit/asmjit/probe.cpp -- a two-instruction asmjit kernel (asmjit headers stay inside jit/asmjit).
#include "probes.hpp"

#include "rlx/error.hpp"

#include <asmjit/x86.h>

namespace rlx::jit {

int asmjit_add(int a, int b) {
  using Fn = int (*)(int, int);
  static asmjit::JitRuntime rt;
  static Fn fn = [] {
    asmjit::CodeHolder code;
    code.init(rt.environment());
    asmjit::x86::Assembler as(&code);
    // System V: a in edi, b in esi.
    as.lea(asmjit::x86::eax, asmjit::x86::ptr(asmjit::x86::rdi, asmjit::x86::rsi));
    as.ret();
    Fn f = nullptr;
    if (rt.add(&f, &code) != asmjit::kErrorOk)
      fail(ErrorKind::Unsupported, "asmjit: code generation failed");
    return f;
  }();
  return fn(a, b);
}

} // namespace rlx::jit
