// tests/test_interp_elementwise.cpp -- Buffer conversions, run() feeding errors, and the
// element-wise kernels against hand-derived values.
#include "support/check_error.hpp"

#include <rlx/all.hpp>

#include <cmath>
#include <cstring>
#include <limits>

using namespace rlx;
using namespace rlx::ir;
using rlx::Buffer;

namespace {

const double kNaN = std::numeric_limits<double>::quiet_NaN();
const double kInfD = std::numeric_limits<double>::infinity();

/// Apply a unary op kind to values of dtype t through a one-node graph.
std::vector<double> unary(OpKind k, std::vector<double> xs, DType t = DType::F64,
                          Op op = Op(OpKind::Relu)) {
  Graph g("u");
  Shape s({int64_t(xs.size())}, t);
  auto x = g.input("x", s);
  Op use = op.kind() == k ? op : Op(k);
  g.set_outputs({g.add_node(use, {x}, infer_shape(use, std::vector{s}).value())});
  return interp::run(g, {{"x", Buffer::from_f64(s, xs)}})[0].to_f64();
}

Buffer binary(OpKind k, const Buffer& a, const Buffer& b) {
  Graph g("b");
  auto x = g.input("a", a.shape());
  auto y = g.input("b", b.shape());
  Op op(k);
  g.set_outputs(
      {g.add_node(op, {x, y}, infer_shape(op, std::vector{a.shape(), b.shape()}).value())});
  return interp::run(g, {{"a", a}, {"b", b}})[0];
}

void check_close(const std::vector<double>& got, const std::vector<double>& want, double tol) {
  REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    INFO("index " << i << ": got " << got[i] << ", want " << want[i]);
    if (std::isnan(want[i]))
      CHECK(std::isnan(got[i]));
    else if (std::isinf(want[i]))
      CHECK(got[i] == want[i]);
    else
      CHECK(std::fabs(got[i] - want[i]) <= tol * (1 + std::fabs(want[i])));
  }
}

} // namespace

TEST_CASE("buffer: f16 and bf16 store with round-to-nearest-even") {
  Buffer h(Shape({6}, DType::F16));
  // 1 + 2^-11 is halfway between 1 and the next f16 (1 + 2^-10): ties to even -> 1.
  h.set_f64(0, 1.0 + std::ldexp(1.0, -11));
  h.set_f64(1, 1.0 + 3 * std::ldexp(1.0, -11)); // halfway above 1+2^-10 -> 1 + 2^-9 (even)
  h.set_f64(2, 65504.0);                        // largest f16
  h.set_f64(3, 65520.0);                        // rounds past the largest: inf
  h.set_f64(4, std::ldexp(1.0, -24));           // smallest subnormal
  h.set_f64(5, -0.0);
  CHECK(h.get_f64(0) == 1.0);
  CHECK(h.get_f64(1) == 1.0 + std::ldexp(1.0, -9));
  CHECK(h.get_f64(2) == 65504.0);
  CHECK(std::isinf(h.get_f64(3)));
  CHECK(h.get_f64(4) == std::ldexp(1.0, -24));
  CHECK(std::signbit(h.get_f64(5)));
  Buffer b(Shape({3}, DType::BF16));
  b.set_f64(0, 1.0 + std::ldexp(1.0, -8)); // halfway between 1 and 1 + 2^-7: ties to even -> 1
  b.set_f64(1, 3.0);
  b.set_f64(2, kNaN);
  CHECK(b.get_f64(0) == 1.0);
  CHECK(b.get_f64(1) == 3.0);
  CHECK(std::isnan(b.get_f64(2)));
}

TEST_CASE("buffer: float to integer stores saturate and map NaN to zero") {
  Buffer b = Buffer::from_f64(Shape({5}, DType::I8), std::vector{300.0, -300.0, kNaN, -2.7, 2.7});
  CHECK(b.to_i64() == std::vector<int64_t>{127, -128, 0, -2, 2});
  Buffer u = Buffer::from_f64(Shape({2}, DType::U32), std::vector{-1.0, 5e9});
  CHECK(u.to_i64() == std::vector<int64_t>{0, 4294967295});
  Buffer t = Buffer::from_f64(Shape({3}, DType::Bool), std::vector{0.0, -0.5, kNaN});
  CHECK(t.to_i64() == std::vector<int64_t>{0, 1, 1});
}

