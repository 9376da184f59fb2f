// src/ops/control.cpp -- shape rule of the control family (custom_fn) and its body conventions
// (semantics in include/rlx/ir/ops.def).
#include "control.hpp"

#include "infer_common.hpp"
#include "rlx/ir/verify.hpp"

#include <algorithm>
#include <string>

namespace rlx::ir::detail {

namespace {

constexpr std::string_view kPrimalOutput = "primal_output";
constexpr std::string_view kDOutput = "d_output";
constexpr std::string_view kTangent = "tangent_";

const std::string& leaf_name(const Node& n) { return n.op.attrs<LeafAttrs>().name; }

/// The checks every body gets: it verifies, has no Params and has `outputs` outputs.
void check_body(const Op& op, std::span<const Shape> in, const Graph& body, std::string_view what,
                std::size_t outputs) {
  std::vector<std::string> problems = verify_all(body);
  if (!problems.empty())
    shape_error(op, in, what, " @", body.name, " does not verify: ", problems.front());
  for (const Node& n : body.nodes())
    if (n.op.kind() == OpKind::Param)
      shape_error(op, in, what, " @", body.name, " has a param \"", leaf_name(n),
                  "\"; a body receives its values as Inputs");
  if (body.outputs.size() != outputs)
    shape_error(op, in, what, " @", body.name, " must have ", outputs, " output",
                outputs == 1 ? "" : "s", ", it has ", body.outputs.size());
}

/// `have` (a body's Input or output) must agree with `want` (the operand's or result's shape).
void check_like(const Op& op, std::span<const Shape> in, const Shape& have, const Shape& want,
                std::string_view what) {
  if (!shapes_compatible(have, want))
    shape_error(op, in, what, " is ", short_str(have), ", expected ", short_str(want));
}

void check_vjp_body(const Op& op, std::span<const Shape> in, const Graph& body, const Shape& y,
                    const std::map<uint32_t, Dim>& subst) {
  check_body(op, in, body, "vjp_body", in.size());
  std::vector<NodeId> primals = body_primal_inputs(body);
  for (NodeId id : primals)
    if (leaf_name(body.node(id)).starts_with(kTangent))
      shape_error(op, in, "vjp_body's Input \"", leaf_name(body.node(id)),
                  "\" is named like a tangent; vjp_body takes the primal inputs, \"", kPrimalOutput,
                  "\" and \"", kDOutput, "\"");
  if (primals.size() != in.size())
    shape_error(op, in, "vjp_body has ", primals.size(), " primal Inputs (besides \"",
                kPrimalOutput, "\" and \"", kDOutput, "\"), expected ", in.size());
  for (std::string_view name : {kPrimalOutput, kDOutput}) {
    std::optional<NodeId> id = body_input(body, name);
    if (!id) shape_error(op, in, "vjp_body must have an Input named \"", name, "\"");
    check_like(op, in, substitute_dims(body.shape(*id), subst), y,
               "vjp_body's Input \"" + std::string(name) + "\"");
  }
  for (std::size_t i = 0; i < in.size(); ++i) {
    check_like(op, in, substitute_dims(body.shape(primals[i]), subst), in[i],
               "vjp_body's primal Input " + std::to_string(i));
    check_like(op, in, substitute_dims(body.shape(body.outputs[i]), subst), in[i],
               "vjp_body's output " + std::to_string(i) + " (the cotangent of operand " +
                   std::to_string(i) + ")");
  }
}

void check_jvp_body(const Op& op, std::span<const Shape> in, const Graph& body, const Shape& y,
                    const std::map<uint32_t, Dim>& subst) {
  check_body(op, in, body, "jvp_body", 1);
  std::vector<NodeId> primals = body_primal_inputs(body);
  for (NodeId id : primals)
    if (leaf_name(body.node(id)) == kDOutput)
      shape_error(op, in, "jvp_body has an Input \"", kDOutput,
                  "\"; jvp_body takes the primal inputs, \"tangent_<i>\" and \"", kPrimalOutput,
                  "\"");
  if (primals.size() != in.size())
    shape_error(op, in, "jvp_body has ", primals.size(), " primal Inputs (besides \"",
                kPrimalOutput, "\" and \"tangent_<i>\"), expected ", in.size());
  std::size_t tangents = 0;
  for (const Node& n : body.nodes())
    if (n.op.kind() == OpKind::Input && leaf_name(n).starts_with(kTangent)) ++tangents;
  for (std::size_t i = 0; i < in.size(); ++i) {
    std::string name = std::string(kTangent) + std::to_string(i);
    std::optional<NodeId> id = body_input(body, name);
    if (!id) shape_error(op, in, "jvp_body must have an Input named \"", name, "\"");
    check_like(op, in, substitute_dims(body.shape(*id), subst), in[i],
               "jvp_body's Input \"" + name + "\"");
    check_like(op, in, substitute_dims(body.shape(primals[i]), subst), in[i],
               "jvp_body's primal Input " + std::to_string(i));
  }
  if (tangents != in.size())
    shape_error(op, in, "jvp_body has ", tangents, " Inputs named tangent_*, expected tangent_0",
                " .. tangent_", in.size() - 1);
  if (std::optional<NodeId> p = body_input(body, kPrimalOutput))
    check_like(op, in, substitute_dims(body.shape(*p), subst), y,
               "jvp_body's Input \"" + std::string(kPrimalOutput) + "\"");
  check_like(op, in, substitute_dims(body.shape(body.outputs[0]), subst), y,
             "jvp_body's output (the tangent)");
}

Shape custom_fn_rule(const Op& op, std::span<const Shape> in) {
  const auto& a = op.attrs<CustomFnAttrs>();
  if (a.num_inputs != int64_t(in.size()))
    shape_error(op, in, "num_inputs is ", a.num_inputs, " but it has ", in.size(), " operands");
  const Graph& body = a.fwd_body.get();
  check_body(op, in, body, "fwd_body", 1);
  std::map<uint32_t, Dim> subst = custom_fn_unify(op, in);
  Shape y = substitute_dims(body.shape(body.outputs[0]), subst);
  for (const Dim& d : y.dims())
    if (d.is_dynamic() && !subst.count(d.symbol())) {
      bool outer = std::any_of(in.begin(), in.end(), [&](const Shape& s) {
        return std::find(s.dims().begin(), s.dims().end(), d) != s.dims().end();
      });
      if (!outer)
        shape_error(op, in, "fwd_body's output ", short_str(body.shape(body.outputs[0])),
                    " has the dim ", to_string(d), ", which its Inputs do not determine");
    }
  if (a.vjp_body) check_vjp_body(op, in, a.vjp_body->get(), y, subst);
  if (a.jvp_body) check_jvp_body(op, in, a.jvp_body->get(), y, subst);
  return y;
}

} // namespace

std::vector<NodeId> body_primal_inputs(const Graph& body) {
  std::vector<NodeId> out;
  for (const Node& n : body.nodes()) {
    if (n.op.kind() != OpKind::Input) continue;
    const std::string& name = leaf_name(n);
    if (name == kPrimalOutput || name == kDOutput) continue;
    if (name.starts_with(kTangent) && name.size() > kTangent.size() &&
        std::all_of(name.begin() + std::ptrdiff_t(kTangent.size()), name.end(),
                    [](char c) { return c >= '0' && c <= '9'; }))
      continue;
    out.push_back(n.id);
  }
  return out;
}

std::optional<NodeId> body_input(const Graph& body, std::string_view name) {
  return body.input_id(name);
}

std::map<uint32_t, Dim> custom_fn_unify(const Op& op, std::span<const Shape> in) {
  const Graph& body = op.attrs<CustomFnAttrs>().fwd_body.get();
  std::vector<NodeId> inputs;
  for (const Node& n : body.nodes())
    if (n.op.kind() == OpKind::Input) inputs.push_back(n.id);
  if (inputs.size() != in.size())
    shape_error(op, in, "fwd_body @", body.name, " has ", inputs.size(), " Input",
                inputs.size() == 1 ? "" : "s", ", the call gives ", in.size(), " operand",
                in.size() == 1 ? "" : "s");
  std::map<uint32_t, Dim> subst;
  for (std::size_t i = 0; i < in.size(); ++i) {
    const Shape& have = body.shape(inputs[i]);
    const Shape& want = in[i];
    auto mismatch = [&] {
      shape_error(op, in, "operand ", i, " is ", short_str(want), " but fwd_body's Input \"",
                  leaf_name(body.node(inputs[i])), "\" is ", short_str(have));
    };
    if (have.dtype() != want.dtype() || have.rank() != want.rank()) mismatch();
    for (std::size_t d = 0; d < have.rank(); ++d) {
      const Dim &h = have.dims()[d], &w = want.dims()[d];
      if (h.is_static()) {
        if (w.is_static() && w.size() != h.size()) mismatch();
        continue;
      }
      auto [it, fresh] = subst.emplace(h.symbol(), w);
      if (!fresh && !(it->second == w) && it->second.is_static() && w.is_static()) mismatch();
    }
  }
  return subst;
}

void unify_dims(std::map<uint32_t, Dim>& subst, const Shape& have, const Shape& want) {
  for (std::size_t d = 0; d < have.rank() && d < want.rank(); ++d)
    if (have.dims()[d].is_dynamic()) subst.emplace(have.dims()[d].symbol(), want.dims()[d]);
}

Shape substitute_dims(const Shape& shape, const std::map<uint32_t, Dim>& subst) {
  if (subst.empty()) return shape;
  std::vector<Dim> dims = shape.dims();
  for (Dim& d : dims)
    if (d.is_dynamic())
      if (auto it = subst.find(d.symbol()); it != subst.end()) d = it->second;
  return Shape(std::move(dims), shape.dtype());
}

Graph substitute_body(const Graph& body, const std::map<uint32_t, Dim>& subst) {
  Graph out = body;
  if (subst.empty()) return out;
  for (Node& n : out.nodes_mut()) n.shape = substitute_dims(n.shape, subst);
  return out;
}

std::vector<NodeId> inline_graph(const Graph& body,
                                 const std::function<NodeId(const Node&)>& bind_input,
                                 const std::map<uint32_t, Dim>& subst, const AppendFn& append) {
  // Only the nodes the outputs need (and every Input, so that bind_input sees them all).
  std::vector<char> live(body.len(), 0);
  for (NodeId o : body.outputs) live[o.index] = 1;
  for (std::size_t i = body.len(); i-- > 0;)
    if (live[i])
      for (NodeId in : body.nodes()[i].inputs) live[in.index] = 1;
  std::vector<NodeId> map(body.len());
  for (const Node& n : body.nodes()) {
    if (!live[n.id.index] && n.op.kind() != OpKind::Input) continue;
    if (n.op.kind() == OpKind::Input) {
      map[n.id.index] = bind_input(n);
      continue;
    }
    std::vector<NodeId> ins;
    ins.reserve(n.inputs.size());
    for (NodeId i : n.inputs) ins.push_back(map[i.index]);
    map[n.id.index] = append(n.op, std::move(ins), substitute_dims(n.shape, subst));
  }
  std::vector<NodeId> outs;
  for (NodeId o : body.outputs) outs.push_back(map[o.index]);
  return outs;
}

NodeId inline_custom_fn_call(const Graph& g, const Op& op, std::span<const NodeId> operands,
                             const AppendFn& append) {
  std::vector<Shape> shapes;
  for (NodeId id : operands) shapes.push_back(g.shape(id));
  std::map<uint32_t, Dim> subst = custom_fn_unify(op, shapes);
  std::size_t next = 0;
  auto bind = [&](const Node&) { return operands[next++]; };
  return inline_graph(op.attrs<CustomFnAttrs>().fwd_body.get(), bind, subst, append).at(0);
}

std::optional<Shape> infer_control(const Op& op, std::span<const Shape> in) {
  switch (op.kind()) {
  case OpKind::CustomFn:
    return custom_fn_rule(op, in);
  default:
    return std::nullopt;
  }
}

} // namespace rlx::ir::detail
