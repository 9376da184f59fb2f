// tests/support/all_ops.hpp -- a graph holding every op kind of the table (for round-trip tests).
#pragma once

#include <rlx/all.hpp>

#include <limits>

namespace rlx::test {

/// Every OpKind once with default attributes, then a set of nodes with non-default attributes of
/// every field type (lists, arrays, optionals, enums, floats incl. infinities, bytes, strings,
/// dynamic dims, labels). Shapes are not meant to be consistent: this exercises serialization.
inline ir::Graph all_ops_graph() {
  using namespace ir;
  Graph g("all_ops");
  NodeId a =
      g.input("a", Shape({Dim::dynamic(sym::kBatch), 3, Dim::dynamic("all_ops_sym")}, DType::F32));
  NodeId b = g.param("b \"quoted\" \\ name\n\tu\u00e9\u4e2d", Shape({3}, DType::F16));
  NodeId c = g.input("c", Shape::scalar(DType::Bool));
  std::vector<NodeId> pool{a, b, c};
  for (std::size_t k = 0; k < kNumOps; ++k) {
    OpKind kind = static_cast<OpKind>(k);
    int arity = op_info(kind).arity;
    std::size_t n = arity < 0 ? 2 : std::size_t(arity);
    std::vector<NodeId> ins;
    for (std::size_t i = 0; i < n; ++i) ins.push_back(pool[(k + i) % pool.size()]);
    DType t = static_cast<DType>(k % kNumDTypes);
    NodeId id = g.add_node(Op(kind), ins, Shape({int64_t(k % 5), 2}, t));
    pool.push_back(id);
  }
  auto add = [&](OpKind kind, auto attrs, std::vector<NodeId> ins) {
    return g.add_node(Op(kind, attrs), std::move(ins), Shape({2, 3}, DType::F64));
  };
  add(OpKind::Constant, ConstantAttrs{Bytes{{0x00, 0x00, 0x80, 0x3f, 0xff, 0x7f}}}, {});
  add(OpKind::Cast, CastAttrs{DType::BF16}, {a});
  add(OpKind::LeakyRelu, LeakyReluAttrs{0.2f}, {a});
  add(OpKind::Clamp, ClampAttrs{-std::numeric_limits<double>::infinity(), 6.5}, {a});
  add(OpKind::Clamp, ClampAttrs{-1e300, 1e-300}, {a});
  add(OpKind::ReduceSum, ReduceAttrs{{0, -1}, true}, {a});
  add(OpKind::ArgMax, ArgReduceAttrs{2, true}, {a});
  add(OpKind::Random,
      RandomAttrs{RandomDist::FoldIn, {3, 0}, DType::I64, -0.5, 1e300, -7, int64_t(1) << 40}, {c});
  add(OpKind::Sample, SampleAttrs{40, 0.95f, 0.7f, -3}, {a, c});
  add(OpKind::Cumsum, CumsumAttrs{0, true}, {a});
  add(OpKind::Reshape, ReshapeAttrs{{6, -1}}, {a});
  add(OpKind::Transpose, TransposeAttrs{{2, 0, 1}}, {a});
  add(OpKind::Slice, SliceAttrs{1, 1, 2, -2}, {a});
  add(OpKind::Pad, PadAttrs{{1, 2, 0, 0}, PadMode::Reflect, 0.5}, {a});
  add(OpKind::FusedMatMulBiasAct, FusedMatMulAttrs{Activation::GeluApprox}, {a, b, c});
  add(OpKind::LayerNorm, NormAttrs{-1, 1e-12f}, {a, b, c});
  add(OpKind::Attention, AttentionAttrs{12, 64, MaskType::SlidingWindow, 128, 0.125f, 50.0f},
      {a, b, c});
  add(OpKind::Rope, RopeAttrs{64, 32, RopeStyle::GptJ}, {a, b, c});
  add(OpKind::Conv2d, Conv2dAttrs{{3, 5}, {2, 1}, {1, 2}, {1, 3}, 4}, {a, b});
  add(OpKind::ConvTranspose3d, ConvTranspose3dAttrs{{2, 2, 2}, {1, 0, 1}, {1, 1, 2}, {1, 0, 0}, 2},
      {a, b});
  { // custom_fn with nested bodies: a symbolic fwd_body calling a custom_fn, and a vjp_body
    Graph inner("inner");
    NodeId u = inner.input("u", Shape({Dim::dynamic("n")}, DType::F32));
    inner.set_outputs({inner.add_node(Op(OpKind::Exp), {u}, inner.shape(u))});
    Graph fwd("fwd \"body\"");
    NodeId x = fwd.input("x", Shape({Dim::dynamic("n")}, DType::F32));
    CustomFnAttrs call{SubGraph(inner), std::nullopt, std::nullopt, 1};
    fwd.set_outputs({fwd.add_node(Op(OpKind::CustomFn, call), {x}, fwd.shape(x))});
    Graph vjp("vjp");
    vjp.input("x", Shape({3}, DType::F32));
    vjp.input("primal_output", Shape({3}, DType::F32));
    NodeId d = vjp.input("d_output", Shape({3}, DType::F32));
    vjp.set_outputs({d, d});
    add(OpKind::CustomFn, CustomFnAttrs{SubGraph(fwd), SubGraph(vjp), std::nullopt, 1}, {a});
  }
  NodeId labeled = g.append_node(Op(OpKind::Relu), {a}, Shape({Dim::dynamic(42u)}, DType::F32),
                                 std::string("relu \"label\""));
  g.set_outputs({labeled, a, labeled});
  return g;
}

} // namespace rlx::test
