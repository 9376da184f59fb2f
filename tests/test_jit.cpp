// tests/test_jit.cpp -- rlx::jit: tracing once per signature, dynamic dims, caching, threads.
#include "support/check_error.hpp"

#include <rlx/all.hpp>

#include <doctest/doctest.h>

#include <cmath>
#include <thread>

using rlx::Tensor;

namespace {

/// The example function, computed directly in double for comparison.
float reference_f(float x, float a) {
  double xd = x, ad = a;
  return float(std::tanh(xd * ad + double(0.1f)) / (1.0 + std::exp(-xd)) + xd * xd);
}

} // namespace

TEST_CASE("jit: the issue's example traces and compiles once and matches a direct loop") {
  auto f = rlx::jit(
      [](Tensor x, Tensor a) { return rlx::tanh(x * a + 0.1f) * rlx::sigmoid(x) + x * x; });
  Tensor x = rlx::randn({1 << 20}, /*seed=*/0);
  Tensor a = rlx::full({1 << 20}, 0.5f);
  std::vector<float> y = f(x, a).to_vector<float>();
  CHECK(y.size() == std::size_t(1) << 20);
  CHECK(f.stats().compiles == 1);
  CHECK(f.stats().traces == 1);
  std::vector<float> xs = x.to_vector<float>();
  for (std::size_t i = 0; i < y.size(); i += 997) {
    INFO("i = " << i << ", x = " << xs[i]);
    CHECK(y[i] == doctest::Approx(reference_f(xs[i], 0.5f)).epsilon(1e-6));
  }
  // A second call with the same signature replays without tracing or compiling.
  f(x, a).to_vector<float>();
  CHECK(f.stats().traces == 1);
  CHECK(f.stats().compiles == 1);
  CHECK(f.stats().cache_hits == 1);
  CHECK(f.stats().calls == 2);
}

TEST_CASE("jit: a dynamic batch dim traces once and compiles once per new size") {
  auto g = rlx::jit([](Tensor t) { return rlx::softmax(t, -1).sum(-1); },
                    rlx::JitOptions{.dynamic_dims = {{0, 0, "batch"}}});
  for (int n : {3, 5, 3}) {
    std::vector<float> s = g(rlx::randn({n, 16}, 1)).to_vector<float>();
    REQUIRE(s.size() == std::size_t(n));
    for (float v : s) CHECK(v == doctest::Approx(1.0f).epsilon(1e-6)); // softmax rows sum to 1
  }
  auto s = g.stats();
  CHECK(s.traces == 1);
  CHECK(s.compiles == 2);
  CHECK(s.cache_hits == 1);
  // The traced graph keeps the symbol.
  std::optional<rlx::ir::Graph> graph = g.last_graph();
  REQUIRE(graph);
  CHECK(graph->has_dynamic_dims());
  CHECK(rlx::ir::to_text(*graph).find("?batch") != std::string::npos);
}

TEST_CASE("jit: without dynamic dims each new shape is a new trace") {
  auto f = rlx::jit([](Tensor t) { return t * 2; });
  f(rlx::ones({2})).to_vector<float>();
  f(rlx::ones({3})).to_vector<float>();
  f(rlx::ones({2}, rlx::DType::F64)).to_vector<double>();
  f(rlx::ones({2})).to_vector<float>();
  CHECK(f.stats().traces == 3);
  CHECK(f.stats().compiles == 3);
  CHECK(f.stats().cache_hits == 1);
}

TEST_CASE("jit: scalars and tensors captured by the function are baked into the trace") {
  float scale = 3.0f;
  Tensor offset = rlx::tensor({10.f, 20.f});
  auto f = rlx::jit([&](Tensor x) { return x * scale + offset; });
  CHECK(f(rlx::tensor({1.f, 2.f})).to_vector<float>() == std::vector<float>{13.f, 26.f});
  scale = 100.0f; // baked: the compiled function keeps 3
  CHECK(f(rlx::tensor({1.f, 1.f})).to_vector<float>() == std::vector<float>{13.f, 23.f});
  CHECK(f.stats().traces == 1);
}

TEST_CASE("jit: functions may return tuples, pairs and vectors of tensors") {
  auto f = rlx::jit([](Tensor x) { return std::make_tuple(x + 1, x * 2); });
  auto [a, b] = f(rlx::tensor({1.f, 2.f}));
  CHECK(a.to_vector<float>() == std::vector<float>{2.f, 3.f});
  CHECK(b.to_vector<float>() == std::vector<float>{2.f, 4.f});
  auto g = rlx::jit([](Tensor x, Tensor y) { return std::vector<Tensor>{x - y, y, x}; });
  std::vector<Tensor> r = g(rlx::tensor({5.f}), rlx::tensor({2.f}));
  REQUIRE(r.size() == 3);
  CHECK(r[0].item<float>() == 3.f);
  CHECK(r[1].item<float>() == 2.f);
  CHECK(r[2].item<float>() == 5.f);
  auto h = rlx::jit([](Tensor x) { return std::pair<Tensor, Tensor>(x.sum(), x.max()); });
  auto [s, m] = h(rlx::tensor({1.f, 7.f, 2.f}));
  CHECK(s.item<float>() == 10.f);
  CHECK(m.item<float>() == 7.f);
}