TEST_CASE("run: missing and mismatched feeds are named") {
  Graph g("feeds");
  auto x = g.input("x", Shape({2}, DType::F32));
  auto w = g.param("w", Shape({2}, DType::F32));
  g.set_outputs({g.binary(BinaryOp::Add, x, w, Shape({2}, DType::F32))});
  Buffer two = Buffer::f32({2}, std::vector<float>{1, 2});
  test::check_error([&] { interp::run(g, {}, {{"w", two}}); }, ErrorKind::Runtime,
                    "run: missing input \"x\" (f32[2]) of graph @feeds");
  test::check_error([&] { interp::run(g, {{"x", two}}); }, ErrorKind::Runtime,
                    "run: missing param \"w\"");
  test::check_error(
      [&] { interp::run(g, {{"x", Buffer::f32({3}, std::vector<float>{1, 2, 3})}}, {{"w", two}}); },
      ErrorKind::Runtime, "run: input \"x\" is f32[3] but graph @feeds expects f32[2]");
  CHECK(interp::run(g, {{"x", two}}, {{"w", two}})[0].to_f64() == std::vector<double>{2, 4});
  Graph d("dyn");
  d.set_outputs({d.input("x", Shape({Dim::dynamic(sym::kBatch)}, DType::F32))});
  test::check_error([&] { interp::run(d, {}); }, ErrorKind::Runtime, "bind them first");
}

TEST_CASE("interp: activations match their closed forms") {
  std::vector<double> xs{-2.0, -0.5, 0.0, 0.5, 3.0};
  auto map = [&](auto f) {
    std::vector<double> out;
    for (double v : xs) out.push_back(f(v));
    return out;
  };
  // erf-GELU 0.5 x (1 + erf(x / sqrt 2)), values from Python's math.erf.
  check_close(
      unary(OpKind::Gelu, xs),
      {-0.04550026389635842, -0.15426876936299344, 0.0, 0.34573123063700656, 2.99595030590511},
      1e-14);
  check_close(unary(OpKind::GeluApprox, xs), map([](double v) {
                return 0.5 * v * (1 + std::tanh(0.7978845608028654 * (v + 0.044715 * v * v * v)));
              }),
              1e-14);
  check_close(unary(OpKind::Sigmoid, {-800.0, 0.0, 800.0}), {0.0, 0.5, 1.0}, 0);
  check_close(unary(OpKind::Silu, {-1.0, 1.0}), {-0.2689414213699951, 0.7310585786300049}, 1e-15);
  check_close(unary(OpKind::Softplus, {-1000.0, 0.0, 1000.0}), {0.0, std::log(2.0), 1000.0}, 1e-15);
  check_close(unary(OpKind::LogSigmoid, {0.0, -1000.0}), {-std::log(2.0), -1000.0}, 1e-15);
  check_close(unary(OpKind::Round, {0.5, 1.5, 2.5, -0.5, -1.5}), {0, 2, 2, -0.0, -2}, 0);
  check_close(unary(OpKind::Sign, {-3.0, 0.0, 2.0, kNaN}), {-1, 0, 1, kNaN}, 0);
  check_close(unary(OpKind::HardSwish, {-4.0, -1.0, 1.0, 4.0}), {0, -1.0 / 3, 2.0 / 3, 4}, 1e-15);
  check_close(unary(OpKind::HardSigmoid, {-4.0, 0.0, 4.0}), {0, 0.5, 1}, 0);
  check_close(unary(OpKind::Elu, {-1.0, 2.0}), {std::exp(-1.0) - 1, 2.0}, 1e-15);
  // The default slope is the f32 0.01 of LeakyReluAttrs.
  check_close(unary(OpKind::LeakyRelu, {-10.0, 10.0}), {-10.0 * double(0.01f), 10.0}, 1e-15);
  check_close(
      unary(OpKind::LeakyRelu, {-10.0}, DType::F64, Op(OpKind::LeakyRelu, LeakyReluAttrs{0.25f})),
      {-2.5}, 0);
  check_close(unary(OpKind::Mish, {1.0}), {1.0 * std::tanh(std::log1p(std::exp(1.0)))}, 1e-15);
  check_close(unary(OpKind::Softsign, {-3.0, 1.0}), {-0.75, 0.5}, 0);
  check_close(unary(OpKind::Rsqrt, {4.0, 0.0}), {0.5, kInfD}, 0);
  check_close(unary(OpKind::Recip, {-4.0}), {-0.25}, 0);
  check_close(unary(OpKind::Relu, {-1.0, kNaN, 2.0}), {0, kNaN, 2}, 0);
  check_close(unary(OpKind::Clamp, {-5.0, 0.5, 9.0, kNaN}, DType::F64,
                    Op(OpKind::Clamp, ClampAttrs{-1.0, 6.0})),
              {-1, 0.5, 6, kNaN}, 0);
}

