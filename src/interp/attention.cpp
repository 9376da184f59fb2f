// src/interp/attention.cpp -- attention kernels: scaled dot-product attention, rope, axial_rope2d.
// Scores, softmax and the weighted sum of values run in double; each output rounds once. A query
// whose every key is masked (or has a score of -inf) outputs zeros rather than NaN.
#include "kernels.hpp"
#include "support/size_math.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <vector>

namespace rlx::interp::detail {

using ir::MaskType;
using ir::OpKind;

namespace {

/// Operand count, floating-point dtypes for the first `floats` operands and the output, and
/// (any dtype but complex) for the rest.
void check_operands(const ir::Node& n, Operands in, std::size_t count, std::size_t floats) {
  if (in.size() != count)
    fail(ErrorKind::Runtime, n.op.name(), ": takes ", count, " operands, got ", in.size());
  if (!ir::is_float(n.shape.dtype()))
    fail(ErrorKind::Type, n.op.name(), ": needs floating-point operands, got ",
         ir::short_str(n.shape));
  for (std::size_t i = 0; i < in.size(); ++i) {
    ir::DType t = in[i]->dtype();
    if (i < floats ? !ir::is_float(t) : ir::is_complex(t))
      fail(ErrorKind::Type, n.op.name(), ": operand ", i,
           " has an unsupported dtype: ", ir::short_str(in[i]->shape()));
  }
}

Buffer attention(const ir::Node& n, Operands in) {
  const auto& a = n.op.attrs<ir::AttentionAttrs>();
  bool has_mask = a.mask == MaskType::Custom || a.mask == MaskType::Bias;
  check_operands(n, in, has_mask ? 4 : 3, 3);
  const Buffer &q = *in[0], &k = *in[1], &v = *in[2];
  int64_t heads = a.num_heads, dim = a.head_dim;
  std::vector<int64_t> qs = q.shape().sizes(), ks = k.shape().sizes();
  if (heads < 1 || dim < 1 || qs.size() != 3 || ks.size() != 3 ||
      rlx::detail::checked_mul(heads, dim) != qs[2] || ks[2] != qs[2] || ks[0] != qs[0] ||
      v.shape().sizes() != ks || n.shape.sizes() != qs)
    fail(ErrorKind::Shape, n.op.name(), ": expects q [B, Sq, ", heads, "*", dim,
         "] and k, v [B, Sk, ", heads, "*", dim, "], got ", ir::short_str(q.shape()), ", ",
         ir::short_str(k.shape()), ", ", ir::short_str(v.shape()));
  int64_t batch = qs[0], sq = qs[1], sk = ks[1], width = qs[2];
  if (a.mask == MaskType::SlidingWindow && a.window < 1)
    fail(ErrorKind::Shape, n.op.name(), ": a sliding window needs window >= 1, got ", a.window);
  std::optional<BroadcastIndex> mask_index;
  if (has_mask) {
    std::vector<int64_t> want = a.mask == MaskType::Custom ? std::vector<int64_t>{batch, sk}
                                                           : std::vector{batch, heads, sq, sk};
    const Buffer& m = *in[3];
    if (!broadcasts_to(m.shape().sizes(), want))
      fail(ErrorKind::Shape, n.op.name(), ": ", enum_name(a.mask), " mask ",
           ir::short_str(m.shape()), " does not broadcast to ",
           ir::short_str(ir::Shape::of(want, m.dtype())));
    mask_index.emplace(m.shape(), ir::Shape::of(want, m.dtype()));
  }
  double scale = a.score_scale ? double(*a.score_scale) : 1.0 / std::sqrt(double(dim));
  double cap = 0;
  if (a.attn_logit_softcap) {
    cap = *a.attn_logit_softcap;
    if (!(cap > 0) || !std::isfinite(cap))
      fail(ErrorKind::Value, n.op.name(), ": attn_logit_softcap must be positive and finite, got ",
           cap);
  }
  std::vector<double> qv = q.to_f64(), kv = k.to_f64(), vv = v.to_f64();
  std::vector<double> score(std::size_t(sk), 0.0);
  std::vector<char> visible(std::size_t(sk), 0);
  std::vector<double> acc(std::size_t(dim), 0.0);
  Buffer out(n.shape);
  int64_t shift = sk - sq; // queries are aligned to the end of the keys (decode)
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t i = 0; i < sq; ++i) {
        const double* qrow = &qv[std::size_t((b * sq + i) * width + h * dim)];
        double max = -std::numeric_limits<double>::infinity();
        bool nan = false;
        for (int64_t j = 0; j < sk; ++j) {
          bool vis = true;
          if (a.mask == MaskType::Causal || a.mask == MaskType::SlidingWindow) vis = j <= i + shift;
          if (a.mask == MaskType::SlidingWindow) vis = vis && j > i + shift - a.window;
          if (a.mask == MaskType::Custom) vis = in[3]->get_f64((*mask_index)(b * sk + j)) >= 0.5;
          visible[std::size_t(j)] = vis;
          if (!vis) continue;
          const double* krow = &kv[std::size_t((b * sk + j) * width + h * dim)];
          double s = 0;
          for (int64_t d = 0; d < dim; ++d) s += qrow[d] * krow[d];
          s *= scale;
          if (a.attn_logit_softcap) s = cap * std::tanh(s / cap);
          if (a.mask == MaskType::Bias)
            s += in[3]->get_f64((*mask_index)(((b * heads + h) * sq + i) * sk + j));
          score[std::size_t(j)] = s;
          nan = nan || std::isnan(s);
          if (s > max) max = s;
        }
        int64_t obase = (b * sq + i) * width + h * dim;
        if (!nan && max == -std::numeric_limits<double>::infinity()) {
          for (int64_t d = 0; d < dim; ++d) out.set_f64(obase + d, 0.0); // fully masked row
          continue;
        }
        double sum = 0;
        for (int64_t j = 0; j < sk; ++j) {
          if (!visible[std::size_t(j)]) continue;
          score[std::size_t(j)] = std::exp(score[std::size_t(j)] - max);
          sum += score[std::size_t(j)];
        }
        std::fill(acc.begin(), acc.end(), 0.0);
        for (int64_t j = 0; j < sk; ++j) {
          if (!visible[std::size_t(j)]) continue;
          double w = score[std::size_t(j)] / sum;
          const double* vrow = &vv[std::size_t((b * sk + j) * width + h * dim)];
          for (int64_t d = 0; d < dim; ++d) acc[std::size_t(d)] += w * vrow[d];
        }
        for (int64_t d = 0; d < dim; ++d) out.set_f64(obase + d, acc[std::size_t(d)]);
      }
  return out;
}

/// Rotate pairs (a, b) -> (a cos - b sin, b cos + a sin): NeoX pairs (p, p + n_rot/2), GptJ
/// (2p, 2p + 1), inside each head; cos and sin are [S, n_rot/2]; dims past n_rot are copied.
Buffer rope(const ir::Node& n, Operands in) {
  check_operands(n, in, 3, 3);
  const auto& a = n.op.attrs<ir::RopeAttrs>();
  const Buffer &x = *in[0], &cos = *in[1], &sin = *in[2];
  int64_t dim = a.head_dim, rot = a.n_rot == 0 ? a.head_dim : a.n_rot;
  std::vector<int64_t> xs = x.shape().sizes();
  if (dim < 1 || rot < 0 || rot > dim || rot % 2)
    fail(ErrorKind::Shape, n.op.name(), ": needs head_dim >= 1 and an even n_rot <= head_dim (",
         "head_dim ", dim, ", n_rot ", rot, ")");
  if (xs.empty() || xs.back() % dim || xs != n.shape.sizes())
    fail(ErrorKind::Shape, n.op.name(), ": last axis of ", ir::short_str(x.shape()),
         " must be a multiple of head_dim ", dim);
  int64_t seq = xs.size() >= 2 ? xs[xs.size() - 2] : 1, width = xs.back(), half = rot / 2;
  for (const Buffer* t : {&cos, &sin})
    if (rlx::detail::checked_mul(seq, half) != t->numel())
      fail(ErrorKind::Shape, n.op.name(), ": cos and sin must be [", seq, ", ", half,
           "] (one angle per rotated pair), got ", ir::short_str(t->shape()));
  Buffer out(n.shape);
  if (out.numel() == 0) return out;
  int64_t outer = x.numel() / (seq * width);
  bool neox = a.style == ir::RopeStyle::NeoX;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t s = 0; s < seq; ++s)
      for (int64_t h = 0; h < width / dim; ++h) {
        int64_t base = (o * seq + s) * width + h * dim;
        for (int64_t p = 0; p < half; ++p) {
          int64_t ia = base + (neox ? p : 2 * p), ib = base + (neox ? p + half : 2 * p + 1);
          double c = cos.get_f64(s * half + p), sn = sin.get_f64(s * half + p);
          double va = x.get_f64(ia), vb = x.get_f64(ib);
          out.set_f64(ia, va * c - vb * sn);
          out.set_f64(ib, vb * c + va * sn);
        }
        for (int64_t d = rot; d < dim; ++d) out.set_f64(base + d, x.get_f64(base + d));
      }
  return out;
}

