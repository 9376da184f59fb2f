// src/ops/custom.cpp -- the custom-op family: the process-wide registry (rlx::register_op fills
// it from src/frontend/custom_op.cpp), the shape rule, Graph::custom_op / custom_op_packed and
// is_pure (semantics in include/rlx/ir/ops.def).
#include "custom.hpp"

#include "infer_common.hpp"

#include <exception>
#include <map>
#include <mutex>
#include <shared_mutex>

namespace rlx::ir::detail {

namespace {

struct Registry {
  std::shared_mutex mu;
  std::map<std::string, std::shared_ptr<const CustomOpEntry>, std::less<>> ops;
};

Registry& registry() {
  static Registry r;
  return r;
}

const CustomAttrs& custom_attrs(const Op& op) { return op.attrs<CustomAttrs>(); }

/// The entry of `name` with `count` operands; rlx::Error naming the op otherwise.
std::shared_ptr<const CustomOpEntry> check_call(std::string_view name, std::size_t count,
                                                std::string_view what) {
  std::shared_ptr<const CustomOpEntry> e = find_custom_op(name);
  if (!e)
    fail(ErrorKind::Unsupported, what, ": no custom op named '", name,
         "' is registered in this process (rlx::register_op)");
  if (count != std::size_t(e->num_inputs))
    fail(ErrorKind::Value, what, ": custom op '", name, "' takes ", e->num_inputs, " inputs, got ",
         count);
  return e;
}

} // namespace

std::string at_source(const SourceLoc& where) {
  if (!where.known()) return "";
  return rlx::detail::cat(" (at ", where.file, ":", where.line, ")");
}

void register_custom_op(std::shared_ptr<const CustomOpEntry> entry, bool replace, const Loc& loc) {
  Registry& r = registry();
  std::unique_lock lock(r.mu);
  auto it = r.ops.find(entry->name);
  if (it != r.ops.end() && !replace)
    fail(ErrorKind::Value, "register_op: a custom op named '", entry->name,
         "' is registered already (pass replace = true to replace it)", rlx::detail::at_loc(loc));
  std::string name = entry->name;
  r.ops[name] = std::move(entry);
}

std::shared_ptr<const CustomOpEntry> find_custom_op(std::string_view name) {
  Registry& r = registry();
  std::shared_lock lock(r.mu);
  auto it = r.ops.find(name);
  return it == r.ops.end() ? nullptr : it->second;
}

std::shared_ptr<const CustomOpEntry> require_custom_op(const Op& op, std::string_view need,
                                                       const SourceLoc& where) {
  const std::string& name = custom_attrs(op).name;
  std::shared_ptr<const CustomOpEntry> e = find_custom_op(name);
  if (!e)
    fail(ErrorKind::Unsupported, "custom op '", name, "': ", need,
         " needs its registration, and no op of that name is registered in this process "
         "(rlx::register_op before running or differentiating the graph)",
         at_source(where));
  return e;
}

std::optional<Shape> infer_custom(const Op& op, std::span<const Shape> in) {
  const CustomAttrs& a = custom_attrs(op);
  std::string what = "custom op '" + a.name + "'";
  std::shared_ptr<const CustomOpEntry> e = check_call(a.name, in.size(), what);
  if (a.packed_dims) return Shape::of(*a.packed_dims, a.packed_dtype.value_or(DType::F32));
  try {
    return e->infer(in, a.data.data);
  } catch (const Error& err) {
    // The user's rule names neither the op nor the operands: add both. Kind Shape, so the
    // caller does not prefix the generic kind name.
    fail(err.kind() == ErrorKind::Type ? ErrorKind::Type : ErrorKind::Shape, what, ": ", err.what(),
         " (operands ", shapes_str(in), ")");
  } catch (const std::exception& err) {
    fail(ErrorKind::Shape, what, ": its shape rule threw: ", err.what(), " (operands ",
         shapes_str(in), ")");
  }
}

} // namespace rlx::ir::detail

namespace rlx::ir {

bool is_pure(const Op& op) {
  if (has_trait(op.kind(), kPure)) return true;
  if (op.family() != Family::Custom) return false;
  std::shared_ptr<const detail::CustomOpEntry> e =
      detail::find_custom_op(op.attrs<CustomAttrs>().name);
  return e && e->pure;
}

NodeId Graph::custom_op(std::string name, std::vector<uint8_t> attrs, std::vector<NodeId> inputs,
                        Loc loc) {
  for (NodeId in : inputs) check_id(in, "custom_op");
  try {
    detail::check_call(name, inputs.size(), "custom_op");
  } catch (const Error& e) {
    throw Error(e.kind(), e.what() + rlx::detail::at_loc(loc));
  }
  Op op(OpKind::Custom,
        CustomAttrs{std::move(name), Bytes{std::move(attrs)}, std::nullopt, std::nullopt});
  return add_inferred(std::move(op), std::move(inputs), loc);
}

NodeId Graph::custom_op_packed(std::string name, std::vector<uint8_t> attrs,
                               std::vector<NodeId> inputs, Shape out_shape, Loc loc) {
  for (NodeId in : inputs) check_id(in, "custom_op_packed");
  try {
    detail::check_call(name, inputs.size(), "custom_op_packed");
  } catch (const Error& e) {
    throw Error(e.kind(), e.what() + rlx::detail::at_loc(loc));
  }
  if (!out_shape.is_static())
    fail(ErrorKind::Shape, "custom_op_packed: custom op '", name,
         "' needs a static out_shape, got ", short_str(out_shape), rlx::detail::at_loc(loc));
  Op op(OpKind::Custom, CustomAttrs{std::move(name), Bytes{std::move(attrs)}, out_shape.sizes(),
                                    out_shape.dtype()});
  return add_inferred(std::move(op), std::move(inputs), loc);
}

} // namespace rlx::ir
