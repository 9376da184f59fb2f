// src/ops/decompose.cpp -- decomposition rules: each composite op (kComposite in ops.def) as a
// graph of primitives. The rules compute what the interpreter's direct kernels compute (tests
// check both agree). The rule table is built from ops.def: a composite without a rule does not
// compile.
#include "decompose.hpp"

#include "recurrent.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace rlx::ops {

using ir::DType;
using ir::Ints;
using ir::NodeId;
using ir::OpKind;

ir::NodeId Emitter::op(ir::Op o, std::vector<ir::NodeId> inputs) {
  std::vector<ir::Shape> shapes;
  for (ir::NodeId in : inputs) shapes.push_back(g_.shape(in));
  auto s = ir::infer_shape(o, shapes);
  RLX_CHECK(s.has_value(), "decompose: no static shape rule for ", o.name());
  return g_.add_node(std::move(o), std::move(inputs), *s);
}

ir::NodeId Emitter::tensor(const std::vector<double>& values, const ir::Shape& shape) {
  Buffer b = Buffer::from_f64(shape, values);
  ir::Bytes bytes;
  bytes.data.resize(b.bytes().size());
  if (!bytes.data.empty()) std::memcpy(bytes.data.data(), b.bytes().data(), bytes.data.size());
  return g_.add_node(ir::Op(OpKind::Constant, ir::ConstantAttrs{std::move(bytes)}), {}, shape);
}

ir::NodeId Emitter::scalar(double v, DType t) { return tensor({v}, ir::Shape::scalar(t)); }

ir::NodeId Emitter::scan(ir::NodeId init, std::vector<ir::NodeId> bcasts,
                         std::vector<ir::NodeId> xs, ir::Graph body, int64_t length,
                         bool trajectory) {
  ir::ScanAttrs a;
  a.body = ir::SubGraph(std::move(body));
  a.length = length;
  a.save_trajectory = trajectory;
  a.num_bcast = int64_t(bcasts.size());
  a.num_xs = int64_t(xs.size());
  std::vector<ir::NodeId> operands{init};
  operands.insert(operands.end(), bcasts.begin(), bcasts.end());
  operands.insert(operands.end(), xs.begin(), xs.end());
  return op(ir::Op(OpKind::Scan, std::move(a)), std::move(operands));
}

namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

int64_t rank_of(Emitter& e, NodeId x) { return int64_t(e.shape(x).rank()); }
int64_t pos_axis(int64_t axis, int64_t rank) { return axis < 0 ? axis + rank : axis; }

/// Reshape a per-channel vector v to broadcast along `axis` of a rank-`rank` tensor.
NodeId along_axis(Emitter& e, NodeId v, int64_t axis, int64_t rank) {
  Ints dims(std::size_t(rank - axis), 1);
  dims[0] = -1;
  return e.reshape(v, dims);
}

/// Stable softmax whose fully masked rows (all -inf) give zeros, like the attention kernel.
NodeId masked_softmax(Emitter& e, NodeId s, int64_t axis) {
  DType t = e.shape(s).dtype();
  // The shift by the row's max changes no output (exp(s - m) / sum(exp(s - m)) for any finite
  // m), so no gradient flows through it: without the stop, reverse mode differentiated the max
  // too (an indicator of the row's maxima, two more row sums and three more passes over the
  // scores, all adding up to zero).
  NodeId m = e.op(OpKind::StopGradient, {e.reduce(OpKind::ReduceMax, s, {axis})});
  NodeId is_inf = e.op(OpKind::Eq, {m, e.scalar(kNegInf, t)});
  NodeId safe_m = e.op(OpKind::Where, {is_inf, e.scalar(0, t), m});
  NodeId ex = e.op(OpKind::Exp, {e.sub(s, safe_m)});
  NodeId z = e.reduce(OpKind::ReduceSum, ex, {axis});
  // z >= 1 whenever a key is visible (its max contributes exp(0)); 0 only for masked rows.
  return e.div(ex, e.op(OpKind::Max, {z, e.scalar(1e-30, t)}));
}

NodeId softmax(Emitter& e, NodeId x, int64_t axis) {
  NodeId m = e.reduce(OpKind::ReduceMax, x, {axis});
  NodeId ex = e.op(OpKind::Exp, {e.sub(x, m)});
  return e.div(ex, e.reduce(OpKind::ReduceSum, ex, {axis}));
}

