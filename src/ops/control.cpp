// src/ops/control.cpp -- shape rules of the control family (custom_fn, scan and its backward
// companions) and their body conventions
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

// ---- scan, scan_backward, scan_backward_xs

/// The Inputs of `body` in id order.
std::vector<NodeId> body_inputs(const Graph& body) {
  std::vector<NodeId> out;
  for (const Node& n : body.nodes())
    if (n.op.kind() == OpKind::Input) out.push_back(n.id);
  return out;
}

/// `s` without its leading axis (a per-step slice of xs).
Shape drop_leading(const Shape& s) {
  return Shape(std::vector<Dim>(s.dims().begin() + 1, s.dims().end()), s.dtype());
}

/// [rows, *s].
Shape stacked(int64_t rows, const Shape& s) {
  std::vector<Dim> dims{Dim(rows)};
  dims.insert(dims.end(), s.dims().begin(), s.dims().end());
  return Shape(std::move(dims), s.dtype());
}

void check_length(const Op& op, std::span<const Shape> in, int64_t length, int64_t k) {
  if (length < 1) shape_error(op, in, "length must be at least 1, got ", length);
  if (k < 0 || k > length)
    shape_error(op, in, "num_checkpoints must be in [0, length = ", length, "], got ", k);
}

/// Each xs operand is [length, *per_step]; returns the per-step shapes.
std::vector<Shape> per_step_shapes(const Op& op, std::span<const Shape> in, std::size_t first,
                                   std::size_t count, int64_t length) {
  std::vector<Shape> out;
  for (std::size_t i = 0; i < count; ++i) {
    const Shape& x = in[first + i];
    if (x.rank() == 0)
      shape_error(op, in, "xs[", i, "] is ", short_str(x), "; each xs needs a leading axis of ",
                  "size length = ", length);
    if (x.dims()[0].is_static() && x.dims()[0].size() != length)
      shape_error(op, in, "xs[", i, "] is ", short_str(x),
                  ", its leading dim must be length = ", length);
    out.push_back(drop_leading(x));
  }
  return out;
}

/// The forward body's Inputs [carry, bcast..., x_t...] against the operands; its output against
/// the carry.
void check_scan_body(const Op& op, std::span<const Shape> in, const Graph& body,
                     std::string_view what, const Shape& carry, std::span<const Shape> rest) {
  check_body(op, in, body, what, 1);
  std::vector<NodeId> inputs = body_inputs(body);
  if (inputs.size() != 1 + rest.size())
    shape_error(op, in, what, " @", body.name, " has ", inputs.size(), " Input",
                inputs.size() == 1 ? "" : "s", ", expected ", 1 + rest.size(),
                " (the carry, then one per bcast and per xs)");
  check_like(op, in, body.shape(inputs[0]), carry, std::string(what) + "'s carry Input");
  for (std::size_t i = 0; i < rest.size(); ++i)
    check_like(op, in, body.shape(inputs[1 + i]), rest[i],
               std::string(what) + "'s Input " + std::to_string(1 + i));
  check_like(op, in, body.shape(body.outputs[0]), carry,
             std::string(what) + "'s output (the next carry)");
}

Shape scan_rule(const Op& op, std::span<const Shape> in) {
  const auto& a = op.attrs<ScanAttrs>();
  if (a.num_bcast < 0 || a.num_xs < 0 || int64_t(in.size()) != 1 + a.num_bcast + a.num_xs)
    shape_error(op, in, "takes 1 + num_bcast (", a.num_bcast, ") + num_xs (", a.num_xs,
                ") operands, got ", in.size());
  check_length(op, in, a.length, a.num_checkpoints);
  std::vector<Shape> rest(in.begin() + 1, in.begin() + 1 + a.num_bcast);
  for (Shape& s :
       per_step_shapes(op, in, std::size_t(1 + a.num_bcast), std::size_t(a.num_xs), a.length))
    rest.push_back(std::move(s));
  check_scan_body(op, in, a.body.get(), "body", in[0], rest);
  if (!a.save_trajectory) return in[0];
  return stacked(scan_saved_rows(a.length, a.num_checkpoints), in[0]);
}

