// tests/test_pipeline.cpp -- the compile pipeline: its order, its report, RLX_DEBUG, and one
// graph that every pass has a part in.
#include "support/check_error.hpp"

#include <rlx/rlx.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

using namespace rlx;

namespace {

/// Sets an environment variable for the lifetime of the object, then restores it.
class ScopedEnv {
public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (old_)
      setenv(name_, old_->c_str(), 1);
    else
      unsetenv(name_);
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

private:
  const char* name_;
  std::optional<std::string> old_;
};

/// A graph with a composite op, for decompose.
ir::Graph sample() {
  return ir::parse_text(R"(graph @sample {
  %0 = input("x") : [2, 3] f32
  %1 = softmax(%0, axis=1) : [2, 3] f32
  return %1
})");
}

passes::PipelineOptions with_decompose() {
  passes::PipelineOptions opts;
  opts.decompose = true;
  return opts;
}

std::vector<std::string_view> names(const std::vector<passes::PassRun>& runs) {
  std::vector<std::string_view> v;
  for (const passes::PassRun& r : runs) v.push_back(r.name);
  return v;
}

} // namespace

TEST_CASE("pipeline: decomposes composite ops when asked, and reports what each pass did") {
  ir::Graph g = sample();
  passes::PipelineOptions opts = with_decompose();
  opts.verify_each = true;
  std::vector<passes::PassRun> runs = passes::compile_pipeline(g, opts);
  REQUIRE(runs.size() == 1);
  CHECK(runs[0].name == "decompose");
  CHECK(runs[0].changed);
  CHECK(runs[0].seconds >= 0);
  CHECK(runs[0].nodes == g.len());
  for (const ir::Node& n : g.nodes()) CHECK_FALSE(passes::has_decomposition(n.op.kind()));
}

TEST_CASE("pipeline: runs the catalogue's passes in its order, decompose only when asked") {
  std::vector<std::string_view> all;
  for (const passes::PassInfo& p : passes::kPasses) all.push_back(p.name);
  std::vector<std::string_view> without = all;
  std::erase(without, "decompose");
  ir::Graph g = sample();
  CHECK(names(passes::compile_pipeline(g)) == without);
  passes::PipelineOptions opts;
  opts.decompose = true;
  g = sample();
  CHECK(names(passes::compile_pipeline(g, opts)) == all);
}

TEST_CASE("pipeline: a graph with nothing to do comes out unchanged, every pass saying so") {
  ir::Graph g = ir::parse_text(R"(graph @g {
  %0 = input("x") : [4] f32
  %1 = exp(%0) : [4] f32
  return %1
})");
  ir::Graph before = g;
  passes::PipelineOptions opts;
  opts.decompose = true;
  std::vector<passes::PassRun> runs = passes::compile_pipeline(g, opts);
  CHECK(runs.size() == std::size(passes::kPasses));
  for (const passes::PassRun& r : runs) {
    INFO(r.name);
    CHECK_FALSE(r.changed);
  }
  CHECK(g == before);
}

TEST_CASE("pipeline: RLX_DEBUG=passes prints the graph after each pass that changed it") {
  ScopedEnv env("RLX_DEBUG", "passes");
  std::ostringstream log;
  passes::PipelineOptions opts = with_decompose();
  opts.log = &log;
  ir::Graph g = sample();
  passes::compile_pipeline(g, opts);
  std::string out = log.str();
  INFO(out);
  CHECK(out == "// after decompose\n" + ir::to_text(g));
}

TEST_CASE("pipeline: RLX_DEBUG=pass-times prints one line per pass, and so does time_passes") {
  for (bool from_env : {true, false}) {
    std::optional<ScopedEnv> env;
    if (from_env) env.emplace("RLX_DEBUG", "pass-times");
    std::ostringstream log;
    passes::PipelineOptions opts = with_decompose();
    opts.log = &log;
    opts.time_passes = !from_env;
    ir::Graph g = sample();
    passes::compile_pipeline(g, opts);
    std::string out = log.str();
    INFO(out);
    CHECK(std::count(out.begin(), out.end(), '\n') == 1);
    CHECK(out.find("rlx pass decompose") == 0);
    CHECK(out.find(" ms ") != std::string::npos);
    CHECK(out.find("graph @") == std::string::npos);
  }
}

TEST_CASE("pipeline: an unknown RLX_DEBUG item is an error naming the known ones") {
  ScopedEnv env("RLX_DEBUG", "passes,pases");
  ir::Graph g = sample();
  test::check_error([&] { passes::compile_pipeline(g); }, ErrorKind::Value,
                    "unknown item 'pases'; expected a comma-separated subset of passes,pass-times");
}

TEST_CASE("pipeline: with verify_each, an invalid input graph is the caller's rlx::Error") {
  ir::Graph g("bad");
  ir::NodeId x = g.input("x", ir::Shape({4}, ir::DType::F32));
  g.set_outputs(
      {g.append_node(ir::Op(ir::OpKind::Exp), {x}, ir::Shape({5}, ir::DType::F32), std::nullopt)});
  passes::PipelineOptions opts;
  opts.verify_each = true;
  test::check_error([&] { passes::compile_pipeline(g, opts); }, ErrorKind::Verify, "exp");
}

TEST_CASE("pipeline: find_pass finds every pass of the catalogue by name, and only those") {
  for (const passes::PassInfo& p : passes::kPasses) {
    INFO(p.name);
    REQUIRE(passes::find_pass(p.name) != nullptr);
    bool same_function = passes::find_pass(p.name)->run == p.run;
    CHECK(same_function);
    CHECK(!p.summary.empty());
  }
  CHECK(passes::find_pass("fuse_everything") == nullptr);
}
