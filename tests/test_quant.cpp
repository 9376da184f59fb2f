// tests/test_quant.cpp -- int8 quantization (rlx::quant, the IR's Quant family) against PyTorch
// and a numpy transcription of the int8 arithmetic (tests/fixtures/quant/, written by
// tests/fixtures/make_quant.py, which also writes the parameters read here) on both backends:
// per tensor and per channel, i8 and u8, exact .5 ties, saturation, q_matmul with m = 1 and K
// not a multiple of 16 or 64, q_conv2d with groups, stride, padding and dilation, torch's
// straight-through gradient of fake_quantize, the Graph builders, and errors.
#include "support/backends.hpp"
#include "support/check_error.hpp"
#include "support/compare.hpp"

#include <rlx/all.hpp>

#include <doctest/doctest.h>

#include <cmath>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>
#include <vector>

namespace {

using rlx::DType;
using rlx::ErrorKind;
using rlx::Tensor;
using rlx::test::check_error;
using rlx::test::on_both_backends;
namespace q = rlx::quant;

rlx::test::Fixture case_of(const std::string& name) { return {"quant", name}; }

/// got equals want: same sizes and dtype, integers exactly, floats within atol + rtol |want|.
void expect_close(const Tensor& got, const Tensor& want, const std::string& what, double rtol = 0,
                  double atol = 0) {
  rlx::test::check_close(got, want, {rtol, atol}, what);
}

std::vector<int32_t> ints(const Tensor& t) { return t.to_vector<int32_t>(); }
std::vector<float> floats(const Tensor& t) { return t.to_vector<float>(); }

/// The case's quantization parameters (axis -1 in axis.npy: per tensor).
q::QParams params_of(const rlx::test::Fixture& fx, DType dtype) {
  int64_t axis = fx("axis").to_vector<int64_t>()[0];
  return {floats(fx("scale")), ints(fx("zp")),
          axis < 0 ? std::nullopt : std::optional<int64_t>(axis), dtype};
}

Tensor quantize(const Tensor& x, const q::QParams& p) {
  if (!p.axis) return q::quantize_per_tensor(x, p.scales[0], p.zero_points[0], p.dtype);
  return q::quantize_per_channel(x, p.scales, p.zero_points, *p.axis, p.dtype);
}

const char* const kQuantizeCases[] = {"q_per_tensor_i8", "q_per_tensor_u8",
                                      "q_per_channel_i8_axis0", "q_per_channel_u8_axis2",
                                      "q_per_channel_i8_axis1"};

/// q_matmul(x, w, b, x_zp, w_zp, ...) gives the same bits on the JIT and the interpreter for i8,
/// u8 and i32 results (i32: the accumulator, out_zp 0 and mult 1; otherwise out_zp 3 and mult).
void check_q_matmul_backends_agree(const Tensor& x, const Tensor& w, const Tensor& b, int32_t x_zp,
                                   const std::vector<int32_t>& wzp,
                                   const std::vector<float>& mult) {
  auto run = [&](rlx::Backend be, DType out) {
    rlx::set_default_backend(be);
    const bool raw = out == DType::I32;
    return q::q_matmul(x, w, b, x_zp, wzp, raw ? 0 : 3, raw ? std::vector<float>{1} : mult, out)
        .to_vector<int64_t>();
  };
  rlx::Backend saved = rlx::default_backend();
  for (DType out : {DType::I8, DType::U8, DType::I32}) {
    CAPTURE(out);
    std::vector<int64_t> interp = run(rlx::Backend::Interp, out), jit = run(rlx::Backend::Jit, out);
    CHECK(interp == jit);
  }
  rlx::set_default_backend(saved);
}

} // namespace

TEST_CASE("quantize matches torch.quantize_per_tensor and per_channel, ties to even, saturating") {
  for (const char* name : kQuantizeCases) {
    CAPTURE(name);
    auto fx = case_of(name);
    Tensor x = fx("x"), want = fx("want_q");
    q::QParams p = params_of(fx, want.dtype());
    on_both_backends([&] { expect_close(quantize(x, p), want, "quantize"); });
  }
}

TEST_CASE("dequantize matches torch's Tensor.dequantize bit for bit") {
  for (const char* name : kQuantizeCases) {
    CAPTURE(name);
    auto fx = case_of(name);
    Tensor qv = fx("want_q");
    q::QParams p = params_of(fx, qv.dtype());
    on_both_backends([&] { expect_close(q::dequantize(qv, p), fx("want_dq"), "dequantize"); });
  }
}

