// tests/test_blob.cpp -- Tensor::from_blob: the user's memory as a tensor without a copy, its
// deleter, and the cases that copy (misaligned memory, bools).
#include "support/backends.hpp"
#include "support/check_error.hpp"

#include <rlx/rlx.hpp>

#include <doctest/doctest.h>

#include <cstdlib>
#include <numeric>
#include <vector>

namespace {

using rlx::DType;
using rlx::ErrorKind;
using rlx::Tensor;
using rlx::test::check_error;
using rlx::test::on_both_backends;

/// 64-byte aligned floats 0, 1, 2, ... freed by free().
float* aligned_iota(std::size_t n) {
  auto* p = static_cast<float*>(std::aligned_alloc(64, ((n * sizeof(float) + 63) / 64) * 64));
  std::iota(p, p + n, 0.f);
  return p;
}

TEST_CASE("from_blob wraps aligned memory without a copy and computes on both backends") {
  on_both_backends([] {
    float* p = aligned_iota(12);
    {
      Tensor x = Tensor::from_blob(p, {3, 4});
      CHECK(x.shares_memory(p));
      CHECK(x.data<float>() == p);
      CHECK(x.sizes() == rlx::Dims{3, 4});
      CHECK((x * 2.f).sum().item<float>() == 132.f);
      // Writes to the memory show through, as torch.from_numpy's do.
      p[0] = 100.f;
      CHECK((x + 0.f).to_vector<float>()[0] == 100.f);
      CHECK(x.sum(1).to_vector<float>() == std::vector<float>{106.f, 22.f, 38.f});
    }
    std::free(p);
  });
}

TEST_CASE("from_blob's deleter runs once, when nothing uses the memory any more") {
  int calls = 0;
  float* p = aligned_iota(8);
  auto deleter = [&calls](void* q) {
    ++calls;
    std::free(q);
  };
  Tensor pending;
  {
    Tensor x = Tensor::from_blob(p, {8}, deleter);
    pending = x * 3.f; // not computed yet: it still needs x's memory
  }
  CHECK(calls == 0);
  CHECK(pending.sum().item<float>() == 84.f);
  CHECK(pending.to_vector<float>()[7] == 21.f);
  pending = Tensor();
  CHECK(calls == 1);
}

TEST_CASE("from_blob copies misaligned memory and bools, and then releases them at once") {
  int calls = 0;
  float* p = aligned_iota(9);
  Tensor x = Tensor::from_blob(p + 1, {8}, [&calls](void*) { ++calls; });
  CHECK(calls == 1);
  CHECK_FALSE(x.shares_memory(p + 1));
  p[1] = -5.f; // the copy does not see it
  CHECK(x.to_vector<float>() == std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8});
  std::free(p);
  alignas(64) bool flags[4] = {true, false, true, true};
  Tensor b = Tensor::from_blob(flags, {2, 2});
  CHECK(b.dtype() == DType::Bool);
  CHECK_FALSE(b.shares_memory(flags));
  CHECK(b.sum().item<int64_t>() == 3);
}

TEST_CASE("from_blob's errors name the function and the caller's line") {
  check_error([] { (void)Tensor::from_blob(static_cast<float*>(nullptr), {2}); }, ErrorKind::Value,
              "from_blob: a null pointer for f32[2]");
  alignas(64) float v[4] = {};
  std::string msg =
      check_error([&] { (void)Tensor::from_blob(v, {-1, 4}); }, ErrorKind::Shape, "from_blob");
  CHECK(msg.find("test_blob.cpp") != std::string::npos);
  CHECK(Tensor::from_blob(static_cast<float*>(nullptr), {0, 3}).numel() == 0);
}

} // namespace
