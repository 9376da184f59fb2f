// src/frontend/sort.cpp -- numpy's and PyTorch's sorting, selection and scattering functions as
// compositions of the argsort, top_k, gather and scatter_add primitives. Index arithmetic is
// O(number of indices): an index along one axis becomes a flat position (per-row offsets plus
// index times stride) and one gather or scatter_add on the flattened tensor does the rest, so
// gradients go through gather's adjoint, a scatter_add, never a one-hot matrix.
#include "frontend/impl.hpp"
#include "frontend/ops.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace rlx {

namespace {

using detail::dims_str;
using detail::norm_axis;

void check_index_dtype(const Tensor& index, std::string_view what, const Loc& loc) {
  if (!ir::is_int(index.dtype()))
    fail(ErrorKind::Type, what, ": indices must be an integer tensor, got ",
         ir::short_str(index.shape()), detail::at_loc(loc));
}

/// x with axes a and b exchanged (a transposition, its own inverse).
Tensor swap_axes(const Tensor& x, int64_t a, int64_t b, const Loc& loc) {
  if (a == b) return x;
  Dims perm(std::size_t(x.ndim()));
  std::iota(perm.begin(), perm.end(), int64_t(0));
  std::swap(perm[std::size_t(a)], perm[std::size_t(b)]);
  return permute(x, perm, loc);
}

/// Flat positions into a tensor of sizes xs of the elements index selects along axis: for each
/// element of index (of sizes `out`, which index broadcasts to), the position with the axis
/// coordinate replaced by the index value. Other axes contribute their coordinate times their
/// stride where xs has more than one element. An index out of [-len, len) maps to numel(xs),
/// which the gather or scatter_add that uses the position reports as out of range.
Tensor flat_positions(const Dims& xs, const Tensor& index, const Dims& out, int64_t axis,
                      const Loc& loc) {
  int64_t rank = int64_t(xs.size());
  Dims stride(xs.size(), 1);
  for (int64_t d = rank - 1; d > 0; --d)
    stride[std::size_t(d - 1)] = stride[std::size_t(d)] * xs[std::size_t(d)];
  int64_t numel = rank ? stride[0] * xs[0] : 1, len = xs[std::size_t(axis)];
  Tensor idx = index.cast(DType::I64, loc);
  if (index.sizes(loc) != out) idx = broadcast_to(idx, out, loc);
  idx = where(idx < 0, idx + len, idx, loc);
  Tensor valid = (idx >= 0) && (idx < len);
  Tensor pos = idx * stride[std::size_t(axis)];
  for (int64_t d = 0; d < rank; ++d) {
    if (d == axis || xs[std::size_t(d)] == 1 || out[std::size_t(d)] == 1) continue;
    Dims shape(xs.size(), 1);
    shape[std::size_t(d)] = out[std::size_t(d)];
    Tensor coord = arange(double(out[std::size_t(d)]), DType::I64, loc).reshape(shape, loc);
    pos = pos + coord * stride[std::size_t(d)];
  }
  return where(valid, pos, numel, loc);
}

/// The sizes an index of sizes is selects along axis of xs: torch's rule (is[d] <= xs[d] off the
/// axis) or numpy's broadcasting (the other axes broadcast against each other).
Dims selected_sizes(const Dims& xs, const Dims& is, int64_t axis, bool broadcast,
                    std::string_view what, const Loc& loc) {
  if (is.size() != xs.size())
    fail(ErrorKind::Shape, what, ": indices ", dims_str(is), " must have the rank of x ",
         dims_str(xs), detail::at_loc(loc));
  Dims out = is;
  for (std::size_t d = 0; d < xs.size(); ++d) {
    if (int64_t(d) == axis) continue;
    if (broadcast) {
      if (is[d] != xs[d] && is[d] != 1 && xs[d] != 1)
        fail(ErrorKind::Shape, what, ": indices ", dims_str(is), " do not broadcast against x ",
             dims_str(xs), " off axis ", axis, detail::at_loc(loc));
      out[d] = is[d] == 1 ? xs[d] : is[d];
    } else if (is[d] > xs[d]) {
      fail(ErrorKind::Shape, what, ": index ", dims_str(is), " is larger than x ", dims_str(xs),
           " on axis ", d, detail::at_loc(loc));
    }
  }
  return out;
}

/// x's values at flat positions pos (any shape): one gather on the flattened x.
Tensor take_flat(const Tensor& x, const Tensor& pos, const Loc& loc) {
  return take(x.reshape({-1}, loc), pos, 0, loc);
}

/// scatter_add of values (pos's shape) into zeros of x's sizes at flat positions pos.
Tensor scatter_flat(const Tensor& values, const Tensor& pos, const Dims& xs, const Loc& loc) {
  int64_t numel = 1;
  for (int64_t s : xs) numel *= s;
  Tensor r = apply(
      {values.reshape({-1}, loc), pos.reshape({-1}, loc)},
      [&](ir::Graph& g, std::span<const ir::NodeId> in) {
        return g.scatter_add(in[0], in[1], 0, numel, loc);
      },
      loc);
  return r.reshape(xs, loc);
}

/// x with values written at flat positions pos; of duplicate positions the last (in pos's
/// row-major order) wins. The winners come from a stable sort of the positions: the last of each
/// run of equal positions.
Tensor write_flat(const Tensor& x, const Tensor& pos, const Tensor& values, const Loc& loc) {
  Dims xs = x.sizes(loc);
  Tensor p = pos.reshape({-1}, loc);
  int64_t m = p.size(0, loc);
  if (m == 0) return x;
  Tensor v = values.cast(x.dtype(), loc).reshape({-1}, loc);
  Tensor order = argsort(p, 0, false, true, loc);
  Tensor ps = take(p, order, 0, loc);
  Tensor next = concat({narrow(ps, 0, 1, m - 1, loc), full({1}, -1.0, DType::I64, loc)}, 0, loc);
  Tensor last_of_run = (ps != next).cast(x.dtype(), loc);
  Tensor win = apply(
      {last_of_run, order},
      [&](ir::Graph& g, std::span<const ir::NodeId> in) {
        return g.scatter_add(in[0], in[1], 0, m, loc);
      },
      loc);
  Tensor hit = scatter_flat(ones({m}, x.dtype(), loc), p, xs, loc) > 0;
  return where(hit, 0, x, loc) + scatter_flat(v * win, p, xs, loc);
}

/// argsort along the last axis.
Tensor argsort_last(const Tensor& x, bool descending, const Loc& loc) {
  return apply(
      {x},
      [&](ir::Graph& g, std::span<const ir::NodeId> in) {
        return g.argsort(in[0], descending, loc);
      },
      loc);
}

Tensor nan_like(const Tensor& t, const Loc& loc) {
  return full(t.sizes(loc), std::numeric_limits<double>::quiet_NaN(), t.dtype(), loc);
}

/// x flattened (no axis) or as is, with the axis to work on.
std::pair<Tensor, int64_t> reduce_operand(const Tensor& x, std::optional<int64_t> axis,
                                          std::string_view what, const Loc& loc) {
  detail::check_defined(x, what, loc);
  if (!axis) return {x.reshape({-1}, loc), 0};
  if (x.ndim() == 0)
    fail(ErrorKind::Value, what, ": axis ", *axis, " of a rank-0 tensor", detail::at_loc(loc));
  return {x, norm_axis(*axis, x.ndim(), what, x.shape(), loc)};
}

/// A reduced value (axis kept as size 1) in the shape numpy's keepdims asks for.
Tensor finish_reduce(const Tensor& r, const Tensor& x, std::optional<int64_t> axis, int64_t a,
                     bool keepdims, const Loc& loc) {
  if (!keepdims) return squeeze(r, a, loc);
  if (!axis) return r.reshape(Dims(std::size_t(x.ndim()), 1), loc);
  return r;
}

Tensor as_float(const Tensor& x, const Loc& loc) {
  return x.cast(detail::float_dtype(x.dtype()), loc);
}

} // namespace

