// src/frontend/numpy_cumulative.cpp -- numpy's and PyTorch's cumulative ops: cumsum's reverse
// option (flips around the Scan family's cumsum), and cumprod, cummax, cummin, logcumsumexp (with
// numpy/TF's exclusive and reverse options) and torch's cummax/cummin with indices as doubling
// scans of element-wise ops (log2(n) steps of narrow, combine and concat), so their gradients
// come from those ops.
#include "frontend/impl.hpp"
#include "frontend/ops.hpp"

#include <cmath>
#include <limits>
#include <string_view>
#include <utility>

namespace rlx {

namespace {

using detail::check_defined;
using detail::norm_axis;

/// f applied with `axis` (normalized) moved to the end, then moved back.
template <class F> Tensor along_last(const Tensor& x, int64_t axis, const Loc& loc, F f) {
  const int64_t last = x.ndim() - 1;
  if (axis == last) return f(x);
  return moveaxis(f(moveaxis(x, Dims{axis}, Dims{last}, loc)), Dims{last}, Dims{axis}, loc);
}

using Combine = Tensor (*)(const Tensor& earlier, const Tensor& later, const Loc& loc);

/// Inclusive scan of the last axis by doubling (Hillis-Steele): after the step with stride s,
/// element i combines elements (i - 2s, i]. The first s elements are already final, so each
/// step combines only the rest: no identity value is padded in (none could be right for every
/// op, e.g. -inf breaks logaddexp's gradient).
Tensor scan_last(const Tensor& x, Combine op, const Loc& loc) {
  const int64_t n = x.size(-1, loc);
  Tensor y = x;
  for (int64_t s = 1; s < n; s *= 2) {
    Tensor head = narrow(y, -1, 0, s, loc);
    Tensor tail = op(narrow(y, -1, 0, n - s, loc), narrow(y, -1, s, n - s, loc), loc);
    y = concat({head, tail}, -1, loc);
  }
  return y;
}

Tensor combine_mul(const Tensor& a, const Tensor& b, const Loc& loc) { return mul(a, b, loc); }
Tensor combine_max(const Tensor& a, const Tensor& b, const Loc& loc) { return maximum(a, b, loc); }
Tensor combine_min(const Tensor& a, const Tensor& b, const Loc& loc) { return minimum(a, b, loc); }
/// log(exp(a) + exp(b)) = max + log1p(exp(min - max)); infinite maxima skip the difference
/// (inf - inf is NaN) so neither the value nor the gradient sees a NaN.
Tensor combine_logaddexp(const Tensor& a, const Tensor& b, const Loc& loc) {
  Tensor hi = maximum(a, b, loc), lo = minimum(a, b, loc);
  Tensor inf = eq(abs(hi, loc), std::numeric_limits<double>::infinity(), loc);
  Tensor d = where(inf, 0.0, sub(lo, hi, loc), loc);
  return where(inf, hi, add(hi, log1p(exp(d, loc), loc), loc), loc);
}

/// The identity of max (lowest = true) or min over dtype t.
double extreme(DType t, bool lowest) {
  const double inf = std::numeric_limits<double>::infinity();
  if (ir::is_float(t)) return lowest ? -inf : inf;
  if (ir::is_bool(t)) return lowest ? 0.0 : 1.0;
  const int bits = int(ir::size_bytes(t)) * 8;
  if (ir::is_signed(t)) return lowest ? -std::ldexp(1.0, bits - 1) : std::ldexp(1.0, bits - 1) - 1;
  return lowest ? 0.0 : std::ldexp(1.0, bits) - 1;
}

/// A scan along axis with numpy/TF's exclusive and reverse options.
Tensor cumulative(const Tensor& x, int64_t axis, bool exclusive, bool reverse, Combine op,
                  double identity, std::string_view what, const Loc& loc) {
  check_defined(x, what, loc);
  const int64_t a = norm_axis(axis, x.ndim(), what, x.shape(), loc);
  return along_last(x, a, loc, [&](const Tensor& t) {
    Tensor v = reverse ? flip(t, {-1}, loc) : t;
    Tensor y = scan_last(v, op, loc);
    if (exclusive) {
      const int64_t n = y.size(-1, loc);
      if (n > 0) {
        Dims pads(std::size_t(2 * y.ndim()), 0);
        pads[pads.size() - 2] = 1;
        y = pad(narrow(y, -1, 0, n - 1, loc), pads, ir::PadMode::Constant, identity, loc);
      }
    }
    return reverse ? flip(y, {-1}, loc) : y;
  });
}

/// torch.cummax / cummin with indices: a doubling scan of (value, index) pairs where the later
/// element wins when it is NaN or not worse (ties go to the later index) unless the earlier is
/// NaN: an associative choice, so the doubling gives torch's sequential answer.
std::pair<Tensor, Tensor> cum_extreme_with_indices(const Tensor& x, int64_t axis, bool is_max,
                                                   std::string_view what, const Loc& loc) {
  check_defined(x, what, loc);
  const int64_t a = norm_axis(axis, x.ndim(), what, x.shape(), loc);
  Tensor xt = moveaxis(x, Dims{a}, Dims{-1}, loc);
  const int64_t n = xt.size(-1, loc);
  Tensor v = xt;
  Tensor idx = arange(double(n), DType::I64, loc).expand(xt.sizes(loc), loc);
  for (int64_t s = 1; s < n; s *= 2) {
    Tensor va = narrow(v, -1, 0, n - s, loc), vb = narrow(v, -1, s, n - s, loc);
    Tensor ia = narrow(idx, -1, 0, n - s, loc), ib = narrow(idx, -1, s, n - s, loc);
    Tensor better = is_max ? ge(vb, va, loc) : le(vb, va, loc);
    Tensor later = logical_or(ne(vb, vb, loc), logical_and(eq(va, va, loc), better, loc), loc);
    v = concat({narrow(v, -1, 0, s, loc), where(later, vb, va, loc)}, -1, loc);
    idx = concat({narrow(idx, -1, 0, s, loc), where(later, ib, ia, loc)}, -1, loc);
  }
  return {moveaxis(v, Dims{-1}, Dims{a}, loc), moveaxis(idx, Dims{-1}, Dims{a}, loc)};
}

} // namespace

Tensor cumsum(const Tensor& x, int64_t axis, bool exclusive, bool reverse, Loc loc) {
  check_defined(x, "cumsum", loc);
  if (!reverse) return cumsum(x, axis, exclusive, loc);
  const int64_t a = norm_axis(axis, x.ndim(), "cumsum", x.shape(), loc);
  return flip(cumsum(flip(x, {a}, loc), a, exclusive, loc), {a}, loc);
}
Tensor cumprod(const Tensor& x, int64_t axis, bool exclusive, bool reverse, Loc loc) {
  check_defined(x, "cumprod", loc);
  // integers and bools accumulate in i64, as prod and cumsum (and numpy, torch)
  const DType t = x.dtype();
  Tensor v = ir::is_int(t) || ir::is_bool(t) ? x.astype(DType::I64, loc) : x;
  return cumulative(v, axis, exclusive, reverse, combine_mul, 1.0, "cumprod", loc);
}
Tensor cummax(const Tensor& x, int64_t axis, bool exclusive, bool reverse, Loc loc) {
  check_defined(x, "cummax", loc);
  return cumulative(x, axis, exclusive, reverse, combine_max, extreme(x.dtype(), true), "cummax",
                    loc);
}
Tensor cummin(const Tensor& x, int64_t axis, bool exclusive, bool reverse, Loc loc) {
  check_defined(x, "cummin", loc);
  return cumulative(x, axis, exclusive, reverse, combine_min, extreme(x.dtype(), false), "cummin",
                    loc);
}
Tensor logcumsumexp(const Tensor& x, int64_t axis, bool exclusive, bool reverse, Loc loc) {
  check_defined(x, "logcumsumexp", loc);
  Tensor xf = x.astype(detail::float_dtype(x.dtype()), loc);
  return cumulative(xf, axis, exclusive, reverse, combine_logaddexp,
                    -std::numeric_limits<double>::infinity(), "logcumsumexp", loc);
}
std::pair<Tensor, Tensor> cummax_with_indices(const Tensor& x, int64_t axis, Loc loc) {
  return cum_extreme_with_indices(x, axis, true, "cummax_with_indices", loc);
}
std::pair<Tensor, Tensor> cummin_with_indices(const Tensor& x, int64_t axis, Loc loc) {
  return cum_extreme_with_indices(x, axis, false, "cummin_with_indices", loc);
}

} // namespace rlx
