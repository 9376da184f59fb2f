// bench/bench_record.cpp -- the cost of recording one Tensor op (dispatch: checks, shape rule,
// the lazy node and dropping it), nothing materialized. Each row records one op on small f32
// tensors: outside any trace (operands computed, so the graph stays one node deep) and inside an
// rlx::jit trace (operands are placeholders; the rows run while the function is traced). A chain
// row records 1000 dependent adds and drops them. Times are per Tensor op. `--only ROW
// --iterations K [--inside]` runs one row K times outside (or inside) a trace without timing,
// for instruction counts:
//   valgrind --tool=callgrind --toggle-collect='*run_row*' bench_record --only add --iterations K
#include "bench_util.hpp"

#include <rlx/all.hpp>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

namespace {

using rlx::Tensor;

constexpr char kTable[] = "recording";
constexpr int64_t kChain = 1000;

struct Row {
  const char* name;
  const char* text;
  int64_t ops; ///< ops one call records
  Tensor (*fn)(const Tensor& a, const Tensor& b);
};

const Row kRows[] = {
    {"add", "a + b", 1, [](const Tensor& a, const Tensor& b) { return a + b; }},
    {"mul_scalar", "a * 2.0f", 1, [](const Tensor& a, const Tensor&) { return a * 2.0f; }},
    {"exp", "rlx::exp(a)", 1, [](const Tensor& a, const Tensor&) { return rlx::exp(a); }},
    {"add_cast", "a + b.cast(i32) (2 ops; the add casts back to f32)", 2,
     [](const Tensor& a, const Tensor& b) { return a + b.cast(rlx::DType::I32); }},
    {"reshape", "a.reshape({4, 4})", 1,
     [](const Tensor& a, const Tensor&) { return a.reshape({4, 4}); }},
    {"transpose", "a.reshape({4, 4}).transpose() (2 ops)", 2,
     [](const Tensor& a, const Tensor&) { return a.reshape({4, 4}).transpose(); }},
    {"slice", "a.slice(0, 1, 9, 2)", 1,
     [](const Tensor& a, const Tensor&) { return a.slice(0, 1, 9, 2); }},
    {"chain", "1000 dependent adds, dropped (per op)", kChain,
     [](const Tensor& a, const Tensor& b) {
       Tensor y = a;
       for (int64_t i = 0; i < kChain; ++i) y = y + b;
       return y;
     }},
};

/// Record the row's op `k` times (kept out of line: callgrind counts inside it).
[[gnu::noinline]] void run_row(const Row& row, const Tensor& a, const Tensor& b, int64_t k) {
  for (int64_t i = 0; i < k; ++i) {
    Tensor y = row.fn(a, b);
    bench::clobber(&y);
  }
}

/// Time every row (or only `only`) on operands a, b; `where` names outside/inside a trace.
void time_rows(const Tensor& a, const Tensor& b, std::string_view where, const bench::Budget& bud) {
  for (const Row& row : kRows) {
    bench::Stats s = bench::measure([&] { run_row(row, a, b, 1); }, bud);
    s.min /= double(row.ops);
    s.median /= double(row.ops);
    s.p95 /= double(row.ops);
    s.max /= double(row.ops);
    bench::emit_time({kTable, std::string(row.text) + ", " + std::string(where), 1, 16}, s);
  }
}

} // namespace

int main(int argc, char** argv) {
  // Own options first: --only ROW --iterations K (no timing); the rest goes to parse_args.
  std::string only;
  int64_t iterations = 0;
  bool inside = false;
  std::vector<char*> rest{argv[0]};
  for (int i = 1; i < argc; ++i) {
    std::string_view k = argv[i];
    if (k == "--only" && i + 1 < argc)
      only = argv[++i];
    else if (k == "--iterations" && i + 1 < argc)
      iterations = std::atoll(argv[++i]);
    else if (k == "--inside")
      inside = true;
    else
      rest.push_back(argv[i]);
  }
  bench::Args args = bench::parse_args(int(rest.size()), rest.data(), {16});
  const bench::Budget budget = bench::budget_of(args);

  std::vector<float> values(16, 0.5f);
  Tensor a = Tensor::from_vector(values, {16}), b = Tensor::from_vector(values, {16});

  if (!only.empty()) {
    const Row* row = nullptr;
    for (const Row& r : kRows)
      if (only == r.name) row = &r;
    if (row == nullptr || iterations <= 0) {
      std::fprintf(stderr, "--only needs a row name (add, mul_scalar, exp, add_cast, reshape, "
                           "transpose, slice, chain) and --iterations K > 0\n");
      return 2;
    }
    if (!inside) {
      run_row(*row, a, b, iterations);
      return 0;
    }
    auto traced = rlx::jit([&](Tensor p, Tensor q) {
      run_row(*row, p, q, iterations);
      return p;
    });
    traced(a, b);
    return 0;
  }

  bench::emit_note(kTable, "ns per recorded op on f32[16] operands, nothing materialized; "
                           "inside a trace the rows run while rlx::jit traces the function");
  time_rows(a, b, "outside a trace", budget);
  auto traced = rlx::jit([&](Tensor p, Tensor q) {
    time_rows(p, q, "inside a trace", budget);
    return p;
  });
  traced(a, b);
  return 0;
}
