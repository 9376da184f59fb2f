// tests/test_pipeline.cpp -- the compile pipeline: its order, its report, RLX_DEBUG, and one
// graph that every pass has a part in.
#include "support/check_error.hpp"

#include <rlx/all.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
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

/// A graph where every pass the pipeline runs by default has work: a (one-rank) shard annotation
/// to drop, a custom_fn to inline, a param to bake, weight-only math to fold, an identity, a
/// duplicate, a residual add before a layer norm, and dead code.
ir::Graph sample() {
  return ir::parse_text(R"(graph @sample {
  %0 = input("x") : [2, 3] f32
  %1 = param("scale") : [3] f32
  %2 = constant(data=x"0000803f") : [] f32
  %3 = add(%1, %2) : [3] f32                    // scale + 1: folds once scale is baked
  %4 = mul(%0, %3) : [2, 3] f32
  %5 = constant(data=x"00000000") : [] f32
  %6 = add(%4, %5) : [2, 3] f32                 // + 0
  %7 = exp(%6) : [2, 3] f32
  %8 = custom_fn(%4, fwd_body=graph @e {         // inlined: exp(%4), the same as %7 once + 0
      %0 = input("v") : [2, 3] f32              // is gone
      %1 = exp(%0) : [2, 3] f32
      return %1
    }, num_inputs=1) : [2, 3] f32
  %9 = sub(%7, %8) : [2, 3] f32
  %10 = tanh(%0) : [2, 3] f32                   // dead
  %11 = add(%9, %0) : [2, 3] f32                // a residual add: fuses into the norm
  %12 = constant(data=x"0000803f0000803f0000803f") : [3] f32
  %13 = layer_norm(%11, %12, %12) : [2, 3] f32
  %14 = custom(%13, data=x"000000000000000001000000000000000000000000000000", name="rlx.dist.shard") : [2, 3] f32
  return %14
})");
}

passes::PassOptions scale_values() {
  passes::PassOptions o;
  o.params["scale"] = Buffer::f32({3}, std::vector<float>{1, 2, 3});
  return o;
}

std::vector<std::string_view> names(const std::vector<passes::PassRun>& runs) {
  std::vector<std::string_view> v;
  for (const passes::PassRun& r : runs) v.push_back(r.name);
  return v;
}

} // namespace

TEST_CASE("pipeline: bakes, folds, simplifies, merges, fuses and removes dead code in one run") {
  ir::Graph g = sample();
  passes::PipelineOptions opts;
  opts.passes = scale_values();
  opts.verify_each = true;
  std::vector<passes::PassRun> runs = passes::compile_pipeline(g, opts);
  std::string want = R"(graph @sample {
  %0 = input("x") : [2, 3] f32
  %1 = constant(data=x"000000400000404000008040") : [3] f32
  %2 = mul(%0, %1) : [2, 3] f32
  %3 = exp(%2) : [2, 3] f32
  %4 = sub(%3, %3) : [2, 3] f32
  %5 = constant(data=x"0000803f0000803f0000803f") : [3] f32
  %6 = fused_residual_ln(%4, %0, %5, %5) : [2, 3] f32
  return %6
}
)";
  CHECK(ir::to_text(g) == want);
  REQUIRE(runs.size() == 8);
  for (const passes::PassRun& r : runs) {
    INFO(r.name);
    CHECK(r.changed);
    CHECK(r.seconds >= 0);
  }
  CHECK(runs.back().nodes == g.len());
  // the same values as the graph before, with scale fed (bit for bit here: the residual's sum
  // 0 + x is exact in f32 too)
  interp::Feed in{{"x", Buffer::f32({2, 3}, std::vector<float>{1, -2, 0.5f, 3, 0, -1})}};
  auto before = interp::run(sample(), in, scale_values().params);
  auto after = interp::run(g, in);
  CHECK(before == after);
}

TEST_CASE("pipeline: runs the catalogue's passes in its order, decompose and the fusions that "
          "do not pay on both backends only when asked") {
  std::vector<std::string_view> all;
  for (const passes::PassInfo& p : passes::kPasses) all.push_back(p.name);
  std::vector<std::string_view> by_default = all;
  for (std::string_view off :
       {"decompose", "conv_as_matmul", "fuse_shared_matmul", "fuse_swiglu", "fuse_matmul_bias_act"})
    std::erase(by_default, off);
  ir::Graph g = sample();
  CHECK(names(passes::compile_pipeline(g)) == by_default);
  passes::PipelineOptions opts;
  opts.decompose = true;
  opts.conv_as_matmul = true;
  opts.fuse = passes::FuseOptions::all();
  g = sample();
  CHECK(names(passes::compile_pipeline(g, opts)) == all);
  opts.fuse = passes::FuseOptions::none();
  g = sample();
  std::vector<passes::PassRun> runs = passes::compile_pipeline(g, opts);
  for (const passes::PassRun& r : runs) CHECK(r.name.substr(0, 5) != "fuse_");
  CHECK(runs.size() == all.size() - 4);
}

