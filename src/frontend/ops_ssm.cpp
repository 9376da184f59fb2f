// src/frontend/ops_ssm.cpp -- Tensor functions of the state-space scans (include/rlx/ssm.hpp).
#include "rlx/apply.hpp"
#include "rlx/ssm.hpp"

namespace rlx::nn {

namespace {

int64_t last_size(const ir::Graph& g, ir::NodeId id) {
  const ir::Shape& s = g.shape(id);
  return s.rank() && s.dims().back().is_static() ? s.dims().back().size() : 0;
}

} // namespace

Tensor selective_scan(const Tensor& x, const Tensor& delta, const Tensor& a, const Tensor& b,
                      const Tensor& c, Loc loc) {
  return apply(
      {x, delta, a, b, c},
      [&](ir::Graph& g, std::span<const ir::NodeId> in) {
        return g.selective_scan(in[0], in[1], in[2], in[3], in[4], last_size(g, in[2]),
                                g.shape(in[0]), loc);
      },
      loc);
}

Tensor mamba2(const Tensor& x, const Tensor& dt, const Tensor& a, const Tensor& b, const Tensor& c,
              Loc loc) {
  return apply(
      {x, dt, a, b, c},
      [&](ir::Graph& g, std::span<const ir::NodeId> in) {
        return g.mamba2(in[0], in[1], in[2], in[3], in[4], last_size(g, in[0]), last_size(g, in[3]),
                        g.shape(in[0]), loc);
      },
      loc);
}

Tensor gated_delta_net(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& g,
                       const Tensor& beta, Loc loc) {
  return apply(
      {q, k, v, g, beta},
      [&](ir::Graph& gr, std::span<const ir::NodeId> in) {
        return gr.gated_delta_net(in[0], in[1], in[2], in[3], in[4], last_size(gr, in[0]),
                                  gr.shape(in[0]), loc);
      },
      loc);
}

GatedDeltaNetState gated_delta_net(const Tensor& q, const Tensor& k, const Tensor& v,
                                   const Tensor& g, const Tensor& beta, const Tensor& state,
                                   Loc loc) {
  // One gated_delta_net node whose output packs o [B,S,H,N] and the final state as [B,N,H,N]
  // along axis 1 (Graph::gated_delta_net_carry); the two results are views of it.
  Tensor packed = apply(
      {q, k, v, g, beta, state},
      [&](ir::Graph& gr, std::span<const ir::NodeId> in) {
        return gr
            .gated_delta_net_carry(in[0], in[1], in[2], in[3], in[4], in[5], last_size(gr, in[0]),
                                   gr.shape(in[0]), loc)
            .packed;
      },
      loc);
  const int64_t s = q.size(1, loc), n = q.size(3, loc);
  return {rlx::narrow(packed, 1, 0, s, loc),
          rlx::permute(rlx::narrow(packed, 1, s, n, loc), {0, 2, 1, 3}, loc)};
}

} // namespace rlx::nn
