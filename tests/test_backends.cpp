// tests/test_backends.cpp -- the same graphs on the interpreter and the other backend agree: the
// op fixtures, the op table (its cases: tests/backend_cases_*.cpp), leaves fed wrongly, threads,
// and the comparison itself.
#include "support/backend_cases.hpp"
#include "support/compare.hpp"
#include "support/fixture_dirs.hpp"
#include "support/random_graph.hpp"

#include <rlx/all.hpp>
#include <rlx/io/npy.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

using namespace rlx;
using namespace rlx::test;
using namespace rlx::test::backend_cases;
namespace fs = std::filesystem;

namespace {

/// The subgraph of the first differing output, its small inputs, and (for several ops) the
/// smallest failing piece minimize_failure finds.
std::string minimal_report(const Case& c, std::size_t output, Backend other) {
  auto [h, leaves] = subgraph(c.graph, c.leaves, {c.graph.outputs[output]});
  std::ostringstream os;
  os << "minimal graph for " << output_str(c.graph, output) << ":\n" << ir::to_text(h);
  std::vector<NodeId> ids = leaf_ids(h);
  for (std::size_t i = 0; i < leaves.size(); ++i)
    os << "  " << h.node(ids[i]).op.attrs<ir::LeafAttrs>().name << " = " << values_str(leaves[i])
       << "\n";
  int computing = 0;
  for (const ir::Node& n : h.nodes()) computing += !n.inputs.empty();
  if (computing > 1)
    os << minimize_failure(h, leaves, backend_runner(other), std::string(enum_name(other)));
  return os.str();
}

/// Runs every case on the interpreter and on other_backend(); each failure names the case, prints
/// its graph and the first mismatching elements, and a minimal graph.
void run_cases(const std::vector<Case>& cases) {
  Backend other = other_backend();
  std::vector<std::string> failed;
  for (const Case& c : cases) {
    std::string text = c.build_error.empty() ? ir::to_text(c.graph) : "";
    INFO("case \"" << c.name << "\"\n" << text);
    if (!c.build_error.empty()) {
      failed.push_back(c.name);
      FAIL_CHECK(c.build_error);
      continue;
    }
    RunResult a = run_on(Backend::Interp, c.graph, c.leaves);
    RunResult b = run_on(other, c.graph, c.leaves, true);
    Comparison cmp = compare_runs(c.graph, a, b, std::string(enum_name(other)));
    std::string problems = cmp.problems;
    if (a.error && !c.expect_error)
      problems = "the interpreter rejected a case meant to run: " + *a.error;
    else if (!a.error && c.expect_error)
      problems = "the interpreter accepted a case meant to fail at run time";
    if (problems.empty()) continue;
    failed.push_back(c.name);
    if (!cmp.bad.empty() && failed.size() <= 20)
      problems += minimal_report(c, cmp.bad.front(), other);
    FAIL_CHECK(problems);
  }
  std::string summary;
  for (const std::string& f : failed) summary += "\n  " + f;
  INFO(failed.size() << " of " << cases.size() << " cases differ on " << enum_name(other) << ":"
                     << summary);
  CHECK(failed.empty());
}

// ---- Fixtures: tests/fixtures/ops[_<family>]/<case>/{graph.rlx, <leaf>.npy, expected_<i>.npy,
// tol.txt}

std::vector<Case> fixture_cases() {
  std::vector<fs::path> dirs = rlx::test::op_fixture_case_dirs();
  std::vector<Case> cases;
  for (const fs::path& dir : dirs) {
    Case c;
    c.name = "fixture " + dir.filename().string();
    try {
      c.graph = ir::parse_text(read_text(dir / "graph.rlx"), (dir / "graph.rlx").string());
      for (NodeId id : leaf_ids(c.graph)) {
        const std::string& leaf = c.graph.node(id).op.attrs<ir::LeafAttrs>().name;
        c.leaves.push_back(io::load_npy((dir / (leaf + ".npy")).string()));
      }
    } catch (const Error& e) {
      c.build_error = std::string("reading the fixture failed: ") + e.what();
    }
    cases.push_back(std::move(c));
  }
  return cases;
}

/// Every case of the op table (everything but the fixtures).
std::vector<Case> all_table_cases() {
  std::vector<Case> all;
  for (auto f : {unary_cases,       unary_edge_cases,  int_unary_cases,     binary_cases,
                 binary_edge_cases, mixed_dtype_cases, where_cases,         cast_cases,
                 reduce_cases,      arg_reduce_cases,  scan_cases,          movement_cases,
                 matmul_cases,      nn_cases,          half_cases,          narrow_int_cases,
                 output_cases,      zero_size_cases,   runtime_error_cases, spectral_cases,
                 ssm_cases,         control_cases,     recurrent_cases,     linalg_cases,
                 quant_cases,       packed_cases,      collective_cases,    random_cases,
                 splat_cases})
    for (Case& c : f()) all.push_back(std::move(c));
  return all;
}

} // namespace

