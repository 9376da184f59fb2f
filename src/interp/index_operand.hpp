// src/interp/index_operand.hpp -- reading an index operand (gather's, scatter_add's) as
// positions along one axis: integer or float (truncated) indices, negative ones counting from
// the end, every one checked before any is used.
#pragma once

#include "rlx/interp.hpp"

#include <cmath>
#include <cstdint>
#include <vector>

namespace rlx::interp::detail {

/// The positions in [0, len) that idx's elements name. An index outside [-len, len) or a NaN
/// calls bad(shown, is_nan), which throws; shown is the index as the user gave it.
template <class Bad> std::vector<int64_t> index_positions(const Buffer& idx, int64_t len, Bad bad) {
  std::vector<int64_t> pos(std::size_t(idx.numel()));
  const bool float_indices = ir::is_float(idx.dtype());
  for (int64_t j = 0; j < idx.numel(); ++j) {
    int64_t p;
    if (float_indices) {
      double v = idx.get_f64(j);
      if (std::isnan(v)) bad("NaN", true);
      double t = std::trunc(v);
      if (t < -double(len) || t >= double(len)) bad(v, false);
      p = int64_t(t);
    } else {
      p = idx.get_i64(j);
      if (p < -len || p >= len) bad(p, false);
    }
    pos[std::size_t(j)] = p < 0 ? p + len : p;
  }
  return pos;
}

} // namespace rlx::interp::detail