Tensor argsort(const Tensor& x, int64_t axis, bool descending, bool, Loc loc) {
  detail::check_defined(x, "argsort", loc);
  if (x.ndim() == 0)
    fail(ErrorKind::Value, "argsort: needs a tensor of rank >= 1, got ", ir::short_str(x.shape()),
         detail::at_loc(loc));
  int64_t a = norm_axis(axis, x.ndim(), "argsort", x.shape(), loc), last = x.ndim() - 1;
  return swap_axes(argsort_last(swap_axes(x, a, last, loc), descending, loc), a, last, loc);
}

Tensor sort(const Tensor& x, int64_t axis, bool descending, bool stable, Loc loc) {
  detail::check_defined(x, "sort", loc);
  if (x.ndim() == 0)
    fail(ErrorKind::Value, "sort: needs a tensor of rank >= 1, got ", ir::short_str(x.shape()),
         detail::at_loc(loc));
  int64_t a = norm_axis(axis, x.ndim(), "sort", x.shape(), loc);
  return take_along_axis(x, argsort(x, a, descending, stable, loc), a, loc);
}

std::pair<Tensor, Tensor> topk(const Tensor& x, int64_t k, int64_t axis, bool largest, bool,
                               Loc loc) {
  detail::check_defined(x, "topk", loc);
  if (x.ndim() == 0)
    fail(ErrorKind::Value, "topk: needs a tensor of rank >= 1, got ", ir::short_str(x.shape()),
         detail::at_loc(loc));
  int64_t a = norm_axis(axis, x.ndim(), "topk", x.shape(), loc), last = x.ndim() - 1;
  int64_t n = x.size(a, loc);
  if (k < 0 || k > n)
    fail(ErrorKind::Value, "topk: k = ", k, " is not in [0, ", n, "] for axis ", axis, " of ",
         ir::short_str(x.shape()), detail::at_loc(loc));
  Tensor idx = apply(
      {swap_axes(x, a, last, loc)},
      [&](ir::Graph& g, std::span<const ir::NodeId> in) { return g.top_k(in[0], k, largest, loc); },
      loc);
  idx = swap_axes(idx, a, last, loc);
  return {take_along_axis(x, idx, a, loc), idx};
}