TEST_CASE("fake_quantize and its straight-through gradient match torch's fake_quantize") {
  for (const char* name : kQuantizeCases) {
    CAPTURE(name);
    auto fx = case_of(name);
    Tensor x = fx("x"), w = fx("w");
    q::QParams p = params_of(fx, fx("want_q").dtype());
    on_both_backends([&] {
      expect_close(q::fake_quantize(x, p), fx("want_fq"), "fake_quantize");
      Tensor dx = rlx::grad([&](Tensor t) { return rlx::sum(q::fake_quantize(t, p) * w); })(x);
      expect_close(dx, fx("want_d_fq"), "d fake_quantize");
    });
  }
}

TEST_CASE("q_matmul matches the int8 arithmetic: m = 1, odd K, u8 x, per channel, i32, ties") {
  for (const char* name :
       {"mm_decode_m1", "mm_k70_u8", "mm_k64_i8", "mm_batched", "mm_i32", "mm_ties", "mm_k300"}) {
    CAPTURE(name);
    auto fx = case_of(name);
    Tensor want = fx("want");
    on_both_backends([&] {
      Tensor got = q::q_matmul(fx("x"), fx("w"), fx("bias"), ints(fx("x_zp"))[0], ints(fx("w_zp")),
                               ints(fx("out_zp"))[0], floats(fx("mult")), want.dtype());
      expect_close(got, want, "q_matmul");
    });
  }
}

TEST_CASE("q_conv2d matches the int8 arithmetic with groups, stride, padding and dilation") {
  for (const char* name : {"conv_u8_per_channel", "conv_i8_dilated"}) {
    CAPTURE(name);
    auto fx = case_of(name);
    Tensor want = fx("want");
    auto pair = [&](const char* f) {
      auto v = fx(f).to_vector<int64_t>();
      return std::array<int64_t, 2>{v[0], v[1]};
    };
    q::QConvOptions o{pair("stride"), pair("padding"), pair("dilation"),
                      fx("groups").to_vector<int64_t>()[0]};
    on_both_backends([&] {
      Tensor got = q::q_conv2d(fx("x"), fx("w"), fx("bias"), ints(fx("x_zp"))[0], ints(fx("w_zp")),
                               ints(fx("out_zp"))[0], floats(fx("mult")), o, want.dtype());
      expect_close(got, want, "q_conv2d");
    });
  }
}

TEST_CASE("q_matmul without a bias equals q_matmul with a zero bias") {
  auto fx = case_of("mm_k70_u8");
  Tensor x = fx("x"), w = fx("w");
  Tensor zero = rlx::zeros({24}, DType::I32);
  auto run = [&](const std::optional<Tensor>& b) {
    return q::q_matmul(x, w, b, 128, ints(fx("w_zp")), 131, floats(fx("mult")), DType::U8)
        .to_vector<int64_t>();
  };
  on_both_backends([&] { CHECK(run(std::nullopt) == run(zero)); });
}

TEST_CASE("q_matmul gives the same bits on the JIT and the interpreter at GEMM-sized shapes") {
  // 67 x 300 @ 300 x 133: edges in every direction of a blocked kernel; u8 x and i8 w.
  const int64_t m = 67, k = 300, n = 133;
  std::vector<uint8_t> xv(std::size_t(m * k));
  std::vector<int8_t> wv(std::size_t(k * n));
  std::vector<int32_t> bv(static_cast<std::size_t>(n));
  for (std::size_t i = 0; i < xv.size(); ++i) xv[i] = uint8_t((i * 2654435761u) >> 24);
  for (std::size_t i = 0; i < wv.size(); ++i) wv[i] = int8_t(uint8_t((i * 40503u + 7) >> 3));
  for (std::size_t i = 0; i < bv.size(); ++i) bv[i] = int32_t(i * 97) - 6000;
  Tensor x = Tensor::from_vector(xv, {m, k}), w = Tensor::from_vector(wv, {k, n});
  Tensor b = Tensor::from_vector(bv, {n});
  std::vector<float> mult(static_cast<std::size_t>(n));
  for (std::size_t i = 0; i < mult.size(); ++i) mult[i] = 1.0f / float(4000 + 37 * i);
  std::vector<int32_t> wzp(static_cast<std::size_t>(n), 0);
  check_q_matmul_backends_agree(x, w, b, 128, wzp, mult);
}

