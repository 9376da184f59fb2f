// include/rlx/ir/graph.hpp -- Graph: the append-only DAG at the heart of rlx (the seed's API).
#pragma once

#include "rlx/error.hpp"
#include "rlx/ir/node.hpp"

#include <optional>
#include <ostream>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace rlx::ir {

/// A computation graph. Insertion order is topological order: every node's inputs have smaller
/// ids. Nodes have one output each. Method names and argument order follow the seed
/// (docs of rlx_ir::Graph); builders take a trailing source location so errors name the user's
/// line.
class Graph {
public:
  std::string name;
  std::vector<NodeId> outputs; ///< the graph's results

  explicit Graph(std::string name = "main") : name(std::move(name)) {}

  // ---- Core (seed order)
  std::size_t len() const { return nodes_.size(); }
  bool is_empty() const { return nodes_.empty(); }
  /// The node with this id; an rlx::Error when the id is not in the graph.
  const Node& node(NodeId id) const;
  std::span<const Node> nodes() const { return nodes_; }
  const Shape& shape(NodeId id) const { return node(id).shape; }
  void set_outputs(std::vector<NodeId> outputs);
  /// Rewire a node's inputs in place (no shape re-inference; the caller keeps shapes consistent).
  void set_inputs(NodeId id, std::vector<NodeId> inputs);
  Node& node_mut(NodeId id);
  std::span<Node> nodes_mut() { return nodes_; }
  NodeId append_node(Op op, std::vector<NodeId> inputs, Shape shape,
                     std::optional<std::string> name, Loc loc = Loc::current());
  std::vector<NodeId> users(NodeId id) const;
  std::size_t use_count(NodeId id) const;
  /// First Input or Param node with this name.
  std::optional<NodeId> node_id_by_name(std::string_view name) const;
  std::optional<NodeId> input_id(std::string_view name) const;
  std::optional<NodeId> param_id(std::string_view name) const;
  std::vector<NodeId> topo_order() const;
  std::vector<NodeId> reverse_topo() const;
  /// Annotated text dump: header with counts and bytes, names and output markers.
  std::string inspect() const;
  bool has_dynamic_dims() const;
  /// All symbols used by any node shape, sorted.
  std::vector<uint32_t> dynamic_symbols() const;
  /// Specialize symbolic dims to sizes. An rlx::Error (ErrorKind::Bind) when a symbol used by
  /// the graph is unbound, or when the sizes break a shape rule (e.g. add of ?a and ?b, a != b).
  Graph bind(const DimBinding& bindings) const;

  // ---- Leaves and generic construction
  NodeId input(std::string name, Shape shape, Loc loc = Loc::current());
  NodeId param(std::string name, Shape shape, Loc loc = Loc::current());
  NodeId add_node(Op op, std::vector<NodeId> inputs, Shape shape, Loc loc = Loc::current());

  // ---- Builders with explicit output shapes (the seed's primitive builders). Each checks its
  // operands and the declared shape against the op's shape rule and throws rlx::Error naming
  // the op, the shapes and the caller's line.
  NodeId matmul(NodeId lhs, NodeId rhs, Shape out_shape, Loc loc = Loc::current());
  NodeId binary(BinaryOp op, NodeId lhs, NodeId rhs, Shape out_shape, Loc loc = Loc::current());
  NodeId activation(Activation act, NodeId input, Shape shape, Loc loc = Loc::current());

  /// Deep structural equality: name, nodes (op, attributes, inputs, shape, label) and outputs.
  friend bool operator==(const Graph& a, const Graph& b) {
    return a.name == b.name && a.outputs == b.outputs && a.nodes_ == b.nodes_;
  }

private:
  /// Append a node built by a builder, after checking `declared` against the shape rule.
  NodeId build(Op op, std::vector<NodeId> inputs, const Shape& declared, const Loc& loc);
  void check_id(NodeId id, std::string_view what) const;

  std::vector<Node> nodes_;
};

/// The text IR (see docs/text_ir.md); parse(to_string(g)) == g.
std::ostream& operator<<(std::ostream& os, const Graph& g);

} // namespace rlx::ir
