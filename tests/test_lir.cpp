// tests/test_lir.cpp -- plans (src/lir/): the verifier accepts every plan the planner makes for
// random graphs, by the interpreter's policy and by the one the JIT runs, and catches broken
// ones; running a graph through its plan (interp::run_planned) computes exactly what the
// interpreter computes; planning, checking and printing stay near-linear in the graph.
#include "support/random_graph.hpp"

#include <rlx/all.hpp>

#include <doctest/doctest.h>

#include <chrono>
#include <string>
#include <vector>

using namespace rlx;
using namespace rlx::test;
using ir::NodeId;
using ir::Shape;
using rlx::Buffer;

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

ir::LirModule jit_plan(const ir::Graph& g, bool outputs_in_arena = false, uint64_t alignment = 64) {
  ir::PlanOptions opts = plan_options(Backend::Jit);
  opts.outputs_in_arena = outputs_in_arena;
  opts.alignment = alignment;
  return ir::plan_lir(g, opts);
}

const ir::Placement& place(const ir::LirModule& lir, NodeId id) { return lir.place(id); }

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
  ir::LirModule p = ir::plan_lir(chain());
  CHECK(check_plan(p).empty());
  CHECK(p.steps.size() == 5);
  CHECK(p.memory.naive_size == 4 * 256 + 64);
  CHECK(p.memory.arena_size == 2 * 256); // two [4,16] values at a time; the sum reuses exp's bytes
  CHECK(place(p, NodeId(5)) ==
        ir::Placement{ir::Home::Arena, NodeId(5), place(p, NodeId(1)).offset});
  CHECK(p.memory.io.inputs == std::vector<NodeId>{NodeId(0)});
  CHECK(p.memory.io.outputs == p.mir.outputs);
  CHECK(p.memory.lifetimes[1] == ir::Lifetime{0, 1});
  CHECK(p.memory.lifetimes[5] == ir::Lifetime{4, 5}); // the output lives to the end
}

TEST_CASE("the JIT's plan of the chain is one kernel and a row step, the kernel's result in the "
          "arena and the output a buffer of its own") {
  ir::LirModule p = jit_plan(chain());
  INFO(p.to_string());
  CHECK(check_plan(p).empty());
  REQUIRE(p.steps.size() == 1); // exp, tanh, neg, sin: the sum's prologue
  CHECK(p.steps[0].rule->name() == "row");
  CHECK(p.steps[0].nodes.size() == 5);
  CHECK(p.steps[0].reads == std::vector<NodeId>{NodeId(0)});
  CHECK(place(p, NodeId(5)).home == ir::Home::Own);
  for (uint32_t i = 1; i < 5; ++i) CHECK(place(p, NodeId(i)).home == ir::Home::None);
  CHECK(p.memory.arena_size == 0);
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
  ir::LirModule p = ir::plan_lir(g);
  INFO(p.to_string());
  CHECK(check_plan(p).empty());
  CHECK(place(p, r) == ir::Placement{ir::Home::View, e, 0});
  CHECK(place(p, n) == ir::Placement{ir::Home::View, e, 16});
  CHECK(place(p, in_view) == ir::Placement{ir::Home::View, x, 12});
  CHECK(place(p, t).home == ir::Home::Arena);
  // e is read through its views by the tanh after it: it lives until then.
  CHECK(p.memory.lifetimes[e.index].last >= p.memory.lifetimes[g.outputs[0].index].first);

  Buffer xv = Buffer::f32({2, 6}, std::vector<float>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11});
  std::vector<const Buffer*> leaves{&xv};
  std::vector<Buffer> want = interp::run_leaves(g, leaves);
  for (const ir::LirModule& lir : {p, jit_plan(g)}) {
    INFO(lir.to_string());
    REQUIRE(check_plan(lir).empty());
    std::vector<Buffer> got = interp::run_planned(lir, leaves);
    REQUIRE(got.size() == want.size());
    for (std::size_t k = 0; k < want.size(); ++k) CHECK(got[k] == want[k]);
  }
}

TEST_CASE("without outputs in the arena, outputs get buffers of their own") {
  ir::LirModule p = ir::plan_lir(chain(), {.alignment = 64, .outputs_in_arena = false});
  CHECK(check_plan(p).empty());
  CHECK(place(p, p.mir.outputs[0]).home == ir::Home::Own);
  CHECK(p.memory.arena_size == 2 * 256);
}

