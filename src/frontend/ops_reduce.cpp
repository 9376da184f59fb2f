// src/frontend/ops_reduce.cpp -- reductions, scans and softmax on Tensors.
#include "frontend/impl.hpp"
#include "frontend/ops.hpp"

#include <algorithm>
#include <limits>

namespace rlx {

namespace {

using detail::cast_to;

/// Sorted, normalized axes; an empty list means every axis.
ir::Ints reduce_axes(const Tensor& x, const Dims& axes, std::string_view what, const Loc& loc) {
  int64_t r = x.ndim();
  ir::Ints out;
  if (axes.empty()) {
    for (int64_t i = 0; i < r; ++i) out.push_back(i);
    return out;
  }
  for (int64_t a : axes) {
    int64_t n = detail::norm_axis(a, r, what, x.shape(), loc);
    if (std::find(out.begin(), out.end(), n) != out.end())
      fail(ErrorKind::Value, what, ": axis ", a, " is listed twice for ", ir::short_str(x.shape()),
           detail::at_loc(loc));
    out.push_back(n);
  }
  std::sort(out.begin(), out.end());
  return out;
}

/// The dtype a reduction computes in: sums and products of integers and bools are i64 (numpy),
/// means are f32 for them; max and min keep the dtype.
DType reduce_dtype(ir::OpKind kind, DType t) {
  if (kind == ir::OpKind::ReduceMean) return detail::float_dtype(t);
  if ((kind == ir::OpKind::ReduceSum || kind == ir::OpKind::ReduceProd) &&
      (ir::is_int(t) || ir::is_bool(t)))
    return DType::I64;
  return t;
}

ir::NodeId reduce_node(ir::Graph& g, ir::OpKind kind, ir::NodeId x, const ir::Ints& axes,
                       bool keepdims, const Loc& loc) {
  if (axes.empty() && !keepdims) {
    // Reducing no axis of a rank-0 tensor: the value itself (in the reduction's dtype).
    return cast_to(g, x, reduce_dtype(kind, g.shape(x).dtype()), loc);
  }
  ir::NodeId in = cast_to(g, x, reduce_dtype(kind, g.shape(x).dtype()), loc);
  return g.add_inferred(ir::Op(kind, ir::ReduceAttrs{axes, keepdims}), {in}, loc);
}

Tensor reduce(ir::OpKind kind, const Tensor& x, const Dims& axes, bool keepdims, const Loc& loc) {
  detail::check_defined(x, ir::op_name(kind), loc);
  ir::Ints ax = reduce_axes(x, axes, ir::op_name(kind), loc);
  // max and min of bools are "any" and "all": bool results, as numpy.
  bool back_to_bool =
      ir::is_bool(x.dtype()) && (kind == ir::OpKind::ReduceMax || kind == ir::OpKind::ReduceMin);
  return detail::apply1(
      x,
      [&](ir::Graph& g, ir::NodeId in) {
        ir::NodeId r = reduce_node(g, kind, in, ax, keepdims, loc);
        return back_to_bool ? cast_to(g, r, DType::Bool, loc) : r;
      },
      loc);
}

Tensor arg_reduce(ir::OpKind kind, const Tensor& x, std::optional<int64_t> axis, bool keepdims,
                  const Loc& loc) {
  detail::check_defined(x, ir::op_name(kind), loc);
  if (axis) {
    int64_t a = detail::norm_axis(*axis, x.ndim(), ir::op_name(kind), x.shape(), loc);
    return detail::apply1(
        x,
        [&](ir::Graph& g, ir::NodeId in) {
          return g.add_inferred(ir::Op(kind, ir::ArgReduceAttrs{a, keepdims}), {in}, loc);
        },
        loc);
  }
  // Over the flattened tensor (numpy's axis=None); keepdims gives all-ones sizes.
  int64_t rank = x.ndim();
  return detail::apply1(
      x,
      [&](ir::Graph& g, ir::NodeId in) {
        ir::NodeId flat = g.reshape_(in, {-1}, loc);
        ir::NodeId r = g.add_inferred(ir::Op(kind, ir::ArgReduceAttrs{0, false}), {flat}, loc);
        return keepdims ? g.reshape_(r, std::vector<int64_t>(std::size_t(rank), 1), loc) : r;
      },
      loc);
}

} // namespace

#define RLX_DEFINE_REDUCE(FN, KIND)                                                                \
  Tensor FN(const Tensor& x, Dims axes, bool keepdims, Loc loc) {                                  \
    return reduce(ir::OpKind::KIND, x, axes, keepdims, loc);                                       \
  }                                                                                                \
  Tensor Tensor::FN(Dims axes, bool keepdims, Loc loc) const {                                     \
    return reduce(ir::OpKind::KIND, *this, axes, keepdims, loc);                                   \
  }
RLX_DEFINE_REDUCE(sum, ReduceSum)
RLX_DEFINE_REDUCE(mean, ReduceMean)
RLX_DEFINE_REDUCE(max, ReduceMax)
RLX_DEFINE_REDUCE(min, ReduceMin)
RLX_DEFINE_REDUCE(prod, ReduceProd)
#undef RLX_DEFINE_REDUCE

Tensor argmax(const Tensor& x, std::optional<int64_t> axis, bool keepdims, Loc loc) {
  return arg_reduce(ir::OpKind::ArgMax, x, axis, keepdims, loc);
}
Tensor argmin(const Tensor& x, std::optional<int64_t> axis, bool keepdims, Loc loc) {
  return arg_reduce(ir::OpKind::ArgMin, x, axis, keepdims, loc);
}
Tensor Tensor::argmax(Loc loc) const { return rlx::argmax(*this, std::nullopt, false, loc); }
Tensor Tensor::argmax(int64_t axis, bool keepdims, Loc loc) const {
  return rlx::argmax(*this, axis, keepdims, loc);
}
Tensor Tensor::argmin(Loc loc) const { return rlx::argmin(*this, std::nullopt, false, loc); }
Tensor Tensor::argmin(int64_t axis, bool keepdims, Loc loc) const {
  return rlx::argmin(*this, axis, keepdims, loc);
}

Tensor var(const Tensor& x, Dims axes, bool keepdims, int64_t ddof, Loc loc) {
  detail::check_defined(x, "var", loc);
  ir::Ints ax = reduce_axes(x, axes, "var", loc);
  int64_t n = 1;
  for (int64_t a : ax) n *= x.size(a, loc);
  if (ddof < 0) fail(ErrorKind::Value, "var: ddof ", ddof, " is negative", detail::at_loc(loc));
  return detail::apply1(
      x,
      [&](ir::Graph& g, ir::NodeId in) {
        DType t = detail::float_dtype(g.shape(in).dtype());
        ir::NodeId xf = cast_to(g, in, t, loc);
        ir::NodeId m = reduce_node(g, ir::OpKind::ReduceMean, xf, ax, true, loc);
        ir::NodeId d = g.sub(xf, m, loc);
        ir::NodeId ss = reduce_node(g, ir::OpKind::ReduceSum, g.mul(d, d, loc), ax, keepdims, loc);
        double denom = double(n - ddof);
        // numpy: a non-positive divisor gives inf/nan, which 1/0 in the scale reproduces.
        ir::NodeId scale =
            g.constant(denom > 0 ? 1.0 / denom : std::numeric_limits<double>::infinity(), t, loc);
        return g.mul(ss, scale, loc);
      },
      loc);
}

Tensor std(const Tensor& x, Dims axes, bool keepdims, int64_t ddof, Loc loc) {
  return sqrt(var(x, std::move(axes), keepdims, ddof, loc), loc);
}

Tensor logsumexp(const Tensor& x, Dims axes, bool keepdims, Loc loc) {
  detail::check_defined(x, "logsumexp", loc);
  ir::Ints ax = reduce_axes(x, axes, "logsumexp", loc);
  return detail::apply1(
      x,
      [&](ir::Graph& g, ir::NodeId in) {
        DType t = detail::float_dtype(g.shape(in).dtype());
        ir::NodeId xf = cast_to(g, in, t, loc);
        ir::NodeId m = reduce_node(g, ir::OpKind::ReduceMax, xf, ax, true, loc);
        // A row that is all -inf (or holds inf) shifts by 0 so the result is -inf (or inf).
        ir::NodeId finite = g.lt(g.add_inferred(ir::Op(ir::OpKind::Abs), {m}, loc),
                                 g.constant(std::numeric_limits<double>::infinity(), t, loc), loc);
        ir::NodeId shift = g.where_(finite, m, g.constant(0, t, loc), loc);
        ir::NodeId s =
            reduce_node(g, ir::OpKind::ReduceSum, g.exp(g.sub(xf, shift, loc), loc), ax, true, loc);
        ir::NodeId r = g.add(g.add_inferred(ir::Op(ir::OpKind::Log), {s}, loc), shift, loc);
        if (keepdims) return r;
        std::vector<int64_t> sizes;
        const Shape& rs = g.shape(r);
        for (std::size_t i = 0; i < rs.rank(); ++i)
          if (std::find(ax.begin(), ax.end(), int64_t(i)) == ax.end())
            sizes.push_back(rs.dims()[i].is_static() ? rs.dims()[i].size() : -1);
        return g.reshape_(r, sizes, loc);
      },
      loc);
}

Tensor cumsum(const Tensor& x, int64_t axis, bool exclusive, Loc loc) {
  detail::check_defined(x, "cumsum", loc);
  int64_t a = detail::norm_axis(axis, x.ndim(), "cumsum", x.shape(), loc);
  return detail::apply1(
      x,
      [&](ir::Graph& g, ir::NodeId in) {
        ir::NodeId v = cast_to(g, in, reduce_dtype(ir::OpKind::ReduceSum, x.dtype()), loc);
        return g.cumsum(v, a, exclusive, g.shape(v), loc);
      },
      loc);
}

Tensor softmax(const Tensor& x, int64_t axis, Loc loc) {
  detail::check_defined(x, "softmax", loc);
  int64_t a = detail::norm_axis(axis, x.ndim(), "softmax", x.shape(), loc);
  return detail::apply1(
      x,
      [&](ir::Graph& g, ir::NodeId in) {
        return g.sm(cast_to(g, in, detail::float_dtype(x.dtype()), loc), a, loc);
      },
      loc);
}

Tensor log_softmax(const Tensor& x, int64_t axis, Loc loc) {
  detail::check_defined(x, "log_softmax", loc);
  Tensor xf = cast(x, detail::float_dtype(x.dtype()), loc);
  return sub(xf, logsumexp(xf, {axis}, true, loc), loc);
}

Tensor Tensor::softmax(int64_t axis, Loc loc) const { return rlx::softmax(*this, axis, loc); }
Tensor Tensor::log_softmax(int64_t axis, Loc loc) const {
  return rlx::log_softmax(*this, axis, loc);
}

} // namespace rlx
