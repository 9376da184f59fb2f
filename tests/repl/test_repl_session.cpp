// tests/repl/test_repl_session.cpp -- rlx-repl's parts that need clang or signals, tested in
// process: Tab completion on a live session, and the crash guard (abort, assert, terminate,
// crashes on other threads, Ctrl-C).
#include "crash_guard.hpp"
#include "options.hpp"
#include "session.hpp"

#include <rlx/error.hpp>
#include <rlx/host.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <cassert>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <exception>
#include <optional>
#include <stdexcept>
#include <thread>

#include <pthread.h>

namespace {

using rlx::repl::Guarded;
using rlx::repl::run_guarded;

bool has(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

/// One session for the tests, never destroyed: its interpreter's shutdown must run before
/// LLVM's and rlx's statics go (rlx-repl's main ends it first), which a static cannot ensure.
rlx::repl::Session& session() {
  static rlx::repl::Session* s = [] {
    rlx::repl::Options options;
    rlx::repl::SessionOptions so;
    so.compiler_args = rlx::repl::compiler_args(options, rlx::repl::uses_pch(options));
    return new rlx::repl::Session(so);
  }();
  return *s;
}

/// Send SIGINT to `thread` after `delay_ms`, `times` times `delay_ms` apart.
std::thread press_ctrl_c(pthread_t thread, int delay_ms, int times = 1) {
  return std::thread([=] {
    for (int i = 0; i < times; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
      pthread_kill(thread, SIGINT);
    }
  });
}

/// run_guarded on a loop that never ends by itself nor reaches an rlx safe point; `seconds` is
/// how long it ran.
Guarded spin_guarded(double grace_seconds, double& seconds) {
  auto t0 = std::chrono::steady_clock::now();
  std::atomic<bool> forever{true};
  Guarded g = run_guarded(
      [&] {
        while (forever.load(std::memory_order_relaxed)) {
        }
      },
      grace_seconds);
  seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return g;
}

[[gnu::noinline]] void throw_runtime_error() {
  throw std::runtime_error("escaped a noexcept function");
}

[[gnu::noinline]] void throws_through_noexcept() noexcept { throw_runtime_error(); }

} // namespace

TEST_CASE("Tab completes a type name from the prelude: Tens gives Tensor") {
  std::vector<std::string> names = session().complete("Tens");
  CHECK(has(names, "Tensor"));
  for (const std::string& n : names) CHECK(n.starts_with("Tens"));
}

TEST_CASE("Tab completes a member of a variable defined in an earlier cell: x.su gives sum") {
  REQUIRE(session().run_cell("Tensor x = rlx::ones({3});", "<test>", 1));
  std::vector<std::string> names = session().complete("x.su");
  CHECK(has(names, "sum"));
  CHECK_FALSE(has(names, "mean"));
  CHECK(session().complete("Tensor y = x.me") == std::vector<std::string>{"mean"});
  // clang 19 crashes completing this declaration; the retry completes its initializer alone.
  CHECK(session().complete("auto y = x.me") == std::vector<std::string>{"mean"});
  // The session is never destroyed: release what x holds (LeakSanitizer does not see the JIT's
  // globals).
  CHECK(session().run_cell("x = Tensor();", "<test>", 2));
}

TEST_CASE("Tab completes a qualified name: rlx::ara gives arange") {
  std::vector<std::string> names = session().complete("auto r = rlx::ara");
  CHECK(has(names, "arange"));
  for (const std::string& n : names) CHECK(n.starts_with("ara"));
}

TEST_CASE("a failed cell says why: its exception's type and message, or the kind of failure") {
  CHECK_FALSE(session().run_cell("rlx::ones({2, 3}) + rlx::ones({4})", "<test>", 4));
  CHECK(session().last_failure().name == "rlx::Error");
  CHECK(session().last_failure().message.find("[2,3]") != std::string::npos);
  CHECK(session().last_failure().printed.starts_with("rlx::Error: "));
  CHECK_FALSE(session().run_cell("std::vector<int>().at(3)", "<test>", 5));
  CHECK(session().last_failure().name == "std::out_of_range");
  CHECK_FALSE(session().run_cell("throw 7;", "<test>", 6));
  CHECK(session().last_failure().name == "int");
  CHECK(session().last_failure().printed == "exception of type int");
  CHECK_FALSE(session().run_cell("int broken = not_declared_here;", "<test>", 7));
  CHECK(session().last_failure().name == "CompileError");
  CHECK(session().run_cell("int fine = 1;", "<test>", 8));
  CHECK(session().last_failure().name.empty());
}

TEST_CASE("Tab completion uses the lines of the cell typed so far") {
  std::vector<std::string> names = session().complete("Tensor twice(Tensor t) {\n  return t.resh");
  CHECK(has(names, "reshape"));
}

TEST_CASE("Tab completion of an unknown prefix finds nothing and leaves the session working") {
  CHECK(session().complete("no_such_name_prefix_").empty());
  CHECK(session().run_cell("int after_completion = 41;", "<test>", 3));
  CHECK(has(session().complete("after_compl"), "after_completion"));
}

TEST_CASE("a body that returns is reported as returned, and exceptions pass through") {
  int ran = 0;
  CHECK(run_guarded([&] { ++ran; }, 1).kind == Guarded::Kind::Returned);
  CHECK(ran == 1);
  CHECK_THROWS_AS(run_guarded([] { throw std::logic_error("through"); }, 1), std::logic_error);
}

TEST_CASE("abort() is caught as SIGABRT, and a second abort later is caught too") {
  for (int i = 0; i < 2; ++i) {
    Guarded g = run_guarded([] { std::abort(); }, 1);
    CHECK(g.kind == Guarded::Kind::Crashed);
    CHECK(g.signal == SIGABRT);
    CHECK_FALSE(g.other_thread);
  }
  // SIGABRT is not left blocked or handled: the mask is as before.
  sigset_t mask;
  pthread_sigmask(SIG_BLOCK, nullptr, &mask);
  CHECK(sigismember(&mask, SIGABRT) == 0);
  CHECK(sigismember(&mask, SIGINT) == 0);
}

TEST_CASE("a failed assert is caught as SIGABRT") {
  volatile int zero = 0;
  Guarded g = run_guarded(
      [&] {
        assert(zero == 1); // NOLINT: the test wants the assert to fail
        (void)zero;
        std::abort(); // when built with NDEBUG the assert is gone: abort the same way
      },
      1);
  CHECK(g.kind == Guarded::Kind::Crashed);
  CHECK(g.signal == SIGABRT);
}

TEST_CASE("std::terminate from an exception escaping a noexcept function names the exception") {
  for (int i = 0; i < 2; ++i) { // libstdc++'s own handler says "recursively" the second time
    Guarded g = run_guarded([] { throws_through_noexcept(); }, 1);
    CHECK(g.kind == Guarded::Kind::Crashed);
    CHECK(g.signal == SIGABRT);
    CHECK(g.terminate == "std::runtime_error: escaped a noexcept function");
    CHECK_FALSE(std::current_exception()); // the catch terminate began was ended
  }
}

TEST_CASE("an exception escaping another thread abandons the body and stops that thread") {
  Guarded g = run_guarded(
      [] {
        std::thread t([] { throw std::runtime_error("escaped a thread"); });
        t.join(); // never returns: the jump leaves it
      },
      1);
  CHECK(g.kind == Guarded::Kind::Crashed);
  CHECK(g.signal == SIGABRT);
  CHECK(g.other_thread);
  CHECK(g.terminate == "std::runtime_error: escaped a thread");
  // The guard works again afterwards.
  CHECK(run_guarded([] {}, 1).kind == Guarded::Kind::Returned);
}

TEST_CASE("a null pointer read is caught as SIGSEGV") {
  Guarded g = run_guarded(
      [] {
        volatile int* p = nullptr;
        (void)*p;
      },
      1);
  CHECK(g.kind == Guarded::Kind::Crashed);
  CHECK(g.signal == SIGSEGV);
}

TEST_CASE("Ctrl-C makes rlx work stop at its next safe point with an Interrupted error") {
  std::thread ctrl_c = press_ctrl_c(pthread_self(), 100);
  std::optional<rlx::ErrorKind> kind;
  try {
    run_guarded(
        [] {
          for (;;) rlx::detail::check_interrupt("a test loop");
        },
        30);
  } catch (const rlx::Error& e) {
    kind = e.kind();
    CHECK(std::string(e.what()).find("interrupted in a test loop") != std::string::npos);
  }
  ctrl_c.join();
  CHECK(kind == rlx::ErrorKind::Interrupted);
  CHECK_FALSE(rlx::interrupt_requested());
}

TEST_CASE("a loop that never reaches a safe point is abandoned after the grace period") {
  std::thread ctrl_c = press_ctrl_c(pthread_self(), 100);
  double seconds = 0;
  Guarded g = spin_guarded(0.3, seconds);
  ctrl_c.join();
  CHECK(g.kind == Guarded::Kind::Interrupted);
  CHECK(seconds >= 0.35);
  CHECK(seconds < 10);
  CHECK_FALSE(rlx::interrupt_requested()); // the request of the abandoned cell is dropped
}

TEST_CASE("a second Ctrl-C abandons a loop at once, before the grace period") {
  std::thread ctrl_c = press_ctrl_c(pthread_self(), 100, 2);
  double seconds = 0;
  Guarded g = spin_guarded(60, seconds);
  ctrl_c.join();
  CHECK(g.kind == Guarded::Kind::Interrupted);
  CHECK(seconds < 30);
}

TEST_CASE("a Ctrl-C that the kernel gives another thread still interrupts the body") {
  std::atomic<bool> running{true};
  std::thread other([&] {
    while (running.load()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  });
  std::thread ctrl_c = press_ctrl_c(other.native_handle(), 100, 2);
  double seconds = 0;
  Guarded g = spin_guarded(60, seconds);
  ctrl_c.join();
  running = false;
  other.join();
  CHECK(g.kind == Guarded::Kind::Interrupted);
}