/// (x - mean) / sqrt(var + eps) over `axes` (kept), or x / sqrt(mean(x^2) + eps) when rms.
NodeId normalize(Emitter& e, NodeId x, const Ints& axes, float eps, bool rms) {
  DType t = e.shape(x).dtype();
  NodeId c = x;
  if (!rms) c = e.sub(x, e.reduce(OpKind::ReduceMean, x, axes));
  NodeId var = e.reduce(OpKind::ReduceMean, e.mul(c, c), axes);
  NodeId inv = e.op(OpKind::Rsqrt, {e.add(var, e.scalar(double(eps), t))});
  return e.mul(c, inv);
}

NodeId affine(Emitter& e, NodeId y, NodeId gamma, NodeId beta, int64_t axis, int64_t rank) {
  return e.add(e.mul(y, along_axis(e, gamma, axis, rank)), along_axis(e, beta, axis, rank));
}

/// layer_norm / rms_norm over one axis.
NodeId axis_norm(Emitter& e, const ir::Node& n, std::span<const NodeId> in, bool rms) {
  NodeId x = in[0];
  int64_t r = rank_of(e, x);
  const auto& a = n.op.attrs<ir::NormAttrs>();
  int64_t axis = pos_axis(a.axis, r);
  return affine(e, normalize(e, x, {axis}, a.eps, rms), in[1], in[2], axis, r);
}

/// norm(x + residual [+ bias]) over the last axis.
NodeId residual_norm(Emitter& e, const ir::Node& n, std::span<const NodeId> in, bool rms) {
  const auto& a = n.op.attrs<ir::FusedResidualNormAttrs>();
  int64_t r = rank_of(e, in[0]);
  NodeId s = e.add(in[0], in[1]);
  std::size_t g = 2;
  if (a.has_bias) s = e.add(s, in[g++]);
  return affine(e, normalize(e, s, {r - 1}, a.eps, rms), in[g], in[g + 1], r - 1, r);
}

NodeId attention(Emitter& e, const ir::Node& n, std::span<const NodeId> in) {
  const auto& a = n.op.attrs<ir::AttentionAttrs>();
  auto qs = e.shape(in[0]).sizes(), ks = e.shape(in[1]).sizes();
  int64_t b = qs[0], sq = qs[1], sk = ks[1], h = a.num_heads, d = a.head_dim;
  DType t = e.shape(in[0]).dtype();
  auto heads = [&](NodeId x, int64_t s, Ints perm) {
    return e.transpose(e.reshape(x, {b, s, h, d}), perm);
  };
  NodeId q = heads(in[0], sq, {0, 2, 1, 3});  // [B, H, Sq, D]
  NodeId kt = heads(in[1], sk, {0, 2, 3, 1}); // [B, H, D, Sk]
  NodeId v = heads(in[2], sk, {0, 2, 1, 3});  // [B, H, Sk, D]
  double scale = a.score_scale ? double(*a.score_scale) : 1.0 / std::sqrt(double(d));
  NodeId s = e.mul(e.op(OpKind::MatMul, {q, kt}), e.scalar(scale, t));
  if (a.attn_logit_softcap) {
    NodeId c = e.scalar(double(*a.attn_logit_softcap), t);
    s = e.mul(c, e.op(OpKind::Tanh, {e.div(s, c)}));
  }
  if (a.mask == ir::MaskType::Causal || a.mask == ir::MaskType::SlidingWindow) {
    std::vector<double> m(std::size_t(sq * sk), 0.0);
    for (int64_t i = 0; i < sq; ++i)
      for (int64_t j = 0; j < sk; ++j) {
        int64_t last = i + (sk - sq);
        bool masked = j > last || (a.mask == ir::MaskType::SlidingWindow && j <= last - a.window);
        if (masked) m[std::size_t(i * sk + j)] = kNegInf;
      }
    s = e.add(s, e.tensor(m, ir::Shape({sq, sk}, t)));
  } else if (a.mask == ir::MaskType::Custom) {
    NodeId valid = e.reshape(in[3], {b, 1, 1, sk});
    NodeId masked = e.op(OpKind::Lt, {valid, e.scalar(0.5, e.shape(in[3]).dtype())});
    s = e.op(OpKind::Where, {masked, e.scalar(kNegInf, t), s});
  } else if (a.mask == ir::MaskType::Bias) {
    s = e.add(s, in[3]);
  }
  NodeId ctx = e.op(OpKind::MatMul, {masked_softmax(e, s, -1), v}); // [B, H, Sq, D]
  return e.reshape(e.transpose(ctx, {0, 2, 1, 3}), {b, sq, h * d});
}

