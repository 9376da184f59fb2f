// src/frontend/ops.hpp -- small helpers shared by the frontend's op files.
#pragma once

#include "rlx/apply.hpp"
#include "rlx/tensor.hpp"

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace rlx::detail {

/// x converted to dtype (x itself when it already has it).
ir::NodeId cast_to(ir::Graph& g, ir::NodeId x, DType dtype, const Loc& loc);
/// The dtype float-only math runs in: floats and c64 keep theirs, the rest compute in f32.
DType float_dtype(DType t);
/// The dtype of `tensor op scalar` (weak scalar typing): float/c64 tensors keep their dtype; a
/// float scalar with an integer or bool tensor gives f32; an integer scalar with bool gives i64.
DType scalar_result_dtype(DType tensor, const Number& n);
/// A rank-0 constant of dtype holding n; an rlx::Error naming `what` when it does not fit.
ir::NodeId scalar_node(ir::Graph& g, const Number& n, DType dtype, std::string_view what,
                       const Loc& loc);
/// Normalize an axis of a rank-r tensor (negative counts from the end) or throw naming `what`.
int64_t norm_axis(int64_t axis, int64_t rank, std::string_view what, const Shape& shape,
                  const Loc& loc);
/// An rlx::Error naming `what` for negative sizes or a shape over the limits (creation.cpp).
void check_sizes(const Dims& sizes, DType dtype, std::string_view what, const Loc& loc);
/// Apply a one-operand builder.
Tensor apply1(const Tensor& x, const std::function<ir::NodeId(ir::Graph&, ir::NodeId)>& build,
              const Loc& loc);

/// Tensor::index with an integer or bool tensor among the indices
/// (src/frontend/numpy_indexing.cpp).
Tensor index_advanced(const Tensor& self, const std::vector<TensorIndex>& indices, Loc loc);

/// "[1,2]": sizes, axes or per-axis options in an error message.
inline std::string dims_str(const Dims& d) {
  std::string s = "[";
  for (std::size_t i = 0; i < d.size(); ++i) s += (i ? "," : "") + std::to_string(d[i]);
  return s + "]";
}
/// The product of d[from, to) (1 when empty).
inline int64_t product(const Dims& d, std::size_t from = 0, std::size_t to = SIZE_MAX) {
  int64_t p = 1;
  for (std::size_t i = from; i < std::min(to, d.size()); ++i) p *= d[i];
  return p;
}

} // namespace rlx::detail
