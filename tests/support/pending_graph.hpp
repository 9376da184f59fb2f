// tests/support/pending_graph.hpp -- what a Tensor has recorded but not computed: the pending
// graph behind it, read through the frontend's TensorImpl (src/frontend/impl.hpp) so that looking
// does not materialize it.
#pragma once

#include "frontend/impl.hpp"

#include <set>
#include <vector>

namespace rlx::test {

/// The op kinds in the pending graph behind t, once per node.
inline std::multiset<ir::OpKind> pending_ops(const Tensor& t) {
  std::multiset<ir::OpKind> out;
  std::vector<const detail::TensorImpl*> stack{t.impl().get()};
  std::set<const detail::TensorImpl*> seen;
  while (!stack.empty()) {
    const auto* impl = stack.back();
    stack.pop_back();
    if (!seen.insert(impl).second) continue;
    if (impl->op) out.insert(impl->op->kind());
    for (const auto& in : impl->inputs) stack.push_back(in.get());
  }
  return out;
}

} // namespace rlx::test
