// tests/test_tensor.cpp -- Tensor handles: laziness, materialization, caching, every op reachable.
#include "support/check_error.hpp"
#include "support/pending_graph.hpp"

#include "frontend/impl.hpp"

#include <rlx/all.hpp>

#include <doctest/doctest.h>

#include <cstdio>
#include <filesystem>
#include <set>

using rlx::Tensor;
using rlx::ir::DType;
using rlx::ir::OpKind;
using rlx::test::pending_ops;

TEST_CASE("tensor: operations record nodes and compute nothing until read") {
  Tensor a = rlx::tensor({1.f, 2.f, 3.f});
  CHECK(a.is_materialized());
  Tensor b = a * 2 + 1;
  CHECK_FALSE(b.is_materialized());
  CHECK(b.shape() == rlx::ir::Shape({3}, DType::F32));
  std::multiset<OpKind> ops = pending_ops(b);
  CHECK(ops.count(OpKind::Mul) == 1);
  CHECK(ops.count(OpKind::Add) == 1);
  CHECK(b.to_vector<float>() == std::vector<float>{3.f, 5.f, 7.f});
  CHECK(b.is_materialized());
  CHECK(pending_ops(b).empty()); // the graph behind a computed tensor is released
}

TEST_CASE("tensor: queries report shape, dtype, rank and element count") {
  Tensor t = rlx::zeros({2, 3, 4}, DType::I32);
  CHECK(t.ndim() == 3);
  CHECK(t.numel() == 24);
  CHECK(t.sizes() == rlx::Dims{2, 3, 4});
  CHECK(t.size(-1) == 4);
  CHECK(t.dtype() == DType::I32);
  rlx::test::check_error([&] { (void)t.size(3); }, rlx::ErrorKind::Value,
                         "axis 3 is out of range for i32[2,3,4]");
}

TEST_CASE("tensor: one eval computes several tensors and shared work once") {
  rlx::clear_cache();
  Tensor x = rlx::arange(0, 6, 1).reshape({2, 3});
  Tensor shared = rlx::exp(x);
  Tensor s = shared.sum();
  Tensor m = shared.max();
  auto before = rlx::cache_stats();
  rlx::eval(s, m);
  auto after = rlx::cache_stats();
  CHECK(after.compiles + after.hits - before.compiles - before.hits == 1); // one graph
  CHECK(s.is_materialized());
  CHECK(m.is_materialized());
  // `shared` is held by a handle, so it was an output of the same graph: no recomputation.
  CHECK(shared.is_materialized());
  CHECK(m.item<float>() == doctest::Approx(std::exp(5.0)).epsilon(1e-6));
}

TEST_CASE("tensor: each run is counted and the last executable run tells its plan") {
  rlx::CacheStats before = rlx::cache_stats();
  Tensor y = rlx::tanh(rlx::full({37}, 0.25f) * 2.f);
  CHECK(y.to_vector<float>().size() == 37);
  rlx::CacheStats after = rlx::cache_stats();
  CHECK(after.runs == before.runs + 1);
  CHECK(after.run_ms >= before.run_ms);
  std::shared_ptr<const rlx::Executable> exe = rlx::last_run();
  REQUIRE(exe != nullptr);
  CHECK(exe->graph().outputs.size() == 1);
  CHECK(rlx::ir::short_str(exe->graph().shape(exe->graph().outputs[0])) == "f32[37]");
  std::string plan = exe->describe();
  if (exe->backend() == rlx::Backend::Jit) {
    CHECK(plan.find("kernel rlx_k") != std::string::npos);
    CHECK(plan.find("tanh") != std::string::npos);
  } else {
    CHECK(plan.find("interpreter") != std::string::npos);
  }
  rlx::clear_cache(); // releases it, and with it its compiled code
  CHECK(rlx::last_run() == nullptr);
}

