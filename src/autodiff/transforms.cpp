// src/autodiff/transforms.cpp -- the transforms: reverse mode (vjp, grad_with_loss, grad),
// forward mode (jvp) and hvp, driving the rule tables over a copy of the forward graph.
#include "rules.hpp"

#include "ops/control.hpp"
#include "ops/decompose.hpp"

#include <string>

namespace rlx::autodiff {

namespace {

struct Prepared {
  ir::Graph g;
  std::vector<NodeId> map; ///< forward id -> id in g
};

/// A copy of `forward` in which the composites the table differentiates through their
/// decomposition are replaced by it.
Prepared prepare(const ir::Graph& forward, RuleKind (*rule_kind)(OpKind)) {
  Prepared p{ir::Graph(forward.name), {}};
  Builder b(p.g);
  p.map.reserve(forward.len());
  for (const Node& n : forward.nodes()) {
    std::vector<NodeId> ins;
    for (NodeId i : n.inputs) ins.push_back(p.map[i.index]);
    if (rule_kind(n.op.kind()) == RuleKind::Decompose) {
      std::optional<NodeId> r = ops::decompose_node(b, n, ins);
      RLX_CHECK(r.has_value(), "autodiff: ", n.op.name(),
                " is listed as decomposed but has no rule");
      p.map.push_back(*r);
      continue;
    }
    NodeId id = p.g.append_node(n.op, std::move(ins), n.shape, n.name);
    p.g.node_mut(id).loc = n.loc;
    p.map.push_back(id);
  }
  std::vector<NodeId> outs;
  for (NodeId o : forward.outputs) outs.push_back(p.map[o.index]);
  p.g.set_outputs(std::move(outs));
  return p;
}

void check_ids(const ir::Graph& g, std::span<const NodeId> ids, std::string_view what) {
  for (NodeId id : ids) {
    if (id.index >= g.len())
      fail(ErrorKind::Value, what, ": node %", id.index, " is not in graph \"", g.name, "\" (",
           g.len(), " nodes)");
    if (!differentiable_dtype(g.shape(id).dtype()))
      fail(ErrorKind::Type, what, ": node %", id.index, " is ", ir::short_str(g.shape(id)),
           "; derivatives are taken with respect to floating-point values only");
  }
}

std::string leaf_name(const ir::Graph& g, NodeId id, std::string_view what) {
  const Node& n = g.node(id);
  if (!ir::has_trait(n.op.kind(), ir::kFed))
    fail(ErrorKind::Value, what, ": node %", id.index, " is a ", n.op.name(),
         "; tangents are fed to Inputs and Params only");
  return n.op.attrs<ir::LeafAttrs>().name;
}

/// Reverse mode over g's nodes below n_fwd, seeded with the given cotangents of the outputs.
/// Nodes below `first` other than the wrt nodes are constants.
std::vector<Grad> backward(ir::Graph& g, std::size_t n_fwd, std::span<const NodeId> wrt,
                           std::span<const std::pair<NodeId, NodeId>> seeds,
                           std::size_t first = 0) {
  Builder b(g);
  std::vector<char> needs(n_fwd, 0);
  for (NodeId w : wrt) needs[w.index] = 1;
  for (std::size_t i = first; i < n_fwd; ++i)
    for (NodeId in : g.nodes()[i].inputs) needs[i] |= needs[in.index];
  std::vector<Grad> cot(n_fwd);
  for (const auto& [out, d] : seeds) cot[out.index] = b.add_opt(cot[out.index], d);
  // Nodes below `first` are constants or wrt nodes, whose cotangents are complete there.
  for (std::size_t i = n_fwd; i-- > first;) {
    if (!cot[i] || !needs[i]) continue;
    const Node n = g.nodes()[i]; // a copy: rules append nodes
    OpKind k = n.op.kind();
    if (is_non_differentiable(k)) continue;
    const VjpEntry* e = vjp_entry(k);
    if (!e)
      fail(ErrorKind::Unsupported, "autodiff: no VJP rule for op ", n.op.name(), " (node %", i,
           ")");
    if (e->how == RuleKind::ZeroGrad) continue;
    RLX_CHECK(e->fn != nullptr, "autodiff: ", n.op.name(), " was not decomposed");
    std::vector<char> want(n.inputs.size());
    bool any = false;
    for (std::size_t j = 0; j < n.inputs.size(); ++j) {
      want[j] = needs[n.inputs[j].index] && differentiable_dtype(g.shape(n.inputs[j]).dtype());
      any |= want[j] != 0;
    }
    if (!any) continue;
    std::vector<Grad> grads = e->fn(b, n, *cot[i], want);
    RLX_CHECK(grads.size() == n.inputs.size(), "autodiff: VJP of ", n.op.name(), " gave ",
              grads.size(), " cotangents for ", n.inputs.size(), " operands");
    for (std::size_t j = 0; j < n.inputs.size(); ++j) {
      if (!want[j] || !grads[j]) continue;
      NodeId src = n.inputs[j];
      RLX_CHECK(g.shape(*grads[j]) == g.shape(src), "autodiff: VJP of ", n.op.name(),
                " gave operand ", j, " a cotangent ", ir::short_str(g.shape(*grads[j])), " for ",
                ir::short_str(g.shape(src)));
      cot[src.index] = b.add_opt(cot[src.index], grads[j]);
    }
  }
  std::vector<Grad> out;
  for (NodeId w : wrt) out.push_back(cot[w.index]);
  return out;
}

/// Forward mode over g's nodes [begin, end): tan[i] becomes the tangent of node i (nullopt:
/// zero) from the tangents of its operands. tan has an entry per node below end.
void forward_walk(ir::Graph& g, std::vector<Grad>& tan, std::size_t begin, std::size_t end) {
  Builder b(g);
  for (std::size_t i = begin; i < end; ++i) {
    const Node n = g.nodes()[i];
    OpKind k = n.op.kind();
    if (ir::has_trait(k, ir::kLeaf) || is_non_differentiable(k)) continue;
    std::vector<Grad> t;
    bool any = false;
    for (NodeId in : n.inputs) {
      t.push_back(differentiable_dtype(g.shape(in).dtype()) ? tan[in.index] : std::nullopt);
      any |= t.back().has_value();
    }
    if (!any || !differentiable_dtype(n.shape.dtype())) continue;
    const JvpEntry* e = jvp_entry(k);
    if (!e)
      fail(ErrorKind::Unsupported, "autodiff: no JVP rule for op ", n.op.name(), " (node %", i,
           ")");
    Grad r;
    if (e->how == RuleKind::Linear) {
      std::vector<NodeId> ops;
      for (std::size_t j = 0; j < n.inputs.size(); ++j) {
        NodeId in = n.inputs[j];
        ops.push_back(!differentiable_dtype(g.shape(in).dtype()) ? in
                      : t[j]                                     ? *t[j]
                                                                 : b.zeros(g.shape(in)));
      }
      r = b.op(n.op, std::move(ops));
    } else if (e->how == RuleKind::Rule) {
      r = e->fn(b, n, t);
    } else {
      RLX_CHECK(e->how != RuleKind::Decompose, "autodiff: ", n.op.name(), " was not decomposed");
      continue;
    }
    if (!r) continue;
    RLX_CHECK(g.shape(*r) == n.shape, "autodiff: JVP of ", n.op.name(), " gave a tangent ",
              ir::short_str(g.shape(*r)), " for ", ir::short_str(n.shape));
    tan[i] = r;
  }
}

ir::Graph reverse(const ir::Graph& forward, std::span<const NodeId> wrt, bool keep_primals,
                  std::string_view what) {
  check_ids(forward, wrt, what);
  Prepared p = prepare(forward, vjp_rule_kind);
  ir::Graph& g = p.g;
  std::size_t n_fwd = g.len();
  std::vector<NodeId> outs = g.outputs, w;
  for (NodeId id : wrt) w.push_back(p.map[id.index]);
  std::vector<std::pair<NodeId, NodeId>> seeds;
  for (std::size_t k = 0; k < outs.size(); ++k) {
    std::string name = outs.size() == 1 ? "d_output" : "d_output_" + std::to_string(k);
    NodeId d = g.input(name, g.shape(outs[k]));
    if (differentiable_dtype(g.shape(outs[k]).dtype())) seeds.emplace_back(outs[k], d);
  }
  std::vector<Grad> grads = backward(g, n_fwd, w, seeds);
  Builder b(g);
  std::vector<NodeId> result = keep_primals ? outs : std::vector<NodeId>{};
  for (std::size_t i = 0; i < w.size(); ++i)
    result.push_back(grads[i] ? *grads[i] : b.zeros(g.shape(w[i])));
  g.set_outputs(std::move(result));
  share_scan_trajectories(g);
  return std::move(g);
}

} // namespace

NodeId vjp_of(ir::Graph& g, const ir::Op& op, std::span<const NodeId> operands, NodeId dy,
              std::size_t which) {
  std::size_t first = g.len();
  Builder b(g);
  std::vector<NodeId> ins(operands.begin(), operands.end());
  NodeId y;
  if (vjp_rule_kind(op.kind()) == RuleKind::Decompose) {
    std::vector<Shape> shapes;
    for (NodeId i : ins) shapes.push_back(g.shape(i));
    Node n{NodeId(uint32_t(g.len())), op, ins, *ir::infer_shape(op, shapes), std::nullopt, {}};
    y = *ops::decompose_node(b, n, ins);
  } else {
    y = b.op(op, ins);
  }
  RLX_CHECK(g.shape(dy) == g.shape(y), "vjp_of: the cotangent ", ir::short_str(g.shape(dy)),
            " does not match ", op.name(), "'s value ", ir::short_str(g.shape(y)));
  NodeId w = ins[which];
  std::pair<NodeId, NodeId> seed{y, dy};
  std::vector<Grad> r = backward(g, y.index + 1, std::span(&w, 1), std::span(&seed, 1), first);
  return r[0] ? *r[0] : b.zeros(g.shape(w));
}

std::vector<Grad> vjp_inlined(ir::Graph& g, const Node& n, NodeId dy, std::span<const char> want) {
  std::size_t first = g.len();
  NodeId y = ir::detail::inline_custom_fn_call(g, n.op, n.inputs, appender(g, n, vjp_rule_kind));
  std::vector<NodeId> w;
  for (std::size_t j = 0; j < n.inputs.size(); ++j)
    if (want[j]) w.push_back(n.inputs[j]);
  std::pair<NodeId, NodeId> seed{y, dy};
  std::vector<Grad> r = backward(g, g.len(), w, std::span(&seed, 1), first);
  // An operand given twice gets its whole cotangent once (the caller sums per operand).
  std::vector<Grad> out(n.inputs.size());
  std::size_t k = 0;
  for (std::size_t j = 0; j < n.inputs.size(); ++j) {
    if (!want[j]) continue;
    Grad gj = r[k++];
    bool seen = false;
    for (std::size_t i = 0; i < j; ++i) seen |= want[i] && n.inputs[i] == n.inputs[j];
    if (!seen) out[j] = gj ? gj : Grad(Builder(g).zeros(g.shape(n.inputs[j])));
  }
  return out;
}

Grad jvp_inlined(ir::Graph& g, const Node& n, std::span<const Grad> t) {
  std::size_t first = g.len();
  NodeId y = ir::detail::inline_custom_fn_call(g, n.op, n.inputs, appender(g, n, jvp_rule_kind));
  std::size_t end = g.len();
  std::vector<Grad> tan(end);
  for (std::size_t j = 0; j < n.inputs.size(); ++j)
    if (t[j]) tan[n.inputs[j].index] = t[j];
  forward_walk(g, tan, first, end);
  return tan[y.index];
}

ir::detail::AppendFn appender(ir::Graph& g, const Node& n, RuleKind (*rule_kind)(OpKind)) {
  return [&g, loc = n.loc, rule_kind](const ir::Op& op, std::vector<NodeId> ins, Shape s) {
    if (rule_kind(op.kind()) == RuleKind::Decompose) { // as prepare() does
      Builder b(g);
      Node like{NodeId(uint32_t(g.len())), op, ins, s, std::nullopt, loc};
      std::optional<NodeId> r = ops::decompose_node(b, like, ins);
      RLX_CHECK(r.has_value(), "autodiff: ", op.name(), " is listed as decomposed but has no rule");
      return *r;
    }
    NodeId id = g.append_node(op, std::move(ins), std::move(s), std::nullopt);
    g.node_mut(id).loc = loc;
    return id;
  };
}

ir::Graph vjp(const ir::Graph& forward, std::span<const NodeId> wrt) {
  if (forward.outputs.empty())
    fail(ErrorKind::Value, "vjp: graph \"", forward.name, "\" has no outputs");
  return reverse(forward, wrt, true, "vjp");
}

ir::Graph grad_with_loss(const ir::Graph& forward, std::span<const NodeId> wrt) {
  if (forward.outputs.size() != 1)
    fail(ErrorKind::Value, "grad_with_loss: graph \"", forward.name,
         "\" must have exactly one output (the loss), it has ", forward.outputs.size());
  return reverse(forward, wrt, true, "grad_with_loss");
}
ir::Graph grad_with_loss(const ir::Graph& forward, std::initializer_list<NodeId> wrt) {
  return grad_with_loss(forward, std::span<const NodeId>(wrt.begin(), wrt.size()));
}

ir::Graph grad(const ir::Graph& forward, std::span<const NodeId> wrt) {
  if (forward.outputs.size() != 1)
    fail(ErrorKind::Value, "grad: graph \"", forward.name,
         "\" must have exactly one output (the loss), it has ", forward.outputs.size());
  return reverse(forward, wrt, false, "grad");
}
ir::Graph grad(const ir::Graph& forward, std::initializer_list<NodeId> wrt) {
  return grad(forward, std::span<const NodeId>(wrt.begin(), wrt.size()));
}

ir::Graph jvp(const ir::Graph& forward, std::span<const NodeId> tangent_for) {
  check_ids(forward, tangent_for, "jvp");
  std::vector<std::string> names;
  for (NodeId id : tangent_for) names.push_back(leaf_name(forward, id, "jvp"));
  Prepared p = prepare(forward, jvp_rule_kind);
  ir::Graph& g = p.g;
  Builder b(g);
  std::size_t n_fwd = g.len();
  std::vector<Grad> tan(n_fwd);
  for (std::size_t i = 0; i < tangent_for.size(); ++i) {
    NodeId id = p.map[tangent_for[i].index];
    tan[id.index] = g.input("tangent_" + names[i], g.shape(id));
  }
  forward_walk(g, tan, 0, n_fwd);
  std::vector<NodeId> outs = g.outputs;
  std::vector<NodeId> result = outs;
  for (NodeId o : outs) result.push_back(tan[o.index] ? *tan[o.index] : b.zeros(g.shape(o)));
  g.set_outputs(std::move(result));
  return std::move(g);
}
ir::Graph jvp(const ir::Graph& forward, std::initializer_list<NodeId> tangent_for) {
  return jvp(forward, std::span<const NodeId>(tangent_for.begin(), tangent_for.size()));
}

ir::Graph hvp(const ir::Graph& forward, std::span<const NodeId> wrt) {
  std::vector<std::string> names;
  for (NodeId id : wrt) {
    check_ids(forward, std::span(&id, 1), "hvp");
    names.push_back(leaf_name(forward, id, "hvp"));
  }
  ir::Graph gg = grad_with_loss(forward, wrt);
  std::vector<NodeId> at;
  for (const std::string& name : names) at.push_back(*gg.node_id_by_name(name));
  return jvp(gg, at);
}
ir::Graph hvp(const ir::Graph& forward, std::initializer_list<NodeId> wrt) {
  return hvp(forward, std::span<const NodeId>(wrt.begin(), wrt.size()));
}

} // namespace rlx::autodiff
