// tools/repl/crash_guard.cpp -- sigsetjmp before the cell, siglongjmp from the signal handler.
#include "crash_guard.hpp"

#include <csetjmp>
#include <csignal>
#include <cstdlib>
#include <vector>

namespace rlx::repl {

namespace {

constexpr int kSignals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL};
sigjmp_buf* g_jump = nullptr;

extern "C" void on_crash(int sig) { siglongjmp(*g_jump, sig); }

} // namespace

int run_guarded(const std::function<void()>& body) {
  static std::vector<char> alt_stack(1 << 16); // the handler's stack when the cell's is full
  stack_t alt{}, old_alt{};
  alt.ss_sp = alt_stack.data();
  alt.ss_size = alt_stack.size();
  sigaltstack(&alt, &old_alt);
  struct sigaction sa{};
  sa.sa_handler = on_crash;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_ONSTACK;
  struct sigaction old[std::size(kSignals)];
  for (std::size_t i = 0; i < std::size(kSignals); ++i) sigaction(kSignals[i], &sa, &old[i]);
  auto restore = [&] {
    for (std::size_t i = 0; i < std::size(kSignals); ++i) sigaction(kSignals[i], &old[i], nullptr);
    sigaltstack(&old_alt, nullptr);
    g_jump = nullptr;
  };
  sigjmp_buf jump;
  sigjmp_buf* outer = g_jump;
  g_jump = &jump;
  int sig = sigsetjmp(jump, 1);
  if (sig != 0) {
    restore();
    g_jump = outer;
    return sig;
  }
  try {
    body();
  } catch (...) {
    restore();
    g_jump = outer;
    throw;
  }
  restore();
  g_jump = outer;
  return 0;
}

} // namespace rlx::repl
