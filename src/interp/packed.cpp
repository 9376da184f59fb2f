// src/interp/packed.cpp -- the Packed family's kernel, the specification of dequant_matmul: each
// row of W is dequantized by the block codecs (src/quant/packed_formats.hpp) into one row of
// f32 values and dotted with each row of x in double, rounded once to f32. Only one row of W is
// ever held in f32. The JIT runs its own threaded kernel (jit/packed_kernels.cpp) on the same
// codecs and accumulates in f32.
#include "kernels.hpp"

#include "quant/packed_formats.hpp"

#include <vector>

namespace rlx::interp::detail {

RLX_KERNEL(DequantMatMul) {
  const auto scheme = n.op.attrs<ir::DequantMatMulAttrs>().scheme;
  const auto xs = in[0]->shape().sizes();
  const int64_t m = xs[0], k = xs[1], cols = n.shape.sizes()[1];
  std::vector<const void*> w;
  for (std::size_t i = 1; i < in.size(); ++i) w.push_back(in[i]->bytes().data());
  const int64_t scale_count = in.size() == 4 ? *in[2]->shape().num_elements() : 0;
  const quant::DequantRows rows =
      quant::dequant_rows(scheme, cols, k, w.data(), int64_t(w.size()), scale_count);
  const float* x = reinterpret_cast<const float*>(in[0]->bytes().data());
  Buffer out = Buffer::uninitialized(n.shape);
  float* y = reinterpret_cast<float*>(out.bytes().data());
  std::vector<float> row(static_cast<std::size_t>(k));
  for (int64_t j = 0; j < cols; ++j) {
    rows.decode(j, 0, k, row.data());
    for (int64_t i = 0; i < m; ++i) {
      double acc = 0;
      for (int64_t c = 0; c < k; ++c) acc += double(x[i * k + c]) * double(row[std::size_t(c)]);
      y[i * cols + j] = float(acc);
    }
  }
  return out;
}

} // namespace rlx::interp::detail
