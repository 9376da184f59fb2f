// src/passes/fuse_swiglu.cpp -- the two halves of one value, silu of one times the other, become
// one fused_swiglu node (and a cast of the product to another float dtype its cast_to).
//
// Assumes a verified graph. Fuses silu(gate) * up (either order) where up and gate are narrows of
// one float value h = [..., 2N] along its last axis, one [0, N) and the other [N, 2N) (gate first
// sets gate_first), the product has the halves' shape and dtype (no broadcasting), and each of
// the narrows, the silu and the product is read only by the next node of the pattern; h itself
// may have other readers. When the product's only reader casts it to another float dtype, the
// cast folds in as cast_to. Guarantees the same values within rounding: the fused kernel rounds
// silu(gate) * up once (to cast_to's dtype, if set) where the parts round each step. Leaves no
// dead nodes behind; the fused node takes the label and source line of the last node it replaces.
#include "rlx/passes.hpp"

#include "rewriter.hpp"

#include <optional>
#include <vector>

namespace rlx::passes {
namespace {

/// One match: the nodes it absorbs (the last one is replaced) and the fused node's operand.
struct SwiGlu {
  std::vector<ir::NodeId> absorbed; ///< the narrows, the silu, and the product before a cast
  ir::NodeId last;                  ///< the product, or the cast after it
  ir::NodeId h;
  bool gate_first = false;
  std::optional<ir::DType> cast_to;
};

class Matcher {
public:
  explicit Matcher(const ir::Graph& g) : g_(g), reads_(read_counts(g)) {}

  std::optional<SwiGlu> match(const ir::Node& mul) const {
    if (mul.op.kind() != ir::OpKind::Mul || !ir::is_float(mul.shape.dtype())) return std::nullopt;
    for (std::size_t side = 0; side < 2; ++side) {
      const ir::Node& act = g_.node(mul.inputs[side]);
      ir::NodeId up = mul.inputs[1 - side];
      if (act.op.kind() != ir::OpKind::Silu || !sole(act.id) || act.shape != mul.shape) continue;
      ir::NodeId gate = act.inputs[0];
      std::optional<int64_t> up_start = half_of(up, mul.shape),
                             gate_start = half_of(gate, mul.shape);
      if (!up_start || !gate_start || *up_start == *gate_start) continue;
      ir::NodeId h = g_.node(up).inputs[0];
      if (g_.node(gate).inputs[0] != h) continue;
      SwiGlu m{{up, gate, act.id}, mul.id, h, *gate_start == 0, std::nullopt};
      if (reads_[mul.id.index] == 1) {
        std::vector<ir::NodeId> users = g_.users(mul.id);
        const ir::Node* cast = users.empty() ? nullptr : &g_.node(users.front());
        if (cast && cast->op.kind() == ir::OpKind::Cast) {
          ir::DType to = cast->op.attrs<ir::CastAttrs>().to;
          if (ir::is_float(to) && to != mul.shape.dtype()) {
            m.cast_to = to;
            m.absorbed.push_back(mul.id);
            m.last = cast->id;
          }
        }
      }
      return m;
    }
    return std::nullopt;
  }

private:
  bool sole(ir::NodeId id) const { return reads_[id.index] == 1; }

  /// Where node `id` starts when it is a narrow read only once, of `half`'s shape, taking the
  /// first or second half of its operand's last axis; else nullopt.
  std::optional<int64_t> half_of(ir::NodeId id, const ir::Shape& half) const {
    const ir::Node& n = g_.node(id);
    if (n.op.kind() != ir::OpKind::Narrow || !sole(id) || n.shape != half) return std::nullopt;
    const ir::Shape& h = g_.shape(n.inputs[0]);
    auto rank = int64_t(h.rank());
    const auto& a = n.op.attrs<ir::NarrowAttrs>();
    if (rank == 0 || h.dtype() != half.dtype() || (a.axis != -1 && a.axis != rank - 1))
      return std::nullopt;
    const ir::Dim& last = h.dims().back();
    if (!last.is_static() || last.size() != 2 * a.len || (a.start != 0 && a.start != a.len))
      return std::nullopt;
    return a.start;
  }

  const ir::Graph& g_;
  std::vector<std::size_t> reads_;
};

} // namespace

bool fuse_swiglu(ir::Graph& g, const PassOptions&) {
  Matcher matcher(g);
  auto match = [&](const ir::Node& n) { return matcher.match(n); };
  auto emit = [](Rewriter& rw, const ir::Node& last, const SwiGlu& m) {
    rw.emit(last, ir::Op(ir::OpKind::FusedSwiGLU, ir::SwiGluAttrs{m.gate_first, m.cast_to}),
            {rw[m.h]});
  };
  return fuse_matches<SwiGlu>(g, match, emit);
}

} // namespace rlx::passes