TEST_CASE("q_matmul gives the same bits on the JIT and the interpreter with an i8 x, per-channel "
          "w zero points, K = 301 (a partial k-quad) and a 45-byte tail of x's rows") {
  // 29 x 301 @ 301 x 45: x's rows are 64 + 64 + 64 + 64 + 45 bytes (the JIT's row sums run 64
  // at a time and then a masked tail), the last quad holds one value, and 45 columns leave a
  // panel of 13 (a masked 16-column group in the requantization).
  const int64_t m = 29, k = 301, n = 45;
  std::vector<int8_t> xv(std::size_t(m * k)), wv(std::size_t(k * n));
  std::vector<int32_t> bv(static_cast<std::size_t>(n)), wzp(static_cast<std::size_t>(n));
  for (std::size_t i = 0; i < xv.size(); ++i) xv[i] = int8_t(uint8_t((i * 2654435761u) >> 24));
  for (std::size_t i = 0; i < wv.size(); ++i) wv[i] = int8_t(uint8_t((i * 40503u + 7) >> 3));
  for (std::size_t i = 0; i < bv.size(); ++i) bv[i] = int32_t(i * 131) - 3000;
  for (std::size_t i = 0; i < wzp.size(); ++i) wzp[i] = int32_t(i % 7) - 3;
  Tensor x = Tensor::from_vector(xv, {m, k}), w = Tensor::from_vector(wv, {k, n});
  Tensor b = Tensor::from_vector(bv, {n});
  std::vector<float> mult(static_cast<std::size_t>(n));
  for (std::size_t i = 0; i < mult.size(); ++i) mult[i] = 1.0f / float(3000 + 53 * i);
  check_q_matmul_backends_agree(x, w, b, -5, wzp, mult);
}

TEST_CASE("the JIT plans q_matmul with an i8 w on its int8 GEMM where the CPU has AVX-512 VNNI") {
  std::ifstream cpu("/proc/cpuinfo");
  std::string text((std::istreambuf_iterator<char>(cpu)), std::istreambuf_iterator<char>());
  const bool vnni = text.find(" avx512_vnni") != std::string::npos;
  rlx::ir::Graph g("q");
  using rlx::ir::Shape;
  auto x = g.input("x", Shape({5, 40}, DType::U8));
  auto w = g.input("w", Shape({40, 7}, DType::I8));
  auto wu = g.input("wu", Shape({40, 7}, DType::U8));
  auto b = g.input("b", Shape({7}, DType::I32));
  g.set_outputs({g.q_matmul(x, w, b, 128, 0, 3, 0.01f, Shape({5, 7}, DType::I8)),
                 g.q_matmul(x, wu, b, 128, 128, 3, 0.01f, Shape({5, 7}, DType::I8))});
  int qgemm = 0;
  for (const rlx::ir::LirStep& step : rlx::plan_for(g, rlx::Backend::Jit).steps)
    qgemm += step.rule->name() == "qgemm";
  CHECK(qgemm == (vnni ? 1 : 0)); // a u8 w stays on the interpreter's kernel
}

TEST_CASE("choose_qparams gives torch MinMaxObserver's scale and zero point") {
  auto fx = case_of("qparams");
  std::vector<float> x = floats(fx("x"));
  double lo = *std::min_element(x.begin(), x.end()), hi = *std::max_element(x.begin(), x.end());
  for (DType t : {DType::I8, DType::U8})
    for (bool sym : {false, true}) {
      std::string key =
          std::string(t == DType::I8 ? "i8" : "u8") + (sym ? "_symmetric" : "_affine");
      CAPTURE(key);
      auto [scale, zp] = q::choose_qparams(lo, hi, t, sym);
      CHECK(scale == floats(fx("want_scale_" + key))[0]);
      CHECK(zp == ints(fx("want_zp_" + key))[0]);
    }
}

