// tests/test_pass_properties.cpp -- every pass, and the whole pipeline, keeps what random graphs
// compute: interp(g) == interp(pass(g)), on graphs prepared so that each pass has work to do.
#include "dist/shard.hpp"
#include "passes/rewriter.hpp"
#include "support/pass_check.hpp"
#include "support/random_graph.hpp"

#include <rlx/all.hpp>

#include <doctest/doctest.h>

#include <chrono>
#include <functional>
#include <map>
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

/// rlx::dist::shard annotations after some nodes, recorded for one rank (as a single process
/// records them): shard_propagate drops them.
Subject plant_shards(const RandomGraph& rg, Rng& rng) {
  ir::Graph g = rebuild(rg.graph, [&](ir::Graph& h, const ir::Node&, NodeId id) {
    ir::Shape s = h.shape(id);
    if (!s.is_static() || s.rank() == 0 || !rng.chance(0.3)) return id;
    dist::detail::ShardSpec spec{int64_t(s.rank()) - 1, 1, 0};
    return h.append_node(dist::detail::shard_op(spec), {id}, s, std::nullopt);
  });
  return Subject{std::move(g), feeds_by_name(rg.graph, rg.leaves), {}};
}

/// A Constant node of shape s holding `value(i)` at flat index i.
NodeId constant_node(ir::Graph& h, const ir::Shape& s,
                     const std::function<double(int64_t)>& value) {
  Buffer b(s);
  for (int64_t i = 0; i < b.numel(); ++i) b.set_f64(i, value(i));
  return h.append_node(passes::constant_op(b), {}, s, std::nullopt);
}

/// g with `extra` appended to its outputs.
Subject with_outputs(const RandomGraph& rg, ir::Graph g, const std::vector<NodeId>& extra) {
  std::vector<NodeId> outs = g.outputs;
  outs.insert(outs.end(), extra.begin(), extra.end());
  g.set_outputs(outs);
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
  return with_outputs(rg, std::move(g), extra);
}

/// Whether a preparation may read node n of rg: any node, or with `outputs_only` the values
/// rg already returns. The pipeline's preparations read outputs only: its other passes change
/// values within rounding (decompose) or in the sign of a zero (x + 0 -> x), which an
/// intermediate value can turn into large differences (an argmax tie that flips, x / -0), and
/// reading outputs adds no comparison that was not already made.
bool plantable(const RandomGraph& rg, const ir::Node& n, bool outputs_only) {
  return !outputs_only || std::find(rg.graph.outputs.begin(), rg.graph.outputs.end(), n.id) !=
                              rg.graph.outputs.end();
}

/// Appends a pattern reading x (a node of h, of shape s); the values to return go to `extra`.
using Planter =
    std::function<void(ir::Graph& h, NodeId x, const ir::Shape& s, std::vector<NodeId>& extra)>;

/// rg with `plant` run after each value of rank >= 1 whose dtype `fits` and that plantable()
/// allows, with probability p; what it puts in `extra` becomes extra outputs.
Subject plant_after(const RandomGraph& rg, Rng& rng, double p, bool outputs_only,
                    const std::function<bool(ir::DType)>& fits, const Planter& plant) {
  std::vector<NodeId> extra;
  ir::Graph g = rebuild(rg.graph, [&](ir::Graph& h, const ir::Node& n, NodeId id) {
    if (n.shape.rank() > 0 && fits(n.shape.dtype()) && plantable(rg, n, outputs_only) &&
        rng.chance(p))
      plant(h, id, n.shape, extra);
    return id;
  });
  return with_outputs(rg, std::move(g), extra);
}