std::pair<Tensor, Tensor> kthvalue(const Tensor& x, int64_t k, int64_t axis, bool keepdims,
                                   Loc loc) {
  detail::check_defined(x, "kthvalue", loc);
  if (x.ndim() == 0)
    fail(ErrorKind::Value, "kthvalue: needs a tensor of rank >= 1", detail::at_loc(loc));
  int64_t a = norm_axis(axis, x.ndim(), "kthvalue", x.shape(), loc);
  int64_t n = x.size(a, loc);
  if (k < 1 || k > n)
    fail(ErrorKind::Value, "kthvalue: k = ", k, " is not in [1, ", n, "] for axis ", axis, " of ",
         ir::short_str(x.shape()), detail::at_loc(loc));
  auto [v, i] = topk(x, k, a, false, true, loc);
  v = narrow(v, a, k - 1, 1, loc);
  i = narrow(i, a, k - 1, 1, loc);
  if (!keepdims) return {squeeze(v, a, loc), squeeze(i, a, loc)};
  return {v, i};
}

std::pair<Tensor, Tensor> mode(const Tensor& x, int64_t axis, bool keepdims, Loc loc) {
  detail::check_defined(x, "mode", loc);
  if (x.ndim() == 0)
    fail(ErrorKind::Value, "mode: needs a tensor of rank >= 1", detail::at_loc(loc));
  int64_t a = norm_axis(axis, x.ndim(), "mode", x.shape(), loc), last = x.ndim() - 1;
  int64_t n = x.size(a, loc);
  if (n == 0)
    fail(ErrorKind::Value, "mode: empty axis of ", ir::short_str(x.shape()), detail::at_loc(loc));
  // Runs of equal values in the stable ascending order: run ids by a cumsum of run starts, run
  // lengths by a scatter_add, the first longest run by argmax (the smallest value), and its
  // last element's original index (stable order: the largest index holding the value).
  Tensor xl = swap_axes(x, a, last, loc);
  Tensor perm = argsort_last(xl, false, loc);
  Tensor s = take_along_axis(xl, perm, last, loc);
  Tensor starts = ones(s.sizes(loc), DType::I64, loc);
  if (n > 1) {
    Tensor differs = narrow(s, last, 1, n - 1, loc) != narrow(s, last, 0, n - 1, loc);
    starts = concat({narrow(starts, last, 0, 1, loc), differs.cast(DType::I64, loc)}, last, loc);
  }
  Tensor run = cumsum(starts, last, false, loc) - 1;
  Tensor counts = scatter_add(zeros(s.sizes(loc), DType::I64, loc), last, run,
                              ones(s.sizes(loc), DType::I64, loc), loc);
  Tensor per = take_along_axis(counts, run, last, loc);
  Tensor best = argmax(per, last, true, loc);
  Tensor end = best + take_along_axis(per, best, last, loc) - 1;
  Tensor v = swap_axes(take_along_axis(s, best, last, loc), a, last, loc);
  Tensor i = swap_axes(take_along_axis(perm, end, last, loc), a, last, loc);
  if (!keepdims) return {squeeze(v, a, loc), squeeze(i, a, loc)};
  return {v, i};
}