NodeId rope(Emitter& e, const ir::Node& n, std::span<const NodeId> in) {
  const auto& a = n.op.attrs<ir::RopeAttrs>();
  auto xs = e.shape(in[0]).sizes();
  int64_t d = a.head_dim, nr = a.n_rot == 0 ? a.head_dim : a.n_rot, half = nr / 2;
  int64_t s = xs[xs.size() - 2], hd = xs.back(), h = hd / d;
  Ints split(xs.begin(), xs.end() - 1);
  split.push_back(h);
  split.push_back(d); // [..., S, H, D]
  NodeId x = e.reshape(in[0], split);
  int64_t r = int64_t(split.size());
  NodeId rot = e.narrow(x, r - 1, 0, nr);
  NodeId x1, x2, cos, sin;
  if (a.style == ir::RopeStyle::NeoX) {
    x1 = e.narrow(rot, r - 1, 0, half);
    x2 = e.narrow(rot, r - 1, half, half);
    cos = e.reshape(in[1], {s, 1, half});
    sin = e.reshape(in[2], {s, 1, half});
  } else { // GptJ: pairs of neighbours
    Ints pairs(split.begin(), split.end() - 1);
    pairs.push_back(half);
    pairs.push_back(2); // [..., S, H, n/2, 2]
    NodeId p = e.reshape(rot, pairs);
    x1 = e.narrow(p, r, 0, 1);
    x2 = e.narrow(p, r, 1, 1);
    cos = e.reshape(in[1], {s, 1, half, 1});
    sin = e.reshape(in[2], {s, 1, half, 1});
  }
  NodeId y1 = e.sub(e.mul(x1, cos), e.mul(x2, sin));
  NodeId y2 = e.add(e.mul(x2, cos), e.mul(x1, sin));
  NodeId y = e.concat({y1, y2}, a.style == ir::RopeStyle::NeoX ? r - 1 : r);
  if (a.style == ir::RopeStyle::GptJ) {
    Ints back(split.begin(), split.end() - 1);
    back.push_back(nr);
    y = e.reshape(y, back);
  }
  if (nr < d) y = e.concat({y, e.narrow(x, r - 1, nr, d - nr)}, r - 1);
  return e.reshape(y, Ints(xs.begin(), xs.end()));
}

