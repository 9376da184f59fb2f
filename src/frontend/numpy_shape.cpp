// src/frontend/numpy_shape.cpp -- numpy's and PyTorch's shape and movement functions (roll, tile,
// repeat, tril, diagonal, meshgrid, einsum, kron, ...), cumulative ops and advanced indexing, all
// composed from existing Tensor ops: no new IR op kinds, so every kernel, JIT lowering and VJP
// rule they need already exists. Index arithmetic the host knows (diagonals, repeat lists,
// triangle masks) becomes small constant tensors; values the host does not know stay in the graph.
// Past 1,000 lines because its functions share the index helpers at the top; einsum (its
// largest part) is the piece to move to a file of its own when either grows.
#include "frontend/impl.hpp"
#include "frontend/ops.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>
#include <utility>

namespace rlx {

namespace {

using detail::at_loc;
using detail::check_defined;
using detail::norm_axis;

int64_t product(const Dims& d, std::size_t from = 0, std::size_t to = SIZE_MAX) {
  int64_t p = 1;
  for (std::size_t i = from; i < std::min(to, d.size()); ++i) p *= d[i];
  return p;
}

Tensor i64_tensor(const std::vector<int64_t>& v, Dims sizes, const Loc& loc) {
  return Tensor::from_vector(v, std::move(sizes), loc);
}

/// "[1,2]" for error messages.
std::string dims_str(const Dims& d) {
  std::string s = "[";
  for (std::size_t i = 0; i < d.size(); ++i) s += (i ? "," : "") + std::to_string(d[i]);
  return s + "]";
}

void need_rank(const Tensor& x, int64_t rank, std::string_view what, const Loc& loc) {
  check_defined(x, what, loc);
  if (x.ndim() < rank)
    fail(ErrorKind::Shape, what, ": needs rank >= ", rank, ", got ", ir::short_str(x.shape()),
         at_loc(loc));
}

/// Roll one (normalized) axis by `shift`: two narrows joined the other way round.
Tensor roll_axis(const Tensor& x, int64_t axis, int64_t shift, const Loc& loc) {
  int64_t len = x.size(axis, loc);
  if (len == 0) return x;
  shift = ((shift % len) + len) % len;
  if (shift == 0) return x;
  return concat({narrow(x, axis, len - shift, shift, loc), narrow(x, axis, 0, len - shift, loc)},
                axis, loc);
}

/// f applied with `axis` (normalized) moved to the end, then moved back.
template <class F> Tensor along_last(const Tensor& x, int64_t axis, const Loc& loc, F f) {
  const int64_t last = x.ndim() - 1;
  if (axis == last) return f(x);
  return moveaxis(f(moveaxis(x, Dims{axis}, Dims{last}, loc)), Dims{last}, Dims{axis}, loc);
}

} // namespace

// ---- Axes

Tensor Tensor::T(Loc loc) const { return rlx::transpose(*this, loc); }
Tensor Tensor::mT(Loc loc) const {
  need_rank(*this, 2, "mT", loc);
  return rlx::transpose(*this, -2, -1, loc);
}

Tensor swapaxes(const Tensor& x, int64_t axis0, int64_t axis1, Loc loc) {
  check_defined(x, "swapaxes", loc);
  norm_axis(axis0, x.ndim(), "swapaxes", x.shape(), loc);
  norm_axis(axis1, x.ndim(), "swapaxes", x.shape(), loc);
  return transpose(x, axis0, axis1, loc);
}

Tensor moveaxis(const Tensor& x, Dims source, Dims destination, Loc loc) {
  check_defined(x, "moveaxis", loc);
  const int64_t r = x.ndim();
  if (source.size() != destination.size())
    fail(ErrorKind::Value, "moveaxis: ", source.size(), " source axes but ", destination.size(),
         " destinations, for ", ir::short_str(x.shape()), at_loc(loc));
  for (int64_t& a : source) a = norm_axis(a, r, "moveaxis", x.shape(), loc);
  for (int64_t& a : destination) a = norm_axis(a, r, "moveaxis", x.shape(), loc);
  for (const Dims* list : {&source, &destination}) {
    Dims sorted = *list;
    std::sort(sorted.begin(), sorted.end());
    if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end())
      fail(ErrorKind::Value, "moveaxis: repeated axis in ", dims_str(*list), " for ",
           ir::short_str(x.shape()), at_loc(loc));
  }
  // numpy's order: the unmoved axes in order, then each source inserted at its destination in
  // increasing destination order.
  Dims order;
  for (int64_t a = 0; a < r; ++a)
    if (std::find(source.begin(), source.end(), a) == source.end()) order.push_back(a);
  std::vector<std::pair<int64_t, int64_t>> moves;
  for (std::size_t i = 0; i < source.size(); ++i) moves.emplace_back(destination[i], source[i]);
  std::sort(moves.begin(), moves.end());
  for (auto [dst, src] : moves) order.insert(order.begin() + dst, src);
  return permute(x, order, loc);
}

Tensor roll(const Tensor& x, Dims shifts, Dims axes, Loc loc) {
  check_defined(x, "roll", loc);
  if (axes.empty()) {
    if (shifts.size() != 1)
      fail(ErrorKind::Value, "roll: ", shifts.size(), " shifts without axes for ",
           ir::short_str(x.shape()), " (the flattened roll takes one)", at_loc(loc));
    return roll_axis(flatten(x, 0, -1, loc), 0, shifts[0], loc).reshape(x.sizes(loc), loc);
  }
  if (shifts.size() == 1 && axes.size() > 1) shifts.assign(axes.size(), shifts[0]);
  if (shifts.size() != axes.size())
    fail(ErrorKind::Value, "roll: ", shifts.size(), " shifts for ", axes.size(), " axes of ",
         ir::short_str(x.shape()), at_loc(loc));
  Tensor out = x;
  for (std::size_t i = 0; i < axes.size(); ++i)
    out = roll_axis(out, norm_axis(axes[i], x.ndim(), "roll", x.shape(), loc), shifts[i], loc);
  return out;
}

