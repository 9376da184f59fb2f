// src/autodiff/vmap.cpp -- vmap: batch a graph over a new leading axis. Ops with a batching rule
// are rewritten once on the batched values (axes shifted by one, operands aligned); every other
// op runs once per batch element (narrow, op, concat), which is always correct.
#include "builder.hpp"
#include "custom.hpp"
#include "rlx/autodiff.hpp"

#include <algorithm>
#include <array>

namespace rlx::autodiff {

namespace {

using ir::Family;

/// How a kind is batched natively.
enum class Batch : uint8_t {
  Loop,        ///< once per batch element
  Elementwise, ///< operands aligned to the output's rank + 1
  Axes,        ///< ReduceAttrs axes shift by one
  Axis,        ///< one axis attribute shifts by one (arg*, cumsum, softmax, movement, gather)
  Reshape,
  Transpose,
  Expand,
  Pad,
  MatMul,
  Leading, ///< every operand batched over its leading axes (the Linalg family)
  Hook,    ///< a custom op's registered vmap hook, else Loop
};

struct BatchEntry {
  OpKind kind;
  Batch how;
};

constexpr BatchEntry kBatch[] = {
    {OpKind::ReduceSum, Batch::Axes},
    {OpKind::ReduceMean, Batch::Axes},
    {OpKind::ReduceMax, Batch::Axes},
    {OpKind::ReduceMin, Batch::Axes},
    {OpKind::ReduceProd, Batch::Axes},
    {OpKind::ArgMax, Batch::Axis},
    {OpKind::ArgMin, Batch::Axis},
    {OpKind::Cumsum, Batch::Axis},
    {OpKind::Softmax, Batch::Axis},
    {OpKind::Reshape, Batch::Reshape},
    {OpKind::Transpose, Batch::Transpose},
    {OpKind::Narrow, Batch::Axis},
    {OpKind::Slice, Batch::Axis},
    {OpKind::Concat, Batch::Axis},
    {OpKind::Expand, Batch::Expand},
    {OpKind::Reverse, Batch::Axes},
    {OpKind::Pad, Batch::Pad},
    {OpKind::Gather, Batch::Axis},
    {OpKind::MatMul, Batch::MatMul},
    {OpKind::Custom, Batch::Hook},
};

const std::array<Batch, ir::kNumOps> kBatchIndex = [] {
  std::array<Batch, ir::kNumOps> idx{};
  for (std::size_t i = 0; i < ir::kNumOps; ++i) {
    Family f = ir::op_family(OpKind(i));
    bool ew = f == Family::EwUnary || f == Family::EwBinary || f == Family::EwTernary;
    idx[i] = ew ? Batch::Elementwise : f == Family::Linalg ? Batch::Leading : Batch::Loop;
  }
  for (const BatchEntry& e : kBatch) idx[std::size_t(e.kind)] = e.how;
  return idx;
}();

Ints dims_of(const Shape& s) {
  Ints d;
  for (const ir::Dim& x : s.dims()) d.push_back(x.size());
  return d;
}

/// The op with its axis attribute(s) moved one to the right (for an operand of rank `rank`
/// before batching).
ir::Op shift_axes(const ir::Op& op, int64_t rank) {
  ir::Op o = op;
  auto shift = [&](int64_t a) { return norm_axis(a, rank) + 1; };
  std::visit(
      [&](auto& a) {
        using A = std::decay_t<decltype(a)>;
        if constexpr (std::is_same_v<A, ir::ReduceAttrs> || std::is_same_v<A, ir::ReverseAttrs>) {
          for (int64_t& ax : a.axes) ax = shift(ax);
        } else if constexpr (requires { a.axis.has_value(); }) { // per tensor or per channel
          if (a.axis) a.axis = shift(*a.axis);
        } else if constexpr (requires { a.axis; }) {
          a.axis = shift(a.axis);
        }
      },
      o.any_attrs());
  return o;
}

class Vmap {
public:
  Vmap(const ir::Graph& f, int64_t batch) : f_(f), g_(f.name), b_(g_), batch_(batch) {}