TEST_CASE("interp: f32 activations round once from the exact value") {
  // exp(1) in f32 is the float nearest e.
  auto got = unary(OpKind::Exp, {1.0}, DType::F32);
  CHECK(got[0] == double(float(std::exp(1.0))));
  auto tanh16 = unary(OpKind::Tanh, {0.5}, DType::F16);
  CHECK(std::fabs(tanh16[0] - std::tanh(0.5)) < std::ldexp(1.0, -11));
}

TEST_CASE("interp: integer activations stay in integers") {
  Graph g("ints");
  Shape s({4}, DType::I32);
  auto x = g.input("x", s);
  g.set_outputs({g.add_node(Op(OpKind::Relu), {x}, s), g.add_node(Op(OpKind::Neg), {x}, s),
                 g.add_node(Op(OpKind::Abs), {x}, s)});
  auto out =
      interp::run(g, {{"x", Buffer::from_i64(s, std::vector<int64_t>{-3, 0, 7, INT32_MIN})}});
  CHECK(out[0].to_i64() == std::vector<int64_t>{0, 0, 7, 0});
  // -INT32_MIN does not fit i32: it saturates to INT32_MAX (stores saturate), no UB.
  CHECK(out[1].to_i64() == std::vector<int64_t>{3, 0, -7, INT32_MAX});
  CHECK(out[2].to_i64() == std::vector<int64_t>{3, 0, 7, INT32_MAX});
}

TEST_CASE("interp: binary ops broadcast like numpy") {
  Buffer a = Buffer::f32({2, 3}, std::vector<float>{1, 2, 3, 4, 5, 6});
  Buffer row = Buffer::f32({3}, std::vector<float>{10, 20, 30});
  Buffer col = Buffer::f32({2, 1}, std::vector<float>{100, 200});
  CHECK(binary(OpKind::Add, a, row).to_f64() == std::vector<double>{11, 22, 33, 14, 25, 36});
  CHECK(binary(OpKind::Sub, a, col).to_f64() ==
        std::vector<double>{-99, -98, -97, -196, -195, -194});
  Buffer outer = binary(OpKind::Mul, col, row); // [2,1] x [3] -> [2,3]
  CHECK(outer.shape() == Shape({2, 3}, DType::F32));
  CHECK(outer.to_f64() == std::vector<double>{1000, 2000, 3000, 2000, 4000, 6000});
  Buffer scalar = Buffer::f32({}, std::vector<float>{2});
  CHECK(binary(OpKind::Pow, a, scalar).to_f64() == std::vector<double>{1, 4, 9, 16, 25, 36});
  CHECK(binary(OpKind::Div, scalar, a).get_f64(3) == 0.5);
  Buffer lt = binary(OpKind::Lt, a, Buffer::f32({1}, std::vector<float>{3.5}));
  CHECK(lt.dtype() == DType::Bool);
  CHECK(lt.to_i64() == std::vector<int64_t>{1, 1, 1, 0, 0, 0});
}

TEST_CASE("interp: max, min and mod follow torch.maximum, torch.minimum and torch.fmod") {
  Buffer a = Buffer::from_f64(Shape({4}, DType::F64), std::vector{1.0, kNaN, -7.5, 7.5});
  Buffer b = Buffer::from_f64(Shape({4}, DType::F64), std::vector{kNaN, 2.0, 2.0, -2.0});
  auto mx = binary(OpKind::Max, a, b).to_f64();
  CHECK(std::isnan(mx[0]));
  CHECK(std::isnan(mx[1]));
  CHECK(mx[2] == 2.0);
  auto md = binary(OpKind::Mod, a, b).to_f64();
  CHECK(md[2] == -1.5); // sign of the dividend
  CHECK(md[3] == 1.5);
}

