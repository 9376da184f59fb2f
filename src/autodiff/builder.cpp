// src/autodiff/builder.cpp -- the gradient-shaped helpers of the rules' Builder.
#include "builder.hpp"

namespace rlx::autodiff {

NodeId Builder::expand_to(NodeId x, Shape s) {
  if (shape(x).dims() == s.dims()) return x;
  Ints target(s.rank());
  for (std::size_t i = 0; i < s.rank(); ++i) target[i] = s.dims()[i].size();
  return op(ir::Op(OpKind::Expand, ir::ExpandAttrs{target}), {x});
}

NodeId Builder::unbroadcast(NodeId g, Shape target) {
  const Shape gs = shape(g); // copies: appending nodes moves the graph's storage
  const std::size_t gr = gs.rank(), tr = target.rank();
  RLX_CHECK(gr >= tr, "unbroadcast: gradient ", ir::short_str(gs), " has lower rank than ",
            ir::short_str(target));
  Ints axes;
  for (std::size_t i = 0; i < gr; ++i) {
    if (i < gr - tr) {
      axes.push_back(int64_t(i));
      continue;
    }
    const ir::Dim& t = target.dims()[i - (gr - tr)];
    if (t.size() == 1 && gs.dims()[i].size() != 1) axes.push_back(int64_t(i));
  }
  NodeId r = g;
  if (!axes.empty()) {
    r = sum(g, axes, true);
    Ints dims(tr);
    for (std::size_t i = 0; i < tr; ++i) dims[i] = target.dims()[i].size();
    r = reshape(r, dims);
  }
  return cast(r, target.dtype());
}

NodeId Builder::move_axis_last(NodeId x, int64_t axis, bool inverse) {
  int64_t r = rank(x);
  axis = norm_axis(axis, r);
  if (axis == r - 1) return x;
  Ints perm;
  if (!inverse) {
    for (int64_t i = 0; i < r; ++i)
      if (i != axis) perm.push_back(i);
    perm.push_back(axis);
  } else { // inverse of the above: output axis `axis` comes from the last
    for (int64_t i = 0, j = 0; i < r; ++i) perm.push_back(i == axis ? r - 1 : j++);
  }
  return transpose(x, perm);
}

NodeId Builder::along_axis_matrix(NodeId x, int64_t axis, const std::vector<double>& m, int64_t out,
                                  int64_t in) {
  // x [.., in, ..] -> move the axis last -> @ m^T [in, out] -> move back.
  std::vector<double> mt(std::size_t(in * out));
  for (int64_t o = 0; o < out; ++o)
    for (int64_t i = 0; i < in; ++i) mt[std::size_t(i * out + o)] = m[std::size_t(o * in + i)];
  NodeId t = tensor(mt, Shape({in, out}, shape(x).dtype()));
  NodeId y = op(OpKind::MatMul, {move_axis_last(x, axis), t});
  return move_axis_last(y, axis, true);
}

} // namespace rlx::autodiff
