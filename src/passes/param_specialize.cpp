// src/passes/param_specialize.cpp -- bake the values of chosen parameters into constants.
//
// Assumes a verified graph and, for each param named in opts.params, a buffer of its exact shape
// and dtype (else an rlx::Error). Guarantees the outputs the graph computed with those values
// fed, with those params no longer leaves. Does not touch Inputs; does not fold (constant_fold
// does, after it in the pipeline).
#include "rlx/passes.hpp"

#include "rewriter.hpp"

namespace rlx::passes {

bool param_specialize(ir::Graph& g, const PassOptions& opts) {
  if (opts.params.empty()) return false;
  Rewriter rw(g);
  bool changed = false;
  for (const ir::Node& n : g.nodes()) {
    auto it = n.op.kind() == ir::OpKind::Param ? opts.params.find(n.op.attrs<ir::LeafAttrs>().name)
                                               : opts.params.end();
    if (it == opts.params.end()) {
      rw.copy(n);
      continue;
    }
    const Buffer& value = it->second;
    if (value.shape() != n.shape)
      fail(ErrorKind::Value, "param_specialize: param \"", it->first, "\" of graph @", g.name,
           " is ", ir::short_str(n.shape), ", the value given is ", ir::short_str(value.shape()));
    rw.emit(n, constant_op(value), {});
    changed = true;
  }
  if (!changed) return false;
  g = rw.finish();
  return true;
}

} // namespace rlx::passes
