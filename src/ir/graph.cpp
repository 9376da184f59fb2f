// src/ir/graph.cpp -- Graph core: node storage, queries, leaves and the checked builder path.
#include "rlx/ir/graph.hpp"

#include "rlx/ir/infer.hpp"

#include <algorithm>
#include <set>

namespace rlx::ir {

std::ostream& operator<<(std::ostream& os, NodeId id) { return os << '%' << id.index; }

namespace {
SourceLoc to_source_loc(const Loc& loc) {
  return SourceLoc{loc.file_name() ? std::string(loc.file_name()) : std::string(),
                   static_cast<uint32_t>(loc.line())};
}
} // namespace

void Graph::check_id(NodeId id, std::string_view what) const {
  if (id.index >= len())
    fail(ErrorKind::Value, what, ": node ", id, " is not in graph @", name, " (it has ", len(),
         " nodes)");
}

void Graph::check_stored(std::string_view what) const {
  if (sink_)
    fail(ErrorKind::Unsupported, what, ": graph @", name,
         " hands its nodes to a recorder (the graph rlx::apply gives builders); only len(), "
         "shape(id) and the builders work on it");
}

const Shape& Graph::sink_shape(NodeId id) const {
  check_id(id, "shape");
  return sink_->shape(id);
}

void Graph::truncate(std::size_t mark) {
  if (sink_)
    sink_->truncate(mark);
  else
    nodes_.erase(nodes_.begin() + std::ptrdiff_t(mark), nodes_.end());
}

const Node& Graph::node(NodeId id) const {
  check_stored("node");
  check_id(id, "node");
  return nodes_[id.index];
}

Node& Graph::node_mut(NodeId id) {
  check_stored("node_mut");
  check_id(id, "node_mut");
  return nodes_[id.index];
}

void Graph::set_outputs(std::vector<NodeId> outs) {
  for (NodeId id : outs) check_id(id, "set_outputs");
  outputs = std::move(outs);
}

void Graph::set_inputs(NodeId id, std::vector<NodeId> inputs) {
  check_stored("set_inputs");
  check_id(id, "set_inputs");
  for (NodeId in : inputs) check_id(in, "set_inputs");
  nodes_[id.index].inputs = std::move(inputs);
}

NodeId Graph::append_node(Op op, std::vector<NodeId> inputs, Shape shape,
                          std::optional<std::string> label, Loc loc) {
  std::string_view what = op.name();
  for (NodeId in : inputs) check_id(in, what);
  int arity = op_info(op.kind()).arity;
  if (arity >= 0 && std::size_t(arity) != inputs.size())
    fail(ErrorKind::Value, what, ": takes ", arity, " input", arity == 1 ? "" : "s", ", got ",
         inputs.size(), rlx::detail::at_loc(loc));
  if (arity < 0 && inputs.empty())
    fail(ErrorKind::Value, what, ": takes at least one input, got none", rlx::detail::at_loc(loc));
  if (sink_) return sink_->append(std::move(op), std::move(inputs), std::move(shape), loc);
  NodeId id(static_cast<uint32_t>(nodes_.size()));
  nodes_.push_back(Node{id, std::move(op), std::move(inputs), std::move(shape), std::move(label),
                        to_source_loc(loc)});
  return id;
}

NodeId Graph::add_node(Op op, std::vector<NodeId> inputs, Shape shape, Loc loc) {
  return append_node(std::move(op), std::move(inputs), std::move(shape), std::nullopt, loc);
}

std::vector<NodeId> Graph::users(NodeId id) const {
  std::vector<NodeId> out;
  for (const Node& n : nodes_)
    if (std::find(n.inputs.begin(), n.inputs.end(), id) != n.inputs.end()) out.push_back(n.id);
  return out;
}

std::size_t Graph::use_count(NodeId id) const {
  std::size_t count = 0;
  for (const Node& n : nodes_)
    count += std::size_t(std::count(n.inputs.begin(), n.inputs.end(), id));
  return count;
}

namespace {
/// The fed leaf named `name` of kind `kind`, or of either fed kind when kind is nullopt.
std::optional<NodeId> find_leaf(std::span<const Node> nodes, std::string_view name,
                                std::optional<OpKind> kind) {
  for (const Node& n : nodes) {
    if (!has_trait(n.op.kind(), kFed) || (kind && n.op.kind() != *kind)) continue;
    if (n.op.attrs<LeafAttrs>().name == name) return n.id;
  }
  return std::nullopt;
}
} // namespace

std::optional<NodeId> Graph::node_id_by_name(std::string_view n) const {
  return find_leaf(nodes_, n, std::nullopt);
}
std::optional<NodeId> Graph::input_id(std::string_view n) const {
  return find_leaf(nodes_, n, OpKind::Input);
}
std::optional<NodeId> Graph::param_id(std::string_view n) const {
  return find_leaf(nodes_, n, OpKind::Param);
}

std::vector<NodeId> Graph::topo_order() const {
  std::vector<NodeId> out;
  out.reserve(nodes_.size());
  for (const Node& n : nodes_) out.push_back(n.id);
  return out;
}

std::vector<NodeId> Graph::reverse_topo() const {
  std::vector<NodeId> out = topo_order();
  std::reverse(out.begin(), out.end());
  return out;
}

bool Graph::has_dynamic_dims() const {
  return std::any_of(nodes_.begin(), nodes_.end(),
                     [](const Node& n) { return !n.shape.is_static(); });
}

std::vector<uint32_t> Graph::dynamic_symbols() const {
  std::set<uint32_t> syms;
  for (const Node& n : nodes_)
    for (uint32_t s : n.shape.dynamic_symbols()) syms.insert(s);
  return {syms.begin(), syms.end()};
}

NodeId Graph::input(std::string n, Shape shape, Loc loc) {
  return append_node(Op(OpKind::Input, LeafAttrs{std::move(n)}), {}, std::move(shape), std::nullopt,
                     loc);
}

NodeId Graph::param(std::string n, Shape shape, Loc loc) {
  return append_node(Op(OpKind::Param, LeafAttrs{std::move(n)}), {}, std::move(shape), std::nullopt,
                     loc);
}

std::optional<Shape> Graph::infer_operands(const Op& op, const std::vector<NodeId>& inputs,
                                           std::vector<Shape>& shapes, const Loc& loc) const {
  shapes.clear();
  shapes.reserve(inputs.size());
  for (NodeId in : inputs) {
    if (in.index >= len())
      fail(ErrorKind::Value, op.name(), ": operand ", in, " is not in graph @", name,
           rlx::detail::at_loc(loc));
    shapes.push_back(sink_ ? sink_->shape(in) : nodes_[in.index].shape);
  }
  try {
    return infer_shape(op, shapes);
  } catch (const Error& e) {
    throw Error(e.kind(), e.what() + rlx::detail::at_loc(loc));
  }
}

NodeId Graph::build(Op op, std::vector<NodeId> inputs, const Shape& declared, const Loc& loc) {
  std::vector<Shape> shapes;
  std::optional<Shape> inferred = infer_operands(op, inputs, shapes, loc);
  if (inferred && !shapes_compatible(*inferred, declared)) {
    std::string operands;
    for (const Shape& s : shapes) operands += (operands.empty() ? "" : ", ") + short_str(s);
    fail(ErrorKind::Shape, op.name(), ": declared output ", short_str(declared), " does not match ",
         short_str(*inferred), " inferred from operands ", operands, rlx::detail::at_loc(loc));
  }
  return append_node(std::move(op), std::move(inputs), declared, std::nullopt, loc);
}

NodeId Graph::matmul(NodeId lhs, NodeId rhs, Shape out_shape, Loc loc) {
  return build(Op(OpKind::MatMul), {lhs, rhs}, out_shape, loc);
}

NodeId Graph::binary(BinaryOp op, NodeId lhs, NodeId rhs, Shape out_shape, Loc loc) {
  return build(Op(to_op_kind(op)), {lhs, rhs}, out_shape, loc);
}

NodeId Graph::activation(Activation act, NodeId input, Shape shape, Loc loc) {
  return build(Op(to_op_kind(act)), {input}, shape, loc);
}

} // namespace rlx::ir
