// include/rlx/vq.hpp -- vector quantization (VQ-VAE codebooks, residual VQ tokenizers) and LoRA
// matmuls on Tensors: RLX's Graph::vector_quantize, residual_vq and lora_matmul, composites of
// matmul, argmin/argmax and gather, so gradients flow where they are defined: to the codebooks
// through the gather, to x through straight_through (the indices carry none), and to every
// operand of lora_matmul.
#pragma once

#include "rlx/tensor.hpp"

#include <span>
#include <vector>

namespace rlx {

using ir::VqMetric;

/// vector_quantize's result: the chosen code ids (i64 [N]) and the codes themselves ([N, D]).
struct VqResult {
  Tensor indices, quantized;
};
/// Nearest code of codebook [K, D] for each row of x [N, D]: the smallest Euclidean distance
/// (VqMetric::L2) or the largest cosine similarity (VqMetric::Cosine); ties to the smaller id.
VqResult vector_quantize(const Tensor& x, const Tensor& codebook, VqMetric metric = VqMetric::L2,
                         Loc loc = Loc::current());

/// residual_vq's result: one i64 [N] index tensor per level, and the sum of the chosen codes.
struct ResidualVqResult {
  std::vector<Tensor> indices;
  Tensor reconstruction;
};
/// Residual VQ: level l quantizes x minus the codes of levels < l against codebooks[l].
ResidualVqResult residual_vq(const Tensor& x, std::span<const Tensor> codebooks,
                             VqMetric metric = VqMetric::L2, Loc loc = Loc::current());

/// The straight-through estimator: quantized's value, x's gradient (x + stop_gradient(q - x)).
Tensor straight_through(const Tensor& x, const Tensor& quantized, Loc loc = Loc::current());

/// LoRA: x [m, k] w [k, n] + scale (x a [k, r]) b [r, n], never forming a b; gradients to all
/// four.
Tensor lora_matmul(const Tensor& x, const Tensor& w, const Tensor& a, const Tensor& b, double scale,
                   Loc loc = Loc::current());

} // namespace rlx
