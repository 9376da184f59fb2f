// src/interp/packed.cpp -- the Packed family's kernel, the specification of dequant_matmul: each
// row of W is dequantized by the block codecs (src/quant/packed_formats.hpp) into one row of
// f32 values, and every sum of products is accumulated in double and rounded once to f32. Only
// one row of W is ever held in f32. x . W^T dots each row of x with the row of W; the adjoint
// form g . W adds g[i, j] * (row j of W) into a double accumulator of the result. The JIT runs
// its own threaded kernels (jit/packed_kernels.cpp) on the same codecs and accumulates in f32.
#include "kernels.hpp"

#include "quant/packed_formats.hpp"

#include <vector>

namespace rlx::interp::detail {

RLX_KERNEL(DequantMatMul) {
  const auto& a = n.op.attrs<ir::DequantMatMulAttrs>();
  const auto xs = in[0]->shape().sizes();
  // x . W^T: x [m, k] -> [m, n]; adjoint: g [m, n] -> [m, k]. W is [rows = n, k] either way.
  const int64_t m = xs[0], k = a.adjoint ? n.shape.sizes()[1] : xs[1];
  const int64_t rows_n = a.adjoint ? xs[1] : n.shape.sizes()[1];
  std::vector<const void*> w;
  for (std::size_t i = 1; i < in.size(); ++i) w.push_back(in[i]->bytes().data());
  const int64_t scale_count = in.size() == 4 ? *in[2]->shape().num_elements() : 0;
  const quant::DequantRows rows =
      quant::dequant_rows(a.scheme, rows_n, k, w.data(), int64_t(w.size()), scale_count);
  const float* x = reinterpret_cast<const float*>(in[0]->bytes().data());
  Buffer out = Buffer::uninitialized(n.shape);
  float* y = reinterpret_cast<float*>(out.bytes().data());
  std::vector<float> row(static_cast<std::size_t>(k));
  if (a.adjoint) {
    std::vector<double> acc(static_cast<std::size_t>(m * k), 0.0);
    for (int64_t j = 0; j < rows_n; ++j) {
      rows.decode(j, 0, k, row.data());
      for (int64_t i = 0; i < m; ++i) {
        const double g = x[i * rows_n + j];
        double* o = acc.data() + i * k;
        for (int64_t c = 0; c < k; ++c) o[c] += g * double(row[std::size_t(c)]);
      }
    }
    for (std::size_t i = 0; i < acc.size(); ++i) y[i] = float(acc[i]);
    return out;
  }
  for (int64_t j = 0; j < rows_n; ++j) {
    rows.decode(j, 0, k, row.data());
    for (int64_t i = 0; i < m; ++i) {
      double acc = 0;
      for (int64_t c = 0; c < k; ++c) acc += double(x[i * k + c]) * double(row[std::size_t(c)]);
      y[i * rows_n + j] = float(acc);
    }
  }
  return out;
}

} // namespace rlx::interp::detail
