// src/builders/elementwise.cpp -- element-wise builders: cast, constants, stop_gradient,
// where_ and clamp.
#include "rlx/ir/graph.hpp"

#include <bit>
#include <cfloat>
#include <cmath>

namespace rlx::ir {

namespace {

constexpr double kF16Max = 65504.0;
constexpr double kBF16Max = 0x1.fep127; // 0x7f7f: the largest finite bfloat16

/// Whether `dtype` holds `v`: see Graph::try_constant.
bool fits(double v, DType dtype) {
  auto in_range = [v](double lo, double hi) {
    return std::isfinite(v) && v == std::trunc(v) && v >= lo && v <= hi;
  };
  switch (dtype) {
  case DType::F64:
    return true;
  case DType::F32:
  case DType::C64:
    return !std::isfinite(v) || std::fabs(v) <= double(FLT_MAX);
  case DType::F16:
    return !std::isfinite(v) || std::fabs(v) <= kF16Max;
  case DType::BF16:
    return !std::isfinite(v) || std::fabs(v) <= kBF16Max;
  case DType::I8:
    return in_range(-128.0, 127.0);
  case DType::I16:
    return in_range(-32768.0, 32767.0);
  case DType::I32:
    return in_range(-2147483648.0, 2147483647.0);
  case DType::I64: // [-2^63, 2^63): 2^63 itself is a double but not an int64
    return in_range(-0x1p63, 0x1p63) && v != 0x1p63;
  case DType::U8:
    return in_range(0.0, 255.0);
  case DType::U32:
    return in_range(0.0, 4294967295.0);
  case DType::Bool:
    return v == 0.0 || v == 1.0;
  }
  return false;
}

void put_le(std::vector<uint8_t>& out, uint64_t bits, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) out.push_back(static_cast<uint8_t>(bits >> (8 * i)));
}

/// Append the little-endian bytes of v in dtype (v fits; F16/BF16 are never stored directly).
void encode(std::vector<uint8_t>& out, double v, DType dtype) {
  switch (dtype) {
  case DType::F32:
    put_le(out, std::bit_cast<uint32_t>(static_cast<float>(v)), 4);
    return;
  case DType::C64: // interleaved (re, im); the imaginary part is 0
    put_le(out, std::bit_cast<uint32_t>(static_cast<float>(v)), 4);
    put_le(out, std::bit_cast<uint32_t>(0.0f), 4);
    return;
  case DType::F64:
    put_le(out, std::bit_cast<uint64_t>(v), 8);
    return;
  case DType::Bool:
    put_le(out, v != 0.0 ? 1 : 0, 1);
    return;
  case DType::U8:
  case DType::U32:
    put_le(out, static_cast<uint64_t>(v), size_bytes(dtype));
    return;
  case DType::I8:
  case DType::I16:
  case DType::I32:
  case DType::I64: // two's complement, truncated to the dtype's width
    put_le(out, static_cast<uint64_t>(static_cast<int64_t>(v)), size_bytes(dtype));
    return;
  case DType::F16:
  case DType::BF16:
    break;
  }
  RLX_CHECK(false, "encode: ", dtype_name(dtype), " constants are stored as f32 plus a cast");
}

} // namespace

NodeId Graph::constant_values(DType dtype, std::vector<int64_t> dims,
                              std::span<const double> values, const Loc& loc) {
  DType stored = (dtype == DType::F16 || dtype == DType::BF16) ? DType::F32 : dtype;
  Shape shape = Shape::of(dims, stored);
  RLX_CHECK(shape.num_elements() == int64_t(values.size()), "constant_values: ", values.size(),
            " values for ", short_str(shape));
  Bytes bytes;
  bytes.data.reserve(values.size() * size_bytes(stored));
  for (double v : values) encode(bytes.data, v, stored);
  NodeId c = append_node(Op(OpKind::Constant, ConstantAttrs{std::move(bytes)}), {},
                         std::move(shape), std::nullopt, loc);
  return stored == dtype ? c : cast(c, dtype, loc);
}

NodeId Graph::cast(NodeId x, DType to, Loc loc) {
  return build_inferred(Op(OpKind::Cast, CastAttrs{to}), {x}, loc);
}

NodeId Graph::constant(double value, DType dtype, Loc loc) {
  if (!fits(value, dtype))
    fail(ErrorKind::Value, "constant: ", value, " does not fit ", dtype_name(dtype),
         rlx::detail::at_loc(loc));
  return constant_values(dtype, {}, std::span(&value, 1), loc);
}

std::optional<NodeId> Graph::try_constant(double value, DType dtype, Loc loc) {
  if (!fits(value, dtype)) return std::nullopt;
  return constant_values(dtype, {}, std::span(&value, 1), loc);
}

NodeId Graph::stop_gradient(NodeId x, Loc loc) {
  return build_inferred(Op(OpKind::StopGradient), {x}, loc);
}

NodeId Graph::where_(NodeId cond, NodeId on_true, NodeId on_false, Loc loc) {
  return build_inferred(Op(OpKind::Where), {cond, on_true, on_false}, loc);
}

NodeId Graph::clamp(NodeId x, double min, double max, Loc loc) {
  if (std::isnan(min) || std::isnan(max) || min > max)
    fail(ErrorKind::Value, "clamp: needs min <= max, got min ", min, " and max ", max,
         rlx::detail::at_loc(loc));
  return build_inferred(Op(OpKind::Clamp, ClampAttrs{min, max}), {x}, loc);
}

} // namespace rlx::ir
