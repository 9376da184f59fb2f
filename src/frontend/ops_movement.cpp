// src/frontend/ops_movement.cpp -- reshapes, permutations, slicing, joins and gathers.
#include "frontend/impl.hpp"
#include "frontend/ops.hpp"

#include <algorithm>

namespace rlx {

namespace {

using detail::cast_to;
using detail::norm_axis;

/// reshape to `dims` (static sizes, at most one dynamic dim, which becomes -1).
ir::NodeId reshape_dims(ir::Graph& g, ir::NodeId x, const std::vector<ir::Dim>& dims,
                        std::string_view what, const Loc& loc) {
  std::vector<int64_t> sizes;
  int dynamic = 0;
  for (const ir::Dim& d : dims) {
    sizes.push_back(d.is_static() ? d.size() : -1);
    dynamic += d.is_dynamic();
  }
  if (dynamic > 1)
    fail(ErrorKind::Unsupported, what, ": ", ir::short_str(g.shape(x)),
         " has several dynamic dims; this reshape cannot be expressed", detail::at_loc(loc));
  return g.reshape_(x, sizes, loc);
}

} // namespace

Tensor reshape(const Tensor& x, Dims sizes, Loc loc) {
  return detail::apply1(
      x, [&](ir::Graph& g, ir::NodeId in) { return g.reshape_(in, sizes, loc); }, loc);
}
Tensor Tensor::reshape(Dims sizes, Loc loc) const { return rlx::reshape(*this, sizes, loc); }

Tensor permute(const Tensor& x, Dims perm, Loc loc) {
  detail::check_defined(x, "permute", loc);
  int64_t r = x.ndim();
  if (int64_t(perm.size()) != r)
    fail(ErrorKind::Value, "permute: ", perm.size(), " axes for ", ir::short_str(x.shape()),
         detail::at_loc(loc));
  for (int64_t& p : perm) p = norm_axis(p, r, "permute", x.shape(), loc);
  return detail::apply1(
      x, [&](ir::Graph& g, ir::NodeId in) { return g.transpose_(in, perm, loc); }, loc);
}
Tensor Tensor::permute(Dims perm, Loc loc) const { return rlx::permute(*this, perm, loc); }

Tensor transpose(const Tensor& x, Loc loc) {
  detail::check_defined(x, "transpose", loc);
  Dims perm;
  for (int64_t i = x.ndim(); i-- > 0;) perm.push_back(i);
  return permute(x, perm, loc);
}
Tensor transpose(const Tensor& x, int64_t axis0, int64_t axis1, Loc loc) {
  detail::check_defined(x, "transpose", loc);
  int64_t r = x.ndim();
  int64_t a = norm_axis(axis0, r, "transpose", x.shape(), loc);
  int64_t b = norm_axis(axis1, r, "transpose", x.shape(), loc);
  Dims perm;
  for (int64_t i = 0; i < r; ++i) perm.push_back(i);
  std::swap(perm[std::size_t(a)], perm[std::size_t(b)]);
  return permute(x, perm, loc);
}
Tensor Tensor::transpose(Loc loc) const { return rlx::transpose(*this, loc); }
Tensor Tensor::transpose(int64_t a, int64_t b, Loc loc) const {
  return rlx::transpose(*this, a, b, loc);
}

Tensor squeeze(const Tensor& x, std::optional<int64_t> axis, Loc loc) {
  detail::check_defined(x, "squeeze", loc);
  const Shape& s = x.shape();
  std::vector<ir::Dim> dims;
  if (axis) {
    int64_t a = norm_axis(*axis, x.ndim(), "squeeze", s, loc);
    const ir::Dim& d = s.dims()[std::size_t(a)];
    if (!d.is_static() || d.size() != 1)
      fail(ErrorKind::Shape, "squeeze: axis ", *axis, " of ", ir::short_str(s),
           " does not have size 1", detail::at_loc(loc));
    for (std::size_t i = 0; i < s.rank(); ++i)
      if (int64_t(i) != a) dims.push_back(s.dims()[i]);
  } else {
    for (const ir::Dim& d : s.dims())
      if (!(d.is_static() && d.size() == 1)) dims.push_back(d);
  }
  if (dims.size() == s.rank()) return x;
  return detail::apply1(
      x, [&](ir::Graph& g, ir::NodeId in) { return reshape_dims(g, in, dims, "squeeze", loc); },
      loc);
}
Tensor Tensor::squeeze(Loc loc) const { return rlx::squeeze(*this, std::nullopt, loc); }
Tensor Tensor::squeeze(int64_t axis, Loc loc) const { return rlx::squeeze(*this, axis, loc); }

Tensor unsqueeze(const Tensor& x, int64_t axis, Loc loc) {
  detail::check_defined(x, "unsqueeze", loc);
  const Shape& s = x.shape();
  int64_t a = norm_axis(axis, x.ndim() + 1, "unsqueeze", s, loc);
  std::vector<ir::Dim> dims(s.dims().begin(), s.dims().end());
  dims.insert(dims.begin() + a, ir::Dim(1));
  return detail::apply1(
      x, [&](ir::Graph& g, ir::NodeId in) { return reshape_dims(g, in, dims, "unsqueeze", loc); },
      loc);
}
Tensor Tensor::unsqueeze(int64_t axis, Loc loc) const { return rlx::unsqueeze(*this, axis, loc); }

Tensor flatten(const Tensor& x, int64_t start, int64_t end, Loc loc) {
  detail::check_defined(x, "flatten", loc);
  const Shape& s = x.shape();
  if (x.ndim() == 0) return reshape(x, {1}, loc);
  int64_t a = norm_axis(start, x.ndim(), "flatten", s, loc);
  int64_t b = norm_axis(end, x.ndim(), "flatten", s, loc);
  if (a > b)
    fail(ErrorKind::Value, "flatten: start axis ", start, " comes after end axis ", end, " for ",
         ir::short_str(s), detail::at_loc(loc));
  std::vector<ir::Dim> dims;
  int64_t merged = 1;
  bool dynamic = false;
  for (int64_t i = 0; i < x.ndim(); ++i) {
    const ir::Dim& d = s.dims()[std::size_t(i)];
    if (i < a || i > b) {
      dims.push_back(d);
      continue;
    }
    if (d.is_dynamic())
      dynamic = true;
    else
      merged *= d.size();
    if (i == b) dims.push_back(dynamic ? ir::Dim::dynamic(ir::sym::kRows) : ir::Dim(merged));
  }
  return detail::apply1(
      x, [&](ir::Graph& g, ir::NodeId in) { return reshape_dims(g, in, dims, "flatten", loc); },
      loc);
}
Tensor Tensor::flatten(int64_t start, int64_t end, Loc loc) const {
  return rlx::flatten(*this, start, end, loc);
}

Tensor expand(const Tensor& x, Dims sizes, Loc loc) {
  return detail::apply1(
      x, [&](ir::Graph& g, ir::NodeId in) { return g.expand(in, sizes, loc); }, loc);
}
Tensor broadcast_to(const Tensor& x, Dims sizes, Loc loc) { return expand(x, sizes, loc); }
Tensor Tensor::expand(Dims sizes, Loc loc) const { return rlx::expand(*this, sizes, loc); }

Tensor slice(const Tensor& x, int64_t axis, std::optional<int64_t> start,
             std::optional<int64_t> stop, int64_t step, Loc loc) {
  detail::check_defined(x, "slice", loc);
  const Shape& s = x.shape();
  int64_t a = norm_axis(axis, x.ndim(), "slice", s, loc);
  if (step == 0) fail(ErrorKind::Value, "slice: step must not be zero", detail::at_loc(loc));
  const ir::Dim& d = s.dims()[std::size_t(a)];
  if (d.is_dynamic()) {
    if (!start && !stop && step == 1) return x;
    fail(ErrorKind::Unsupported, "slice: axis ", axis, " of ", ir::short_str(s),
         " is dynamic; slicing it needs its size", detail::at_loc(loc));
  }
  // Python's slice.indices.
  const int64_t n = d.size();
  auto clip = [](int64_t v, int64_t lo, int64_t hi) { return std::max(lo, std::min(v, hi)); };
  int64_t b, e, len;
  if (step > 0) {
    b = start ? (*start < 0 ? *start + n : *start) : 0;
    e = stop ? (*stop < 0 ? *stop + n : *stop) : n;
    b = clip(b, 0, n);
    e = clip(e, 0, n);
    len = e > b ? (e - b + step - 1) / step : 0;
  } else {
    b = start ? (*start < 0 ? *start + n : *start) : n - 1;
    e = stop ? (*stop < 0 ? *stop + n : *stop) : -1;
    b = clip(b, -1, n - 1);
    e = clip(e, -1, n - 1);
    len = b > e ? (b - e + (-step) - 1) / (-step) : 0;
  }
  if (len == 0) b = 0;
  if (b == 0 && step == 1 && len == n) return x;
  return detail::apply1(
      x, [&](ir::Graph& g, ir::NodeId in) { return g.slice(in, a, b, len, step, loc); }, loc);
}
Tensor Tensor::slice(int64_t axis, std::optional<int64_t> start, std::optional<int64_t> stop,
                     int64_t step, Loc loc) const {
  return rlx::slice(*this, axis, start, stop, step, loc);
}

Tensor Tensor::index(std::vector<TensorIndex> indices, Loc loc) const {
  detail::check_defined(*this, "index", loc);
  for (const TensorIndex& i : indices)
    if (i.kind() == TensorIndex::Kind::Tensor) return detail::index_advanced(*this, indices, loc);
  int64_t used = 0;
  for (const TensorIndex& i : indices) used += i.kind() != TensorIndex::Kind::NewAxis;
  if (used > ndim())
    fail(ErrorKind::Value, "index: ", used, " indices for ", ir::short_str(shape()),
         detail::at_loc(loc));
  Tensor x = *this;
  int64_t axis = 0;
  for (const TensorIndex& i : indices) {
    switch (i.kind()) {
    case TensorIndex::Kind::Int: {
      int64_t n = x.size(axis, loc);
      int64_t k = i.integer();
      if (k < -n || k >= n)
        fail(ErrorKind::Value, "index: index ", k, " is out of range for axis ", axis, " of ",
             ir::short_str(x.shape()), detail::at_loc(loc));
      if (k < 0) k += n;
      x = rlx::squeeze(narrow(x, axis, k, 1, loc), axis, loc);
      break;
    }
    case TensorIndex::Kind::Slice:
      x = rlx::slice(x, axis, i.slice().start, i.slice().stop, i.slice().step, loc);
      ++axis;
      break;
    case TensorIndex::Kind::NewAxis:
      x = rlx::unsqueeze(x, axis, loc);
      ++axis;
      break;
    case TensorIndex::Kind::Tensor: // handled by index_advanced above
      break;
    }
  }
  return x;
}

Tensor narrow(const Tensor& x, int64_t axis, int64_t start, int64_t len, Loc loc) {
  detail::check_defined(x, "narrow", loc);
  int64_t a = norm_axis(axis, x.ndim(), "narrow", x.shape(), loc);
  return detail::apply1(
      x, [&](ir::Graph& g, ir::NodeId in) { return g.narrow_(in, a, start, len, loc); }, loc);
}

Tensor flip(const Tensor& x, Dims axes, Loc loc) {
  detail::check_defined(x, "flip", loc);
  for (int64_t& a : axes) a = norm_axis(a, x.ndim(), "flip", x.shape(), loc);
  return detail::apply1(
      x, [&](ir::Graph& g, ir::NodeId in) { return g.reverse(in, axes, loc); }, loc);
}

Tensor pad(const Tensor& x, Dims pads, ir::PadMode mode, double value, Loc loc) {
  return detail::apply1(
      x, [&](ir::Graph& g, ir::NodeId in) { return g.pad(in, pads, mode, value, loc); }, loc);
}

Tensor concat(std::span<const Tensor> xs, int64_t axis, Loc loc) {
  if (xs.empty()) fail(ErrorKind::Value, "concat: needs at least one tensor", detail::at_loc(loc));
  DType t = xs[0].dtype();
  for (const Tensor& x : xs) t = ir::promote(t, x.dtype());
  int64_t a = norm_axis(axis, xs[0].ndim(), "concat", xs[0].shape(), loc);
  return apply(
      xs,
      [&](ir::Graph& g, std::span<const ir::NodeId> in) {
        std::vector<ir::NodeId> ids;
        for (ir::NodeId id : in) ids.push_back(cast_to(g, id, t, loc));
        return g.concat_(ids, a, loc);
      },
      loc);
}
Tensor concat(std::initializer_list<Tensor> xs, int64_t axis, Loc loc) {
  return concat(std::span<const Tensor>(xs.begin(), xs.size()), axis, loc);
}

Tensor stack(std::span<const Tensor> xs, int64_t axis, Loc loc) {
  if (xs.empty()) fail(ErrorKind::Value, "stack: needs at least one tensor", detail::at_loc(loc));
  for (const Tensor& x : xs)
    if (x.shape().dims() != xs[0].shape().dims())
      fail(ErrorKind::Shape, "stack: shapes differ: ", ir::short_str(xs[0].shape()), " and ",
           ir::short_str(x.shape()), detail::at_loc(loc));
  std::vector<Tensor> parts;
  for (const Tensor& x : xs) parts.push_back(unsqueeze(x, axis, loc));
  return concat(parts, axis, loc);
}
Tensor stack(std::initializer_list<Tensor> xs, int64_t axis, Loc loc) {
  return stack(std::span<const Tensor>(xs.begin(), xs.size()), axis, loc);
}

std::vector<Tensor> split(const Tensor& x, Dims sizes, int64_t axis, Loc loc) {
  detail::check_defined(x, "split", loc);
  int64_t a = norm_axis(axis, x.ndim(), "split", x.shape(), loc);
  int64_t total = 0;
  for (int64_t s : sizes) {
    if (s < 0) fail(ErrorKind::Value, "split: negative size ", s, detail::at_loc(loc));
    total += s;
  }
  if (total != x.size(a, loc))
    fail(ErrorKind::Shape, "split: sizes sum to ", total, " but axis ", axis, " of ",
         ir::short_str(x.shape()), " has ", x.size(a, loc), detail::at_loc(loc));
  std::vector<Tensor> out;
  int64_t start = 0;
  for (int64_t s : sizes) {
    out.push_back(narrow(x, a, start, s, loc));
    start += s;
  }
  return out;
}

Tensor take(const Tensor& x, const Tensor& indices, int64_t axis, Loc loc) {
  detail::check_defined(x, "take", loc);
  int64_t a = norm_axis(axis, x.ndim(), "take", x.shape(), loc);
  return apply(
      {x, indices},
      [&](ir::Graph& g, std::span<const ir::NodeId> in) { return g.gather_(in[0], in[1], a, loc); },
      loc);
}

} // namespace rlx
