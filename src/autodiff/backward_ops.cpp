// src/autodiff/backward_ops.cpp -- RLX's explicit backward ops as closed forms written with
// the graph builders (group norm and attention: their decomposition, differentiated).
#include "rlx/backward_ops.hpp"

#include "rules.hpp"

namespace rlx::autodiff {

namespace {

/// A per-channel vector v reshaped to broadcast along `axis` of a rank-`rank` tensor.
NodeId along(Builder& b, NodeId v, int64_t axis, int64_t rank) {
  Ints dims(std::size_t(rank - axis), 1);
  dims[0] = -1;
  return b.reshape(v, dims);
}

/// Every axis of x but `axis`.
Ints other_axes(int64_t rank, int64_t axis) {
  Ints r;
  for (int64_t i = 0; i < rank; ++i)
    if (i != axis) r.push_back(i);
  return r;
}

Ints dims_of(const Shape& s) {
  auto v = s.sizes();
  return Ints(v.begin(), v.end());
}

/// x_hat = (x - mean) * r and r = 1 / sqrt(var + eps) over `axis` (kept), or for rms
/// x_hat = x * r with r = 1 / sqrt(mean(x^2) + eps).
std::pair<NodeId, NodeId> normalized(Builder& b, NodeId x, int64_t axis, float eps, bool rms) {
  NodeId c = rms ? x : b.sub(x, b.reduce(OpKind::ReduceMean, x, {axis}));
  NodeId var = b.reduce(OpKind::ReduceMean, b.mul(c, c), {axis});
  NodeId r = b.un(OpKind::Rsqrt, b.add(var, b.like(double(eps), x)));
  return {b.mul(c, r), r};
}

ConvGeom geom(Ints2 stride, Ints2 padding, Ints2 dilation, int64_t groups) {
  return {{stride[0], stride[1]}, {padding[0], padding[1]}, {dilation[0], dilation[1]}, groups};
}

void check_kernel(Graph& g, NodeId w_or_dy, const Shape& w_shape, Ints2 k, std::string_view what) {
  auto ws = w_shape.sizes();
  if (ws.size() != 4 || ws[2] != k[0] || ws[3] != k[1])
    fail(ErrorKind::Shape, what, ": kernel_size [", k[0], ", ", k[1],
         "] does not match the weight ", ir::short_str(w_shape), " (node %", w_or_dy.index, " of ",
         g.name, ")");
}

NodeId softmax_ce(Builder& b, NodeId logits, NodeId targets) {
  NodeId m = b.reduce(OpKind::ReduceMax, logits, {-1});
  NodeId lse = b.add(b.un(OpKind::Log, b.sum(b.un(OpKind::Exp, b.sub(logits, m)), {-1}, true)), m);
  return b.sub(b.reshape(lse, {-1}), b.sum(b.mul(targets, logits), {-1}, false));
}

} // namespace

NodeId relu_backward(Graph& g, NodeId x, NodeId dy) {
  Builder b(g);
  return b.where(b.bin(OpKind::Gt, x, b.like(0, x)), dy, b.like(0, dy));
}

NodeId activation_backward(Graph& g, ir::Activation kind, NodeId x, NodeId dy) {
  Builder b(g);
  NodeId y = b.un(ir::to_op_kind(kind), x);
  Node n = g.node(y);
  return b.mul(dy, unary_derivative(b, n));
}

NodeId layer_norm_backward_input(Graph& g, NodeId x, NodeId gamma, NodeId dy, int64_t axis,
                                 float eps) {
  Builder b(g);
  int64_t r = b.rank(x), a = norm_axis(axis, r);
  auto [xh, rs] = normalized(b, x, a, eps, false);
  NodeId gb = b.mul(dy, along(b, gamma, a, r));
  NodeId mg = b.reduce(OpKind::ReduceMean, gb, {a});
  NodeId mgx = b.reduce(OpKind::ReduceMean, b.mul(gb, xh), {a});
  return b.mul(rs, b.sub(b.sub(gb, mg), b.mul(xh, mgx)));
}

NodeId layer_norm_backward_gamma(Graph& g, NodeId x, NodeId dy, Shape gamma_shape, int64_t axis,
                                 float eps) {
  Builder b(g);
  int64_t r = b.rank(x), a = norm_axis(axis, r);
  NodeId xh = normalized(b, x, a, eps, false).first;
  return b.reshape(b.sum(b.mul(dy, xh), other_axes(r, a), false), dims_of(gamma_shape));
}

NodeId rms_norm_backward_input(Graph& g, NodeId x, NodeId gamma, NodeId, NodeId dy, int64_t axis,
                               float eps) { // r gb - x r^3 mean(gb x)
  Builder b(g);
  int64_t r = b.rank(x), a = norm_axis(axis, r);
  NodeId rs = normalized(b, x, a, eps, true).second;
  NodeId gb = b.mul(dy, along(b, gamma, a, r));
  NodeId m = b.reduce(OpKind::ReduceMean, b.mul(gb, x), {a});
  return b.sub(b.mul(rs, gb), b.mul(b.mul(x, b.mul(rs, b.mul(rs, rs))), m));
}

NodeId rms_norm_backward_gamma(Graph& g, NodeId x, NodeId gamma, NodeId, NodeId dy, int64_t axis,
                               float eps) {
  Builder b(g);
  int64_t r = b.rank(x), a = norm_axis(axis, r);
  NodeId xh = normalized(b, x, a, eps, true).first;
  return b.reshape(b.sum(b.mul(dy, xh), other_axes(r, a), false), dims_of(g.shape(gamma)));
}

NodeId rms_norm_backward_beta(Graph& g, NodeId x, NodeId, NodeId beta, NodeId dy, int64_t axis,
                              float) {
  Builder b(g);
  int64_t r = b.rank(x), a = norm_axis(axis, r);
  return b.reshape(b.sum(dy, other_axes(r, a), false), dims_of(g.shape(beta)));
}

NodeId rope_backward(Graph& g, NodeId dy, NodeId cos, NodeId sin, int64_t head_dim, int64_t n_rot) {
  Builder b(g);
  return b.op(ir::Op(OpKind::Rope, ir::RopeAttrs{head_dim, n_rot, ir::RopeStyle::NeoX}),
              {dy, cos, b.neg(sin)});
}

NodeId cumsum_backward(Graph& g, NodeId dy, Shape out_shape, int64_t axis, bool exclusive) {
  Builder b(g);
  if (g.shape(dy).dims() != out_shape.dims())
    fail(ErrorKind::Shape, "cumsum_backward: dy ", ir::short_str(g.shape(dy)),
         " does not have the cumsum's shape ", ir::short_str(out_shape));
  auto rev = [&](NodeId v) { return b.op(ir::Op(OpKind::Reverse, ir::ReverseAttrs{{axis}}), {v}); };
  return rev(b.op(ir::Op(OpKind::Cumsum, ir::CumsumAttrs{axis, exclusive}), {rev(dy)}));
}

NodeId gather_backward(Graph& g, NodeId dy, NodeId indices, Shape table_shape, int64_t axis) {
  Builder b(g);
  return gather_adjoint(b, dy, indices, table_shape.sizes(), axis);
}

NodeId group_norm_backward_input(Graph& g, NodeId x, NodeId gamma, NodeId beta, NodeId dy,
                                 int64_t num_groups, float eps) {
  ir::Op op(OpKind::GroupNorm, ir::GroupNormAttrs{num_groups, eps});
  NodeId ins[] = {x, gamma, beta};
  return vjp_of(g, op, ins, dy, 0);
}

NodeId group_norm_backward_gamma(Graph& g, NodeId x, NodeId dy, Shape gamma_shape,
                                 int64_t num_groups, float eps) {
  Builder b(g);
  ir::Op op(OpKind::GroupNorm, ir::GroupNormAttrs{num_groups, eps});
  NodeId ins[] = {x, b.ones(gamma_shape), b.zeros(gamma_shape)};
  return vjp_of(g, op, ins, dy, 1);
}

NodeId group_norm_backward_beta(Graph& g, NodeId x, NodeId dy, Shape beta_shape, int64_t, float) {
  Builder b(g);
  return b.reshape(b.sum(dy, other_axes(b.rank(x), 1), false), dims_of(beta_shape));
}

NodeId batch_norm_inference_backward_input(Graph& g, NodeId x, NodeId gamma, NodeId, NodeId var,
                                           NodeId dy, float eps) {
  Builder b(g);
  int64_t r = b.rank(x);
  NodeId rs = b.un(OpKind::Rsqrt, b.add(along(b, var, 1, r), b.like(double(eps), x)));
  return b.mul(b.mul(dy, along(b, gamma, 1, r)), rs);
}

NodeId batch_norm_inference_backward_gamma(Graph& g, NodeId x, NodeId mean, NodeId var, NodeId dy,
                                           Shape gamma_shape, float eps) {
  Builder b(g);
  int64_t r = b.rank(x);
  NodeId rs = b.un(OpKind::Rsqrt, b.add(along(b, var, 1, r), b.like(double(eps), x)));
  NodeId xh = b.mul(b.sub(x, along(b, mean, 1, r)), rs);
  return b.reshape(b.sum(b.mul(dy, xh), other_axes(r, 1), false), dims_of(gamma_shape));
}

NodeId batch_norm_inference_backward_beta(Graph& g, NodeId dy, Shape beta_shape) {
  Builder b(g);
  return b.reshape(b.sum(dy, other_axes(b.rank(dy), 1), false), dims_of(beta_shape));
}

NodeId maxpool2d_backward(Graph& g, NodeId x, NodeId dy, Ints2 kernel_size, Ints2 stride,
                          Ints2 padding) {
  Builder b(g);
  NodeId y = b.op(ir::Op(OpKind::MaxPool2d, ir::Pool2dAttrs{kernel_size, stride, padding}), {x});
  return max_pool_adjoint(b, x, y, dy, kernel_size, stride, padding);
}

NodeId conv2d_backward_input(Graph& g, NodeId dy, NodeId w, Shape x_shape, Ints2 kernel_size,
                             Ints2 stride, Ints2 padding, Ints2 dilation, int64_t groups) {
  check_kernel(g, w, g.shape(w), kernel_size, "conv2d_backward_input");
  Builder b(g);
  return conv_input_adjoint(b, dy, w, x_shape.sizes(), geom(stride, padding, dilation, groups));
}

NodeId conv2d_backward_weight(Graph& g, NodeId x, NodeId dy, Shape w_shape, Ints2 kernel_size,
                              Ints2 stride, Ints2 padding, Ints2 dilation, int64_t groups) {
  check_kernel(g, dy, w_shape, kernel_size, "conv2d_backward_weight");
  Builder b(g);
  return conv_weight_adjoint(b, x, dy, w_shape.sizes(), geom(stride, padding, dilation, groups));
}

NodeId softmax_cross_entropy(Graph& g, NodeId logits, NodeId targets) {
  Builder b(g);
  return softmax_ce(b, logits, targets);
}

NodeId softmax_cross_entropy_with_logits(Graph& g, NodeId logits, NodeId labels) {
  Builder b(g);
  const Shape ls = g.shape(logits);
  NodeId oh = one_hot(b, labels, ls.sizes().back(), ls.dtype());
  return softmax_ce(b, logits, oh);
}

NodeId softmax_cross_entropy_backward(Graph& g, NodeId logits, NodeId labels, NodeId d_loss) {
  Builder b(g);
  const Shape ls = g.shape(logits);
  NodeId oh = one_hot(b, labels, ls.sizes().back(), ls.dtype());
  NodeId p = b.op(ir::Op(OpKind::Softmax, ir::AxisAttrs{-1}), {logits});
  return b.mul(b.sub(p, oh), b.reshape(d_loss, {-1, 1}));
}

NodeId attention_backward(Graph& g, AttentionBwdWrt wrt, NodeId q, NodeId k, NodeId v, NodeId dy,
                          int64_t num_heads, int64_t head_dim, ir::MaskKind mask_kind,
                          std::optional<NodeId> mask) {
  ir::AttentionAttrs a{num_heads,        head_dim,     mask_kind.type,
                       mask_kind.window, std::nullopt, std::nullopt};
  std::vector<NodeId> ins{q, k, v};
  if (mask) ins.push_back(*mask);
  return vjp_of(g, ir::Op(OpKind::Attention, a), ins, dy, std::size_t(wrt));
}

std::tuple<NodeId, NodeId, NodeId> attention_backward_all(Graph& g, NodeId q, NodeId k, NodeId v,
                                                          NodeId dy, int64_t num_heads,
                                                          int64_t head_dim, ir::MaskKind mask_kind,
                                                          std::optional<NodeId> mask) {
  auto one = [&](AttentionBwdWrt w) {
    return attention_backward(g, w, q, k, v, dy, num_heads, head_dim, mask_kind, mask);
  };
  return {one(AttentionBwdWrt::Q), one(AttentionBwdWrt::K), one(AttentionBwdWrt::V)};
}

} // namespace rlx::autodiff