TEST_CASE("the Graph builders use RLX's names and round-trip through the text IR") {
  rlx::ir::Graph g("quant");
  using rlx::ir::Shape;
  auto x = g.input("x", Shape({2, 3}, DType::F32));
  auto qx = g.quantize(x, 0.5f, 3);
  auto qc = g.quantize_per_channel(x, 1, {0.25f, 0.5f, 1.0f}, {0, 1, 2}, DType::U8);
  auto dq = g.dequantize(qx, 0.5f, 3);
  auto dc = g.dequantize_per_channel(qc, 1, {0.25f, 0.5f, 1.0f}, {0, 1, 2});
  auto w = g.input("w", Shape({3, 4}, DType::I8));
  auto b = g.input("b", Shape({4}, DType::I32));
  auto y = g.q_matmul(qx, w, b, 3, 0, -1, 0.125f, Shape({2, 4}, DType::I8));
  auto xi = g.input("xi", Shape({1, 2, 5, 5}, DType::U8));
  auto wi = g.input("wi", Shape({4, 2, 3, 3}, DType::I8));
  auto bi = g.input("bi", Shape({4}, DType::I32));
  auto c = g.q_conv2d(xi, wi, bi, {3, 3}, {2, 2}, {1, 1}, {1, 1}, 1, 128, 0, 128, 0.01f,
                      Shape({1, 4, 3, 3}, DType::U8));
  CHECK(g.shape(qx).dtype() == DType::I8);
  CHECK(g.shape(qc).dtype() == DType::U8);
  CHECK(g.shape(dq).dtype() == DType::F32);
  CHECK(g.shape(dc).dtype() == DType::F32);
  g.set_outputs({dq, dc, y, c});
  CHECK(rlx::ir::parse_text(rlx::ir::to_text(g)) == g);
  // A declared shape the rule disagrees with is an error naming the op.
  check_error([&] { (void)g.q_matmul(qx, w, b, 3, 0, -1, 0.125f, Shape({2, 5}, DType::I8)); },
              ErrorKind::Shape, "q_matmul: declared output");
}

TEST_CASE("bad dtypes, scales and zero points are errors naming the op and the caller's line") {
  Tensor x = rlx::ones({2, 3});
  std::string msg = check_error([&] { (void)q::quantize_per_tensor(x, 0.0f, 0); }, ErrorKind::Value,
                                "quantize: scale[0] = 0 must be positive");
  CHECK(msg.find("test_quant.cpp") != std::string::npos);
  check_error([&] { (void)q::quantize_per_tensor(x, -1.0f, 0); }, ErrorKind::Value,
              "must be positive and finite");
  check_error([&] { (void)q::quantize_per_tensor(x, 0.1f, 200); }, ErrorKind::Value,
              "zero point 200 is outside i8's [-128, 127]");
  check_error([&] { (void)q::quantize_per_tensor(x, 0.1f, 0, DType::I32); }, ErrorKind::Type,
              "quantize: quantizes to i8 or u8");
  check_error([&] { (void)q::quantize_per_tensor(rlx::ones({2}, DType::I32), 0.1f, 0); },
              ErrorKind::Type, "quantize: needs a floating-point x");
  msg = check_error([&] { (void)q::quantize_per_channel(x, {0.1f, 0.2f}, {0, 0}, 1); },
                    ErrorKind::Shape, "per channel on axis 1 needs 3 scales");
  CHECK(msg.find("test_quant.cpp") != std::string::npos);
  check_error([&] { (void)q::quantize_per_channel(x, {0.1f, 0.2f, 0.3f}, {0, 0}, 1); },
              ErrorKind::Shape, "has 3 scales but 2 zero points");
  check_error([&] { (void)q::dequantize(x, 0.1f, 0); }, ErrorKind::Type,
              "dequantize: needs an i8, u8 or i32 x");
  Tensor xi = rlx::ones({2, 3}, DType::I8), wi = rlx::ones({3, 4}, DType::I8);
  check_error([&] { (void)q::q_matmul(x, wi, std::nullopt, 0, {0}, 0, {0.1f}); }, ErrorKind::Type,
              "q_matmul: x must be i8 or u8");
  check_error([&] { (void)q::q_matmul(xi, wi, rlx::ones({4}), 0, {0}, 0, {0.1f}); },
              ErrorKind::Type, "q_matmul: bias must be i32");
  check_error([&] { (void)q::q_matmul(xi, wi, std::nullopt, 0, {0, 0}, 0, {0.1f}); },
              ErrorKind::Shape, "w_zp needs 1 or 4 entries");
  check_error([&] { (void)q::q_matmul(xi, wi, std::nullopt, 0, {0}, 0, {-0.1f}); },
              ErrorKind::Value, "q_matmul: mult[0] = -0.1 must be positive");
  check_error(
      [&] { (void)q::q_matmul(xi, rlx::ones({4, 4}, DType::I8), std::nullopt, 0, {0}, 0, {0.1f}); },
      ErrorKind::Shape, "contracting dims differ");
  msg = check_error(
      [&] {
        (void)q::q_conv2d(rlx::ones({1, 3, 4, 4}, DType::U8), rlx::ones({2, 2, 3, 3}, DType::I8),
                          std::nullopt, 128, {0}, 0, {0.1f});
      },
      ErrorKind::Shape, "q_conv2d: weight expects 2 input channels");
  CHECK(msg.find("test_quant.cpp") != std::string::npos);
}
