// src/passes/algebraic_simplify.cpp -- a table of exact algebraic identities.
//
// Assumes a verified graph. Guarantees the same outputs, NaN and infinities included; the one
// accepted difference is the sign of a zero (x + 0 for x = -0.0 gives -0.0, IEEE +0.0). An
// identity fires only when the result has the surviving operand's shape and dtype (broadcasting
// and promotion would change it otherwise) and its constant holds one value in every element of
// a real dtype (not c64). Does not fold constants or remove the bypassed nodes (dce does).
#include "rlx/passes.hpp"

#include "rewriter.hpp"

#include <optional>

namespace rlx::passes {
namespace {

using ir::NodeId;
using ir::OpKind;
using Result = std::optional<NodeId>;

/// A node being simplified, with its operands in the new graph.
class Match {
public:
  Match(Rewriter& rw, const ir::Node& n) : rw_(rw), n_(n), ins_(rw.inputs_of(n)) {}

  const ir::Node& operand(std::size_t i) const { return rw_.out().node(ins_[i]); }
  bool is_float() const { return ir::is_float(n_.shape.dtype()); }
  bool is_integer() const { return ir::is_int(n_.shape.dtype()); }

  /// Whether operand i is a constant of a real dtype with the value v in every element.
  bool splat(std::size_t i, double v) const {
    const ir::Node& c = operand(i);
    if (ir::is_complex(c.shape.dtype())) return false;
    std::optional<Buffer> b = constant_value(c);
    if (!b) return false;
    for (int64_t k = 0; k < b->numel(); ++k)
      if (b->get_f64(k) != v) return false;
    return true;
  }

  /// Node `id` of the new graph as the replacement, when it has the result's shape and dtype.
  Result keep_id(NodeId id) const {
    return rw_.out().shape(id) == n_.shape ? Result(id) : std::nullopt;
  }
  /// Operand i as the replacement (see keep_id).
  Result keep(std::size_t i) const { return keep_id(ins_[i]); }

  /// Zeros of the result's shape, given that operand i is a constant zero: operand i itself
  /// when it has that shape, else it (when a scalar of the result's dtype) or a new scalar zero
  /// expanded to the shape; nullopt when the shape is dynamic.
  Result zeros(std::size_t i) const {
    if (Result same = keep(i)) return same;
    if (!n_.shape.is_static()) return std::nullopt;
    ir::Shape scalar = ir::Shape::scalar(n_.shape.dtype());
    NodeId zero = operand(i).shape == scalar
                      ? ins_[i]
                      : rw_.append(n_, constant_op(Buffer(scalar)), {}, scalar);
    if (n_.shape.rank() == 0) return zero;
    ir::Op expand(OpKind::Expand, ir::ExpandAttrs{n_.shape.sizes()});
    return rw_.append(n_, std::move(expand), {zero}, n_.shape);
  }

  /// Whether the node is a transpose that keeps every axis in place.
  bool identity_perm() const {
    const ir::Ints& perm = n_.op.attrs<ir::TransposeAttrs>().perm;
    auto rank = int64_t(perm.size());
    for (int64_t i = 0; i < rank; ++i)
      if (perm[std::size_t(i)] != i && perm[std::size_t(i)] != i - rank) return false;
    return true;
  }