/// SAM2's axial 2-D rope: position p (mod end_x*end_y) sits at (p % end_x, p / end_x); the
/// first head_dim/4 adjacent pairs rotate by x * freq_j, the next head_dim/4 by y * freq_j.
Buffer axial_rope(const ir::Node& n, Operands in) {
  check_operands(n, in, 1, 1);
  const auto& a = n.op.attrs<ir::AxialRopeAttrs>();
  const Buffer& x = *in[0];
  std::vector<int64_t> xs = x.shape().sizes();
  int64_t heads = a.num_heads, dim = a.head_dim;
  if (heads < 1 || dim < 4 || dim % 4 || xs.size() != 3 ||
      rlx::detail::checked_mul(heads, dim) != xs[2] || xs != n.shape.sizes())
    fail(ErrorKind::Shape, n.op.name(), ": expects [B, S, ", heads, "*", dim,
         "] with head_dim a multiple of 4, got ", ir::short_str(x.shape()));
  int64_t seq = xs[1];
  if (a.end_x < 1 || a.end_y < 1 || seq % a.end_x || (seq / a.end_x) % a.end_y)
    fail(ErrorKind::Shape, n.op.name(), ": sequence length ", seq,
         " is not a multiple of end_x*end_y (", a.end_x, "*", a.end_y, ")");
  if (!(a.theta > 0) || !std::isfinite(a.theta))
    fail(ErrorKind::Value, n.op.name(), ": theta must be positive and finite, got ", a.theta);
  Buffer out(n.shape);
  if (out.numel() == 0) return out;
  int64_t quarter = dim / 4, grid = a.end_x * a.end_y;
  std::vector<double> freq(static_cast<std::size_t>(quarter));
  for (int64_t j = 0; j < quarter; ++j)
    freq[std::size_t(j)] = 1.0 / std::pow(double(a.theta), double(4 * j) / double(dim));
  for (int64_t b = 0; b < xs[0]; ++b)
    for (int64_t s = 0; s < seq; ++s) {
      int64_t p = s % grid, tx = p % a.end_x, ty = p / a.end_x;
      for (int64_t h = 0; h < heads; ++h) {
        int64_t base = (b * seq + s) * xs[2] + h * dim;
        for (int64_t j = 0; j < 2 * quarter; ++j) {
          double angle = j < quarter ? double(tx) * freq[std::size_t(j)]
                                     : double(ty) * freq[std::size_t(j - quarter)];
          double c = std::cos(angle), sn = std::sin(angle);
          double va = x.get_f64(base + 2 * j), vb = x.get_f64(base + 2 * j + 1);
          out.set_f64(base + 2 * j, va * c - vb * sn);
          out.set_f64(base + 2 * j + 1, vb * c + va * sn);
        }
      }
    }
  return out;
}

} // namespace

RLX_KERNEL(Attention) { return attention(n, in); }
RLX_KERNEL(Rope) { return rope(n, in); }
RLX_KERNEL(AxialRope2d) { return axial_rope(n, in); }

} // namespace rlx::interp::detail