TEST_CASE("interp: integer arithmetic is defined for every input") {
  Shape s({6}, DType::I64);
  Buffer a = Buffer::from_i64(s, std::vector<int64_t>{7, -7, 7, INT64_MIN, INT64_MAX, 5});
  Buffer b = Buffer::from_i64(s, std::vector<int64_t>{2, 2, 0, -1, 1, -3});
  CHECK(binary(OpKind::Div, a, b).to_i64() ==
        std::vector<int64_t>{3, -3, 0, INT64_MIN, INT64_MAX, -1}); // truncation, x/0 = 0
  CHECK(binary(OpKind::Mod, a, b).to_i64() == std::vector<int64_t>{1, -1, 0, 0, 0, 2});
  CHECK(binary(OpKind::Add, a, b).to_i64()[4] == INT64_MIN); // wraps around
  Buffer p = binary(OpKind::Pow, Buffer::i64({4}, std::vector<int64_t>{2, -1, 3, 2}),
                    Buffer::i64({4}, std::vector<int64_t>{10, 3, 0, -1}));
  CHECK(p.to_i64() == std::vector<int64_t>{1024, -1, 1, 0});
}

TEST_CASE("interp: mixed dtypes compute in the promoted type") {
  Buffer i = Buffer::from_i64(Shape({2}, DType::I32), std::vector<int64_t>{1, 2});
  Buffer f = Buffer::f32({2}, std::vector<float>{0.5f, 0.25f});
  Buffer r = binary(OpKind::Add, i, f);
  CHECK(r.dtype() == DType::F32);
  CHECK(r.to_f64() == std::vector<double>{1.5, 2.25});
  Buffer t = Buffer::from_i64(Shape({3}, DType::Bool), std::vector<int64_t>{1, 0, 1});
  Buffer u = Buffer::from_i64(Shape({3}, DType::Bool), std::vector<int64_t>{1, 1, 0});
  CHECK(binary(OpKind::And, t, u).to_i64() == std::vector<int64_t>{1, 0, 0});
  CHECK(binary(OpKind::Or, t, u).to_i64() == std::vector<int64_t>{1, 1, 1});
}

TEST_CASE("interp: where selects with broadcasting and cast converts") {
  Graph g("sel");
  auto c = g.input("c", Shape({2, 1}, DType::Bool));
  auto a = g.input("a", Shape({3}, DType::F32));
  auto b = g.input("b", Shape({}, DType::F32));
  Op where(OpKind::Where);
  auto w = g.add_node(where, {c, a, b}, Shape({2, 3}, DType::F32));
  auto k = g.add_node(Op(OpKind::Cast, CastAttrs{DType::I32}), {w}, Shape({2, 3}, DType::I32));
  g.set_outputs({w, k});
  verify(g);
  auto out = interp::run(
      g, {{"c", Buffer::from_i64(Shape({2, 1}, DType::Bool), std::vector<int64_t>{1, 0})},
          {"a", Buffer::f32({3}, std::vector<float>{1.5f, -2.5f, 3.75f})},
          {"b", Buffer::f32({}, std::vector<float>{9})}});
  CHECK(out[0].to_f64() == std::vector<double>{1.5, -2.5, 3.75, 9, 9, 9});
  CHECK(out[1].to_i64() == std::vector<int64_t>{1, -2, 3, 9, 9, 9}); // toward zero
}

TEST_CASE("interp: complex numbers add and multiply") {
  Buffer a(Shape({2}, DType::C64)), b(Shape({2}, DType::C64));
  a.set_c64(0, {1, 2});
  a.set_c64(1, {0, 1});
  b.set_c64(0, {3, -1});
  b.set_c64(1, {0, 1});
  Buffer m = binary(OpKind::Mul, a, b);
  CHECK(m.get_c64(0) == std::complex<float>(5, 5)); // (1+2i)(3-i) = 3 - i + 6i + 2 = 5 + 5i
  CHECK(m.get_c64(1) == std::complex<float>(-1, 0));
  test::check_error([&] { binary(OpKind::Max, a, b); }, ErrorKind::Unsupported,
                    "max: not defined for complex operands");
}

TEST_CASE("interp: a constant node yields its bytes") {
  Graph g("c");
  float v = 2.5f;
  Bytes bytes;
  bytes.data.resize(4);
  std::memcpy(bytes.data.data(), &v, 4);
  g.set_outputs(
      {g.add_node(Op(OpKind::Constant, ConstantAttrs{bytes}), {}, Shape::scalar(DType::F32))});
  CHECK(interp::run(g, {})[0].get_f64(0) == 2.5);
}