Tensor tile(const Tensor& x, Dims reps, Loc loc) {
  check_defined(x, "tile", loc);
  for (int64_t r : reps)
    if (r < 0)
      fail(ErrorKind::Value, "tile: negative repetition in ", dims_str(reps), " for ",
           ir::short_str(x.shape()), at_loc(loc));
  Dims sizes = x.sizes(loc);
  while (sizes.size() < reps.size()) sizes.insert(sizes.begin(), 1);
  while (reps.size() < sizes.size()) reps.insert(reps.begin(), 1);
  // [1, n0, 1, n1, ...] broadcast to [r0, n0, r1, n1, ...] and merged pairwise.
  Dims split, big, out;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    split.insert(split.end(), {1, sizes[i]});
    big.insert(big.end(), {reps[i], sizes[i]});
    out.push_back(reps[i] * sizes[i]);
  }
  return x.reshape(split, loc).expand(big, loc).reshape(out, loc);
}

Tensor repeat(const Tensor& x, Dims repeats, std::optional<int64_t> axis, Loc loc) {
  check_defined(x, "repeat", loc);
  if (!axis) return repeat(flatten(x, 0, -1, loc), std::move(repeats), 0, loc);
  const int64_t a = norm_axis(*axis, x.ndim(), "repeat", x.shape(), loc);
  const int64_t n = x.size(a, loc);
  for (int64_t r : repeats)
    if (r < 0)
      fail(ErrorKind::Value, "repeat: negative count in ", dims_str(repeats), " for ",
           ir::short_str(x.shape()), at_loc(loc));
  if (repeats.size() == 1) { // one count: a new axis broadcast after `a`, then merged into it
    Dims sizes = x.sizes(loc);
    Dims big = sizes;
    big.insert(big.begin() + a + 1, repeats[0]);
    Dims out = sizes;
    out[std::size_t(a)] *= repeats[0];
    return unsqueeze(x, a + 1, loc).expand(big, loc).reshape(out, loc);
  }
  if (int64_t(repeats.size()) != n)
    fail(ErrorKind::Shape, "repeat: ", repeats.size(), " counts for axis ", *axis, " of ",
         ir::short_str(x.shape()), " (of length ", n, ")", at_loc(loc));
  std::vector<int64_t> idx;
  for (int64_t i = 0; i < n; ++i) idx.insert(idx.end(), std::size_t(repeats[std::size_t(i)]), i);
  const int64_t count = int64_t(idx.size());
  return take(x, i64_tensor(idx, {count}, loc), a, loc);
}
Tensor repeat_interleave(const Tensor& x, Dims repeats, std::optional<int64_t> axis, Loc loc) {
  return repeat(x, std::move(repeats), axis, loc);
}

// ---- Triangles and diagonals

namespace {
Tensor triangle(const Tensor& x, int64_t k, bool lower, std::string_view what, const Loc& loc) {
  need_rank(x, 2, what, loc);
  const int64_t rows = x.size(-2, loc), cols = x.size(-1, loc);
  std::vector<bool> keep(std::size_t(rows * cols));
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j)
      keep[std::size_t(i * cols + j)] = lower ? j - i <= k : j - i >= k;
  Tensor mask = Tensor::from_vector(keep, {rows, cols}, loc);
  return where(mask, x, zeros_like(x, loc), loc);
}
} // namespace

Tensor tril(const Tensor& x, int64_t k, Loc loc) { return triangle(x, k, true, "tril", loc); }
Tensor triu(const Tensor& x, int64_t k, Loc loc) { return triangle(x, k, false, "triu", loc); }

Tensor diagonal(const Tensor& x, int64_t offset, int64_t axis1, int64_t axis2, Loc loc) {
  need_rank(x, 2, "diagonal", loc);
  const int64_t a = norm_axis(axis1, x.ndim(), "diagonal", x.shape(), loc);
  const int64_t b = norm_axis(axis2, x.ndim(), "diagonal", x.shape(), loc);
  if (a == b)
    fail(ErrorKind::Value, "diagonal: axis1 and axis2 are both axis ", a, " of ",
         ir::short_str(x.shape()), at_loc(loc));
  const int64_t n = x.size(a, loc), m = x.size(b, loc);
  const int64_t row0 = offset < 0 ? -offset : 0, col0 = offset > 0 ? offset : 0;
  const int64_t len = std::max<int64_t>(0, std::min(n - row0, m - col0));
  // The pair moved last and merged: element (row0 + i, col0 + i) is at (row0 + i) * m + col0 + i.
  Tensor t = moveaxis(x, Dims{a, b}, Dims{-2, -1}, loc);
  Dims sizes = t.sizes(loc);
  sizes.pop_back();
  sizes.back() = n * m;
  std::vector<int64_t> idx;
  for (int64_t i = 0; i < len; ++i) idx.push_back((row0 + i) * m + col0 + i);
  return take(t.reshape(sizes, loc), i64_tensor(idx, {len}, loc), -1, loc);
}

