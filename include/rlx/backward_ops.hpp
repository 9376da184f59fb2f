// include/rlx/backward_ops.hpp -- RLX's explicit backward ops, as builders that append their
// closed form (or, where marked, the differentiated decomposition of the forward op) to a graph.
// Names and argument order follow RLX's Graph methods, with the graph first. Each is tested
// against central differences of its forward op (tests/test_backward_ops.cpp).
#pragma once

#include "rlx/ir/graph.hpp"

#include <optional>
#include <tuple>

namespace rlx::autodiff {

using ir::Graph;
using ir::Ints2;
using ir::NodeId;
using ir::Shape;

/// Which operand attention_backward differentiates.
enum class AttentionBwdWrt : uint8_t { Q, K, V };

/// dx = dy where x > 0, else 0.
NodeId relu_backward(Graph& g, NodeId x, NodeId dy);
/// dx = dy * f'(x) for any element-wise activation.
NodeId activation_backward(Graph& g, ir::Activation kind, NodeId x, NodeId dy);
/// LayerNorm over `axis` (last axis or any single axis), inputs [x, gamma, dy] -> dx.
NodeId layer_norm_backward_input(Graph& g, NodeId x, NodeId gamma, NodeId dy, int64_t axis,
                                 float eps);
/// sum of dy * x_hat over every axis but `axis`, reshaped to gamma_shape.
NodeId layer_norm_backward_gamma(Graph& g, NodeId x, NodeId dy, Shape gamma_shape, int64_t axis,
                                 float eps);
/// RMSNorm over the last axis (y = x / rms * gamma + beta): dx, dgamma, dbeta.
NodeId rms_norm_backward_input(Graph& g, NodeId x, NodeId gamma, NodeId beta, NodeId dy,
                               int64_t axis, float eps);
NodeId rms_norm_backward_gamma(Graph& g, NodeId x, NodeId gamma, NodeId beta, NodeId dy,
                               int64_t axis, float eps);
NodeId rms_norm_backward_beta(Graph& g, NodeId x, NodeId gamma, NodeId beta, NodeId dy,
                              int64_t axis, float eps);
/// NeoX rope's adjoint: the rotation by -angle (rope with -sin).
NodeId rope_backward(Graph& g, NodeId dy, NodeId cos, NodeId sin, int64_t head_dim, int64_t n_rot);
/// The reversed cumulative sum of dy.
NodeId cumsum_backward(Graph& g, NodeId dy, Shape out_shape, int64_t axis, bool exclusive);
/// The scatter-add of dy into a table of table_shape at `indices` along axis.
NodeId gather_backward(Graph& g, NodeId dy, NodeId indices, Shape table_shape, int64_t axis);
/// GroupNorm (NCHW): dx, dgamma, dbeta (the differentiated decomposition).
NodeId group_norm_backward_input(Graph& g, NodeId x, NodeId gamma, NodeId beta, NodeId dy,
                                 int64_t num_groups, float eps);
NodeId group_norm_backward_gamma(Graph& g, NodeId x, NodeId dy, Shape gamma_shape,
                                 int64_t num_groups, float eps);
NodeId group_norm_backward_beta(Graph& g, NodeId x, NodeId dy, Shape beta_shape, int64_t num_groups,
                                float eps);
/// BatchNorm inference (per channel, axis 1): dx, dgamma, dbeta.
NodeId batch_norm_inference_backward_input(Graph& g, NodeId x, NodeId gamma, NodeId mean,
                                           NodeId var, NodeId dy, float eps);
NodeId batch_norm_inference_backward_gamma(Graph& g, NodeId x, NodeId mean, NodeId var, NodeId dy,
                                           Shape gamma_shape, float eps);
NodeId batch_norm_inference_backward_beta(Graph& g, NodeId dy, Shape beta_shape);
/// MaxPool2d's adjoint (the cotangent goes to each window's maximum).
NodeId maxpool2d_backward(Graph& g, NodeId x, NodeId dy, Ints2 kernel_size, Ints2 stride,
                          Ints2 padding);
/// Conv2d's adjoints in its input and its weight [C_out, C_in/groups, kH, kW].
NodeId conv2d_backward_input(Graph& g, NodeId dy, NodeId w, Shape x_shape, Ints2 kernel_size,
                             Ints2 stride, Ints2 padding, Ints2 dilation, int64_t groups);
NodeId conv2d_backward_weight(Graph& g, NodeId x, NodeId dy, Shape w_shape, Ints2 kernel_size,
                              Ints2 stride, Ints2 padding, Ints2 dilation, int64_t groups);
/// Per-row loss logsumexp(logits) - sum(targets * logits) against dense targets [N, C] -> [N].
NodeId softmax_cross_entropy(Graph& g, NodeId logits, NodeId targets);
/// The same against float-encoded integer labels [N].
NodeId softmax_cross_entropy_with_logits(Graph& g, NodeId logits, NodeId labels);
/// (softmax(logits) - one_hot(labels)) * d_loss[:, None].
NodeId softmax_cross_entropy_backward(Graph& g, NodeId logits, NodeId labels, NodeId d_loss);
/// One of dQ, dK, dV of attention(q, k, v, [mask]) (the differentiated decomposition).
NodeId attention_backward(Graph& g, AttentionBwdWrt wrt, NodeId q, NodeId k, NodeId v, NodeId dy,
                          int64_t num_heads, int64_t head_dim, ir::MaskKind mask_kind,
                          std::optional<NodeId> mask);
std::tuple<NodeId, NodeId, NodeId> attention_backward_all(Graph& g, NodeId q, NodeId k, NodeId v,
                                                          NodeId dy, int64_t num_heads,
                                                          int64_t head_dim, ir::MaskKind mask_kind,
                                                          std::optional<NodeId> mask);

} // namespace rlx::autodiff