namespace {
/// take_along_axis and torch.gather: the element of x at indices along axis, the other axes
/// broadcast (numpy's rule) or no larger than x's (torch's), through one flat take.
Tensor gather_along(const Tensor& x, const Tensor& indices, int64_t axis, bool numpy_rule,
                    const char* what, const Loc& loc) {
  detail::check_defined(x, what, loc);
  detail::check_defined(indices, what, loc);
  check_index_dtype(indices, what, loc);
  if (x.ndim() == 0)
    fail(ErrorKind::Value, what, ": needs a tensor of rank >= 1", detail::at_loc(loc));
  int64_t a = norm_axis(axis, x.ndim(), what, x.shape(), loc);
  Dims xs = x.sizes(loc);
  Dims out = selected_sizes(xs, indices.sizes(loc), a, numpy_rule, what, loc);
  return take_flat(x, flat_positions(xs, indices, out, a, loc), loc);
}
} // namespace

Tensor take_along_axis(const Tensor& x, const Tensor& indices, int64_t axis, Loc loc) {
  return gather_along(x, indices, axis, true, "take_along_axis", loc);
}

Tensor gather(const Tensor& x, int64_t axis, const Tensor& index, Loc loc) {
  return gather_along(x, index, axis, false, "gather", loc);
}

namespace {

/// The checked operands of torch's scatter family: flat positions and src cut to index's sizes.
std::pair<Tensor, Tensor> scatter_operands(const Tensor& x, int64_t axis, const Tensor& index,
                                           const Tensor& src, std::string_view what,
                                           const Loc& loc) {
  detail::check_defined(x, what, loc);
  detail::check_defined(index, what, loc);
  detail::check_defined(src, what, loc);
  check_index_dtype(index, what, loc);
  if (x.ndim() == 0)
    fail(ErrorKind::Value, what, ": needs a tensor of rank >= 1", detail::at_loc(loc));
  int64_t a = norm_axis(axis, x.ndim(), what, x.shape(), loc);
  Dims xs = x.sizes(loc), is = index.sizes(loc), ss = src.sizes(loc);
  Dims out = selected_sizes(xs, is, a, false, what, loc);
  if (ss.size() != is.size())
    fail(ErrorKind::Shape, what, ": src ", dims_str(ss), " must have the rank of index ",
         dims_str(is), detail::at_loc(loc));
  Tensor s = src;
  for (std::size_t d = 0; d < is.size(); ++d) {
    if (is[d] > ss[d])
      fail(ErrorKind::Shape, what, ": index ", dims_str(is), " is larger than src ", dims_str(ss),
           " on axis ", d, detail::at_loc(loc));
    if (is[d] < ss[d]) s = narrow(s, int64_t(d), 0, is[d], loc);
  }
  return {flat_positions(xs, index, out, a, loc), s.cast(x.dtype(), loc)};
}

} // namespace

Tensor scatter_add(const Tensor& x, int64_t axis, const Tensor& index, const Tensor& src, Loc loc) {
  auto [pos, s] = scatter_operands(x, axis, index, src, "scatter_add", loc);
  return x + scatter_flat(s, pos, x.sizes(loc), loc);
}

Tensor scatter(const Tensor& x, int64_t axis, const Tensor& index, const Tensor& src, Loc loc) {
  auto [pos, s] = scatter_operands(x, axis, index, src, "scatter", loc);
  return write_flat(x, pos, s, loc);
}

