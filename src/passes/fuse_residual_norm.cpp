// src/passes/fuse_residual_norm.cpp -- a residual add (and maybe a bias add), then a layer or rms
// norm over the last axis, become one fused_residual_ln / fused_residual_rms_norm node.
//
// Assumes a verified graph. Fuses norm(s) when the norm (layer_norm or rms_norm of a float dtype)
// is over the last axis and s is x + r, (x + r) + bias or (x + bias) + r (operands of the adds in
// either order), where x and r have the norm's exact shape and dtype (no broadcasting, no
// promotion), the bias is a vector along the last axis (as many elements as that axis, which is
// its own last one) of the same dtype, gamma and beta are such vectors too (the fused kernels'
// layout: the JIT's row kernel takes no other), and every add is read only by the next node of
// the pattern; otherwise it fuses nothing (a sum of x and a bias alone is no residual). Guarantees
// the same values within rounding: the fused kernel keeps the sum in double where the adds round it
// to the dtype (so a sum that overflows there may stay finite here). Leaves no dead nodes behind;
// the fused node takes the label and source line of the norm.
#include "rlx/passes.hpp"

#include "rewriter.hpp"

#include <optional>
#include <vector>

namespace rlx::passes {
namespace {

/// One match: the adds it absorbs, the norm (its last node), and the fused node's operands.
struct ResidualNorm {
  std::vector<ir::NodeId> absorbed;
  ir::NodeId last, x, residual;
  std::optional<ir::NodeId> bias;
};

class Matcher {
public:
  explicit Matcher(const ir::Graph& g) : g_(g), reads_(read_counts(g)) {}

  std::optional<ResidualNorm> match(const ir::Node& norm) const {
    ir::OpKind k = norm.op.kind();
    if (k != ir::OpKind::LayerNorm && k != ir::OpKind::RmsNorm) return std::nullopt;
    const ir::Shape& s = norm.shape;
    auto rank = int64_t(s.rank());
    int64_t axis = norm.op.attrs<ir::NormAttrs>().axis;
    if (rank == 0 || !ir::is_float(s.dtype()) || (axis != -1 && axis != rank - 1) ||
        !bias_for(norm.inputs[1], s) || !bias_for(norm.inputs[2], s))
      return std::nullopt;
    const ir::Node* sum = sole_add(norm.inputs[0], s);
    if (!sum) return std::nullopt;
    ir::NodeId p = sum->inputs[0], q = sum->inputs[1];
    ResidualNorm m{{sum->id}, norm.id, p, q, std::nullopt};
    if (g_.shape(p) == s && g_.shape(q) == s) {
      // x + r, or (x + bias) + r with the inner add on either side.
      for (ir::NodeId side : {p, q}) {
        const ir::Node* inner = sole_add(side, s);
        if (!inner) continue;
        std::optional<std::pair<ir::NodeId, ir::NodeId>> xb = full_and_bias(*inner);
        if (!xb) continue;
        ir::NodeId other = side == p ? q : p;
        m = ResidualNorm{{inner->id, sum->id}, norm.id, xb->first, other, xb->second};
        break;
      }
      return m;
    }
    // (x + r) + bias, the bias on either side.
    std::optional<std::pair<ir::NodeId, ir::NodeId>> pair_bias = full_and_bias(*sum);
    if (!pair_bias) return std::nullopt;
    const ir::Node* inner = sole_add(pair_bias->first, s);
    if (!inner || g_.shape(inner->inputs[0]) != s || g_.shape(inner->inputs[1]) != s)
      return std::nullopt;
    return ResidualNorm{
        {inner->id, sum->id}, norm.id, inner->inputs[0], inner->inputs[1], pair_bias->second};
  }

private:
  /// Node `id` when it is an add of shape s that only one node reads.
  const ir::Node* sole_add(ir::NodeId id, const ir::Shape& s) const {
    const ir::Node& n = g_.node(id);
    if (n.op.kind() != ir::OpKind::Add || n.shape != s || reads_[id.index] != 1) return nullptr;
    return &n;
  }
  /// Whether `id` is a bias (or gamma, beta) for rows of shape s: a vector along the last axis,
  /// of s's dtype.
  bool bias_for(ir::NodeId id, const ir::Shape& s) const {
    const ir::Shape& b = g_.shape(id);
    const ir::Dim& last = s.dims().back();
    if (b.dtype() != s.dtype() || b.rank() == 0 || !b.is_static() || !last.is_static())
      return false;
    return b.dims().back() == last && *b.num_elements() == last.size();
  }
  /// For an add of a full value and a bias (either order): the two.
  std::optional<std::pair<ir::NodeId, ir::NodeId>> full_and_bias(const ir::Node& add) const {
    for (std::size_t side = 0; side < 2; ++side) {
      ir::NodeId a = add.inputs[side], b = add.inputs[1 - side];
      if (g_.shape(a) == add.shape && bias_for(b, add.shape)) return std::pair{a, b};
    }
    return std::nullopt;
  }

  const ir::Graph& g_;
  std::vector<std::size_t> reads_;
};

} // namespace

bool fuse_residual_norm(ir::Graph& g, const PassOptions&) {
  Matcher matcher(g);
  auto match = [&](const ir::Node& n) { return matcher.match(n); };
  auto emit = [](Rewriter& rw, const ir::Node& norm, const ResidualNorm& m) {
    std::vector<ir::NodeId> ins{rw[m.x], rw[m.residual]};
    if (m.bias) ins.push_back(rw[*m.bias]);
    ins.push_back(rw[norm.inputs[1]]); // gamma
    ins.push_back(rw[norm.inputs[2]]); // beta
    ir::OpKind fused = norm.op.kind() == ir::OpKind::LayerNorm ? ir::OpKind::FusedResidualLN
                                                               : ir::OpKind::FusedResidualRmsNorm;
    ir::FusedResidualNormAttrs attrs{m.bias.has_value(), norm.op.attrs<ir::NormAttrs>().eps};
    rw.emit(norm, ir::Op(fused, attrs), std::move(ins));
  };
  return fuse_matches<ResidualNorm>(g, match, emit);
}

} // namespace rlx::passes