  /// add(pad(a), pad(b)) -> pad(concat(a, b)) (or concat(a, b) itself when it fills the
  /// result): both operands pad with zeros along one and the same axis only, and a's block ends
  /// where b's starts (or the other way round), so each element is an element of a or of b plus
  /// zero. The gradients of slices that tile an axis (a fused QKV projection's q, k and v) add
  /// up this way: one concat instead of three zero-padded copies and two additions.
  Result adjacent_pads() const {
    struct Block {
      NodeId x;
      int64_t axis = -1, lo = 0, hi = 0;
    };
    auto block = [&](std::size_t i) -> std::optional<Block> {
      const ir::Node& p = operand(i);
      if (p.op.kind() != OpKind::Pad || p.shape != n_.shape) return std::nullopt;
      const auto& a = p.op.attrs<ir::PadAttrs>();
      if (a.mode != ir::PadMode::Constant || a.value != 0.0) return std::nullopt;
      Block b{p.inputs[0]};
      for (std::size_t ax = 0; 2 * ax < a.pads.size(); ++ax) {
        if (a.pads[2 * ax] == 0 && a.pads[2 * ax + 1] == 0) continue;
        if (b.axis >= 0) return std::nullopt; // padded along two axes
        b.axis = int64_t(ax);
        b.lo = a.pads[2 * ax];
        b.hi = a.pads[2 * ax + 1];
      }
      if (b.axis < 0) return std::nullopt;
      return b;
    };
    std::optional<Block> a = block(0), b = block(1);
    if (!a || !b || a->axis != b->axis || !n_.shape.is_static()) return std::nullopt;
    const int64_t len = n_.shape.sizes()[std::size_t(a->axis)];
    if (len - b->lo - b->hi == 0 || len - a->lo - a->hi == 0) return std::nullopt;
    if (len - a->hi != b->lo) std::swap(a, b); // a's block first
    if (len - a->hi != b->lo) return std::nullopt;
    // Operands that are concats along the axis (an earlier pair) are spliced in.
    std::vector<NodeId> parts;
    for (NodeId x : {a->x, b->x}) {
      const ir::Node& c = rw_.out().node(x);
      int64_t cat_axis = c.op.kind() == OpKind::Concat ? c.op.attrs<ir::ConcatAttrs>().axis : -1;
      if (cat_axis < 0) cat_axis += int64_t(n_.shape.rank());
      bool splice = c.op.kind() == OpKind::Concat && cat_axis == a->axis;
      if (splice)
        parts.insert(parts.end(), c.inputs.begin(), c.inputs.end());
      else
        parts.push_back(x);
    }
    std::vector<int64_t> sizes = n_.shape.sizes();
    sizes[std::size_t(a->axis)] = len - a->lo - b->hi;
    ir::Shape joined = ir::Shape::of(sizes, n_.shape.dtype());
    NodeId cat = rw_.append(n_, ir::Op(OpKind::Concat, ir::ConcatAttrs{a->axis}), parts, joined);
    if (a->lo == 0 && b->hi == 0) return cat;
    ir::Ints pads(2 * n_.shape.rank(), 0);
    pads[std::size_t(2 * a->axis)] = a->lo;
    pads[std::size_t(2 * a->axis + 1)] = b->hi;
    return rw_.append(n_, ir::Op(OpKind::Pad, ir::PadAttrs{pads, ir::PadMode::Constant, 0.0}),
                      {cat}, n_.shape);
  }

private:
  Rewriter& rw_;
  const ir::Node& n_;
  std::vector<NodeId> ins_;
};

struct Identity {
  OpKind kind;
  Result (*rewrite)(const Match& m);
};

// The identities, tried in order on nodes of their kind; the first that applies wins.
constexpr Identity kIdentities[] = {
    // x + 0 -> x (exact but for x = -0.0: IEEE gives +0.0, we keep -0.0)
    {OpKind::Add, [](const Match& m) { return m.splat(1, 0) ? m.keep(0) : std::nullopt; }},
    // 0 + x -> x (as x + 0)
    {OpKind::Add, [](const Match& m) { return m.splat(0, 0) ? m.keep(1) : std::nullopt; }},
    // pad(a) + pad(b) -> pad(concat(a, b)), zero pads of adjacent blocks of one axis (exact but
    // for the sign of a zero, as x + 0)
    {OpKind::Add, [](const Match& m) { return m.adjacent_pads(); }},
    // x - 0 -> x (exact, -0.0 - 0.0 is -0.0)
    {OpKind::Sub, [](const Match& m) { return m.splat(1, 0) ? m.keep(0) : std::nullopt; }},
    // x * 1 -> x (exact: NaN, infinities and signed zeros pass through)
    {OpKind::Mul, [](const Match& m) { return m.splat(1, 1) ? m.keep(0) : std::nullopt; }},
    // 1 * x -> x (as x * 1)
    {OpKind::Mul, [](const Match& m) { return m.splat(0, 1) ? m.keep(1) : std::nullopt; }},
    // x * 0 -> 0 for integers only: for floats NaN * 0 and inf * 0 are NaN, and -1 * 0 is -0
    {OpKind::Mul,
     [](const Match& m) { return m.is_integer() && m.splat(1, 0) ? m.zeros(1) : std::nullopt; }},
    // 0 * x -> 0 (as x * 0)
    {OpKind::Mul,
     [](const Match& m) { return m.is_integer() && m.splat(0, 0) ? m.zeros(0) : std::nullopt; }},
    // x / 1 -> x (exact; integer division truncates, and x / 1 is x)
    {OpKind::Div, [](const Match& m) { return m.splat(1, 1) ? m.keep(0) : std::nullopt; }},
    // x and true -> x (bool x)
    {OpKind::And, [](const Match& m) { return m.splat(1, 1) ? m.keep(0) : std::nullopt; }},
    // x or false -> x (bool x)
    {OpKind::Or, [](const Match& m) { return m.splat(1, 0) ? m.keep(0) : std::nullopt; }},
    // neg(neg x) -> x for floats (a sign flip); integers saturate: -(-(-2^31)) is 1 - 2^31 in i32
    {OpKind::Neg,
     [](const Match& m) {
       return m.is_float() && m.operand(0).op.kind() == OpKind::Neg
                  ? m.keep_id(m.operand(0).inputs[0])
                  : std::nullopt;
     }},
    // cast(x) to x's own dtype -> x
    {OpKind::Cast, [](const Match& m) { return m.keep(0); }},
    // reshape(x) to x's own shape -> x (element order is kept)
    {OpKind::Reshape, [](const Match& m) { return m.keep(0); }},
    // expand(x) to x's own shape -> x
    {OpKind::Expand, [](const Match& m) { return m.keep(0); }},
    // transpose(x) by the identity permutation -> x
    {OpKind::Transpose,
     [](const Match& m) { return m.identity_perm() ? m.keep(0) : std::nullopt; }},
};

} // namespace

bool algebraic_simplify(ir::Graph& g, const PassOptions&) {
  Rewriter rw(g);
  bool changed = false;
  for (const ir::Node& n : g.nodes()) {
    Result replacement;
    Match m(rw, n);
    for (const Identity& id : kIdentities)
      if (id.kind == n.op.kind() && (replacement = id.rewrite(m))) break;
    if (replacement) {
      rw.replace(n, *replacement);
      changed = true;
    } else {
      rw.copy(n);
    }
  }
  if (!changed) return false;
  g = rw.finish();
  return true;
}

} // namespace rlx::passes
