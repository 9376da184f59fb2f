// tests/test_memory.cpp -- tensor storage (rlx/memory.hpp): value semantics, alignment, and the
// pool that hands large freed blocks out again.
#include <rlx/all.hpp>

#include <doctest/doctest.h>

#include <cstdint>
#include <cstring>

using rlx::Storage;

TEST_CASE("memory: storage is zero-filled, aligned to 64 bytes and copies its contents") {
  for (std::size_t n : {std::size_t(1), std::size_t(100), std::size_t(1) << 20}) {
    Storage a(n);
    REQUIRE(a.size() == n);
    CHECK(reinterpret_cast<uintptr_t>(a.data()) % 64 == 0);
    bool zero = true;
    for (std::size_t i = 0; i < n; ++i) zero = zero && a.data()[i] == std::byte{0};
    CHECK(zero);
    a.data()[n - 1] = std::byte{7};
    Storage b = a;
    CHECK(b == a);
    CHECK(b.data() != a.data());
    b.data()[0] = std::byte{1};
    CHECK(b != a);
    Storage c = std::move(b);
    CHECK(b.size() == 0);
    CHECK(c.data()[0] == std::byte{1});
  }
  CHECK(Storage() == Storage(0));
}

TEST_CASE("memory: a freed large block is handed out again for the next request of its size") {
  rlx::set_memory_pool_limit(std::size_t(1) << 30);
  const std::size_t n = std::size_t(3) << 20;
  std::byte* first = nullptr;
  {
    Storage a(n, /*zero=*/false);
    first = a.data();
  }
  rlx::MemoryStats before = rlx::memory_stats();
  CHECK(before.bytes_cached >= n);
  Storage b(n - 100, /*zero=*/false); // the same size class
  rlx::MemoryStats after = rlx::memory_stats();
  CHECK(after.reuses == before.reuses + 1);
  CHECK(b.data() == first);
  CHECK(after.bytes_in_use >= n - 100);
}

TEST_CASE("memory: the pool keeps no more than its limit and releases everything on request") {
  const std::size_t n = std::size_t(2) << 20;
  rlx::set_memory_pool_limit(n + n / 2); // room for one block of this size
  {
    Storage a(n), b(n);
  }
  CHECK(rlx::memory_stats().bytes_cached <= n + n / 2);
  CHECK(rlx::memory_stats().bytes_cached >= n);
  rlx::release_cached_memory();
  CHECK(rlx::memory_stats().bytes_cached == 0);
  rlx::set_memory_pool_limit(std::size_t(1) << 30);
}

TEST_CASE("memory: buffers of computed tensors reuse pooled memory call after call") {
  rlx::Tensor x = rlx::ones({1 << 19});
  (x * 2.0f + 1.0f).to_vector<float>(); // warm up: compile, first allocations
  uint64_t reuses = rlx::memory_stats().reuses;
  std::vector<float> v = (x * 2.0f + 1.0f).to_vector<float>();
  CHECK(v[0] == 3.0f);
  CHECK(rlx::memory_stats().reuses > reuses);
}