  ir::Graph run(std::span<const std::string> batched) {
    for (const Node& n : f_.nodes()) {
      if (n.op.kind() == OpKind::Input &&
          std::find(batched.begin(), batched.end(), n.op.attrs<ir::LeafAttrs>().name) !=
              batched.end()) {
        Ints d = dims_of(n.shape);
        d.insert(d.begin(), batch_);
        map_.push_back(g_.input(n.op.attrs<ir::LeafAttrs>().name, Shape::of(d, n.shape.dtype())));
        is_b_.push_back(1);
        continue;
      }
      std::vector<NodeId> ins;
      bool any = false;
      for (NodeId i : n.inputs) {
        ins.push_back(map_[i.index]);
        any |= is_b_[i.index] != 0;
      }
      if (!any) {
        NodeId id = g_.append_node(n.op, std::move(ins), n.shape, n.name);
        g_.node_mut(id).loc = n.loc;
        map_.push_back(id);
        is_b_.push_back(0);
        continue;
      }
      map_.push_back(batched_node(n, ins));
      is_b_.push_back(1);
    }
    std::vector<NodeId> outs;
    for (NodeId o : f_.outputs) {
      NodeId v = map_[o.index];
      if (!is_b_[o.index]) { // shared: the same value for every batch element
        Ints d = dims_of(f_.shape(o));
        d.insert(d.begin(), batch_);
        v = b_.expand_to(v, Shape::of(d, f_.shape(o).dtype()));
      }
      outs.push_back(v);
    }
    g_.set_outputs(std::move(outs));
    return std::move(g_);
  }

private:
  bool batched(const Node& n, std::size_t i) const { return is_b_[n.inputs[i].index] != 0; }
  int64_t orig_rank(const Node& n, std::size_t i) const {
    return int64_t(f_.shape(n.inputs[i]).rank());
  }
  /// A batched operand [B, *s] reshaped to rank r + 1 by size-1 axes after the batch axis.
  NodeId align(NodeId v, int64_t r) {
    Ints d = b_.sizes(v);
    while (int64_t(d.size()) < r + 1) d.insert(d.begin() + 1, 1);
    return d.size() == b_.sizes(v).size() ? v : b_.reshape(v, d);
  }
  /// An unbatched operand repeated along a new leading batch axis.
  NodeId broadcast(NodeId v) {
    Ints d = b_.sizes(v);
    d.insert(d.begin(), 1);
    NodeId r = b_.reshape(v, d);
    d[0] = batch_;
    return b_.expand_to(r, Shape::of(d, b_.shape(v).dtype()));
  }