TEST_CASE("the verifier names what is wrong with a broken plan") {
  const ir::LirModule good = ir::plan_lir(chain());
  REQUIRE(check_plan(good).empty());
  auto problems = [](const ir::LirModule& p) {
    std::vector<std::string> e = check_plan(p);
    INFO(joined(e));
    return e;
  };

  SUBCASE("two live values in the same bytes") {
    ir::LirModule p = good;
    p.memory.places[2].offset = p.memory.places[1].offset; // tanh over its own operand exp
    std::vector<std::string> e = problems(p);
    CHECK(has_line_with(e, "overlaps"));
    CHECK(has_line_with(e, "%1 [0, 256) live 0..1"));
    CHECK(has_line_with(e, "%2 [0, 256) live 1..2"));
    CHECK_THROWS_AS(ir::verify_plan(p), InternalError);
  }
  SUBCASE("a misaligned slot") {
    ir::LirModule p = good;
    p.memory.places[3].offset += 4;
    p.memory.arena_size += 64;
    CHECK(has_line_with(problems(p), "%3: offset "));
  }
  SUBCASE("a slot past the end of the arena") {
    ir::LirModule p = good;
    p.memory.arena_size = 256;
    CHECK(has_line_with(problems(p), "ends past the arena (256 bytes)"));
  }
  SUBCASE("a step before the step making its operand") {
    ir::LirModule p = good;
    std::swap(p.steps[1], p.steps[2]);
    CHECK(has_line_with(problems(p), ") reads %2 before a step writes it"));
  }
  SUBCASE("a value written by two steps") {
    ir::LirModule p = good;
    p.steps[2].writes.push_back(NodeId(2));
    CHECK(has_line_with(problems(p), "%2 is written by steps 1 and 2"));
  }
  SUBCASE("a written value with no home") {
    ir::LirModule p = good;
    p.memory.places[4].home = ir::Home::None;
    CHECK(has_line_with(problems(p), "%4 (%4 = sin(%3) : [4, 16] f32) is written by a step but "
                                     "its home is none"));
  }
  SUBCASE("an output no step makes") {
    ir::LirModule p = good;
    p.steps.pop_back();
    p.memory.releases.pop_back();
    CHECK(has_line_with(problems(p), "output %5 is made by no step"));
  }
  SUBCASE("a lifetime that does not match the steps' reads") {
    ir::LirModule p = good;
    p.memory.lifetimes[1].last = 3;
    CHECK(
        has_line_with(problems(p), "%1: the plan's lifetime 0..3 differs from the steps' (0..1)"));
  }
  SUBCASE("a view at the wrong offset") {
    ir::Graph h("v");
    NodeId x = h.input("x", f32({1, 8}));
    NodeId e = h.exp(x);
    NodeId n = h.narrow_(e, 1, 2, 4);
    h.set_outputs({h.tanh(n)});
    ir::LirModule p = ir::plan_lir(h);
    REQUIRE(check_plan(p).empty());
    p.memory.places[n.index].offset = 4;
    CHECK(has_line_with(problems(p), "%2: view of %1 at +4, but its bytes are %1 at +8"));
  }
  SUBCASE("an interpreter step of the JIT's plan reading arena bytes") {
    ir::Graph h("interp");
    NodeId x = h.input("x", f32({4, 8, 2}));
    NodeId e = h.exp(x);
    h.set_outputs({h.sum(e, {0, 2}, false)}); // reduced, kept, reduced: the interpreter's kernel
    ir::LirModule p = jit_plan(h);
    INFO(p.to_string());
    REQUIRE(check_plan(p).empty());
    REQUIRE(place(p, e).home == ir::Home::Own);
    p.memory.places[e.index].home = ir::Home::Arena;
    CHECK(has_line_with(problems(p), "takes %1 (arena), not a buffer of its own"));
  }
  SUBCASE("a buffer of its own freed before its last reader") {
    ir::Graph h("free");
    NodeId x = h.input("x", f32({4, 8, 2}));
    NodeId e = h.exp(x);
    NodeId s = h.sum(e, {0, 2}, false); // two interpreter steps read e (see above)
    h.set_outputs({h.add(h.sum(e, {0, 2}, true), s)});
    ir::LirModule p = jit_plan(h);
    INFO(p.to_string());
    REQUIRE(check_plan(p).empty());
    REQUIRE(place(p, e).home == ir::Home::Own);
    uint32_t last = p.memory.lifetimes[e.index].last;
    REQUIRE(last > 1);
    std::erase(p.memory.releases[last], e);
    p.memory.releases[1].push_back(e);
    CHECK(has_line_with(problems(p), "%1 is released at step 1, not after its last read"));
    Buffer xv = Buffer::f32({4, 8, 2}, std::vector<float>(64, 0.5f));
    std::vector<const Buffer*> leaves{&xv};
    CHECK_THROWS_AS(interp::run_planned(p, leaves), InternalError);
  }
}

