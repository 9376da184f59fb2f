// src/interp/recurrent.cpp -- kernels of lstm, gru and rnn: the specification, plain loops in
// float64 over layers, directions, steps and gates (weight layout in src/ops/recurrent.hpp).
#include "ops/recurrent.hpp"
#include "kernels.hpp"

#include <algorithm>
#include <cmath>

namespace rlx::interp::detail {

namespace {

double sigmoid(double v) { return 1.0 / (1.0 + std::exp(-v)); }

Buffer recurrent(const ir::Node& n, Operands in) {
  const ir::OpKind kind = n.op.kind();
  const auto& attrs = n.op.attrs<ir::RecurrentAttrs>();
  const ops::RecurrentLayout L = ops::recurrent_layout(n.op, in[0]->shape());
  const int64_t B = L.batch, S = L.seq, H = L.hidden, G = L.gates, D = L.dirs;
  const std::size_t first_state = ops::recurrent_weight_operands(kind);
  const bool has_init = in.size() > first_state;
  const std::vector<double> x = in[0]->to_f64(), w_ih = in[1]->to_f64(), w_hh = in[2]->to_f64(),
                            bias = in[3]->to_f64();
  const std::vector<double> b_hh = kind == ir::OpKind::Gru ? in[4]->to_f64() : bias;
  std::vector<double> h0, c0;
  if (has_init) h0 = in[first_state]->to_f64();
  if (has_init && kind == ir::OpKind::Lstm) c0 = in[first_state + 1]->to_f64();

  // Activations of the current layer, batch-first [B, S, in] whatever the operand layout.
  int64_t width = L.input;
  std::vector<double> cur(std::size_t(B * S * width));
  for (int64_t b = 0; b < B; ++b)
    for (int64_t s = 0; s < S; ++s)
      for (int64_t i = 0; i < width; ++i)
        cur[std::size_t((b * S + s) * width + i)] =
            x[std::size_t((L.batch_first ? b * S + s : s * B + b) * width + i)];
  std::vector<double> hn(std::size_t(L.state_numel())), cn(hn.size());
  const auto hs = std::size_t(H), gs = std::size_t(G * H);
  std::vector<double> h(hs), c(hs), pre(gs), rec(gs);
  for (int64_t l = 0; l < L.layers; ++l) {
    const int64_t in_l = L.in_size(l);
    std::vector<double> next(std::size_t(B * S * D * H));
    for (int64_t d = 0; d < D; ++d) {
      const double* W = w_ih.data() + L.w_ih_offset(l, d);
      const double* U = w_hh.data() + L.w_hh_offset(l, d);
      const double* bi = bias.data() + L.bias_offset(l, d);
      const double* bh = b_hh.data() + L.bias_offset(l, d);
      const int64_t blk = L.block(l, d);
      for (int64_t b = 0; b < B; ++b) {
        for (int64_t j = 0; j < H; ++j) {
          std::size_t at = std::size_t((blk * B + b) * H + j);
          h[std::size_t(j)] = has_init ? h0[at] : 0.0;
          c[std::size_t(j)] = has_init && kind == ir::OpKind::Lstm ? c0[at] : 0.0;
        }
        for (int64_t s = 0; s < S; ++s) {
          const int64_t t = d == 0 ? s : S - 1 - s;
          const double* xt = cur.data() + (b * S + t) * in_l;
          for (int64_t r = 0; r < G * H; ++r) {
            double p = 0.0, q = 0.0;
            for (int64_t i = 0; i < in_l; ++i) p += W[r * in_l + i] * xt[i];
            for (int64_t k = 0; k < H; ++k) q += U[r * H + k] * h[std::size_t(k)];
            pre[std::size_t(r)] = p + bi[r];
            rec[std::size_t(r)] = q;
          }
          for (int64_t j = 0; j < H; ++j) {
            auto P = [&](int64_t g) { return pre[std::size_t(g * H + j)]; };
            auto R = [&](int64_t g) { return rec[std::size_t(g * H + j)]; };
            double& hj = h[std::size_t(j)];
            if (kind == ir::OpKind::Lstm) {
              double ig = sigmoid(P(0) + R(0)), fg = sigmoid(P(1) + R(1));
              double gg = std::tanh(P(2) + R(2)), og = sigmoid(P(3) + R(3));
              double& cj = c[std::size_t(j)];
              cj = fg * cj + ig * gg;
              hj = og * std::tanh(cj);
            } else if (kind == ir::OpKind::Gru) {
              double r = sigmoid(P(0) + R(0) + bh[j]), z = sigmoid(P(1) + R(1) + bh[H + j]);
              double nv = std::tanh(P(2) + r * (R(2) + bh[2 * H + j]));
              hj = (1.0 - z) * nv + z * hj;
            } else {
              double v = P(0) + R(0);
              hj = attrs.relu ? std::max(v, 0.0) : std::tanh(v);
            }
          }
          for (int64_t j = 0; j < H; ++j)
            next[std::size_t((b * S + t) * D * H + d * H + j)] = h[std::size_t(j)];
        }
        for (int64_t j = 0; j < H; ++j) {
          std::size_t at = std::size_t((blk * B + b) * H + j);
          hn[at] = h[std::size_t(j)];
          cn[at] = c[std::size_t(j)];
        }
      }
    }
    cur = std::move(next);
    width = D * H;
  }
  std::vector<double> out(
      std::size_t(L.y_numel() + (attrs.carry ? ops::recurrent_states(kind) * L.state_numel() : 0)));
  for (int64_t b = 0; b < B; ++b)
    for (int64_t s = 0; s < S; ++s)
      for (int64_t i = 0; i < width; ++i)
        out[std::size_t((L.batch_first ? b * S + s : s * B + b) * width + i)] =
            cur[std::size_t((b * S + s) * width + i)];
  if (attrs.carry) {
    std::copy(hn.begin(), hn.end(), out.begin() + L.y_numel());
    if (kind == ir::OpKind::Lstm)
      std::copy(cn.begin(), cn.end(), out.begin() + L.y_numel() + L.state_numel());
  }
  return Buffer::from_f64(n.shape, out);
}

} // namespace

RLX_KERNEL(Lstm) { return recurrent(n, in); }
RLX_KERNEL(Gru) { return recurrent(n, in); }
RLX_KERNEL(Rnn) { return recurrent(n, in); }

} // namespace rlx::interp::detail