TEST_CASE(
    "backends: every op fixture in tests/fixtures/ops gives the same outputs on both backends") {
  std::vector<Case> cases = fixture_cases();
  REQUIRE(cases.size() >= 50);
  run_cases(cases);
}

TEST_CASE("backends: custom_fn and scans agree, nested and on every shape") {
  run_cases(control_cases());
}

TEST_CASE("backends: selective_scan (the JIT's kernel), mamba2 and gated_delta_net agree") {
  run_cases(ssm_cases());
}

TEST_CASE(
    "backends: lstm, gru and rnn agree: layers, directions, layouts, initial and final states") {
  run_cases(recurrent_cases());
}

TEST_CASE("backends: fft (FFTW on the JIT), lfilter and the complex helpers agree") {
  run_cases(spectral_cases());
}

TEST_CASE("backends: element-wise unary ops agree on scalars, size-1 dims, odd and large shapes") {
  run_cases(unary_cases());
}

TEST_CASE("backends: unary ops agree on NaN, infinities, signed zeros and other edge values") {
  run_cases(unary_edge_cases());
}

TEST_CASE("backends: integer unary ops agree, the most negative integers included") {
  run_cases(int_unary_cases());
}

TEST_CASE("backends: binary ops agree with broadcasting in f32, f64, i32, i64 and bool") {
  run_cases(binary_cases());
}

TEST_CASE(
    "backends: binary ops agree on every pair of edge values (NaN, zero divisors, extremes)") {
  run_cases(binary_edge_cases());
}

TEST_CASE("backends: binary ops on operands of different dtypes promote alike") {
  run_cases(mixed_dtype_cases());
}

TEST_CASE("backends: where agrees with broadcast, mixed and non-bool operands") {
  run_cases(where_cases());
}

TEST_CASE("backends: casts between every pair of dtypes agree, NaN and out-of-range values too") {
  run_cases(cast_cases());
}

TEST_CASE("backends: reductions agree over every choice of axes, with and without keep_dim") {
  run_cases(reduce_cases());
}

TEST_CASE("backends: argmax and argmin agree, ties and NaN included") {
  run_cases(arg_reduce_cases());
}

TEST_CASE("backends: cumsum and softmax agree along every axis") { run_cases(scan_cases()); }

TEST_CASE("backends: data movement and gather agree for every dtype") {
  run_cases(movement_cases());
}

TEST_CASE("backends: matmul agrees on vectors, batches, broadcast batches and odd sizes") {
  run_cases(matmul_cases());
}

TEST_CASE("backends: norms, attention, rope, convolutions and pooling agree") {
  run_cases(nn_cases());
}

TEST_CASE("backends: f16 and bf16 results agree within one ulp of the type") {
  run_cases(half_cases());
}

TEST_CASE("backends: narrow integer dtypes saturate alike") { run_cases(narrow_int_cases()); }

TEST_CASE("backends: outputs that are leaves, constants or repeated nodes agree") {
  run_cases(output_cases());
}

TEST_CASE("backends: zero-size tensors agree") { run_cases(zero_size_cases()); }

TEST_CASE("backends: row ops computing an element-wise operand on the fly agree") {
  run_cases(prologue_cases());
}

TEST_CASE("backends: what the interpreter rejects at run time the other backend rejects too") {
  run_cases(runtime_error_cases());
}

TEST_CASE(
    "backends: missing, extra, null or mis-shaped leaves are an rlx::Error on both backends") {
  Backend other = other_backend();
  ir::Graph g("leaves");
  NodeId x = g.input("x", ir::Shape::of(Dims{2, 3}, F32));
  NodeId p = g.param("p", ir::Shape::of(Dims{3}, I32));
  g.set_outputs({g.add(g.exp(x), p)});
  Buffer bx(ir::Shape::of(Dims{2, 3}, F32)), bp(ir::Shape::of(Dims{3}, I32));
  Buffer wrong_shape(ir::Shape::of(Dims{3, 2}, F32)), wrong_dtype(ir::Shape::of(Dims{2, 3}, F64));
  Buffer small(ir::Shape::of(Dims{2}, I32));
  struct Feed {
    std::string what;
    std::vector<const Buffer*> leaves;
  };
  std::vector<Feed> feeds = {{"one leaf missing", {&bx}},
                             {"no leaves", {}},
                             {"an extra leaf", {&bx, &bp, &bp}},
                             {"a null leaf", {&bx, nullptr}},
                             {"x of the wrong shape", {&wrong_shape, &bp}},
                             {"x of the wrong dtype", {&wrong_dtype, &bp}},
                             {"p too small", {&bx, &small}}};
  for (Backend backend : {Backend::Interp, other}) {
    std::shared_ptr<const Executable> exe = compile(g, backend);
    CHECK(exe->run(std::vector<const Buffer*>{&bx, &bp}).size() == 1);
    for (const Feed& f : feeds) {
      INFO(enum_name(backend) << " with " << f.what);
      std::string outcome = "no error";
      try {
        exe->run(f.leaves);
      } catch (const Error& e) {
        outcome = "";
        CHECK_MESSAGE(e.kind() == ErrorKind::Runtime, e.what());
      } catch (const std::exception& e) {
        outcome = std::string("not an rlx::Error: ") + e.what();
      }
      CHECK_MESSAGE(outcome.empty(), outcome);
    }
  }
}

