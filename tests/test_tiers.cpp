// tests/test_tiers.cpp -- the JIT's tiers: a large element-wise kernel starts with the fast code
// generator's code, and once it has computed enough elements it is compiled again by the full
// code generator and swapped in (jit/steps.cpp, ElementwiseStep; docs/jit.md, "Tiers").
#include "support/hot_chain.hpp"

#include <rlx/all.hpp>

#include <doctest/doctest.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace ir = rlx::ir;

namespace {

/// Keeps the process's disk cache off for one test: the full tier's code that an earlier run
/// stored would be loaded at once, and nothing would be recompiled (tests/test_disk_cache.cpp
/// tests that).
struct NoDiskCache {
  std::string saved = rlx::disk_cache_dir();
  NoDiskCache() {
    rlx::set_disk_cache_dir("off");
    rlx::clear_cache();
  }
  ~NoDiskCache() {
    rlx::clear_cache();
    rlx::set_disk_cache_dir(saved.empty() ? "off" : saved);
  }
};

bool same_bits(const rlx::Buffer& a, const rlx::Buffer& b) {
  return a.bytes().size() == b.bytes().size() &&
         std::memcmp(a.bytes().data(), b.bytes().data(), a.bytes().size()) == 0;
}

} // namespace

TEST_CASE("a hot element-wise kernel is compiled again by the full code generator and computes "
          "the same bits") {
  NoDiskCache off;
  const int64_t n = int64_t(1) << 20; // the recompile comes after 2^23 elements: 8 runs
  rlx::Buffer x = rlx::test::hot_chain_input(n);
  const std::vector<const rlx::Buffer*> leaves{&x};
  auto exe = rlx::compile(rlx::test::hot_chain(n), rlx::Backend::Jit);
  const int64_t before = rlx::cache_stats().kernels_recompiled;
  std::vector<rlx::Buffer> first = exe->run(leaves);
  for (int i = 0; i < 6; ++i) exe->run(leaves);
  CHECK(rlx::cache_stats().kernels_recompiled == before); // 7 runs: 7 * 2^20 elements
  for (int i = 0; i < 3; ++i) exe->run(leaves);
  CHECK(rlx::cache_stats().kernels_recompiled == before + 1);
  std::vector<rlx::Buffer> later = exe->run(leaves);
  // The same IR through both code generators: the same instructions' semantics, the same bits.
  CHECK(same_bits(first[0], later[0]));
  std::vector<rlx::Buffer> spec =
      rlx::compile(rlx::test::hot_chain(n), rlx::Backend::Interp)->run(leaves);
  const float* got = reinterpret_cast<const float*>(later[0].bytes().data());
  const float* want = reinterpret_cast<const float*>(spec[0].bytes().data());
  double worst = 0;
  for (int64_t i = 0; i < n; ++i) worst = std::max(worst, double(std::abs(got[i] - want[i])));
  CHECK(worst < 1e-5); // values within [-1, 2]: a few ulp of the math functions

  SUBCASE("a new executable of the same kernel starts with the full code, and is not recompiled") {
    rlx::clear_cache(); // `exe` still holds the code
    const rlx::CacheStats s0 = rlx::cache_stats();
    auto again = rlx::compile(rlx::test::hot_chain(n), rlx::Backend::Jit);
    for (int i = 0; i < 10; ++i) CHECK(same_bits(again->run(leaves)[0], first[0]));
    const rlx::CacheStats s1 = rlx::cache_stats();
    CHECK(s1.kernels_compiled == s0.kernels_compiled);
    CHECK(s1.kernels_reused == s0.kernels_reused + 1);
    CHECK(s1.kernels_recompiled == s0.kernels_recompiled);
  }
}

TEST_CASE("a small element-wise kernel has no second tier") {
  NoDiskCache off;
  const int64_t n = int64_t(1) << 20;
  rlx::Buffer x = rlx::test::hot_chain_input(n);
  ir::Graph g;
  ir::NodeId in = g.input("x", ir::Shape({n}, ir::DType::F32));
  g.set_outputs(
      {g.add(g.mul(in, g.constant(1.5, ir::DType::F32)), g.constant(1.0, ir::DType::F32))});
  auto exe = rlx::compile(g, rlx::Backend::Jit);
  const int64_t before = rlx::cache_stats().kernels_recompiled;
  const std::vector<const rlx::Buffer*> leaves{&x};
  for (int i = 0; i < 12; ++i) exe->run(leaves);
  CHECK(rlx::cache_stats().kernels_recompiled == before);
}