/// Transposed convolution as a direct one: zero-insert the input by the stride, pad it by
/// dilation*(k-1) - padding (+ output_padding after), and convolve with the spatially flipped
/// kernel whose in/out channels are swapped within each group. Spatial rank 2 or 3.
NodeId transposed_conv(Emitter& e, NodeId x, NodeId w, const Ints& stride, const Ints& pad,
                       const Ints& dil, const Ints& out_pad, int64_t groups) {
  auto xs = e.shape(x).sizes(), ws = e.shape(w).sizes();
  std::size_t sp = xs.size() - 2;
  int64_t r = int64_t(xs.size());
  // Zero insertion: [N, C, L0, L1, ..] -> [N, C, L0, 1, L1, 1, ..] -> pad the 1s to the stride.
  Ints split{xs[0], xs[1]}, pads(2 * (2 + 2 * sp), 0), merged{xs[0], xs[1]};
  for (std::size_t i = 0; i < sp; ++i) {
    split.push_back(xs[2 + i]);
    split.push_back(1);
    pads[2 * (3 + 2 * i) + 1] = stride[i] - 1;
    merged.push_back(xs[2 + i] * stride[i]);
  }
  NodeId y = e.op(ir::Op(OpKind::Pad, ir::PadAttrs{pads, ir::PadMode::Constant, 0.0}),
                  {e.reshape(x, split)});
  y = e.reshape(y, merged);
  for (std::size_t i = 0; i < sp; ++i) {
    int64_t axis = 2 + int64_t(i), k = ws[2 + i];
    int64_t len = (xs[2 + i] - 1) * stride[i] + 1; // drop the zeros after the last element
    int64_t lo = dil[i] * (k - 1) - pad[i], hi = lo + out_pad[i];
    y = e.narrow(y, axis, 0, len);
    Ints p(std::size_t(2 * r), 0);
    p[std::size_t(2 * axis)] = std::max<int64_t>(lo, 0);
    p[std::size_t(2 * axis + 1)] = std::max<int64_t>(hi, 0);
    y = e.op(ir::Op(OpKind::Pad, ir::PadAttrs{p, ir::PadMode::Constant, 0.0}), {y});
    int64_t now = len + std::max<int64_t>(lo, 0) + std::max<int64_t>(hi, 0);
    int64_t start = lo < 0 ? -lo : 0, stop = now - (hi < 0 ? -hi : 0);
    if (start > 0 || stop < now) y = e.narrow(y, axis, start, stop - start);
  }
  // Weight [Cin, Cout/g, k..] -> flip -> [g, Cin/g, Cout/g, k..] -> [g, Cout/g, Cin/g, k..].
  Ints flip, grouped{groups, ws[0] / groups, ws[1]}, perm{0, 2, 1},
      conv_w{ws[1] * groups, ws[0] / groups};
  for (std::size_t i = 0; i < sp; ++i) {
    flip.push_back(2 + int64_t(i));
    grouped.push_back(ws[2 + i]);
    perm.push_back(3 + int64_t(i));
    conv_w.push_back(ws[2 + i]);
  }
  NodeId wf = e.op(ir::Op(OpKind::Reverse, ir::ReverseAttrs{flip}), {w});
  wf = e.reshape(e.transpose(e.reshape(wf, grouped), perm), conv_w);
  if (sp == 2) {
    ir::Conv2dAttrs a{{ws[2], ws[3]}, {1, 1}, {0, 0}, {dil[0], dil[1]}, groups};
    return e.op(ir::Op(OpKind::Conv2d, a), {y, wf});
  }
  ir::Conv3dAttrs a{{1, 1, 1}, {0, 0, 0}, {dil[0], dil[1], dil[2]}, groups};
  return e.op(ir::Op(OpKind::Conv3d, a), {y, wf});
}

using Rule = NodeId (*)(Emitter& e, const ir::Node& n, std::span<const NodeId> in);

/// The decomposition of op kind K: one definition below per kind marked kComposite.
template <OpKind K> NodeId rule(Emitter& e, const ir::Node& n, std::span<const NodeId> in) = delete;

#define RLX_RULE(E)                                                                                \
  template <>                                                                                      \
  NodeId rule<OpKind::E>([[maybe_unused]] Emitter & e, [[maybe_unused]] const ir::Node& n,         \
                         [[maybe_unused]] std::span<const NodeId> in)

