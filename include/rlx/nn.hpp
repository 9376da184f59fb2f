// include/rlx/nn.hpp -- torch.nn's layers and losses on Tensors, in PyTorch's spirit.
//
// Losses (torch.nn.functional's signatures; options are structs for designated initializers):
//   Tensor l = rlx::nn::cross_entropy(logits, labels, {.ignore_index = 0, .label_smoothing = 0.1});
//
// Recurrent layers: rlx::nn::lstm, gru and rnn return the output and the final states like
// torch.nn.LSTM/GRU/RNN (gate order and weight shapes are PyTorch's), with their weights packed
// flat in (layer, direction) order (see rlx/ir/graph.hpp "Recurrent cells"); pack_weights builds
// that from per-layer tensors such as a torch state_dict's weight_ih_l0, weight_hh_l0, bias_ih_l0,
// bias_hh_l0, weight_ih_l0_reverse...
//
// Functional layers (torch.nn.functional's convolutions, pooling, norms and attention, every
// option of their signatures; src/frontend/nn_functional.cpp):
//   Tensor y = rlx::nn::conv2d(x, w, b, {.padding = "same", .dilation = {2}, .groups = 4});
#pragma once

#include "rlx/tensor.hpp"

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <span>
#include <utility>

namespace rlx::nn {

/// One (layer, direction) block in PyTorch's shapes: w_ih [G*H, in], w_hh [G*H, H], b_ih and
/// b_hh [G*H] (G = 4 lstm, 3 gru, 1 rnn).
struct LayerWeights {
  Tensor w_ih, w_hh, b_ih, b_hh;
};

/// All layers and directions packed flat (each block row-major, in (layer, direction) order).
/// lstm and rnn use b_ih + b_hh; gru keeps them apart (b_hh zeros when absent).
struct RecurrentWeights {
  Tensor w_ih, w_hh, b_ih;
  std::optional<Tensor> b_hh = std::nullopt;
};

/// Pack per-(layer, direction) blocks, listed as l0, l0_reverse, l1, l1_reverse, ...
RecurrentWeights pack_weights(std::span<const LayerWeights> blocks, Loc loc = Loc::current());

struct RecurrentOptions {
  int64_t hidden = 0; ///< hidden_size (required)
  int64_t layers = 1; ///< num_layers
  bool bidirectional = false;
  bool batch_first = true; ///< x [batch, seq, input] (else [seq, batch, input])
  bool relu = false;       ///< rnn only: relu instead of tanh
};

/// What torch's modules return: output [batch, seq, D*hidden] (or [seq, batch, D*hidden]),
/// h_n (and for lstm c_n) [layers*D, batch, hidden].
struct RecurrentResult {
  Tensor output, h_n;
  std::optional<Tensor> c_n;
};

/// torch.nn.LSTM(x, (h0, c0)); zero initial states when h0/c0 are absent.
RecurrentResult lstm(const Tensor& x, const RecurrentWeights& w, const RecurrentOptions& opts,
                     std::optional<Tensor> h0 = std::nullopt,
                     std::optional<Tensor> c0 = std::nullopt, Loc loc = Loc::current());
/// torch.nn.GRU(x, h0).
RecurrentResult gru(const Tensor& x, const RecurrentWeights& w, const RecurrentOptions& opts,
                    std::optional<Tensor> h0 = std::nullopt, Loc loc = Loc::current());
/// torch.nn.RNN(x, h0), nonlinearity tanh or (opts.relu) relu.
RecurrentResult rnn(const Tensor& x, const RecurrentWeights& w, const RecurrentOptions& opts,
                    std::optional<Tensor> h0 = std::nullopt, Loc loc = Loc::current());

// ---- Losses (src/frontend/losses.cpp). Inputs are float tensors; class axis 1 ([N, C, d...])
// or 0 for an unbatched [C] input; class-index targets are integer tensors of the input's shape
// without the class axis. Composed from Tensor ops, so every loss is differentiable in its
// input (and in a probability target).

/// How a loss's elements become its value: none (elementwise), mean, sum, or kl_div's
/// batchmean (the sum over the batch size).
enum class Reduction : uint8_t { None, Mean, Sum, BatchMean };

struct CrossEntropyOptions {
  std::optional<Tensor> weight = std::nullopt; ///< per-class weights [C]
  int64_t ignore_index = -100;                 ///< targets equal to it add nothing
  Reduction reduction = Reduction::Mean;       ///< mean is weighted by the targets' weights
  double label_smoothing = 0.0;                ///< in [0, 1]
};
/// torch.nn.functional.cross_entropy: log_softmax over the class axis, then nll; `target` holds
/// class indices (an integer tensor) or class probabilities (a float tensor of input's shape).
Tensor cross_entropy(const Tensor& input, const Tensor& target,
                     const CrossEntropyOptions& opts = {}, Loc loc = Loc::current());

struct NllOptions {
  std::optional<Tensor> weight = std::nullopt;
  int64_t ignore_index = -100;
  Reduction reduction = Reduction::Mean;
};
/// torch.nn.functional.nll_loss of log-probabilities and class indices.
Tensor nll_loss(const Tensor& log_probs, const Tensor& target, const NllOptions& opts = {},
                Loc loc = Loc::current());

/// Squared error, absolute error, Huber (quadratic below delta) and smooth L1 (quadratic below
/// beta, divided by beta); input and target broadcast.
Tensor mse_loss(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::Mean,
                Loc loc = Loc::current());
Tensor l1_loss(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::Mean,
               Loc loc = Loc::current());
Tensor huber_loss(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::Mean,
                  double delta = 1.0, Loc loc = Loc::current());
Tensor smooth_l1_loss(const Tensor& input, const Tensor& target,
                      Reduction reduction = Reduction::Mean, double beta = 1.0,
                      Loc loc = Loc::current());

struct BceOptions {
  std::optional<Tensor> weight = std::nullopt;     ///< broadcasts with the input
  std::optional<Tensor> pos_weight = std::nullopt; ///< weight of positives, per class (last axis)
  Reduction reduction = Reduction::Mean;
};
/// torch.nn.functional.binary_cross_entropy_with_logits, computed stably (softplus form).
Tensor binary_cross_entropy_with_logits(const Tensor& input, const Tensor& target,
                                        const BceOptions& opts = {}, Loc loc = Loc::current());
/// torch.nn.functional.binary_cross_entropy of probabilities; each log is clamped at -100 as
/// torch does (no pos_weight).
Tensor binary_cross_entropy(const Tensor& input, const Tensor& target,
                            std::optional<Tensor> weight = std::nullopt,
                            Reduction reduction = Reduction::Mean, Loc loc = Loc::current());
/// torch.nn.functional.kl_div: `input` is log-probabilities, `target` probabilities (or
/// log-probabilities with log_target); pointwise target (log target - input), 0 where target
/// is 0. Use Reduction::BatchMean for the mathematical KL divergence of a batch.
Tensor kl_div(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::Mean,
              bool log_target = false, Loc loc = Loc::current());

// ---- Functional layers (src/frontend/nn_functional.cpp), composed from Tensor ops and the Conv
// primitives so that each is differentiable and runs on both backends. Inputs are channel-first:
// [N, C, spatial...], or unbatched [C, spatial...] (as torch). Per-axis options (stride,
// dilation, kernel_size, ...) take one value for every spatial axis or one per axis.

/// A convolution's padding, as torch's `padding=`: an int (every side), one int per axis (both
/// sides), "same" / "valid", or per-side (before, after) pairs: ConvPadding::sides({{1, 2}}).
struct ConvPadding {
  Dims before{0}, after{0};                           ///< one per spatial axis, or one for all
  const char* mode = "";                              ///< "", "same" or "valid"
  ConvPadding(int64_t p = 0) : before{p}, after{p} {} // NOLINT: implicit, as torch's int
  ConvPadding(std::initializer_list<int64_t> per_axis) : before(per_axis), after(per_axis) {}
  ConvPadding(const char* same_or_valid) : mode(same_or_valid) {} // NOLINT: implicit
  /// Asymmetric padding: one (before, after) pair per spatial axis.
  static ConvPadding sides(std::initializer_list<std::pair<int64_t, int64_t>> pairs) {
    ConvPadding p;
    p.before.clear();
    p.after.clear();
    for (auto [b, a] : pairs) {
      p.before.push_back(b);
      p.after.push_back(a);
    }
    return p;
  }
};

struct ConvOptions {
  Dims stride{1};
  ConvPadding padding{};
  Dims dilation{1};
  int64_t groups = 1;
};
/// torch.nn.functional.conv1d / conv2d / conv3d: x [N, C_in, *], weight [C_out, C_in/groups, k*],
/// optional bias [C_out]. "same" needs stride 1 and pads total dilation*(k-1), the odd element
/// after (as torch); asymmetric padding is an explicit zero pad before the convolution.
Tensor conv1d(const Tensor& x, const Tensor& weight, std::optional<Tensor> bias = std::nullopt,
              const ConvOptions& opts = {}, Loc loc = Loc::current());
Tensor conv2d(const Tensor& x, const Tensor& weight, std::optional<Tensor> bias = std::nullopt,
              const ConvOptions& opts = {}, Loc loc = Loc::current());
Tensor conv3d(const Tensor& x, const Tensor& weight, std::optional<Tensor> bias = std::nullopt,
              const ConvOptions& opts = {}, Loc loc = Loc::current());

struct ConvTransposeOptions {
  Dims stride{1}, padding{0}, output_padding{0};
  int64_t groups = 1;
  Dims dilation{1};
};
/// torch.nn.functional.conv_transpose1d / 2d / 3d: weight [C_in, C_out/groups, k*]; output size
/// (in-1)*stride - 2*padding + dilation*(k-1) + output_padding + 1 per axis.
Tensor conv_transpose1d(const Tensor& x, const Tensor& weight,
                        std::optional<Tensor> bias = std::nullopt,
                        const ConvTransposeOptions& opts = {}, Loc loc = Loc::current());
Tensor conv_transpose2d(const Tensor& x, const Tensor& weight,
                        std::optional<Tensor> bias = std::nullopt,
                        const ConvTransposeOptions& opts = {}, Loc loc = Loc::current());
Tensor conv_transpose3d(const Tensor& x, const Tensor& weight,
                        std::optional<Tensor> bias = std::nullopt,
                        const ConvTransposeOptions& opts = {}, Loc loc = Loc::current());

struct PoolOptions {
  Dims stride{}; ///< empty: kernel_size (torch's default)
  Dims padding{0};
  Dims dilation{1}; ///< max pooling only
  bool ceil_mode = false;
  bool count_include_pad = true;                          ///< avg pooling only
  std::optional<int64_t> divisor_override = std::nullopt; ///< avg pooling only
};
/// torch.nn.functional.max_pool1d / 2d / 3d: padding (at most half the kernel) never wins the
/// max; with ceil_mode the last window may hang over the end, but starts inside the input or
/// its left padding (torch's rule). Gradients go to the first maximum of each window.
Tensor max_pool1d(const Tensor& x, Dims kernel_size, const PoolOptions& opts = {},
                  Loc loc = Loc::current());
Tensor max_pool2d(const Tensor& x, Dims kernel_size, const PoolOptions& opts = {},
                  Loc loc = Loc::current());
Tensor max_pool3d(const Tensor& x, Dims kernel_size, const PoolOptions& opts = {},
                  Loc loc = Loc::current());
/// The values and, as torch's return_indices=True, the flat index of each maximum within its
/// input plane (row-major over the spatial axes, i64); ties go to the first in window order.
struct PoolWithIndices {
  Tensor values, indices;
};
PoolWithIndices max_pool1d_with_indices(const Tensor& x, Dims kernel_size,
                                        const PoolOptions& opts = {}, Loc loc = Loc::current());
PoolWithIndices max_pool2d_with_indices(const Tensor& x, Dims kernel_size,
                                        const PoolOptions& opts = {}, Loc loc = Loc::current());
PoolWithIndices max_pool3d_with_indices(const Tensor& x, Dims kernel_size,
                                        const PoolOptions& opts = {}, Loc loc = Loc::current());
/// torch.nn.functional.avg_pool1d / 2d / 3d: the window sum over divisor_override, or over the
/// window's size clipped to the padded input (count_include_pad) or to the input (otherwise).
Tensor avg_pool1d(const Tensor& x, Dims kernel_size, const PoolOptions& opts = {},
                  Loc loc = Loc::current());
Tensor avg_pool2d(const Tensor& x, Dims kernel_size, const PoolOptions& opts = {},
                  Loc loc = Loc::current());
Tensor avg_pool3d(const Tensor& x, Dims kernel_size, const PoolOptions& opts = {},
                  Loc loc = Loc::current());
/// torch.nn.functional.adaptive_avg_pool1d / 2d and adaptive_max_pool1d / 2d: output cell i of
/// an axis of length n covers [floor(i n / out), ceil((i+1) n / out)).
Tensor adaptive_avg_pool1d(const Tensor& x, int64_t output_size, Loc loc = Loc::current());
Tensor adaptive_avg_pool2d(const Tensor& x, Dims output_size, Loc loc = Loc::current());
Tensor adaptive_max_pool1d(const Tensor& x, int64_t output_size, Loc loc = Loc::current());
Tensor adaptive_max_pool2d(const Tensor& x, Dims output_size, Loc loc = Loc::current());
/// The adaptive max pools with torch's return_indices=True: flat indices within each input plane.
PoolWithIndices adaptive_max_pool1d_with_indices(const Tensor& x, int64_t output_size,
                                                 Loc loc = Loc::current());
PoolWithIndices adaptive_max_pool2d_with_indices(const Tensor& x, Dims output_size,
                                                 Loc loc = Loc::current());

/// A norm's output and the running statistics after it: torch updates running_mean /
/// running_var in place; rlx returns the updated values (the ones passed in when nothing was
/// updated, absent when none were passed). Assign them back to keep torch's state.
struct NormResult {
  Tensor y;
  std::optional<Tensor> running_mean, running_var;
};
struct BatchNormOptions {
  std::optional<Tensor> weight = std::nullopt, bias = std::nullopt; ///< [C] each
  bool training = false;
  double momentum = 0.1;
  double eps = 1e-5;
};
/// torch.nn.functional.batch_norm on [N, C, *]. Training: statistics over N and the spatial
/// axes, normalised with the biased variance; the running averages move by momentum towards the
/// batch mean and the unbiased variance. Inference: the running statistics (then required).
NormResult batch_norm(const Tensor& x, std::optional<Tensor> running_mean,
                      std::optional<Tensor> running_var, const BatchNormOptions& opts = {},
                      Loc loc = Loc::current());

struct InstanceNormOptions {
  std::optional<Tensor> running_mean = std::nullopt, running_var = std::nullopt;
  std::optional<Tensor> weight = std::nullopt, bias = std::nullopt; ///< [C] each
  bool use_input_stats = true;
  double momentum = 0.1;
  double eps = 1e-5;
};
/// torch.nn.functional.instance_norm on [N, C, *]: statistics per (sample, channel) over the
/// spatial axes; the running averages (when given) move towards the batch average of those.
/// use_input_stats = false normalises with the running statistics instead.
NormResult instance_norm(const Tensor& x, const InstanceNormOptions& opts = {},
                         Loc loc = Loc::current());

/// torch.nn.functional.layer_norm over the trailing axes of normalized_shape (any rank); weight
/// and bias have that shape.
Tensor layer_norm(const Tensor& x, Dims normalized_shape,
                  std::optional<Tensor> weight = std::nullopt,
                  std::optional<Tensor> bias = std::nullopt, double eps = 1e-5,
                  Loc loc = Loc::current());
/// torch.nn.functional.group_norm on [N, C, *]: statistics over each group of C/num_groups
/// channels and the spatial axes; optional per-channel weight and bias.
Tensor group_norm(const Tensor& x, int64_t num_groups, std::optional<Tensor> weight = std::nullopt,
                  std::optional<Tensor> bias = std::nullopt, double eps = 1e-5,
                  Loc loc = Loc::current());

struct SdpaOptions {
  /// bool (true = attend) or float (added to the scores), broadcasting to [.., Hq, L, S].
  std::optional<Tensor> attn_mask = std::nullopt;
  /// An additive bias on the scores besides the mask (rlx's; torch has only attn_mask).
  std::optional<Tensor> bias = std::nullopt;
  double dropout_p = 0.0; ///< must be 0: rlx has no dropout here
  bool is_causal = false; ///< key j attends query i when j <= i (top-left aligned, as torch)
  std::optional<double> scale = std::nullopt; ///< default 1/sqrt(E)
  bool enable_gqa = false; ///< allow Hkv < Hq (each K/V head serves Hq/Hkv query heads)
};
/// torch.nn.functional.scaled_dot_product_attention: q [.., Hq, L, E], k [.., Hkv, S, E],
/// v [.., Hkv, S, Ev] -> [.., Hq, L, Ev]. A row whose keys are all masked is NaN (as torch).
/// is_causal together with attn_mask attends where both allow (torch refuses the pair).
Tensor scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v,
                                    const SdpaOptions& opts = {}, Loc loc = Loc::current());

