// src/frontend/grad.cpp -- rlx::grad, value_and_grad, jvp and vmap on Tensor functions: trace the
// function (trace_graph, as rlx::jit does), transform the traced graph (rlx/autodiff.hpp), and
// record the transformed graph into the caller's lazy DAG (a Recorder) with the real arguments
// as its leaves.
#include "frontend/impl.hpp"

#include "rlx/autodiff.hpp"
#include "rlx/grad.hpp"

#include <algorithm>
#include <map>

namespace rlx::detail {

namespace {

using Leaves = std::map<std::string, Tensor, std::less<>>;

void check_args(std::span<const Tensor> args, std::string_view what, const Loc& loc) {
  for (std::size_t i = 0; i < args.size(); ++i) {
    check_defined(args[i], std::string(what) + " argument " + std::to_string(i), loc);
    if (!args[i].shape().is_static())
      fail(ErrorKind::Unsupported, what, ": argument ", i, " is ", ir::short_str(args[i].shape()),
           "; transforms of functions of dynamic shapes are not supported", at_loc(loc));
  }
}

/// Trace body on placeholders of the given shapes.
ExtractedGraph trace(std::span<const Shape> shapes, const TraceBody& body, std::string_view what,
                     const Loc& loc) {
  return trace_graph(shapes, body, std::string(what), what, loc, /*capture_outer=*/true);
}

/// The leaves every traced graph has: its arguments and the tensors it captured.
Leaves leaves_of(std::span<const Tensor> args, const ExtractedGraph& t) {
  Leaves leaves;
  for (std::size_t i = 0; i < args.size(); ++i) leaves["arg" + std::to_string(i)] = args[i];
  for (std::size_t j = 0; j < t.leaves.size(); ++j) {
    if (j < t.outer.size() && t.outer[j]) { // a value of the enclosing trace
      leaves["c" + std::to_string(j)] = Tensor(t.outer[j]);
      continue;
    }
    auto impl = std::make_shared<TensorImpl>();
    impl->shape = t.leaves[j]->shape();
    impl->buffer = t.leaves[j];
    leaves["c" + std::to_string(j)] = Tensor(std::move(impl));
  }
  return leaves;
}

/// Record g into the lazy DAG through a Recorder: its Inputs and Params are the named tensors
/// (the recorder's operands, in graph order), every other node is appended as it is.
std::vector<Tensor> apply_graph(const ir::Graph& g, const Leaves& leaves, const Loc& loc) {
  std::vector<Tensor> operands;
  std::vector<ir::NodeId> ids(g.len());
  for (const ir::Node& n : g.nodes()) {
    if (!ir::has_trait(n.op.kind(), ir::kFed)) continue;
    auto it = leaves.find(n.op.attrs<ir::LeafAttrs>().name);
    RLX_CHECK(it != leaves.end(), "transform: no tensor for leaf ",
              n.op.attrs<ir::LeafAttrs>().name);
    ids[n.id.index] = ir::NodeId(uint32_t(operands.size()));
    operands.push_back(it->second);
  }
  Recorder rec(operands, loc);
  for (const ir::Node& n : g.nodes()) {
    if (ir::has_trait(n.op.kind(), ir::kFed)) continue;
    std::vector<ir::NodeId> in;
    in.reserve(n.inputs.size());
    for (ir::NodeId x : n.inputs) in.push_back(ids[x.index]);
    ids[n.id.index] = rec.append(n.op, std::move(in), n.shape, loc);
  }
  std::vector<ir::NodeId> outs;
  for (ir::NodeId o : g.outputs) outs.push_back(ids[o.index]);
  return rec.results(outs);
}

std::vector<Shape> shapes_of(std::span<const Tensor> args) {
  std::vector<Shape> s;
  for (const Tensor& a : args) s.push_back(a.shape());
  return s;
}

Tensor ones_like_shape(const Shape& s) {
  Buffer b(s);
  for (int64_t i = 0; i < b.numel(); ++i) b.set_f64(i, 1.0);
  return Tensor(std::move(b));
}

} // namespace

/// "argument 1" or "argument 1 (leaf 2)": a flat leaf index as the user's arguments number it.
std::string leaf_name(std::size_t flat, std::span<const std::size_t> offsets) {
  std::size_t arg = 0;
  while (arg + 2 < offsets.size() && offsets[arg + 1] <= flat) ++arg;
  bool one = offsets.size() > arg + 1 && offsets[arg + 1] - offsets[arg] == 1;
  std::string s = "argument " + std::to_string(arg);
  if (!one) s += " (leaf " + std::to_string(flat - offsets[arg]) + ")";
  return s;
}

void check_argnums(std::span<const int> argnums, std::size_t n_args, const Loc& loc) {
  for (int k : argnums)
    if (k < 0 || std::size_t(k) >= n_args)
      fail(ErrorKind::Value, "grad: argnum ", k, " is out of range for a function of ", n_args,
           " arguments", at_loc(loc));
}

std::vector<Tensor> grad_call(std::span<const Tensor> args, const TraceBody& body,
                              std::span<const int> wrt_leaves, std::span<const std::size_t> offsets,
                              const Loc& loc) {
  check_args(args, "grad", loc);
  for (int k : wrt_leaves) {
    RLX_CHECK(k >= 0 && std::size_t(k) < args.size(), "grad: leaf ", k, " out of range");
    if (!ir::is_float(args[std::size_t(k)].dtype()))
      fail(ErrorKind::Type, "grad: ", leaf_name(std::size_t(k), offsets), " is ",
           ir::short_str(args[std::size_t(k)].shape()),
           "; gradients are taken with respect to floating-point tensors", at_loc(loc));
  }
  std::vector<Shape> shapes = shapes_of(args);
  ExtractedGraph t = trace(shapes, body, "grad", loc);
  if (t.graph.outputs.size() != 1)
    fail(ErrorKind::Value, "grad: the function must return one tensor (the loss), it returned ",
         t.graph.outputs.size(), at_loc(loc));
  const Shape& ls = t.graph.shape(t.graph.outputs[0]);
  if (ls.num_elements() != 1 || !ir::is_float(ls.dtype()))
    fail(ErrorKind::Value,
         "grad: the function must return one floating-point element, it returned ",
         ir::short_str(ls), at_loc(loc));
  std::vector<ir::NodeId> wrt;
  for (int k : wrt_leaves) wrt.push_back(*t.graph.input_id("arg" + std::to_string(k)));
  ir::Graph gg = autodiff::grad_with_loss(t.graph, wrt);
  Leaves leaves = leaves_of(args, t);
  leaves["d_output"] = ones_like_shape(ls);
  return apply_graph(gg, leaves, loc);
}

struct VjpCore {
  ir::Graph graph; // [outputs..., d/d float leaves...]
  Leaves leaves;
  std::vector<Shape> out_shapes;
  std::vector<Tensor> args;       // the primals (for the zeros of non-float leaves)
  std::vector<bool> is_float_arg; // per leaf
};

std::pair<std::vector<Tensor>, std::shared_ptr<const VjpCore>>
vjp_call(std::span<const Tensor> args, const TraceBody& body, const Loc& loc) {
  check_args(args, "vjp", loc);
  std::vector<Shape> shapes = shapes_of(args);
  ExtractedGraph t = trace(shapes, body, "vjp", loc);
  auto core = std::make_shared<VjpCore>();
  std::vector<ir::NodeId> wrt;
  for (std::size_t i = 0; i < args.size(); ++i) {
    core->args.push_back(args[i]);
    core->is_float_arg.push_back(ir::is_float(args[i].dtype()));
    if (core->is_float_arg.back()) wrt.push_back(*t.graph.input_id("arg" + std::to_string(i)));
  }
  for (ir::NodeId o : t.graph.outputs) core->out_shapes.push_back(t.graph.shape(o));
  core->leaves = leaves_of(args, t);
  std::vector<Tensor> outs = apply_graph(t.graph, core->leaves, loc);
  core->graph = autodiff::vjp(t.graph, wrt);
  return {std::move(outs), std::move(core)};
}

std::vector<Tensor> vjp_pull(const VjpCore& core, std::span<const Tensor> cotangents,
                             const Loc& loc) {
  if (cotangents.size() != core.out_shapes.size())
    fail(ErrorKind::Value, "vjp: the pullback takes one cotangent per output (",
         core.out_shapes.size(), "), it got ", cotangents.size(), at_loc(loc));
  Leaves leaves = core.leaves;
  for (std::size_t i = 0; i < cotangents.size(); ++i) {
    check_defined(cotangents[i], "vjp cotangent " + std::to_string(i), loc);
    if (cotangents[i].shape() != core.out_shapes[i])
      fail(ErrorKind::Shape, "vjp: cotangent ", i, " is ", ir::short_str(cotangents[i].shape()),
           " but output ", i, " is ", ir::short_str(core.out_shapes[i]), at_loc(loc));
    leaves[cotangents.size() == 1 ? std::string("d_output") : "d_output_" + std::to_string(i)] =
        cotangents[i];
  }
  std::vector<Tensor> r = apply_graph(core.graph, leaves, loc);
  std::vector<Tensor> grads;
  std::size_t next = core.out_shapes.size();
  for (std::size_t i = 0; i < core.args.size(); ++i)
    grads.push_back(core.is_float_arg[i] ? r[next++] : zeros_like(core.args[i], loc));
  return grads;
}

Tensor move_axis_to_front(const Tensor& t, int64_t axis, const Loc& loc) {
  int64_t r = t.ndim();
  if (axis < -r || axis >= r)
    fail(ErrorKind::Value, "vmap: in_axes ", axis, " is out of range for ",
         ir::short_str(t.shape()), at_loc(loc));
  if (axis < 0) axis += r;
  if (axis == 0) return t;
  Dims perm{axis};
  for (int64_t i = 0; i < r; ++i)
    if (i != axis) perm.push_back(i);
  return t.permute(perm, loc);
}

std::vector<Tensor> jvp_call(std::span<const Tensor> primals, std::span<const Tensor> tangents,
                             const TraceBody& body, const Loc& loc) {
  check_args(primals, "jvp", loc);
  check_args(tangents, "jvp", loc);
  if (primals.size() != tangents.size())
    fail(ErrorKind::Value, "jvp: ", primals.size(), " primals but ", tangents.size(), " tangents",
         at_loc(loc));
  for (std::size_t i = 0; i < primals.size(); ++i)
    if (primals[i].shape() != tangents[i].shape() || !ir::is_float(primals[i].dtype()))
      fail(ErrorKind::Shape, "jvp: primal ", i, " is ", ir::short_str(primals[i].shape()),
           " and its tangent ", ir::short_str(tangents[i].shape()),
           "; they must be floating-point tensors of one shape", at_loc(loc));
  std::vector<Shape> shapes = shapes_of(primals);
  ExtractedGraph t = trace(shapes, body, "jvp", loc);
  std::vector<ir::NodeId> wrt;
  for (std::size_t i = 0; i < primals.size(); ++i)
    wrt.push_back(*t.graph.input_id("arg" + std::to_string(i)));
  ir::Graph gj = autodiff::jvp(t.graph, wrt);
  Leaves leaves = leaves_of(primals, t);
  for (std::size_t i = 0; i < tangents.size(); ++i)
    leaves["tangent_arg" + std::to_string(i)] = tangents[i];
  return apply_graph(gj, leaves, loc);
}

std::vector<Tensor> vmap_call(std::span<const Tensor> args, const TraceBody& body, const Loc& loc) {
  check_args(args, "vmap", loc);
  std::vector<Shape> shapes;
  std::vector<std::string> names;
  int64_t batch = -1;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const Shape& s = args[i].shape();
    if (s.rank() == 0 || (batch >= 0 && s.dims()[0].size() != batch))
      fail(ErrorKind::Shape, "vmap: argument ", i, " is ", ir::short_str(s),
           "; every argument needs a leading axis of one size (", batch < 0 ? 0 : batch, ")",
           at_loc(loc));
    batch = s.dims()[0].size();
    shapes.emplace_back(std::vector<ir::Dim>(s.dims().begin() + 1, s.dims().end()), s.dtype());
    names.push_back("arg" + std::to_string(i));
  }
  ExtractedGraph t = trace(shapes, body, "vmap", loc);
  ir::Graph gb = autodiff::vmap(t.graph, names, batch);
  return apply_graph(gb, leaves_of(args, t), loc);
}

} // namespace rlx::detail