Tensor diag(const Tensor& x, int64_t k, Loc loc) {
  check_defined(x, "diag", loc);
  if (x.ndim() == 2) return diagonal(x, k, 0, 1, loc);
  if (x.ndim() != 1)
    fail(ErrorKind::Shape, "diag: needs a 1-D or 2-D tensor, got ", ir::short_str(x.shape()),
         at_loc(loc));
  // Each output element takes v[i] (at i + 1 of v with a zero in front) or that zero.
  const int64_t n = x.size(0, loc), m = n + (k < 0 ? -k : k);
  const int64_t row0 = k < 0 ? -k : 0, col0 = k > 0 ? k : 0;
  std::vector<int64_t> idx(std::size_t(m * m), 0);
  for (int64_t i = 0; i < n; ++i) idx[std::size_t((row0 + i) * m + col0 + i)] = i + 1;
  Tensor padded = pad(x, {1, 0}, ir::PadMode::Constant, 0.0, loc);
  return take(padded, i64_tensor(idx, {m * m}, loc), 0, loc).reshape({m, m}, loc);
}

Tensor trace(const Tensor& x, int64_t offset, int64_t axis1, int64_t axis2, Loc loc) {
  return sum(diagonal(x, offset, axis1, axis2, loc), Dims{-1}, false, loc);
}

// ---- Grids and splits

std::vector<Tensor> meshgrid(std::span<const Tensor> xs, Indexing indexing, Loc loc) {
  Dims sizes;
  for (const Tensor& x : xs) {
    check_defined(x, "meshgrid", loc);
    sizes.push_back(x.numel(loc));
  }
  const bool xy = indexing == Indexing::Xy && xs.size() >= 2;
  if (xy) std::swap(sizes[0], sizes[1]);
  std::vector<Tensor> out;
  for (std::size_t i = 0; i < xs.size(); ++i) {
    std::size_t at = xy && i < 2 ? 1 - i : i;
    Dims shape(xs.size(), 1);
    shape[at] = sizes[at];
    out.push_back(xs[i].reshape(shape, loc).expand(sizes, loc));
  }
  return out;
}
std::vector<Tensor> meshgrid(std::initializer_list<Tensor> xs, Indexing indexing, Loc loc) {
  return meshgrid(std::span<const Tensor>(xs.begin(), xs.size()), indexing, loc);
}

std::vector<Tensor> chunk(const Tensor& x, int64_t chunks, int64_t axis, Loc loc) {
  check_defined(x, "chunk", loc);
  if (chunks < 1)
    fail(ErrorKind::Value, "chunk: needs at least one chunk, got ", chunks, " for ",
         ir::short_str(x.shape()), at_loc(loc));
  const int64_t a = norm_axis(axis, x.ndim(), "chunk", x.shape(), loc);
  const int64_t len = x.size(a, loc);
  const int64_t step = std::max<int64_t>(1, (len + chunks - 1) / chunks);
  std::vector<Tensor> out;
  for (int64_t s = 0; s < len; s += step)
    out.push_back(narrow(x, a, s, std::min(step, len - s), loc));
  if (len == 0) out.assign(std::size_t(chunks), x); // torch gives `chunks` empty pieces
  return out;
}

std::vector<Tensor> unbind(const Tensor& x, int64_t axis, Loc loc) {
  check_defined(x, "unbind", loc);
  const int64_t a = norm_axis(axis, x.ndim(), "unbind", x.shape(), loc);
  std::vector<Tensor> out;
  for (int64_t i = 0; i < x.size(a, loc); ++i)
    out.push_back(squeeze(narrow(x, a, i, 1, loc), a, loc));
  return out;
}

std::vector<Tensor> array_split(const Tensor& x, int64_t sections, int64_t axis, Loc loc) {
  check_defined(x, "array_split", loc);
  if (sections < 1)
    fail(ErrorKind::Value, "array_split: needs at least one section, got ", sections, " for ",
         ir::short_str(x.shape()), at_loc(loc));
  const int64_t a = norm_axis(axis, x.ndim(), "array_split", x.shape(), loc);
  const int64_t len = x.size(a, loc);
  std::vector<Tensor> out;
  for (int64_t i = 0, start = 0; i < sections; ++i) {
    int64_t n = len / sections + (i < len % sections ? 1 : 0);
    out.push_back(narrow(x, a, start, n, loc));
    start += n;
  }
  return out;
}

std::vector<Tensor> detail::split_sections(const Tensor& x, int64_t sections, int64_t axis,
                                           Loc loc) {
  check_defined(x, "split", loc);
  const int64_t a = norm_axis(axis, x.ndim(), "split", x.shape(), loc);
  if (sections < 1 || x.size(a, loc) % sections != 0)
    fail(ErrorKind::Shape, "split: axis ", axis, " of ", ir::short_str(x.shape()),
         " does not split into ", sections, " equal sections (array_split allows unequal ones)",
         at_loc(loc));
  return array_split(x, sections, a, loc);
}

// ---- Products

Tensor one_hot(const Tensor& indices, int64_t num_classes, std::optional<DType> dtype, Loc loc) {
  check_defined(indices, "one_hot", loc);
  if (!ir::is_int(indices.dtype()))
    fail(ErrorKind::Type, "one_hot: needs integer indices, got ", ir::short_str(indices.shape()),
         at_loc(loc));
  if (num_classes < 0)
    fail(ErrorKind::Value, "one_hot: negative num_classes ", num_classes, " for ",
         ir::short_str(indices.shape()), at_loc(loc));
  Tensor classes = arange(double(num_classes), DType::I64, loc);
  return eq(unsqueeze(indices.astype(DType::I64, loc), -1, loc), classes, loc)
      .astype(dtype.value_or(DType::I64), loc);
}

Tensor outer(const Tensor& a, const Tensor& b, Loc loc) {
  check_defined(a, "outer", loc);
  check_defined(b, "outer", loc);
  return mul(flatten(a, 0, -1, loc).reshape({-1, 1}, loc), flatten(b, 0, -1, loc), loc);
}