RLX_RULE(Softmax) { return softmax(e, in[0], n.op.attrs<ir::AxisAttrs>().axis); }
RLX_RULE(FusedMatMulBiasAct) {
  NodeId y = e.add(e.op(OpKind::MatMul, {in[0], in[1]}), in[2]);
  if (auto act = n.op.attrs<ir::FusedMatMulAttrs>().activation) y = e.op(ir::to_op_kind(*act), {y});
  return y;
}
RLX_RULE(FusedSwiGLU) {
  auto hs = e.shape(in[0]).sizes();
  int64_t r = int64_t(hs.size()), half = hs.back() / 2;
  NodeId first = e.narrow(in[0], r - 1, 0, half), second = e.narrow(in[0], r - 1, half, half);
  const auto& a = n.op.attrs<ir::SwiGluAttrs>();
  NodeId up = a.gate_first ? second : first, gate = a.gate_first ? first : second;
  NodeId y = e.mul(e.op(OpKind::Silu, {gate}), up);
  if (a.cast_to) y = e.op(ir::Op(OpKind::Cast, ir::CastAttrs{*a.cast_to}), {y});
  return y;
}
RLX_RULE(LayerNorm) { return axis_norm(e, n, in, false); }
RLX_RULE(RmsNorm) { return axis_norm(e, n, in, true); }
RLX_RULE(LayerNorm2d) {
  NodeId y = normalize(e, in[0], {1}, n.op.attrs<ir::EpsAttrs>().eps, false);
  return affine(e, y, in[1], in[2], 1, rank_of(e, in[0]));
}
RLX_RULE(GroupNorm) {
  const auto& a = n.op.attrs<ir::GroupNormAttrs>();
  auto sizes = e.shape(in[0]).sizes();
  NodeId grouped = e.reshape(in[0], {sizes[0], a.num_groups, -1});
  NodeId y = e.reshape(normalize(e, grouped, {2}, a.eps, false), Ints(sizes.begin(), sizes.end()));
  return affine(e, y, in[1], in[2], 1, rank_of(e, in[0]));
}
RLX_RULE(BatchNormInference) {
  NodeId x = in[0];
  int64_t r = rank_of(e, x);
  DType t = e.shape(x).dtype();
  float eps = n.op.attrs<ir::EpsAttrs>().eps;
  NodeId mean = along_axis(e, in[3], 1, r), var = along_axis(e, in[4], 1, r);
  NodeId inv = e.op(OpKind::Rsqrt, {e.add(var, e.scalar(double(eps), t))});
  return affine(e, e.mul(e.sub(x, mean), inv), in[1], in[2], 1, r);
}
RLX_RULE(FusedResidualLN) { return residual_norm(e, n, in, false); }
RLX_RULE(FusedResidualRmsNorm) { return residual_norm(e, n, in, true); }
RLX_RULE(Attention) { return attention(e, n, in); }
RLX_RULE(Rope) { return rope(e, n, in); }

auto ints(auto arr) { return Ints(arr.begin(), arr.end()); }

RLX_RULE(ConvTranspose2d) {
  const auto& a = n.op.attrs<ir::ConvTranspose2dAttrs>();
  return transposed_conv(e, in[0], in[1], ints(a.stride), ints(a.padding), ints(a.dilation),
                         ints(a.output_padding), a.groups);
}
RLX_RULE(ConvTranspose3d) {
  const auto& a = n.op.attrs<ir::ConvTranspose3dAttrs>();
  return transposed_conv(e, in[0], in[1], ints(a.stride), ints(a.padding), ints(a.dilation),
                         ints(a.output_padding), a.groups);
}
RLX_RULE(ConvTranspose1d) { // as 2-D with a height of 1
  const auto& a = n.op.attrs<ir::ConvTranspose1dAttrs>();
  auto xs = e.shape(in[0]).sizes(), ws = e.shape(in[1]).sizes();
  NodeId x2 = e.reshape(in[0], {xs[0], xs[1], 1, xs[2]});
  NodeId w2 = e.reshape(in[1], {ws[0], ws[1], 1, ws[2]});
  NodeId y = transposed_conv(e, x2, w2, {1, a.stride}, {0, a.padding}, {1, a.dilation},
                             {0, a.output_padding}, a.groups);
  auto ys = e.shape(y).sizes();
  return e.reshape(y, {ys[0], ys[1], ys[3]});
}
RLX_RULE(Lstm) { return decompose_recurrent(e, n, in); }
RLX_RULE(Gru) { return decompose_recurrent(e, n, in); }
RLX_RULE(Rnn) { return decompose_recurrent(e, n, in); }
RLX_RULE(SelectiveScan) { return decompose_selective_scan(e, n, in); }
RLX_RULE(Mamba2) { return decompose_mamba2(e, n, in); }
RLX_RULE(GatedDeltaNet) { return decompose_gated_delta_net(e, n, in); }
#undef RLX_RULE

template <OpKind K> constexpr Rule rule_of() {
  if constexpr (ir::has_trait(K, ir::kComposite))
    return &rule<K>;
  else
    return nullptr;
}

constexpr Rule kRules[] = {
#define OP(E, N, F, A, T, S) rule_of<OpKind::E>(),
#include "rlx/ir/ops.def"
};

} // namespace

std::optional<NodeId> decompose_node(Emitter& e, const ir::Node& n, std::span<const NodeId> in) {
  Rule r = kRules[std::size_t(n.op.kind())];
  if (!r) return std::nullopt;
  return r(e, n, in);
}

} // namespace rlx::ops
