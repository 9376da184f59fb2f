// tests/test_frontend_host.cpp -- rlx::frames_abandoned: a host that longjmps out of rlx code
// (rlx-repl's crash guard) gets the locks and trace ids of the abandoned frames back, and a
// jitted function called inside its own trace is an error instead of a hang.
#include "frontend/impl.hpp"
#include "support/check_error.hpp"

#include <rlx/all.hpp>
#include <rlx/host.hpp>

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <csetjmp>
#include <functional>
#include <thread>

#if defined(__SANITIZE_ADDRESS__)
#define RLX_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define RLX_TEST_ASAN 1
#endif
#endif
#ifdef RLX_TEST_ASAN
#include <sanitizer/lsan_interface.h>
#endif

using rlx::Tensor;

namespace {

sigjmp_buf g_env;

/// What abandoned frames allocated, or held references to, is lost by design (a host that
/// longjmps accepts that), so LeakSanitizer is told not to count allocations made while frames
/// are being abandoned.
struct IgnoreLeaks {
#ifdef RLX_TEST_ASAN
  IgnoreLeaks() { __lsan_disable(); }
  ~IgnoreLeaks() { __lsan_enable(); }
#endif
};

/// Calls f(x) and longjmps out of it where it calls jump_out() (as a crash guard would). The
/// abandoned frames kept a reference to x, so its value is never freed: not a leak to report.
template <class F> void call_and_abandon(const F& f, const Tensor& x) {
  {
    [[maybe_unused]] IgnoreLeaks ignore;
    if (sigsetjmp(g_env, 1) == 0) {
      (void)f(x);
      FAIL("the function returned instead of jumping out");
    }
  }
#ifdef RLX_TEST_ASAN
  __lsan_ignore_object(x.impl().get());
#endif
}

[[noreturn]] void jump_out() { siglongjmp(g_env, 1); }

} // namespace

TEST_CASE("host: a jitted function whose trace was abandoned traces again after "
          "frames_abandoned") {
  bool jump = true;
  auto f = rlx::jit([&](Tensor x) {
    Tensor y = x * 2.0f;
    if (jump) jump_out();
    return y + 1.0f;
  });
  Tensor x = rlx::tensor({1.f, 2.f});
  call_and_abandon(f, x);
  CHECK(f.stats().traces == 0); // the abandoned trace recorded nothing
  rlx::frames_abandoned();
  jump = false;
  CHECK(f(x).to_vector<float>() == std::vector<float>{3.f, 5.f});
  CHECK(f(x).to_vector<float>() == std::vector<float>{3.f, 5.f});
  CHECK(f.stats().traces == 1);
}

TEST_CASE("host: a thread waiting for a function whose trace was abandoned goes on after "
          "frames_abandoned") {
  bool jump = true;
  auto f = rlx::jit([&](Tensor x) {
    if (jump) jump_out();
    return x - 1.0f;
  });
  Tensor x = rlx::tensor({4.f});
  call_and_abandon(f, x);
  jump = false;
  std::atomic<bool> done{false};
  std::vector<float> got;
  std::thread waiter([&] {
    got = f(x).to_vector<float>();
    done = true;
  });
  // The abandoned frames hold the function's lock, so the waiter cannot finish before this
  // thread gives it back.
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  CHECK_FALSE(done.load());
  rlx::frames_abandoned();
  waiter.join();
  CHECK(done.load());
  CHECK(got == std::vector<float>{3.f});
}

TEST_CASE("host: frames_abandoned ends the abandoned trace, so a value that escaped it is an "
          "error") {
  Tensor leaked;
  auto f = rlx::jit([&](Tensor x) {
    leaked = x + 1.0f;
    jump_out();
    return x;
  });
  call_and_abandon(f, rlx::tensor({1.f}));
  rlx::frames_abandoned();
  rlx::test::check_error([&] { (void)(leaked * 2.0f); }, rlx::ErrorKind::Trace,
                         "used after its trace ended");
}

TEST_CASE("host: frames_abandoned releases the materialization lock abandoned frames held") {
  {
    [[maybe_unused]] IgnoreLeaks ignore;
    if (sigsetjmp(g_env, 1) == 0) {
      rlx::detail::eval_mutex().lock(); // as if a crash hit while results were published
      jump_out();
    }
  }
  CHECK(rlx::detail::eval_mutex().held_by_this_thread());
  rlx::frames_abandoned();
  CHECK_FALSE(rlx::detail::eval_mutex().held_by_this_thread());
  Tensor y = rlx::tensor({1.f, 2.f}) * 3.0f;
  CHECK(y.to_vector<float>() == std::vector<float>{3.f, 6.f});
}

