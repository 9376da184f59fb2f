// src/autodiff/custom.cpp -- the VJP, JVP and batching rules of custom ops: the op's registered
// hook, traced on the shapes at hand (src/frontend/custom_op.cpp makes the graph) and inlined
// after the node, or an rlx::Error naming the op and the user's line when it has none.
#include "custom.hpp"

#include "ops/control.hpp"
#include "ops/custom.hpp"

#include <string>

namespace rlx::autodiff {

namespace {

using Entry = std::shared_ptr<const ir::detail::CustomOpEntry>;

const std::string& op_name_of(const Node& n) { return n.op.attrs<ir::CustomAttrs>().name; }

/// Inline a traced hook: its Inputs "arg<i>" take args[i].
std::vector<NodeId> inline_hook(const ir::Graph& body, std::span<const NodeId> args,
                                const ir::detail::AppendFn& append) {
  auto bind = [&](const Node& in) -> NodeId {
    const std::string& name = in.op.attrs<ir::LeafAttrs>().name;
    RLX_CHECK(name.rfind("arg", 0) == 0, "custom op hook: unexpected Input \"", name, "\"");
    std::size_t i = std::stoul(name.substr(3));
    RLX_CHECK(i < args.size(), "custom op hook: Input \"", name, "\" out of range");
    return args[i];
  };
  return ir::detail::inline_graph(body, bind, {}, append);
}

/// A hook's result must have the shape and dtype it stands for.
void check_result(const Node& n, std::string_view hook, std::string_view what, const Shape& got,
                  const Shape& want) {
  if (got != want)
    fail(ErrorKind::Shape, "custom op '", op_name_of(n), "': its ", hook, " hook returned ",
         ir::short_str(got), " for ", what, ", which is ", ir::short_str(want),
         ir::detail::at_source(n.loc));
}

} // namespace

std::vector<Grad> vjp_custom_op(Builder& b, const Node& n, NodeId dy, std::span<const char> want) {
  Entry e = ir::detail::require_custom_op(n.op, "its VJP", n.loc);
  if (!e->vjp)
    fail(ErrorKind::Unsupported, "custom op '", op_name_of(n),
         "' has no VJP registered (CustomOp::vjp), so no gradient flows through it",
         ir::detail::at_source(n.loc));
  ir::Graph& g = b.graph();
  std::vector<Shape> shapes;
  std::vector<NodeId> args(n.inputs.begin(), n.inputs.end());
  args.push_back(n.id);
  args.push_back(dy);
  for (NodeId a : args) shapes.push_back(g.shape(a));
  ir::Graph body = e->vjp(shapes, n.op.attrs<ir::CustomAttrs>().data.data, {});
  if (body.outputs.size() != n.inputs.size())
    fail(ErrorKind::Value, "custom op '", op_name_of(n), "': its vjp hook returned ",
         body.outputs.size(), " cotangents for ", n.inputs.size(), " operands",
         ir::detail::at_source(n.loc));
  std::vector<NodeId> outs = inline_hook(body, args, appender(g, n, vjp_rule_kind));
  std::vector<Grad> grads(n.inputs.size());
  for (std::size_t j = 0; j < n.inputs.size(); ++j) {
    if (!want[j]) continue;
    check_result(n, "vjp", "the cotangent of operand " + std::to_string(j), g.shape(outs[j]),
                 g.shape(n.inputs[j]));
    grads[j] = outs[j];
  }
  return grads;
}

Grad jvp_custom_op(Builder& b, const Node& n, std::span<const Grad> t) {
  Entry e = ir::detail::require_custom_op(n.op, "its JVP", n.loc);
  if (!e->jvp)
    fail(ErrorKind::Unsupported, "custom op '", op_name_of(n),
         "' has no JVP registered (CustomOp::jvp), so forward mode cannot pass through it",
         ir::detail::at_source(n.loc));
  ir::Graph& g = b.graph();
  std::vector<NodeId> args(n.inputs.begin(), n.inputs.end());
  for (std::size_t j = 0; j < n.inputs.size(); ++j)
    args.push_back(t[j] ? *t[j] : b.zeros(g.shape(n.inputs[j])));
  args.push_back(n.id);
  std::vector<Shape> shapes;
  for (NodeId a : args) shapes.push_back(g.shape(a));
  ir::Graph body = e->jvp(shapes, n.op.attrs<ir::CustomAttrs>().data.data, {});
  RLX_CHECK(body.outputs.size() == 1, "custom op jvp hook: one output expected");
  NodeId out = inline_hook(body, args, appender(g, n, jvp_rule_kind)).at(0);
  check_result(n, "jvp", "the tangent of its output", g.shape(out), n.shape);
  return out;
}

std::optional<NodeId> vmap_custom_op(Builder& b, const Node& n, std::span<const NodeId> ins,
                                     const std::vector<bool>& batched, int64_t batch) {
  Entry e = ir::detail::require_custom_op(n.op, "its batching", n.loc);
  if (!e->vmap) return std::nullopt;
  ir::Graph& g = b.graph();
  std::vector<Shape> shapes;
  for (NodeId a : ins) shapes.push_back(g.shape(a));
  ir::Graph body = e->vmap(shapes, n.op.attrs<ir::CustomAttrs>().data.data, batched);
  RLX_CHECK(body.outputs.size() == 1, "custom op vmap hook: one output expected");
  ir::detail::AppendFn append = [&g, loc = n.loc](const ir::Op& op, std::vector<NodeId> operands,
                                                  Shape s) {
    NodeId id = g.append_node(op, std::move(operands), std::move(s), std::nullopt);
    g.node_mut(id).loc = loc;
    return id;
  };
  NodeId out = inline_hook(body, ins, append).at(0);
  Ints want = n.shape.sizes();
  want.insert(want.begin(), batch);
  check_result(n, "vmap", "the batched output", g.shape(out), Shape::of(want, n.shape.dtype()));
  return out;
}

} // namespace rlx::autodiff