TEST_CASE("a plan with overlapping live buffers computes wrong values when run as planned") {
  // The property test below relies on run_planned exposing bad plans: check that it does.
  ir::Graph g("diamond");
  NodeId x = g.input("x", f32({64}));
  NodeId a = g.exp(x);
  NodeId b = g.tanh(x);
  g.set_outputs({g.add(a, b)});
  ir::LirModule p = ir::plan_lir(g);
  REQUIRE(check_plan(p).empty());
  p.memory.places[b.index].offset = p.memory.places[a.index].offset; // b overwrites a
  REQUIRE(!check_plan(p).empty());
  std::vector<float> xs(64);
  for (std::size_t i = 0; i < xs.size(); ++i) xs[i] = 0.05f * float(i);
  Buffer xv = Buffer::f32({64}, xs);
  std::vector<const Buffer*> leaves{&xv};
  CHECK_FALSE(interp::run_planned(p, leaves)[0] == interp::run_leaves(g, leaves)[0]);
}

TEST_CASE("planning a graph with dynamic dims asks for a binding") {
  ir::Graph g("dyn");
  NodeId x = g.input("x", Shape({ir::Dim::dynamic("batch"), ir::Dim(3)}, ir::DType::F32));
  g.set_outputs({g.exp(x)});
  CHECK_THROWS_WITH_AS(ir::plan_lir(g),
                       doctest::Contains("graph @dyn has dynamic dims (?batch); bind them first"),
                       Error);
}

TEST_CASE("random graphs: every plan, by the interpreter's policy and by the JIT's, verifies, "
          "reuses memory, and runs as planned to the interpreter's values") {
  auto t0 = std::chrono::steady_clock::now();
  uint64_t graphs = 0, reused = 0, with_views = 0, fused = 0, failed = 0;
  for (uint64_t seed = 1; seed <= kGraphs && seconds_since(t0) < kMaxSeconds; ++seed) {
    RandomGraphOptions opt;
    if (seed % 2) opt.max_ops = 40;
    RandomGraph rg = random_graph(seed, opt);
    std::vector<const Buffer*> leaves = ptrs(rg.leaves);
    std::vector<Buffer> want = interp::run_leaves(rg.graph, leaves);
    uint64_t alignment = seed % 3 ? 64u : 16u;
    for (int variant = 0; variant < 4; ++variant) {
      bool outputs_in_arena = variant % 2 == 0, jit = variant >= 2;
      // plan_lir checks its plan where plan_checks_enabled (an InternalError); here always.
      ir::PlanOptions opts = jit ? plan_options(Backend::Jit) : ir::PlanOptions{};
      opts.outputs_in_arena = outputs_in_arena;
      opts.alignment = jit ? 64 : alignment;
      std::string problems;
      ir::LirModule lir;
      try {
        lir = ir::plan_lir(rg.graph, opts);
        problems = joined(check_plan(lir));
      } catch (const InternalError& e) {
        problems = e.what();
      }
      if (problems.empty()) {
        std::vector<Buffer> got = interp::run_planned(lir, leaves);
        for (std::size_t k = 0; k < want.size(); ++k)
          if (!(got[k] == want[k])) problems += "output " + std::to_string(k) + " differs\n";
      }
      if (!problems.empty() && ++failed <= 3)
        FAIL_CHECK("seed " << seed << ", variant " << variant << ":\n"
                           << problems << lir.to_string());
      if (variant == 0) {
        reused += lir.memory.arena_size < lir.memory.naive_size;
        for (const ir::Placement& pl : lir.memory.places)
          if (pl.home == ir::Home::View) {
            ++with_views;
            break;
          }
      }
      if (variant == 3) fused += lir.kernels.size() > 0;
    }
    ++graphs;
  }
  MESSAGE(graphs << " random graphs in " << seconds_since(t0) << " s: " << reused
                 << " reuse memory, " << with_views << " have views, " << fused
                 << " fuse kernels on the JIT, " << failed << " failed");
  CHECK(failed == 0);
  CHECK(graphs >= 200);
  CHECK(reused * 4 >= graphs);
  CHECK(with_views * 10 >= graphs);
  CHECK(fused * 4 >= graphs);
}

