// tests/test_lir.cpp -- buffer plans: the verifier accepts every plan the planner makes for
// random graphs and catches broken ones, and running a graph through its plan's arena
// (interp::run_planned) computes exactly what the interpreter computes.
#include "support/random_graph.hpp"

#include <rlx/rlx.hpp>

#include <doctest/doctest.h>

#include <chrono>
#include <string>
#include <vector>

using namespace rlx;
using namespace rlx::test;
using interp::Buffer;
using ir::NodeId;
using ir::Shape;

namespace {

constexpr uint64_t kGraphs = 1500; ///< random graphs per test
constexpr double kMaxSeconds = 20; ///< per test; the count reached is reported

Shape f32(std::vector<int64_t> dims) {
  std::vector<ir::Dim> d;
  for (int64_t x : dims) d.push_back(ir::Dim(x));
  return Shape(d, ir::DType::F32);
}

std::vector<const Buffer*> ptrs(const std::vector<Buffer>& v) {
  std::vector<const Buffer*> p;
  for (const Buffer& b : v) p.push_back(&b);
  return p;
}

std::string joined(const std::vector<std::string>& lines) {
  std::string s;
  for (const std::string& l : lines) s += l + "\n";
  return s;
}

bool has_line_with(const std::vector<std::string>& lines, const std::string& needle) {
  for (const std::string& l : lines)
    if (l.find(needle) != std::string::npos) return true;
  return false;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

/// x -> exp -> tanh -> neg -> sin -> sum: a chain where each value dies when the next is made.
ir::Graph chain() {
  ir::Graph g("chain");
  NodeId x = g.input("x", f32({4, 16}));
  NodeId a = g.exp(x);
  NodeId b = g.tanh(a);
  NodeId c = g.neg(b);
  NodeId d = g.add_inferred(ir::Op(ir::OpKind::Sin), {c});
  g.set_outputs({g.sum(d, {1}, false)});
  return g;
}

} // namespace

TEST_CASE("a chain reuses memory: the arena holds two live values, not every value") {
  ir::Graph g = chain();
  ir::BufferPlan p = ir::plan_buffers(g);
  CHECK(check_plan(g, p).empty());
  CHECK(p.schedule.size() == 5);
  CHECK(p.assignments.size() == 5);
  CHECK(p.naive_size == 4 * 256 + 64);
  CHECK(p.arena_size == 2 * 256); // two [4,16] values at a time; the [4] sum reuses exp's bytes
  CHECK(p.assignments.at(NodeId(5)).offset == p.assignments.at(NodeId(1)).offset);
  CHECK(p.io.inputs == std::vector<NodeId>{NodeId(0)});
  CHECK(p.io.outputs == g.outputs);
  CHECK(p.lifetimes.at(NodeId(1)) == ir::Lifetime{0, 1});
  CHECK(p.lifetimes.at(NodeId(5)) == ir::Lifetime{4, 5}); // the output lives to the end
}

TEST_CASE("reshapes and contiguous narrows are views of their operand's bytes") {
  ir::Graph g("views");
  NodeId x = g.input("x", f32({2, 6}));
  NodeId e = g.exp(x);                                      // [2, 6] in the arena
  NodeId r = g.reshape_(e, {1, 12});                        // view of e at +0
  NodeId n = g.narrow_(r, 1, 4, 6);                         // view of e at +16 bytes
  NodeId t = g.narrow_(e, 1, 2, 3);                         // rows: not contiguous, a copy
  NodeId in_view = g.narrow_(g.reshape_(x, {12}), 0, 3, 2); // a view of the input itself
  g.set_outputs({g.tanh(n), t, g.exp(in_view)});
  ir::BufferPlan p = ir::plan_buffers(g);
  INFO(ir::LirModule{g, p}.to_string());
  CHECK(check_plan(g, p).empty());
  CHECK(p.view_aliases.at(r) == ir::ViewAlias{e, 0});
  CHECK(p.view_aliases.at(n) == ir::ViewAlias{e, 16});
  CHECK(p.view_aliases.at(in_view) == ir::ViewAlias{x, 12});
  CHECK(p.view_aliases.count(t) == 0);
  CHECK(p.assignments.count(t) == 1);
  CHECK(p.assignments.count(r) == 0);
  // e is read through its views by the tanh after it: it lives until then.
  CHECK(p.lifetimes.at(e).last >= p.lifetimes.at(NodeId(g.outputs[0].index)).first);

  Buffer xv = Buffer::f32({2, 6}, std::vector<float>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11});
  std::vector<const Buffer*> leaves{&xv};
  std::vector<Buffer> want = interp::run_leaves(g, leaves);
  std::vector<Buffer> got = interp::run_planned(ir::LirModule{g, p}, leaves);
  REQUIRE(got.size() == want.size());
  for (std::size_t k = 0; k < want.size(); ++k) CHECK(got[k] == want[k]);
}