TEST_CASE(
    "backends: one executable run from four threads at once gives the interpreter's results") {
  Backend other = other_backend();
  std::vector<RandomGraph> graphs;
  std::vector<std::shared_ptr<const Executable>> exes;
  std::vector<std::vector<Buffer>> want;
  for (uint64_t seed = 1; seed <= 12; ++seed) {
    graphs.push_back(random_graph(seed));
    exes.push_back(compile(graphs.back().graph, other));
    want.push_back(run_on(Backend::Interp, graphs.back().graph, graphs.back().leaves).outputs);
  }
  constexpr int kThreads = 4;
  std::vector<std::string> problems(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      try {
        for (int round = 0; round < 5; ++round)
          for (std::size_t i = 0; i < graphs.size(); ++i) {
            std::size_t j = (i + std::size_t(t) * 5) % graphs.size(); // threads overlap
            std::vector<const Buffer*> ptrs;
            for (const Buffer& b : graphs[j].leaves) ptrs.push_back(&b);
            std::vector<Buffer> got = exes[j]->run(ptrs);
            for (std::size_t k = 0; k < got.size() && problems[std::size_t(t)].empty(); ++k) {
              std::string d =
                  mismatch_report(want[j][k], got[k],
                                  output_tolerance(graphs[j].graph, graphs[j].graph.outputs[k]));
              if (!d.empty())
                problems[std::size_t(t)] = "seed " + std::to_string(graphs[j].seed) + ", " +
                                           output_str(graphs[j].graph, k) + ": " + d;
            }
          }
      } catch (const std::exception& e) {
        problems[std::size_t(t)] = std::string("threw: ") + e.what();
      }
    });
  for (std::thread& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) {
    INFO("thread " << t);
    CHECK_MESSAGE(problems[std::size_t(t)].empty(), problems[std::size_t(t)]);
  }
}

TEST_CASE("backends: the op table builds every case and covers every op kind of ops.def") {
  std::vector<Case> cases = all_table_cases();
  std::set<OpKind> seen;
  for (const Case& c : cases) {
    INFO("case " << c.name);
    CHECK(c.build_error.empty());
    for (const ir::Node& n : c.graph.nodes()) seen.insert(n.op.kind());
  }
  std::string missing;
  for (std::size_t k = 0; k < ir::kNumOps; ++k)
    if (!seen.count(OpKind(k))) missing += " " + std::string(ir::op_name(OpKind(k)));
  INFO("op kinds no case uses:" << missing);
  CHECK(missing.empty());
  MESSAGE(cases.size() << " op-table graphs");
}

TEST_CASE("backends: close() equates NaNs and same-sign infinities and compares integers exactly") {
  Tolerance t = backend_tolerance(DType::F32);
  CHECK(t == Tolerance{2e-5, 1e-6});
  CHECK(backend_tolerance(DType::I32) == Tolerance{0, 0});
  CHECK(close(std::nan(""), -std::nan(""), t));
  CHECK_FALSE(close(std::nan(""), 1.0, t));
  CHECK_FALSE(close(1.0, std::nan(""), t));
  CHECK(close(kInf, kInf, t));
  CHECK_FALSE(close(-kInf, kInf, t));
  CHECK_FALSE(close(3e38, kInf, t));
  CHECK(close(1.0 + 1e-5, 1.0, t));
  CHECK_FALSE(close(1.0 + 1e-4, 1.0, t));
  CHECK(close(5e-7, 0.0, t));
  Buffer want =
      Buffer::from_f64(ir::Shape::of(Dims{2, 2}, DType::I64), std::vector<double>{1, 2, 3, 4});
  Buffer got = want;
  got.set_i64(3, 5);
  std::string r = mismatch_report(want, got, t);
  CHECK(r.find("1 of 4 elements differ") != std::string::npos);
  CHECK(r.find("at [1, 1]: want 4, got 5") != std::string::npos);
  Buffer bools(ir::Shape::of(Dims{2}, DType::Bool)), odd = bools;
  odd.bytes()[1] = std::byte{2}; // a non-canonical true
  CHECK_FALSE(mismatch_report(bools, odd, t).empty());
  CHECK(check_buffers_close(want, want, t, "a buffer matches itself"));
  ir::Graph g("tol");
  NodeId x = g.input("x", ir::Shape::of(Dims{3}, DType::F32));
  NodeId y = g.cast(g.exp(g.exp(x)), DType::F64);
  NodeId z = g.reshape_(y, {3, 1});
  CHECK(output_tolerance(g, y) == backend_tolerance(DType::F32) * 3);
  CHECK(output_tolerance(g, z) == backend_tolerance(DType::F32) * 3);
}