TEST_CASE("tensor: the same computation on new data is a cache hit") {
  auto run = [](float v) { return (rlx::full({4}, v) * rlx::tensor({1.f, 2.f, 3.f, 4.f})).sum(); };
  float first = run(1.0f).item<float>();
  auto before = rlx::cache_stats();
  float second = run(2.0f).item<float>(); // the constant differs: a new graph
  Tensor a = rlx::tensor({5.f, 6.f}), b = rlx::tensor({7.f, 8.f});
  auto mid = rlx::cache_stats();
  float third = (a + b).sum().item<float>();
  float fourth = (b + a).sum().item<float>(); // same graph text, other data
  auto after = rlx::cache_stats();
  CHECK(first == 10.f);
  CHECK(second == 20.f);
  CHECK(mid.compiles - before.compiles == 1);
  CHECK(third == 26.f);
  CHECK(fourth == 26.f);
  CHECK(after.hits - mid.hits >= 1);
}

TEST_CASE("tensor: long pending chains evaluate automatically past the threshold") {
  Tensor x = rlx::zeros({2});
  for (uint64_t i = 0; i < rlx::detail::kAutoEvalNodes + 10; ++i) x = x + 1;
  // The chain was cut at least once: the pending part is shorter than what was recorded.
  CHECK(pending_ops(x).size() < rlx::detail::kAutoEvalNodes);
  CHECK(x.to_vector<float>() == std::vector<float>(2, float(rlx::detail::kAutoEvalNodes + 10)));
}

TEST_CASE("tensor: reduction methods take one axis, a list, {} or nothing") {
  Tensor t = rlx::arange(0, 6, 1).reshape({2, 3});
  CHECK(t.sum().item<float>() == 15.f);
  CHECK(t.sum({}).item<float>() == 15.f); // regression: {} used to pick the one-axis overload
  CHECK(t.sum(0).to_vector<float>() == std::vector<float>{3.f, 5.f, 7.f});
  CHECK(t.sum({0}).to_vector<float>() == std::vector<float>{3.f, 5.f, 7.f});
  CHECK(t.max({0, 1}, true).shape() == rlx::ir::Shape({1, 1}, DType::F32));
  CHECK(t.mean(int64_t(-1)).to_vector<float>() == std::vector<float>{1.f, 4.f});
}

TEST_CASE("tensor: reading data converts like numpy astype; data<T> needs the exact dtype") {
  Tensor t = rlx::tensor({1.5f, -2.5f, 3.0f});
  CHECK(t.to_vector<int32_t>() == std::vector<int32_t>{1, -2, 3});
  CHECK(t.to_vector<double>() == std::vector<double>{1.5, -2.5, 3.0});
  CHECK(t.to_vector<bool>() == std::vector<bool>{true, true, true});
  CHECK(t.data<float>()[1] == -2.5f);
  rlx::test::check_error([&] { (void)t.data<double>(); }, rlx::ErrorKind::Type,
                         "the tensor is f32[3] but f64 was requested");
  rlx::test::check_error([&] { (void)t.item<float>(); }, rlx::ErrorKind::Shape,
                         "item: needs a tensor with one element, got f32[3]");
  CHECK(rlx::scalar(7).item<int64_t>() == 7);
}

TEST_CASE("tensor: from_vector checks the element count and nested lists are rectangular") {
  rlx::test::check_error([] { Tensor::from_vector(std::vector<float>{1, 2, 3}, {2, 2}); },
                         rlx::ErrorKind::Shape, "3 values for shape f32[2,2]");
  rlx::test::check_error([] { rlx::tensor({{1.f, 2.f}, {3.f}}); }, rlx::ErrorKind::Shape, "ragged");
  Tensor b = Tensor::from_vector(std::vector<bool>{true, false}, {2});
  CHECK(b.dtype() == DType::Bool);
  CHECK(b.to_vector<int>() == std::vector<int>{1, 0});
}

TEST_CASE("tensor: printing is numpy-like and materializes") {
  Tensor t = rlx::tensor({{1.5f, 2.f}, {3.f, 4.f}}) * 1;
  CHECK(t.str() == "tensor([[1.5000, 2.0000],\n        [3.0000, 4.0000]], f32[2,2])");
  CHECK(t.is_materialized());
  std::ostringstream os;
  os << rlx::arange(3);
  CHECK(os.str() == "tensor([0, 1, 2], i64[3])");
  CHECK(Tensor().str() == "tensor(<undefined>)");
}

