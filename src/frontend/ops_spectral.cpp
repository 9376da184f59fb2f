// src/frontend/ops_spectral.cpp -- Tensor functions of the spectral primitives, and custom_fn.
#include "frontend/impl.hpp"
#include "frontend/ops.hpp"

namespace rlx {

Tensor fft(const Tensor& x, bool inverse, ir::FftNorm norm, Loc loc) {
  return detail::apply1(
      x, [&](ir::Graph& g, ir::NodeId in) { return g.fft_norm(in, inverse, norm, loc); }, loc);
}

Tensor lfilter(const Tensor& x, const Tensor& b, const Tensor& a, Loc loc) {
  return apply(
      {x, b, a},
      [&](ir::Graph& g, std::span<const ir::NodeId> in) {
        return g.lfilter(in[0], in[1], in[2], std::nullopt, loc);
      },
      loc);
}

Tensor conjugate(const Tensor& z, Loc loc) {
  return detail::apply1(z, [&](ir::Graph& g, ir::NodeId in) { return g.conjugate(in, loc); }, loc);
}

Tensor complex_norm_sq(const Tensor& z, Loc loc) {
  return detail::apply1(
      z, [&](ir::Graph& g, ir::NodeId in) { return g.complex_norm_sq(in, loc); }, loc);
}

Tensor custom_fn(std::span<const Tensor> inputs, ir::Graph fwd_body,
                 std::optional<ir::Graph> vjp_body, std::optional<ir::Graph> jvp_body, Loc loc) {
  return apply(
      inputs,
      [&](ir::Graph& g, std::span<const ir::NodeId> in) {
        return g.custom_fn(std::vector<ir::NodeId>(in.begin(), in.end()), fwd_body, vjp_body,
                           jvp_body, loc);
      },
      loc);
}

} // namespace rlx