/// rg with, after about half of its float values x of rank >= 1, norm(x' + r [+ bias]) as an
/// extra output: x' = tanh(x), r a constant alternating around +-2 along the norm's axis (so
/// each row's spread is at least 1/2 and the norm does not amplify the sum's rounding), the adds
/// in every order, a layer or rms norm. Some are planted so that the pass must not fire: the sum
/// is an output too, or the norm is over the first axis.
Subject plant_residual_norm(const RandomGraph& rg, Rng& rng, bool outputs_only = false) {
  return plant_after(
      rg, rng, 0.5, outputs_only, ir::is_float,
      [&](ir::Graph& h, NodeId id, const ir::Shape& s, std::vector<NodeId>& extra) {
        std::vector<int64_t> sizes = s.sizes();
        auto rank = int64_t(s.rank());
        int64_t axis = rng.chance(0.5) ? -1 : rank - 1;
        if (rank >= 2 && rng.chance(0.1)) axis = 0; // must not fire
        auto a = std::size_t(axis < 0 ? axis + rank : axis);
        int64_t stride = 1;
        for (std::size_t d = a + 1; d < sizes.size(); ++d) stride *= sizes[d];
        NodeId x = h.add_inferred(ir::Op(OpKind::Tanh), {id});
        NodeId r = constant_node(h, s, [&](int64_t i) {
          return ((i / stride) % sizes[a] % 2 ? -2.0 : 2.0) + rng.uniform(-0.5, 0.5);
        });
        auto add = [&](NodeId p, NodeId q) { return rng.chance(0.5) ? h.add(p, q) : h.add(q, p); };
        ir::Shape row = ir::Shape::of(std::vector<int64_t>{sizes.back()}, s.dtype());
        NodeId sum;
        if (rng.chance(0.5) || axis == 0) {
          sum = add(x, r);
        } else {
          ir::Shape wide = ir::Shape::of(std::vector<int64_t>{1, sizes.back()}, s.dtype());
          NodeId bias = constant_node(h, rank == 1 || rng.chance(0.7) ? row : wide,
                                      [&](int64_t) { return rng.uniform(-1, 1); });
          sum = rng.chance(0.5) ? add(add(x, r), bias) : add(add(x, bias), r);
        }
        ir::Shape per = ir::Shape::of(std::vector<int64_t>{sizes[a]}, s.dtype());
        NodeId gamma = constant_node(h, per, [&](int64_t) { return rng.uniform(0.5, 1.5); });
        NodeId beta = constant_node(h, per, [&](int64_t) { return rng.uniform(-1, 1); });
        OpKind k = rng.chance(0.5) ? OpKind::LayerNorm : OpKind::RmsNorm;
        float eps = float(rng.pick({1e-5, 1e-6, 0.1}));
        extra.push_back(h.add_inferred(ir::Op(k, ir::NormAttrs{axis, eps}), {sum, gamma, beta}));
        if (rng.chance(0.1)) extra.push_back(sum); // a second reader: must not fire
      });
}

/// rg with, after about half of its float values v of rank >= 1, silu(gate) * up of the two
/// halves of h as an extra output, where h is v (its last axis even) or v and a constant side by
/// side; either half the gate, the product either way round, sometimes cast to the other float
/// dtype. Some silus are also outputs: there the pass must not fire.
Subject plant_swiglu(const RandomGraph& rg, Rng& rng, bool outputs_only = false) {
  return plant_after(
      rg, rng, 0.5, outputs_only, ir::is_float,
      [&](ir::Graph& h, NodeId id, const ir::Shape& s, std::vector<NodeId>& extra) {
        int64_t last = s.sizes().back(), rank = int64_t(s.rank());
        NodeId halves = id;
        if (last % 2 || rng.chance(0.5)) {
          NodeId c = constant_node(h, s, [&](int64_t) { return rng.uniform(-3, 3); });
          halves = h.concat_(
              rng.chance(0.5) ? std::vector<NodeId>{id, c} : std::vector<NodeId>{c, id}, rank - 1);
          last *= 2;
        }
        int64_t axis = rng.chance(0.5) ? -1 : rank - 1, half = last / 2;
        NodeId first = h.narrow_(halves, axis, 0, half),
               second = h.narrow_(halves, axis, half, half);
        bool gate_first = rng.chance(0.5);
        NodeId act = h.add_inferred(ir::Op(OpKind::Silu), {gate_first ? first : second});
        NodeId up = gate_first ? second : first;
        NodeId y = rng.chance(0.5) ? h.mul(act, up) : h.mul(up, act);
        if (rng.chance(0.3)) {
          ir::DType other = s.dtype() == ir::DType::F32 ? ir::DType::F64 : ir::DType::F32;
          y = h.add_inferred(ir::Op(OpKind::Cast, ir::CastAttrs{other}), {y});
        }
        extra.push_back(y);
        if (rng.chance(0.1)) extra.push_back(act); // a second reader: must not fire
      });
}

