// src/frontend/creation.cpp -- zeros, ones, full, arange, linspace, eye, rand, randn.
#include "frontend/impl.hpp"
#include "frontend/ops.hpp"
#include "rlx/memory.hpp"
#include "rlx/random.hpp"

#include <cmath>

namespace rlx {

namespace detail {
void check_sizes(const Dims& sizes, DType dtype, std::string_view what, const Loc& loc) {
  for (int64_t s : sizes)
    if (s < 0) {
      std::string text;
      for (int64_t d : sizes) text += (text.empty() ? "" : ",") + std::to_string(d);
      fail(ErrorKind::Shape, what, ": negative size in ", ir::dtype_name(dtype), "[", text, "]",
           detail::at_loc(loc));
    }
  try {
    (void)Shape::of(sizes, dtype); // a size over 2^48, or more than 2^48 bytes
  } catch (const Error& e) {
    throw Error(e.kind(), detail::cat(what, ": ", e.what(), detail::at_loc(loc)));
  }
}
} // namespace detail

namespace {

/// The length of a 1-d result computed on the host (arange, linspace): at most 2^48 elements
/// and within the memory limit for its doubles, checked before anything is allocated.
void check_length(double n, std::string_view what, const Loc& loc) {
  if (!(n <= double(ir::kMaxDimSize)))
    fail(ErrorKind::Limit, what, ": ", n, " elements is more than 2^48", detail::at_loc(loc));
  try {
    rlx::detail::check_memory_budget(uint64_t(n) * sizeof(double), what);
  } catch (const Error& e) {
    throw Error(e.kind(), e.what() + detail::at_loc(loc));
  }
}

/// Errors for rand/randn requests under their own names.
void check_float_request(const Dims& sizes, DType dtype, std::string_view what, const Loc& loc) {
  detail::check_sizes(sizes, dtype, what, loc);
  if (!ir::is_float(dtype))
    fail(ErrorKind::Type, what, ": needs a float dtype, got ", ir::dtype_name(dtype),
         detail::at_loc(loc));
}

Tensor computed(Buffer b, const Loc& loc) {
  return Tensor(detail::make_computed(std::move(b), loc));
}

} // namespace

Tensor full(Dims sizes, double value, DType dtype, Loc loc) {
  detail::check_sizes(sizes, dtype, "full", loc);
  // A lazy broadcast of one constant: nothing is allocated until it is used.
  return apply(
      std::span<const Tensor>(),
      [&](ir::Graph& g, std::span<const ir::NodeId>) {
        ir::NodeId c = detail::scalar_node(g, Number(value), dtype, "full", loc);
        if (sizes.empty()) return c;
        ir::NodeId one = g.reshape_(c, std::vector<int64_t>(sizes.size(), 1), loc);
        return g.expand(one, sizes, loc);
      },
      loc);
}
Tensor zeros(Dims sizes, DType dtype, Loc loc) { return full(std::move(sizes), 0.0, dtype, loc); }
Tensor ones(Dims sizes, DType dtype, Loc loc) { return full(std::move(sizes), 1.0, dtype, loc); }
Tensor zeros_like(const Tensor& t, Loc loc) { return zeros(t.sizes(loc), t.dtype(), loc); }
Tensor ones_like(const Tensor& t, Loc loc) { return ones(t.sizes(loc), t.dtype(), loc); }
Tensor full_like(const Tensor& t, double value, Loc loc) {
  return full(t.sizes(loc), value, t.dtype(), loc);
}

Tensor arange(double stop, DType dtype, Loc loc) { return arange(0.0, stop, 1.0, dtype, loc); }

Tensor arange(double start, double stop, double step, DType dtype, Loc loc) {
  if (step == 0 || !std::isfinite(step) || !std::isfinite(start) || !std::isfinite(stop))
    fail(ErrorKind::Value, "arange: needs finite start, stop and a nonzero step, got (", start,
         ", ", stop, ", ", step, ")", detail::at_loc(loc));
  double count = std::ceil((stop - start) / step);
  check_length(count, "arange", loc);
  int64_t n = count > 0 ? int64_t(count) : 0;
  std::vector<double> v(static_cast<std::size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[std::size_t(i)] = start + double(i) * step;
  return computed(Buffer::from_f64(Shape::of(std::vector<int64_t>{n}, dtype), v), loc);
}

Tensor linspace(double start, double stop, int64_t num, DType dtype, Loc loc) {
  if (num < 0)
    fail(ErrorKind::Value, "linspace: num must be non-negative, got ", num, detail::at_loc(loc));
  check_length(double(num), "linspace", loc);
  std::vector<double> v(static_cast<std::size_t>(num));
  double step = num > 1 ? (stop - start) / double(num - 1) : 0.0;
  for (int64_t i = 0; i < num; ++i) v[std::size_t(i)] = start + double(i) * step;
  if (num > 1) v.back() = stop; // numpy makes the end point exact
  return computed(Buffer::from_f64(Shape::of(std::vector<int64_t>{num}, dtype), v), loc);
}

Tensor eye(int64_t n, std::optional<int64_t> m, int64_t k, DType dtype, Loc loc) {
  int64_t cols = m.value_or(n);
  detail::check_sizes({n, cols}, dtype, "eye", loc);
  Buffer b(Shape::of(std::vector<int64_t>{n, cols}, dtype));
  for (int64_t i = 0; i < n; ++i)
    if (i + k >= 0 && i + k < cols) b.set_f64(i * cols + i + k, 1.0);
  return computed(std::move(b), loc);
}

// rand and randn are rlx::random's uniform and normal with the seed as the key.
Tensor rand(Dims sizes, uint64_t seed, DType dtype, Loc loc) {
  check_float_request(sizes, dtype, "rand", loc);
  return random::uniform(seed, std::move(sizes), 0.0, 1.0, dtype, loc);
}

Tensor randn(Dims sizes, uint64_t seed, DType dtype, Loc loc) {
  check_float_request(sizes, dtype, "randn", loc);
  return random::normal(seed, std::move(sizes), 0.0, 1.0, dtype, loc);
}

} // namespace rlx
