// src/interp/sort.cpp -- the index family's ordering and accumulating kernels: scatter_add,
// top_k, argsort. Values are compared as double (floats) or int64 (integers and bool); NaN
// orders above every number, and equal keys keep their index order, so every result is
// deterministic and the JIT (which runs these kernels) gives the same bits.
#include "index_operand.hpp"
#include "kernels.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace rlx::interp::detail {

namespace {

/// The rows along the last axis of x: `rows` of `len` values.
struct Rows {
  int64_t rows = 1, len = 1;
};

Rows last_axis_rows(const Buffer& x) {
  const auto sizes = x.shape().sizes();
  Rows r;
  r.len = sizes.back();
  r.rows = r.len == 0 ? 0 : x.numel() / r.len;
  return r;
}

/// Strict "a orders before b" for keys of one row in ascending order, NaN last.
inline bool nan_last_less(double a, double b) {
  if (std::isnan(a)) return false;
  if (std::isnan(b)) return true;
  return a < b;
}

/// The first k positions of each row in the requested order, written as i64 to out (k per row).
/// Ties keep index order.
void order_rows(const Buffer& x, bool descending, int64_t k, Buffer& out) {
  Rows r = last_axis_rows(x);
  std::vector<int64_t> perm(std::size_t(r.len));
  bool ints = int_domain(x.dtype());
  std::vector<double> fkey(ints ? 0 : std::size_t(r.len));
  std::vector<int64_t> ikey(ints ? std::size_t(r.len) : 0);
  for (int64_t row = 0; row < r.rows; ++row) {
    for (int64_t j = 0; j < r.len; ++j) {
      if (ints)
        ikey[std::size_t(j)] = x.get_i64(row * r.len + j);
      else
        fkey[std::size_t(j)] = x.get_f64(row * r.len + j);
    }
    std::iota(perm.begin(), perm.end(), int64_t(0));
    auto before = [&](int64_t a, int64_t b) {
      if (ints)
        return descending ? ikey[std::size_t(b)] < ikey[std::size_t(a)]
                          : ikey[std::size_t(a)] < ikey[std::size_t(b)];
      return descending ? nan_last_less(fkey[std::size_t(b)], fkey[std::size_t(a)])
                        : nan_last_less(fkey[std::size_t(a)], fkey[std::size_t(b)]);
    };
    // Index order breaks ties, which makes the order stable (and libstdc++'s stable_sort is
    // deprecated-warning territory under clang 19); top_k only needs the first k.
    auto tie_broken = [&](int64_t a, int64_t b) {
      if (before(a, b)) return true;
      if (before(b, a)) return false;
      return a < b;
    };
    if (k < r.len)
      std::partial_sort(perm.begin(), perm.begin() + k, perm.end(), tie_broken);
    else
      std::sort(perm.begin(), perm.end(), tie_broken);
    for (int64_t j = 0; j < k; ++j) out.set_i64(row * k + j, perm[std::size_t(j)]);
  }
}

} // namespace

RLX_KERNEL(ArgSort) {
  const Buffer& x = *in[0];
  Buffer out(n.shape);
  order_rows(x, n.op.attrs<ir::ArgSortAttrs>().descending, x.shape().sizes().back(), out);
  return out;
}

RLX_KERNEL(TopK) {
  const Buffer& x = *in[0];
  const auto& a = n.op.attrs<ir::TopKAttrs>();
  int64_t len = x.shape().sizes().back();
  if (a.k > len) // a dynamic last axis is checked only now
    fail(ErrorKind::Value, n.op.name(), ": k = ", a.k, " is larger than the last axis of ",
         ir::short_str(x.shape()));
  Buffer out(n.shape);
  order_rows(x, a.largest, a.k, out);
  return out;
}

RLX_KERNEL(ScatterAdd) {
  const Buffer &upd = *in[0], &idx = *in[1];
  const auto& a = n.op.attrs<ir::ScatterAddAttrs>();
  int64_t axis = norm_axis(a.axis, upd.shape().rank());
  AxisSplit s = split_at(upd.shape(), axis); // s.len = the number of indices
  int64_t out_dim = a.out_dim;
  const std::vector<int64_t> pos = index_positions(idx, out_dim, [&](const auto& shown, bool) {
    fail(ErrorKind::Value, n.op.name(), ": index ", shown, " is out of range for axis ", axis,
         " of size ", out_dim, " (updates ", ir::short_str(upd.shape()), ", indices ",
         ir::short_str(idx.shape()), ")");
  });
  Buffer out(n.shape);
  int64_t total = s.outer * out_dim * s.inner;
  // Accumulate in the interpreter's domain (double or int64), in index order, and round once.
  if (int_domain(upd.dtype())) {
    std::vector<int64_t> acc(std::size_t(total), 0);
    for (int64_t o = 0; o < s.outer; ++o)
      for (int64_t j = 0; j < s.len; ++j)
        for (int64_t i = 0; i < s.inner; ++i)
          acc[std::size_t((o * out_dim + pos[std::size_t(j)]) * s.inner + i)] +=
              upd.get_i64((o * s.len + j) * s.inner + i);
    for (int64_t e = 0; e < total; ++e) out.set_i64(e, acc[std::size_t(e)]);
  } else {
    std::vector<double> acc(std::size_t(total), 0.0);
    for (int64_t o = 0; o < s.outer; ++o)
      for (int64_t j = 0; j < s.len; ++j)
        for (int64_t i = 0; i < s.inner; ++i)
          acc[std::size_t((o * out_dim + pos[std::size_t(j)]) * s.inner + i)] +=
              upd.get_f64((o * s.len + j) * s.inner + i);
    for (int64_t e = 0; e < total; ++e) out.set_f64(e, acc[std::size_t(e)]);
  }
  return out;
}

} // namespace rlx::interp::detail