TEST_CASE("without outputs in the arena, outputs get their own buffers and no slot") {
  ir::Graph g = chain();
  ir::BufferPlan p = ir::plan_buffers(g, {.alignment = 64, .outputs_in_arena = false});
  CHECK(check_plan(g, p).empty());
  CHECK(p.unplaced_outputs == g.outputs);
  CHECK(p.assignments.count(g.outputs[0]) == 0);
  CHECK(p.arena_size == 2 * 256);
}

TEST_CASE("the verifier names what is wrong with a broken plan") {
  ir::Graph g = chain();
  const ir::BufferPlan good = ir::plan_buffers(g);
  REQUIRE(check_plan(g, good).empty());

  SUBCASE("two live values in the same bytes") {
    ir::BufferPlan p = good;
    p.assignments[NodeId(2)] = p.assignments[NodeId(1)]; // tanh over its own operand exp
    std::vector<std::string> e = check_plan(g, p);
    INFO(joined(e));
    CHECK(has_line_with(e, "%1 [0, 256) live 0..1 overlaps %2 [0, 256) live 1..2"));
    CHECK_THROWS_AS(ir::verify_plan(g, p), InternalError);
  }
  SUBCASE("a misaligned slot") {
    ir::BufferPlan p = good;
    p.assignments[NodeId(3)].offset += 4;
    p.arena_size += 64;
    CHECK(has_line_with(check_plan(g, p), "%3: offset "));
  }
  SUBCASE("a slot too small for its value") {
    ir::BufferPlan p = good;
    p.assignments[NodeId(3)].size = 16;
    CHECK(has_line_with(check_plan(g, p), "%3: slot of 16 bytes for 256 bytes of f32[4,16]"));
  }
  SUBCASE("a slot past the end of the arena") {
    ir::BufferPlan p = good;
    p.arena_size = 256;
    CHECK(has_line_with(check_plan(g, p), "ends past the arena (256 bytes)"));
  }
  SUBCASE("a node scheduled before its operand") {
    ir::BufferPlan p = good;
    std::swap(p.schedule[1], p.schedule[2]);
    CHECK(has_line_with(check_plan(g, p), "%3 runs before its operand %2"));
  }
  SUBCASE("a node with no home") {
    ir::BufferPlan p = good;
    p.assignments.erase(NodeId(4));
    CHECK(has_line_with(check_plan(g, p), "%4 (%4 = sin(%3) : [4, 16] f32) has 0 homes"));
  }
  SUBCASE("a lifetime that does not match the schedule") {
    ir::BufferPlan p = good;
    p.lifetimes[NodeId(1)].last = 3;
    CHECK(has_line_with(check_plan(g, p), "%1: the plan's lifetime differs"));
  }
  SUBCASE("a view at the wrong offset") {
    ir::Graph h("v");
    NodeId x = h.input("x", f32({1, 8}));
    NodeId e = h.exp(x);
    NodeId n = h.narrow_(e, 1, 2, 4);
    h.set_outputs({h.tanh(n)});
    ir::BufferPlan p = ir::plan_buffers(h);
    REQUIRE(check_plan(h, p).empty());
    p.view_aliases[n].byte_offset = 4;
    CHECK(has_line_with(check_plan(h, p), "%2: view of %1 at +4, but its bytes are %1 at +8"));
  }
}

TEST_CASE("a plan with overlapping live buffers computes wrong values when run as planned") {
  // The property test below relies on run_planned exposing bad plans: check that it does.
  ir::Graph g("diamond");
  NodeId x = g.input("x", f32({64}));
  NodeId a = g.exp(x);
  NodeId b = g.tanh(x);
  g.set_outputs({g.add(a, b)});
  ir::BufferPlan p = ir::plan_buffers(g);
  REQUIRE(check_plan(g, p).empty());
  p.assignments[b] = p.assignments[a]; // b overwrites a before the add reads it
  REQUIRE(!check_plan(g, p).empty());
  std::vector<float> xs(64);
  for (std::size_t i = 0; i < xs.size(); ++i) xs[i] = 0.05f * float(i);
  Buffer xv = Buffer::f32({64}, xs);
  std::vector<const Buffer*> leaves{&xv};
  CHECK_FALSE(interp::run_planned(ir::LirModule{g, p}, leaves)[0] ==
              interp::run_leaves(g, leaves)[0]);
}

