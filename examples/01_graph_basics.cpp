// examples/01_graph_basics.cpp -- lesson 1: build a graph, print it, parse it back, bind its
// dynamic batch, verify it and write its JSON (the README's "A first graph"); then compile it and
// run it three ways: into new buffers, into the caller's, and as a call bound once.
#include <rlx/error.hpp>
#include <rlx/ir/graph.hpp>
#include <rlx/ir/json.hpp>
#include <rlx/ir/text.hpp>
#include <rlx/ir/verify.hpp>
#include <rlx/runtime.hpp>

#include <iostream>
#include <vector>

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

  // Run the bound graph on the JIT: run() returns new buffers; run_into() writes into buffers
  // the caller allocated; bind() checks them once and its run() goes straight to the kernels.
  auto exe = rlx::compile(fixed, rlx::Backend::Jit);
  std::vector<float> xs(32 * 784), ws(784 * 128);
  for (std::size_t i = 0; i < xs.size(); ++i) xs[i] = float(i % 13) * 0.01f - 0.05f;
  for (std::size_t i = 0; i < ws.size(); ++i) ws[i] = float(i % 7) * 0.02f - 0.06f;
  rlx::Buffer xb = rlx::Buffer::f32({32, 784}, xs), wb = rlx::Buffer::f32({784, 128}, ws);
  std::vector<rlx::Buffer> fresh = exe->run(std::vector<const rlx::Buffer*>{&xb, &wb});
  rlx::Buffer into = rlx::Buffer::uninitialized(fixed.shape(fixed.outputs[0]));
  exe->run_into({&xb, &wb}, {&into});
  rlx::Buffer bound_out = rlx::Buffer::uninitialized(fixed.shape(fixed.outputs[0]));
  auto call = exe->bind({&xb, &wb}, {&bound_out});
  call->run();
  bool same_runs = fresh[0] == into && into == bound_out;
  std::cout << "\nrun, run_into and a bound call agree: " << (same_runs ? "yes" : "NO") << "\n";
  ok = ok && same_runs;

  try { // shape errors name the op, the shapes and this line
    Graph scratch = g;
    auto bad = scratch.input("y", Shape({2, 3}, DType::F32));
    scratch.matmul(bad, w, Shape({2, 128}, DType::F32));
  } catch (const rlx::Error& e) {
    std::cout << "\nerror, as expected: " << e.what() << "\n";
  }
  return ok ? 0 : 1;
}