TEST_CASE("random graphs through the JIT's pipeline: the plan the JIT runs verifies and runs as "
          "planned") {
  auto t0 = std::chrono::steady_clock::now();
  uint64_t graphs = 0, failed = 0;
  for (uint64_t seed = 1; seed <= kGraphs / 3 && seconds_since(t0) < kMaxSeconds / 2; ++seed) {
    RandomGraph rg = random_graph(seed);
    std::vector<const Buffer*> leaves = ptrs(rg.leaves);
    ir::LirModule lir = plan_for(rg.graph, Backend::Jit);
    // The pipeline keeps the leaves (its interface), so the same buffers feed the result.
    std::vector<Buffer> want = interp::run_leaves(lir.mir, leaves);
    std::string problems = joined(check_plan(lir));
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

namespace {

/// A chain of `blocks` blocks of exp, a row sum and a subtraction (fused kernels and row steps
/// by turns on the JIT), with a view and a value read much later every 64 blocks: 3 nodes a
/// block, plus a few.
ir::Graph long_chain(int blocks) {
  ir::Graph g("long");
  NodeId x = g.input("x", f32({4, 16}));
  NodeId prev = x, anchor = x;
  for (int i = 0; i < blocks; ++i) {
    NodeId a = g.exp(prev);
    NodeId s = g.sum(a, {1}, true);
    prev = g.sub(a, s);
    if (i % 64 == 63) {
      prev = g.add(g.reshape_(g.reshape_(prev, {64}), {4, 16}), anchor);
      anchor = prev;
    }
  }
  g.set_outputs({prev});
  return g;
}

/// The fastest of three runs of fn, in seconds.
template <class Fn> double best_of_three(const Fn& fn) {
  double best = 1e30;
  for (int i = 0; i < 3; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    fn();
    best = std::min(best, seconds_since(t0));
  }
  return best;
}

} // namespace

TEST_CASE("planning, checking, printing and inspecting grow linearly with the graph: a graph "
          "four times larger takes less than eight times as long") {
  // Quadratic work (every value against every other) takes sixteen times as long; a 100k-node
  // graph took minutes that way. The fastest of three runs keeps other processes' noise out.
  ir::Graph small = long_chain(8'000), large = long_chain(32'000);
  REQUIRE(large.len() > 96'000);
  auto plan_all = [](const ir::Graph& g) {
    return [&g] {
      for (const ir::PlanOptions& opts : {ir::PlanOptions{}, plan_options(Backend::Jit)}) {
        ir::LirModule lir = ir::plan_lir(g, opts);
        CHECK(check_plan(lir).empty());
        CHECK(lir.to_string().size() > g.len());
      }
    };
  };
  auto inspect = [](const ir::Graph& g) { return [&g] { CHECK(g.inspect().size() > g.len()); }; };
  double plan_small = best_of_three(plan_all(small)), plan_large = best_of_three(plan_all(large));
  double inspect_small = best_of_three(inspect(small));
  double inspect_large = best_of_three(inspect(large));
  MESSAGE("plan, check and print: " << plan_small << " s for " << small.len() << " nodes, "
                                    << plan_large << " s for " << large.len() << "; inspect: "
                                    << inspect_small << " s, " << inspect_large << " s");
  // 20 ms of slack: timer and allocator noise on runs this short.
  CHECK(plan_large < 8 * plan_small + 0.02);
  CHECK(inspect_large < 8 * inspect_small + 0.02);
}
