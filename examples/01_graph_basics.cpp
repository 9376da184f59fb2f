// examples/01_graph_basics.cpp -- lesson 1: build a graph, print it, parse it back, bind its
// dynamic batch, verify it and write its JSON (the README's "A first graph").
#include <rlx/error.hpp>
#include <rlx/ir/graph.hpp>
#include <rlx/ir/json.hpp>
#include <rlx/ir/text.hpp>
#include <rlx/ir/verify.hpp>

#include <iostream>

using namespace rlx::ir;

int main() {
  Graph g("mlp");
  auto x = g.input("x", Shape({Dim::dynamic(sym::kBatch), 784}, DType::F32));
  auto w = g.param("w", Shape({784, 128}, DType::F32));
  auto h = g.matmul(x, w, Shape({Dim::dynamic(sym::kBatch), 128}, DType::F32));
  g.set_outputs({g.activation(Activation::Relu, h, g.shape(h))});

  std::string text = to_text(g);
  Graph same = parse_text(text);
  Graph fixed = g.bind(DimBinding::batch_seq(32, 1));
  verify(fixed);
  std::string json = to_json(fixed);
  bool ok = same == g && from_json(json) == fixed;

  std::cout << text << "parses back: " << (same == g ? "yes" : "NO") << "\n\n" << fixed.inspect();
  std::cout << "\njson: " << json.size()
            << " bytes, reads back: " << (from_json(json) == fixed ? "yes" : "NO") << "\n";

  try { // shape errors name the op, the shapes and this line
    Graph scratch = g;
    auto bad = scratch.input("y", Shape({2, 3}, DType::F32));
    scratch.matmul(bad, w, Shape({2, 128}, DType::F32));
  } catch (const rlx::Error& e) {
    std::cout << "\nerror, as expected: " << e.what() << "\n";
  }
  return ok ? 0 : 1;
}