/// rg with, after half of its f32 values x, a 2-D convolution of x seen as an image
/// [1, C, 1, n / C] (C = 2 when n is even, half the time) by a constant weight of 1 to 3 output
/// channels and 1 to 3 taps, with random padding, stride and dilation, sometimes in 2 groups
/// (which conv_as_matmul leaves alone).
Subject plant_conv(const RandomGraph& rg, Rng& rng, bool outputs_only = false) {
  return plant_after(
      rg, rng, 0.5, outputs_only, [](ir::DType t) { return t == ir::DType::F32; },
      [&](ir::Graph& h, NodeId id, const ir::Shape& s, std::vector<NodeId>& extra) {
        int64_t n = 1;
        for (int64_t d : s.sizes()) n *= d;
        int64_t c = n % 2 == 0 && rng.chance(0.5) ? 2 : 1, w = n / c;
        int64_t groups = c == 2 && rng.chance(0.25) ? 2 : 1;
        int64_t taps = 1 + int64_t(rng.uniform(0, 2.99)),
                out = groups * (1 + int64_t(rng.uniform(0, 2.99)));
        int64_t pad = int64_t(rng.uniform(0, 1.99)), stride = 1 + int64_t(rng.uniform(0, 1.99));
        int64_t dil = 1 + int64_t(rng.uniform(0, 1.99));
        if (w + 2 * pad < dil * (taps - 1) + 1) return; // the window does not fit
        NodeId img = h.reshape_(id, {1, c, 1, w});
        ir::Shape ws =
            ir::Shape::of(std::vector<int64_t>{out, c / groups, 1, taps}, ir::DType::F32);
        NodeId wt = constant_node(h, ws, [&](int64_t) { return rng.uniform(-2, 2); });
        extra.push_back(h.conv2d(img, wt, {1, taps}, {1, stride}, {0, pad}, {1, dil}, groups));
      });
}

/// rg with, after about a third of its f32, f64 and i32 values x of rank >= 1, two or three
/// products of x by constant matrices (of 1 to 5 columns) as extra outputs. Sometimes one
/// weight is also an output (its product must stay apart).
Subject plant_shared_matmul(const RandomGraph& rg, Rng& rng, bool outputs_only = false) {
  return plant_after(
      rg, rng, 0.35, outputs_only,
      [](ir::DType t) { return t == ir::DType::F32 || t == ir::DType::F64 || t == ir::DType::I32; },
      [&](ir::Graph& h, NodeId id, const ir::Shape& s, std::vector<NodeId>& extra) {
        int64_t k = s.sizes().back();
        ir::DType t = s.dtype();
        for (int64_t i = rng.range(2, 3); i > 0; --i) {
          ir::Shape ws = ir::Shape::of(std::vector<int64_t>{k, rng.range(1, 5)}, t);
          NodeId w = constant_node(h, ws, [&](int64_t) {
            return ir::is_float(t) ? rng.uniform(-1, 1) : double(rng.range(-3, 3));
          });
          extra.push_back(h.add_inferred(ir::Op(OpKind::MatMul), {id, w}));
          if (rng.chance(0.1)) extra.push_back(w); // read twice: must not be concatenated
        }
      });
}

