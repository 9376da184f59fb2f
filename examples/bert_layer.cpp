// examples/bert_layer.cpp -- RLX's example: a BERT QKV projection, built and printed.
#include <rlx/ir/graph.hpp>

#include <cassert>
#include <iostream>

using namespace rlx::ir;

int main() {
  Graph g("bert_layer");
  auto x = g.input("hidden", Shape({4, 15, 384}, DType::F32));
  auto w = g.param("qkv_weight", Shape({384, 1152}, DType::F32));
  auto b = g.param("qkv_bias", Shape({1152}, DType::F32));
  auto mm = g.matmul(x, w, Shape({4, 15, 1152}, DType::F32));
  auto qkv = g.binary(BinaryOp::Add, mm, b, Shape({4, 15, 1152}, DType::F32));
  g.set_outputs({qkv});
  assert(g.len() == 5);
  std::cout << g;
}
