// tests/test_pass_properties.cpp -- every pass, and the whole pipeline, keeps what random graphs
// compute: interp(g) == interp(pass(g)), on graphs prepared so that each pass has work to do.
#include "passes/rewriter.hpp"
#include "support/pass_check.hpp"
#include "support/random_graph.hpp"

#include <rlx/rlx.hpp>

#include <doctest/doctest.h>

#include <chrono>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

using namespace rlx;
using namespace rlx::test;
using ir::NodeId;
using ir::OpKind;

namespace {

constexpr uint64_t kGraphs = 1000; ///< random graphs per pass
constexpr double kMaxSeconds = 30; ///< per pass; the count reached is reported
constexpr int kReportedFailures = 5;

/// A graph to run a pass on, with feeds for its leaves and the options to run it with.
struct Subject {
  ir::Graph graph;
  Feeds feeds;
  passes::PassOptions opts;
};

/// g rebuilt node by node; `wrap(h, n, id)` sees each node n of g after it was copied into h as
/// `id`, and returns the node that later nodes and the outputs read in its place.
ir::Graph rebuild(const ir::Graph& g,
                  const std::function<NodeId(ir::Graph&, const ir::Node&, NodeId)>& wrap) {
  ir::Graph h(g.name);
  std::vector<NodeId> map(g.len());
  for (const ir::Node& n : g.nodes()) {
    std::vector<NodeId> ins;
    for (NodeId in : n.inputs) ins.push_back(map[in.index]);
    map[n.id.index] = wrap(h, n, h.append_node(n.op, ins, n.shape, n.name));
  }
  std::vector<NodeId> outs;
  for (NodeId o : g.outputs) outs.push_back(map[o.index]);
  h.set_outputs(outs);
  return h;
}

/// Some leaves of rg (each with probability p) replaced by constants holding their data, so that
/// whole subgraphs become constant.
Subject bake_leaves(const RandomGraph& rg, Rng& rng, double p) {
  std::vector<Buffer> kept;
  std::size_t leaf = 0;
  ir::Graph g = rebuild(rg.graph, [&](ir::Graph& h, const ir::Node& n, NodeId id) {
    if (n.op.kind() != OpKind::Input && n.op.kind() != OpKind::Param) return id;
    const Buffer& value = rg.leaves[leaf++];
    if (!rng.chance(p)) {
      kept.push_back(value);
      return id;
    }
    return h.append_node(passes::constant_op(value), {}, value.shape(), std::nullopt);
  });
  // The replaced leaves stay in the graph, unused: feed them too.
  Feeds feeds = feeds_by_name(rg.graph, rg.leaves);
  return Subject{std::move(g), std::move(feeds), {}};
}

/// Which nodes of g an indexing op reads as indices: planting must keep their values (in range).
std::vector<uint8_t> index_operands(const ir::Graph& g) {
  std::vector<uint8_t> index(g.len(), 0);
  for (const ir::Node& n : g.nodes())
    if (n.op.family() == ir::Family::Index) index[n.inputs.back().index] = 1;
  return index;
}

/// x wrapped in an identity (or a look-alike that must not fire) that fits its dtype, or x itself.
/// With `keep_values`, only wrappers that compute x's values.
NodeId wrap_in_identity(ir::Graph& h, NodeId x, Rng& rng, bool keep_values) {
  const ir::Shape s = h.shape(x);
  ir::DType t = s.dtype();
  auto op = [&](ir::Op o, std::vector<NodeId> ins) { return h.add_inferred(std::move(o), ins); };
  auto c = [&](double v) { return *h.try_constant(v, t); };
  try {
    if (ir::is_bool(t))
      return rng.chance(0.5) ? op(ir::Op(OpKind::And), {x, c(1)})
                             : op(ir::Op(OpKind::Or), {c(0), x});
    if (ir::is_complex(t)) return x;
    switch (rng.range(0, keep_values ? 10 : 13)) {
    case 0:
      return op(ir::Op(OpKind::Add), {x, c(0)});
    case 1:
      return op(ir::Op(OpKind::Add), {c(0), x});
    case 2:
      return op(ir::Op(OpKind::Sub), {x, c(0)});
    case 3:
      return op(ir::Op(OpKind::Mul), {x, c(1)});
    case 4:
      return op(ir::Op(OpKind::Mul), {c(1), x});
    case 5:
      return op(ir::Op(OpKind::Div), {x, c(1)});
    case 6: // fires for floats, must not for integers
      return op(ir::Op(OpKind::Neg), {op(ir::Op(OpKind::Neg), {x})});
    case 7:
      return op(ir::Op(OpKind::Cast, ir::CastAttrs{t}), {x});
    case 8:
      return op(ir::Op(OpKind::Reshape, ir::ReshapeAttrs{s.sizes()}), {x});
    case 9:
      return op(ir::Op(OpKind::Expand, ir::ExpandAttrs{s.sizes()}), {x});
    case 10: {
      ir::Ints perm;
      for (std::size_t i = 0; i < s.rank(); ++i) perm.push_back(int64_t(i));
      return op(ir::Op(OpKind::Transpose, ir::TransposeAttrs{perm}), {x});
    }
    // The wrappers below change values; keep_values leaves them out.
    case 11: // fires for integers, must not for floats
      return rng.chance(0.5) ? op(ir::Op(OpKind::Mul), {x, c(0)})
                             : op(ir::Op(OpKind::Mul), {c(0), x});
    case 12: // must not fire: 0 - x is not x
      return op(ir::Op(OpKind::Sub), {c(0), x});
    case 13: // must not fire: 1 / x is not x
      return op(ir::Op(OpKind::Div), {c(1), x});
    }
  } catch (const Error&) {
  }
  return x;
}

/// x wrapped as wrap_in_identity does, when that keeps its shape and dtype (so the nodes that read
/// x still fit); else x.
NodeId plant_identity(ir::Graph& h, NodeId x, Rng& rng, bool keep_values) {
  NodeId y = wrap_in_identity(h, x, rng, keep_values);
  return h.shape(y) == h.shape(x) ? y : x;
}

/// rg with identities planted after about a third of its nodes.
Subject plant_identities(const RandomGraph& rg, Rng& rng) {
  std::vector<uint8_t> index = index_operands(rg.graph);
  ir::Graph g = rebuild(rg.graph, [&](ir::Graph& h, const ir::Node& n, NodeId id) {
    return rng.chance(0.35) ? plant_identity(h, id, rng, index[n.id.index] != 0) : id;
  });
  return Subject{std::move(g), feeds_by_name(rg.graph, rg.leaves), {}};
}

/// rg with a twin of about a third of its pure nodes (operands of commutative ops sometimes
/// swapped), and a look-alike of some element-wise binary ops that are not commutative (operands
/// swapped, which cse must not merge); later nodes read the twin or look-alike.
Subject plant_duplicates(const RandomGraph& rg, Rng& rng) {
  std::vector<uint8_t> index = index_operands(rg.graph);
  ir::Graph g = rebuild(rg.graph, [&](ir::Graph& h, const ir::Node& n, NodeId id) {
    if (!ir::has_trait(n.op.kind(), ir::kPure) || !rng.chance(0.35)) return id;
    std::vector<NodeId> ins = h.node(id).inputs;
    bool swap = n.op.family() == ir::Family::EwBinary && !index[n.id.index] && rng.chance(0.5);
    if (swap) std::swap(ins[0], ins[1]);
    if (!swap || ir::has_trait(n.op.kind(), ir::kCommutative))
      return h.append_node(n.op, ins, n.shape, std::nullopt);
    try {
      NodeId other = h.add_inferred(n.op, ins);
      return h.shape(other) == n.shape ? other : id;
    } catch (const Error&) {
      return id;
    }
  });
  return Subject{std::move(g), feeds_by_name(rg.graph, rg.leaves), {}};
}

/// rg with, for most float matmuls, a twin product plus a bias (a constant of the last axis, or
/// of the whole shape) and sometimes an activation, as an extra output: the pattern
/// fuse_matmul_bias_act looks for, whose rounding differences reach the outputs unamplified.
Subject plant_bias_act(const RandomGraph& rg, Rng& rng) {
  std::vector<NodeId> extra;
  ir::Graph g = rebuild(rg.graph, [&](ir::Graph& h, const ir::Node& n, NodeId id) {
    if (n.op.kind() != OpKind::MatMul || !ir::is_float(n.shape.dtype()) || !rng.chance(0.8))
      return id;
    NodeId mm = h.append_node(n.op, h.node(id).inputs, n.shape, std::nullopt);
    std::vector<int64_t> dims = n.shape.sizes();
    if (!dims.empty() && rng.chance(0.7)) dims = {dims.back()};
    ir::Shape bias_shape = ir::Shape::of(dims, n.shape.dtype());
    Buffer bias = random_values(bias_shape, FillSpec{}, rng);
    NodeId b = h.append_node(passes::constant_op(bias), {}, bias_shape, std::nullopt);
    NodeId sum = rng.chance(0.5) ? h.add(mm, b) : h.add(b, mm);
    OpKind act = rng.pick({OpKind::Relu, OpKind::Gelu, OpKind::Silu, OpKind::Tanh, OpKind::Abs});
    extra.push_back(rng.chance(0.6) ? h.add_inferred(ir::Op(act), {sum}) : sum);
    return id;
  });
  std::vector<NodeId> outs = g.outputs;
  outs.insert(outs.end(), extra.begin(), extra.end());
  g.set_outputs(outs);
  return Subject{std::move(g), feeds_by_name(rg.graph, rg.leaves), {}};
}

/// rg as it is, with values for about half of its params in the options.
Subject specialize_some(const RandomGraph& rg, Rng& rng) {
  Subject s{rg.graph, feeds_by_name(rg.graph, rg.leaves), {}};
  for (const auto& [name, value] : s.feeds.params)
    if (rng.chance(0.5)) s.opts.params[name] = value;
  return s;
}

/// What each pass's property test runs it on.
Subject subject_for(std::string_view pass, const RandomGraph& rg, Rng& rng) {
  if (pass == "param_specialize") return specialize_some(rg, rng);
  if (pass == "constant_fold") return bake_leaves(rg, rng, 0.6);
  if (pass == "algebraic_simplify") return plant_identities(rg, rng);
  if (pass == "cse") return plant_duplicates(rg, rng);
  if (pass == "fuse_matmul_bias_act") return plant_bias_act(rg, rng);
  return Subject{rg.graph, feeds_by_name(rg.graph, rg.leaves), {}}; // decompose, dce
}

/// Everything at once, for the pipeline: some leaves baked, identities, duplicates and bias adds
/// planted, some params given values.
Subject pipeline_subject(const RandomGraph& rg, Rng& rng) {
  Subject baked = bake_leaves(rg, rng, 0.3);
  RandomGraph step{rg.seed, baked.graph, {}};
  for (NodeId id : leaf_ids(baked.graph)) {
    const ir::Node& n = baked.graph.node(id);
    const std::string& name = n.op.attrs<ir::LeafAttrs>().name;
    step.leaves.push_back(n.op.kind() == OpKind::Input ? baked.feeds.inputs.at(name)
                                                       : baked.feeds.params.at(name));
  }
  step.graph = plant_identities(step, rng).graph;
  step.graph = plant_duplicates(step, rng).graph;
  step.graph = plant_bias_act(step, rng).graph;
  Subject s = specialize_some(step, rng);
  s.feeds = baked.feeds;
  return s;
}

/// Random graph `seed`: the generator's usual size, or (odd seeds) up to 40 ops.
RandomGraph graph_for(uint64_t seed) {
  RandomGraphOptions opt;
  if (seed % 2 == 1) opt.max_ops = 40;
  return random_graph(seed, opt);
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

} // namespace

TEST_CASE("properties: every pass keeps the outputs of random graphs and reports changes "
          "truthfully") {
  for (const passes::PassInfo& pass : passes::kPasses) {
    auto t0 = std::chrono::steady_clock::now();
    uint64_t graphs = 0, fired = 0, failed = 0;
    for (uint64_t seed = 1; seed <= kGraphs && seconds_since(t0) < kMaxSeconds; ++seed) {
      RandomGraph rg = graph_for(seed);
      Rng rng(seed * 31 + 7);
      Subject s = subject_for(pass.name, rg, rng);
      RunResult want = interp_run(s.graph, s.feeds);
      REQUIRE_MESSAGE(!want.error, "seed " << seed << ": the graph prepared for " << pass.name
                                           << " does not run: " << *want.error);
      ir::Graph g = s.graph;
      PassCheck c = run_and_check(pass, g, s.opts, {s.feeds});
      ++graphs;
      fired += c.changed;
      if (c.problems.empty()) continue;
      if (++failed <= kReportedFailures)
        FAIL_CHECK("pass " << pass.name << ", random graph seed " << seed << ":\n"
                           << c.problems << "the graph the pass ran on:\n"
                           << ir::to_text(s.graph));
    }
    MESSAGE(pass.name << ": " << graphs << " random graphs in " << seconds_since(t0) << " s, "
                      << fired << " changed, " << failed << " failed");
    INFO("pass " << pass.name);
    CHECK(failed == 0);
    CHECK(graphs >= 50);
    CHECK(fired * 5 >= graphs); // the subjects give every pass work in most graphs
  }
}

TEST_CASE("properties: the whole pipeline keeps the outputs of random graphs") {
  auto t0 = std::chrono::steady_clock::now();
  uint64_t graphs = 0, failed = 0, shrunk = 0;
  for (uint64_t seed = 1; seed <= kGraphs && seconds_since(t0) < kMaxSeconds; ++seed) {
    RandomGraph rg = graph_for(seed);
    Rng rng(seed * 17 + 3);
    Subject s = pipeline_subject(rg, rng);
    ++graphs;
    RunResult want = interp_run(s.graph, s.feeds);
    REQUIRE_MESSAGE(!want.error, "seed " << seed << ": " << *want.error);
    ir::Graph g = s.graph;
    passes::PipelineOptions opts;
    opts.passes = s.opts;
    opts.verify_each = true;
    opts.decompose = seed % 2 == 0;
    opts.fuse = seed % 3 == 0;
    std::string problems;
    try {
      passes::compile_pipeline(g, opts);
      problems = compare_graphs(s.graph, want, g, s.feeds, opts.decompose || opts.fuse);
      if (interface_of(g) != interface_of(s.graph, s.opts.params))
        problems += "the inputs and params the caller feeds changed\n";
    } catch (const std::exception& e) {
      problems = std::string("the pipeline threw: ") + e.what() + "\n";
    }
    shrunk += g.len() < s.graph.len();
    if (problems.empty()) continue;
    if (++failed <= kReportedFailures)
      FAIL_CHECK("random graph seed " << seed
                                      << std::string(opts.decompose ? " (decompose on)" : "")
                                      << std::string(opts.fuse ? " (fuse on)" : "") << ":\n"
                                      << problems << "before:\n"
                                      << ir::to_text(s.graph) << "after:\n"
                                      << ir::to_text(g));
  }
  MESSAGE("pipeline: " << graphs << " random graphs in " << seconds_since(t0) << " s, " << shrunk
                       << " got smaller, " << failed << " failed");
  CHECK(failed == 0);
  CHECK(graphs >= 50);
  CHECK(shrunk * 2 >= graphs);
}
