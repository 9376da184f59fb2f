// src/frontend/pytree.cpp -- the errors of rlx/pytree.hpp's templates (kept out of the header).
#include "rlx/pytree.hpp"

namespace rlx::detail {

void fail_tree_leaves(std::string_view what, std::size_t want, std::size_t got, const Loc& loc) {
  fail(ErrorKind::Value, what, ": the tree has ", want, " Tensor leaves but ", got, " were given",
       at_loc(loc));
}

void fail_tree_structure(std::string_view what, std::size_t index, const TreeDef& want,
                         const TreeDef& got) {
  fail(ErrorKind::Value, what, ": tree ", index, " has structure ", got.str(),
       " but the first has ", want.str(), "; the trees must have one structure");
}

} // namespace rlx::detail
