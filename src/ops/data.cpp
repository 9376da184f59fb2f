// src/ops/data.cpp -- shape rules of the reduce, scan, movement and index families.
#include "infer_common.hpp"
#include "support/size_math.hpp"

#include <algorithm>

namespace rlx::ir::detail {

std::optional<Shape> infer_reduce_scan(const Op& op, std::span<const Shape> in) {
  const Shape& x = in[0];
  switch (op.kind()) {
  case OpKind::ArgMax:
  case OpKind::ArgMin: {
    const auto& a = op.attrs<ArgReduceAttrs>();
    int64_t axis = norm_axis(op, in, a.axis, x.rank());
    std::vector<Dim> dims;
    for (std::size_t i = 0; i < x.rank(); ++i) {
      if (int64_t(i) != axis)
        dims.push_back(x.dims()[i]);
      else if (a.keep_dim)
        dims.push_back(Dim(1));
    }
    return Shape(std::move(dims), DType::I64);
  }
  case OpKind::Cumsum:
    norm_axis(op, in, op.attrs<CumsumAttrs>().axis, x.rank());
    return x;
  case OpKind::Softmax:
    norm_axis(op, in, op.attrs<AxisAttrs>().axis, x.rank());
    if (!is_float(x.dtype()))
      fail(ErrorKind::Type, op.name(), ": needs a floating-point operand, got ", short_str(x));
    return x;
  default:
    break;
  }
  if (!as_reduce_op(op.kind())) return std::nullopt;
  const auto& a = op.attrs<ReduceAttrs>();
  std::vector<bool> reduced(x.rank(), false);
  for (int64_t ax : a.axes) {
    int64_t n = norm_axis(op, in, ax, x.rank());
    if (reduced[std::size_t(n)]) shape_error(op, in, "axis ", ax, " is listed twice");
    reduced[std::size_t(n)] = true;
  }
  std::vector<Dim> dims;
  for (std::size_t i = 0; i < x.rank(); ++i) {
    if (!reduced[i])
      dims.push_back(x.dims()[i]);
    else if (a.keep_dim)
      dims.push_back(Dim(1));
  }
  DType t = x.dtype();
  if (is_bool(t)) t = DType::I64; // sum of booleans counts, as in numpy
  return Shape(std::move(dims), t);
}

namespace {

Shape reshape_rule(const Op& op, std::span<const Shape> in) {
  const Shape& x = in[0];
  const Ints& ns = op.attrs<ReshapeAttrs>().new_shape;
  int64_t infer_at = -1, known = 1;
  for (std::size_t i = 0; i < ns.size(); ++i) {
    if (ns[i] == -1) {
      if (infer_at >= 0) shape_error(op, in, "only one -1 is allowed in new_shape");
      infer_at = int64_t(i);
    } else if (ns[i] < 0 || ns[i] > kMaxDimSize) {
      shape_error(op, in, "new_shape entry ", ns[i], " is invalid");
    } else {
      if (ns[i] != 0 && known > (int64_t(1) << 62) / ns[i])
        shape_error(op, in, "new_shape has too many elements");
      known *= ns[i];
    }
  }
  std::vector<Dim> dims;
  for (int64_t d : ns) dims.emplace_back(d < 0 ? 0 : d);
  auto total = x.num_elements();
  if (!total) {
    // Dynamic input: -1 becomes the input's only symbol (or ?rows when it has several).
    auto syms = x.dynamic_symbols();
    if (infer_at < 0) throw DynamicUnknown{};
    dims[std::size_t(infer_at)] = Dim::dynamic(syms.size() == 1 ? syms[0] : sym::kRows);
    return Shape(std::move(dims), x.dtype());
  }
  if (infer_at >= 0) {
    if (known == 0 || *total % known != 0)
      shape_error(op, in, "cannot infer -1: ", *total, " elements do not divide by ", known);
    dims[std::size_t(infer_at)] = Dim(*total / known);
  } else if (known != *total) {
    shape_error(op, in, "new_shape has ", known, " elements, the input ", *total);
  }
  return Shape(std::move(dims), x.dtype());
}

} // namespace

std::optional<Shape> infer_movement(const Op& op, std::span<const Shape> in) {
  const Shape& x = in[0];
  switch (op.kind()) {
  case OpKind::Reshape:
    return reshape_rule(op, in);
  case OpKind::Transpose: {
    const Ints& perm = op.attrs<TransposeAttrs>().perm;
    if (perm.size() != x.rank())
      shape_error(op, in, "perm has ", perm.size(), " entries for a rank-", x.rank(), " operand");
    std::vector<bool> seen(x.rank(), false);
    std::vector<Dim> dims;
    for (int64_t p : perm) {
      int64_t n = norm_axis(op, in, p, x.rank());
      if (seen[std::size_t(n)]) shape_error(op, in, "perm repeats axis ", p);
      seen[std::size_t(n)] = true;
      dims.push_back(x.dims()[std::size_t(n)]);
    }
    return Shape(std::move(dims), x.dtype());
  }
  case OpKind::Narrow: {
    const auto& a = op.attrs<NarrowAttrs>();
    int64_t axis = norm_axis(op, in, a.axis, x.rank());
    if (a.start < 0 || a.len < 0 || a.start > kMaxDimSize || a.len > kMaxDimSize)
      shape_error(op, in, "start and len must be in [0, 2^48]");
    const Dim& d = x.dims()[std::size_t(axis)];
    if (d.is_static() && a.start + a.len > d.size())
      shape_error(op, in, "[", a.start, ", ", a.start + a.len, ") is out of bounds for axis ",
                  a.axis, " of size ", d.size());
    return x.with_dim(std::size_t(axis), Dim(a.len));
  }
  case OpKind::Slice: {
    const auto& a = op.attrs<SliceAttrs>();
    int64_t axis = norm_axis(op, in, a.axis, x.rank());
    if (a.step == 0) shape_error(op, in, "step must not be 0");
    if (a.len < 0 || a.len > kMaxDimSize || a.step < -kMaxDimSize || a.step > kMaxDimSize ||
        a.start < -kMaxDimSize || a.start > kMaxDimSize)
      shape_error(op, in, "start, len and step must be within +-2^48 (len >= 0)");
    int64_t size = static_size(x.dims()[std::size_t(axis)]);
    if (a.len > 0) {
      __extension__ __int128 last = __int128(a.start) + __int128(a.len - 1) * a.step;
      if (a.start < 0 || a.start >= size || last < 0 || last >= size)
        shape_error(op, in, "start ", a.start, ", len ", a.len, ", step ", a.step, " leaves axis ",
                    a.axis, " of size ", size);
    }
    return x.with_dim(std::size_t(axis), Dim(a.len));
  }
  case OpKind::Concat: {
    int64_t axis = norm_axis(op, in, op.attrs<ConcatAttrs>().axis, x.rank());
    int64_t total = 0;
    bool dynamic = false;
    for (const Shape& s : in) {
      if (s.rank() != x.rank() || s.dtype() != x.dtype())
        shape_error(op, in, "operands must share rank and dtype");
      for (std::size_t i = 0; i < x.rank(); ++i) {
        if (int64_t(i) == axis) continue;
        const Dim &p = s.dims()[i], &q = x.dims()[i];
        if (p.is_static() && q.is_static() && p.size() != q.size())
          shape_error(op, in, "operands differ on axis ", i, " (", p.size(), " != ", q.size(), ")");
      }
      const Dim& d = s.dims()[std::size_t(axis)];
      if (d.is_dynamic()) {
        dynamic = true;
      } else {
        std::optional<int64_t> sum = rlx::detail::checked_add(total, d.size());
        if (!sum || *sum > kMaxDimSize) shape_error(op, in, "the concatenated axis exceeds 2^48");
        total = *sum;
      }
    }
    if (dynamic) throw DynamicUnknown{};
    return x.with_dim(std::size_t(axis), Dim(total));
  }
  case OpKind::Expand: {
    const Ints& t = op.attrs<ExpandAttrs>().target_shape;
    if (t.size() < x.rank()) shape_error(op, in, "target has lower rank than the operand");
    std::vector<Dim> dims;
    for (std::size_t i = 0; i < t.size(); ++i) {
      std::size_t off = t.size() - x.rank();
      if (t[i] < -1 || t[i] > kMaxDimSize)
        shape_error(op, in, "target entry ", t[i], " is invalid");
      if (i < off) {
        if (t[i] < 0) shape_error(op, in, "-1 is only allowed for existing axes");
        dims.emplace_back(t[i]);
        continue;
      }
      const Dim& d = x.dims()[i - off];
      if (t[i] == -1)
        dims.push_back(d);
      else if (d.is_static() && d.size() != 1 && d.size() != t[i])
        shape_error(op, in, "cannot expand axis of size ", d.size(), " to ", t[i]);
      else
        dims.emplace_back(t[i]);
    }
    return Shape(std::move(dims), x.dtype());
  }
  case OpKind::Reverse:
    for (int64_t a : op.attrs<ReverseAttrs>().axes) norm_axis(op, in, a, x.rank());
    return x;
  case OpKind::Pad: {
    const auto& a = op.attrs<PadAttrs>();
    if (a.pads.size() != 2 * x.rank())
      shape_error(op, in, "pads needs 2 entries (before, after) per axis: ", 2 * x.rank(), ", got ",
                  a.pads.size());
    std::vector<Dim> dims;
    for (std::size_t i = 0; i < x.rank(); ++i) {
      int64_t lo = a.pads[2 * i], hi = a.pads[2 * i + 1];
      if (lo < 0 || hi < 0 || lo > kMaxDimSize || hi > kMaxDimSize)
        shape_error(op, in, "pads must be >= 0");
      int64_t n = static_size(x.dims()[i]);
      if (a.mode == PadMode::Reflect && (lo >= n || hi >= n) && (lo || hi))
        shape_error(op, in, "reflect padding ", lo, "/", hi, " needs an axis larger than it (size ",
                    n, ")");
      if (a.mode == PadMode::Edge && n == 0 && (lo || hi))
        shape_error(op, in, "edge padding of an empty axis");
      dims.emplace_back(n + lo + hi);
    }
    return Shape(std::move(dims), x.dtype());
  }
  case OpKind::Gather: {
    const Shape& idx = in[1];
    int64_t axis = norm_axis(op, in, op.attrs<GatherAttrs>().axis, x.rank());
    if (is_bool(idx.dtype()) || is_complex(idx.dtype()))
      fail(ErrorKind::Type, op.name(), ": indices must be integers (or f32-encoded), got ",
           short_str(idx));
    std::vector<Dim> dims(x.dims().begin(), x.dims().begin() + axis);
    dims.insert(dims.end(), idx.dims().begin(), idx.dims().end());
    dims.insert(dims.end(), x.dims().begin() + axis + 1, x.dims().end());
    return Shape(std::move(dims), x.dtype());
  }
  case OpKind::ScatterAdd: {
    const Shape& idx = in[1];
    const auto& a = op.attrs<ScatterAddAttrs>();
    int64_t axis = norm_axis(op, in, a.axis, x.rank());
    if (is_bool(x.dtype()) || is_complex(x.dtype()))
      fail(ErrorKind::Type, op.name(), ": updates must be numbers to accumulate, got ",
           short_str(x));
    if (is_bool(idx.dtype()) || is_complex(idx.dtype()))
      fail(ErrorKind::Type, op.name(), ": indices must be integers (or float-encoded), got ",
           short_str(idx));
    if (idx.rank() != 1) shape_error(op, in, "indices must be 1-D, got rank ", idx.rank());
    const Dim &u = x.dims()[std::size_t(axis)], &m = idx.dims()[0];
    if (u.is_static() && m.is_static() && u.size() != m.size())
      shape_error(op, in, "updates have ", u.size(), " rows along axis ", a.axis, " but ", m.size(),
                  " indices");
    if (a.out_dim < 0 || a.out_dim > kMaxDimSize)
      shape_error(op, in, "out_dim ", a.out_dim, " is invalid");
    std::vector<Dim> dims = x.dims();
    dims[std::size_t(axis)] = Dim(a.out_dim);
    return Shape(std::move(dims), x.dtype());
  }
  case OpKind::TopK:
  case OpKind::ArgSort: {
    if (x.rank() == 0)
      shape_error(op, in, "needs an operand of rank >= 1 (it works on the last axis)");
    if (is_complex(x.dtype()))
      fail(ErrorKind::Type, op.name(), ": complex values have no order, got ", short_str(x));
    std::vector<Dim> dims = x.dims();
    if (op.kind() == OpKind::TopK) {
      int64_t k = op.attrs<TopKAttrs>().k;
      const Dim& n = dims.back();
      if (k < 0 || (n.is_static() && k > n.size()))
        shape_error(op, in, "k = ", k, " is not in [0, ", n.is_static() ? n.size() : 0,
                    "] (the size of the last axis)");
      dims.back() = Dim(k);
    }
    return Shape(std::move(dims), DType::I64);
  }
  default:
    return std::nullopt;
  }
}

} // namespace rlx::ir::detail
