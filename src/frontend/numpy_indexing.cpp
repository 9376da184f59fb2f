// src/frontend/numpy_indexing.cpp -- Tensor::index with integer and bool tensors among the
// indices (numpy's advanced indexing), composed from movement ops and one take.
#include "frontend/impl.hpp"
#include "frontend/ops.hpp"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

namespace rlx {

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