Tensor put_along_axis(const Tensor& x, const Tensor& indices, const Tensor& values, int64_t axis,
                      Loc loc) {
  detail::check_defined(x, "put_along_axis", loc);
  detail::check_defined(indices, "put_along_axis", loc);
  detail::check_defined(values, "put_along_axis", loc);
  check_index_dtype(indices, "put_along_axis", loc);
  if (x.ndim() == 0)
    fail(ErrorKind::Value, "put_along_axis: needs a tensor of rank >= 1", detail::at_loc(loc));
  int64_t a = norm_axis(axis, x.ndim(), "put_along_axis", x.shape(), loc);
  Dims xs = x.sizes(loc);
  Dims out = selected_sizes(xs, indices.sizes(loc), a, true, "put_along_axis", loc);
  Tensor pos = flat_positions(xs, indices, out, a, loc);
  return write_flat(x, pos, broadcast_to(values.cast(x.dtype(), loc), out, loc), loc);
}

Tensor index_add(const Tensor& x, int64_t axis, const Tensor& index, const Tensor& src, Loc loc) {
  detail::check_defined(x, "index_add", loc);
  detail::check_defined(index, "index_add", loc);
  detail::check_defined(src, "index_add", loc);
  check_index_dtype(index, "index_add", loc);
  if (x.ndim() == 0)
    fail(ErrorKind::Value, "index_add: needs a tensor of rank >= 1", detail::at_loc(loc));
  int64_t a = norm_axis(axis, x.ndim(), "index_add", x.shape(), loc);
  Dims xs = x.sizes(loc), ss = src.sizes(loc), is = index.sizes(loc);
  Dims want = xs;
  if (is.size() != 1)
    fail(ErrorKind::Shape, "index_add: index must be 1-D, got ", dims_str(is), detail::at_loc(loc));
  want[std::size_t(a)] = is[0];
  if (ss != want)
    fail(ErrorKind::Shape, "index_add: src ", dims_str(ss), " must be ", dims_str(want), " (x ",
         dims_str(xs), " with axis ", axis, " the length of index)", detail::at_loc(loc));
  int64_t len = xs[std::size_t(a)];
  Tensor idx = index.cast(DType::I64, loc);
  idx = where((idx < -len) || (idx >= len), len, idx, loc); // out of range: reported by scatter_add
  Tensor added = apply(
      {src.cast(x.dtype(), loc), idx},
      [&](ir::Graph& g, std::span<const ir::NodeId> in) {
        return g.scatter_add(in[0], in[1], a, len, loc);
      },
      loc);
  return x + added;
}

Tensor searchsorted(const Tensor& sorted, const Tensor& values, std::string_view side, Loc loc) {
  detail::check_defined(sorted, "searchsorted", loc);
  detail::check_defined(values, "searchsorted", loc);
  if (sorted.ndim() != 1)
    fail(ErrorKind::Shape, "searchsorted: sorted must be 1-D, got ", ir::short_str(sorted.shape()),
         detail::at_loc(loc));
  if (side != "left" && side != "right")
    fail(ErrorKind::Value, "searchsorted: side must be \"left\" or \"right\", got \"", side, "\"",
         detail::at_loc(loc));
  bool right = side == "right";
  int64_t n = sorted.size(0, loc);
  Tensor lo = zeros(values.sizes(loc), DType::I64, loc);
  if (n == 0) return lo;
  Tensor hi = full(values.sizes(loc), double(n), DType::I64, loc);
  // A binary search, all values at once: ceil(log2(n + 1)) halvings of [lo, hi), each one
  // gather and a few element-wise ops on m values: O(m log n). NaN compares as numpy's order
  // (above every number), so NaN values land after every number.
  auto before = [&](const Tensor& a, const Tensor& v) {
    // a orders before v (left: a < v; right: a <= v), NaN above every number.
    Tensor a_nan = a != a, v_nan = v != v;
    Tensor less = right ? (a <= v) : (a < v);
    return (less && !a_nan) || (!a_nan && v_nan) || (right && a_nan && v_nan);
  };
  for (int64_t span = n; span > 0; span /= 2) {
    Tensor active = lo < hi;
    Tensor mid = floor((lo + hi).cast(DType::F64, loc) * 0.5).cast(DType::I64, loc);
    mid = minimum(mid, n - 1, loc);
    Tensor go_right = active && before(take(sorted, mid, 0, loc), values);
    lo = where(go_right, mid + 1, lo, loc);
    hi = where(active && !go_right, mid, hi, loc);
  }
  return lo;
}

