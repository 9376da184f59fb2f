// src/autodiff/vjp_rules.cpp -- the VJP table: one entry per differentiable op kind. A rule
// receives the node (operands already in the gradient graph), the cotangent dy of its value and
// which operands need a cotangent, and appends those cotangents with the graph builders.
#include "collective.hpp"
#include "custom.hpp"
#include "gv.hpp"
#include "linalg.hpp"
#include "quant.hpp"
#include "rules.hpp"
#include "splat.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

namespace rlx::autodiff {

namespace {

using Grads = std::vector<Grad>;
using Want = std::span<const char>;

NodeId in(const Node& n, std::size_t i) { return n.inputs[i]; }

/// dy times the element-wise derivative (its formula in src/ops/scalar.hpp), summed back to the
/// operand's shape.
Grads vjp_unary(Builder& b, const Node& n, NodeId dy, Want) {
  NodeId x = in(n, 0);
  return {b.unbroadcast(b.mul(dy, unary_derivative(b, n)), b.shape(x))};
}

Grads vjp_binary(Builder& b, const Node& n, NodeId dy, Want want) {
  auto [pa, pb] = binary_partials(b, n);
  Grads g(2);
  if (want[0]) g[0] = b.unbroadcast(b.mul(dy, pa), b.shape(in(n, 0)));
  if (want[1]) g[1] = b.unbroadcast(b.mul(dy, pb), b.shape(in(n, 1)));
  return g;
}

Grads vjp_cast(Builder& b, const Node& n, NodeId dy, Want) {
  return {b.cast(dy, b.shape(in(n, 0)).dtype())};
}

Grads vjp_where(Builder& b, const Node& n, NodeId dy, Want want) {
  NodeId c = in(n, 0), zero = b.like(0, dy);
  Grads g(3);
  if (want[1]) g[1] = b.unbroadcast(b.where(c, dy, zero), b.shape(in(n, 1)));
  if (want[2]) g[2] = b.unbroadcast(b.where(c, zero, dy), b.shape(in(n, 2)));
  return g;
}

/// The reduced value (or its cotangent) with the reduced axes kept as size 1.
NodeId keep_dims(Builder& b, const Node& n, NodeId v) {
  const auto& a = n.op.attrs<ir::ReduceAttrs>();
  if (a.keep_dim) return v;
  auto xs = b.sizes(in(n, 0));
  int64_t r = int64_t(xs.size());
  for (int64_t ax : a.axes) xs[std::size_t(norm_axis(ax, r))] = 1;
  return b.reshape(v, Ints(xs.begin(), xs.end()));
}

int64_t reduced_count(Builder& b, const Node& n) {
  const auto& a = n.op.attrs<ir::ReduceAttrs>();
  auto xs = b.sizes(in(n, 0));
  int64_t c = 1;
  for (int64_t ax : a.axes) c *= xs[std::size_t(norm_axis(ax, int64_t(xs.size())))];
  return c;
}

Grads vjp_reduce_sum(Builder& b, const Node& n, NodeId dy, Want) {
  return {b.expand_to(keep_dims(b, n, dy), b.shape(in(n, 0)))};
}

Grads vjp_reduce_mean(Builder& b, const Node& n, NodeId dy, Want) {
  NodeId g = b.div(keep_dims(b, n, dy), b.like(double(reduced_count(b, n)), dy));
  return {b.expand_to(g, b.shape(in(n, 0)))};
}

/// Max/min: the cotangent goes to the elements equal to the result, split evenly between ties.
Grads vjp_reduce_extremum(Builder& b, const Node& n, NodeId dy, Want) {
  NodeId x = in(n, 0);
  const auto& a = n.op.attrs<ir::ReduceAttrs>();
  NodeId hit = b.where(b.bin(OpKind::Eq, x, keep_dims(b, n, n.id)), b.like(1, x), b.like(0, x));
  NodeId count = b.sum(hit, a.axes, true);
  return {b.mul(hit, b.div(keep_dims(b, n, dy), count))};
}

Grads vjp_reduce_prod(Builder& b, const Node& n, NodeId dy, Want) { // dy * prod / x
  NodeId x = in(n, 0);
  NodeId g = b.div(b.mul(keep_dims(b, n, dy), keep_dims(b, n, n.id)), x);
  return {b.expand_to(g, b.shape(x))};
}

Grads vjp_cumsum(Builder& b, const Node& n, NodeId dy, Want) { // reversed cumsum of dy
  const auto& a = n.op.attrs<ir::CumsumAttrs>();
  auto rev = [&](NodeId v) {
    return b.op(ir::Op(OpKind::Reverse, ir::ReverseAttrs{{a.axis}}), {v});
  };
  return {rev(b.op(ir::Op(OpKind::Cumsum, a), {rev(dy)}))};
}

Grads vjp_softmax(Builder& b, const Node& n, NodeId dy, Want) {
  FormulaScope f(b, n.shape.dtype());
  GV y = n.id, g = dy;
  return {(y * (g - sum(g * y, {n.op.attrs<ir::AxisAttrs>().axis}))).node()};
}

Grads vjp_reshape(Builder& b, const Node& n, NodeId dy, Want) {
  auto xs = b.sizes(in(n, 0));
  return {b.reshape(dy, Ints(xs.begin(), xs.end()))};
}

Grads vjp_transpose(Builder& b, const Node& n, NodeId dy, Want) {
  const Ints& perm = n.op.attrs<ir::TransposeAttrs>().perm;
  Ints inv(perm.size());
  for (std::size_t i = 0; i < perm.size(); ++i) inv[std::size_t(perm[i])] = int64_t(i);
  return {b.transpose(dy, inv)};
}

NodeId zero_pad_axis(Builder& b, NodeId v, int64_t axis, int64_t before, int64_t after) {
  Ints pads(2 * std::size_t(b.rank(v)), 0);
  pads[std::size_t(2 * axis)] = before;
  pads[std::size_t(2 * axis + 1)] = after;
  return b.op(ir::Op(OpKind::Pad, ir::PadAttrs{pads, ir::PadMode::Constant, 0.0}), {v});
}

Grads vjp_narrow(Builder& b, const Node& n, NodeId dy, Want) {
  const auto& a = n.op.attrs<ir::NarrowAttrs>();
  int64_t axis = norm_axis(a.axis, b.rank(dy)), size = b.sizes(in(n, 0))[std::size_t(axis)];
  return {zero_pad_axis(b, dy, axis, a.start, size - a.start - a.len)};
}

Grads vjp_slice(Builder& b, const Node& n, NodeId dy, Want) {
  const auto& a = n.op.attrs<ir::SliceAttrs>();
  int64_t axis = norm_axis(a.axis, b.rank(dy)), size = b.sizes(in(n, 0))[std::size_t(axis)];
  // A contiguous slice's gradient is dy padded with zeros, as narrow's. (As a product with the
  // selection matrix it cost a [size, len] GEMM per slice: the q/k/v slices of a BERT layer's
  // fused projection made its training step 60x slower than PyTorch's.)
  if (a.step == 1) return {zero_pad_axis(b, dy, axis, a.start, size - a.start - a.len)};
  // A strided one: the selection matrix, transposed.
  std::vector<double> m(std::size_t(size * a.len), 0.0); // [size, len]: x position <- y position
  for (int64_t j = 0; j < a.len; ++j) m[std::size_t((a.start + j * a.step) * a.len + j)] = 1.0;
  return {b.along_axis_matrix(dy, axis, m, size, a.len)};
}

Grads vjp_concat(Builder& b, const Node& n, NodeId dy, Want want) {
  int64_t axis = norm_axis(n.op.attrs<ir::ConcatAttrs>().axis, b.rank(dy));
  Grads g(n.inputs.size());
  int64_t at = 0;
  for (std::size_t i = 0; i < n.inputs.size(); ++i) {
    int64_t len = b.sizes(in(n, i))[std::size_t(axis)];
    if (want[i]) g[i] = b.narrow(dy, axis, at, len);
    at += len;
  }
  return g;
}

Grads vjp_expand(Builder& b, const Node& n, NodeId dy, Want) {
  return {b.unbroadcast(dy, b.shape(in(n, 0)))};
}

Grads vjp_reverse(Builder& b, const Node& n, NodeId dy, Want) { return {b.op(n.op, {dy})}; }

Grads vjp_pad(Builder& b, const Node& n, NodeId dy, Want) {
  const auto& a = n.op.attrs<ir::PadAttrs>();
  auto xs = b.sizes(in(n, 0));
  NodeId g = dy;
  for (std::size_t ax = 0; ax < xs.size(); ++ax) {
    int64_t lo = a.pads[2 * ax], hi = a.pads[2 * ax + 1], len = xs[ax];
    if (lo == 0 && hi == 0) continue;
    if (a.mode == ir::PadMode::Constant) {
      g = b.narrow(g, int64_t(ax), lo, len);
      continue;
    }
    int64_t out = len + lo + hi; // [len, out]: where each output position reads
    std::vector<double> m(std::size_t(len * out), 0.0);
    for (int64_t o = 0; o < out; ++o) {
      int64_t c = o - lo, src = c;
      if (c < 0 || c >= len) {
        if (a.mode == ir::PadMode::Edge) {
          src = c < 0 ? 0 : len - 1;
        } else { // numpy 'reflect', as the interpreter
          int64_t period = 2 * (len - 1);
          int64_t r = len == 1 ? 0 : ((c % period) + period) % period;
          src = len == 1 ? 0 : (r < len ? r : period - r);
        }
      }
      m[std::size_t(src * out + o)] += 1.0;
    }
    g = b.along_axis_matrix(g, int64_t(ax), m, len, out);
  }
  return {g};
}

} // namespace

NodeId gather_adjoint(Builder& b, NodeId dy, NodeId indices, const std::vector<int64_t>& ts,
                      int64_t axis) {
  // A scatter-add of dy's index rows: O(numel(dy) + table), where a one-hot matmul would be
  // O(indices x table rows).
  axis = norm_axis(axis, int64_t(ts.size()));
  int64_t pre = 1, post = 1, size = ts[std::size_t(axis)];
  for (int64_t i = 0; i < axis; ++i) pre *= ts[std::size_t(i)];
  for (std::size_t i = std::size_t(axis) + 1; i < ts.size(); ++i) post *= ts[i];
  NodeId d3 = b.reshape(dy, {pre, -1, post}); // [pre, m, post]
  NodeId g = b.op(ir::Op(OpKind::ScatterAdd, ir::ScatterAddAttrs{1, size}),
                  {d3, b.reshape(indices, {-1})}); // [pre, size, post]
  return b.reshape(g, Ints(ts.begin(), ts.end()));
}

/// One-hot rows of the (normalized) indices against [0, size): [m, size] of dtype t.
NodeId one_hot(Builder& b, NodeId indices, int64_t size, DType t) {
  NodeId idx = b.cast(b.reshape(indices, {-1, 1}), DType::I64); // float indices truncate
  idx = b.where(b.bin(OpKind::Lt, idx, b.like(0, idx)), b.add(idx, b.like(double(size), idx)), idx);
  std::vector<double> iota(static_cast<std::size_t>(size));
  for (int64_t i = 0; i < size; ++i) iota[std::size_t(i)] = double(i);
  NodeId hit = b.bin(OpKind::Eq, idx, b.tensor(iota, Shape({1, size}, DType::I64)));
  return b.cast(hit, t);
}

namespace {

Grads vjp_gather(Builder& b, const Node& n, NodeId dy, Want) {
  return {gather_adjoint(b, dy, in(n, 1), b.sizes(in(n, 0)), n.op.attrs<ir::GatherAttrs>().axis),
          std::nullopt};
}

/// scatter_add is linear in its updates: their cotangent gathers dy's rows back.
Grads vjp_scatter_add(Builder& b, const Node& n, NodeId dy, Want) {
  int64_t axis = n.op.attrs<ir::ScatterAddAttrs>().axis;
  return {b.op(ir::Op(OpKind::Gather, ir::GatherAttrs{axis}), {dy, in(n, 1)}), std::nullopt};
}

NodeId swap_last2(Builder& b, NodeId x) {
  int64_t r = b.rank(x);
  Ints perm(static_cast<std::size_t>(r));
  for (int64_t i = 0; i < r; ++i) perm[std::size_t(i)] = i;
  std::swap(perm[std::size_t(r - 1)], perm[std::size_t(r - 2)]);
  return b.transpose(x, perm);
}

Grads vjp_matmul(Builder& b, const Node& n, NodeId dy, Want want) {
  NodeId a = in(n, 0), c = in(n, 1);
  bool av = b.rank(a) == 1, cv = b.rank(c) == 1;
  NodeId a2 = av ? b.reshape(a, {1, -1}) : a, c2 = cv ? b.reshape(c, {-1, 1}) : c;
  auto ps = b.shape(b.op(OpKind::MatMul, {a2, c2})).sizes();
  NodeId d2 = b.reshape(dy, Ints(ps.begin(), ps.end()));
  Grads g(2);
  auto back = [&](NodeId v, NodeId like2, NodeId orig) {
    NodeId u = b.unbroadcast(v, b.shape(like2));
    auto os = b.sizes(orig);
    return b.reshape(u, Ints(os.begin(), os.end()));
  };
  if (want[0]) g[0] = back(b.op(OpKind::MatMul, {d2, swap_last2(b, c2)}), a2, a);
  if (want[1] && b.rank(c2) == 2 && b.rank(a2) > 2 && b.shape(a2).is_static() &&
      b.shape(d2).is_static()) {
    // A matrix shared by every batch of a (x @ W in a layer over [batch, seq, in]): its gradient
    // is one product over all the batch's rows, aᵀ [K, B*M] times dy [B*M, N], not B products of
    // W's size written out and then summed over B.
    int64_t k = b.sizes(a2).back(), cols = b.sizes(d2).back();
    NodeId rows_a = b.reshape(a2, {-1, k}), rows_d = b.reshape(d2, {-1, cols});
    g[1] = back(b.op(OpKind::MatMul, {swap_last2(b, rows_a), rows_d}), c2, c);
  } else if (want[1]) {
    g[1] = back(b.op(OpKind::MatMul, {swap_last2(b, a2), d2}), c2, c);
  }
  return g;
}

// ---- Convolution and pooling (NCHW / NCDHW).

ConvGeom conv_geom(const Node& n) {
  if (n.op.kind() == OpKind::Conv2d) {
    const auto& a = n.op.attrs<ir::Conv2dAttrs>();
    return {{a.stride.begin(), a.stride.end()},
            {a.padding.begin(), a.padding.end()},
            {a.dilation.begin(), a.dilation.end()},
            a.groups};
  }
  const auto& a = n.op.attrs<ir::Conv3dAttrs>();
  return {{a.stride.begin(), a.stride.end()},
          {a.padding.begin(), a.padding.end()},
          {a.dilation.begin(), a.dilation.end()},
          a.groups};
}

} // namespace

/// The transposed convolution of dy with w that gives back a tensor of x_shape (the adjoint of
/// the convolution in its input): output_padding makes up the rows the stride dropped.
NodeId conv_input_adjoint(Builder& b, NodeId dy, NodeId w, const std::vector<int64_t>& x_shape,
                          const ConvGeom& c) {
  auto ds = b.sizes(dy), ws = b.sizes(w);
  std::size_t sp = ds.size() - 2;
  Ints out_pad(sp);
  for (std::size_t i = 0; i < sp; ++i) {
    int64_t base =
        (ds[2 + i] - 1) * c.stride[i] - 2 * c.padding[i] + c.dilation[i] * (ws[2 + i] - 1) + 1;
    out_pad[i] = x_shape[2 + i] - base;
  }
  if (sp == 2) {
    ir::ConvTranspose2dAttrs a{{ws[2], ws[3]},
                               {c.stride[0], c.stride[1]},
                               {c.padding[0], c.padding[1]},
                               {c.dilation[0], c.dilation[1]},
                               {out_pad[0], out_pad[1]},
                               c.groups};
    return b.op(ir::Op(OpKind::ConvTranspose2d, a), {dy, w});
  }
  ir::ConvTranspose3dAttrs a{{c.stride[0], c.stride[1], c.stride[2]},
                             {c.padding[0], c.padding[1], c.padding[2]},
                             {c.dilation[0], c.dilation[1], c.dilation[2]},
                             {out_pad[0], out_pad[1], out_pad[2]},
                             c.groups};
  return b.op(ir::Op(OpKind::ConvTranspose3d, a), {dy, w});
}

/// d/dw of a convolution: per group, the convolution of x (batch and channels swapped) with dy
/// as its kernel, stride and dilation exchanged, cut to the kernel's size.
NodeId conv_weight_adjoint(Builder& b, NodeId x, NodeId dy, const std::vector<int64_t>& w_shape,
                           const ConvGeom& c) {
  auto xs = b.sizes(x), ds = b.sizes(dy);
  std::size_t sp = xs.size() - 2;
  int64_t cg = xs[1] / c.groups, og = ds[1] / c.groups;
  Ints swap01{1, 0};
  for (std::size_t i = 0; i < sp; ++i) swap01.push_back(2 + int64_t(i));
  std::vector<NodeId> parts;
  for (int64_t g = 0; g < c.groups; ++g) {
    NodeId xg = c.groups == 1 ? x : b.narrow(x, 1, g * cg, cg);
    NodeId dg = c.groups == 1 ? dy : b.narrow(dy, 1, g * og, og);
    NodeId xt = b.transpose(xg, swap01), dt = b.transpose(dg, swap01); // [Cg, N, ..], [Og, N, ..]
    NodeId r;
    if (sp == 2) {
      ir::Conv2dAttrs a{{ds[2], ds[3]},
                        {c.dilation[0], c.dilation[1]},
                        {c.padding[0], c.padding[1]},
                        {c.stride[0], c.stride[1]},
                        1};
      r = b.op(ir::Op(OpKind::Conv2d, a), {xt, dt});
    } else {
      ir::Conv3dAttrs a{{c.dilation[0], c.dilation[1], c.dilation[2]},
                        {c.padding[0], c.padding[1], c.padding[2]},
                        {c.stride[0], c.stride[1], c.stride[2]},
                        1};
      r = b.op(ir::Op(OpKind::Conv3d, a), {xt, dt});
    }
    for (std::size_t i = 0; i < sp; ++i)
      if (b.sizes(r)[2 + i] != w_shape[2 + i]) r = b.narrow(r, 2 + int64_t(i), 0, w_shape[2 + i]);
    parts.push_back(b.transpose(r, swap01)); // [Og, Cg, k..]
  }
  return parts.size() == 1 ? parts[0] : b.concat(parts, 0);
}

namespace {

Grads vjp_conv(Builder& b, const Node& n, NodeId dy, Want want) {
  ConvGeom c = conv_geom(n);
  NodeId x = in(n, 0), w = in(n, 1);
  Grads g(2);
  if (want[0]) g[0] = conv_input_adjoint(b, dy, w, b.sizes(x), c);
  if (want[1]) g[1] = conv_weight_adjoint(b, x, dy, b.sizes(w), c);
  return g;
}

} // namespace

/// The adjoint of im2col (col2im): columns [N*Ho*Wo, C*kh*kw] summed back into [N, C, H, W]
/// by a transposed convolution with a one-hot kernel per (channel, tap).
NodeId col2im(Builder& b, NodeId cols, const std::vector<int64_t>& x_shape, ir::Ints2 k,
              ir::Ints2 stride, ir::Ints2 padding, ir::Ints2 dilation, int64_t ho, int64_t wo) {
  int64_t nb = x_shape[0], ch = x_shape[1], taps = k[0] * k[1];
  NodeId d = b.transpose(b.reshape(cols, {nb, ho, wo, ch * taps}), {0, 3, 1, 2});
  std::vector<double> wv(std::size_t(ch * taps * taps), 0.0); // [C*taps, 1, kh, kw]
  for (int64_t c = 0; c < ch; ++c)
    for (int64_t t = 0; t < taps; ++t) wv[std::size_t((c * taps + t) * taps + t)] = 1.0;
  NodeId w = b.tensor(wv, Shape({ch * taps, 1, k[0], k[1]}, b.shape(cols).dtype()));
  ConvGeom c{{stride[0], stride[1]}, {padding[0], padding[1]}, {dilation[0], dilation[1]}, ch};
  return conv_input_adjoint(b, d, w, x_shape, c);
}

NodeId max_pool_adjoint(Builder& b, NodeId x, NodeId y, NodeId dy, ir::Ints2 k, ir::Ints2 stride,
                        ir::Ints2 padding) {
  ir::Pool2dAttrs a{k, stride, padding};
  auto xs = b.sizes(x), ys = b.sizes(y);
  int64_t nb = xs[0], ch = xs[1], taps = a.kernel_size[0] * a.kernel_size[1];
  // Padded taps never win: pad with -inf, then take the windows as columns.
  Ints pads{0, 0, 0, 0, a.padding[0], a.padding[0], a.padding[1], a.padding[1]};
  NodeId xp = b.op(ir::Op(OpKind::Pad, ir::PadAttrs{pads, ir::PadMode::Constant,
                                                    -std::numeric_limits<double>::infinity()}),
                   {x});
  ir::Im2ColAttrs ia{a.kernel_size, a.stride, {0, 0}, {1, 1}};
  NodeId cols = b.reshape(b.op(ir::Op(OpKind::Im2Col, ia), {xp}), {-1, ch, taps});
  auto rows = [&](NodeId v) { return b.reshape(b.transpose(v, {0, 2, 3, 1}), {-1, ch, 1}); };
  NodeId hit = b.where(b.bin(OpKind::Eq, cols, rows(y)), b.like(1, x), b.like(0, x));
  NodeId share = b.div(rows(dy), b.sum(hit, {2}, true));
  NodeId dcols = b.reshape(b.mul(hit, share), {-1, ch * taps});
  std::vector<int64_t> ps{nb, ch, xs[2] + 2 * a.padding[0], xs[3] + 2 * a.padding[1]};
  NodeId g = col2im(b, dcols, ps, a.kernel_size, a.stride, {0, 0}, {1, 1}, ys[2], ys[3]);
  if (a.padding[0] > 0) g = b.narrow(g, 2, a.padding[0], xs[2]);
  if (a.padding[1] > 0) g = b.narrow(g, 3, a.padding[1], xs[3]);
  return g;
}

namespace {

int64_t out_len(int64_t len, int64_t k, int64_t s, int64_t p, int64_t d) {
  return (len + 2 * p - d * (k - 1) - 1) / s + 1;
}

Grads vjp_im2col(Builder& b, const Node& n, NodeId dy, Want) {
  const auto& a = n.op.attrs<ir::Im2ColAttrs>();
  auto xs = b.sizes(in(n, 0));
  int64_t ho = out_len(xs[2], a.kernel_size[0], a.stride[0], a.padding[0], a.dilation[0]);
  int64_t wo = out_len(xs[3], a.kernel_size[1], a.stride[1], a.padding[1], a.dilation[1]);
  return {col2im(b, dy, xs, a.kernel_size, a.stride, a.padding, a.dilation, ho, wo)};
}

Grads vjp_max_pool(Builder& b, const Node& n, NodeId dy, Want) {
  const auto& a = n.op.attrs<ir::Pool2dAttrs>();
  return {max_pool_adjoint(b, in(n, 0), n.id, dy, a.kernel_size, a.stride, a.padding)};
}

Grads vjp_avg_pool(Builder& b, const Node& n, NodeId dy, Want) { // a depthwise box filter
  const auto& a = n.op.attrs<ir::Pool2dAttrs>();
  auto xs = b.sizes(in(n, 0));
  int64_t ch = xs[1], taps = a.kernel_size[0] * a.kernel_size[1];
  std::vector<double> wv(std::size_t(ch * taps), 1.0 / double(taps));
  NodeId w = b.tensor(wv, Shape({ch, 1, a.kernel_size[0], a.kernel_size[1]}, b.shape(dy).dtype()));
  ConvGeom c{{a.stride[0], a.stride[1]}, {a.padding[0], a.padding[1]}, {1, 1}, ch};
  return {conv_input_adjoint(b, dy, w, xs, c)};
}

/// SAM2's axial rope rotates adjacent pairs by fixed angles; its adjoint rotates back.
Grads vjp_axial_rope(Builder& b, const Node& n, NodeId dy, Want) {
  const auto& a = n.op.attrs<ir::AxialRopeAttrs>();
  auto xs = b.sizes(in(n, 0));
  int64_t seq = xs[1], dim = a.head_dim, quarter = dim / 4, grid = a.end_x * a.end_y;
  std::vector<double> cs(std::size_t(seq * 2 * quarter)), sn(cs.size());
  for (int64_t s = 0; s < seq; ++s) {
    int64_t p = s % grid, tx = p % a.end_x, ty = p / a.end_x;
    for (int64_t j = 0; j < 2 * quarter; ++j) {
      int64_t f = j < quarter ? j : j - quarter;
      double freq = 1.0 / std::pow(double(a.theta), double(4 * f) / double(dim));
      double angle = double(j < quarter ? tx : ty) * freq;
      cs[std::size_t(s * 2 * quarter + j)] = std::cos(angle);
      sn[std::size_t(s * 2 * quarter + j)] = std::sin(angle);
    }
  }
  DType t = b.shape(dy).dtype();
  NodeId c = b.tensor(cs, Shape({seq, 1, 2 * quarter, 1}, t));
  NodeId s = b.tensor(sn, Shape({seq, 1, 2 * quarter, 1}, t));
  NodeId p = b.reshape(dy, {xs[0], seq, a.num_heads, 2 * quarter, 2});
  NodeId ya = b.narrow(p, 4, 0, 1), yb = b.narrow(p, 4, 1, 1);
  NodeId xa = b.add(b.mul(ya, c), b.mul(yb, s));
  NodeId xb = b.sub(b.mul(yb, c), b.mul(ya, s));
  return {b.reshape(b.concat({xa, xb}, 4), Ints(xs.begin(), xs.end()))};
}

/// fft is linear, y = s W x with the DFT matrix W symmetric, so in the real representation of
/// the complex values (the 2N real-block layout is a permutation of it) its adjoint is s conj(W):
/// the transform the other way, unscaled (norm Backward scales neither way), times the same s.
Grads vjp_fft(Builder& b, const Node& n, NodeId dy, Want) {
  const auto& a = n.op.attrs<ir::FftAttrs>();
  auto xs = b.sizes(in(n, 0));
  double len = xs.empty() ? 1.0 : double(xs.back()) / 2.0; // complex values per row (f32, f64)
  double scale = 1.0;
  if (a.norm == ir::FftNorm::Ortho) scale = 1.0 / std::sqrt(len);
  if (a.norm == ir::FftNorm::Forward && a.inverse) scale = 1.0 / len;
  NodeId g = b.op(ir::Op(OpKind::Fft, ir::FftAttrs{!a.inverse, ir::FftNorm::Backward}), {dy});
  if (scale != 1.0) g = b.mul(g, b.like(scale, g));
  return {g};
}

/// lfilter is linear in x for fixed coefficients: y = H x with H lower-triangular Toeplitz, so
/// H^T dy = reverse(H reverse(dy)) along the last axis. Coefficients and the initial state are
/// refused (not implemented) rather than given a wrong zero gradient.
Grads vjp_lfilter(Builder& b, const Node& n, NodeId dy, Want want) {
  for (std::size_t j = 1; j < want.size(); ++j)
    if (want[j])
      fail(ErrorKind::Unsupported, "autodiff: the gradient of lfilter with respect to its ",
           j == 3 ? "initial state zi" : "coefficients b and a",
           " is not implemented (only with respect to x)");
  int64_t last = b.rank(dy) - 1;
  auto rev = [&](NodeId v) { return b.op(ir::Op(OpKind::Reverse, ir::ReverseAttrs{{last}}), {v}); };
  NodeId filtered = b.op(n.op, {rev(dy), in(n, 1), in(n, 2)});
  Grads grads(n.inputs.size());
  grads[0] = rev(filtered);
  return grads;
}

constexpr RuleKind kRule = RuleKind::Rule;

/// The hand rows: the structural ops, whose rules are not one formula per element. Element-wise
/// ops with a derivative formula, kZeroGrad and kComposite kinds get their rows from ops.def
/// (rules.hpp: derived_rule_kind); leaves and kNonDifferentiable kinds have none.
constexpr VjpEntry kHand[] = {
    {OpKind::Cast, kRule, vjp_cast},
    {OpKind::Where, kRule, vjp_where},
    {OpKind::ReduceSum, kRule, vjp_reduce_sum},
    {OpKind::ReduceMean, kRule, vjp_reduce_mean},
    {OpKind::ReduceMax, kRule, vjp_reduce_extremum},
    {OpKind::ReduceMin, kRule, vjp_reduce_extremum},
    {OpKind::ReduceProd, kRule, vjp_reduce_prod},
    {OpKind::Cumsum, kRule, vjp_cumsum},
    {OpKind::Softmax, kRule, vjp_softmax},
    {OpKind::Reshape, kRule, vjp_reshape},
    {OpKind::Transpose, kRule, vjp_transpose},
    {OpKind::Narrow, kRule, vjp_narrow},
    {OpKind::Slice, kRule, vjp_slice},
    {OpKind::Concat, kRule, vjp_concat},
    {OpKind::Expand, kRule, vjp_expand},
    {OpKind::Reverse, kRule, vjp_reverse},
    {OpKind::Pad, kRule, vjp_pad},
    {OpKind::Gather, kRule, vjp_gather},
    {OpKind::ScatterAdd, kRule, vjp_scatter_add},
    {OpKind::MatMul, kRule, vjp_matmul},
    {OpKind::AxialRope2d, kRule, vjp_axial_rope},
    {OpKind::Conv2d, kRule, vjp_conv},
    {OpKind::Im2Col, kRule, vjp_im2col},
    {OpKind::Conv3d, kRule, vjp_conv},
    {OpKind::MaxPool2d, kRule, vjp_max_pool},
    {OpKind::AvgPool2d, kRule, vjp_avg_pool},
    {OpKind::Fft, kRule, vjp_fft},
    {OpKind::Lfilter, kRule, vjp_lfilter},
    {OpKind::Solve, kRule, linalg::vjp_solve},
    {OpKind::Slogdet, kRule, linalg::vjp_slogdet},
    {OpKind::Cholesky, kRule, linalg::vjp_cholesky},
    {OpKind::Qr, kRule, linalg::vjp_qr},
    {OpKind::Svd, kRule, linalg::vjp_svd},
    {OpKind::Eigh, kRule, linalg::vjp_eigh},
    {OpKind::FakeQuantize, kRule, quant::vjp_fake_quantize},
    {OpKind::DequantMatMul, kRule, quant::vjp_dequant_matmul},
    {OpKind::AllReduce, kRule, collective::vjp_all_reduce},
    {OpKind::AllGather, kRule, collective::vjp_all_gather},
    {OpKind::ReduceScatter, kRule, collective::vjp_reduce_scatter},
    {OpKind::Broadcast, kRule, collective::vjp_broadcast},
    {OpKind::ReduceToRoot, kRule, collective::vjp_reduce_to_root},
    {OpKind::Send, kRule, collective::vjp_send},
    {OpKind::Recv, kRule, collective::vjp_recv},
    {OpKind::GaussianSplatRender, kRule, splat::vjp_render},
    {OpKind::CustomFn, kRule, vjp_custom_fn},
    {OpKind::Custom, kRule, vjp_custom_op},
    {OpKind::Scan, kRule, vjp_scan},
};

constexpr std::array<VjpEntry, ir::kNumOps> kVjp =
    rule_table(derived_rule_kinds<false>(), VjpFn(vjp_unary), VjpFn(vjp_binary), kHand);

} // namespace

const VjpEntry* vjp_entry(OpKind k) {
  const VjpEntry& e = kVjp[std::size_t(k)];
  return e.how == RuleKind::None ? nullptr : &e;
}

RuleKind vjp_rule_kind(OpKind k) { return kVjp[std::size_t(k)].how; }

bool is_non_differentiable(OpKind k) {
  return ir::has_trait(k, ir::kLeaf) || ir::has_trait(k, ir::kNonDifferentiable);
}

} // namespace rlx::autodiff
