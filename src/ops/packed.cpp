// src/ops/packed.cpp -- the shape rule of the Packed family: dequant_matmul (semantics and the
// inputs of each scheme in include/rlx/ir/ops.def, byte layouts in src/quant/packed_formats.hpp).
// x [m, k] f32 times W [n, k] stored packed gives [m, n] f32; k must be static (it fixes the
// packed row's bytes) and a multiple of the scheme's block. The adjoint form (adjoint=true,
// g [m, n] . W -> [m, k]) reads k from the weight operands and checks them the same way.
#include "infer_common.hpp"
#include "quant/packed_formats.hpp"

#include <string>

namespace rlx::ir::detail {

namespace {

void need(const Op& op, std::span<const Shape> in, std::size_t i, DType t, std::size_t rank,
          const char* what) {
  const Shape& s = in[i];
  if (s.dtype() != t || s.rank() != rank)
    shape_error(op, in, what, " (operand ", i, ") must be ", dtype_name(t), " of rank ", rank,
                ", got ", short_str(s));
}

/// The operand's static dims must equal `want` (dynamic ones are taken on trust until bound).
void need_dims(const Op& op, std::span<const Shape> in, std::size_t i, std::vector<int64_t> want,
               const char* what) {
  const Shape& s = in[i];
  for (std::size_t a = 0; a < want.size(); ++a) {
    const Dim& d = s.dims()[a];
    if (d.is_static() && d.size() != want[a]) {
      std::string dims;
      for (int64_t w : want) dims += (dims.empty() ? "" : ", ") + std::to_string(w);
      shape_error(op, in, what, " (operand ", i, ") must be [", dims, "], got ", short_str(s));
    }
  }
}

/// Checks the weight operands (1 and up) of W [n, k] against the scheme and returns n.
Dim check_weights(const Op& op, std::span<const Shape> in, QuantScheme scheme, int64_t k) {
  const std::string what(op.name());
  const Dim n_dim = in[1].rank() >= 1 ? in[1].dims()[0] : Dim(1);
  if (in.size() == 2) {
    need(op, in, 1, DType::U8, 2, "the packed weight");
    const int64_t block = quant::block_shape(scheme, what).values;
    if (k % block != 0)
      shape_error(op, in, enum_name(scheme.format), " stores rows of whole blocks of ", block,
                  " values; k = ", k, " is not a multiple of ", block);
    need_dims(op, in, 1, {n_dim.is_static() ? n_dim.size() : 0, quant::row_bytes(scheme, k, what)},
              "the packed weight [n, row bytes]");
    return n_dim;
  }
  const int64_t n = static_size(n_dim);
  const int64_t bs = quant::split_block(scheme);
  if (bs <= 0 || k % bs != 0)
    shape_error(op, in, "k = ", k, " must be a multiple of the block (", bs, ")");
  switch (scheme.format) {
  case QuantFormat::Int8Block:
  case QuantFormat::Int8BlockAsym:
    need(op, in, 1, scheme.format == QuantFormat::Int8Block ? DType::I8 : DType::U8, 2, "w_q");
    need_dims(op, in, 1, {n, k}, "w_q [n, k]");
    break;
  case QuantFormat::Int4Block:
    need(op, in, 1, DType::U8, 2, "w_q");
    need_dims(op, in, 1, {n, k / 2}, "w_q [n, k/2] (two 4-bit codes a byte)");
    break;
  case QuantFormat::Fp8E4m3:
  case QuantFormat::Fp8E5m2:
    need(op, in, 1, DType::U8, 2, "w_q");
    need_dims(op, in, 1, {n, k}, "w_q [n, k] (FP8 codes)");
    break;
  case QuantFormat::Nvfp4Block:
    need(op, in, 1, DType::U8, 2, "w_q");
    need_dims(op, in, 1, {n, k / 2}, "w_q [n, k/2] (two E2M1 codes a byte)");
    need(op, in, 2, DType::U8, 2, "the block scales");
    need_dims(op, in, 2, {n, k / 16}, "the block scales [n, k/16] (E4M3 codes)");
    need(op, in, 3, DType::F32, 1, "the global scale");
    need_dims(op, in, 3, {1}, "the global scale");
    return Dim(n);
  default:
    break;
  }
  if (scheme.format == QuantFormat::Fp8E4m3 || scheme.format == QuantFormat::Fp8E5m2) {
    need(op, in, 2, DType::F32, 1, "scale");
    const Dim& c = in[2].dims()[0];
    if (c.is_static() && c.size() != 1 && c.size() != n)
      shape_error(op, in, "scale must be [", n, "] (per row) or [1], got ", short_str(in[2]));
  } else {
    need(op, in, 2, DType::F32, 2, "scale");
    need_dims(op, in, 2, {n, k / bs}, "scale [n, k/block]");
    if (scheme.format != QuantFormat::Int8Block) {
      need(op, in, 3, DType::F32, 2, "zp");
      need_dims(op, in, 3, {n, k / bs}, "zp [n, k/block]");
    }
  }
  return Dim(n);
}

/// k of the adjoint form, which has no operand of k values: the packed row's whole blocks, or
/// w_q's columns (two codes a byte for Int4Block and NVFP4).
int64_t adjoint_k(const Op& op, std::span<const Shape> in, QuantScheme scheme) {
  const Shape& w = in[1];
  if (w.rank() != 2)
    shape_error(op, in, "the weight (operand 1) must be of rank 2, got ", short_str(w));
  const int64_t cols = static_size(w.dims()[1]);
  if (in.size() == 2) {
    const quant::BlockShape b = quant::block_shape(scheme, op.name());
    if (cols % b.bytes != 0)
      shape_error(op, in, "the packed rows of ", cols, " bytes are not whole ",
                  enum_name(scheme.format), " blocks of ", b.bytes, " bytes");
    return cols / b.bytes * b.values;
  }
  const bool nibbles =
      scheme.format == QuantFormat::Int4Block || scheme.format == QuantFormat::Nvfp4Block;
  return nibbles ? 2 * cols : cols;
}

Shape dequant_matmul_rule(const Op& op, std::span<const Shape> in) {
  const auto& a = op.attrs<DequantMatMulAttrs>();
  if (in.size() != 2 && in.size() != 4)
    shape_error(op, in, "takes 2 inputs (x, packed bytes) or 4 (x, w_q, scale, zp)");
  if (in.size() == 4 && a.scheme.is_gguf())
    shape_error(op, in, "the GGUF scheme ", enum_name(a.scheme.format),
                " takes 2 inputs (x, packed bytes)");
  if (!a.adjoint) {
    need(op, in, 0, DType::F32, 2, "x");
    const int64_t k = static_size(in[0].dims()[1]);
    return Shape({in[0].dims()[0], check_weights(op, in, a.scheme, k)}, DType::F32);
  }
  // adjoint: g [m, n] . W [n, k]
  need(op, in, 0, DType::F32, 2, "g (adjoint=true)");
  const int64_t k = adjoint_k(op, in, a.scheme);
  const Dim n = check_weights(op, in, a.scheme, k);
  const Dim& gn = in[0].dims()[1];
  if (gn.is_static() && n.is_static() && gn.size() != n.size())
    shape_error(op, in, "adjoint=true: g [m, n] has n = ", gn.size(), " but W has ", n.size(),
                " rows");
  return Shape({in[0].dims()[0], Dim(k)}, DType::F32);
}

} // namespace

std::optional<Shape> infer_packed(const Op& op, std::span<const Shape> in) {
  switch (op.kind()) {
  case OpKind::DequantMatMul:
    return dequant_matmul_rule(op, in);
  default:
    return std::nullopt;
  }
}

} // namespace rlx::ir::detail