UniqueResult unique(const Tensor& x, bool return_inverse, bool return_counts, Loc loc) {
  detail::check_defined(x, "unique", loc);
  if (x.is_traced())
    fail(ErrorKind::Trace, "unique: the result's size depends on the values of ",
         ir::short_str(x.shape()), ", which are not known inside rlx::jit", detail::at_loc(loc));
  std::vector<double> v = x.to_vector<double>(loc);
  bool ints = ir::is_int(x.dtype()) || ir::is_bool(x.dtype());
  std::vector<int64_t> iv = ints ? x.to_vector<int64_t>(loc) : std::vector<int64_t>{};
  std::size_t n = v.size();
  std::vector<int64_t> order(n);
  std::iota(order.begin(), order.end(), int64_t(0));
  auto less = [&](int64_t a, int64_t b) {
    if (ints) return iv[std::size_t(a)] < iv[std::size_t(b)];
    double p = v[std::size_t(a)], q = v[std::size_t(b)];
    if (std::isnan(p)) return false;
    return std::isnan(q) || p < q;
  };
  std::sort(order.begin(), order.end(),
            [&](int64_t a, int64_t b) { return less(a, b) || (!less(b, a) && a < b); });
  std::vector<int64_t> inverse(n), counts, firsts;
  for (std::size_t i = 0; i < n; ++i) {
    bool fresh = i == 0 || less(order[i - 1], order[i]); // NaNs are one value, as numpy's
    if (fresh) {
      firsts.push_back(order[i]);
      counts.push_back(0);
    }
    counts.back() += 1;
    inverse[std::size_t(order[i])] = int64_t(firsts.size()) - 1;
  }
  int64_t u = int64_t(firsts.size());
  UniqueResult r;
  Tensor flat = x.reshape({-1}, loc);
  r.values = take(flat, Tensor::from_vector(firsts, {u}, loc), 0, loc);
  if (return_inverse) r.inverse = Tensor::from_vector(inverse, x.sizes(loc), loc);
  if (return_counts) r.counts = Tensor::from_vector(counts, {u}, loc);
  return r;
}

namespace {

/// Values of sorted (along a) at static position pos, axis kept.
Tensor at_pos(const Tensor& sorted, int64_t a, int64_t pos, const Loc& loc) {
  return narrow(sorted, a, pos, 1, loc);
}

/// NaN where the sorted slice (NaN last) holds one, else v.
Tensor nan_if_any(const Tensor& sorted, int64_t a, int64_t n, const Tensor& v, const Loc& loc) {
  Tensor top = at_pos(sorted, a, n - 1, loc);
  return where(top != top, nan_like(v, loc), v, loc);
}

/// numpy's quantile of one q on the slices of sorted along a (axis kept).
Tensor quantile_sorted(const Tensor& sorted, int64_t a, int64_t n, double q,
                       std::string_view method, const Loc& loc) {
  double pos = q * double(n - 1);
  auto lo = int64_t(std::floor(pos)), hi = int64_t(std::ceil(pos));
  Tensor va = at_pos(sorted, a, lo, loc), vb = at_pos(sorted, a, hi, loc);
  Tensor r;
  if (method == "lower") {
    r = va;
  } else if (method == "higher") {
    r = vb;
  } else if (method == "midpoint") {
    r = (va + vb) * 0.5;
  } else {
    // numpy's _lerp: from the nearer end, so t = 1 gives b exactly.
    double t = pos - double(lo);
    Tensor d = vb - va;
    r = t >= 0.5 ? vb - d * (1.0 - t) : va + d * t;
  }
  return nan_if_any(sorted, a, n, r, loc);
}

Tensor quantiles(const Tensor& x, const std::vector<double>& qs, bool stack_q,
                 std::optional<int64_t> axis, std::string_view method, bool keepdims,
                 std::string_view what, const Loc& loc) {
  auto [xv, a] = reduce_operand(x, axis, what, loc);
  if (method != "linear" && method != "lower" && method != "higher" && method != "midpoint")
    fail(ErrorKind::Unsupported, what, ": method \"", method,
         "\" is not one of linear, lower, higher, midpoint", detail::at_loc(loc));
  for (double q : qs)
    if (!(q >= 0.0 && q <= 1.0))
      fail(ErrorKind::Value, what, ": quantiles must be in [0, 1] (percentiles in [0, 100]), got ",
           q, detail::at_loc(loc));
  int64_t n = xv.size(a, loc);
  if (n == 0)
    fail(ErrorKind::Value, what, ": empty axis of ", ir::short_str(x.shape()), detail::at_loc(loc));
  Tensor sorted = sort(as_float(xv, loc), a, false, true, loc);
  std::vector<Tensor> rs;
  for (double q : qs)
    rs.push_back(
        finish_reduce(quantile_sorted(sorted, a, n, q, method, loc), x, axis, a, keepdims, loc));
  return stack_q ? stack(rs, 0, loc) : rs[0];
}

} // namespace

