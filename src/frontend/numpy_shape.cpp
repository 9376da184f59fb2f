// src/frontend/numpy_shape.cpp -- numpy's and PyTorch's shape and movement functions (roll, tile,
// repeat, tril, diagonal, meshgrid, kron, tensordot, ...), all composed from existing Tensor ops:
// no new IR op kinds, so every kernel, JIT lowering and VJP rule they need already exists. Index
// arithmetic the host knows (diagonals, repeat lists, triangle masks) becomes small constant
// tensors; values the host does not know stay in the graph. The same holds for their neighbours
// numpy_cumulative.cpp (cumprod, cummax, logcumsumexp, ...), numpy_einsum.cpp and
// numpy_indexing.cpp (advanced indexing).
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
using detail::dims_str;
using detail::norm_axis;

Tensor i64_tensor(const std::vector<int64_t>& v, Dims sizes, const Loc& loc) {
  return Tensor::from_vector(v, std::move(sizes), loc);
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

} // namespace rlx