  NodeId batched_node(const Node& n, std::vector<NodeId> ins) {
    const int64_t r0 = orig_rank(n, 0);
    Batch how = kBatchIndex[std::size_t(n.op.kind())];
    if (how == Batch::Elementwise) {
      int64_t r = int64_t(n.shape.rank());
      for (std::size_t i = 0; i < ins.size(); ++i)
        if (batched(n, i)) ins[i] = align(ins[i], r);
      return b_.op(n.op, ins);
    }
    if (how == Batch::Axes || how == Batch::Axis) {
      if (n.op.kind() == OpKind::Concat) { // shared parts are repeated along the batch
        for (std::size_t i = 0; i < ins.size(); ++i)
          if (!batched(n, i)) ins[i] = broadcast(ins[i]);
        return b_.op(shift_axes(n.op, r0), ins);
      }
      if (batched(n, 0) && (ins.size() == 1 || !batched(n, 1))) // gather: shared indices
        return b_.op(shift_axes(n.op, r0), ins);
    }
    if (how == Batch::Reshape) {
      Ints ns = n.op.attrs<ir::ReshapeAttrs>().new_shape;
      ns.insert(ns.begin(), batch_);
      return b_.reshape(ins[0], ns);
    }
    if (how == Batch::Transpose) {
      Ints p{0};
      for (int64_t a : n.op.attrs<ir::TransposeAttrs>().perm) p.push_back(a + 1);
      return b_.transpose(ins[0], p);
    }
    if (how == Batch::Expand) {
      Ints t = n.op.attrs<ir::ExpandAttrs>().target_shape;
      NodeId x = align(ins[0], int64_t(t.size()));
      t.insert(t.begin(), batch_);
      return b_.op(ir::Op(OpKind::Expand, ir::ExpandAttrs{t}), {x});
    }
    if (how == Batch::Pad) {
      ir::PadAttrs a = n.op.attrs<ir::PadAttrs>();
      a.pads.insert(a.pads.begin(), {0, 0});
      return b_.op(ir::Op(OpKind::Pad, a), {ins[0]});
    }
    if (how == Batch::MatMul && orig_rank(n, 0) >= 2 && orig_rank(n, 1) >= 2) {
      int64_t r = std::max(orig_rank(n, 0), orig_rank(n, 1));
      for (std::size_t i = 0; i < 2; ++i)
        if (batched(n, i)) ins[i] = align(ins[i], r);
      return b_.op(n.op, ins);
    }
    if (how == Batch::Leading) { // the batch becomes one more leading axis of every operand
      for (std::size_t i = 0; i < ins.size(); ++i)
        if (!batched(n, i)) ins[i] = broadcast(ins[i]);
      return b_.op(n.op, ins);
    }
    if (how == Batch::Hook) {
      std::vector<bool> flags(ins.size());
      for (std::size_t i = 0; i < ins.size(); ++i) flags[i] = batched(n, i);
      if (std::optional<NodeId> y = vmap_custom_op(b_, n, ins, flags, batch_)) return *y;
    }
    return loop(n, ins);
  }

  /// The op once per batch element, results stacked.
  NodeId loop(const Node& n, const std::vector<NodeId>& ins) {
    std::vector<NodeId> parts;
    for (int64_t k = 0; k < batch_; ++k) {
      std::vector<NodeId> one;
      for (std::size_t i = 0; i < ins.size(); ++i) {
        if (!batched(n, i)) {
          one.push_back(ins[i]);
          continue;
        }
        one.push_back(b_.reshape(b_.narrow(ins[i], 0, k, 1), dims_of(f_.shape(n.inputs[i]))));
      }
      NodeId y = b_.op(n.op, one);
      Ints d = dims_of(n.shape);
      d.insert(d.begin(), 1);
      parts.push_back(b_.reshape(y, d));
    }
    return parts.size() == 1 ? parts[0] : b_.concat(parts, 0);
  }

  const ir::Graph& f_;
  ir::Graph g_;
  Builder b_;
  int64_t batch_;
  std::vector<NodeId> map_;
  std::vector<char> is_b_;
};

} // namespace

bool has_batching_rule(OpKind k) {
  // A custom op's hook is per registration, not per kind: the kind itself loops.
  Batch how = kBatchIndex[std::size_t(k)];
  return how != Batch::Loop && how != Batch::Hook && !ir::has_trait(k, ir::kLeaf);
}

ir::Graph vmap(const ir::Graph& forward, std::span<const std::string> batched_inputs,
               int64_t batch_size) {
  if (batch_size < 1)
    fail(ErrorKind::Value, "vmap: batch_size must be at least 1, got ", batch_size);
  for (const std::string& name : batched_inputs)
    if (!forward.input_id(name))
      fail(ErrorKind::Value, "vmap: graph \"", forward.name, "\" has no Input named \"", name,
           "\"");
  if (!forward.is_empty() && forward.has_dynamic_dims())
    fail(ErrorKind::Shape, "vmap: graph \"", forward.name, "\" has dynamic dims; bind it first");
  return Vmap(forward, batch_size).run(batched_inputs);
}
ir::Graph vmap(const ir::Graph& forward, std::initializer_list<std::string> batched_inputs,
               int64_t batch_size) {
  return vmap(forward, std::span<const std::string>(batched_inputs.begin(), batched_inputs.size()),
              batch_size);
}

} // namespace rlx::autodiff
