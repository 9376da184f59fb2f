// src/passes/inline_custom_fn.cpp -- replace every custom_fn node by its fwd_body, so the passes
// after it and the JIT's fusion see through user-defined sub-graphs.
#include "rlx/passes.hpp"

#include "ops/control.hpp"
#include "rewriter.hpp"

#include <algorithm>

namespace rlx::passes {

namespace {

bool has_custom_fn(const ir::Graph& g) {
  return std::any_of(g.nodes().begin(), g.nodes().end(),
                     [](const ir::Node& n) { return n.op.kind() == ir::OpKind::CustomFn; });
}

/// One level: the custom_fns of g inlined (custom_fns inside their bodies are copied as nodes).
ir::Graph inline_once(const ir::Graph& g) {
  Rewriter rw(g);
  for (const ir::Node& n : g.nodes()) {
    if (n.op.kind() != ir::OpKind::CustomFn) {
      rw.copy(n);
      continue;
    }
    auto append = [&](const ir::Op& op, std::vector<ir::NodeId> ins, ir::Shape shape) {
      return rw.append(n, op, std::move(ins), std::move(shape));
    };
    rw.replace(n, ir::detail::inline_custom_fn_call(rw.out(), n.op, rw.inputs_of(n), append));
  }
  return rw.finish();
}

} // namespace

bool inline_custom_fn(ir::Graph& g, const PassOptions&) {
  if (!has_custom_fn(g)) return false;
  // Bodies nest at most as deep as the text IR allows (16); each round inlines one level.
  while (has_custom_fn(g)) g = inline_once(g);
  return true;
}

} // namespace rlx::passes
