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
#pragma once

#include "rlx/tensor.hpp"

#include <cstdint>
#include <optional>
#include <span>

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

} // namespace rlx::nn
