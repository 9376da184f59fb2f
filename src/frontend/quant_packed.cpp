// src/frontend/quant_packed.cpp -- rlx::quant (include/rlx/quant_packed.hpp): pack and unpack run
// the block codecs (src/quant/packed_formats.cpp) on the host, eagerly; dequant_matmul records
// the Packed family's node, whose shape rule checks every operand.
#include "rlx/quant_packed.hpp"

#include "rlx/apply.hpp"
#include "rlx/ir/graph.hpp"

#include "frontend/impl.hpp"
#include "quant/packed_formats.hpp"

#include <string>
#include <vector>

namespace rlx::quant {

namespace {

using rlx::detail::at_loc;

/// Run f, re-throwing a codec's rlx::Error with the caller's line.
template <class F> auto at_user(const Loc& loc, F&& f) {
  try {
    return f();
  } catch (const Error& e) {
    fail(e.kind(), e.what(), at_loc(loc));
  }
}

std::pair<int64_t, int64_t> need_matrix(const Tensor& t, DType dtype, std::string_view what,
                                        std::string_view name, const Loc& loc) {
  rlx::detail::check_defined(t, what, loc);
  if (t.ndim() != 2 || t.dtype() != dtype)
    fail(ErrorKind::Shape, what, ": ", name, " must be a ", ir::dtype_name(dtype), " matrix, got ",
         ir::short_str(t.shape()), at_loc(loc));
  return {t.size(0, loc), t.size(1, loc)};
}

Tensor record(std::initializer_list<Tensor> operands, QuantScheme scheme, const Loc& loc) {
  return apply(
      operands,
      [&](ir::Graph& g, std::span<const ir::NodeId> ids) {
        return g.add_inferred(ir::Op(ir::OpKind::DequantMatMul, ir::DequantMatMulAttrs{scheme}),
                              std::vector<ir::NodeId>(ids.begin(), ids.end()), loc);
      },
      loc);
}

} // namespace

int64_t row_bytes(QuantScheme scheme, int64_t k, Loc loc) {
  return at_user(loc, [&] { return quant::row_bytes(scheme, k, "rlx::quant::row_bytes"); });
}

Tensor pack(const Tensor& w, QuantScheme scheme, Loc loc) {
  auto [n, k] = need_matrix(w, DType::F32, "rlx::quant::pack", "w", loc);
  const int64_t rb = at_user(loc, [&] { return quant::row_bytes(scheme, k, "rlx::quant::pack"); });
  const BlockShape b = block_shape(scheme, "rlx::quant::pack");
  const std::vector<float> values = w.to_vector<float>(loc);
  std::vector<uint8_t> bytes(std::size_t(n * rb));
  for (int64_t r = 0; r < n; ++r)
    encode_blocks(scheme, values.data() + r * k, k / b.values, bytes.data() + r * rb);
  return Tensor::from_vector(bytes, {n, rb}, loc);
}

Tensor unpack(const Tensor& packed, QuantScheme scheme, int64_t k, Loc loc) {
  auto [n, rb] = need_matrix(packed, DType::U8, "rlx::quant::unpack", "packed", loc);
  const int64_t want =
      at_user(loc, [&] { return quant::row_bytes(scheme, k, "rlx::quant::unpack"); });
  if (rb != want)
    fail(ErrorKind::Shape, "rlx::quant::unpack: ", enum_name(scheme.format), " rows of ", k,
         " values take ", want, " bytes, got ", ir::short_str(packed.shape()), at_loc(loc));
  const BlockShape b = block_shape(scheme, "rlx::quant::unpack");
  const std::vector<uint8_t> bytes = packed.to_vector<uint8_t>(loc);
  std::vector<float> values(std::size_t(n * k));
  for (int64_t r = 0; r < n; ++r)
    decode_blocks(scheme, bytes.data() + r * rb, k / b.values, values.data() + r * k);
  return Tensor::from_vector(values, {n, k}, loc);
}

Tensor dequant_matmul(const Tensor& x, const Tensor& packed, QuantScheme scheme, Loc loc) {
  rlx::detail::check_defined(x, "rlx::quant::dequant_matmul", loc);
  rlx::detail::check_defined(packed, "rlx::quant::dequant_matmul", loc);
  return record({x, packed}, scheme, loc);
}

Tensor dequant_matmul(const Tensor& x, const Tensor& w_q, const Tensor& scale, const Tensor& zp,
                      QuantScheme scheme, Loc loc) {
  for (const Tensor* t : {&x, &w_q, &scale, &zp})
    rlx::detail::check_defined(*t, "rlx::quant::dequant_matmul", loc);
  if (scheme.is_gguf()) return record({x, w_q}, scheme, loc);
  return record({x, w_q, scale, zp}, scheme, loc);
}

Tensor dequant_matmul_nvfp4(const Tensor& x, const Tensor& codes, const Tensor& block_scales,
                            const Tensor& global_scale, Loc loc) {
  for (const Tensor* t : {&x, &codes, &block_scales, &global_scale})
    rlx::detail::check_defined(*t, "rlx::quant::dequant_matmul_nvfp4", loc);
  return record({x, codes, block_scales, global_scale}, QuantScheme::of(QuantFormat::Nvfp4Block),
                loc);
}

} // namespace rlx::quant
