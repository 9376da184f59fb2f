// src/builders/random.cpp -- RLX's sample (ops.def's Random family), and the composites
// vector_quantize, residual_vq and lora_matmul, built from matmul, argmin/argmax, gather and
// element-wise nodes so that autodiff, both backends and the passes treat them as what they are.
#include "rlx/ir/graph.hpp"

#include "rlx/ir/infer.hpp"

#include <limits>

namespace rlx::ir {

namespace {

void need_matrix(const Graph& g, NodeId id, std::string_view what, std::string_view name,
                 const Loc& loc) {
  const Shape& s = g.shape(id);
  if (s.rank() != 2)
    fail(ErrorKind::Shape, what, ": ", name, " must be a matrix, got ", short_str(s),
         rlx::detail::at_loc(loc));
  if (!is_float(s.dtype()))
    fail(ErrorKind::Type, what, ": ", name, " must be a float matrix, got ", short_str(s),
         rlx::detail::at_loc(loc));
}

} // namespace

NodeId Graph::sample(NodeId logits, int64_t top_k, float top_p, float temperature, uint64_t seed,
                     Shape output_shape, Loc loc) {
  check_id(logits, "sample");
  return build(Op(OpKind::Sample, SampleAttrs{top_k, top_p, temperature, int64_t(seed)}), {logits},
               output_shape, loc);
}

NodeId Graph::sample_keyed(NodeId logits, NodeId key, int64_t top_k, float top_p, float temperature,
                           Shape output_shape, Loc loc) {
  check_id(logits, "sample_keyed");
  check_id(key, "sample_keyed");
  return build(Op(OpKind::Sample, SampleAttrs{top_k, top_p, temperature, 0}), {logits, key},
               output_shape, loc);
}

std::pair<NodeId, NodeId> Graph::vector_quantize(NodeId x, NodeId codebook, VqMetric metric,
                                                 Loc loc) {
  check_id(x, "vector_quantize");
  check_id(codebook, "vector_quantize");
  need_matrix(*this, x, "vector_quantize", "x", loc);
  need_matrix(*this, codebook, "vector_quantize", "codebook", loc);
  const Shape &sx = shape(x), &sc = shape(codebook);
  if (sx.dtype() != sc.dtype() || !(sx.dims()[1] == sc.dims()[1]))
    fail(ErrorKind::Shape,
         "vector_quantize: needs x [N, D] and codebook [K, D] of one dtype, got x ", short_str(sx),
         " and codebook ", short_str(sc), rlx::detail::at_loc(loc));
  const DType t = sx.dtype(); // sx refers into nodes that appending may move
  return transaction([&] {
    NodeId index;
    if (metric == VqMetric::L2) {
      // |x - c|^2 = |x|^2 - 2 x.c + |c|^2; |x|^2 is the same for every code of a row.
      NodeId xc = mm(x, transpose_(codebook, {1, 0}, loc), loc);
      NodeId cc = sum(mul(codebook, codebook, loc), {1}, false, loc);
      NodeId d = sub(cc, mul(constant(2.0, t, loc), xc, loc), loc);
      index = build_inferred(Op(OpKind::ArgMin, ArgReduceAttrs{1, false}), {d}, loc);
    } else {
      // cos(x, c) orders codes as x.c/|c| does (|x| > 0 is the row's constant); a zero code
      // divides by the tiny floor instead of 0.
      NodeId cc = sum(mul(codebook, codebook, loc), {1}, true, loc);
      NodeId cn = div(
          codebook, sqrt(clamp(cc, 1e-24, std::numeric_limits<double>::infinity(), loc), loc), loc);
      NodeId sim = mm(x, transpose_(cn, {1, 0}, loc), loc);
      index = build_inferred(Op(OpKind::ArgMax, ArgReduceAttrs{1, false}), {sim}, loc);
    }
    return std::pair{index, gather_(codebook, index, 0, loc)};
  });
}

std::pair<std::vector<NodeId>, NodeId>
Graph::residual_vq(NodeId x, std::span<const NodeId> codebooks, VqMetric metric, Loc loc) {
  if (codebooks.empty())
    fail(ErrorKind::Value, "residual_vq: needs at least one codebook", rlx::detail::at_loc(loc));
  return transaction([&] {
    std::vector<NodeId> indices;
    NodeId residual = x, recon = x;
    for (std::size_t l = 0; l < codebooks.size(); ++l) {
      auto [index, code] = vector_quantize(residual, codebooks[l], metric, loc);
      indices.push_back(index);
      recon = l == 0 ? code : add(recon, code, loc);
      if (l + 1 < codebooks.size()) residual = sub(residual, code, loc);
    }
    return std::pair{std::move(indices), recon};
  });
}

NodeId Graph::lora_matmul(NodeId x, NodeId w, NodeId a, NodeId b, float scale, Shape shape,
                          Loc loc) {
  for (NodeId id : {x, w, a, b}) check_id(id, "lora_matmul");
  need_matrix(*this, x, "lora_matmul", "x", loc);
  need_matrix(*this, w, "lora_matmul", "w", loc);
  need_matrix(*this, a, "lora_matmul", "a", loc);
  need_matrix(*this, b, "lora_matmul", "b", loc);
  const Shape &sx = this->shape(x), &sw = this->shape(w), &sa = this->shape(a),
              &sb = this->shape(b);
  const std::vector<Dim>&dx = sx.dims(), &dw = sw.dims(), &da = sa.dims(), &db = sb.dims();
  bool fit = dx[1] == dw[0] && dx[1] == da[0] && da[1] == db[0] && dw[1] == db[1];
  bool one_dtype = sx.dtype() == sw.dtype() && sx.dtype() == sa.dtype() && sx.dtype() == sb.dtype();
  if (!fit || !one_dtype)
    fail(ErrorKind::Shape,
         "lora_matmul: needs x [m, k], w [k, n], a [k, r], b [r, n] of one dtype, got x ",
         short_str(sx), ", w ", short_str(sw), ", a ", short_str(sa), ", b ", short_str(sb),
         rlx::detail::at_loc(loc));
  const DType t = sx.dtype(); // the shapes above are references into nodes that may move
  return transaction([&] {
    // (x a) b, never a b: the low-rank path costs m r (k + n) instead of k n (m + r).
    NodeId low = mm(mm(x, a, loc), b, loc);
    NodeId out = add(mm(x, w, loc), mul(low, constant(double(scale), t, loc), loc), loc);
    if (!(this->shape(out) == shape))
      fail(ErrorKind::Shape, "lora_matmul: declared output ", short_str(shape), " does not match ",
           short_str(this->shape(out)), rlx::detail::at_loc(loc));
    return out;
  });
}

} // namespace rlx::ir