Tensor tensordot(const Tensor& a, const Tensor& b, Dims axes_a, Dims axes_b, Loc loc) {
  check_defined(a, "tensordot", loc);
  check_defined(b, "tensordot", loc);
  if (axes_a.size() != axes_b.size())
    fail(ErrorKind::Value, "tensordot: ", axes_a.size(), " axes of ", ir::short_str(a.shape()),
         " against ", axes_b.size(), " of ", ir::short_str(b.shape()), at_loc(loc));
  const Dims sa = a.sizes(loc), sb = b.sizes(loc);
  for (std::size_t i = 0; i < axes_a.size(); ++i) {
    axes_a[i] = norm_axis(axes_a[i], a.ndim(), "tensordot", a.shape(), loc);
    axes_b[i] = norm_axis(axes_b[i], b.ndim(), "tensordot", b.shape(), loc);
    if (sa[std::size_t(axes_a[i])] != sb[std::size_t(axes_b[i])])
      fail(ErrorKind::Shape, "tensordot: axis ", axes_a[i], " of ", ir::short_str(a.shape()),
           " and axis ", axes_b[i], " of ", ir::short_str(b.shape()), " differ in length",
           at_loc(loc));
  }
  // a as [free, contracted] and b as [contracted, free]: one matmul.
  Dims perm_a, perm_b, out;
  int64_t free_a = 1, free_b = 1, k = 1;
  for (int64_t i = 0; i < a.ndim(); ++i)
    if (std::find(axes_a.begin(), axes_a.end(), i) == axes_a.end()) {
      perm_a.push_back(i);
      out.push_back(sa[std::size_t(i)]);
      free_a *= sa[std::size_t(i)];
    }
  for (int64_t i : axes_a) {
    perm_a.push_back(i);
    k *= sa[std::size_t(i)];
  }
  perm_b = axes_b;
  for (int64_t i = 0; i < b.ndim(); ++i)
    if (std::find(axes_b.begin(), axes_b.end(), i) == axes_b.end()) {
      perm_b.push_back(i);
      out.push_back(sb[std::size_t(i)]);
      free_b *= sb[std::size_t(i)];
    }
  Tensor ma = permute(a, perm_a, loc).reshape({free_a, k}, loc);
  Tensor mb = permute(b, perm_b, loc).reshape({k, free_b}, loc);
  return matmul(ma, mb, loc).reshape(out, loc);
}

Tensor tensordot(const Tensor& a, const Tensor& b, int64_t axes, Loc loc) {
  check_defined(a, "tensordot", loc);
  check_defined(b, "tensordot", loc);
  if (axes < 0 || axes > a.ndim() || axes > b.ndim())
    fail(ErrorKind::Value, "tensordot: cannot contract ", axes, " axes of ",
         ir::short_str(a.shape()), " with ", ir::short_str(b.shape()), at_loc(loc));
  Dims aa, bb;
  for (int64_t i = 0; i < axes; ++i) {
    aa.push_back(a.ndim() - axes + i);
    bb.push_back(i);
  }
  return tensordot(a, b, aa, bb, loc);
}

Tensor kron(const Tensor& a, const Tensor& b, Loc loc) {
  check_defined(a, "kron", loc);
  check_defined(b, "kron", loc);
  Dims sa = a.sizes(loc), sb = b.sizes(loc);
  while (sa.size() < sb.size()) sa.insert(sa.begin(), 1);
  while (sb.size() < sa.size()) sb.insert(sb.begin(), 1);
  // a as [a0, 1, a1, 1, ...] times b as [1, b0, 1, b1, ...], pairs merged.
  Dims ia, ib, out;
  for (std::size_t i = 0; i < sa.size(); ++i) {
    ia.insert(ia.end(), {sa[i], 1});
    ib.insert(ib.end(), {1, sb[i]});
    out.push_back(sa[i] * sb[i]);
  }
  return mul(a.reshape(ia, loc), b.reshape(ib, loc), loc).reshape(out, loc);
}

// ---- Rank adjustments and flips

Tensor atleast_1d(const Tensor& x, Loc loc) {
  check_defined(x, "atleast_1d", loc);
  return x.ndim() == 0 ? x.reshape({1}, loc) : x;
}
Tensor atleast_2d(const Tensor& x, Loc loc) {
  check_defined(x, "atleast_2d", loc);
  if (x.ndim() == 0) return x.reshape({1, 1}, loc);
  if (x.ndim() == 1) return unsqueeze(x, 0, loc);
  return x;
}
Tensor atleast_3d(const Tensor& x, Loc loc) {
  check_defined(x, "atleast_3d", loc);
  if (x.ndim() == 0) return x.reshape({1, 1, 1}, loc);
  if (x.ndim() == 1) return x.reshape({1, x.size(0, loc), 1}, loc);
  if (x.ndim() == 2) return unsqueeze(x, -1, loc);
  return x;
}

Tensor expand_dims(const Tensor& x, Dims axes, Loc loc) {
  check_defined(x, "expand_dims", loc);
  const int64_t r = x.ndim() + int64_t(axes.size());
  for (int64_t& a : axes) a = norm_axis(a, r, "expand_dims", x.shape(), loc);
  Dims sorted = axes;
  std::sort(sorted.begin(), sorted.end());
  if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end())
    fail(ErrorKind::Value, "expand_dims: repeated axis in ", dims_str(axes), " for ",
         ir::short_str(x.shape()), at_loc(loc));
  const Dims in = x.sizes(loc);
  Dims out;
  for (int64_t i = 0, j = 0; i < r; ++i)
    out.push_back(std::binary_search(sorted.begin(), sorted.end(), i) ? 1 : in[std::size_t(j++)]);
  return x.reshape(out, loc);
}

