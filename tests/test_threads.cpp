// tests/test_threads.cpp -- the kernel thread pool: coverage, limits, errors, equal results.
#include "support/check_error.hpp"

#include "../jit/thread_pool.hpp"

#include <rlx/all.hpp>

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>

using rlx::Tensor;

namespace {

/// Restores the thread count when a test ends.
struct ThreadCount {
  int saved = rlx::num_threads();
  ~ThreadCount() { rlx::set_num_threads(saved); }
};

} // namespace

TEST_CASE("threads: parallel_for covers every index once and never exceeds the thread count") {
  ThreadCount restore;
  for (int threads : {1, 2, 3}) {
    rlx::set_num_threads(threads);
    CHECK(rlx::num_threads() == threads);
    const int64_t n = 100003;
    std::vector<std::atomic<int>> hits(n);
    std::atomic<int> active{0}, peak{0};
    std::mutex mu;
    std::set<std::thread::id> ids;
    rlx::threads::parallel_for(n, 1000, [&](int64_t b, int64_t e) {
      int now = ++active;
      int old = peak.load();
      while (now > old && !peak.compare_exchange_weak(old, now)) {
      }
      {
        std::lock_guard lock(mu);
        ids.insert(std::this_thread::get_id());
      }
      for (int64_t i = b; i < e; ++i) ++hits[std::size_t(i)];
      std::this_thread::sleep_for(std::chrono::milliseconds(2)); // let chunks overlap
      --active;
    });
    int64_t wrong = 0;
    for (auto& h : hits) wrong += h.load() != 1;
    CHECK(wrong == 0);
    CHECK(peak.load() <= threads);
    CHECK(int(ids.size()) <= threads);
  }
}

TEST_CASE("threads: an exception in a chunk reaches the caller and the pool keeps working") {
  ThreadCount restore;
  rlx::set_num_threads(2);
  CHECK_THROWS_WITH(rlx::threads::parallel_for(10, 1,
                                               [](int64_t b, int64_t) {
                                                 if (b == 0)
                                                   throw std::runtime_error("chunk failed");
                                               }),
                    "chunk failed");
  std::atomic<int64_t> sum{0};
  rlx::threads::parallel_for(1000, 10, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) sum += i;
  });
  CHECK(sum.load() == 999 * 1000 / 2);
}

TEST_CASE("threads: bad thread counts are rejected") {
  rlx::test::check_error([] { rlx::set_num_threads(0); }, rlx::ErrorKind::Value,
                         "set_num_threads: expected a number of threads in [1, 1024], got 0");
  CHECK(rlx::num_threads() >= 1);
  CHECK(rlx::threads::physical_cores() >= 1);
}

TEST_CASE("threads: a large fused kernel gives the same bits on one and on two threads") {
  ThreadCount restore;
  Tensor x = rlx::randn({300001}, 5);
  auto f = [&] {
    return (rlx::tanh(x * 0.5f + 0.1f) * rlx::sigmoid(x) + x * x).to_vector<float>();
  };
  rlx::set_num_threads(1);
  std::vector<float> one = f();
  rlx::set_num_threads(2);
  rlx::clear_cache();
  std::vector<float> two = f();
  CHECK(one == two);
  // And both equal the interpreter within the bounds of the JIT's f32 tanh and sigmoid
  // (jit/llvm/vmath.cpp: a few ulps each).
  rlx::set_default_backend(rlx::Backend::Interp);
  std::vector<float> ref = f();
  rlx::set_default_backend(rlx::Backend::Jit);
  REQUIRE(one.size() == ref.size());
  std::size_t off = 0;
  for (std::size_t i = 0; i < ref.size(); ++i)
    if (std::fabs(one[i] - ref[i]) > 1e-6f + 1e-5f * std::fabs(ref[i])) ++off;
  CHECK(off == 0);
}