TEST_CASE("tensor: save_npy and load_npy round-trip a computed tensor") {
  auto path = std::filesystem::temp_directory_path() / "rlx_test_tensor_roundtrip.npy";
  Tensor t = rlx::arange(0, 12, 1, DType::F64).reshape({3, 4}) / 4;
  rlx::save_npy(path.string(), t);
  Tensor back = rlx::load_npy(path.string());
  CHECK(back.shape() == t.shape());
  CHECK(back.to_vector<double>() == t.to_vector<double>());
  std::filesystem::remove(path);
  rlx::test::check_error([&] { rlx::load_npy(path.string()); }, rlx::ErrorKind::Io,
                         "rlx_test_tensor_roundtrip.npy");
}

TEST_CASE("tensor: apply reaches any graph builder from Tensor code") {
  Tensor x = rlx::tensor({-1.f, 0.5f, 2.f});
  Tensor y = rlx::apply({x}, [](rlx::ir::Graph& g, std::span<const rlx::ir::NodeId> in) {
    return g.clamp(in[0], 0.0, 1.0);
  });
  CHECK(y.to_vector<float>() == std::vector<float>{0.f, 0.5f, 1.f});
}

TEST_CASE("tensor: an undefined handle is an error, not a crash") {
  Tensor t;
  CHECK_FALSE(t.defined());
  rlx::test::check_error([&] { (void)(t + 1); }, rlx::ErrorKind::Value, "undefined");
  rlx::test::check_error([&] { t.to_vector<float>(); }, rlx::ErrorKind::Value, "undefined");
  rlx::test::check_error([&] { rlx::eval(t); }, rlx::ErrorKind::Value, "undefined");
}

TEST_CASE("tensor: a kernel error at materialization names the line that built the node") {
  Tensor table = rlx::tensor({1.f, 2.f, 3.f});
  Tensor idx = rlx::tensor({0, 7}); // 7 is out of range: found only when the gather runs
  Tensor g = rlx::take(table, idx);
  int line = __LINE__ - 1;
  std::string msg =
      rlx::test::check_error([&] { g.to_vector<float>(); }, rlx::ErrorKind::Value, "gather");
  CHECK(msg.find("test_tensor.cpp:" + std::to_string(line)) != std::string::npos);
}

// Every op kind of the core set can be produced from Tensor code: a table of one Tensor
// expression per kind, checked against the op table so a new op without a frontend route fails.
/// Two Gaussians in front of a 16x16 camera, for the splatting kinds' routes.
rlx::splat::Scene splat_scene() {
  return {rlx::tensor({{0.1f, 0.0f, 3.0f}, {-0.2f, 0.1f, 4.0f}}),
          rlx::full({2, 3}, -1.5f),
          rlx::tensor({{1.0f, 0.0f, 0.0f, 0.0f}, {0.9f, 0.1f, 0.2f, 0.0f}}),
          rlx::tensor({1.0f, 0.5f}),
          rlx::randn({2, 3}, 11),
          rlx::zeros({2, 0, 3})};
}
rlx::splat::Camera splat_camera() {
  rlx::splat::Camera c;
  c.width = 16;
  c.height = 16;
  return c;
}
Tensor splat_decomposed() {
  rlx::splat::Scene s = splat_scene();
  Tensor meta = rlx::splat::meta(splat_camera());
  return rlx::apply(
      {s.means, s.log_scales, s.rotations, s.opacity_logits, s.colors_dc, s.sh_rest, meta},
      [](rlx::ir::Graph& g, std::span<const rlx::ir::NodeId> ids) {
        return g.gaussian_splat_render_decomposed(
            {ids[0], ids[1], ids[2], ids[3], ids[4], ids[5], ids[6]}, {16, 16});
      });
}

