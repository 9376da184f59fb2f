// src/interp/control.cpp -- kernels of the control family: custom_fn runs its fwd_body (its
// symbols specialized to the operands' sizes) on the operands.
#include "kernels.hpp"

#include "ops/control.hpp"

namespace rlx::interp::detail {

RLX_KERNEL(CustomFn) {
  std::vector<ir::Shape> shapes;
  for (const Buffer* b : in) shapes.push_back(b->shape());
  std::map<uint32_t, ir::Dim> subst = ir::detail::custom_fn_unify(n.op, shapes);
  const ir::Graph& body = n.op.attrs<ir::CustomFnAttrs>().fwd_body.get();
  if (!body.has_dynamic_dims()) return run_leaves(body, in).at(0);
  return run_leaves(ir::detail::substitute_body(body, subst), in).at(0);
}

} // namespace rlx::interp::detail
