// src/interp/custom.cpp -- the custom op's kernel: the registered CPU kernel on the operands'
// buffers and a zeroed output of the node's shape. The registration is looked up at every run, so
// graphs (and the JIT, which runs this kernel as a step) use what is registered when they run.
#include "kernels.hpp"

#include "ops/custom.hpp"

#include <exception>
#include <vector>

namespace rlx::interp::detail {

RLX_KERNEL(Custom) {
  std::shared_ptr<const ir::detail::CustomOpEntry> e =
      ir::detail::require_custom_op(n.op, "its kernel", n.loc);
  const ir::CustomAttrs& a = n.op.attrs<ir::CustomAttrs>();
  Buffer out(n.shape);
  std::vector<const Buffer*> ins(in.begin(), in.end());
  try {
    e->kernel(ins, out, a.data.data);
  } catch (const Error& err) {
    fail(err.kind(), "custom op '", a.name, "': its kernel failed: ", err.what(),
         ir::detail::at_source(n.loc));
  } catch (const std::exception& err) {
    fail(ErrorKind::Runtime, "custom op '", a.name, "': its kernel threw: ", err.what(),
         ir::detail::at_source(n.loc));
  }
  if (out.shape() != n.shape)
    fail(ErrorKind::Runtime, "custom op '", a.name, "': its kernel replaced the output ",
         ir::short_str(n.shape), " by ", ir::short_str(out.shape()), ir::detail::at_source(n.loc));
  return out;
}

} // namespace rlx::interp::detail
