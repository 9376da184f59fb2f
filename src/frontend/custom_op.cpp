// src/frontend/custom_op.cpp -- rlx::register_op and rlx::custom (include/rlx/custom_op.hpp).
// The registry (src/ops/custom.cpp) lives below the frontend, so the Tensor hooks of a CustomOp
// are stored as functions that trace them into graphs on demand (trace_graph, as rlx::jit
// traces): autodiff inlines those graphs without knowing about tensors.
#include "rlx/custom_op.hpp"

#include "frontend/impl.hpp"
#include "ops/custom.hpp"
#include "rlx/apply.hpp"

#include <string>
#include <utility>

namespace rlx {

namespace {

/// A hook on the placeholders of a trace: (arguments, attribute bytes, batched flags) -> results.
using HookBody = std::function<std::vector<Tensor>(std::span<const Tensor>, AttrBytes,
                                                   const std::vector<bool>&)>;

ir::detail::HookGraph traced(std::string op, std::string hook, HookBody body, Loc loc) {
  return [op = std::move(op), hook = std::move(hook), body = std::move(body),
          loc](std::span<const Shape> shapes, std::span<const uint8_t> attrs,
               const std::vector<bool>& batched) {
    std::string what = "custom op '" + op + "' " + hook + " hook";
    detail::ExtractedGraph t = detail::trace_graph(
        shapes, [&](std::span<const Tensor> args) { return body(args, attrs, batched); },
        op + "_" + hook, what, loc);
    for (const ir::Node& n : t.graph.nodes())
      if (n.op.kind() == ir::OpKind::Param)
        fail(ErrorKind::Value, what,
             ": uses a tensor computed outside the hook; build every value from the hook's "
             "arguments (constants and zeros_like are fine)",
             detail::at_loc(loc));
    return std::move(t.graph);
  };
}

} // namespace

void register_op(std::string name, CustomOp impl, bool replace, Loc loc) {
  if (name.empty()) fail(ErrorKind::Value, "register_op: the name is empty", detail::at_loc(loc));
  if (impl.num_inputs < 1)
    fail(ErrorKind::Value, "register_op: custom op '", name, "' needs num_inputs >= 1, got ",
         impl.num_inputs, detail::at_loc(loc));
  if (!impl.infer_shape || !impl.kernel)
    fail(ErrorKind::Value, "register_op: custom op '", name, "' needs ",
         !impl.infer_shape ? "an infer_shape rule" : "a kernel", detail::at_loc(loc));
  auto e = std::make_shared<ir::detail::CustomOpEntry>();
  e->name = name;
  e->num_inputs = impl.num_inputs;
  e->pure = impl.pure;
  e->infer = std::move(impl.infer_shape);
  e->kernel = std::move(impl.kernel);
  if (impl.vjp)
    e->vjp = traced(
        name, "vjp",
        [f = std::move(impl.vjp)](std::span<const Tensor> a, AttrBytes attrs,
                                  const std::vector<bool>&) {
          std::size_t n = a.size() - 2; // operands, output, d_output
          return f(a.first(n), a[n], a[n + 1], attrs);
        },
        loc);
  if (impl.jvp)
    e->jvp = traced(
        name, "jvp",
        [f = std::move(impl.jvp)](std::span<const Tensor> a, AttrBytes attrs,
                                  const std::vector<bool>&) {
          std::size_t n = (a.size() - 1) / 2; // operands, tangents, output
          return std::vector<Tensor>{f(a.first(n), a.subspan(n, n), a[2 * n], attrs)};
        },
        loc);
  if (impl.vmap)
    e->vmap = traced(
        name, "vmap",
        [f = std::move(impl.vmap)](std::span<const Tensor> a, AttrBytes attrs,
                                   const std::vector<bool>& batched) {
          return std::vector<Tensor>{f(a, batched, attrs)};
        },
        loc);
  ir::detail::register_custom_op(std::move(e), replace, loc);
}

bool is_op_registered(std::string_view name) { return ir::detail::find_custom_op(name) != nullptr; }

Tensor custom(std::string name, std::span<const Tensor> inputs, std::vector<uint8_t> attrs,
              Loc loc) {
  return apply(
      inputs,
      [&](ir::Graph& g, std::span<const ir::NodeId> ids) {
        return g.custom_op(name, attrs, {ids.begin(), ids.end()}, loc);
      },
      loc);
}

Tensor custom(std::string name, std::initializer_list<Tensor> inputs, std::vector<uint8_t> attrs,
              Loc loc) {
  return custom(std::move(name), std::span<const Tensor>(inputs.begin(), inputs.size()),
                std::move(attrs), loc);
}

Tensor custom_packed(std::string name, std::span<const Tensor> inputs, std::vector<uint8_t> attrs,
                     ir::Shape out_shape, Loc loc) {
  return apply(
      inputs,
      [&](ir::Graph& g, std::span<const ir::NodeId> ids) {
        return g.custom_op_packed(name, attrs, {ids.begin(), ids.end()}, out_shape, loc);
      },
      loc);
}

} // namespace rlx
