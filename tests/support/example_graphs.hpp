// tests/support/example_graphs.hpp -- graphs several suites build: RLX's example, a BERT QKV
// projection (the graph examples/bert_layer.cpp builds and prints).
#pragma once

#include <rlx/ir/graph.hpp>

namespace rlx::test {

/// hidden [4, 15, 384] @ qkv_weight [384, 1152] + qkv_bias [1152]: five nodes, one output.
inline ir::Graph bert_qkv_graph() {
  using ir::DType, ir::Shape;
  ir::Graph g("bert_layer");
  auto x = g.input("hidden", Shape({4, 15, 384}, DType::F32));
  auto w = g.param("qkv_weight", Shape({384, 1152}, DType::F32));
  auto b = g.param("qkv_bias", Shape({1152}, DType::F32));
  auto mm = g.matmul(x, w, Shape({4, 15, 1152}, DType::F32));
  auto qkv = g.binary(ir::BinaryOp::Add, mm, b, Shape({4, 15, 1152}, DType::F32));
  g.set_outputs({qkv});
  return g;
}

} // namespace rlx::test
