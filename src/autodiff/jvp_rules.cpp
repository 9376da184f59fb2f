// src/autodiff/jvp_rules.cpp -- the JVP table: one entry per differentiable op kind. Linear
// kinds apply themselves to the tangents (the engine does that); the others have a rule that
// appends the tangent of the node's value from its operands' tangents.
#include "collective.hpp"
#include "custom.hpp"
#include "gv.hpp"
#include "linalg.hpp"
#include "quant.hpp"
#include "rules.hpp"
#include "splat.hpp"

#include <array>
#include <limits>

namespace rlx::autodiff {

namespace {

using Tans = std::span<const Grad>;

NodeId in(const Node& n, std::size_t i) { return n.inputs[i]; }
/// The tangent of operand i, zeros when it has none.
NodeId tan_or_zero(Builder& b, const Node& n, Tans t, std::size_t i) {
  return t[i] ? *t[i] : b.zeros(b.shape(in(n, i)));
}
/// Cast a tangent to the node's dtype (promotion) and broadcast it to the node's shape.
NodeId fit(Builder& b, const Node& n, NodeId v) {
  return b.expand_to(b.cast(v, n.shape.dtype()), n.shape);
}

Grad jvp_unary(Builder& b, const Node& n, Tans t) {
  return fit(b, n, b.mul(*t[0], unary_derivative(b, n)));
}

Grad jvp_binary(Builder& b, const Node& n, Tans t) {
  auto [pa, pb] = binary_partials(b, n);
  Grad r;
  if (t[0]) r = b.mul(*t[0], pa);
  if (t[1]) r = b.add_opt(r, b.mul(*t[1], pb));
  return fit(b, n, *r);
}

Grad jvp_cast(Builder& b, const Node& n, Tans t) { return b.cast(*t[0], n.shape.dtype()); }

Grad jvp_where(Builder& b, const Node& n, Tans t) {
  if (!t[1] && !t[2]) return std::nullopt;
  return fit(b, n, b.where(in(n, 0), tan_or_zero(b, n, t, 1), tan_or_zero(b, n, t, 2)));
}

/// lfilter is linear in (x, zi) jointly for fixed coefficients; their tangents are refused.
Grad jvp_lfilter(Builder& b, const Node& n, Tans t) {
  if ((t.size() > 1 && t[1]) || (t.size() > 2 && t[2]))
    fail(ErrorKind::Unsupported, "autodiff: the derivative of lfilter with respect to its "
                                 "coefficients b and a is not implemented (only x and zi)");
  std::vector<NodeId> ops{tan_or_zero(b, n, t, 0), in(n, 1), in(n, 2)};
  if (n.inputs.size() > 3) ops.push_back(tan_or_zero(b, n, t, 3));
  return b.op(n.op, std::move(ops));
}

NodeId keep_dims(Builder& b, const Node& n, NodeId v) {
  const auto& a = n.op.attrs<ir::ReduceAttrs>();
  if (a.keep_dim) return v;
  auto xs = b.sizes(in(n, 0));
  int64_t r = int64_t(xs.size());
  for (int64_t ax : a.axes) xs[std::size_t(norm_axis(ax, r))] = 1;
  return b.reshape(v, Ints(xs.begin(), xs.end()));
}

Grad jvp_reduce_extremum(Builder& b, const Node& n, Tans t) { // mean of the tangents at ties
  NodeId x = in(n, 0);
  const auto& a = n.op.attrs<ir::ReduceAttrs>();
  NodeId hit = b.where(b.bin(OpKind::Eq, x, keep_dims(b, n, n.id)), b.like(1, x), b.like(0, x));
  NodeId num = b.sum(b.mul(hit, *t[0]), a.axes, a.keep_dim);
  return b.div(num, b.sum(hit, a.axes, a.keep_dim));
}

Grad jvp_reduce_prod(Builder& b, const Node& n, Tans t) { // y * sum(t / x)
  const auto& a = n.op.attrs<ir::ReduceAttrs>();
  return b.mul(n.id, b.sum(b.div(*t[0], in(n, 0)), a.axes, a.keep_dim));
}

Grad jvp_softmax(Builder& b, const Node& n, Tans t) {
  FormulaScope f(b, n.shape.dtype());
  GV y = n.id, dx = *t[0];
  return (y * (dx - sum(dx * y, {n.op.attrs<ir::AxisAttrs>().axis}))).node();
}

Grad jvp_pad(Builder& b, const Node& n, Tans t) { // the fill value is a constant
  ir::PadAttrs a = n.op.attrs<ir::PadAttrs>();
  a.value = 0.0;
  return b.op(ir::Op(OpKind::Pad, a), {*t[0]});
}

Grad jvp_gather(Builder& b, const Node& n, Tans t) {
  if (!t[0]) return std::nullopt;
  return b.op(n.op, {*t[0], in(n, 1)});
}

/// Bilinear ops (matmul, convolutions): op(ta, c) + op(a, tc).
Grad jvp_bilinear(Builder& b, const Node& n, Tans t) {
  Grad r;
  if (t[0]) r = b.op(n.op, {*t[0], in(n, 1)});
  if (t[1]) r = b.add_opt(r, b.op(n.op, {in(n, 0), *t[1]}));
  return r;
}

Grad jvp_max_pool(Builder& b, const Node& n, Tans t) { // the tangent at the window's maximum
  const auto& a = n.op.attrs<ir::Pool2dAttrs>();
  NodeId x = in(n, 0);
  auto xs = b.sizes(x), ys = b.sizes(n.id);
  int64_t ch = xs[1], taps = a.kernel_size[0] * a.kernel_size[1];
  Ints pads{0, 0, 0, 0, a.padding[0], a.padding[0], a.padding[1], a.padding[1]};
  ir::Im2ColAttrs ia{a.kernel_size, a.stride, {0, 0}, {1, 1}};
  auto cols = [&](NodeId v, double fill) {
    NodeId p = b.op(ir::Op(OpKind::Pad, ir::PadAttrs{pads, ir::PadMode::Constant, fill}), {v});
    return b.reshape(b.op(ir::Op(OpKind::Im2Col, ia), {p}), {-1, ch, taps});
  };
  NodeId y = b.reshape(b.transpose(n.id, {0, 2, 3, 1}), {-1, ch, 1});
  NodeId hit = b.where(b.bin(OpKind::Eq, cols(x, -std::numeric_limits<double>::infinity()), y),
                       b.like(1, x), b.like(0, x));
  NodeId v = b.div(b.sum(b.mul(hit, cols(*t[0], 0.0)), {2}, false), b.sum(hit, {2}, false));
  return b.transpose(b.reshape(v, {ys[0], ys[2], ys[3], ch}), {0, 3, 1, 2});
}

constexpr RuleKind kRule = RuleKind::Rule;

/// The hand rows: the structural ops that are not kLinear. Element-wise ops with a derivative
/// formula, kLinear, kZeroGrad and kComposite kinds get their rows from ops.def (rules.hpp:
/// derived_rule_kind); leaves and kNonDifferentiable kinds have none.
constexpr JvpEntry kHand[] = {
    {OpKind::Cast, kRule, jvp_cast},
    {OpKind::Where, kRule, jvp_where},
    {OpKind::ReduceMax, kRule, jvp_reduce_extremum},
    {OpKind::ReduceMin, kRule, jvp_reduce_extremum},
    {OpKind::ReduceProd, kRule, jvp_reduce_prod},
    {OpKind::Softmax, kRule, jvp_softmax},
    {OpKind::Pad, kRule, jvp_pad},
    {OpKind::Gather, kRule, jvp_gather},
    {OpKind::ScatterAdd, kRule, jvp_gather}, // linear in operand 0 as well
    {OpKind::MatMul, kRule, jvp_bilinear},
    {OpKind::Conv2d, kRule, jvp_bilinear},
    {OpKind::ConvTranspose2d, kRule, jvp_bilinear},
    {OpKind::Conv3d, kRule, jvp_bilinear},
    {OpKind::ConvTranspose3d, kRule, jvp_bilinear},
    {OpKind::ConvTranspose1d, kRule, jvp_bilinear},
    {OpKind::MaxPool2d, kRule, jvp_max_pool},
    {OpKind::Lfilter, kRule, jvp_lfilter},
    {OpKind::Solve, kRule, linalg::jvp_solve},
    {OpKind::Slogdet, kRule, linalg::jvp_slogdet},
    {OpKind::Cholesky, kRule, linalg::jvp_cholesky},
    {OpKind::Qr, kRule, linalg::jvp_qr},
    {OpKind::Svd, kRule, linalg::jvp_svd},
    {OpKind::Eigh, kRule, linalg::jvp_eigh},
    {OpKind::FakeQuantize, kRule, quant::jvp_fake_quantize},
    {OpKind::DequantMatMul, kRule, quant::jvp_dequant_matmul},
    {OpKind::AllReduce, kRule, collective::jvp_all_reduce},
    {OpKind::GaussianSplatRender, kRule, splat::jvp_render},
    {OpKind::CustomFn, kRule, jvp_custom_fn},
    {OpKind::Custom, kRule, jvp_custom_op},
    {OpKind::Scan, kRule, jvp_scan},
};

constexpr std::array<JvpEntry, ir::kNumOps> kJvp =
    rule_table(derived_rule_kinds<true>(), JvpFn(jvp_unary), JvpFn(jvp_binary), kHand);

} // namespace

const JvpEntry* jvp_entry(OpKind k) {
  const JvpEntry& e = kJvp[std::size_t(k)];
  return e.how == RuleKind::None ? nullptr : &e;
}

RuleKind jvp_rule_kind(OpKind k) { return kJvp[std::size_t(k)].how; }

} // namespace rlx::autodiff
