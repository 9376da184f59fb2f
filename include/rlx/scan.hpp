// include/rlx/scan.hpp -- rlx::scan: a loop over time with a C++ lambda as its body, as
// jax.lax.scan.
//
//   // h_t = tanh(h_{t-1} @ u + x_t @ w) over the leading axis of xs ([T, B, I]):
//   Tensor h = rlx::scan([&](Tensor h, Tensor x) { return rlx::tanh(h.matmul(u) + x.matmul(w)); },
//                        h0, {xs});
//   Tensor all = rlx::scan_trajectory(step, h0, {xs});   // [T, B, H]: row t after step t + 1
//
// The body is traced once (like rlx::jit) on placeholders of the carry's shape and of one row of
// each xs, and recorded as one scan node (ir::Graph::scan_with_bcasts_and_xs): the tensors it
// captures (u, w above, computed or not, traced by an enclosing rlx::jit or rlx::grad or not)
// become the node's broadcast operands, so rlx::grad differentiates through them too. The body
// returns one Tensor of the carry's shape and dtype.
#pragma once

#include "rlx/grad.hpp"
#include "rlx/tensor.hpp"

#include <vector>

namespace rlx {

struct ScanOptions {
  bool trajectory = false; ///< return [length, *carry] (row t: the carry after step t + 1)
  int64_t checkpoints = 0; ///< K > 0: the backward keeps K carries and recomputes the rest
  int64_t length = -1;     ///< steps; -1: the leading dim of the xs (required without xs)
};

namespace detail {
/// src/frontend/scan.cpp.
Tensor scan_call(const Tensor& init, std::span<const Tensor> xs, const TraceBody& body,
                 const ScanOptions& opts, const Loc& loc);
} // namespace detail

/// The final carry of body(carry, x_t...) run over the leading axis of the xs, from init.
template <class F>
Tensor scan(F f, const Tensor& init, const std::vector<Tensor>& xs = {}, ScanOptions opts = {},
            Loc loc = Loc::current()) {
  return detail::scan_call(init, xs, detail::body_of(f), opts, loc);
}

/// Every carry: [length, *init.shape], row t the carry after step t + 1.
template <class F>
Tensor scan_trajectory(F f, const Tensor& init, const std::vector<Tensor>& xs = {},
                       ScanOptions opts = {}, Loc loc = Loc::current()) {
  opts.trajectory = true;
  return detail::scan_call(init, xs, detail::body_of(f), opts, loc);
}

} // namespace rlx
