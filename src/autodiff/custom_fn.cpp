// src/autodiff/custom_fn.cpp -- the VJP and JVP rules of custom_fn: the user's vjp_body or
// jvp_body inlined with RLX's conventions, else fwd_body inlined and differentiated.
#include "rules.hpp"

#include "ops/control.hpp"

#include <string>

namespace rlx::autodiff {

namespace {

const std::string& leaf_name(const Node& n) { return n.op.attrs<ir::LeafAttrs>().name; }

/// Inline `body` into g, binding its Inputs: the primal inputs (id order) to n's operands, and
/// the named ones through `special` (which returns nullopt for names it does not know).
std::vector<NodeId>
inline_rule_body(ir::Graph& g, const Node& n, const ir::Graph& body, RuleKind (*rule_kind)(OpKind),
                 const std::function<std::optional<NodeId>(const Node&)>& special) {
  std::vector<NodeId> primals = ir::detail::body_primal_inputs(body);
  auto bound = [&](const Node& in) -> NodeId {
    for (std::size_t j = 0; j < primals.size(); ++j)
      if (primals[j] == in.id) return n.inputs[j];
    std::optional<NodeId> s = special(in);
    RLX_CHECK(s.has_value(), "custom_fn: body Input \"", leaf_name(in), "\" is not bound");
    return *s;
  };
  std::map<uint32_t, ir::Dim> subst;
  for (const Node& in : body.nodes())
    if (in.op.kind() == OpKind::Input) ir::detail::unify_dims(subst, in.shape, g.shape(bound(in)));
  return ir::detail::inline_graph(body, bound, subst, appender(g, n, rule_kind));
}

} // namespace

std::vector<Grad> vjp_custom_fn(Builder& b, const Node& n, NodeId dy, std::span<const char> want) {
  ir::Graph& g = b.graph();
  const auto& a = n.op.attrs<ir::CustomFnAttrs>();
  if (!a.vjp_body) return vjp_inlined(g, n, dy, want);
  std::vector<NodeId> outs = inline_rule_body(g, n, a.vjp_body->get(), vjp_rule_kind,
                                              [&](const Node& in) -> std::optional<NodeId> {
                                                if (leaf_name(in) == "primal_output") return n.id;
                                                if (leaf_name(in) == "d_output") return dy;
                                                return std::nullopt;
                                              });
  std::vector<Grad> grads(n.inputs.size());
  for (std::size_t j = 0; j < n.inputs.size(); ++j)
    if (want[j]) grads[j] = outs.at(j);
  return grads;
}

Grad jvp_custom_fn(Builder& b, const Node& n, std::span<const Grad> t) {
  ir::Graph& g = b.graph();
  const auto& a = n.op.attrs<ir::CustomFnAttrs>();
  if (!a.jvp_body) return jvp_inlined(g, n, t);
  std::vector<NodeId> outs = inline_rule_body(
      g, n, a.jvp_body->get(), jvp_rule_kind, [&](const Node& in) -> std::optional<NodeId> {
        const std::string& name = leaf_name(in);
        if (name == "primal_output") return n.id;
        for (std::size_t j = 0; j < n.inputs.size(); ++j)
          if (name == "tangent_" + std::to_string(j))
            return t[j] ? *t[j] : b.zeros(g.shape(n.inputs[j]));
        return std::nullopt;
      });
  return outs.at(0);
}

} // namespace rlx::autodiff
