// tests/test_conv_gemm.cpp -- f32 convolutions on the JIT run as im2col and the generated GEMM
// (passes::conv_as_matmul, run by rlx::compile for the JIT), and compute what the interpreter's
// direct convolution computes: padding, strides, dilations, batches, 1x1 kernels, odd sizes.
#include <rlx/all.hpp>

#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

using namespace rlx;

namespace {

struct ConvCase {
  std::vector<int64_t> x, w; // [N, C, H, W], [O, C, kH, kW]
  ir::Ints2 stride{1, 1}, padding{0, 0}, dilation{1, 1};
};

ir::Graph conv_graph(const ConvCase& c) {
  ir::Graph g("conv");
  ir::NodeId x = g.input("x", ir::Shape::of(c.x, ir::DType::F32));
  ir::NodeId w = g.input("w", ir::Shape::of(c.w, ir::DType::F32));
  g.set_outputs({g.conv2d(x, w, {c.w[2], c.w[3]}, c.stride, c.padding, c.dilation, 1)});
  return g;
}

Buffer values(const std::vector<int64_t>& dims, double phase, bool absolute) {
  Buffer b(ir::Shape::of(dims, ir::DType::F32));
  for (int64_t i = 0; i < b.numel(); ++i) {
    double v = std::sin(0.37 * double(i) + phase) * 2.0;
    b.set_f64(i, absolute ? std::abs(v) : v);
  }
  return b;
}

} // namespace

TEST_CASE("conv on the JIT: f32 convolutions run on the GEMM and match the interpreter") {
  REQUIRE(backend_available(Backend::Jit));
  const std::vector<ConvCase> cases = {
      {{1, 3, 8, 8}, {4, 3, 3, 3}, {1, 1}, {1, 1}},
      {{2, 3, 7, 9}, {5, 3, 3, 2}, {2, 1}, {1, 0}, {1, 2}},
      {{3, 16, 5, 5}, {33, 16, 1, 1}},
      {{1, 1, 1, 1}, {1, 1, 1, 1}},
      {{2, 7, 13, 11}, {17, 7, 5, 3}, {3, 2}, {2, 1}, {2, 1}},
      {{1, 64, 14, 14}, {64, 64, 3, 3}, {1, 1}, {1, 1}},
  };
  for (const ConvCase& c : cases) {
    ir::Graph g = conv_graph(c);
    std::string what = ir::to_text(g);
    INFO(what);
    Buffer x = values(c.x, 0.1, false), w = values(c.w, 1.3, false);
    Buffer ax = values(c.x, 0.1, true), aw = values(c.w, 1.3, true);
    auto jit = compile(g, Backend::Jit);
    auto ref = compile(g, Backend::Interp);
    CHECK(jit->describe().find("gemm") != std::string::npos);
    CHECK(jit->describe().find("conv2d") == std::string::npos);
    std::vector<Buffer> got = jit->run(std::vector<const Buffer*>{&x, &w});
    std::vector<Buffer> want = ref->run(std::vector<const Buffer*>{&x, &w});
    // sum |x| |w| per output: the f32 sum of `depth` products is within depth * 2^-24 of it.
    std::vector<Buffer> scale = ref->run(std::vector<const Buffer*>{&ax, &aw});
    REQUIRE(got.size() == 1);
    REQUIRE(got[0].shape() == want[0].shape());
    const double depth = double(c.w[1] * c.w[2] * c.w[3]);
    int64_t bad = 0;
    for (int64_t i = 0; i < want[0].numel(); ++i) {
      double bound = (depth + 2) * 0x1p-24 * scale[0].get_f64(i);
      if (std::abs(got[0].get_f64(i) - want[0].get_f64(i)) > bound && bad++ == 0)
        FAIL_CHECK("element " << i << ": got " << got[0].get_f64(i) << ", want "
                              << want[0].get_f64(i) << " (bound " << bound << ")");
    }
    CHECK(bad == 0);
  }
}

TEST_CASE("conv on the JIT: grouped and f64 convolutions stay on the runtime kernels") {
  REQUIRE(backend_available(Backend::Jit));
  ir::Graph g("grouped");
  ir::NodeId x = g.input("x", ir::Shape({1, 4, 5, 5}, ir::DType::F32));
  ir::NodeId w = g.input("w", ir::Shape({4, 2, 3, 3}, ir::DType::F32));
  g.set_outputs({g.conv2d(x, w, {3, 3}, {1, 1}, {0, 0}, {1, 1}, 2)});
  CHECK(compile(g, Backend::Jit)->describe().find("conv2d") != std::string::npos);
  ir::Graph d("f64");
  x = d.input("x", ir::Shape({1, 2, 5, 5}, ir::DType::F64));
  w = d.input("w", ir::Shape({3, 2, 3, 3}, ir::DType::F64));
  d.set_outputs({d.conv2d(x, w, {3, 3}, {1, 1}, {1, 1}, {1, 1}, 1)});
  CHECK(compile(d, Backend::Jit)->describe().find("conv2d") != std::string::npos);
}