TEST_CASE("jit: a jitted function called inside another trace is inlined") {
  auto inner = rlx::jit([](Tensor x) { return x * x; });
  auto outer = rlx::jit([&](Tensor x) { return inner(x) + 1; });
  CHECK(outer(rlx::tensor({3.f})).item<float>() == 10.f);
  CHECK(inner.stats().traces == 0); // it ran on placeholders, not through its own cache
  CHECK(outer.stats().traces == 1);
}

TEST_CASE("jit: reading a traced value on the host names the user's line") {
  auto f = rlx::jit([](Tensor x) {
    if (x.sum().item<float>() > 0) return x; // the read on this line must fail
    return -x;
  });
  std::string msg =
      rlx::test::check_error([&] { f(rlx::ones({2})); }, rlx::ErrorKind::Trace, "inside rlx::jit");
  CHECK(msg.find("test_jit.cpp:" + std::to_string(__LINE__ - 5)) != std::string::npos);
  rlx::test::check_error(
      [&] {
        auto g = rlx::jit([](Tensor x) {
          (void)x.to_vector<float>();
          return x;
        });
        g(rlx::ones({2}));
      },
      rlx::ErrorKind::Trace, "cannot read the value of a traced tensor f32[2]");
}

TEST_CASE("jit: a traced tensor that escapes its trace cannot be used later") {
  Tensor leaked;
  auto f = rlx::jit([&](Tensor x) {
    leaked = x * 2;
    return x;
  });
  f(rlx::ones({2}));
  CHECK(leaked.is_traced());
  rlx::test::check_error([&] { (void)(leaked + 1); }, rlx::ErrorKind::Trace, "escaped");
  rlx::test::check_error([&] { leaked.to_vector<float>(); }, rlx::ErrorKind::Trace, "traced");
  CHECK(leaked.str() == "tensor(<traced>, f32[2])");
}

TEST_CASE("jit: dynamic dims are checked: unknown argument, bad axis, disagreeing sizes") {
  auto bad_arg =
      rlx::jit([](Tensor x) { return x; }, rlx::JitOptions{.dynamic_dims = {{2, 0, "n"}}});
  rlx::test::check_error([&] { bad_arg(rlx::ones({2})); }, rlx::ErrorKind::Value,
                         "names argument 2");
  auto bad_axis =
      rlx::jit([](Tensor x) { return x; }, rlx::JitOptions{.dynamic_dims = {{0, 3, "n"}}});
  rlx::test::check_error([&] { bad_axis(rlx::ones({2})); }, rlx::ErrorKind::Value,
                         "names axis 3 of argument 0");
  auto shared = rlx::jit([](Tensor x, Tensor y) { return x + y; },
                         rlx::JitOptions{.dynamic_dims = {{0, 0, "n"}, {1, 0, "n"}}});
  CHECK(shared(rlx::ones({3}), rlx::ones({3})).to_vector<float>() ==
        std::vector<float>{2.f, 2.f, 2.f});
  rlx::test::check_error([&] { shared(rlx::ones({3}), rlx::ones({4})); }, rlx::ErrorKind::Bind,
                         "has sizes 3 and 4");
}

TEST_CASE("jit: a shape error inside the traced function names the user's line") {
  auto f = rlx::jit([](Tensor x, Tensor w) { return rlx::matmul(x, w); });
  std::string msg = rlx::test::check_error([&] { f(rlx::ones({2, 3}), rlx::ones({4, 5})); },
                                           rlx::ErrorKind::Shape, "f32[2,3] @ f32[4,5]");
  CHECK(msg.find("test_jit.cpp:" + std::to_string(__LINE__ - 3)) != std::string::npos);
}

