// tests/support/hot_chain.hpp -- the element-wise graph the tiers' tests run until it is hot
// (tests/test_tiers.cpp in one process, tests/cache_child.cpp across two).
#pragma once

#include <rlx/all.hpp>

#include <cstdint>

namespace rlx::test {

/// tanh(0.5x+0.1)*sigmoid(x) + x^2 and more over f32[n]: a body well over the fast code
/// generator's threshold, so it is compiled first by the fast code generator, then by the full
/// one once it has computed 2^23 elements (jit/steps.cpp).
inline ir::Graph hot_chain(int64_t n) {
  ir::Graph g;
  ir::NodeId x = g.input("x", ir::Shape({n}, ir::DType::F32));
  auto c = [&](double v) { return g.constant(v, ir::DType::F32); };
  auto sigmoid = [&](ir::NodeId v) { return g.activation(ir::Activation::Sigmoid, v, g.shape(v)); };
  ir::NodeId a = g.tanh(g.add(g.mul(x, c(0.5)), c(0.1)));
  ir::NodeId y = g.add(g.mul(a, sigmoid(x)), g.mul(x, x));
  ir::NodeId z = g.mul(g.exp(g.neg(g.mul(y, y))), g.tanh(g.sub(y, c(0.25))));
  g.set_outputs({g.add(z, sigmoid(g.mul(z, c(3.0))))});
  return g;
}

/// Its input: f32[n] from -4 up to (not reaching) 4.
inline Buffer hot_chain_input(int64_t n) {
  Buffer b = Buffer::uninitialized(ir::Shape({n}, ir::DType::F32));
  float* p = reinterpret_cast<float*>(b.bytes().data());
  for (int64_t i = 0; i < n; ++i) p[i] = -4.0f + 8.0f * float(i) / float(n);
  return b;
}

} // namespace rlx::test