TEST_CASE("pipeline: a SwiGLU FFN with baked weights becomes one product by the weights side by "
          "side and one fused_swiglu, and computes the same") {
  ir::Graph g("ffn");
  auto x = g.input("x", ir::Shape({3, 4}, ir::DType::F32));
  auto up = g.param("up", ir::Shape({4, 6}, ir::DType::F32));
  auto gate = g.param("gate", ir::Shape({4, 6}, ir::DType::F32));
  auto down = g.param("down", ir::Shape({6, 4}, ir::DType::F32));
  g.set_outputs({g.swiglu_ffn(x, up, gate, down)});
  interp::Feed weights;
  for (const char* name : {"up", "gate", "down"}) {
    ir::Shape s = g.shape(*g.param_id(name));
    Buffer w(s);
    for (int64_t i = 0; i < w.numel(); ++i) w.set_f64(i, std::sin(0.7 * double(i) + name[0]));
    weights[name] = w;
  }
  ir::Graph fused = g;
  passes::PipelineOptions opts;
  opts.passes.params = weights;
  opts.fuse = passes::FuseOptions::all();
  opts.verify_each = true;
  passes::compile_pipeline(fused, opts);
  INFO(ir::to_text(fused));
  auto count = [&](ir::OpKind k) {
    return std::count_if(fused.nodes().begin(), fused.nodes().end(),
                         [k](const ir::Node& n) { return n.op.kind() == k; });
  };
  CHECK(count(ir::OpKind::FusedSwiGLU) == 1);
  CHECK(count(ir::OpKind::MatMul) == 2); // x @ [up | gate], then the down projection
  CHECK(count(ir::OpKind::Narrow) == 0);
  CHECK(count(ir::OpKind::Concat) == 0); // concatenated once, by the pass: no concat per call
  const ir::Node& wide = fused.node(fused.node(fused.node(fused.outputs[0]).inputs[0]).inputs[0]);
  CHECK(wide.op.kind() == ir::OpKind::MatMul);
  CHECK(fused.shape(wide.inputs[1]) == ir::Shape({4, 12}, ir::DType::F32));
  interp::Feed in{{"x", Buffer::f32({3, 4}, std::vector<float>{1, -2, 0.5f, 3, 0, -1, 2, 0.25f,
                                                               -0.5f, 1, 1.5f, -3})}};
  auto want = interp::run(g, in, weights), got = interp::run(fused, in);
  REQUIRE(got.size() == 1);
  for (int64_t i = 0; i < want[0].numel(); ++i)
    CHECK(got[0].get_f64(i) == doctest::Approx(want[0].get_f64(i)).epsilon(1e-5));
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
  opts.conv_as_matmul = true;
  opts.fuse = passes::FuseOptions::all();
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
  passes::PipelineOptions opts;
  opts.log = &log;
  ir::Graph g = sample();
  passes::compile_pipeline(g, opts);
  std::string out = log.str();
  INFO(out);
  CHECK(out.find("// after algebraic_simplify\ngraph @sample {") != std::string::npos);
  CHECK(out.find("// after constant_fold") == std::string::npos); // nothing to fold
  CHECK(out.find("// after dce\n" + ir::to_text(g)) != std::string::npos);
  CHECK(out.find("// after param_specialize") == std::string::npos); // no values given
  CHECK(out.find(" ms ") == std::string::npos);
}

TEST_CASE("pipeline: RLX_DEBUG=pass-times prints one line per pass, and so does time_passes") {
  for (bool from_env : {true, false}) {
    std::optional<ScopedEnv> env;
    if (from_env) env.emplace("RLX_DEBUG", "pass-times");
    std::ostringstream log;
    passes::PipelineOptions opts;
    opts.log = &log;
    opts.time_passes = !from_env;
    ir::Graph g = sample();
    passes::compile_pipeline(g, opts);
    std::string out = log.str();
    INFO(out);
    CHECK(std::count(out.begin(), out.end(), '\n') == 8); // the passes run by default
    CHECK(out.find("rlx pass cse") != std::string::npos);
    CHECK(out.find("rlx pass param_specialize") != std::string::npos);
    CHECK(out.find("(unchanged)") != std::string::npos);
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