Tensor quantile(const Tensor& x, double q, std::optional<int64_t> axis, std::string_view method,
                bool keepdims, Loc loc) {
  return quantiles(x, {q}, false, axis, method, keepdims, "quantile", loc);
}
Tensor quantile(const Tensor& x, std::vector<double> q, std::optional<int64_t> axis,
                std::string_view method, bool keepdims, Loc loc) {
  if (q.empty()) fail(ErrorKind::Value, "quantile: no quantiles given", detail::at_loc(loc));
  return quantiles(x, q, true, axis, method, keepdims, "quantile", loc);
}
Tensor percentile(const Tensor& x, double q, std::optional<int64_t> axis, std::string_view method,
                  bool keepdims, Loc loc) {
  return quantiles(x, {q / 100.0}, false, axis, method, keepdims, "percentile", loc);
}

Tensor median(const Tensor& x, std::optional<int64_t> axis, bool keepdims, Loc loc) {
  auto [xv, a] = reduce_operand(x, axis, "median", loc);
  int64_t n = xv.size(a, loc);
  if (n == 0)
    fail(ErrorKind::Value, "median: empty axis of ", ir::short_str(x.shape()), detail::at_loc(loc));
  Tensor sorted = sort(as_float(xv, loc), a, false, true, loc);
  Tensor mid = (at_pos(sorted, a, (n - 1) / 2, loc) + at_pos(sorted, a, n / 2, loc)) * 0.5;
  return finish_reduce(nan_if_any(sorted, a, n, mid, loc), x, axis, a, keepdims, loc);
}

Tensor nanmedian(const Tensor& x, std::optional<int64_t> axis, bool keepdims, Loc loc) {
  auto [xv, a] = reduce_operand(x, axis, "nanmedian", loc);
  int64_t n = xv.size(a, loc);
  if (n == 0)
    fail(ErrorKind::Value, "nanmedian: empty axis of ", ir::short_str(x.shape()),
         detail::at_loc(loc));
  Tensor xf = as_float(xv, loc);
  Tensor sorted = sort(xf, a, false, true, loc); // NaNs last
  Tensor count = sum((xf == xf).cast(DType::F64, loc), {a}, true, loc);
  // The middle of the count numbers at the front; an all-NaN slice (count 0) reads index -1,
  // a NaN, as numpy's all-NaN result.
  Tensor lo = floor((count - 1) * 0.5).cast(DType::I64, loc);
  Tensor hi = floor(count * 0.5).cast(DType::I64, loc);
  Tensor mid = (take_along_axis(sorted, lo, a, loc) + take_along_axis(sorted, hi, a, loc)) * 0.5;
  return finish_reduce(mid, x, axis, a, keepdims, loc);
}