Shape scan_backward_rule(const Op& op, std::span<const Shape> in) {
  const auto& a = op.attrs<ScanBackwardAttrs>();
  if (a.num_xs < 0 || a.num_bcast < 0 || int64_t(in.size()) != 3 + a.num_bcast + a.num_xs)
    shape_error(op, in, "takes 3 + num_bcast (", a.num_bcast, ") + num_xs (", a.num_xs,
                ") operands [init, trajectory, upstream, bcast..., xs...], got ", in.size());
  check_length(op, in, a.length, a.num_checkpoints);
  const Shape& carry = in[0];
  // What each step sees: the bcasts whole, then one row of each xs.
  std::vector<Shape> steps(in.begin() + 3, in.begin() + 3 + a.num_bcast);
  for (Shape& s :
       per_step_shapes(op, in, std::size_t(3 + a.num_bcast), std::size_t(a.num_xs), a.length))
    steps.push_back(std::move(s));
  check_like(op, in, in[1], stacked(scan_saved_rows(a.length, a.num_checkpoints), carry),
             "the trajectory");
  check_like(op, in, in[2], a.save_trajectory ? stacked(a.length, carry) : carry,
             "the upstream cotangent");
  const Graph& body = a.body_vjp.get();
  check_body(op, in, body, "body_vjp", 1 + steps.size());
  std::optional<NodeId> d_out = body_input(body, kDOutput);
  if (!d_out) shape_error(op, in, "body_vjp must have an Input named \"", kDOutput, "\"");
  check_like(op, in, body.shape(*d_out), carry, "body_vjp's Input \"d_output\"");
  std::vector<NodeId> inputs;
  for (NodeId id : body_inputs(body))
    if (id != *d_out) inputs.push_back(id);
  if (inputs.size() != steps.size() + 1)
    shape_error(op, in, "body_vjp has ", inputs.size(), " Inputs besides \"d_output\", expected ",
                steps.size() + 1, " (the carry, then one per bcast and per xs)");
  check_like(op, in, body.shape(inputs[0]), carry, "body_vjp's carry Input");
  check_like(op, in, body.shape(body.outputs[0]), carry, "body_vjp's output 0 (d carry)");
  for (std::size_t i = 0; i < steps.size(); ++i) {
    bool bcast = int64_t(i) < a.num_bcast;
    std::size_t k = bcast ? i : i - std::size_t(a.num_bcast);
    check_like(op, in, body.shape(inputs[1 + i]), steps[i],
               "body_vjp's Input " + std::to_string(1 + i));
    check_like(op, in, body.shape(body.outputs[1 + i]), steps[i],
               "body_vjp's output " + std::to_string(1 + i) + " (d " +
                   (bcast ? "bcast[" : "x_t of xs[") + std::to_string(k) + "])");
  }
  bool checkpointed = a.num_checkpoints > 0 && a.num_checkpoints < a.length;
  if (checkpointed && !a.forward_body)
    shape_error(op, in, "num_checkpoints ", a.num_checkpoints, " < length ", a.length,
                " needs a forward_body to recompute the carries between checkpoints");
  if (a.forward_body) check_scan_body(op, in, a.forward_body->get(), "forward_body", carry, steps);
  if (op.kind() == OpKind::ScanBackward) return carry;
  if (a.xs_idx < 0 || a.xs_idx >= a.num_bcast + a.num_xs)
    shape_error(op, in, "xs_idx ", a.xs_idx, " is out of range for ", a.num_xs, " xs",
                a.num_bcast ? " and " + std::to_string(a.num_bcast) + " bcasts" : "");
  return in[std::size_t(3 + a.xs_idx)];
}

} // namespace

int64_t scan_saved_rows(int64_t length, int64_t num_checkpoints) {
  return num_checkpoints > 0 && num_checkpoints < length ? num_checkpoints : length;
}

int64_t scan_segment_end(int64_t j, int64_t length, int64_t num_checkpoints) {
  int64_t k = scan_saved_rows(length, num_checkpoints);
  return (j + 1) * length / k;
}

namespace {} // namespace

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
  case OpKind::Scan:
    return scan_rule(op, in);
  case OpKind::ScanBackward:
  case OpKind::ScanBackwardXs:
    return scan_backward_rule(op, in);
  default:
    return std::nullopt;
  }
}

} // namespace rlx::ir::detail