/// rg with, after about half of its non-bool, non-complex values x of rank >= 1, a custom_fn of
/// x as an extra output: the body adds its Inputs (x twice, or x once, doubled), and sometimes
/// calls a custom_fn of its own.
Subject plant_custom_fn(const RandomGraph& rg, Rng& rng, bool outputs_only = false) {
  return plant_after(
      rg, rng, 0.5, outputs_only,
      [](ir::DType t) { return t != ir::DType::Bool && !ir::is_complex(t); },
      [&](ir::Graph& h, NodeId id, const ir::Shape& s, std::vector<NodeId>& extra) {
        auto body = [&](bool two) {
          ir::Graph f("f");
          NodeId a = f.input("a", s);
          NodeId b = two ? f.input("b", s) : a;
          f.set_outputs({f.add(a, b)});
          return f;
        };
        bool two = rng.chance(0.5);
        ir::Graph f = body(two);
        if (rng.chance(0.3)) { // nested: the body's value goes through a custom_fn again
          NodeId v = f.outputs[0];
          f.set_outputs({f.custom_fn({v}, body(false))});
        }
        extra.push_back(two ? h.custom_fn({id, id}, f) : h.custom_fn({id}, f));
      });
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
  if (pass == "shard_propagate") return plant_shards(rg, rng);
  if (pass == "inline_custom_fn") return plant_custom_fn(rg, rng);
  if (pass == "param_specialize") return specialize_some(rg, rng);
  if (pass == "constant_fold") return bake_leaves(rg, rng, 0.6);
  if (pass == "algebraic_simplify") return plant_identities(rg, rng);
  if (pass == "cse") return plant_duplicates(rg, rng);
  if (pass == "fuse_matmul_bias_act") return plant_bias_act(rg, rng);
  if (pass == "fuse_residual_norm") return plant_residual_norm(rg, rng);
  if (pass == "fuse_swiglu") return plant_swiglu(rg, rng);
  if (pass == "fuse_shared_matmul") return plant_shared_matmul(rg, rng);
  if (pass == "conv_as_matmul") return plant_conv(rg, rng);
  return Subject{rg.graph, feeds_by_name(rg.graph, rg.leaves), {}}; // decompose, dce
}

/// Everything at once, for the pipeline: some leaves baked, identities, duplicates, bias adds,
/// residual norms, SwiGLUs and shared products planted, some params given values.
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
  step.graph = plant_residual_norm(step, rng, true).graph;
  step.graph = plant_swiglu(step, rng, true).graph;
  step.graph = plant_shared_matmul(step, rng, true).graph;
  step.graph = plant_conv(step, rng, true).graph;
  if (rng.chance(0.5)) step.graph = plant_custom_fn(step, rng, true).graph;
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
  std::map<std::string_view, uint64_t> ran, fired; // by pass
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
    if (seed % 3 == 0) opts.fuse = passes::FuseOptions::all();
    opts.conv_as_matmul = seed % 2 == 1;
    std::string problems;
    try {
      // Within rounding when a pass ran that does not keep values bit for bit.
      bool rounding = false;
      for (const passes::PassRun& r : passes::compile_pipeline(g, opts)) {
        rounding = rounding || (r.changed && !passes::find_pass(r.name)->exact);
        ++ran[r.name];
        fired[r.name] += r.changed;
      }
      problems = compare_graphs(s.graph, want, g, s.feeds, rounding);
      if (interface_of(g) != interface_of(s.graph, s.opts.params))
        problems += "the inputs and params the caller feeds changed\n";
    } catch (const std::exception& e) {
      problems = std::string("the pipeline threw: ") + e.what() + "\n";
    }
    shrunk += g.len() < s.graph.len();
    if (problems.empty()) continue;
    if (++failed <= kReportedFailures)
      FAIL_CHECK("random graph seed "
                 << seed << std::string(opts.decompose ? " (decompose on)" : "")
                 << std::string(seed % 3 == 0 ? " (every fusion on)" : "") << ":\n"
                 << problems << "before:\n"
                 << ir::to_text(s.graph) << "after:\n"
                 << ir::to_text(g));
  }
  MESSAGE("pipeline: " << graphs << " random graphs in " << seconds_since(t0) << " s, " << shrunk
                       << " got smaller, " << failed << " failed");
  CHECK(failed == 0);
  CHECK(graphs >= 50);
  CHECK(shrunk * 2 >= graphs);
  // The fusions find their patterns among everything else the other passes did.
  for (std::string_view pass : {"conv_as_matmul", "fuse_shared_matmul", "fuse_swiglu",
                                "fuse_matmul_bias_act", "fuse_residual_norm"}) {
    MESSAGE(pass << " ran on " << ran[pass] << " graphs and changed " << fired[pass]);
    INFO(pass);
    CHECK(fired[pass] * 10 >= ran[pass]);
  }
}