TEST_CASE("host: frames_abandoned with nothing abandoned changes nothing") {
  auto f = rlx::jit([](Tensor x) { return x * x; });
  Tensor x = rlx::tensor({3.f});
  CHECK(f(x).item<float>() == 9.f);
  rlx::frames_abandoned();
  CHECK(f(x).item<float>() == 9.f);
  CHECK(f.stats().traces == 1);
}

TEST_CASE("host: a jitted function called again inside its own trace is an error naming the "
          "line that jitted it, not a hang") {
  std::function<Tensor(Tensor)> self;
  // clang-format off
  auto f = rlx::jit([&](Tensor x) { return x + self(rlx::ones({2})); }); const int line = __LINE__;
  // clang-format on
  self = [&](Tensor t) { return f(t); };
  std::string where = "test_frontend_host.cpp:" + std::to_string(line);
  rlx::test::check_error([&] { (void)f(rlx::ones({2})); }, rlx::ErrorKind::Trace, where);
  // The error released the lock and the trace: the next call fails the same way, and the thread
  // holds nothing.
  rlx::test::check_error([&] { (void)f(rlx::ones({2})); }, rlx::ErrorKind::Trace,
                         "called again while it was being traced");
  CHECK_FALSE(rlx::detail::eval_mutex().held_by_this_thread());
  Tensor z = rlx::tensor({1.f}) + 1.0f;
  CHECK(z.item<float>() == 2.f);
}

TEST_CASE("host: last_graph called inside the function's own trace is an error, not a hang") {
  std::function<void()> peek;
  auto f = rlx::jit([&](Tensor x) {
    peek();
    return x;
  });
  peek = [&] { (void)f.last_graph(); };
  rlx::test::check_error([&] { (void)f(rlx::tensor({1.f})); }, rlx::ErrorKind::Trace,
                         "last_graph()");
}

TEST_CASE("host: a pending interrupt stops the next run on either backend with an Interrupted "
          "error, and the run after it works") {
  rlx::ir::Graph g = rlx::ir::parse_text(R"(graph @twice {
  %0 = input("x") : [4] f32
  %1 = exp(%0) : [4] f32
  %2 = add(%1, %0) : [4] f32
  return %2
}
)",
                                         "twice.rlx");
  rlx::Buffer in(rlx::ir::Shape({4}, rlx::ir::DType::F32));
  for (rlx::Backend b : {rlx::Backend::Interp, rlx::Backend::Jit}) {
    CAPTURE(b);
    auto exe = rlx::compile(g, b);
    const rlx::Buffer* leaves[] = {&in};
    rlx::request_interrupt();
    CHECK(rlx::interrupt_requested());
    rlx::test::check_error([&] { (void)rlx::run_executable(exe, leaves); },
                           rlx::ErrorKind::Interrupted, "interrupted in ");
    CHECK_FALSE(rlx::interrupt_requested()); // the safe point that threw took the request
    std::vector<rlx::Buffer> out = rlx::run_executable(exe, leaves);
    REQUIRE(out.size() == 1);
    CHECK(out[0].get_f64(0) == 1.0); // exp(0) + 0
  }
}

// Regression: rlx-repl abandoned a cell (siglongjmp) while the interrupt error of a parallel
// step was being thrown, inside malloc, and the next cell hung on malloc's lock.
TEST_CASE("host: frames are not abandoned while rlx works on them or while an interrupt error "
          "leaves them, and are again after clear_interrupt") {
  rlx::clear_interrupt();
  CHECK(rlx::abandon_is_safe());
  {
    rlx::detail::WorkScope outer;
    CHECK_FALSE(rlx::abandon_is_safe());
    {
      rlx::detail::WorkScope inner;
      CHECK_FALSE(rlx::abandon_is_safe());
    }
    CHECK_FALSE(rlx::abandon_is_safe()); // the outer scope still works
  }
  CHECK(rlx::abandon_is_safe());
  rlx::request_interrupt();
  rlx::test::check_error([] { rlx::detail::check_interrupt("a test loop"); },
                         rlx::ErrorKind::Interrupted, "interrupted in a test loop");
  CHECK_FALSE(rlx::abandon_is_safe()); // the error is on its way out of the cell
  rlx::clear_interrupt();              // the host's next cell
  CHECK(rlx::abandon_is_safe());
}

TEST_CASE("host: clear_interrupt drops a request nothing took") {
  rlx::request_interrupt();
  rlx::clear_interrupt();
  CHECK_FALSE(rlx::interrupt_requested());
  CHECK((rlx::tensor({1.f, 2.f}) * 2.f).sum().item<float>() == 6.f);
}
