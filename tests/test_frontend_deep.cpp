// tests/test_frontend_deep.cpp -- deep Tensor DAGs: chains of 100k recorded ops are freed and
// extracted without recursion, also on a thread with a 1 MiB stack.
#include "frontend/impl.hpp"

#include <rlx/all.hpp>

#include <doctest/doctest.h>

#include <pthread.h>

#include <exception>
#include <functional>

using rlx::Tensor;

namespace {

/// Runs fn on a new thread whose stack is `bytes` long (std::thread cannot set it), rethrowing
/// what fn throws.
void run_on_stack(std::size_t bytes, const std::function<void()>& fn) {
  struct Job {
    const std::function<void()>* fn;
    std::exception_ptr error;
  } job{&fn, nullptr};
  pthread_attr_t attr;
  REQUIRE(pthread_attr_init(&attr) == 0);
  REQUIRE(pthread_attr_setstacksize(&attr, bytes) == 0);
  pthread_t thread;
  int rc = pthread_create(
      &thread, &attr,
      [](void* p) -> void* {
        auto* j = static_cast<Job*>(p);
        try {
          (*j->fn)();
        } catch (...) {
          j->error = std::current_exception();
        }
        return nullptr;
      },
      &job);
  pthread_attr_destroy(&attr);
  REQUIRE(rc == 0);
  REQUIRE(pthread_join(thread, nullptr) == 0);
  if (job.error) std::rethrow_exception(job.error);
}

/// x followed by n dependent adds.
Tensor chain(Tensor x, int n) {
  for (int i = 0; i < n; ++i) x = x + 1.0f;
  return x;
}

constexpr std::size_t kOneMiB = std::size_t(1) << 20;
constexpr std::size_t kFourMiB = std::size_t(4) << 20;

} // namespace

// The 100k-op chains run on a 4 MiB stack, half the usual main thread's: a release that
// recursed per op would need more than that however small its frames.

TEST_CASE("deep: a 100k-op chain built and dropped inside rlx::jit is freed without recursion") {
  std::vector<float> got;
  run_on_stack(kFourMiB, [&] {
    auto f = rlx::jit([](Tensor x) {
      Tensor dropped = chain(x, 100000);
      return x * 2.0f;
    });
    got = f(rlx::tensor({1.f, 2.f})).to_vector<float>();
  });
  CHECK(got == std::vector<float>{2.f, 4.f});
}

TEST_CASE("deep: a 100k-op chain built and dropped inside rlx::grad is freed without recursion") {
  std::vector<float> got;
  run_on_stack(kFourMiB, [&] {
    auto g = rlx::grad([](Tensor x) {
      Tensor dropped = chain(x, 100000);
      return rlx::sum(x * x);
    });
    got = g(rlx::tensor({1.f, -3.f})).to_vector<float>();
  });
  CHECK(got == std::vector<float>{2.f, -6.f});
}

TEST_CASE("deep: 20k-op chains inside rlx::jit and rlx::grad on a thread with a 1 MiB stack") {
  std::vector<float> jitted, grads;
  run_on_stack(kOneMiB, [&] {
    auto f = rlx::jit([](Tensor x) {
      Tensor dropped = chain(x, 20000);
      return x + 1.0f;
    });
    jitted = f(rlx::tensor({1.f})).to_vector<float>();
    auto g = rlx::grad([](Tensor x) {
      Tensor dropped = chain(x, 20000);
      return rlx::sum(x * 3.0f);
    });
    grads = g(rlx::tensor({5.f})).to_vector<float>();
  });
  CHECK(jitted == std::vector<float>{2.f});
  CHECK(grads == std::vector<float>{3.f});
}

TEST_CASE("deep: a traced 20k-op chain becomes a graph and is freed on a thread with a 1 MiB "
          "stack") {
  std::size_t nodes = 0;
  run_on_stack(kOneMiB, [&] {
    std::vector<rlx::Shape> shapes{rlx::Shape::of(std::vector<int64_t>{2}, rlx::DType::F32)};
    rlx::detail::ExtractedGraph t = rlx::detail::trace_graph(
        shapes, [](std::span<const Tensor> ph) { return std::vector<Tensor>{chain(ph[0], 20000)}; },
        "deep", "test", rlx::Loc::current());
    nodes = t.graph.len();
  });
  // arg0, then a constant and an add per op.
  CHECK(nodes == 1 + 2 * 20000);
}

TEST_CASE("deep: a 20k-op chain outside any trace is evaluated in pieces and freed on a thread "
          "with a 1 MiB stack") {
  std::vector<float> got;
  run_on_stack(kOneMiB, [&] {
    Tensor y = chain(rlx::tensor({0.f}), 20000);
    got = y.to_vector<float>();
  });
  CHECK(got == std::vector<float>{20000.f});
}
