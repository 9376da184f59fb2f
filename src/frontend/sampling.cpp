// src/frontend/sampling.cpp -- rlx::sample on Graph::sample / sample_keyed: the leading axes of
// the logits are flattened into the op's batch and restored on the ids.
#include "rlx/sampling.hpp"
#include "frontend/impl.hpp"
#include "rlx/apply.hpp"

#include <numeric>

namespace rlx {

Tensor sample(const Tensor& logits, int64_t top_k, double top_p, double temperature,
              random::Key key, Loc loc) {
  if (logits.ndim() < 1)
    fail(ErrorKind::Shape, "sample: needs logits [.., vocab], got ", ir::short_str(logits.shape()),
         rlx::detail::at_loc(loc));
  Dims sizes = logits.sizes(loc);
  const int64_t vocab = sizes.back();
  sizes.pop_back();
  const int64_t rows = std::accumulate(sizes.begin(), sizes.end(), int64_t(1), std::multiplies<>());
  Tensor flat = reshape(logits, {rows, vocab}, loc);
  const Shape out = Shape::of(std::vector<int64_t>{rows}, DType::F32);
  Tensor ids;
  if (key.is_tensor())
    ids = apply(
        {flat, key.tensor},
        [&](ir::Graph& g, std::span<const ir::NodeId> in) {
          return g.sample_keyed(in[0], in[1], top_k, float(top_p), float(temperature), out, loc);
        },
        loc);
  else
    ids = apply(
        {flat},
        [&](ir::Graph& g, std::span<const ir::NodeId> in) {
          return g.sample(in[0], top_k, float(top_p), float(temperature), key.value, out, loc);
        },
        loc);
  return reshape(ids.cast(DType::I64, loc), sizes, loc);
}

} // namespace rlx
