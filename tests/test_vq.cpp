// tests/test_vq.cpp -- vector_quantize, residual_vq, straight_through and lora_matmul
// (include/rlx/vq.hpp, RLX's Graph builders) against tests/fixtures/make_vq.py's numpy codes and
// torch gradients, on both backends; the Graph forms' structure (lora never forms a b) and errors.
#include "support/backends.hpp"
#include "support/check_error.hpp"

#include <rlx/ir/graph.hpp>
#include <rlx/rlx.hpp>
#include <rlx/vq.hpp>

#include <doctest/doctest.h>

#include <string>
#include <vector>

namespace {

using rlx::DType;
using rlx::ErrorKind;
using rlx::Tensor;
using rlx::VqMetric;
using rlx::test::check_error;
using rlx::test::Fixture;
using rlx::test::on_both_backends;

void check_close(const Tensor& got, const Tensor& want, double rtol, double atol) {
  REQUIRE(got.sizes() == want.sizes());
  CHECK(rlx::allclose(got.astype(DType::F64), want.astype(DType::F64), rtol, atol));
}

void check_vq(const std::string& name, VqMetric metric) {
  CAPTURE(name);
  Fixture f("vq", name);
  Tensor x = f("x"), codebook = f("codebook"), up = f("upstream");
  rlx::VqResult r = rlx::vector_quantize(x, codebook, metric);
  CHECK(r.indices.dtype() == DType::I64);
  CHECK(r.indices.to_vector<int64_t>() == f("want_indices").to_vector<int64_t>());
  CHECK(r.quantized.to_vector<float>() == f("want_quantized").to_vector<float>());
  auto codebook_loss = [&](Tensor cb) {
    return (rlx::vector_quantize(x, cb, metric).quantized * up).sum();
  };
  check_close(rlx::grad(codebook_loss)(codebook), f("want_grad_codebook"), 1e-6, 1e-6);
  auto st_loss = [&](Tensor xs) {
    return (rlx::straight_through(xs, rlx::vector_quantize(xs, codebook, metric).quantized) * up)
        .sum();
  };
  check_close(rlx::grad(st_loss)(x), f("want_grad_x"), 0, 0);
  // straight_through's value is the quantized one.
  check_close(rlx::straight_through(x, r.quantized), f("want_quantized"), 1e-6, 1e-6);
}

TEST_CASE("vector_quantize picks numpy's nearest codes (L2 and cosine) with torch's gradients") {
  on_both_backends([] {
    check_vq("vq_l2", VqMetric::L2);
    check_vq("vq_cosine", VqMetric::Cosine);
  });
}

TEST_CASE("residual_vq quantizes what each level leaves, with the codebooks' gradients") {
  on_both_backends([] {
    Fixture f("vq", "residual_vq");
    Tensor x = f("x"), up = f("upstream");
    std::vector<Tensor> books{f("codebook_0"), f("codebook_1"), f("codebook_2")};
    rlx::ResidualVqResult r = rlx::residual_vq(x, books);
    REQUIRE(r.indices.size() == 3);
    for (std::size_t l = 0; l < 3; ++l) {
      CAPTURE(l);
      CHECK(r.indices[l].to_vector<int64_t>() ==
            f("want_indices_" + std::to_string(l)).to_vector<int64_t>());
    }
    check_close(r.reconstruction, f("want_reconstruction"), 1e-6, 1e-6);
    auto loss = [&](Tensor b0, Tensor b1, Tensor b2) {
      std::vector<Tensor> bs{b0, b1, b2};
      return (rlx::residual_vq(x, bs).reconstruction * up).sum();
    };
    auto [g0, g1, g2] = rlx::grad(loss, rlx::argnums<0, 1, 2>)(books[0], books[1], books[2]);
    check_close(g0, f("want_grad_codebook_0"), 1e-6, 1e-6);
    check_close(g1, f("want_grad_codebook_1"), 1e-6, 1e-6);
    check_close(g2, f("want_grad_codebook_2"), 1e-6, 1e-6);
  });
}

void check_lora(const std::string& name, double rtol, double atol) {
  CAPTURE(name);
  Fixture f("vq", name);
  Tensor x = f("x"), w = f("w"), a = f("a"), b = f("b"), up = f("upstream");
  const double scale = f("scale").item<double>();
  check_close(rlx::lora_matmul(x, w, a, b, scale), f("want_out"), rtol, atol);
  auto loss = [&](Tensor xs, Tensor ws, Tensor as, Tensor bs) {
    return (rlx::lora_matmul(xs, ws, as, bs, scale) * up).sum();
  };
  auto [gx, gw, ga, gb] = rlx::grad(loss, rlx::argnums<0, 1, 2, 3>)(x, w, a, b);
  check_close(gx, f("want_grad_x"), rtol, atol);
  check_close(gw, f("want_grad_w"), rtol, atol);
  check_close(ga, f("want_grad_a"), rtol, atol);
  check_close(gb, f("want_grad_b"), rtol, atol);
}

TEST_CASE("lora_matmul is x w + scale (x a) b with torch's gradients to all four operands") {
  on_both_backends([] {
    check_lora("lora_f32", 1e-5, 1e-5);
    check_lora("lora_f64", 1e-12, 1e-12);
  });
}

TEST_CASE("Graph::lora_matmul never multiplies a by b: every matmul has x or x a on the left") {
  rlx::ir::Graph g("lora");
  auto sh = [](std::vector<int64_t> d) { return rlx::Shape::of(d, DType::F32); };
  auto x = g.input("x", sh({4, 8})), w = g.input("w", sh({8, 6}));
  auto a = g.input("a", sh({8, 2})), b = g.input("b", sh({2, 6}));
  auto out = g.lora_matmul(x, w, a, b, 0.5f, sh({4, 6}));
  CHECK(g.shape(out) == sh({4, 6}));
  int matmuls = 0;
  for (const rlx::ir::Node& n : g.nodes())
    if (n.op.kind() == rlx::ir::OpKind::MatMul) {
      ++matmuls;
      CHECK(g.shape(n.inputs[0]).sizes()[0] == 4); // the left operand has x's rows
    }
  CHECK(matmuls == 3);
}

TEST_CASE("Graph::vector_quantize and residual_vq return the API's pairs") {
  rlx::ir::Graph g("vq");
  auto x = g.input("x", rlx::Shape::of(std::vector<int64_t>{5, 3}, DType::F32));
  auto c = g.input("c", rlx::Shape::of(std::vector<int64_t>{4, 3}, DType::F32));
  auto [idx, q] = g.vector_quantize(x, c, VqMetric::Cosine);
  CHECK(g.shape(idx) == rlx::Shape::of(std::vector<int64_t>{5}, DType::I64));
  CHECK(g.shape(q) == g.shape(x));
  std::vector<rlx::ir::NodeId> books{c, c};
  auto [levels, recon] = g.residual_vq(x, books, VqMetric::L2);
  CHECK(levels.size() == 2);
  CHECK(g.shape(recon) == g.shape(x));
}

TEST_CASE("bad vq and lora operands are rlx::Errors naming the function and the line") {
  std::string msg =
      check_error([] { (void)rlx::vector_quantize(rlx::zeros({5, 3}), rlx::zeros({4, 2})); },
                  ErrorKind::Shape, "vector_quantize: needs x [N, D] and codebook [K, D]");
  CHECK(msg.find("test_vq.cpp") != std::string::npos);
  check_error([] { (void)rlx::vector_quantize(rlx::zeros({5}), rlx::zeros({4, 2})); },
              ErrorKind::Shape, "vector_quantize: x must be a matrix");
  check_error([] { (void)rlx::residual_vq(rlx::zeros({5, 3}), {}); }, ErrorKind::Value,
              "residual_vq: needs at least one codebook");
  msg = check_error(
      [] {
        (void)rlx::lora_matmul(rlx::zeros({4, 8}), rlx::zeros({8, 6}), rlx::zeros({8, 2}),
                               rlx::zeros({3, 6}), 1.0);
      },
      ErrorKind::Shape, "lora_matmul: needs x [m, k], w [k, n], a [k, r], b [r, n]");
  CHECK(msg.find("test_vq.cpp") != std::string::npos);
}

} // namespace
