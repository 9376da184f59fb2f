// src/passes/fuse_matmul_bias_act.cpp -- matmul, then a bias add, then maybe an activation,
// become one fused_matmul_bias_act node.
//
// Assumes a verified graph. Fuses act(x @ w + bias) (or without act) when the product and the
// sum are floats of the same shape and dtype (the bias broadcasts without changing them), the
// product's only reader is the add, and the activation (default attributes) is the add's only
// reader; otherwise it fuses what it can (matmul + add) or nothing. Guarantees the same values
// within rounding: the fused kernel adds the bias before rounding the product. Leaves no dead
// nodes behind; the fused node takes the label and source line of the last node it replaces.
#include "rlx/passes.hpp"

#include "rewriter.hpp"

#include <algorithm>
#include <optional>
#include <vector>

namespace rlx::passes {
namespace {

/// How many times each node is read (as an operand or an output).
std::vector<std::size_t> read_counts(const ir::Graph& g) {
  std::vector<std::size_t> reads(g.len(), 0);
  for (const ir::Node& n : g.nodes())
    for (ir::NodeId in : n.inputs) ++reads[in.index];
  for (ir::NodeId o : g.outputs) ++reads[o.index];
  return reads;
}

/// One match: the matmul, the add, the activation (if fused) and the bias operand of the add.
struct Chain {
  ir::NodeId matmul, add, bias;
  std::optional<ir::NodeId> act;
};

/// The chain whose add is node `add`, if it is one.
std::optional<Chain> match_add(const ir::Graph& g, const ir::Node& add,
                               const std::vector<std::size_t>& reads) {
  if (add.op.kind() != ir::OpKind::Add || !ir::is_float(add.shape.dtype())) return std::nullopt;
  for (std::size_t side = 0; side < 2; ++side) {
    const ir::Node& mm = g.node(add.inputs[side]);
    if (mm.op.kind() != ir::OpKind::MatMul || mm.shape != add.shape || reads[mm.id.index] != 1)
      continue;
    return Chain{mm.id, add.id, add.inputs[1 - side], std::nullopt};
  }
  return std::nullopt;
}

/// Whether node n is an activation with default attributes reading `x` (the fused kernel
/// applies the activation's default form).
bool is_plain_activation_of(const ir::Node& n, ir::NodeId x) {
  return ir::as_activation(n.op.kind()) && n.op == ir::Op(n.op.kind()) && n.inputs[0] == x;
}

} // namespace

bool fuse_matmul_bias_act(ir::Graph& g, const PassOptions&) {
  std::vector<std::size_t> reads = read_counts(g);
  // Match first: chains[i] is the chain that node i ends, and absorbed nodes vanish.
  std::vector<std::optional<Chain>> ends(g.len());
  std::vector<uint8_t> absorbed(g.len(), 0);
  for (const ir::Node& n : g.nodes()) {
    std::optional<Chain> c = match_add(g, n, reads);
    if (!c) continue;
    ir::NodeId last = c->add;
    if (reads[c->add.index] == 1)
      for (ir::NodeId user : g.users(c->add))
        if (is_plain_activation_of(g.node(user), c->add)) c->act = last = user;
    absorbed[c->matmul.index] = 1;
    if (c->act) absorbed[c->add.index] = 1;
    ends[last.index] = c;
  }
  if (std::none_of(ends.begin(), ends.end(), [](const auto& c) { return c.has_value(); }))
    return false;
  Rewriter rw(g);
  for (const ir::Node& n : g.nodes()) {
    if (absorbed[n.id.index]) continue;
    const std::optional<Chain>& c = ends[n.id.index];
    if (!c) {
      rw.copy(n);
      continue;
    }
    const ir::Node& mm = g.node(c->matmul);
    std::optional<ir::Activation> act;
    if (c->act) act = ir::as_activation(g.node(*c->act).op.kind());
    ir::Op fused(ir::OpKind::FusedMatMulBiasAct, ir::FusedMatMulAttrs{act});
    rw.emit(n, std::move(fused), {rw[mm.inputs[0]], rw[mm.inputs[1]], rw[c->bias]});
  }
  g = rw.finish();
  return true;
}

} // namespace rlx::passes
