// include/rlx/nn.hpp -- recurrent layers on Tensors in PyTorch's spirit: rlx::nn::lstm, gru and
// rnn return the output and the final states like torch.nn.LSTM/GRU/RNN (gate order and weight
// shapes are PyTorch's), with their weights packed flat in (layer, direction) order (see
// rlx/ir/graph.hpp "Recurrent cells"); pack_weights builds that from per-layer tensors such as a
// torch state_dict's weight_ih_l0, weight_hh_l0, bias_ih_l0, bias_hh_l0, weight_ih_l0_reverse...
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

} // namespace rlx::nn
