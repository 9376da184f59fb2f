// include/rlx/ssm.hpp -- state-space scans and linear attention on Tensors (rlx::nn):
// Mamba's selective scan, Mamba-2's SSD scan and Gated DeltaNet. Each records one node of the
// Graph builder of the same name (recurrences written out in rlx/ir/graph.hpp); f32 or f64,
// every operand of one dtype, the state zero at the start unless given. Gradients flow through
// rlx::grad (each op decomposes into one scan whose body is a step: a gradient graph of the
// same size at any sequence length; the forward pass runs in one kernel).
#pragma once

#include "rlx/tensor.hpp"

namespace rlx::nn {

/// Mamba S6: x [B,S,H], delta [B,S,H] (after softplus), a [H,N] (A, negative for decay),
/// b [B,S,N], c [B,S,N] -> y [B,S,H]. Per channel h and state n:
/// state = exp(delta a[h,n]) state + delta b[n] x;  y = sum_n c[n] state. No D skip or gate.
Tensor selective_scan(const Tensor& x, const Tensor& delta, const Tensor& a, const Tensor& b,
                      const Tensor& c, Loc loc = Loc::current());

/// Mamba-2 (SSD): x [B,S,H,P], dt [B,S,H], a [H], b and c [B,S,G,N] (G groups of H/G heads) or
/// [B,S,N] -> y [B,S,H,P]. Per head a state [P,N]: state = exp(dt a) state + dt x b^T;
/// y = state c.
Tensor mamba2(const Tensor& x, const Tensor& dt, const Tensor& a, const Tensor& b, const Tensor& c,
              Loc loc = Loc::current());

/// Gated DeltaNet: q, k, v [B,S,H,N], g [B,S,H] (log-decay), beta [B,S,H] -> o [B,S,H,N], with
/// the state S [N,N] per head (key-major): S = exp(g) S; S += k (beta (v - S^T k))^T;
/// o = S^T q. The caller scales q and l2-normalizes q and k.
Tensor gated_delta_net(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& g,
                       const Tensor& beta, Loc loc = Loc::current());

/// The outputs and the final state [B,H,N,N] of a gated_delta_net run from a given state.
struct GatedDeltaNetState {
  Tensor output;
  Tensor state;
};
/// gated_delta_net from `state` [B,H,N,N] (decode: feed the returned state to the next call).
GatedDeltaNetState gated_delta_net(const Tensor& q, const Tensor& k, const Tensor& v,
                                   const Tensor& g, const Tensor& beta, const Tensor& state,
                                   Loc loc = Loc::current());

} // namespace rlx::nn
