// jit/asmjit/asmjit_stderr.cpp -- the `stderr` of asmjit's code inside the shared librlx.
//
// Debian's libasmjit.a is compiled for executables: its debug output reads libc's `stderr`
// through a PC-relative load, which a shared library cannot resolve to libc's variable. The
// copy of the archive linked into librlx.so (meson.build) reads this variable instead; it holds
// the same FILE* as libc's `stderr`, set as librlx loads.
#include <cstdio>

extern "C" {
[[gnu::visibility("hidden")]] extern std::FILE* rlx_asmjit_stderr;
std::FILE* rlx_asmjit_stderr = stderr;
}