Tensor squeeze(const Tensor& x, Dims axes, Loc loc) {
  check_defined(x, "squeeze", loc);
  const Dims in = x.sizes(loc);
  for (int64_t& a : axes) {
    int64_t given = a;
    a = norm_axis(a, x.ndim(), "squeeze", x.shape(), loc);
    if (in[std::size_t(a)] != 1)
      fail(ErrorKind::Shape, "squeeze: axis ", given, " of ", ir::short_str(x.shape()),
           " does not have size 1", at_loc(loc));
  }
  Dims out;
  for (int64_t i = 0; i < x.ndim(); ++i)
    if (std::find(axes.begin(), axes.end(), i) == axes.end()) out.push_back(in[std::size_t(i)]);
  return x.reshape(out, loc);
}
Tensor squeeze(const Tensor& x, std::initializer_list<int64_t> axes, Loc loc) {
  return squeeze(x, Dims(axes), loc);
}

Tensor flipud(const Tensor& x, Loc loc) {
  need_rank(x, 1, "flipud", loc);
  return flip(x, {0}, loc);
}
Tensor fliplr(const Tensor& x, Loc loc) {
  need_rank(x, 2, "fliplr", loc);
  return flip(x, {1}, loc);
}

Tensor rot90(const Tensor& x, int64_t k, Dims axes, Loc loc) {
  check_defined(x, "rot90", loc);
  if (axes.size() != 2)
    fail(ErrorKind::Value, "rot90: needs two axes, got ", dims_str(axes), " for ",
         ir::short_str(x.shape()), at_loc(loc));
  const int64_t a = norm_axis(axes[0], x.ndim(), "rot90", x.shape(), loc);
  const int64_t b = norm_axis(axes[1], x.ndim(), "rot90", x.shape(), loc);
  if (a == b)
    fail(ErrorKind::Value, "rot90: both axes are axis ", a, " of ", ir::short_str(x.shape()),
         at_loc(loc));
  k = ((k % 4) + 4) % 4;
  if (k == 0) return x;
  if (k == 2) return flip(x, {a, b}, loc);
  if (k == 1) return transpose(flip(x, {b}, loc), a, b, loc);
  return flip(transpose(x, a, b, loc), {b}, loc);
}

// ---- Cumulative ops

