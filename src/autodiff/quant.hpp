// src/autodiff/quant.hpp -- the quantization kinds' VJP and JVP rules (src/autodiff/quant.cpp),
// rows of the tables in vjp_rules.cpp and jvp_rules.cpp.
#pragma once

#include "rules.hpp"

namespace rlx::autodiff::quant {

/// fake_quantize: torch's straight-through estimator, dy where the value is not clamped.
std::vector<Grad> vjp_fake_quantize(Builder& b, const Node& n, NodeId dy,
                                    std::span<const char> want);
Grad jvp_fake_quantize(Builder& b, const Node& n, std::span<const Grad> t);
/// dequant_matmul, linear in x: the other form (adjoint flipped) on the cotangent or tangent. The
/// weight operands are a frozen quantized base: asking for their derivative is an rlx::Error.
std::vector<Grad> vjp_dequant_matmul(Builder& b, const Node& n, NodeId dy,
                                     std::span<const char> want);
Grad jvp_dequant_matmul(Builder& b, const Node& n, std::span<const Grad> t);

} // namespace rlx::autodiff::quant