struct MultiHeadAttentionOptions {
  std::optional<Tensor> in_proj_bias = std::nullopt;  ///< [3E]
  std::optional<Tensor> out_proj_bias = std::nullopt; ///< [E]
  /// [N, S]: bool (true = ignore that key, torch's nn.MultiheadAttention convention) or float
  /// (added to the scores).
  std::optional<Tensor> key_padding_mask = std::nullopt;
  /// [L, S] or [N*num_heads, L, S]: bool (true = not allowed) or float (added).
  std::optional<Tensor> attn_mask = std::nullopt;
  bool need_weights = true;
  bool average_attn_weights = true; ///< weights [N, L, S] averaged over heads, else [N, H, L, S]
};
struct MultiHeadAttentionResult {
  Tensor output;                 ///< [L, N, E]
  std::optional<Tensor> weights; ///< when need_weights
};
/// torch.nn.functional.multi_head_attention_forward (what nn.MultiheadAttention runs) for the
/// packed projection without bias_k / bias_v, add_zero_attn or dropout: query [L, N, E], key and
/// value [S, N, E] (sequence first, as torch), in_proj_weight [3E, E], out_proj_weight [E, E].
MultiHeadAttentionResult multi_head_attention_forward(const Tensor& query, const Tensor& key,
                                                      const Tensor& value, int64_t num_heads,
                                                      const Tensor& in_proj_weight,
                                                      const Tensor& out_proj_weight,
                                                      const MultiHeadAttentionOptions& opts = {},
                                                      Loc loc = Loc::current());

} // namespace rlx::nn
