// src/passes/rewriter.hpp -- rebuilding a graph through an old -> new id map (shared by passes).
#pragma once

#include "rlx/interp.hpp"
#include "rlx/ir/graph.hpp"

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

namespace rlx::passes {

/// Copies a graph node by node into a fresh one. A pass visits the source nodes in order and,
/// for each, copies it (operands remapped), emits a replacement, or maps it to a node already in
/// the new graph. Nodes of the new graph keep the label and source location of the node they
/// stand for.
class Rewriter {
public:
  explicit Rewriter(const ir::Graph& src) : out_(src.name), src_(src), map_(src.len()) {}

  /// The new graph so far.
  const ir::Graph& out() const { return out_; }
  /// The new id of a source node already visited.
  ir::NodeId operator[](ir::NodeId old) const { return map_[old.index]; }
  /// n's operands, as ids of the new graph.
  std::vector<ir::NodeId> inputs_of(const ir::Node& n) const {
    std::vector<ir::NodeId> ins;
    ins.reserve(n.inputs.size());
    for (ir::NodeId id : n.inputs) ins.push_back(map_[id.index]);
    return ins;
  }

  /// Append n unchanged (operands remapped).
  ir::NodeId copy(const ir::Node& n) { return emit(n, n.op, inputs_of(n)); }

  /// Append `op(inputs)` with n's shape, label and source location, standing for n.
  ir::NodeId emit(const ir::Node& n, ir::Op op, std::vector<ir::NodeId> inputs) {
    ir::NodeId id = append(n, std::move(op), std::move(inputs), n.shape);
    out_.node_mut(id).name = n.name;
    map_[n.id.index] = id;
    return id;
  }

  /// Append a helper node for n's replacement (n's source location, no label, not mapped).
  ir::NodeId append(const ir::Node& n, ir::Op op, std::vector<ir::NodeId> inputs, ir::Shape shape) {
    ir::NodeId id =
        out_.append_node(std::move(op), std::move(inputs), std::move(shape), std::nullopt);
    out_.node_mut(id).loc = n.loc;
    return id;
  }

  /// n disappears: its users read `with` (a node of the new graph), which takes n's label when
  /// it has none.
  void replace(const ir::Node& n, ir::NodeId with) {
    ir::Node& survivor = out_.node_mut(with);
    if (!survivor.name) survivor.name = n.name;
    map_[n.id.index] = with;
  }

  /// The new graph, its outputs remapped.
  ir::Graph finish() {
    for (ir::NodeId o : src_.outputs) out_.outputs.push_back(map_[o.index]);
    return std::move(out_);
  }

private:
  ir::Graph out_;
  const ir::Graph& src_;
  std::vector<ir::NodeId> map_;
};

/// How many times each node is read (as an operand, or as an output of the graph): fusions fire
/// only where the values they absorb have no reader outside the pattern.
inline std::vector<std::size_t> read_counts(const ir::Graph& g) {
  std::vector<std::size_t> reads(g.len(), 0);
  for (const ir::Node& n : g.nodes())
    for (ir::NodeId in : n.inputs) ++reads[in.index];
  for (ir::NodeId o : g.outputs) ++reads[o.index];
  return reads;
}

/// The shape the fusions share. `match(n)`, called on every node in order, returns a match (a
/// struct with `absorbed`, the nodes that vanish into it, and `last`, the node its fused node
/// stands for) or nullopt; matches must not overlap. Then g is rebuilt: absorbed nodes go, and
/// `emit(rw, last_node, match)` appends each fused node in place of its `last` node, whose
/// label and source line it takes. Returns whether anything matched.
template <class Match, class MatchFn, class EmitFn>
bool fuse_matches(ir::Graph& g, MatchFn match, EmitFn emit) {
  std::vector<std::optional<Match>> ends(g.len());
  std::vector<uint8_t> absorbed(g.len(), 0);
  bool any = false;
  for (const ir::Node& n : g.nodes()) {
    std::optional<Match> m = match(n);
    if (!m) continue;
    for (ir::NodeId id : m->absorbed) absorbed[id.index] = 1;
    ir::NodeId last = m->last;
    ends[last.index] = std::move(m);
    any = true;
  }
  if (!any) return false;
  Rewriter rw(g);
  for (const ir::Node& n : g.nodes()) {
    if (absorbed[n.id.index]) continue;
    if (const std::optional<Match>& m = ends[n.id.index])
      emit(rw, n, *m);
    else
      rw.copy(n);
  }
  g = rw.finish();
  return true;
}

/// A Constant op holding the bytes of `value` (the node gets value's shape).
inline ir::Op constant_op(const Buffer& value) {
  auto bytes = value.bytes();
  std::vector<uint8_t> data(bytes.size());
  for (std::size_t i = 0; i < bytes.size(); ++i) data[i] = std::to_integer<uint8_t>(bytes[i]);
  return ir::Op(ir::OpKind::Constant, ir::ConstantAttrs{ir::Bytes{std::move(data)}});
}

/// The value of a Constant node; nullopt for any other node.
inline std::optional<Buffer> constant_value(const ir::Node& n) {
  if (n.op.kind() != ir::OpKind::Constant) return std::nullopt;
  return interp::eval_node(n, {});
}

} // namespace rlx::passes
