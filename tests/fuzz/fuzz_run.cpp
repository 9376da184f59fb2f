// tests/fuzz/fuzz_run.cpp -- libFuzzer target: a text-IR graph that parses and verifies is bound
// (dynamic dims to small sizes), kept to a small element budget, then RUN on the interpreter and
// on the JIT with the same deterministic inputs. Neither may crash; both succeed or both throw
// rlx::Error; when both succeed their outputs have the same dtypes and shapes and agree within
// the tolerances the backends suite uses (NaN equals NaN). An InternalError is a bug.
// The comparison helpers of the backends suite, without doctest's test registry.
#define DOCTEST_CONFIG_DISABLE
#include "support/compare.hpp"

#include <rlx/all.hpp>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

namespace ir = rlx::ir;
using rlx::Buffer;

/// Graphs larger than this (elements summed over all nodes) or longer are not run: the target
/// looks for wrong answers and crashes, not for slow inputs.
constexpr int64_t kElementBudget = int64_t(1) << 16;
constexpr std::size_t kMaxNodes = 256;

/// Every dynamic dim to 2 (rows, the product of batch and seq, to 4).
ir::DimBinding small_binding(const ir::Graph& g) {
  ir::DimBinding b;
  for (uint32_t s : g.dynamic_symbols()) b.set(s, s == ir::sym::kRows ? 4 : 2);
  return b;
}

bool within_budget(const ir::Graph& g) {
  if (g.nodes().size() > kMaxNodes) return false;
  int64_t total = 0;
  for (const ir::Node& n : g.nodes()) {
    std::optional<int64_t> e = n.shape.num_elements();
    if (!e) return false;
    total += *e; // each <= 2^48, at most kMaxNodes of them: no overflow
    if (total > kElementBudget) return false;
  }
  return true;
}

/// Leaf `k`'s values: small numbers in steps of 1/4 (floats) or small integers, so that exp,
/// products and sums stay finite and indices are mostly in range.
Buffer leaf_values(const ir::Shape& s, int64_t k) {
  Buffer b(s);
  for (int64_t i = 0; i < b.numel(); ++i) {
    int64_t v = (i * 37 + k * 11) % 17 - 8;
    if (ir::is_float(s.dtype()) || ir::is_complex(s.dtype()))
      b.set_f64(i, double(v) * 0.25);
    else if (ir::is_bool(s.dtype()))
      b.set_i64(i, v & 1);
    else
      b.set_i64(i, v % 4);
  }
  return b;
}

struct Outcome {
  std::vector<Buffer> outputs;
  std::string error; ///< the rlx::Error's message, or "" when it ran
};

Outcome run_on(const ir::Graph& g, std::span<const Buffer* const> leaves, rlx::Backend backend) {
  Outcome o;
  try {
    o.outputs = rlx::run_executable(rlx::compile(g, backend), leaves);
  } catch (const rlx::Error& e) {
    o.error = e.what();
    if (o.error.empty()) o.error = "(empty message)";
  }
  return o;
}

[[noreturn]] void report(const std::string& text, const std::string& what) {
  std::fprintf(stderr, "fuzz_run: %s\n--- graph:\n%s\n", what.c_str(), text.c_str());
  std::abort();
}

} // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  rlx::set_disk_cache_dir("off");
  rlx::set_num_threads(1);
  rlx::set_memory_limit(std::size_t(1) << 30); // an escaped size is an Error, not an OOM kill
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  ir::Graph g;
  try {
    g = ir::parse_text(text, "fuzz.rlx");
    ir::verify(g);
    if (g.has_dynamic_dims()) g = g.bind(small_binding(g));
  } catch (const rlx::Error&) {
    return 0; // malformed or inconsistent: the parser targets cover these
  }
  if (!within_budget(g) || g.outputs.empty()) return 0;
  std::vector<Buffer> leaves;
  int64_t k = 0;
  for (const ir::Node& n : g.nodes())
    if (n.op.kind() == ir::OpKind::Input || n.op.kind() == ir::OpKind::Param)
      leaves.push_back(leaf_values(n.shape, k++));
  std::vector<const Buffer*> ptrs;
  for (const Buffer& b : leaves) ptrs.push_back(&b);

  Outcome want = run_on(g, ptrs, rlx::Backend::Interp);
  Outcome got = run_on(g, ptrs, rlx::Backend::Jit);
  rlx::clear_cache(); // every input is a new graph: keep memory flat
  if (want.error.empty() != got.error.empty())
    report(text, want.error.empty() ? "only the JIT threw: " + got.error
                                    : "only the interpreter threw: " + want.error);
  if (!want.error.empty()) return 0;
  if (want.outputs.size() != got.outputs.size()) report(text, "output counts differ");
  for (std::size_t i = 0; i < want.outputs.size(); ++i) {
    const Buffer &w = want.outputs[i], &o = got.outputs[i];
    if (w.dtype() != o.dtype() || w.shape() != o.shape())
      report(text, "output " + std::to_string(i) + ": interp " + ir::short_str(w.shape()) +
                       ", jit " + ir::short_str(o.shape()));
    std::string diff =
        rlx::test::mismatch_report(w, o, rlx::test::output_tolerance(g, g.outputs[i]));
    if (!diff.empty()) report(text, "output " + std::to_string(i) + ": " + diff);
  }
  return 0;
}
