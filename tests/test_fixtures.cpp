// tests/test_fixtures.cpp -- runs every op fixture in tests/fixtures/ops and ops_* (numpy/torch
// references).
#include "support/compare.hpp"
#include "support/fixture_dirs.hpp"

#include <rlx/all.hpp>
#include <rlx/io/npy.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

using namespace rlx;
using rlx::Buffer;
using rlx::test::mismatch_report;
using rlx::test::read_text;
using rlx::test::Tolerance;
namespace fs = std::filesystem;

namespace {

std::vector<fs::path> case_dirs() { return rlx::test::op_fixture_case_dirs(); }

Tolerance read_tolerance(const fs::path& p) {
  std::istringstream in(read_text(p));
  Tolerance t;
  if (!(in >> t.rtol >> t.atol) || t.rtol < 0 || t.atol < 0)
    fail(ErrorKind::Parse, p.string(), ": expected \"rtol atol\"");
  return t;
}

/// Runs one case; returns "" on success or why it failed.
std::string run_case(const fs::path& dir) {
  ir::Graph g = ir::parse_text(read_text(dir / "graph.rlx"), (dir / "graph.rlx").string());
  ir::verify(g);
  interp::Feed inputs, params;
  for (const ir::Node& n : g.nodes()) {
    ir::OpKind k = n.op.kind();
    if (k != ir::OpKind::Input && k != ir::OpKind::Param) continue;
    const std::string& leaf = n.op.attrs<ir::LeafAttrs>().name;
    (k == ir::OpKind::Input ? inputs : params)[leaf] =
        io::load_npy((dir / (leaf + ".npy")).string());
  }
  Tolerance tol = read_tolerance(dir / "tol.txt");
  std::vector<Buffer> outs = interp::run(g, inputs, params);
  std::ostringstream problems;
  for (std::size_t i = 0; i < outs.size(); ++i) {
    fs::path want_path = dir / ("expected_" + std::to_string(i) + ".npy");
    std::string diff = mismatch_report(io::load_npy(want_path.string()), outs[i], tol);
    if (!diff.empty()) problems << "output " << i << ": " << diff << "; ";
  }
  if (fs::exists(dir / ("expected_" + std::to_string(outs.size()) + ".npy")))
    problems << "more expected_<i>.npy files than graph outputs (" << outs.size() << "); ";
  return problems.str();
}

} // namespace

TEST_CASE(
    "fixtures: every op case in tests/fixtures/ops and ops_* matches its numpy/torch reference") {
  std::vector<fs::path> dirs = case_dirs();
  REQUIRE(dirs.size() >= 50);
  std::vector<std::string> failed;
  for (const fs::path& dir : dirs) {
    std::string name = dir.filename().string();
    INFO("case " << name);
    std::string problem;
    try {
      problem = run_case(dir);
    } catch (const Error& e) {
      problem = "rlx::Error (" + std::string(error_kind_name(e.kind())) + "): " + e.what();
    } catch (const std::exception& e) {
      problem = std::string("unexpected exception: ") + e.what();
    }
    if (!problem.empty()) {
      failed.push_back(name + ": " + problem);
      FAIL_CHECK(problem);
    }
  }
  std::ostringstream summary;
  for (const auto& f : failed) summary << "\n  " << f;
  INFO(failed.size() << " of " << dirs.size() << " cases failed:" << summary.str());
  CHECK(failed.empty());
}

TEST_CASE("fixtures: every op kind of the table except input and param has a fixture") {
  std::set<ir::OpKind> seen;
  for (const fs::path& dir : case_dirs()) {
    INFO("case " << dir.filename().string());
    ir::Graph g = ir::parse_text(read_text(dir / "graph.rlx"));
    for (const ir::Node& n : g.nodes()) seen.insert(n.op.kind());
  }
  std::string missing;
  for (std::size_t k = 0; k < ir::kNumOps; ++k) {
    auto kind = static_cast<ir::OpKind>(k);
    if (kind == ir::OpKind::Input || kind == ir::OpKind::Param) continue;
    // A custom op's kernel is registered by the program that runs it: test_custom_op.cpp checks
    // registered ops against the same computation in built-in ops.
    if (ir::op_family(kind) == ir::Family::Custom) continue;
    if (!seen.count(kind))
      missing += (missing.empty() ? "" : ", ") + std::string(ir::op_name(kind));
  }
  INFO("op kinds without a fixture: " << missing);
  CHECK(missing.empty());
}