TEST_CASE("planning a graph with dynamic dims asks for a binding") {
  ir::Graph g("dyn");
  NodeId x = g.input("x", Shape({ir::Dim::dynamic("batch"), ir::Dim(3)}, ir::DType::F32));
  g.set_outputs({g.exp(x)});
  CHECK_THROWS_WITH_AS(ir::plan_buffers(g),
                       doctest::Contains("graph @dyn has dynamic dims (?batch); bind them first"),
                       Error);
}

TEST_CASE("random graphs: every plan verifies, reuses memory, and runs as planned to the "
          "interpreter's values") {
  auto t0 = std::chrono::steady_clock::now();
  uint64_t graphs = 0, reused = 0, with_views = 0, failed = 0;
  for (uint64_t seed = 1; seed <= kGraphs && seconds_since(t0) < kMaxSeconds; ++seed) {
    RandomGraphOptions opt;
    if (seed % 2) opt.max_ops = 40;
    RandomGraph rg = random_graph(seed, opt);
    std::vector<const Buffer*> leaves = ptrs(rg.leaves);
    std::vector<Buffer> want = interp::run_leaves(rg.graph, leaves);
    for (bool outputs_in_arena : {true, false}) {
      ir::LirModule lir{rg.graph,
                        ir::plan_buffers(rg.graph, {.alignment = seed % 3 ? 64u : 16u,
                                                    .outputs_in_arena = outputs_in_arena})};
      std::string problems = joined(check_plan(lir.mir, lir.buffers));
      if (problems.empty()) {
        std::vector<Buffer> got = interp::run_planned(lir, leaves);
        for (std::size_t k = 0; k < want.size(); ++k)
          if (!(got[k] == want[k])) problems += "output " + std::to_string(k) + " differs\n";
      }
      if (!problems.empty() && ++failed <= 3)
        FAIL_CHECK("seed " << seed << ", outputs_in_arena " << outputs_in_arena << ":\n"
                           << problems << lir.to_string());
      if (outputs_in_arena) {
        reused += lir.buffers.arena_size < lir.buffers.naive_size;
        with_views += !lir.buffers.view_aliases.empty();
      }
    }
    ++graphs;
  }
  MESSAGE(graphs << " random graphs in " << seconds_since(t0) << " s: " << reused
                 << " reuse memory, " << with_views << " have views, " << failed << " failed");
  CHECK(failed == 0);
  CHECK(graphs >= 200);
  CHECK(reused * 4 >= graphs);
  CHECK(with_views * 10 >= graphs);
}

TEST_CASE("random graphs through compile_module: the optimized LIR verifies and runs as planned") {
  auto t0 = std::chrono::steady_clock::now();
  uint64_t graphs = 0, failed = 0;
  for (uint64_t seed = 1; seed <= kGraphs / 3 && seconds_since(t0) < kMaxSeconds / 2; ++seed) {
    RandomGraph rg = random_graph(seed);
    std::vector<const Buffer*> leaves = ptrs(rg.leaves);
    ir::LirModule lir = passes::compile_module(ir::GraphModule(rg.graph));
    // The pipeline keeps the leaves (its interface), so the same buffers feed the result.
    std::vector<Buffer> want = interp::run_leaves(lir.mir, leaves);
    std::string problems = joined(check_plan(lir.mir, lir.buffers));
    if (problems.empty()) {
      std::vector<Buffer> got = interp::run_planned(lir, leaves);
      for (std::size_t k = 0; k < want.size(); ++k)
        if (!(got[k] == want[k])) problems += "output " + std::to_string(k) + " differs\n";
    }
    if (!problems.empty() && ++failed <= 3)
      FAIL_CHECK("seed " << seed << ":\n" << problems << lir.to_string());
    ++graphs;
  }
  MESSAGE(graphs << " random graphs in " << seconds_since(t0) << " s, " << failed << " failed");
  CHECK(failed == 0);
  CHECK(graphs >= 100);
}