std::pair<Tensor, Tensor> histogram(const Tensor& x, int64_t bins,
                                    std::optional<std::pair<double, double>> range, Loc loc) {
  detail::check_defined(x, "histogram", loc);
  if (bins < 1)
    fail(ErrorKind::Value, "histogram: bins must be >= 1, got ", bins, detail::at_loc(loc));
  DType et = ir::is_float(x.dtype()) ? x.dtype() : DType::F64; // numpy's edge dtype
  Tensor flat = x.reshape({-1}, loc).cast(et, loc);
  Tensor edges;
  Tensor steps = arange(double(bins + 1), DType::I64, loc).cast(DType::F64, loc);
  if (range) {
    auto [lo, hi] = *range;
    if (!(lo <= hi) || !std::isfinite(lo) || !std::isfinite(hi))
      fail(ErrorKind::Value, "histogram: range (", lo, ", ", hi, ") must be finite with min <= max",
           detail::at_loc(loc));
    if (lo == hi) {
      lo -= 0.5;
      hi += 0.5;
    }
    Tensor e = steps * ((hi - lo) / double(bins)) + lo;
    edges = concat({narrow(e, 0, 0, bins, loc), full({1}, hi, DType::F64, loc)}, 0, loc);
  } else {
    if (flat.size(0, loc) == 0)
      fail(ErrorKind::Value, "histogram: the range of an empty tensor is unknown; give range",
           detail::at_loc(loc));
    Tensor lo = min(flat, {}, false, loc).cast(DType::F64, loc);
    Tensor hi = max(flat, {}, false, loc).cast(DType::F64, loc);
    Tensor same = lo == hi;
    lo = where(same, lo - 0.5, lo, loc);
    hi = where(same, hi + 0.5, hi, loc);
    Tensor e = steps * ((hi - lo) / double(bins)) + lo;
    edges = concat({narrow(e, 0, 0, bins, loc), hi.reshape({1}, loc)}, 0, loc);
  }
  edges = edges.cast(et, loc);
  // Bin i holds edges[i] <= v < edges[i + 1], the last one also v == its right edge; values
  // outside [edges[0], edges[bins]] (and NaN) are not counted.
  Tensor first = narrow(edges, 0, 0, 1, loc), end = narrow(edges, 0, bins, 1, loc);
  Tensor keep = (flat >= first) && (flat <= end);
  Tensor idx = searchsorted(edges, flat, "right", loc) - 1;
  idx = minimum(maximum(idx, 0, loc), bins - 1, loc);
  Tensor ones_kept = keep.cast(DType::I64, loc);
  Tensor counts = apply(
      {ones_kept, idx},
      [&](ir::Graph& g, std::span<const ir::NodeId> in) {
        return g.scatter_add(in[0], in[1], 0, bins, loc);
      },
      loc);
  return {counts, edges};
}

Tensor bincount(const Tensor& x, std::optional<Tensor> weights, int64_t minlength, Loc loc) {
  detail::check_defined(x, "bincount", loc);
  if (x.ndim() != 1 || !(ir::is_int(x.dtype()) || ir::is_bool(x.dtype())))
    fail(ErrorKind::Type, "bincount: x must be a 1-D integer tensor, got ",
         ir::short_str(x.shape()), detail::at_loc(loc));
  if (minlength < 0)
    fail(ErrorKind::Value, "bincount: minlength must be >= 0, got ", minlength,
         detail::at_loc(loc));
  if (weights && weights->sizes(loc) != x.sizes(loc))
    fail(ErrorKind::Shape, "bincount: weights ", ir::short_str(weights->shape()),
         " must have x's shape ", ir::short_str(x.shape()), detail::at_loc(loc));
  int64_t length = minlength;
  if (x.is_traced()) {
    if (minlength == 0)
      fail(ErrorKind::Trace, "bincount: inside rlx::jit the length cannot come from the values of ",
           ir::short_str(x.shape()), "; give minlength", detail::at_loc(loc));
  } else {
    for (int64_t v : x.to_vector<int64_t>(loc)) {
      if (v < 0)
        fail(ErrorKind::Value, "bincount: x must be non-negative, got ", v, detail::at_loc(loc));
      length = std::max(length, v + 1);
    }
  }
  Tensor idx = x.cast(DType::I64, loc);
  idx = where(idx < 0, length, idx, loc); // negative: out of range for scatter_add, not wrapped
  Tensor w = weights ? weights->cast(DType::F64, loc) : ones(x.sizes(loc), DType::I64, loc);
  return apply(
      {w, idx},
      [&](ir::Graph& g, std::span<const ir::NodeId> in) {
        return g.scatter_add(in[0], in[1], 0, length, loc);
      },
      loc);
}

} // namespace rlx
