// tools/repl/crash_guard.cpp -- sigsetjmp before the cell, siglongjmp from the signal handlers.
//
// Only the cell's thread may jump. A crash on another thread forwards its signal to the cell's
// thread (pthread_kill) and stops where it is; a SIGINT that the kernel gave another thread is
// forwarded the same way. The grace period after the first Ctrl-C is a POSIX timer that sends
// SIGINT to the cell's thread itself (si_code SI_TIMER tells it from a key press).
#include "crash_guard.hpp"

#include <rlx/host.hpp>

#include <atomic>
#include <csetjmp>
#include <cstdlib>
#include <exception>
#include <iterator>
#include <typeinfo>
#include <vector>

#include <cxxabi.h>
#include <pthread.h>
#include <time.h>
#include <unistd.h>

namespace rlx::repl {

namespace {

constexpr int kCrashSignals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
constexpr int kInterruptCode = -1; ///< what sigsetjmp returns after an interrupt

// The state the handlers read, set before they are installed and cleared after.
sigjmp_buf* g_jump = nullptr;
pthread_t g_cell_thread;
timer_t g_timer;
bool g_have_timer = false;
double g_grace = 0;
volatile std::sig_atomic_t g_presses = 0;
volatile std::sig_atomic_t g_other_thread = 0;
std::string g_terminate; ///< written by on_terminate (not a signal handler) before abort()

bool on_cell_thread() { return g_jump != nullptr && pthread_equal(pthread_self(), g_cell_thread); }

/// Stop this thread for good (no signal can wake it).
[[noreturn]] void park() {
  sigset_t all;
  sigfillset(&all);
  for (;;) sigsuspend(&all);
}

extern "C" void rlx_repl_on_crash(int sig) {
  if (on_cell_thread()) siglongjmp(*g_jump, sig);
  if (g_jump != nullptr) { // another thread of the cell's: the cell's thread jumps instead
    g_other_thread = 1;
    pthread_kill(g_cell_thread, sig);
    park();
  }
  // No cell to abandon: die of the signal as if no handler were installed.
  signal(sig, SIG_DFL);
  raise(sig);
}

void arm_timer(double seconds) {
  if (!g_have_timer) return;
  itimerspec when{};
  when.it_value.tv_sec = time_t(seconds);
  when.it_value.tv_nsec = long((seconds - double(time_t(seconds))) * 1e9);
  if (when.it_value.tv_sec == 0 && when.it_value.tv_nsec == 0) when.it_value.tv_nsec = 1;
  timer_settime(g_timer, 0, &when, nullptr);
}

void disarm_grace_timer() {
  if (!g_have_timer) return;
  itimerspec never{};
  timer_settime(g_timer, 0, &never, nullptr);
}

/// Abandon the cell, unless rlx's thread pool runs a job of the cell's: its threads read the
/// cell's frames, so the jump waits (rechecked every 50 ms) until the job ends, which it does
/// at its chunks' end since an interrupt is requested.
void abandon_when_safe() {
  if (rlx::abandon_is_safe()) siglongjmp(*g_jump, kInterruptCode);
  rlx::request_interrupt();
  arm_timer(0.05);
}

extern "C" void rlx_repl_on_interrupt(int sig, siginfo_t* info, void*) {
  if (g_jump == nullptr) return;
  if (!on_cell_thread()) { // the kernel chose another thread for the terminal's signal
    pthread_kill(g_cell_thread, sig);
    return;
  }
  if (info != nullptr && info->si_code == SI_TIMER) {
    abandon_when_safe();
    return;
  }
  g_presses = g_presses + 1;
  if (g_presses == 1) {
    rlx::request_interrupt(); // rlx stops at its next safe point and throws
    arm_timer(g_grace);       // C++ that never reaches one is abandoned after the grace period
  } else {
    abandon_when_safe();
  }
}

extern "C" void rlx_repl_on_press(int) { g_presses = g_presses + 1; }

/// What std::terminate is handling: "std::runtime_error: what()", "an exception of type int",
/// or "no exception".
std::string describe_handled_exception() {
  std::exception_ptr e = std::current_exception();
  if (!e) return "no exception";
  try {
    std::rethrow_exception(e);
  } catch (const std::exception& x) {
    int status = 0;
    char* name = abi::__cxa_demangle(typeid(x).name(), nullptr, nullptr, &status);
    std::string what = std::string(status == 0 && name ? name : typeid(x).name()) + ": " + x.what();
    std::free(name);
    return what;
  } catch (...) {
    std::type_info* t = abi::__cxa_current_exception_type();
    int status = 0;
    char* name = t ? abi::__cxa_demangle(t->name(), nullptr, nullptr, &status) : nullptr;
    std::string what = "an exception of type " +
                       std::string(status == 0 && name ? name : (t ? t->name() : "<unknown>"));
    std::free(name);
    return what;
  }
}

/// std::terminate's handler while a cell runs: say what it was handling, then abort() (which
/// the crash handler turns into a jump). libstdc++'s own handler prints this only once per
/// process ("terminate called recursively" after that). No local owns memory when abort()
/// abandons this frame.
[[noreturn]] void on_terminate() {
  g_terminate = describe_handled_exception();
  std::abort();
}

/// End the catch blocks the abandoned frames were in (std::terminate begins one for the
/// exception it handles): else std::current_exception() would name a stale exception forever.
/// The session runs cells outside of any catch block, so every one left belongs to the cell.
void end_abandoned_catches() {
  for (int i = 0; i < 1024 && abi::__cxa_current_exception_type() != nullptr; ++i)
    abi::__cxa_end_catch();
}

/// The grace timer: SIGINT to this thread (created once, for the thread that runs cells).
void make_timer() {
  static bool tried = false;
  if (tried) return;
  tried = true;
  sigevent ev{};
  ev.sigev_notify = SIGEV_THREAD_ID;
  ev.sigev_signo = SIGINT;
  ev._sigev_un._tid = gettid();
  g_have_timer = timer_create(CLOCK_MONOTONIC, &ev, &g_timer) == 0;
}

} // namespace

Guarded run_guarded(const std::function<void()>& body, double grace_seconds) {
  static std::vector<char> alt_stack(1 << 16); // the handler's stack when the cell's is full
  make_timer();
  stack_t alt{}, old_alt{};
  alt.ss_sp = alt_stack.data();
  alt.ss_size = alt_stack.size();
  sigaltstack(&alt, &old_alt);

  sigjmp_buf jump;
  g_cell_thread = pthread_self();
  g_grace = grace_seconds;
  g_presses = 0;
  g_other_thread = 0;
  g_terminate.clear();
  rlx::clear_interrupt();
  g_jump = &jump;

  struct sigaction crash{}, interrupt{};
  crash.sa_handler = rlx_repl_on_crash;
  sigemptyset(&crash.sa_mask);
  crash.sa_flags = SA_ONSTACK;
  interrupt.sa_sigaction = rlx_repl_on_interrupt;
  sigemptyset(&interrupt.sa_mask);
  interrupt.sa_flags = SA_ONSTACK | SA_SIGINFO;
  struct sigaction old[std::size(kCrashSignals)], old_interrupt{};
  for (std::size_t i = 0; i < std::size(kCrashSignals); ++i)
    sigaction(kCrashSignals[i], &crash, &old[i]);
  sigaction(SIGINT, &interrupt, &old_interrupt);
  std::terminate_handler old_terminate = std::set_terminate(on_terminate);

  auto restore = [&] {
    // Block SIGINT while the timer stops, and drop a press or a timer signal still pending, so
    // that none reaches the handler installed before (the default one ends the process).
    sigset_t only_int, before;
    sigemptyset(&only_int);
    sigaddset(&only_int, SIGINT);
    pthread_sigmask(SIG_BLOCK, &only_int, &before);
    disarm_grace_timer();
    g_jump = nullptr;
    sigset_t pending;
    timespec zero{};
    while (sigpending(&pending) == 0 && sigismember(&pending, SIGINT) == 1)
      if (sigtimedwait(&only_int, nullptr, &zero) < 0) break;
    std::set_terminate(old_terminate);
    sigaction(SIGINT, &old_interrupt, nullptr);
    for (std::size_t i = 0; i < std::size(kCrashSignals); ++i)
      sigaction(kCrashSignals[i], &old[i], nullptr);
    pthread_sigmask(SIG_SETMASK, &before, nullptr);
    sigaltstack(&old_alt, nullptr);
    rlx::clear_interrupt();
  };

  Guarded out;
  int code = sigsetjmp(jump, 1);
  if (code != 0) {
    out.kind = code == kInterruptCode ? Guarded::Kind::Interrupted : Guarded::Kind::Crashed;
    out.signal = code == kInterruptCode ? SIGINT : code;
    out.other_thread = g_other_thread != 0;
    out.terminate = g_terminate;
    restore();
    end_abandoned_catches();
    rlx::frames_abandoned(); // release what the abandoned frames held inside rlx
    return out;
  }
  try {
    body();
  } catch (...) {
    restore();
    throw;
  }
  restore();
  return out;
}

InterruptCounter::InterruptCounter() {
  g_presses = 0;
  struct sigaction sa{};
  sa.sa_handler = rlx_repl_on_press;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, &old_);
}

InterruptCounter::~InterruptCounter() { sigaction(SIGINT, &old_, nullptr); }

bool InterruptCounter::pressed() const { return g_presses > 0; }

} // namespace rlx::repl
