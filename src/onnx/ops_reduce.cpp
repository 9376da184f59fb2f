// src/onnx/ops_reduce.cpp -- ONNX reductions (Reduce*, ArgMax/ArgMin), the softmax family
// (Softmax, LogSoftmax, Hardmax), CumSum and MeanVarianceNormalization.
#include "importer.hpp"

#include <numeric>

namespace rlx::onnx::detail {

using ir::DType;
using ir::NodeId;
using ir::Op;
using ir::OpKind;

namespace {

/// The axes of a Reduce* node (attribute, or operand 1 from ReduceSum 13 and opset 18), made
/// non-negative; nullopt when the node reduces nothing (noop_with_empty_axes).
std::optional<std::vector<int64_t>> reduce_axes(Ctx& c, bool axes_operand) {
  int64_t r = c.rank(0);
  std::vector<int64_t> axes;
  if (axes_operand) {
    if (c.has(1)) axes = c.need_ints(1, "axes");
  } else {
    axes = c.attr_ints("axes");
  }
  bool noop = c.attr_i("noop_with_empty_axes", 0) != 0;
  if (axes.empty()) {
    if (noop) return std::nullopt;
    axes.resize(std::size_t(r));
    std::iota(axes.begin(), axes.end(), int64_t(0));
  }
  for (int64_t& a : axes) a = c.axis(a, r);
  return axes;
}

enum class Pre { None, Abs, Square, Exp };
enum class Post { None, Sqrt, Log };

template <OpKind K, Pre P, Post Q, int AxesOperandSince> void reduce_rule(Ctx& c) {
  NodeId x = c.in(0);
  bool keep = c.attr_i("keepdims", 1) != 0;
  std::optional<std::vector<int64_t>> axes = reduce_axes(c, c.opset >= AxesOperandSince);
  if (!axes) return c.out(0, x);
  NodeId y = x;
  if constexpr (P == Pre::Abs) y = op1(c, OpKind::Abs, y);
  if constexpr (P == Pre::Square) y = op2(c, OpKind::Mul, y, y);
  if constexpr (P == Pre::Exp) {
    // log-sum-exp, shifted by the max for range
    NodeId m = reduce(c, OpKind::ReduceMax, x, *axes, true);
    NodeId s =
        reduce(c, OpKind::ReduceSum, op1(c, OpKind::Exp, op2(c, OpKind::Sub, x, m)), *axes, keep);
    NodeId mk =
        keep ? m : c.g.add_inferred(Op(OpKind::ReduceMax, ir::ReduceAttrs{*axes, false}), {x});
    return c.out(0, op2(c, OpKind::Add, op1(c, OpKind::Log, s), mk));
  }
  y = reduce(c, K, y, *axes, keep);
  if constexpr (Q == Post::Sqrt) y = op1(c, OpKind::Sqrt, y);
  if constexpr (Q == Post::Log) y = op1(c, OpKind::Log, y);
  c.out(0, y);
}

template <OpKind K> void arg_reduce(Ctx& c) {
  NodeId x = c.in(0);
  int64_t axis = c.axis(c.attr_i("axis", 0), c.rank(0));
  bool keep = c.attr_i("keepdims", 1) != 0;
  bool last = c.attr_i("select_last_index", 0) != 0;
  if (last) x = c.g.reverse(x, {axis});
  NodeId i = c.g.add_inferred(Op(K, ir::ArgReduceAttrs{axis, keep}), {x});
  if (last) {
    int64_t n = c.sizes(0)[std::size_t(axis)];
    i = op2(c, OpKind::Sub, like(c, i, double(n - 1)), i);
  }
  c.out(0, i);
}

/// x viewed as [prod(dims[:axis]), prod(dims[axis:])] (Softmax before opset 13), or x itself
/// when the axis is the last.
template <class F> void flattened(Ctx& c, int64_t axis, F&& body) {
  NodeId x = c.in(0);
  int64_t r = c.rank(0);
  if (c.opset >= 13 || axis == r - 1) return c.out(0, body(x, axis));
  std::vector<int64_t> dims = c.sizes(0);
  int64_t rows = 1, cols = 1;
  for (int64_t k = 0; k < r; ++k) (k < axis ? rows : cols) *= dims[std::size_t(k)];
  NodeId y = body(c.g.reshape_(x, {rows, cols}), 1);
  c.out(0, c.g.reshape_(y, dims));
}

int64_t softmax_axis(Ctx& c) { return c.axis(c.attr_i("axis", c.opset >= 13 ? -1 : 1), c.rank(0)); }

void softmax(Ctx& c) {
  flattened(c, softmax_axis(c), [&](NodeId x, int64_t a) { return c.g.sm(x, a); });
}

void log_softmax(Ctx& c) {
  flattened(c, softmax_axis(c), [&](NodeId x, int64_t a) {
    NodeId m = reduce(c, OpKind::ReduceMax, x, {a}, true);
    NodeId d = op2(c, OpKind::Sub, x, m);
    NodeId s = reduce(c, OpKind::ReduceSum, op1(c, OpKind::Exp, d), {a}, true);
    return op2(c, OpKind::Sub, d, op1(c, OpKind::Log, s));
  });
}

void hardmax(Ctx& c) {
  flattened(c, softmax_axis(c), [&](NodeId x, int64_t a) {
    ir::Shape s = c.g.shape(x);
    int64_t r = int64_t(s.rank());
    NodeId i = c.g.add_inferred(Op(OpKind::ArgMax, ir::ArgReduceAttrs{a, true}), {x});
    int64_t n = s.dims()[std::size_t(a)].size();
    c.check_materialized(n, "Hardmax's positions");
    std::vector<int64_t> iota(static_cast<std::size_t>(n));
    std::iota(iota.begin(), iota.end(), int64_t(0));
    std::vector<int64_t> dims(static_cast<std::size_t>(r), 1);
    dims[std::size_t(a)] = n;
    NodeId pos = c.constant(Buffer::from_i64(ir::Shape::of(dims, DType::I64), iota));
    return c.g.cast(op2(c, OpKind::Eq, pos, i), s.dtype());
  });
}

void cumsum(Ctx& c) {
  NodeId x = c.in(0);
  std::vector<int64_t> a = c.need_ints(1, "axis");
  if (a.size() != 1) fail(ErrorKind::Shape, "axis must hold one value");
  int64_t axis = c.axis(a[0], c.rank(0));
  bool exclusive = c.attr_i("exclusive", 0) != 0, reverse = c.attr_i("reverse", 0) != 0;
  if (reverse) x = c.g.reverse(x, {axis});
  NodeId y = c.g.cumsum(x, axis, exclusive, c.shape(0));
  if (reverse) y = c.g.reverse(y, {axis});
  c.out(0, y);
}

void mvn(Ctx& c) {
  NodeId x = c.in(0);
  std::vector<int64_t> axes = c.attr_ints("axes", {0, 2, 3});
  for (int64_t& a : axes) a = c.axis(a, c.rank(0));
  NodeId m = reduce(c, OpKind::ReduceMean, x, axes, true);
  NodeId d = op2(c, OpKind::Sub, x, m);
  NodeId v = reduce(c, OpKind::ReduceMean, op2(c, OpKind::Mul, d, d), axes, true);
  NodeId sd = op2(c, OpKind::Add, op1(c, OpKind::Sqrt, v), like(c, x, 1e-9));
  c.out(0, op2(c, OpKind::Div, d, sd));
}

} // namespace

void add_reduce_rules(Rules& r) {
  constexpr uint32_t kAxes = 1u << 1;
  r["ReduceSum"] = {reduce_rule<OpKind::ReduceSum, Pre::None, Post::None, 13>, 1, kAxes};
  r["ReduceMean"] = {reduce_rule<OpKind::ReduceMean, Pre::None, Post::None, 18>, 1, kAxes};
  r["ReduceMax"] = {reduce_rule<OpKind::ReduceMax, Pre::None, Post::None, 18>, 1, kAxes};
  r["ReduceMin"] = {reduce_rule<OpKind::ReduceMin, Pre::None, Post::None, 18>, 1, kAxes};
  r["ReduceProd"] = {reduce_rule<OpKind::ReduceProd, Pre::None, Post::None, 18>, 1, kAxes};
  r["ReduceL1"] = {reduce_rule<OpKind::ReduceSum, Pre::Abs, Post::None, 18>, 1, kAxes};
  r["ReduceL2"] = {reduce_rule<OpKind::ReduceSum, Pre::Square, Post::Sqrt, 18>, 1, kAxes};
  r["ReduceSumSquare"] = {reduce_rule<OpKind::ReduceSum, Pre::Square, Post::None, 18>, 1, kAxes};
  r["ReduceLogSum"] = {reduce_rule<OpKind::ReduceSum, Pre::None, Post::Log, 18>, 1, kAxes};
  r["ReduceLogSumExp"] = {reduce_rule<OpKind::ReduceSum, Pre::Exp, Post::None, 18>, 1, kAxes};
  r["ArgMax"] = {arg_reduce<OpKind::ArgMax>, 1};
  r["ArgMin"] = {arg_reduce<OpKind::ArgMin>, 1};
  r["Softmax"] = {softmax, 1};
  r["LogSoftmax"] = {log_softmax, 1};
  r["Hardmax"] = {hardmax, 1};
  r["CumSum"] = {cumsum, 11, 1u << 1};
  r["MeanVarianceNormalization"] = {mvn, 9};
}

} // namespace rlx::onnx::detail
