// src/builders/linalg.cpp -- RLX's dense-solve builders on the solve primitive (ops.def's Linalg
// family): dense_solve for one system, batched_dense_solve for a batch of them (what vmap makes
// of dense_solve). The other linear-algebra kinds have no named builder: add_inferred appends
// them, and rlx::linalg composes the numpy functions from them.
#include "rlx/ir/graph.hpp"

#include "rlx/ir/infer.hpp"

namespace rlx::ir {

namespace {

/// A's rank must be `rank`, b's that or one less; the rest is solve's rule.
void check_solve_ranks(const Graph& g, NodeId a, NodeId b, std::size_t rank, std::string_view what,
                       const Loc& loc) {
  const Shape &sa = g.shape(a), &sb = g.shape(b);
  if (sa.rank() != rank || (sb.rank() != rank && sb.rank() + 1 != rank))
    fail(ErrorKind::Shape, what, ": needs A of rank ", rank, " and b of rank ", rank - 1, " or ",
         rank, ", got ", short_str(sa), " and ", short_str(sb), rlx::detail::at_loc(loc));
}

} // namespace

NodeId Graph::dense_solve(NodeId a, NodeId b, Shape out_shape, Loc loc) {
  check_id(a, "dense_solve");
  check_id(b, "dense_solve");
  check_solve_ranks(*this, a, b, 2, "dense_solve", loc);
  return build(Op(OpKind::Solve), {a, b}, out_shape, loc);
}

NodeId Graph::batched_dense_solve(NodeId a, NodeId b, Shape out_shape, Loc loc) {
  check_id(a, "batched_dense_solve");
  check_id(b, "batched_dense_solve");
  check_solve_ranks(*this, a, b, 3, "batched_dense_solve", loc);
  return build(Op(OpKind::Solve), {a, b}, out_shape, loc);
}

} // namespace rlx::ir
