// src/frontend/vq.cpp -- vector_quantize, residual_vq and lora_matmul on Tensors through RLX's
// Graph builders (src/builders/random.cpp), so the Tensor and Graph forms are one decomposition.
// A multi-result builder is applied once per result; the pipeline's CSE merges the shared nodes.
#include "rlx/vq.hpp"
#include "frontend/impl.hpp"
#include "rlx/apply.hpp"

namespace rlx {

VqResult vector_quantize(const Tensor& x, const Tensor& codebook, VqMetric metric, Loc loc) {
  auto part = [&](bool indices) {
    return apply(
        {x, codebook},
        [&](ir::Graph& g, std::span<const ir::NodeId> in) {
          auto [index, code] = g.vector_quantize(in[0], in[1], metric, loc);
          return indices ? index : code;
        },
        loc);
  };
  return {part(true), part(false)};
}

ResidualVqResult residual_vq(const Tensor& x, std::span<const Tensor> codebooks, VqMetric metric,
                             Loc loc) {
  std::vector<Tensor> operands{x};
  operands.insert(operands.end(), codebooks.begin(), codebooks.end());
  // level < 0: the reconstruction.
  auto part = [&](int64_t level) {
    return apply(
        operands,
        [&](ir::Graph& g, std::span<const ir::NodeId> in) {
          auto [indices, recon] = g.residual_vq(in[0], in.subspan(1), metric, loc);
          return level < 0 ? recon : indices[std::size_t(level)];
        },
        loc);
  };
  ResidualVqResult r;
  r.reconstruction = part(-1);
  for (std::size_t l = 0; l < codebooks.size(); ++l) r.indices.push_back(part(int64_t(l)));
  return r;
}

Tensor straight_through(const Tensor& x, const Tensor& quantized, Loc loc) {
  return add(x, stop_gradient(sub(quantized, x, loc), loc), loc);
}

Tensor lora_matmul(const Tensor& x, const Tensor& w, const Tensor& a, const Tensor& b, double scale,
                   Loc loc) {
  return apply(
      {x, w, a, b},
      [&](ir::Graph& g, std::span<const ir::NodeId> in) {
        const Shape &sx = g.shape(in[0]), &sw = g.shape(in[1]);
        // The declared shape is the one the builder checks; a bad rank is its error to name.
        Shape out = sx.rank() == 2 && sw.rank() == 2
                        ? Shape(std::vector<ir::Dim>{sx.dims()[0], sw.dims()[1]}, sx.dtype())
                        : sx;
        return g.lora_matmul(in[0], in[1], in[2], in[3], float(scale), out, loc);
      },
      loc);
}

} // namespace rlx
