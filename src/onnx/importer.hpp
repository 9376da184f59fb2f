// src/onnx/importer.hpp -- what an op rule sees while the importer maps one ONNX node: its
// operands (graph values, or values known at load time), its attributes, and the graph.
#pragma once

#include "model_def.hpp"

#include "rlx/error.hpp"
#include "rlx/ir/graph.hpp"

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace rlx::onnx::detail {

class Importer;

/// A formal input of a body (a Scan or Loop's body graph): the shape rlx gives it and, when known
/// at load time, its value (the body folds what depends only on known values).
struct Formal {
  ir::Shape shape;
  std::optional<Buffer> value;
};

/// A body imported as a graph of its own: one Input per formal (in order), then one Input per
/// outer value the body reads (`captures`, in order of first use), and the body's outputs.
struct Body {
  ir::Graph graph{"body"};
  std::vector<ir::NodeId> inputs;            ///< the formals' Inputs
  std::vector<ir::NodeId> outputs;           ///< the body's outputs, in ONNX order
  std::vector<std::optional<Buffer>> values; ///< each output's value when known at load time
  std::vector<std::string> captures;         ///< outer names the body reads
  std::vector<ir::NodeId> capture_inputs;    ///< their Inputs
};

/// One node being mapped. Operand accessors create the graph values they need (a Param for an
/// initializer); attribute accessors record what the rule read, and the importer rejects a node
/// carrying an attribute its rule never read.
class Ctx {
public:
  Ctx(Importer& imp, ir::Graph& g, const NodeDef& node, int64_t opset)
      : g(g), node(node), opset(opset), imp_(imp) {}
  Ctx(const Ctx&) = delete;
  Ctx& operator=(const Ctx&) = delete;

  ir::Graph& g;
  const NodeDef& node;
  const int64_t opset; ///< the default domain's opset the model declares

  // ---- Operands
  std::size_t num_inputs() const { return node.inputs.size(); }
  /// Whether operand i is given (present and not the empty name).
  bool has(std::size_t i) const { return i < node.inputs.size() && !node.inputs[i].empty(); }
  /// Operand i as a graph value; an error naming the operand when it is missing.
  ir::NodeId in(std::size_t i);
  const ir::Shape& shape(std::size_t i) { return g.shape(in(i)); }
  int64_t rank(std::size_t i) { return int64_t(shape(i).rank()); }
  ir::DType dtype(std::size_t i) { return shape(i).dtype(); }
  /// The static sizes of operand i; Unsupported naming the op when a dim is dynamic.
  std::vector<int64_t> sizes(std::size_t i);
  /// Operand i's value when it is known at load time (an initializer, a Constant node, a
  /// LoadOptions value, or computed from those).
  std::optional<Buffer> value(std::size_t i);
  /// Operand i's value, which rlx needs as an attribute; Unsupported saying so when it is only
  /// known at run time.
  Buffer need(std::size_t i, std::string_view role);
  std::vector<int64_t> need_ints(std::size_t i, std::string_view role);
  double need_scalar(std::size_t i, std::string_view role);

  // ---- Attributes (read ones are marked used)
  bool has_attr(std::string_view name) const { return node.attrs.contains(name); }
  int64_t attr_i(std::string_view name, int64_t def);
  float attr_f(std::string_view name, float def);
  std::string attr_s(std::string_view name, std::string def);
  std::vector<int64_t> attr_ints(std::string_view name, std::vector<int64_t> def = {});
  std::vector<float> attr_floats(std::string_view name);
  std::optional<Buffer> attr_tensor(std::string_view name);
  /// The graph of a graph-valued attribute; Parse error when it is missing or of another type.
  const GraphDef& attr_graph(std::string_view name);
  /// Import `body` (a graph attribute of this node) with these formal inputs; errors name the
  /// body's node. Each call counts against the model's budget of imported nodes.
  Body body(const GraphDef& body, const std::vector<Formal>& formals);
  /// The value named `name` in this node's scope (an operand, or a value a body captured).
  ir::NodeId named(const std::string& name);

  /// Accept an attribute without reading it (one with no effect on inference).
  void ignore(std::string_view name) { used_.insert(std::string(name)); }
  const std::set<std::string, std::less<>>& used() const { return used_; }

  // ---- Results
  std::size_t num_outputs() const { return node.outputs.size(); }
  bool wants(std::size_t i) const { return i < node.outputs.size() && !node.outputs[i].empty(); }
  void out(std::size_t i, ir::NodeId id);

  // ---- Helpers for rules
  /// A constant node holding `value` (any shape; f16/bf16 through an f32 constant and a cast).
  ir::NodeId constant(const Buffer& value);
  ir::NodeId scalar(double v, ir::DType dtype) { return g.constant(v, dtype); }
  /// Axis `a` of a rank-`r` tensor, made non-negative; Value error when out of range.
  int64_t axis(int64_t a, int64_t r) const;
  /// Unsupported when a tensor the importer itself would fill (a mask, an index table) has more
  /// than 2^24 elements, so a hostile file cannot make it allocate without bound.
  void check_materialized(int64_t elements, std::string_view what) const;
  [[noreturn]] void unsupported(const std::string& what) const;

private:
  Importer& imp_;
  std::set<std::string, std::less<>> used_;
  const Attr* find_attr(std::string_view name, Attr::Kind kind);
};

using Rule = void (*)(Ctx&);

/// One ONNX op type: its rule, the first opset version it is mapped at, and the operands rlx
/// reads at load time (bit i: operand i), so a graph input used only there needs no Input node.
struct RuleEntry {
  Rule rule = nullptr;
  int64_t since = 1;
  uint32_t static_operands = 0;
};
using Rules = std::map<std::string, RuleEntry, std::less<>>;

void add_elementwise_rules(Rules& r);
void add_reduce_rules(Rules& r);
void add_movement_rules(Rules& r);
void add_nn_rules(Rules& r);
void add_resize_rules(Rules& r);
void add_recurrent_rules(Rules& r);
void add_control_rules(Rules& r);

/// All rules, built once.
const Rules& rules();

// ---- Small graph helpers the rule files share.
inline ir::NodeId op1(Ctx& c, ir::OpKind k, ir::NodeId x) {
  return c.g.add_inferred(ir::Op(k), {x});
}
inline ir::NodeId op2(Ctx& c, ir::OpKind k, ir::NodeId a, ir::NodeId b) {
  return c.g.add_inferred(ir::Op(k), {a, b});
}
/// A scalar constant of x's dtype.
inline ir::NodeId like(Ctx& c, ir::NodeId x, double v) { return c.scalar(v, c.g.shape(x).dtype()); }
inline ir::NodeId reduce(Ctx& c, ir::OpKind k, ir::NodeId x, std::vector<int64_t> axes, bool keep) {
  return c.g.add_inferred(ir::Op(k, ir::ReduceAttrs{std::move(axes), keep}), {x});
}

/// Decode a buffer of the node's operand as int64 values.
std::vector<int64_t> to_ints(const Buffer& b);

} // namespace rlx::onnx::detail
