// src/ops/emitter.hpp -- appends primitive nodes with inferred shapes (used by decompositions).
#pragma once

#include "rlx/ir/graph.hpp"
#include "rlx/ir/infer.hpp"

#include <vector>

namespace rlx::ops {

class Emitter {
public:
  explicit Emitter(ir::Graph& g) : g_(g) {}
  ir::Graph& graph() { return g_; }
  const ir::Shape& shape(ir::NodeId id) const { return g_.shape(id); }

  /// Any op; the output shape comes from the op's shape rule.
  ir::NodeId op(ir::Op op, std::vector<ir::NodeId> inputs);
  ir::NodeId op(ir::OpKind k, std::vector<ir::NodeId> inputs) {
    return op(ir::Op(k), std::move(inputs));
  }
  /// A rank-0 constant of dtype t.
  ir::NodeId scalar(double v, ir::DType t);
  /// A constant tensor of `shape` from values.
  ir::NodeId tensor(const std::vector<double>& values, const ir::Shape& shape);

  ir::NodeId reduce(ir::OpKind k, ir::NodeId x, ir::Ints axes, bool keep_dim = true) {
    return op(ir::Op(k, ir::ReduceAttrs{std::move(axes), keep_dim}), {x});
  }
  ir::NodeId reshape(ir::NodeId x, ir::Ints dims) {
    return op(ir::Op(ir::OpKind::Reshape, ir::ReshapeAttrs{std::move(dims)}), {x});
  }
  ir::NodeId transpose(ir::NodeId x, ir::Ints perm) {
    return op(ir::Op(ir::OpKind::Transpose, ir::TransposeAttrs{std::move(perm)}), {x});
  }
  ir::NodeId narrow(ir::NodeId x, int64_t axis, int64_t start, int64_t len) {
    return op(ir::Op(ir::OpKind::Narrow, ir::NarrowAttrs{axis, start, len}), {x});
  }
  ir::NodeId concat(std::vector<ir::NodeId> xs, int64_t axis) {
    return op(ir::Op(ir::OpKind::Concat, ir::ConcatAttrs{axis}), std::move(xs));
  }
  ir::NodeId add(ir::NodeId a, ir::NodeId b) { return op(ir::OpKind::Add, {a, b}); }
  ir::NodeId sub(ir::NodeId a, ir::NodeId b) { return op(ir::OpKind::Sub, {a, b}); }
  ir::NodeId mul(ir::NodeId a, ir::NodeId b) { return op(ir::OpKind::Mul, {a, b}); }
  ir::NodeId div(ir::NodeId a, ir::NodeId b) { return op(ir::OpKind::Div, {a, b}); }
  /// A scan node (ops.def's Scan) running `body` `length` times: body's Inputs in id order are
  /// [carry, bcast..., x_t...] (x_t a row of xs_i [length, *per_step]) and its one output is the
  /// next carry. With `trajectory` the result stacks the carry after every step, [length,
  /// *carry]; otherwise it is the last carry.
  ir::NodeId scan(ir::NodeId init, std::vector<ir::NodeId> bcasts, std::vector<ir::NodeId> xs,
                  ir::Graph body, int64_t length, bool trajectory);

private:
  ir::Graph& g_;
};

} // namespace rlx::ops
