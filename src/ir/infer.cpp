// src/ir/infer.cpp -- shape-rule dispatch by family (rules live in src/ops/), and broadcasting.
#include "ops/infer_common.hpp"

namespace rlx::ir {

namespace detail {

std::string shapes_str(std::span<const Shape> shapes) {
  std::string out;
  for (const Shape& s : shapes) out += (out.empty() ? "" : ", ") + short_str(s);
  return out;
}

int64_t norm_axis(const Op& op, std::span<const Shape> in, int64_t axis, std::size_t rank) {
  int64_t r = int64_t(rank);
  if (axis < -r || axis >= r || r == 0)
    shape_error(op, in, "axis ", axis, " is out of range for rank ", r);
  return axis < 0 ? axis + r : axis;
}

int64_t static_size(const Dim& d) {
  if (d.is_dynamic()) throw DynamicUnknown{};
  return d.size();
}

} // namespace detail

Shape broadcast_shapes(std::string_view op, const Shape& a, const Shape& b) {
  std::size_t r = std::max(a.rank(), b.rank());
  std::vector<Dim> dims(r);
  for (std::size_t i = 0; i < r; ++i) {
    const Dim* da = i < r - a.rank() ? nullptr : &a.dims()[i - (r - a.rank())];
    const Dim* db = i < r - b.rank() ? nullptr : &b.dims()[i - (r - b.rank())];
    if (!da) {
      dims[i] = *db;
      continue;
    }
    if (!db) {
      dims[i] = *da;
      continue;
    }
    if (*da == *db) {
      dims[i] = *da;
      continue;
    }
    if (da->is_static() && da->size() == 1) {
      dims[i] = *db;
      continue;
    }
    if (db->is_static() && db->size() == 1) {
      dims[i] = *da;
      continue;
    }
    if (da->is_dynamic() || db->is_dynamic()) {
      // ?n against a static size (or another symbol): assume they agree; bind() re-checks.
      dims[i] = da->is_static() ? *da : *db;
      continue;
    }
    fail(ErrorKind::Shape, op, ": shapes do not broadcast: ", short_str(a), " vs ", short_str(b),
         " (axis ", int64_t(i) - int64_t(r), ": ", da->size(), " != ", db->size(), ")");
  }
  return Shape(std::move(dims), a.dtype());
}

bool shapes_compatible(const Shape& a, const Shape& b) {
  if (a.dtype() != b.dtype() || a.rank() != b.rank()) return false;
  for (std::size_t i = 0; i < a.rank(); ++i) {
    const Dim &x = a.dims()[i], &y = b.dims()[i];
    if (x.is_static() && y.is_static() && x.size() != y.size()) return false;
  }
  return true;
}

std::optional<Shape> infer_shape(const Op& op, std::span<const Shape> in) {
  int arity = op_info(op.kind()).arity;
  if ((arity >= 0 && in.size() != std::size_t(arity)) || (arity < 0 && in.empty()))
    fail(ErrorKind::Value, op.name(), ": takes ", arity < 0 ? "at least 1" : std::to_string(arity),
         " inputs, got ", in.size());
  try {
    switch (op.family()) {
    case Family::Leaf:
      return std::nullopt;
    case Family::EwUnary:
    case Family::EwBinary:
    case Family::EwTernary:
      return detail::infer_elementwise(op, in);
    case Family::Reduce:
    case Family::Scan:
      return detail::infer_reduce_scan(op, in);
    case Family::Movement:
    case Family::Index:
      return detail::infer_movement(op, in);
    case Family::Contract:
      return detail::infer_contract(op, in);
    case Family::Norm:
    case Family::Attention:
      return detail::infer_norm_attention(op, in);
    case Family::Conv:
    case Family::Pool:
      return detail::infer_conv_pool(op, in);
    case Family::Spectral:
      return detail::infer_spectral(op, in);
    case Family::Linalg:
      return detail::infer_linalg(op, in);
    case Family::Quant:
      return detail::infer_quant(op, in);
    case Family::Packed:
      return detail::infer_packed(op, in);
    case Family::Random:
      return detail::infer_random(op, in);
    case Family::Recurrent:
      return detail::infer_recurrent(op, in);
    case Family::Ssm:
      return detail::infer_ssm(op, in);
    case Family::Splat:
      return detail::infer_splat(op, in);
    case Family::Control:
      return detail::infer_control(op, in);
    case Family::Custom:
      return detail::infer_custom(op, in);
    case Family::Collective:
      return detail::infer_collective(op, in);
    }
  } catch (const detail::DynamicUnknown&) {
    return std::nullopt;
  } catch (const Error& e) {
    // Rules throw Shape and Type errors naming the op; a Dim or Shape they make throws Value or
    // Limit (a size out of range) without knowing the op: name it here.
    if (e.kind() != ErrorKind::Limit && e.kind() != ErrorKind::Value) throw;
    fail(e.kind(), op.name(), ": ", e.what(), " (operands ", detail::shapes_str(in), ")");
  }
  return std::nullopt;
}

bool has_shape_rule(OpKind kind) { return op_family(kind) != Family::Leaf; }

} // namespace rlx::ir
