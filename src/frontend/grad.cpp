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
  return trace_graph(shapes, body, std::string(what), what, loc);
}

/// The leaves every traced graph has: its arguments and the tensors it captured.
Leaves leaves_of(std::span<const Tensor> args, const ExtractedGraph& t) {
  Leaves leaves;
  for (std::size_t i = 0; i < args.size(); ++i) leaves["arg" + std::to_string(i)] = args[i];
  for (std::size_t j = 0; j < t.leaves.size(); ++j) {
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

std::vector<Tensor> grad_call(std::span<const Tensor> args, const TraceBody& body,
                              std::span<const int> argnums, const Loc& loc) {
  check_args(args, "grad", loc);
  for (int k : argnums) {
    if (k < 0 || std::size_t(k) >= args.size())
      fail(ErrorKind::Value, "grad: argnum ", k, " is out of range for a function of ", args.size(),
           " arguments", at_loc(loc));
    if (!ir::is_float(args[std::size_t(k)].dtype()))
      fail(ErrorKind::Type, "grad: argument ", k, " is ",
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
  for (int k : argnums) wrt.push_back(*t.graph.input_id("arg" + std::to_string(k)));
  ir::Graph gg = autodiff::grad_with_loss(t.graph, wrt);
  Leaves leaves = leaves_of(args, t);
  leaves["d_output"] = ones_like_shape(ls);
  return apply_graph(gg, leaves, loc);
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
