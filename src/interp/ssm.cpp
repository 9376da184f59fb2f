// src/interp/ssm.cpp -- kernels of the state-space family (the specification): selective_scan
// (Mamba S6), mamba2 (SSD, a scalar decay per head) and gated_delta_net. Plain loops over the
// recurrences exactly as include/rlx/ir/graph.hpp writes them, in double, rounded once to the
// output dtype (f32 or f64). The state starts at zero unless the node carries it in.
#include "kernels.hpp"

#include <cmath>

namespace rlx::interp::detail {

namespace {

/// x [B,S,H], delta [B,S,H], a [H,N], b [B,S,N], c [B,S,N] -> y [B,S,H]; per (batch, channel):
///   state[n] = exp(delta_t a[h,n]) state[n] + delta_t b_t[n] x_t;  y_t = sum_n c_t[n] state[n].
Buffer selective_scan(const ir::Node& n, Operands in) {
  auto xs = in[0]->shape().sizes();
  const int64_t nb = xs[0], ns = xs[1], nh = xs[2], nn = in[2]->shape().sizes()[1];
  std::vector<double> x = in[0]->to_f64(), dl = in[1]->to_f64(), a = in[2]->to_f64(),
                      b = in[3]->to_f64(), c = in[4]->to_f64();
  std::vector<double> y(x.size()), st(static_cast<std::size_t>(nn));
  for (int64_t bi = 0; bi < nb; ++bi)
    for (int64_t h = 0; h < nh; ++h) {
      std::fill(st.begin(), st.end(), 0.0);
      for (int64_t t = 0; t < ns; ++t) {
        const std::size_t xi = std::size_t((bi * ns + t) * nh + h);
        const std::size_t bt = std::size_t((bi * ns + t) * nn);
        const double d = dl[xi], u = x[xi];
        double acc = 0.0;
        for (int64_t k = 0; k < nn; ++k) {
          double& s = st[std::size_t(k)];
          s = std::exp(d * a[std::size_t(h * nn + k)]) * s + d * b[bt + std::size_t(k)] * u;
          acc += c[bt + std::size_t(k)] * s;
        }
        y[xi] = acc;
      }
    }
  return Buffer::from_f64(n.shape, y);
}

/// x [B,S,H,P], dt [B,S,H], a [H], b, c [B,S,G,N] (or [B,S,N]: G = 1) -> y [B,S,H,P]; per
/// (batch, head h, group g = h / (H/G)), a state [P,N]:
///   state[p,n] = exp(dt_t a[h]) state[p,n] + dt_t x_t[p] b_t[g,n];  y_t[p] = sum_n state[p,n]
///   c_t[g,n].
Buffer mamba2(const ir::Node& n, Operands in) {
  auto xs = in[0]->shape().sizes();
  auto bs = in[3]->shape().sizes();
  const int64_t nb = xs[0], ns = xs[1], nh = xs[2], np = xs[3], nn = bs.back();
  const int64_t ng = bs.size() == 4 ? bs[2] : 1, per_group = nh / ng;
  std::vector<double> x = in[0]->to_f64(), dt = in[1]->to_f64(), a = in[2]->to_f64(),
                      b = in[3]->to_f64(), c = in[4]->to_f64();
  std::vector<double> y(x.size()), st(static_cast<std::size_t>(np * nn));
  for (int64_t bi = 0; bi < nb; ++bi)
    for (int64_t h = 0; h < nh; ++h) {
      const int64_t g = h / per_group;
      std::fill(st.begin(), st.end(), 0.0);
      for (int64_t t = 0; t < ns; ++t) {
        const double d = dt[std::size_t((bi * ns + t) * nh + h)];
        const double decay = std::exp(d * a[std::size_t(h)]);
        const std::size_t bo = std::size_t(((bi * ns + t) * ng + g) * nn);
        const std::size_t xo = std::size_t(((bi * ns + t) * nh + h) * np);
        for (int64_t p = 0; p < np; ++p) {
          const double u = x[xo + std::size_t(p)];
          double acc = 0.0;
          for (int64_t k = 0; k < nn; ++k) {
            double& s = st[std::size_t(p * nn + k)];
            s = decay * s + d * u * b[bo + std::size_t(k)];
            acc += s * c[bo + std::size_t(k)];
          }
          y[xo + std::size_t(p)] = acc;
        }
      }
    }
  return Buffer::from_f64(n.shape, y);
}

/// q, k, v [B,S,H,N], g, beta [B,S,H], [state [B,H,N,N]] -> o [B,S,H,N] (carry_state: packed
/// with the final state, [B, S+N, H, N]); per (batch, head), S[i,j] (i indexes keys, j values):
///   S = exp(g_t) S;  u = beta_t (v_t - S^T k_t);  S = S + k_t u^T;  o_t = S^T q_t.
Buffer gated_delta_net(const ir::Node& n, Operands in) {
  const bool carry = n.op.attrs<ir::GatedDeltaNetAttrs>().carry_state;
  auto qs = in[0]->shape().sizes();
  const int64_t nb = qs[0], ns = qs[1], nh = qs[2], nn = qs[3];
  std::vector<double> q = in[0]->to_f64(), k = in[1]->to_f64(), v = in[2]->to_f64(),
                      g = in[3]->to_f64(), beta = in[4]->to_f64();
  std::vector<double> init = carry ? in[5]->to_f64() : std::vector<double>{};
  const int64_t rows = carry ? ns + nn : ns; // along axis 1 of the output
  std::vector<double> out(std::size_t(nb * rows * nh * nn));
  std::vector<double> st(static_cast<std::size_t>(nn * nn)), u(static_cast<std::size_t>(nn));
  const auto N = std::size_t(nn);
  for (int64_t bi = 0; bi < nb; ++bi)
    for (int64_t h = 0; h < nh; ++h) {
      for (std::size_t i = 0; i < N * N; ++i)
        st[i] = carry ? init[std::size_t((bi * nh + h) * nn * nn) + i] : 0.0;
      for (int64_t t = 0; t < ns; ++t) {
        const std::size_t si = std::size_t((bi * ns + t) * nh + h), vo = si * N;
        const double decay = std::exp(g[si]), bt = beta[si];
        for (double& s : st) s *= decay;
        for (std::size_t j = 0; j < N; ++j) {
          double kv = 0.0;
          for (std::size_t i = 0; i < N; ++i) kv += st[i * N + j] * k[vo + i];
          u[j] = bt * (v[vo + j] - kv);
        }
        for (std::size_t i = 0; i < N; ++i)
          for (std::size_t j = 0; j < N; ++j) st[i * N + j] += k[vo + i] * u[j];
        const std::size_t oo = std::size_t(((bi * rows + t) * nh + h) * nn);
        for (std::size_t j = 0; j < N; ++j) {
          double acc = 0.0;
          for (std::size_t i = 0; i < N; ++i) acc += st[i * N + j] * q[vo + i];
          out[oo + j] = acc;
        }
      }
      if (carry)
        for (std::size_t i = 0; i < N; ++i)
          for (std::size_t j = 0; j < N; ++j)
            out[std::size_t(((bi * rows + ns + int64_t(i)) * nh + h) * nn) + j] = st[i * N + j];
    }
  return Buffer::from_f64(n.shape, out);
}

} // namespace

RLX_KERNEL(SelectiveScan) { return selective_scan(n, in); }
RLX_KERNEL(Mamba2) { return mamba2(n, in); }
RLX_KERNEL(GatedDeltaNet) { return gated_delta_net(n, in); }

} // namespace rlx::interp::detail
