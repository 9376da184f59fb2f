// include/rlx/sampling.hpp -- rlx::sample: next-token sampling from logits (RLX's Graph::sample
// on Tensors), with HF transformers' temperature, top-k and top-p (nucleus) warpers and a
// categorical draw from rlx::random's counter RNG, so a key gives the same ids on every backend
// and thread count; a Tensor key (rlx/random.hpp) draws afresh inside rlx::jit.
#pragma once

#include "rlx/random.hpp"
#include "rlx/tensor.hpp"

#include <cstdint>

namespace rlx {

/// One token id per row of logits [.., V] (i64 [..]): logits / temperature, then the top_k
/// largest kept (ties with the k-th kept; 0 keeps all), then the smallest set of most likely
/// tokens whose probability reaches top_p (1 keeps all), then a draw with probabilities the
/// softmax of what is left. temperature 0 is greedy: the row's argmax (ties to the smaller id).
Tensor sample(const Tensor& logits, int64_t top_k, double top_p, double temperature,
              random::Key key, Loc loc = Loc::current());

} // namespace rlx