namespace {

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

// ---- einsum

namespace {

/// Letters are their character codes; the k-th broadcast (`...`) axis of the result is
/// kEllipsis + k.
constexpr int kEllipsis = 256;

struct Term {
  std::vector<int> labels;
  Tensor t;
};

std::string label_str(int l) {
  return l >= kEllipsis ? "..." + std::to_string(l - kEllipsis) : std::string(1, char(l));
}

bool is_letter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

/// The letters of one term, with -1 where `...` stands; an error naming the term otherwise.
std::vector<int> parse_term(std::string_view term, std::string_view spec, const std::string& who,
                            const Loc& loc) {
  std::vector<int> out;
  for (std::size_t i = 0; i < term.size(); ++i) {
    char c = term[i];
    if (c == ' ') continue;
    if (c == '.') {
      if (term.substr(i, 3) != "..." || std::find(out.begin(), out.end(), -1) != out.end())
        fail(ErrorKind::Value, "einsum: ", who, " '", term,
             "' has a '.' that is not one '...', in \"", spec, "\"", at_loc(loc));
      out.push_back(-1);
      i += 2;
      continue;
    }
    if (!is_letter(c))
      fail(ErrorKind::Value, "einsum: invalid character '", std::string(1, c), "' in ", who, " '",
           term, "' of \"", spec, "\" (letters a-z, A-Z and '...' only)", at_loc(loc));
    out.push_back(int(c));
  }
  return out;
}

/// Sum out the axes whose label `keep` rejects.
template <class Keep> Term sum_unneeded(Term t, Keep keep, const Loc& loc) {
  Dims axes;
  std::vector<int> rest;
  for (std::size_t i = 0; i < t.labels.size(); ++i)
    if (keep(t.labels[i]))
      rest.push_back(t.labels[i]);
    else
      axes.push_back(int64_t(i));
  if (axes.empty()) return t;
  return {rest, sum(t.t, axes, false, loc)};
}

int64_t label_size(const Term& t, int label, const Loc& loc) {
  auto it = std::find(t.labels.begin(), t.labels.end(), label);
  return t.t.size(int64_t(it - t.labels.begin()), loc);
}

/// t's axes reordered as `order` (labels of t), merged into groups of the given lengths, with
/// broadcast (size-1) axes expanded to `sizes`.
Tensor arrange(const Term& t, const std::vector<int>& order, const std::vector<int64_t>& sizes,
               const Dims& groups, const Loc& loc) {
  Dims perm, full;
  for (std::size_t i = 0; i < order.size(); ++i) {
    perm.push_back(
        int64_t(std::find(t.labels.begin(), t.labels.end(), order[i]) - t.labels.begin()));
    full.push_back(sizes[i]);
  }
  Tensor p = permute(t.t, perm, loc);
  if (p.sizes(loc) != full) p = p.expand(full, loc);
  Dims merged;
  std::size_t at = 0;
  for (int64_t g : groups) {
    merged.push_back(product(full, at, at + std::size_t(g)));
    at += std::size_t(g);
  }
  return p.reshape(merged, loc);
}

/// a and b contracted over the labels they share that `needed` does not want; shared wanted
/// labels become batch axes. One batched matmul [batch, free_a, k] @ [batch, k, free_b].
Term contract(Term a, Term b, const std::vector<int>& needed, const Loc& loc) {
  auto in = [](const std::vector<int>& v, int l) {
    return std::find(v.begin(), v.end(), l) != v.end();
  };
  a = sum_unneeded(a, [&](int l) { return in(needed, l) || in(b.labels, l); }, loc);
  b = sum_unneeded(b, [&](int l) { return in(needed, l) || in(a.labels, l); }, loc);
  std::vector<int> batch, contracted, free_a, free_b;
  for (int l : a.labels)
    (in(b.labels, l) ? (in(needed, l) ? batch : contracted) : free_a).push_back(l);
  for (int l : b.labels)
    if (!in(a.labels, l)) free_b.push_back(l);
  auto size_of = [&](int l) {
    int64_t sa = in(a.labels, l) ? label_size(a, l, loc) : 1;
    int64_t sb = in(b.labels, l) ? label_size(b, l, loc) : 1;
    return std::max(sa, sb);
  };
  auto sizes = [&](std::initializer_list<const std::vector<int>*> parts) {
    std::vector<int64_t> out;
    for (const auto* p : parts)
      for (int l : *p) out.push_back(size_of(l));
    return out;
  };
  std::vector<int> order_a = batch, order_b = batch;
  order_a.insert(order_a.end(), free_a.begin(), free_a.end());
  order_a.insert(order_a.end(), contracted.begin(), contracted.end());
  order_b.insert(order_b.end(), contracted.begin(), contracted.end());
  order_b.insert(order_b.end(), free_b.begin(), free_b.end());
  auto size_list = [&](const std::vector<int>& order) { // size-1 broadcast axes expanded
    std::vector<int64_t> out;
    for (int l : order) out.push_back(size_of(l));
    return out;
  };
  Tensor ma =
      arrange(a, order_a, size_list(order_a),
              {int64_t(batch.size()), int64_t(free_a.size()), int64_t(contracted.size())}, loc);
  Tensor mb =
      arrange(b, order_b, size_list(order_b),
              {int64_t(batch.size()), int64_t(contracted.size()), int64_t(free_b.size())}, loc);
  Tensor prod_ab = matmul(ma, mb, loc);
  std::vector<int> labels = batch;
  labels.insert(labels.end(), free_a.begin(), free_a.end());
  labels.insert(labels.end(), free_b.begin(), free_b.end());
  return {labels, prod_ab.reshape(sizes({&batch, &free_a, &free_b}), loc)};
}

} // namespace

Tensor einsum(std::string_view spec, std::span<const Tensor> operands, Loc loc) {
  if (operands.empty())
    fail(ErrorKind::Value, "einsum: no operands for \"", spec, "\"", at_loc(loc));
  for (const Tensor& t : operands) check_defined(t, "einsum", loc);
  const std::size_t arrow = spec.find("->");
  std::string_view lhs = spec.substr(0, arrow);
  std::vector<std::string_view> terms;
  for (std::size_t start = 0;;) {
    std::size_t comma = lhs.find(',', start);
    terms.push_back(lhs.substr(start, comma == std::string_view::npos ? comma : comma - start));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  if (terms.size() != operands.size())
    fail(ErrorKind::Value, "einsum: \"", spec, "\" has ", terms.size(), " operand terms but ",
         operands.size(), " operands were given", at_loc(loc));

  // Letters per operand, `...` expanded to right-aligned broadcast labels.
  std::vector<std::vector<int>> raw;
  std::vector<int64_t> ell(terms.size(), 0);
  int64_t n_ell = 0;
  for (std::size_t i = 0; i < terms.size(); ++i) {
    raw.push_back(parse_term(terms[i], spec, "operand " + std::to_string(i) + "'s term", loc));
    const bool has = std::find(raw[i].begin(), raw[i].end(), -1) != raw[i].end();
    const int64_t letters = int64_t(raw[i].size()) - (has ? 1 : 0);
    const int64_t rank = operands[i].ndim();
    if (has ? letters > rank : letters != rank)
      fail(ErrorKind::Shape, "einsum: operand ", i, " is ", ir::short_str(operands[i].shape()),
           " but its term '", terms[i], "' names ", letters, " axes", at_loc(loc));
    ell[i] = has ? rank - letters : 0;
    n_ell = std::max(n_ell, ell[i]);
  }
  std::vector<Term> ts;
  for (std::size_t i = 0; i < terms.size(); ++i) {
    Term t{{}, operands[i]};
    for (int l : raw[i])
      if (l == -1)
        for (int64_t k = 0; k < ell[i]; ++k)
          t.labels.push_back(int(kEllipsis + n_ell - ell[i] + k));
      else
        t.labels.push_back(l);
    ts.push_back(std::move(t));
  }

  // Sizes agree per letter; broadcast axes may also be 1.
  std::vector<int64_t> size_of(kEllipsis + std::size_t(n_ell), -1);
  std::vector<std::size_t> seen_in(size_of.size(), 0);
  for (std::size_t i = 0; i < ts.size(); ++i)
    for (std::size_t j = 0; j < ts[i].labels.size(); ++j) {
      int l = ts[i].labels[j];
      int64_t s = ts[i].t.size(int64_t(j), loc);
      int64_t& known = size_of[std::size_t(l)];
      if (known == -1 || (l >= kEllipsis && known == 1)) {
        known = s;
        seen_in[std::size_t(l)] = i;
      } else if (s != known && !(l >= kEllipsis && s == 1)) {
        fail(ErrorKind::Shape, "einsum: ",
             l >= kEllipsis ? "broadcast axis " + label_str(l) : "letter '" + label_str(l) + "'",
             " has size ", known, " in operand ", seen_in[std::size_t(l)], " (",
             ir::short_str(operands[seen_in[std::size_t(l)]].shape()), ") but ", s, " in operand ",
             i, " (", ir::short_str(operands[i].shape()), ") of \"", spec, "\"", at_loc(loc));
      }
    }

  // The output: explicit, or numpy's implicit form (broadcast axes, then the letters used once,
  // in alphabetical order).
  std::vector<int> output;
  if (arrow != std::string_view::npos) {
    std::string_view rhs = spec.substr(arrow + 2);
    std::vector<int> parsed = parse_term(rhs, spec, "the output", loc);
    bool has = false;
    for (int l : parsed) {
      if (l == -1) {
        has = true;
        for (int64_t k = 0; k < n_ell; ++k) output.push_back(int(kEllipsis + k));
        continue;
      }
      if (std::find(output.begin(), output.end(), l) != output.end())
        fail(ErrorKind::Value, "einsum: output letter '", label_str(l),
             "' appears more than once in \"", spec, "\"", at_loc(loc));
      if (size_of[std::size_t(l)] == -1)
        fail(ErrorKind::Value, "einsum: output letter '", label_str(l),
             "' is not in any operand of \"", spec, "\"", at_loc(loc));
      output.push_back(l);
    }
    if (!has && n_ell > 0)
      fail(ErrorKind::Value, "einsum: the operands of \"", spec,
           "\" have '...' axes but the output has no '...'", at_loc(loc));
  } else {
    for (int64_t k = 0; k < n_ell; ++k) output.push_back(int(kEllipsis + k));
    std::vector<int> count(kEllipsis, 0);
    for (const Term& t : ts)
      for (int l : t.labels)
        if (l < kEllipsis) ++count[std::size_t(l)];
    for (int l = 0; l < kEllipsis; ++l)
      if (count[std::size_t(l)] == 1) output.push_back(l);
  }

  // Operands in one dtype; repeated letters within a term become diagonals.
  DType dt = operands[0].dtype();
  for (const Tensor& t : operands) dt = ir::promote(dt, t.dtype());
  for (Term& t : ts) {
    if (t.t.dtype() != dt) t.t = t.t.astype(dt, loc);
    for (std::size_t j = 0; j < t.labels.size(); ++j)
      for (std::size_t k = j + 1; k < t.labels.size(); ++k)
        if (t.labels[k] == t.labels[j]) {
          t.t = diagonal(t.t, 0, int64_t(j), int64_t(k), loc);
          int l = t.labels[j];
          t.labels.erase(t.labels.begin() + std::ptrdiff_t(k));
          t.labels.erase(t.labels.begin() + std::ptrdiff_t(j));
          t.labels.push_back(l);
          k = j; // rescan from j: the labels shifted
        }
  }

  // Left to right: each step keeps the labels a later operand or the output still needs.
  auto in = [](const std::vector<int>& v, int l) {
    return std::find(v.begin(), v.end(), l) != v.end();
  };
  Term acc = ts[0];
  for (std::size_t i = 1; i < ts.size(); ++i) {
    std::vector<int> needed = output;
    for (std::size_t j = i + 1; j < ts.size(); ++j)
      needed.insert(needed.end(), ts[j].labels.begin(), ts[j].labels.end());
    acc = contract(std::move(acc), ts[i], needed, loc);
  }
  acc = sum_unneeded(std::move(acc), [&](int l) { return in(output, l); }, loc);
  Dims perm, full;
  for (int l : output) {
    perm.push_back(
        int64_t(std::find(acc.labels.begin(), acc.labels.end(), l) - acc.labels.begin()));
    full.push_back(size_of[std::size_t(l)]);
  }
  Tensor out = permute(acc.t, perm, loc);
  if (out.sizes(loc) != full) out = out.expand(full, loc);
  return out;
}
Tensor einsum(std::string_view spec, std::initializer_list<Tensor> operands, Loc loc) {
  return einsum(spec, std::span<const Tensor>(operands.begin(), operands.size()), loc);
}

// ---- Advanced indexing

TensorIndex::TensorIndex(const Tensor& t) : kind_(Kind::Tensor), t_(t.impl()) {}
Tensor TensorIndex::tensor() const { return Tensor(t_); }

namespace detail {

/// numpy advanced indexing (some index is a tensor): integers become 0-d index tensors, bool
/// masks become one i64 index tensor per axis they cover (read on the host), slices and new axes
/// are applied first; then the indexed axes are moved to the front and merged, the broadcast
/// index tensors combine into flat offsets, and one take gathers every selected row. The
/// broadcast axes go where the first indexed axis was when the indexed axes are adjacent, else
/// first (numpy's rule).
Tensor index_advanced(const Tensor& self, const std::vector<TensorIndex>& indices, Loc loc) {
  const Dims in_sizes = self.sizes(loc);
  // 1. Bool masks expanded to integer tensors, counting the axes each index consumes.
  std::vector<TensorIndex> idx;
  int64_t axis = 0;
  for (const TensorIndex& i : indices) {
    if (i.kind() == TensorIndex::Kind::Tensor && i.tensor().dtype() == DType::Bool) {
      Tensor mask = i.tensor();
      const Dims ms = mask.sizes(loc);
      if (ms.empty())
        fail(ErrorKind::Unsupported, "index: a 0-d bool index is not supported, for ",
             ir::short_str(self.shape()), at_loc(loc));
      bool fits = axis + int64_t(ms.size()) <= int64_t(in_sizes.size());
      for (std::size_t k = 0; fits && k < ms.size(); ++k)
        fits = ms[k] == in_sizes[std::size_t(axis) + k];
      if (!fits)
        fail(ErrorKind::Shape, "index: bool mask ", ir::short_str(mask.shape()),
             " does not match the axes from ", axis, " of ", ir::short_str(self.shape()),
             at_loc(loc));
      std::vector<bool> m = mask.to_vector<bool>(loc);
      std::vector<std::vector<int64_t>> coords(ms.size());
      for (int64_t flat = 0; flat < int64_t(m.size()); ++flat) {
        if (!m[std::size_t(flat)]) continue;
        int64_t rem = flat;
        for (std::size_t k = ms.size(); k-- > 0;) {
          coords[k].push_back(rem % ms[k]);
          rem /= ms[k];
        }
      }
      for (std::size_t k = 0; k < ms.size(); ++k) {
        const int64_t count = int64_t(coords[k].size());
        idx.emplace_back(Tensor::from_vector(coords[k], {count}, loc));
      }
      axis += int64_t(ms.size());
      continue;
    }
    idx.push_back(i);
    axis += i.kind() != TensorIndex::Kind::NewAxis;
  }
  if (axis > int64_t(in_sizes.size()))
    fail(ErrorKind::Value, "index: ", axis, " indices for ", ir::short_str(self.shape()),
         at_loc(loc));

  // 2. Slices and new axes applied; x's axis j now belongs to idx[j] (or is whole).
  Tensor x = self;
  std::vector<std::pair<int64_t, Tensor>> adv; // (axis of x, index tensor)
  int64_t ax = 0;
  for (const TensorIndex& i : idx) {
    switch (i.kind()) {
    case TensorIndex::Kind::Int: {
      const int64_t n = x.size(ax, loc);
      if (i.integer() < -n || i.integer() >= n)
        fail(ErrorKind::Value, "index: index ", i.integer(), " is out of range for axis ", ax,
             " of ", ir::short_str(x.shape()), at_loc(loc));
      adv.emplace_back(ax, scalar(i.integer(), loc));
      break;
    }
    case TensorIndex::Kind::Slice:
      x = slice(x, ax, i.slice().start, i.slice().stop, i.slice().step, loc);
      break;
    case TensorIndex::Kind::NewAxis:
      x = unsqueeze(x, ax, loc);
      break;
    case TensorIndex::Kind::Tensor:
      if (!ir::is_int(i.tensor().dtype()))
        fail(ErrorKind::Type, "index: an index tensor must be integer or bool, got ",
             ir::short_str(i.tensor().shape()), " for ", ir::short_str(self.shape()), at_loc(loc));
      adv.emplace_back(ax, i.tensor());
      break;
    }
    ++ax;
  }

  // 3. The broadcast shape of the index tensors.
  Dims bshape;
  for (const auto& [a, t] : adv) {
    Dims s = t.sizes(loc);
    if (s.size() > bshape.size()) bshape.insert(bshape.begin(), s.size() - bshape.size(), 1);
    for (std::size_t k = 0; k < s.size(); ++k) {
      int64_t& b = bshape[bshape.size() - s.size() + k];
      const int64_t v = s[k];
      if (b == 1)
        b = v;
      else if (v != 1 && v != b)
        fail(ErrorKind::Shape, "index: index tensors of shapes ", dims_str(bshape), " and ",
             ir::short_str(t.shape()), " do not broadcast, for ", ir::short_str(self.shape()),
             at_loc(loc));
    }
  }

  // 4. Flat offsets into the indexed axes merged in front (row-major over those axes).
  const Dims xs = x.sizes(loc);
  Dims perm, merged{1}, rest;
  for (const auto& [a, t] : adv) {
    perm.push_back(a);
    merged[0] *= xs[std::size_t(a)];
  }
  for (int64_t j = 0; j < int64_t(xs.size()); ++j)
    if (std::find_if(adv.begin(), adv.end(), [&](const auto& p) { return p.first == j; }) ==
        adv.end()) {
      perm.push_back(j);
      rest.push_back(xs[std::size_t(j)]);
      merged.push_back(xs[std::size_t(j)]);
    }
  Tensor offset, in_range;
  int64_t stride = 1;
  for (std::size_t k = adv.size(); k-- > 0;) {
    const int64_t n = xs[std::size_t(adv[k].first)];
    Tensor i = adv[k].second.astype(DType::I64, loc);
    Tensor ok = logical_and(ge(i, -n, loc), lt(i, n, loc), loc);
    in_range = in_range.defined() ? logical_and(ok, in_range, loc) : ok;
    i = where(lt(i, 0, loc), add(i, n, loc), i, loc); // negative counts from the end
    Tensor term = stride == 1 ? i : mul(i, stride, loc);
    offset = offset.defined() ? add(term, offset, loc) : term;
    stride *= n;
  }
  // An index out of its own axis could still land inside the merged axes; the offset one past
  // their end makes take's range check fail instead of reading another element.
  if (adv.size() > 1) offset = where(in_range, offset, stride, loc);
  offset = offset.expand(bshape, loc);
  Tensor rows = permute(x, perm, loc).reshape(merged, loc);
  const int64_t count = product(bshape);
  Dims out_sizes = bshape;
  out_sizes.insert(out_sizes.end(), rest.begin(), rest.end());
  Tensor out = take(rows, offset.reshape({count}, loc), 0, loc).reshape(out_sizes, loc);

  // 5. Adjacent indexed axes: the broadcast axes move to where the first of them was.
  bool adjacent = true;
  for (std::size_t k = 1; k < adv.size(); ++k) adjacent &= adv[k].first == adv[k - 1].first + 1;
  const int64_t first = adv.front().first;
  if (!adjacent || first == 0 || bshape.empty()) return out;
  const int64_t nb = int64_t(bshape.size());
  Dims order;
  for (int64_t j = 0; j < first; ++j) order.push_back(nb + j);
  for (int64_t j = 0; j < nb; ++j) order.push_back(j);
  for (int64_t j = nb + first; j < out.ndim(); ++j) order.push_back(j);
  return permute(out, order, loc);
}

} // namespace detail

} // namespace rlx