TEST_CASE("jit: many threads calling one jitted function get correct results") {
  auto f = rlx::jit([](Tensor x) { return (x * x).sum(-1); },
                    rlx::JitOptions{.dynamic_dims = {{0, 0, "rows"}}});
  constexpr int kThreads = 4, kCalls = 20;
  std::vector<int> failures(kThreads, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kCalls; ++i) {
        int64_t rows = 1 + (t + i) % 3;
        // Row r holds the value r+1 in each of its 4 columns: the sum of squares is 4(r+1)^2.
        std::vector<float> v;
        for (int64_t r = 0; r < rows; ++r)
          for (int c = 0; c < 4; ++c) v.push_back(float(r + 1));
        std::vector<float> out = f(Tensor::from_vector(v, {rows, 4})).to_vector<float>();
        for (int64_t r = 0; r < rows; ++r)
          if (out[std::size_t(r)] != 4.0f * float((r + 1) * (r + 1))) ++failures[std::size_t(t)];
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int n : failures) CHECK(n == 0);
  auto s = f.stats();
  CHECK(s.calls == kThreads * kCalls);
  CHECK(s.traces == 1);
  CHECK(s.compiles == 3); // rows = 1, 2, 3
  CHECK(s.cache_hits == kThreads * kCalls - 3);
}

TEST_CASE("jit: tensors built lazily in several threads evaluate independently") {
  std::vector<float> results(4, 0.0f);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      Tensor x = rlx::arange(0, 100, 1) + float(t); // 0..99 shifted by t
      results[std::size_t(t)] = x.sum().item<float>();
    });
  for (auto& th : threads) th.join();
  for (int t = 0; t < 4; ++t) CHECK(results[std::size_t(t)] == 4950.0f + 100.0f * float(t));
}

TEST_CASE("jit: one compiled element-wise kernel serves every size of a dynamic dim") {
  // A constant no other test uses, so the first size compiles (or loads) a fresh kernel.
  auto f = rlx::jit([](Tensor x) { return rlx::tanh(x * 0.123456f) + x; },
                    rlx::JitOptions{.dynamic_dims = {{0, 0, "n"}}, .backend = rlx::Backend::Jit});
  std::vector<float> first = f(rlx::ones({5})).to_vector<float>();
  rlx::CacheStats before = rlx::cache_stats();
  for (int64_t n : {7, 100, 4099, 100000}) {
    std::vector<float> y = f(rlx::ones({n})).to_vector<float>();
    REQUIRE(y.size() == std::size_t(n));
    CHECK(y.back() == first[0]);
  }
  rlx::CacheStats after = rlx::cache_stats();
  CHECK(f.stats().compiles == 5);                           // one executable per binding ...
  CHECK(after.kernels_compiled == before.kernels_compiled); // ... sharing one machine code
  CHECK(after.disk_hits == before.disk_hits);
  CHECK(after.kernel_memory_hits >= before.kernel_memory_hits + 4);
}

TEST_CASE("jit: the extent policy chooses one generic kernel or one kernel per size") {
  struct Restore {
    rlx::ExtentPolicy saved = rlx::extent_policy();
    ~Restore() { rlx::set_extent_policy(saved); }
  } restore;
  for (rlx::ExtentPolicy policy : {rlx::ExtentPolicy::Generic, rlx::ExtentPolicy::Specialize}) {
    CAPTURE(policy);
    rlx::set_extent_policy(policy);
    auto f = rlx::jit([](Tensor x) { return rlx::tanh(x * 0.654321f) - x; },
                      rlx::JitOptions{.dynamic_dims = {{0, 0, "n"}}, .backend = rlx::Backend::Jit});
    std::vector<float> first = f(rlx::ones({3})).to_vector<float>();
    rlx::CacheStats before = rlx::cache_stats();
    for (int64_t n : {9, 200, 5000}) {
      std::vector<float> y = f(rlx::ones({n})).to_vector<float>();
      REQUIRE(y.size() == std::size_t(n));
      CHECK(y.front() == first[0]);
      CHECK(y.back() == first[0]);
    }
    rlx::CacheStats after = rlx::cache_stats();
    // New machine code: compiled here or loaded from the disk cache of an earlier run.
    int64_t fresh =
        (after.kernels_compiled + after.disk_hits) - (before.kernels_compiled + before.disk_hits);
    if (policy == rlx::ExtentPolicy::Generic) {
      CHECK(fresh == 0);
      CHECK(after.kernels_generic - before.kernels_generic == 3);
    } else {
      CHECK(fresh == 3);
      CHECK(after.kernels_specialized - before.kernels_specialized == 3);
    }
  }
}

TEST_CASE("jit: repeated and alternating argument shapes each find their own executable") {
  auto f = rlx::jit([](Tensor x) { return (x * 2.0f).sum(); });
  Tensor a = rlx::ones({3});
  Tensor b = rlx::ones({5});
  std::vector<float> got;
  for (const Tensor* t : {&a, &b, &a, &a, &b, &a}) got.push_back(f(*t).item<float>());
  CHECK(got == std::vector<float>{6, 10, 6, 6, 10, 6});
  rlx::JitStats s = f.stats();
  CHECK(s.calls == 6);
  CHECK(s.traces == 2);
  CHECK(s.compiles == 2);
  CHECK(s.cache_hits == 4);
}