TEST_CASE("tensor: every op kind of the core set is reachable from Tensor code") {
  using rlx::ir::Activation;
  Tensor v = rlx::tensor({0.5f, -1.f, 2.f, 3.f});
  Tensor m = rlx::randn({2, 4}, 3);
  Tensor sq = rlx::randn({4, 4}, 4);
  Tensor img = rlx::randn({1, 2, 4, 4}, 5);
  Tensor w2 = rlx::randn({2, 2, 3, 3}, 6);
  Tensor vol = rlx::randn({1, 2, 3, 3, 3}, 7);
  Tensor w3 = rlx::randn({2, 2, 2, 2, 2}, 8);
  Tensor seq = rlx::randn({1, 3, 8}, 9);
  Tensor g2 = rlx::ones({2}), b2 = rlx::zeros({2}), g8 = rlx::ones({8}), b8 = rlx::zeros({8});
  Tensor cs = rlx::randn({3, 2}, 10);
  std::map<OpKind, std::function<Tensor()>> routes = {
      {OpKind::Constant, [&] { return v + 1; }},
      {OpKind::Relu, [&] { return rlx::relu(v); }},
      {OpKind::Gelu, [&] { return rlx::gelu(v); }},
      {OpKind::GeluApprox, [&] { return rlx::gelu_approx(v); }},
      {OpKind::Silu, [&] { return rlx::silu(v); }},
      {OpKind::Sigmoid, [&] { return rlx::sigmoid(v); }},
      {OpKind::Tanh, [&] { return rlx::tanh(v); }},
      {OpKind::Exp, [&] { return rlx::exp(v); }},
      {OpKind::Log, [&] { return rlx::log(v); }},
      {OpKind::Sqrt, [&] { return rlx::sqrt(v); }},
      {OpKind::Rsqrt, [&] { return rlx::rsqrt(v); }},
      {OpKind::Neg, [&] { return -v; }},
      {OpKind::Abs, [&] { return rlx::abs(v); }},
      {OpKind::Sin, [&] { return rlx::sin(v); }},
      {OpKind::Cos, [&] { return rlx::cos(v); }},
      {OpKind::Tan, [&] { return rlx::tan(v); }},
      {OpKind::Atan, [&] { return rlx::atan(v); }},
      {OpKind::Round, [&] { return rlx::round(v); }},
      {OpKind::Floor, [&] { return rlx::floor(v); }},
      {OpKind::Ceil, [&] { return rlx::ceil(v); }},
      {OpKind::Sign, [&] { return rlx::sign(v); }},
      {OpKind::Recip, [&] { return rlx::reciprocal(v); }},
      {OpKind::Erf, [&] { return rlx::erf(v); }},
      {OpKind::Softplus, [&] { return rlx::softplus(v); }},
      {OpKind::LeakyRelu, [&] { return rlx::leaky_relu(v, 0.1); }},
      {OpKind::Elu, [&] { return rlx::elu(v); }},
      {OpKind::HardSwish, [&] { return rlx::hard_swish(v); }},
      {OpKind::HardSigmoid, [&] { return rlx::hard_sigmoid(v); }},
      {OpKind::Mish, [&] { return rlx::mish(v); }},
      {OpKind::Softsign, [&] { return rlx::softsign(v); }},
      {OpKind::LogSigmoid, [&] { return rlx::log_sigmoid(v); }},
      {OpKind::Log1p, [&] { return rlx::log1p(v); }},
      {OpKind::Expm1, [&] { return rlx::expm1(v); }},
      {OpKind::StopGradient, [&] { return rlx::stop_gradient(v); }},
      {OpKind::Cast, [&] { return v.cast(DType::I32); }},
      {OpKind::Clamp, [&] { return v.clamp(0.0, 1.0); }},
      {OpKind::Add, [&] { return v + v; }},
      {OpKind::Sub, [&] { return v - v; }},
      {OpKind::Mul, [&] { return v * v; }},
      {OpKind::Div, [&] { return v / v; }},
      {OpKind::Pow, [&] { return rlx::pow(v, v); }},
      {OpKind::Max, [&] { return rlx::maximum(v, 0); }},
      {OpKind::Min, [&] { return rlx::minimum(v, 0); }},
      {OpKind::Mod, [&] { return rlx::fmod(v, 2); }},
      {OpKind::Eq, [&] { return v == 2; }},
      {OpKind::Ne, [&] { return v != 2; }},
      {OpKind::Lt, [&] { return v < 2; }},
      {OpKind::Le, [&] { return v <= 2; }},
      {OpKind::Gt, [&] { return v > 2; }},
      {OpKind::Ge, [&] { return v >= 2; }},
      {OpKind::And, [&] { return (v > 0) && (v < 3); }},
      {OpKind::Or, [&] { return (v > 0) || (v < 3); }},
      {OpKind::Where, [&] { return rlx::where(v > 0, v, 0); }},
      {OpKind::ReduceSum, [&] { return v.sum(); }},
      {OpKind::ReduceMean, [&] { return v.mean(); }},
      {OpKind::ReduceMax, [&] { return v.max(); }},
      {OpKind::ReduceMin, [&] { return v.min(); }},
      {OpKind::ReduceProd, [&] { return v.prod(); }},
      {OpKind::ArgMax, [&] { return v.argmax(); }},
      {OpKind::ArgMin, [&] { return v.argmin(); }},
      {OpKind::Cumsum, [&] { return rlx::cumsum(v, 0); }},
      {OpKind::Softmax, [&] { return rlx::softmax(v); }},
      {OpKind::Reshape, [&] { return v.reshape({2, 2}); }},
      {OpKind::Transpose, [&] { return m.transpose(); }},
      {OpKind::Narrow, [&] { return rlx::narrow(v, 0, 1, 2); }},
      {OpKind::Slice, [&] { return v.slice(0, std::nullopt, std::nullopt, -1); }},
      {OpKind::Concat, [&] { return rlx::concat({v, v}); }},
      {OpKind::Expand, [&] { return v.expand({3, 4}); }},
      {OpKind::Reverse, [&] { return rlx::flip(v, {0}); }},
      {OpKind::Pad, [&] { return rlx::pad(v, {1, 1}); }},
      {OpKind::Gather, [&] { return rlx::take(v, rlx::tensor({0, 2})); }},
      {OpKind::ScatterAdd,
       [&] {
         return rlx::index_add(m, 1, rlx::tensor({int64_t(3), int64_t(0)}), rlx::ones({2, 2}));
       }},
      {OpKind::TopK, [&] { return rlx::topk(v, 2).second; }},
      {OpKind::ArgSort, [&] { return rlx::argsort(v); }},
      {OpKind::MatMul, [&] { return rlx::matmul(m, sq); }},
      {OpKind::FusedMatMulBiasAct,
       [&] { return rlx::linear(m, sq, v, Activation::Relu, /*fused=*/true); }},
      {OpKind::FusedSwiGLU, [&] { return rlx::swiglu_ffn(m, sq, sq, sq, /*fused=*/true); }},
      {OpKind::LayerNorm, [&] { return rlx::layer_norm(m, rlx::ones({4}), rlx::zeros({4})); }},
      {OpKind::LayerNorm2d, [&] { return rlx::layer_norm2d(img, g2, b2); }},
      {OpKind::GroupNorm, [&] { return rlx::group_norm(img, 2, g2, b2); }},
      {OpKind::BatchNormInference, [&] { return rlx::batch_norm(img, b2, g2, g2, b2); }},
      {OpKind::RmsNorm, [&] { return rlx::rms_norm(m, rlx::ones({4})); }},
      {OpKind::FusedResidualLN,
       [&] { return rlx::residual_layer_norm(m, m, rlx::ones({4}), rlx::zeros({4})); }},
      {OpKind::FusedResidualRmsNorm, [&] { return rlx::residual_rms_norm(m, m, rlx::ones({4})); }},
      {OpKind::Attention, [&] { return rlx::attention(seq, seq, seq, 2); }},
      {OpKind::Rope, [&] { return rlx::rope(seq, cs, cs, 4); }},
      {OpKind::AxialRope2d, [&] { return rlx::axial_rope2d(seq, 3, 1, 4, 2); }},
      {OpKind::Conv2d, [&] { return rlx::conv2d(img, w2); }},
      {OpKind::Im2Col, [&] { return rlx::im2col(img, {3, 3}); }},
      {OpKind::ConvTranspose2d, [&] { return rlx::conv_transpose2d(img, w2); }},
      {OpKind::Conv3d, [&] { return rlx::conv3d(vol, w3); }},
      {OpKind::ConvTranspose3d, [&] { return rlx::conv_transpose3d(vol, w3); }},
      {OpKind::ConvTranspose1d,
       [&] { return rlx::conv_transpose1d(rlx::randn({1, 2, 5}, 11), rlx::randn({2, 3, 3}, 12)); }},
      {OpKind::MaxPool2d, [&] { return rlx::max_pool2d(img, {2, 2}); }},
      {OpKind::AvgPool2d, [&] { return rlx::avg_pool2d(img, {2, 2}); }},
      {OpKind::Fft, [&] { return rlx::fft::transform(v, true, rlx::ir::FftNorm::Ortho); }},
      {OpKind::Solve, [&] { return rlx::linalg::solve(rlx::eye(3) * 2.0f, rlx::ones({3})); }},
      {OpKind::DequantMatMul,
       [&] {
         const auto q8 = rlx::quant::QuantScheme::of(rlx::quant::QuantFormat::Q8_0);
         return rlx::quant::dequant_matmul(rlx::ones({1, 32}),
                                           rlx::quant::pack(rlx::ones({2, 32}), q8), q8);
       }},
      {OpKind::Slogdet, [&] { return rlx::linalg::slogdet(rlx::eye(3) * 2.0f).logabsdet; }},
      {OpKind::Cholesky, [&] { return rlx::linalg::cholesky(rlx::eye(3) * 2.0f); }},
      {OpKind::Qr, [&] { return rlx::linalg::qr(rlx::eye(3) * 2.0f).first; }},
      {OpKind::Svd, [&] { return rlx::linalg::svdvals(rlx::eye(3) * 2.0f); }},
      {OpKind::Eigh, [&] { return rlx::linalg::eigvalsh(rlx::eye(3) * 2.0f); }},
      {OpKind::Quantize, [&] { return rlx::quant::quantize_per_tensor(v, 0.1f, 0); }},
      {OpKind::Dequantize,
       [&] {
         return rlx::quant::dequantize(rlx::quant::quantize_per_tensor(v, 0.1f, 0), 0.1f, 0);
       }},
      {OpKind::FakeQuantize,
       [&] { return rlx::quant::fake_quantize(v, {{0.1f}, {0}, std::nullopt}); }},
      {OpKind::QMatMul,
       [&] {
         namespace q = rlx::quant;
         return q::q_matmul(q::quantize_per_tensor(m, 0.1f, 0),
                            q::quantize_per_tensor(rlx::randn({4, 3}, 19), 0.1f, 0), std::nullopt,
                            0, {0}, 0, {0.5f});
       }},
      {OpKind::QConv2d,
       [&] {
         namespace q = rlx::quant;
         return q::q_conv2d(q::quantize_per_tensor(img, 0.1f, 0),
                            q::quantize_per_tensor(w2, 0.1f, 0), std::nullopt, 0, {0}, 0, {0.5f});
       }},
      {OpKind::Random, [&] { return rlx::random::uniform(rlx::random::key_data(3), {4}); }},
      {OpKind::Sample, [&] { return rlx::sample(m, 2, 0.9, 0.7, 5).astype(rlx::DType::F32); }},
      {OpKind::Lfilter,
       [&] { return rlx::lfilter(v, rlx::tensor({0.5f, 0.5f}), rlx::tensor({1.f})); }},
      // The collectives on this one-process job (rlx::dist; a message to this rank itself).
      {OpKind::AllReduce, [&] { return rlx::dist::all_reduce(v, rlx::dist::CollectiveOp::Max); }},
      {OpKind::AllGather, [&] { return rlx::dist::all_gather(v); }},
      {OpKind::ReduceScatter, [&] { return rlx::dist::reduce_scatter(v); }},
      {OpKind::Broadcast, [&] { return rlx::dist::broadcast(v); }},
      {OpKind::ReduceToRoot, [&] { return rlx::dist::reduce(v); }},
      {OpKind::Send, [&] { return rlx::dist::recv(rlx::dist::send(v, 0, 3), 0, 3); }},
      {OpKind::Recv, [&] { return rlx::dist::recv(rlx::dist::send(v, 0, 4), 0, 4); }},
      {OpKind::Lstm,
       [&] {
         return rlx::nn::lstm(rlx::ones({1, 2, 3}),
                              {rlx::ones({8, 3}), rlx::ones({8, 2}), rlx::ones({8})}, {.hidden = 2})
             .output;
       }},
      {OpKind::Gru,
       [&] {
         return rlx::nn::gru(rlx::ones({1, 2, 3}),
                             {rlx::ones({6, 3}), rlx::ones({6, 2}), rlx::ones({6})}, {.hidden = 2})
             .h_n;
       }},
      {OpKind::Rnn,
       [&] {
         return rlx::nn::rnn(rlx::ones({1, 2, 3}),
                             {rlx::ones({2, 3}), rlx::ones({2, 2}), rlx::ones({2})},
                             {.hidden = 2, .relu = true})
             .output;
       }},
      {OpKind::Conjugate, [&] { return rlx::conjugate(v.astype(rlx::DType::C64)); }},
      {OpKind::ComplexNormSq, [&] { return rlx::complex_norm_sq(v.astype(rlx::DType::C64)); }},
      {OpKind::SelectiveScan,
       [&] {
         Tensor x = rlx::randn({1, 3, 2}, 11), a = -rlx::exp(rlx::randn({2, 4}, 12));
         Tensor bc = rlx::randn({1, 3, 4}, 13);
         return rlx::nn::selective_scan(x, rlx::sigmoid(x), a, bc, bc * 0.5f);
       }},
      {OpKind::Mamba2,
       [&] {
         Tensor x = rlx::randn({1, 3, 2, 2}, 14), dt = rlx::sigmoid(rlx::randn({1, 3, 2}, 15));
         Tensor bc = rlx::randn({1, 3, 1, 4}, 16);
         return rlx::nn::mamba2(x, dt, -rlx::ones({2}), bc, bc);
       }},
      {OpKind::GatedDeltaNet,
       [&] {
         Tensor q = rlx::randn({1, 3, 2, 4}, 17), gb = rlx::sigmoid(rlx::randn({1, 3, 2}, 18));
         return rlx::nn::gated_delta_net(q, q * 0.5f, q, -gb, gb);
       }},
      {OpKind::CustomFn,
       [&] {
         rlx::ir::Graph f("f");
         auto x = f.input("x", v.shape());
         f.set_outputs({f.tanh(x)});
         std::array<Tensor, 1> in{v};
         return rlx::custom_fn(in, f);
       }},
      {OpKind::Custom,
       [&] {
         rlx::CustomOp op;
         op.infer_shape = [](std::span<const rlx::ir::Shape> in, rlx::AttrBytes) { return in[0]; };
         op.kernel = [](std::span<const rlx::Buffer* const> in, rlx::Buffer& out, rlx::AttrBytes) {
           for (int64_t i = 0; i < out.numel(); ++i) out.set_f64(i, -in[0]->get_f64(i));
         };
         rlx::register_op("tensor.negate", op, true);
         return rlx::custom("tensor.negate", {v});
       }},
      {OpKind::GaussianSplatRender,
       [&] { return rlx::splat::render(splat_scene(), splat_camera()); }},
      {OpKind::GaussianSplatPrepare, [&] { return splat_decomposed(); }},
      {OpKind::GaussianSplatRasterize, [&] { return splat_decomposed(); }},
      {OpKind::GaussianSplatRenderBackward,
       [&] {
         auto f = [](const rlx::splat::Scene& s) {
           return rlx::sum(rlx::splat::render(s, splat_camera()));
         };
         return rlx::grad(f)(splat_scene()).means;
       }},
      {OpKind::Scan,
       [&] {
         return rlx::scan([](const Tensor& h, const Tensor& x) { return h * x + 1.f; }, v,
                          {rlx::randn({3, 4}, 13)});
       }},
      {OpKind::ScanBackward,
       [&] {
         auto f = [](const Tensor& h) {
           return rlx::sum(
               rlx::scan([](const Tensor& c) { return rlx::tanh(c); }, h, {}, {.length = 3}));
         };
         return rlx::grad(f)(v);
       }},
      {OpKind::ScanBackwardXs,
       [&] {
         auto f = [&](const Tensor& xs) {
           return rlx::sum(
               rlx::scan([](const Tensor& h, const Tensor& x) { return h * x; }, v, {xs}));
         };
         return rlx::grad(f)(rlx::randn({3, 4}, 14));
       }},
  };
  for (std::size_t i = 0; i < rlx::ir::kNumOps; ++i) {
    OpKind k = static_cast<OpKind>(i);
    if (k == OpKind::Input || k == OpKind::Param) continue; // leaves: tensors themselves
    INFO("op kind: " << rlx::ir::op_name(k));
    auto it = routes.find(k);
    REQUIRE_MESSAGE(it != routes.end(), "no Tensor route for this op kind");
    Tensor t = it->second();
    CHECK(pending_ops(t).count(k) >= 1);
    rlx::eval(t); // and it runs
    CHECK(t.is_materialized());
  }
}
