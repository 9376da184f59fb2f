// src/passes/fuse_matmul_bias_act.cpp -- matmul, then a bias add, then maybe an activation,
// become one fused_matmul_bias_act node.
//
// Assumes a verified graph. Fuses act(x @ w + bias) (or without act) when the product and the
// sum are floats of the same shape and dtype, the bias is one value per output column ([N] with
// leading 1s: what a GEMM adds in its store; a full-shape addend, e.g. a residual or a
// gradient's sum, would make the fused node an interpreter step, 60x slower in the BERT layer's
// backward than the product and an element-wise add), the product's only reader is the add, and the
// activation (default attributes) is the add's only reader; otherwise it fuses what it can (matmul
// + add) or nothing. Guarantees the same values within rounding: the fused kernel adds the bias
// before rounding the product. Leaves no dead nodes behind; the fused node takes the label and
// source line of the last node it replaces.
#include "rlx/passes.hpp"

#include "rewriter.hpp"

#include <optional>
#include <vector>

namespace rlx::passes {
namespace {

/// One match: the nodes it absorbs (the matmul, and the add when an activation follows), its
/// last node (the add or the activation), the product's node and the bias operand of the add.
struct Chain {
  std::vector<ir::NodeId> absorbed;
  ir::NodeId last, matmul, bias;
  std::optional<ir::Activation> act;
};

/// Whether `bias` is one value per column of an `out`-shaped product: [N] with leading 1s.
bool per_column(const ir::Shape& bias, const ir::Shape& out) {
  const std::size_t r = bias.rank();
  if (r == 0 || r > out.rank() || bias.dims().back() != out.dims().back()) return false;
  for (std::size_t i = 0; i + 1 < r; ++i)
    if (bias.dim(int64_t(i)) != ir::Dim(1)) return false;
  return true;
}

/// The chain whose add is node `add`, if it is one (without its activation).
std::optional<Chain> match_add(const ir::Graph& g, const ir::Node& add,
                               const std::vector<std::size_t>& reads) {
  if (add.op.kind() != ir::OpKind::Add || !ir::is_float(add.shape.dtype())) return std::nullopt;
  for (std::size_t side = 0; side < 2; ++side) {
    const ir::Node& mm = g.node(add.inputs[side]);
    if (mm.op.kind() != ir::OpKind::MatMul || mm.shape != add.shape || reads[mm.id.index] != 1 ||
        !per_column(g.shape(add.inputs[1 - side]), add.shape))
      continue;
    return Chain{{mm.id}, add.id, mm.id, add.inputs[1 - side], std::nullopt};
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
  auto match = [&](const ir::Node& n) {
    std::optional<Chain> c = match_add(g, n, reads);
    if (!c || reads[n.id.index] != 1) return c;
    for (ir::NodeId user : g.users(n.id)) {
      if (!is_plain_activation_of(g.node(user), n.id)) continue;
      c->act = ir::as_activation(g.node(user).op.kind());
      c->absorbed.push_back(n.id);
      c->last = user;
    }
    return c;
  };
  auto emit = [&](Rewriter& rw, const ir::Node& last, const Chain& c) {
    const ir::Node& mm = g.node(c.matmul);
    ir::Op fused(ir::OpKind::FusedMatMulBiasAct, ir::FusedMatMulAttrs{c.act});
    rw.emit(last, std::move(fused), {rw[mm.inputs[0]], rw[mm.inputs[1]], rw[c.bias]});
  };
  return fuse_matches<Chain>(g, match, emit);
}

} // namespace rlx::passes
