// tests/test_interp_data.cpp -- interpreter kernels of reductions, scans, softmax, data movement
// and gather: hand-derived values, naive reference loops, dtypes, empty axes and error paths.
#include "support/check_error.hpp"

#include <rlx/all.hpp>

#include <cmath>
#include <complex>
#include <cstring>
#include <limits>
#include <vector>

using namespace rlx;
using namespace rlx::ir;
using rlx::Buffer;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInfD = std::numeric_limits<double>::infinity();
constexpr int64_t kI64Max = std::numeric_limits<int64_t>::max();
constexpr int64_t kI64Min = std::numeric_limits<int64_t>::min();

Buffer make(DType t, std::vector<int64_t> dims, std::vector<double> values) {
  return Buffer::from_f64(Shape::of(dims, t), values);
}

Buffer make_i(DType t, std::vector<int64_t> dims, std::vector<int64_t> values) {
  return Buffer::from_i64(Shape::of(dims, t), values);
}

/// 0, 1, 2, ... as `t`.
Buffer iota(DType t, std::vector<int64_t> dims) {
  Buffer b(Shape::of(dims, t));
  for (int64_t i = 0; i < b.numel(); ++i) b.set_i64(i, i);
  return b;
}

/// Evaluates one node of `op` on the operands; its shape comes from the op's shape rule.
Buffer eval(const Op& op, const std::vector<Buffer>& operands) {
  std::vector<Shape> shapes;
  std::vector<const Buffer*> ptrs;
  for (const Buffer& b : operands) {
    shapes.push_back(b.shape());
    ptrs.push_back(&b);
  }
  std::optional<Shape> shape = infer_shape(op, shapes);
  REQUIRE(shape.has_value());
  Node n{NodeId(1), op, {}, *shape, std::nullopt, {}};
  Buffer out = rlx::interp::eval_node(n, ptrs);
  CHECK(out.shape() == *shape);
  return out;
}

Buffer eval1(const Op& op, const Buffer& x) { return eval(op, {x}); }

std::vector<int64_t> dims_of(const Buffer& b) { return b.shape().sizes(); }

/// Elementwise equality where NaN equals NaN.
bool same_values(const std::vector<double>& got, const std::vector<double>& want) {
  if (got.size() != want.size()) return false;
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(want[i]) ? !std::isnan(got[i]) : got[i] != want[i]) return false;
  }
  return true;
}

/// An f16 buffer holding raw bit patterns (so NaN payloads and -0 can be checked bytewise).
Buffer f16_bits(std::vector<int64_t> dims, std::vector<uint16_t> bits) {
  Buffer b(Shape::of(dims, DType::F16));
  REQUIRE(b.bytes().size() == bits.size() * 2);
  std::memcpy(b.bytes().data(), bits.data(), bits.size() * 2);
  return b;
}

std::vector<uint16_t> f16_bits_of(const Buffer& b) {
  std::vector<uint16_t> bits(std::size_t(b.numel()));
  std::memcpy(bits.data(), b.bytes().data(), bits.size() * 2);
  return bits;
}

Op reduce_op(OpKind k, Ints axes, bool keep_dim = false) {
  return Op(k, ReduceAttrs{std::move(axes), keep_dim});
}

} // namespace

// ---------------------------------------------------------------------------------------------
// Reductions

TEST_CASE("interp: reduce_sum over the last axis of a 2x3 matrix sums each row") {
  Buffer x = make(DType::F32, {2, 3}, {1, 2, 3, 4, 5, 6});
  Buffer y = eval1(reduce_op(OpKind::ReduceSum, {1}), x);
  CHECK(dims_of(y) == std::vector<int64_t>{2});
  CHECK(y.to_f64() == std::vector<double>{6, 15}); // 1+2+3, 4+5+6
}

TEST_CASE("interp: reduce_sum over a negative axis keeps size-1 dims with keep_dim") {
  Buffer x = make(DType::F64, {2, 3}, {1, 2, 3, 4, 5, 6});
  Buffer y = eval1(reduce_op(OpKind::ReduceSum, {-2}, true), x);
  CHECK(dims_of(y) == std::vector<int64_t>{1, 3});
  CHECK(y.to_f64() == std::vector<double>{5, 7, 9}); // column sums 1+4, 2+5, 3+6
  Buffer all = eval1(reduce_op(OpKind::ReduceSum, {0, -1}, true), x);
  CHECK(dims_of(all) == std::vector<int64_t>{1, 1});
  CHECK(all.to_f64() == std::vector<double>{21});
  Buffer scalar = eval1(reduce_op(OpKind::ReduceSum, {1, 0}), x);
  CHECK(scalar.shape().rank() == 0);
  CHECK(scalar.to_f64() == std::vector<double>{21});
}

TEST_CASE("interp: float sums add each output's elements in increasing order, whatever the axes") {
  // In f64, 1e20 + 1 is 1e20: summed in order, 1e20, 1, -1e20, 1 gives 1 and 1, 1e20, 1, -1e20
  // gives 0, where the two large ones first (or pairwise sums) give 2. Over the leading axes of
  // [2, 2, 2] (a bias gradient's layout), the trailing one, all axes, and through size-1 axes.
  const double big = 1e20;
  Buffer cols = make(DType::F64, {2, 2, 2}, {big, 1, 1, big, -big, 1, 1, -big});
  // x[i, j, k]: output k of a sum over (i, j) adds x[0,0,k], x[0,1,k], x[1,0,k], x[1,1,k].
  CHECK(eval1(reduce_op(OpKind::ReduceSum, {0, 1}), cols).to_f64() == std::vector<double>{1, 0});
  Buffer rows = make(DType::F64, {2, 1, 4}, {big, 1, -big, 1, 1, big, 1, -big});
  CHECK(eval1(reduce_op(OpKind::ReduceSum, {2}), rows).to_f64() == std::vector<double>{1, 0});
  // big, 1, -big, 1, 1, big, 1, -big: 1 after four, then 2, big, big, 0.
  CHECK(eval1(reduce_op(OpKind::ReduceSum, {0, 1, 2}), rows).to_f64() == std::vector<double>{0});
  Buffer mid = make(DType::F64, {1, 4, 1, 2}, {big, 1, 1, 1, -big, 1, 1, 1});
  CHECK(eval1(reduce_op(OpKind::ReduceMean, {1}), mid).to_f64() == std::vector<double>{0.25, 1});
}

TEST_CASE("interp: reduce_sum over two non-adjacent axes of an i32 tensor") {
  // x[i,j,k] = 6i + 2j + k on [2,3,2]; sum over i and k: 4*(2j) + 2*(0+6) + 2*(0+1) = 8j + 14.
  Buffer x = iota(DType::I32, {2, 3, 2});
  Buffer y = eval1(reduce_op(OpKind::ReduceSum, {0, 2}), x);
  CHECK(y.dtype() == DType::I32);
  CHECK(y.to_i64() == std::vector<int64_t>{14, 22, 30});
}

TEST_CASE("interp: an empty axes list reduces nothing") {
  Buffer x = make(DType::F32, {2, 2}, {1.5, -2, kNaN, 4});
  for (OpKind k : {OpKind::ReduceSum, OpKind::ReduceMean, OpKind::ReduceMax, OpKind::ReduceMin,
                   OpKind::ReduceProd}) {
    Buffer y = eval1(reduce_op(k, {}), x);
    CHECK(dims_of(y) == std::vector<int64_t>{2, 2});
    CHECK(same_values(y.to_f64(), {1.5, -2, kNaN, 4}));
  }
  // A bool operand still becomes i64 (the shape rule), with values 0/1.
  Buffer b = make_i(DType::Bool, {3}, {1, 0, 1});
  Buffer yb = eval1(reduce_op(OpKind::ReduceSum, {}), b);
  CHECK(yb.dtype() == DType::I64);
  CHECK(yb.to_i64() == std::vector<int64_t>{1, 0, 1});
}

TEST_CASE("interp: reduce over a size-1 axis returns the values unchanged") {
  Buffer x = make(DType::F32, {3, 1}, {7, -8, 9});
  for (OpKind k : {OpKind::ReduceSum, OpKind::ReduceMean, OpKind::ReduceMax, OpKind::ReduceMin,
                   OpKind::ReduceProd}) {
    Buffer y = eval1(reduce_op(k, {-1}), x);
    CHECK(dims_of(y) == std::vector<int64_t>{3});
    CHECK(y.to_f64() == std::vector<double>{7, -8, 9});
  }
}

TEST_CASE("interp: reduce_mean of floats divides and of integers truncates toward zero") {
  Buffer f = make(DType::F64, {2, 2}, {1, 2, 3, 6});
  CHECK(eval1(reduce_op(OpKind::ReduceMean, {1}), f).to_f64() == std::vector<double>{1.5, 4.5});
  // rows: (-7 + 0)/2 = -3.5 -> -3; (7 + 0)/2 = 3.5 -> 3; (-1 - 1 - 1)/3 = -1; (5 + 5 + 1)/3 -> 3
  Buffer i = make_i(DType::I64, {2, 2}, {-7, 0, 7, 0});
  CHECK(eval1(reduce_op(OpKind::ReduceMean, {1}), i).to_i64() == std::vector<int64_t>{-3, 3});
  Buffer j = make_i(DType::I32, {2, 3}, {-1, -1, -1, 5, 5, 1});
  Buffer mj = eval1(reduce_op(OpKind::ReduceMean, {-1}), j);
  CHECK(mj.dtype() == DType::I32);
  CHECK(mj.to_i64() == std::vector<int64_t>{-1, 3});
}

TEST_CASE("interp: reduce_max and reduce_min propagate NaN wherever it appears") {
  Buffer x = make(DType::F32, {4, 3}, {1, kNaN, 3, 4, 5, -kInfD, kNaN, 1, 2, 0, 2, kNaN});
  Buffer mx = eval1(reduce_op(OpKind::ReduceMax, {1}), x);
  Buffer mn = eval1(reduce_op(OpKind::ReduceMin, {1}), x);
  CHECK(same_values(mx.to_f64(), {kNaN, 5, kNaN, kNaN}));
  CHECK(same_values(mn.to_f64(), {kNaN, -kInfD, kNaN, kNaN}));
  // All -inf stays -inf for max (the initial value must not leak).
  Buffer neg = make(DType::F64, {2}, {-kInfD, -kInfD});
  CHECK(eval1(reduce_op(OpKind::ReduceMax, {0}), neg).to_f64() == std::vector<double>{-kInfD});
}

TEST_CASE("interp: reduce_max and reduce_min of integers compare exactly in int64") {
  // 2^53 and 2^53 + 1 are equal as doubles; the kernel must tell them apart.
  int64_t big = int64_t(1) << 53;
  Buffer x = make_i(DType::I64, {3}, {big, big + 1, -5});
  CHECK(eval1(reduce_op(OpKind::ReduceMax, {0}), x).to_i64() == std::vector<int64_t>{big + 1});
  CHECK(eval1(reduce_op(OpKind::ReduceMin, {0}), x).to_i64() == std::vector<int64_t>{-5});
  Buffer ext = make_i(DType::I64, {2}, {kI64Min, kI64Max});
  CHECK(eval1(reduce_op(OpKind::ReduceMax, {0}), ext).to_i64() == std::vector<int64_t>{kI64Max});
  CHECK(eval1(reduce_op(OpKind::ReduceMin, {0}), ext).to_i64() == std::vector<int64_t>{kI64Min});
}

TEST_CASE("interp: reduce_prod multiplies floats and wraps int64 products") {
  Buffer f = make(DType::F32, {2, 2}, {1, 2, 3, 4});
  CHECK(eval1(reduce_op(OpKind::ReduceProd, {0, 1}), f).to_f64() == std::vector<double>{24});
  CHECK(eval1(reduce_op(OpKind::ReduceProd, {0}), f).to_f64() == std::vector<double>{3, 8});
  // (2^63 - 1) * 2 = 2^64 - 2 == -2 (mod 2^64); 2^62 * 4 = 2^64 == 0 (mod 2^64).
  Buffer i = make_i(DType::I64, {2, 2}, {kI64Max, 2, int64_t(1) << 62, 4});
  CHECK(eval1(reduce_op(OpKind::ReduceProd, {1}), i).to_i64() == std::vector<int64_t>{-2, 0});
}

TEST_CASE("interp: reduce_sum of int64 wraps around instead of overflowing") {
  Buffer i = make_i(DType::I64, {2, 2}, {kI64Max, 1, kI64Min, -1});
  // 2^63 - 1 + 1 wraps to -2^63; -2^63 - 1 wraps to 2^63 - 1.
  CHECK(eval1(reduce_op(OpKind::ReduceSum, {1}), i).to_i64() ==
        std::vector<int64_t>{kI64Min, kI64Max});
}

TEST_CASE("interp: reduce_sum of i32 accumulates in int64 and saturates when storing") {
  // 2^31 - 1 + 1 - 1: the int64 running sum never leaves i32 range at the end.
  Buffer ok = make_i(DType::I32, {3}, {2147483647, 1, -1});
  CHECK(eval1(reduce_op(OpKind::ReduceSum, {0}), ok).to_i64() == std::vector<int64_t>{2147483647});
  // 2^31 - 1 + 1 = 2^31 does not fit i32: stored through the buffer's saturating conversion.
  Buffer over = make_i(DType::I32, {2}, {2147483647, 1});
  CHECK(eval1(reduce_op(OpKind::ReduceSum, {0}), over).to_i64() ==
        std::vector<int64_t>{2147483647});
}

TEST_CASE("interp: reductions of bool count into i64") {
  Buffer b = make_i(DType::Bool, {2, 3}, {1, 0, 1, 1, 1, 1});
  Buffer sum = eval1(reduce_op(OpKind::ReduceSum, {1}), b);
  CHECK(sum.dtype() == DType::I64);
  CHECK(sum.to_i64() == std::vector<int64_t>{2, 3});
  CHECK(eval1(reduce_op(OpKind::ReduceMax, {1}), b).to_i64() == std::vector<int64_t>{1, 1});
  CHECK(eval1(reduce_op(OpKind::ReduceMin, {1}), b).to_i64() == std::vector<int64_t>{0, 1});
  CHECK(eval1(reduce_op(OpKind::ReduceProd, {1}), b).to_i64() == std::vector<int64_t>{0, 1});
  // mean: 2/3 truncates to 0, 3/3 = 1.
  CHECK(eval1(reduce_op(OpKind::ReduceMean, {1}), b).to_i64() == std::vector<int64_t>{0, 1});
}

TEST_CASE("interp: reduce_sum of f16 accumulates in double and rounds once") {
  // In f16, 2048 + 1 rounds back to 2048 (spacing 2), so a running f16 sum would stay 2048;
  // the exact sum 2050 is representable.
  Buffer x = make(DType::F16, {3}, {2048, 1, 1});
  Buffer y = eval1(reduce_op(OpKind::ReduceSum, {0}), x);
  CHECK(y.dtype() == DType::F16);
  CHECK(y.to_f64() == std::vector<double>{2050});
}

TEST_CASE("interp: reductions over a zero-length axis give the identities") {
  Buffer f = make(DType::F32, {0, 3}, {});
  CHECK(eval1(reduce_op(OpKind::ReduceSum, {0}), f).to_f64() == std::vector<double>{0, 0, 0});
  CHECK(eval1(reduce_op(OpKind::ReduceProd, {0}), f).to_f64() == std::vector<double>{1, 1, 1});
  Buffer mean = eval1(reduce_op(OpKind::ReduceMean, {0}), f);
  CHECK(same_values(mean.to_f64(), {kNaN, kNaN, kNaN}));
  Buffer i = make_i(DType::I32, {2, 0}, {});
  CHECK(eval1(reduce_op(OpKind::ReduceMean, {1}), i).to_i64() == std::vector<int64_t>{0, 0});
  CHECK(eval1(reduce_op(OpKind::ReduceSum, {-1}), i).to_i64() == std::vector<int64_t>{0, 0});
  CHECK(eval1(reduce_op(OpKind::ReduceProd, {1}), i).to_i64() == std::vector<int64_t>{1, 1});
  // Reducing a non-empty axis of an empty tensor gives an empty result, even for max.
  Buffer e = eval1(reduce_op(OpKind::ReduceMax, {1}), f);
  CHECK(dims_of(e) == std::vector<int64_t>{0});
}

TEST_CASE("interp: reduce_max and reduce_min over an empty axis throw a value error") {
  Buffer f = make(DType::F32, {0, 3}, {});
  test::check_error([&] { eval1(reduce_op(OpKind::ReduceMax, {0}), f); }, ErrorKind::Value,
                    "reduce_max: cannot reduce an empty axis (f32[0,3])");
  Buffer i = make_i(DType::I32, {2, 0}, {});
  test::check_error([&] { eval1(reduce_op(OpKind::ReduceMin, {-1}), i); }, ErrorKind::Value,
                    "reduce_min: cannot reduce an empty axis (i32[2,0])");
}

TEST_CASE("interp: reductions of a 3x5x7 tensor match naive loops") {
  // x = (flat index) / 2 - 3 in f64: every partial sum is exact, so equality is exact.
  Buffer x(Shape({3, 5, 7}, DType::F64));
  auto val = [](int64_t i, int64_t j, int64_t k) { return double(i * 35 + j * 7 + k) / 2 - 3; };
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t j = 0; j < 5; ++j)
      for (int64_t k = 0; k < 7; ++k) x.set_f64(i * 35 + j * 7 + k, val(i, j, k));
  std::vector<double> want_sum;
  for (int64_t j = 0; j < 5; ++j) {
    double s = 0;
    for (int64_t k = 0; k < 7; ++k)
      for (int64_t i = 0; i < 3; ++i) s += val(i, j, k);
    want_sum.push_back(s);
  }
  CHECK(eval1(reduce_op(OpKind::ReduceSum, {0, -1}), x).to_f64() == want_sum);

  // Max over the last axis of scrambled i32 values, with keep_dim.
  Buffer y(Shape({3, 5, 7}, DType::I32));
  auto scr = [](int64_t f) { return (f * 37) % 101 - 50; };
  for (int64_t f = 0; f < 105; ++f) y.set_i64(f, scr(f));
  std::vector<int64_t> want_max;
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t j = 0; j < 5; ++j) {
      int64_t m = scr(i * 35 + j * 7);
      for (int64_t k = 1; k < 7; ++k) m = std::max(m, scr(i * 35 + j * 7 + k));
      want_max.push_back(m);
    }
  Buffer my = eval1(reduce_op(OpKind::ReduceMax, {2}, true), y);
  CHECK(dims_of(my) == std::vector<int64_t>{3, 5, 1});
  CHECK(my.to_i64() == want_max);
}

TEST_CASE("interp: reduce_max of c64 is unsupported") {
  Buffer c(Shape({2}, DType::C64));
  test::check_error([&] { eval1(reduce_op(OpKind::ReduceMax, {0}), c); }, ErrorKind::Unsupported,
                    "reduce_max");
}

TEST_CASE("interp: reduce_sum of c64 adds real and imaginary parts") {
  Buffer c(Shape({3}, DType::C64));
  c.set_c64(0, {1, 2});
  c.set_c64(1, {3, -4});
  c.set_c64(2, {0.5f, 0.25f});
  Buffer s = eval1(reduce_op(OpKind::ReduceSum, {0}), c);
  CHECK(s.get_c64(0) == std::complex<float>(4.5f, -1.75f)); // (1+3+0.5, 2-4+0.25)
}

// ---------------------------------------------------------------------------------------------
// argmax / argmin

TEST_CASE("interp: argmax and argmin return the first index of the extreme value") {
  Buffer x = make(DType::F32, {2, 3}, {1, 3, 3, 2, -1, -1});
  Buffer amax = eval1(Op(OpKind::ArgMax, ArgReduceAttrs{1, false}), x);
  CHECK(amax.dtype() == DType::I64);
  CHECK(dims_of(amax) == std::vector<int64_t>{2});
  CHECK(amax.to_i64() == std::vector<int64_t>{1, 0}); // row 0: 3 at 1 and 2 -> 1
  Buffer amin = eval1(Op(OpKind::ArgMin, ArgReduceAttrs{-1, false}), x);
  CHECK(amin.to_i64() == std::vector<int64_t>{0, 1}); // row 1: -1 at 1 and 2 -> 1
}

TEST_CASE("interp: argmax along axis 0 with keep_dim keeps a size-1 axis") {
  // columns: (1,2) -> 1, (3,-1) -> 0, (3,-1) -> 0; argmin: 0, 1, 1
  Buffer x = make(DType::F64, {2, 3}, {1, 3, 3, 2, -1, -1});
  Buffer amax = eval1(Op(OpKind::ArgMax, ArgReduceAttrs{-2, true}), x);
  CHECK(dims_of(amax) == std::vector<int64_t>{1, 3});
  CHECK(amax.to_i64() == std::vector<int64_t>{1, 0, 0});
  CHECK(eval1(Op(OpKind::ArgMin, ArgReduceAttrs{0, true}), x).to_i64() ==
        std::vector<int64_t>{0, 1, 1});
  // A size-1 axis always gives 0.
  Buffer one = make(DType::F32, {3, 1}, {5, 6, 7});
  CHECK(eval1(Op(OpKind::ArgMax, ArgReduceAttrs{1, false}), one).to_i64() ==
        std::vector<int64_t>{0, 0, 0});
}

TEST_CASE("interp: argmax and argmin return the first NaN") {
  Buffer x = make(DType::F32, {3, 4}, {1, kNaN, 5, kNaN, kNaN, 9, -9, 0, 2, 8, -3, kNaN});
  CHECK(eval1(Op(OpKind::ArgMax, ArgReduceAttrs{1, false}), x).to_i64() ==
        std::vector<int64_t>{1, 0, 3});
  CHECK(eval1(Op(OpKind::ArgMin, ArgReduceAttrs{1, false}), x).to_i64() ==
        std::vector<int64_t>{1, 0, 3});
}

TEST_CASE("interp: argmax of integers and bools compares exactly") {
  int64_t big = int64_t(1) << 53; // big and big + 1 are equal as doubles
  Buffer x = make_i(DType::I64, {3}, {big, big + 1, big + 1});
  CHECK(eval1(Op(OpKind::ArgMax, ArgReduceAttrs{0, false}), x).to_i64() == std::vector<int64_t>{1});
  Buffer i = make_i(DType::I32, {2, 2}, {-4, -7, 0, 0});
  CHECK(eval1(Op(OpKind::ArgMin, ArgReduceAttrs{1, false}), i).to_i64() ==
        std::vector<int64_t>{1, 0});
  Buffer b = make_i(DType::Bool, {4}, {0, 1, 1, 0});
  CHECK(eval1(Op(OpKind::ArgMax, ArgReduceAttrs{0, false}), b).to_i64() == std::vector<int64_t>{1});
  CHECK(eval1(Op(OpKind::ArgMin, ArgReduceAttrs{0, false}), b).to_i64() == std::vector<int64_t>{0});
}

TEST_CASE("interp: argmax over an empty axis throws a value error") {
  Buffer x = make(DType::F32, {0, 3}, {});
  test::check_error([&] { eval1(Op(OpKind::ArgMax, ArgReduceAttrs{0, false}), x); },
                    ErrorKind::Value, "argmax: cannot reduce an empty axis (f32[0,3])");
  test::check_error([&] { eval1(Op(OpKind::ArgMin, ArgReduceAttrs{-2, true}), x); },
                    ErrorKind::Value, "argmin: cannot reduce an empty axis");
  // A non-empty axis of an empty tensor is fine: the result is empty.
  CHECK(dims_of(eval1(Op(OpKind::ArgMax, ArgReduceAttrs{1, false}), x)) == std::vector<int64_t>{0});
}

// ---------------------------------------------------------------------------------------------
// cumsum

TEST_CASE("interp: cumsum is inclusive by default and exclusive on request") {
  Buffer x = make(DType::F32, {4}, {1, 2, 3, 4});
  CHECK(eval1(Op(OpKind::Cumsum, CumsumAttrs{0, false}), x).to_f64() ==
        std::vector<double>{1, 3, 6, 10});
  CHECK(eval1(Op(OpKind::Cumsum, CumsumAttrs{-1, true}), x).to_f64() ==
        std::vector<double>{0, 1, 3, 6});
}

TEST_CASE("interp: cumsum along the first axis of a matrix runs down the columns") {
  Buffer x = make(DType::F64, {2, 3}, {1, 2, 3, 4, 5, 6});
  CHECK(eval1(Op(OpKind::Cumsum, CumsumAttrs{-2, false}), x).to_f64() ==
        std::vector<double>{1, 2, 3, 5, 7, 9});
  CHECK(eval1(Op(OpKind::Cumsum, CumsumAttrs{0, true}), x).to_f64() ==
        std::vector<double>{0, 0, 0, 1, 2, 3});
  CHECK(eval1(Op(OpKind::Cumsum, CumsumAttrs{1, false}), x).to_f64() ==
        std::vector<double>{1, 3, 6, 4, 9, 15});
}

TEST_CASE("interp: cumsum of integers wraps in int64") {
  Buffer i = make_i(DType::I32, {2, 2}, {5, -7, 100, 23});
  CHECK(eval1(Op(OpKind::Cumsum, CumsumAttrs{1, false}), i).to_i64() ==
        std::vector<int64_t>{5, -2, 100, 123});
  Buffer w = make_i(DType::I64, {3}, {kI64Max, 1, 1});
  CHECK(eval1(Op(OpKind::Cumsum, CumsumAttrs{0, false}), w).to_i64() ==
        std::vector<int64_t>{kI64Max, kI64Min, kI64Min + 1});
  CHECK(eval1(Op(OpKind::Cumsum, CumsumAttrs{0, true}), w).to_i64() ==
        std::vector<int64_t>{0, kI64Max, kI64Min});
}

TEST_CASE("interp: cumsum of f16 accumulates in double") {
  // Running f16 sums would be 2048, 2048, 2048; in double 2048, 2049 (stored as 2048: a tie
  // rounds to the even 2048), 2050.
  Buffer x = make(DType::F16, {3}, {2048, 1, 1});
  CHECK(eval1(Op(OpKind::Cumsum, CumsumAttrs{0, false}), x).to_f64() ==
        std::vector<double>{2048, 2048, 2050});
}

TEST_CASE("interp: cumsum over empty and size-1 axes") {
  Buffer e = make(DType::F32, {0, 3}, {});
  CHECK(eval1(Op(OpKind::Cumsum, CumsumAttrs{0, false}), e).numel() == 0);
  Buffer one = make(DType::F32, {3, 1}, {4, 5, 6});
  CHECK(eval1(Op(OpKind::Cumsum, CumsumAttrs{1, false}), one).to_f64() ==
        std::vector<double>{4, 5, 6});
  CHECK(eval1(Op(OpKind::Cumsum, CumsumAttrs{1, true}), one).to_f64() ==
        std::vector<double>{0, 0, 0});
}

// ---------------------------------------------------------------------------------------------
// softmax

TEST_CASE("interp: softmax of small rows matches the textbook formula") {
  Buffer x = make(DType::F64, {2, 3}, {1, 2, 3, 0, 0, 0});
  Buffer y = eval1(Op(OpKind::Softmax, AxisAttrs{-1}), x);
  double z = std::exp(1.0) + std::exp(2.0) + std::exp(3.0); // no max subtraction here
  std::vector<double> got = y.to_f64();
  CHECK(got[0] == doctest::Approx(std::exp(1.0) / z).epsilon(1e-15));
  CHECK(got[1] == doctest::Approx(std::exp(2.0) / z).epsilon(1e-15));
  CHECK(got[2] == doctest::Approx(std::exp(3.0) / z).epsilon(1e-15));
  CHECK(got[3] == 1.0 / 3);
  CHECK(got[4] == 1.0 / 3);
  CHECK(got[5] == 1.0 / 3);
}

TEST_CASE("interp: softmax along axis 0 normalizes each column") {
  // columns (0,0) -> 1/2 each; (1,0) -> e/(e+1), 1/(e+1); (2,0) -> e^2/(e^2+1), 1/(e^2+1)
  Buffer x = make(DType::F32, {2, 3}, {0, 1, 2, 0, 0, 0});
  std::vector<double> got = eval1(Op(OpKind::Softmax, AxisAttrs{0}), x).to_f64();
  double e = std::exp(1.0), e2 = std::exp(2.0);
  std::vector<double> want = {0.5, e / (e + 1), e2 / (e2 + 1), 0.5, 1 / (e + 1), 1 / (e2 + 1)};
  for (std::size_t i = 0; i < 6; ++i) CHECK(got[i] == doctest::Approx(want[i]).epsilon(1e-6));
}

TEST_CASE("interp: softmax is stable for inputs of +-1e4") {
  // Row 0: 1e4 and 1e4 - 1 dominate: 1/(1+e^-1), e^-1/(1+e^-1); e^-1e4 and e^-2e4 are 0.
  // Row 1: equal huge values share evenly. Row 2: -1e4 vs 1e4 gives exactly 0 and 1.
  Buffer x =
      make(DType::F32, {3, 4}, {1e4, -1e4, 0, 1e4 - 1, 1e4, 1e4, 1e4, 1e4, -1e4, 1e4, -1e4, -1e4});
  std::vector<double> got = eval1(Op(OpKind::Softmax, AxisAttrs{1}), x).to_f64();
  double a = 1 / (1 + std::exp(-1.0)), b = std::exp(-1.0) / (1 + std::exp(-1.0));
  CHECK(got[0] == doctest::Approx(a).epsilon(1e-6));
  CHECK(got[1] == 0.0);
  CHECK(got[2] == 0.0);
  CHECK(got[3] == doctest::Approx(b).epsilon(1e-6));
  for (std::size_t i = 4; i < 8; ++i) CHECK(got[i] == 0.25);
  CHECK(std::vector<double>(got.begin() + 8, got.end()) == std::vector<double>{0, 1, 0, 0});
}

TEST_CASE("interp: softmax of an all -inf row is NaN and -inf entries get 0") {
  Buffer x = make(DType::F32, {3, 3}, {-kInfD, -kInfD, -kInfD, -kInfD, 0, 0, 5, -kInfD, -kInfD});
  Buffer y = eval1(Op(OpKind::Softmax, AxisAttrs{-1}), x);
  CHECK(same_values(y.to_f64(), {kNaN, kNaN, kNaN, 0, 0.5, 0.5, 1, 0, 0}));
}

TEST_CASE("interp: softmax over f16 and a size-1 axis") {
  Buffer h = make(DType::F16, {1, 2}, {3, 3});
  Buffer y = eval1(Op(OpKind::Softmax, AxisAttrs{-1}), h);
  CHECK(y.dtype() == DType::F16);
  CHECK(y.to_f64() == std::vector<double>{0.5, 0.5});
  Buffer one = make(DType::F32, {3, 1}, {-1e4, 0, 1e4});
  CHECK(eval1(Op(OpKind::Softmax, AxisAttrs{1}), one).to_f64() == std::vector<double>{1, 1, 1});
}

// ---------------------------------------------------------------------------------------------
// reshape, transpose

TEST_CASE("interp: reshape keeps the row-major element order") {
  Buffer x = make(DType::F32, {2, 3}, {1, 2, 3, 4, 5, 6});
  Buffer y = eval1(Op(OpKind::Reshape, ReshapeAttrs{{3, -1}}), x);
  CHECK(dims_of(y) == std::vector<int64_t>{3, 2});
  CHECK(y.to_f64() == std::vector<double>{1, 2, 3, 4, 5, 6});
  Buffer b = make_i(DType::Bool, {4}, {1, 0, 0, 1});
  Buffer yb = eval1(Op(OpKind::Reshape, ReshapeAttrs{{2, 1, 2}}), b);
  CHECK(yb.dtype() == DType::Bool);
  CHECK(yb.to_i64() == std::vector<int64_t>{1, 0, 0, 1});
  Buffer e = make(DType::F64, {0, 4}, {});
  CHECK(dims_of(eval1(Op(OpKind::Reshape, ReshapeAttrs{{2, 0}}), e)) == std::vector<int64_t>{2, 0});
}

TEST_CASE("interp: transpose of a 2x3 matrix swaps rows and columns") {
  Buffer x = make(DType::F32, {2, 3}, {1, 2, 3, 4, 5, 6});
  Buffer y = eval1(Op(OpKind::Transpose, TransposeAttrs{{1, 0}}), x);
  CHECK(dims_of(y) == std::vector<int64_t>{3, 2});
  CHECK(y.to_f64() == std::vector<double>{1, 4, 2, 5, 3, 6});
  Buffer z = eval1(Op(OpKind::Transpose, TransposeAttrs{{-1, -2}}), x);
  CHECK(z.to_f64() == std::vector<double>{1, 4, 2, 5, 3, 6});
}

TEST_CASE("interp: transpose of a 3x5x7 tensor matches the index formula for every perm") {
  const int64_t d[3] = {3, 5, 7};
  Buffer x = iota(DType::I32, {3, 5, 7});
  const std::vector<Ints> perms = {{0, 1, 2},  {0, 2, 1}, {1, 0, 2},
                                   {1, -1, 0}, {2, 0, 1}, {-1, -2, -3}};
  for (const Ints& perm : perms) {
    int64_t p[3];
    for (int a = 0; a < 3; ++a)
      p[a] = perm[std::size_t(a)] < 0 ? perm[std::size_t(a)] + 3 : perm[std::size_t(a)];
    Buffer y = eval1(Op(OpKind::Transpose, TransposeAttrs{perm}), x);
    CHECK(dims_of(y) == std::vector<int64_t>{d[p[0]], d[p[1]], d[p[2]]});
    // out[o0, o1, o2] = in[c] with c[p[a]] = o[a]; in flat = c0*35 + c1*7 + c2.
    std::vector<int64_t> want;
    for (int64_t o0 = 0; o0 < d[p[0]]; ++o0)
      for (int64_t o1 = 0; o1 < d[p[1]]; ++o1)
        for (int64_t o2 = 0; o2 < d[p[2]]; ++o2) {
          int64_t c[3];
          c[p[0]] = o0;
          c[p[1]] = o1;
          c[p[2]] = o2;
          want.push_back(c[0] * 35 + c[1] * 7 + c[2]);
        }
    INFO("perm " << perm[0] << "," << perm[1] << "," << perm[2]);
    CHECK(y.to_i64() == want);
  }
}

TEST_CASE("interp: transpose copies f16 and c64 elements bytewise") {
  // f16 bits: 1.0, -0.0, a NaN with a payload, the smallest subnormal, -inf, 65504.
  Buffer h = f16_bits({2, 3}, {0x3c00, 0x8000, 0x7e01, 0x0001, 0xfc00, 0x7bff});
  Buffer yh = eval1(Op(OpKind::Transpose, TransposeAttrs{{1, 0}}), h);
  CHECK(f16_bits_of(yh) == std::vector<uint16_t>{0x3c00, 0x0001, 0x8000, 0xfc00, 0x7e01, 0x7bff});
  Buffer c(Shape({2, 2}, DType::C64));
  c.set_c64(0, {1, -1});
  c.set_c64(1, {2, -2});
  c.set_c64(2, {3, -3});
  c.set_c64(3, {4, -4});
  Buffer yc = eval1(Op(OpKind::Transpose, TransposeAttrs{{1, 0}}), c);
  CHECK(yc.get_c64(0) == std::complex<float>(1, -1));
  CHECK(yc.get_c64(1) == std::complex<float>(3, -3));
  CHECK(yc.get_c64(2) == std::complex<float>(2, -2));
  CHECK(yc.get_c64(3) == std::complex<float>(4, -4));
}

TEST_CASE("interp: a head-splitting transpose of a rank-4 tensor matches the index formula for "
          "1-, 2-, 4- and 8-byte elements") {
  // [2, 3, 4, 5] -> perm: the attention layouts (0,2,1,3) and (0,2,3,1), and a full reversal.
  const int64_t d[4] = {2, 3, 4, 5};
  const std::vector<Ints> perms = {{0, 2, 1, 3}, {0, 2, 3, 1}, {3, 2, 1, 0}};
  for (DType t : {DType::I8, DType::I16, DType::I32, DType::I64, DType::F64}) {
    Buffer x = iota(t, {2, 3, 4, 5}); // values 0..119 fit every dtype
    for (const Ints& p : perms) {
      Buffer y = eval1(Op(OpKind::Transpose, TransposeAttrs{p}), x);
      std::vector<int64_t> want;
      int64_t o[4], c[4];
      for (o[0] = 0; o[0] < d[p[0]]; ++o[0])
        for (o[1] = 0; o[1] < d[p[1]]; ++o[1])
          for (o[2] = 0; o[2] < d[p[2]]; ++o[2])
            for (o[3] = 0; o[3] < d[p[3]]; ++o[3]) {
              for (int a = 0; a < 4; ++a) c[p[std::size_t(a)]] = o[a];
              want.push_back(((c[0] * 3 + c[1]) * 4 + c[2]) * 5 + c[3]);
            }
      INFO("dtype " << ir::dtype_name(t) << ", perm " << p[0] << p[1] << p[2] << p[3]);
      CHECK(dims_of(y) == std::vector<int64_t>{d[p[0]], d[p[1]], d[p[2]], d[p[3]]});
      CHECK(y.to_i64() == want);
    }
  }
}

TEST_CASE("interp: a strided slice of the last axis reads every step-th element") {
  Buffer x = iota(DType::F32, {3, 10});
  Buffer y = eval1(Op(OpKind::Slice, SliceAttrs{1, 1, 3, 3}), x);
  CHECK(dims_of(y) == std::vector<int64_t>{3, 3});
  CHECK(y.to_i64() == std::vector<int64_t>{1, 4, 7, 11, 14, 17, 21, 24, 27});
}

TEST_CASE("interp: transpose handles size-0 and size-1 axes") {
  Buffer e = make(DType::F32, {0, 3}, {});
  CHECK(dims_of(eval1(Op(OpKind::Transpose, TransposeAttrs{{1, 0}}), e)) ==
        std::vector<int64_t>{3, 0});
  Buffer x = make_i(DType::I64, {1, 3, 1}, {7, 8, 9});
  Buffer y = eval1(Op(OpKind::Transpose, TransposeAttrs{{2, 1, 0}}), x);
  CHECK(dims_of(y) == std::vector<int64_t>{1, 3, 1});
  CHECK(y.to_i64() == std::vector<int64_t>{7, 8, 9});
}

// ---------------------------------------------------------------------------------------------
// narrow, slice

TEST_CASE("interp: narrow takes a contiguous window of one axis") {
  Buffer x = make(DType::F32, {2, 4}, {1, 2, 3, 4, 5, 6, 7, 8});
  Buffer y = eval1(Op(OpKind::Narrow, NarrowAttrs{1, 1, 2}), x);
  CHECK(dims_of(y) == std::vector<int64_t>{2, 2});
  CHECK(y.to_f64() == std::vector<double>{2, 3, 6, 7});
  CHECK(eval1(Op(OpKind::Narrow, NarrowAttrs{-2, 1, 1}), x).to_f64() ==
        std::vector<double>{5, 6, 7, 8});
  CHECK(eval1(Op(OpKind::Narrow, NarrowAttrs{-1, 4, 0}), x).numel() == 0);
  Buffer h = f16_bits({3}, {0x7e01, 0x8000, 0x3c00});
  CHECK(f16_bits_of(eval1(Op(OpKind::Narrow, NarrowAttrs{0, 0, 2}), h)) ==
        std::vector<uint16_t>{0x7e01, 0x8000});
}

TEST_CASE("interp: slice with positive and negative steps picks start + k*step") {
  Buffer x = iota(DType::I64, {10});
  CHECK(eval1(Op(OpKind::Slice, SliceAttrs{0, 1, 3, 3}), x).to_i64() ==
        std::vector<int64_t>{1, 4, 7});
  CHECK(eval1(Op(OpKind::Slice, SliceAttrs{0, 8, 4, -2}), x).to_i64() ==
        std::vector<int64_t>{8, 6, 4, 2});
  CHECK(eval1(Op(OpKind::Slice, SliceAttrs{-1, 9, 10, -1}), x).to_i64() ==
        std::vector<int64_t>{9, 8, 7, 6, 5, 4, 3, 2, 1, 0});
  CHECK(eval1(Op(OpKind::Slice, SliceAttrs{0, 0, 0, 5}), x).numel() == 0);
  Buffer b = make_i(DType::Bool, {2, 3}, {1, 0, 0, 0, 1, 1});
  Buffer yb = eval1(Op(OpKind::Slice, SliceAttrs{1, 2, 2, -2}), b);
  CHECK(yb.dtype() == DType::Bool);
  CHECK(yb.to_i64() == std::vector<int64_t>{0, 1, 1, 0}); // columns 2 and 0
}

TEST_CASE("interp: slice of the middle axis of a 3x5x7 tensor with a negative step") {
  Buffer x = iota(DType::I32, {3, 5, 7});
  Buffer y = eval1(Op(OpKind::Slice, SliceAttrs{1, 4, 3, -2}), x);
  CHECK(dims_of(y) == std::vector<int64_t>{3, 3, 7});
  std::vector<int64_t> want;
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t k = 0; k < 3; ++k)
      for (int64_t l = 0; l < 7; ++l) want.push_back(i * 35 + (4 - 2 * k) * 7 + l);
  CHECK(y.to_i64() == want);
}

// ---------------------------------------------------------------------------------------------
// concat

TEST_CASE("interp: concat joins operands along an axis") {
  Buffer a = make(DType::F32, {2, 1}, {1, 2});
  Buffer b = make(DType::F32, {2, 2}, {3, 4, 5, 6});
  Buffer c = make(DType::F32, {2, 0}, {});
  Buffer y = eval(Op(OpKind::Concat, ConcatAttrs{1}), {a, b, c, a});
  CHECK(dims_of(y) == std::vector<int64_t>{2, 4});
  CHECK(y.to_f64() == std::vector<double>{1, 3, 4, 1, 2, 5, 6, 2});
  Buffer z = eval(Op(OpKind::Concat, ConcatAttrs{-2}), {b, b});
  CHECK(dims_of(z) == std::vector<int64_t>{4, 2});
  CHECK(z.to_f64() == std::vector<double>{3, 4, 5, 6, 3, 4, 5, 6});
  Buffer one = eval(Op(OpKind::Concat, ConcatAttrs{0}), {a});
  CHECK(one.to_f64() == std::vector<double>{1, 2});
}

TEST_CASE("interp: concat of i64, bool and c64 operands") {
  Buffer i = eval(Op(OpKind::Concat, ConcatAttrs{0}),
                  {make_i(DType::I64, {2}, {kI64Max, 1}), make_i(DType::I64, {1}, {kI64Min})});
  CHECK(i.to_i64() == std::vector<int64_t>{kI64Max, 1, kI64Min});
  Buffer b = eval(Op(OpKind::Concat, ConcatAttrs{-1}),
                  {make_i(DType::Bool, {1, 2}, {1, 0}), make_i(DType::Bool, {1, 1}, {1})});
  CHECK(b.to_i64() == std::vector<int64_t>{1, 0, 1});
  Buffer c1(Shape({1}, DType::C64)), c2(Shape({1}, DType::C64));
  c1.set_c64(0, {1, 2});
  c2.set_c64(0, {-3, 4});
  Buffer c = eval(Op(OpKind::Concat, ConcatAttrs{0}), {c2, c1});
  CHECK(c.get_c64(0) == std::complex<float>(-3, 4));
  CHECK(c.get_c64(1) == std::complex<float>(1, 2));
  Buffer e = eval(Op(OpKind::Concat, ConcatAttrs{0}),
                  {make(DType::F32, {0, 2}, {}), make(DType::F32, {0, 2}, {})});
  CHECK(dims_of(e) == std::vector<int64_t>{0, 2});
}

// ---------------------------------------------------------------------------------------------
// expand

TEST_CASE("interp: expand broadcasts size-1 axes and adds leading axes") {
  Buffer col = make(DType::F32, {2, 1}, {1, 2});
  Buffer y = eval1(Op(OpKind::Expand, ExpandAttrs{{2, 3}}), col);
  CHECK(y.to_f64() == std::vector<double>{1, 1, 1, 2, 2, 2});
  Buffer z = eval1(Op(OpKind::Expand, ExpandAttrs{{-1, 2}}), col);
  CHECK(dims_of(z) == std::vector<int64_t>{2, 2});
  CHECK(z.to_f64() == std::vector<double>{1, 1, 2, 2});
  Buffer row = make_i(DType::I64, {3}, {7, 8, 9});
  Buffer w = eval1(Op(OpKind::Expand, ExpandAttrs{{2, 1, -1}}), row);
  CHECK(dims_of(w) == std::vector<int64_t>{2, 1, 3});
  CHECK(w.to_i64() == std::vector<int64_t>{7, 8, 9, 7, 8, 9});
  Buffer b = make_i(DType::Bool, {1}, {1});
  Buffer zero = eval1(Op(OpKind::Expand, ExpandAttrs{{0}}), b);
  CHECK(zero.numel() == 0);
  Buffer h = f16_bits({1, 2}, {0x7e01, 0x8000});
  CHECK(f16_bits_of(eval1(Op(OpKind::Expand, ExpandAttrs{{2, 2}}), h)) ==
        std::vector<uint16_t>{0x7e01, 0x8000, 0x7e01, 0x8000});
}

// ---------------------------------------------------------------------------------------------
// reverse

TEST_CASE("interp: reverse flips the listed axes") {
  Buffer x = make(DType::F32, {2, 3}, {1, 2, 3, 4, 5, 6});
  CHECK(eval1(Op(OpKind::Reverse, ReverseAttrs{{1}}), x).to_f64() ==
        std::vector<double>{3, 2, 1, 6, 5, 4});
  CHECK(eval1(Op(OpKind::Reverse, ReverseAttrs{{0, -1}}), x).to_f64() ==
        std::vector<double>{6, 5, 4, 3, 2, 1});
  CHECK(eval1(Op(OpKind::Reverse, ReverseAttrs{{}}), x).to_f64() ==
        std::vector<double>{1, 2, 3, 4, 5, 6});
  Buffer e = make(DType::F32, {0, 2}, {});
  CHECK(eval1(Op(OpKind::Reverse, ReverseAttrs{{0}}), e).numel() == 0);
  Buffer h = f16_bits({3}, {0x7e01, 0x8000, 0x0001});
  CHECK(f16_bits_of(eval1(Op(OpKind::Reverse, ReverseAttrs{{0}}), h)) ==
        std::vector<uint16_t>{0x0001, 0x8000, 0x7e01});
}

TEST_CASE("interp: reverse of a 3x5x7 tensor matches the index formula") {
  Buffer x = iota(DType::I32, {3, 5, 7});
  Buffer y = eval1(Op(OpKind::Reverse, ReverseAttrs{{-1, 0}}), x);
  std::vector<int64_t> want;
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t j = 0; j < 5; ++j)
      for (int64_t k = 0; k < 7; ++k) want.push_back((2 - i) * 35 + j * 7 + (6 - k));
  CHECK(y.to_i64() == want);
}

// ---------------------------------------------------------------------------------------------
// pad

TEST_CASE("interp: constant pad fills with the value") {
  Buffer x = make(DType::F32, {3}, {1, 2, 3});
  Op op(OpKind::Pad, PadAttrs{{2, 1}, PadMode::Constant, 9.0});
  CHECK(eval1(op, x).to_f64() == std::vector<double>{9, 9, 1, 2, 3, 9});
  // [[1,2],[3,4]] with one row above and one column to the right, zeros.
  Buffer m = make(DType::F64, {2, 2}, {1, 2, 3, 4});
  Buffer y = eval1(Op(OpKind::Pad, PadAttrs{{1, 0, 0, 1}, PadMode::Constant, 0.0}), m);
  CHECK(dims_of(y) == std::vector<int64_t>{3, 3});
  CHECK(y.to_f64() == std::vector<double>{0, 0, 0, 1, 2, 0, 3, 4, 0});
}

TEST_CASE("interp: constant pad converts the value to the dtype") {
  Buffer i = make_i(DType::I32, {1}, {4});
  CHECK(eval1(Op(OpKind::Pad, PadAttrs{{1, 1}, PadMode::Constant, -5.0}), i).to_i64() ==
        std::vector<int64_t>{-5, 4, -5});
  Buffer b = make_i(DType::Bool, {1}, {0});
  CHECK(eval1(Op(OpKind::Pad, PadAttrs{{0, 2}, PadMode::Constant, 1.0}), b).to_i64() ==
        std::vector<int64_t>{0, 1, 1});
  Buffer h = f16_bits({1}, {0x7e01});
  // 0.5 in f16 is 0x3800.
  CHECK(f16_bits_of(eval1(Op(OpKind::Pad, PadAttrs{{1, 0}, PadMode::Constant, 0.5}), h)) ==
        std::vector<uint16_t>{0x3800, 0x7e01});
  // An empty axis padded with a constant is all constant.
  Buffer e = make(DType::F32, {0}, {});
  CHECK(eval1(Op(OpKind::Pad, PadAttrs{{1, 2}, PadMode::Constant, 7.0}), e).to_f64() ==
        std::vector<double>{7, 7, 7});
}

TEST_CASE("interp: constant pad of every axis of a 3-D tensor matches the index formula") {
  // [2, 3, 4] padded (1, 2), (0, 1), (3, 2) with -7: out [5, 4, 9].
  const int64_t lo[3] = {1, 0, 3}, in[3] = {2, 3, 4}, out[3] = {5, 4, 9};
  for (DType t : {DType::F32, DType::F64, DType::I8}) {
    Buffer x = iota(t, {2, 3, 4});
    Buffer y = eval1(Op(OpKind::Pad, PadAttrs{{1, 2, 0, 1, 3, 2}, PadMode::Constant, -7.0}), x);
    std::vector<int64_t> want;
    for (int64_t i = 0; i < out[0]; ++i)
      for (int64_t j = 0; j < out[1]; ++j)
        for (int64_t k = 0; k < out[2]; ++k) {
          int64_t a = i - lo[0], b = j - lo[1], c = k - lo[2];
          bool inside = a >= 0 && a < in[0] && b >= 0 && b < in[1] && c >= 0 && c < in[2];
          want.push_back(inside ? (a * 3 + b) * 4 + c : -7);
        }
    INFO("dtype " << ir::dtype_name(t));
    CHECK(dims_of(y) == std::vector<int64_t>{5, 4, 9});
    CHECK(y.to_i64() == want);
  }
}

TEST_CASE("interp: reflect pad mirrors without repeating the edge") {
  // numpy.pad([1,2,3,4], (2,3), 'reflect') = [3,2,1,2,3,4,3,2,1]
  Buffer x = make(DType::F32, {4}, {1, 2, 3, 4});
  CHECK(eval1(Op(OpKind::Pad, PadAttrs{{2, 3}, PadMode::Reflect, 0.0}), x).to_f64() ==
        std::vector<double>{3, 2, 1, 2, 3, 4, 3, 2, 1});
  // 2-D: rows [[1,2,3],[4,5,6]] padded (1,1) on rows and (2,0) on columns:
  // row order 4-row: [4,5,6],[1,2,3],[4,5,6],[1,2,3]; each row r becomes [r2, r1, r0, r1, r2].
  Buffer m = make_i(DType::I64, {2, 3}, {1, 2, 3, 4, 5, 6});
  Buffer y = eval1(Op(OpKind::Pad, PadAttrs{{1, 1, 2, 0}, PadMode::Reflect, 0.0}), m);
  CHECK(dims_of(y) == std::vector<int64_t>{4, 5});
  CHECK(y.to_i64() ==
        std::vector<int64_t>{6, 5, 4, 5, 6, 3, 2, 1, 2, 3, 6, 5, 4, 5, 6, 3, 2, 1, 2, 3});
}

TEST_CASE("interp: edge pad repeats the border values") {
  // numpy.pad([1,2,3], (2,2), 'edge') = [1,1,1,2,3,3,3]
  Buffer x = make(DType::F64, {3}, {1, 2, 3});
  CHECK(eval1(Op(OpKind::Pad, PadAttrs{{2, 2}, PadMode::Edge, 0.0}), x).to_f64() ==
        std::vector<double>{1, 1, 1, 2, 3, 3, 3});
  // [[1,2],[3,4]] with (0,1) rows and (1,1) columns: [[1,1,2,2],[3,3,4,4],[3,3,4,4]]
  Buffer m = make_i(DType::I32, {2, 2}, {1, 2, 3, 4});
  Buffer y = eval1(Op(OpKind::Pad, PadAttrs{{0, 1, 1, 1}, PadMode::Edge, 0.0}), m);
  CHECK(y.to_i64() == std::vector<int64_t>{1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4});
  // A size-1 axis: every padded position is the single value (bytewise for f16 NaN).
  Buffer h = f16_bits({1}, {0x7e01});
  CHECK(f16_bits_of(eval1(Op(OpKind::Pad, PadAttrs{{2, 1}, PadMode::Edge, 0.0}), h)) ==
        std::vector<uint16_t>{0x7e01, 0x7e01, 0x7e01, 0x7e01});
}

// ---------------------------------------------------------------------------------------------
// gather

TEST_CASE("interp: gather along axis 0 picks rows, negative indices count from the end") {
  Buffer table = make(DType::F32, {3, 2}, {1, 2, 3, 4, 5, 6});
  Buffer idx = make_i(DType::I64, {3}, {2, 0, -1});
  Buffer y = eval(Op(OpKind::Gather, GatherAttrs{0}), {table, idx});
  CHECK(dims_of(y) == std::vector<int64_t>{3, 2});
  CHECK(y.to_f64() == std::vector<double>{5, 6, 1, 2, 5, 6});
  // Indices of shape [2,2] give [2,2,2].
  Buffer idx2 = make_i(DType::I32, {2, 2}, {1, 1, -3, 2});
  Buffer z = eval(Op(OpKind::Gather, GatherAttrs{0}), {table, idx2});
  CHECK(dims_of(z) == std::vector<int64_t>{2, 2, 2});
  CHECK(z.to_f64() == std::vector<double>{3, 4, 3, 4, 1, 2, 5, 6});
}

TEST_CASE("interp: gather along an inner axis keeps the outer and trailing dims") {
  // table [2,3,2]: t[i,j,k] = 6i + 2j + k; gather axis 1 with [2, 0]:
  // out[i,n,k] = t[i, idx[n], k] -> i=0: [4,5, 0,1]; i=1: [10,11, 6,7]
  Buffer table = iota(DType::I64, {2, 3, 2});
  Buffer idx = make_i(DType::U8, {2}, {2, 0});
  Buffer y = eval(Op(OpKind::Gather, GatherAttrs{1}), {table, idx});
  CHECK(dims_of(y) == std::vector<int64_t>{2, 2, 2});
  CHECK(y.to_i64() == std::vector<int64_t>{4, 5, 0, 1, 10, 11, 6, 7});
  // Last axis with a negative axis attribute: [[1,2,3],[4,5,6]] columns [2, 0, 2].
  Buffer m = make(DType::F64, {2, 3}, {1, 2, 3, 4, 5, 6});
  Buffer z = eval(Op(OpKind::Gather, GatherAttrs{-1}), {m, make_i(DType::I64, {3}, {2, 0, 2})});
  CHECK(dims_of(z) == std::vector<int64_t>{2, 3});
  CHECK(z.to_f64() == std::vector<double>{3, 1, 3, 6, 4, 6});
}

TEST_CASE("interp: gather truncates float-encoded indices toward zero") {
  Buffer table = make_i(DType::I32, {4}, {10, 20, 30, 40});
  // 1.9 -> 1, -0.5 -> 0, -1.2 -> -1 (the last), 3.99 -> 3
  Buffer idx = make(DType::F32, {4}, {1.9, -0.5, -1.2, 3.99});
  CHECK(eval(Op(OpKind::Gather, GatherAttrs{0}), {table, idx}).to_i64() ==
        std::vector<int64_t>{20, 10, 40, 40});
  Buffer hidx = make(DType::F16, {2}, {2, -4});
  CHECK(eval(Op(OpKind::Gather, GatherAttrs{0}), {table, hidx}).to_i64() ==
        std::vector<int64_t>{30, 10});
}

TEST_CASE("interp: gather copies bool, f16 and c64 rows bytewise") {
  Buffer b = make_i(DType::Bool, {3}, {1, 0, 1});
  CHECK(eval(Op(OpKind::Gather, GatherAttrs{0}), {b, make_i(DType::I64, {2}, {1, 2})}).to_i64() ==
        std::vector<int64_t>{0, 1});
  Buffer h = f16_bits({2, 2}, {0x7e01, 0x8000, 0x0001, 0xfc00});
  Buffer yh = eval(Op(OpKind::Gather, GatherAttrs{0}), {h, make_i(DType::I64, {2}, {1, 0})});
  CHECK(f16_bits_of(yh) == std::vector<uint16_t>{0x0001, 0xfc00, 0x7e01, 0x8000});
  Buffer c(Shape({2}, DType::C64));
  c.set_c64(0, {1, 2});
  c.set_c64(1, {3, 4});
  Buffer yc = eval(Op(OpKind::Gather, GatherAttrs{0}), {c, make_i(DType::I64, {1}, {-1})});
  CHECK(yc.get_c64(0) == std::complex<float>(3, 4));
}

TEST_CASE("interp: gather with empty indices or an empty outer axis gives an empty result") {
  Buffer table = make(DType::F32, {3, 2}, {1, 2, 3, 4, 5, 6});
  Buffer y = eval(Op(OpKind::Gather, GatherAttrs{0}), {table, make_i(DType::I64, {0}, {})});
  CHECK(dims_of(y) == std::vector<int64_t>{0, 2});
  Buffer e = make(DType::F32, {0, 3}, {});
  Buffer z = eval(Op(OpKind::Gather, GatherAttrs{1}), {e, make_i(DType::I64, {2}, {0, 2})});
  CHECK(dims_of(z) == std::vector<int64_t>{0, 2});
}

TEST_CASE("interp: gather rejects out-of-range and NaN indices with a value error") {
  Buffer table = make(DType::F32, {3, 2}, {1, 2, 3, 4, 5, 6});
  auto run_gather = [&](int64_t axis, const Buffer& idx) {
    eval(Op(OpKind::Gather, GatherAttrs{axis}), {table, idx});
  };
  std::string m = test::check_error([&] { run_gather(0, make_i(DType::I64, {2}, {0, 3})); },
                                    ErrorKind::Value, "gather: index 3 is out of range");
  CHECK(m.find("axis 0 of size 3") != std::string::npos);
  m = test::check_error([&] { run_gather(0, make_i(DType::I32, {1}, {-4})); }, ErrorKind::Value,
                        "index -4");
  CHECK(m.find("axis 0 of size 3") != std::string::npos);
  m = test::check_error([&] { run_gather(-1, make_i(DType::I64, {1}, {2})); }, ErrorKind::Value,
                        "gather: index 2");
  CHECK(m.find("axis 1 of size 2") != std::string::npos);
  test::check_error([&] { run_gather(0, make(DType::F32, {1}, {3.0})); }, ErrorKind::Value,
                    "gather: index 3");
  test::check_error([&] { run_gather(0, make(DType::F32, {2}, {0, kNaN})); }, ErrorKind::Value,
                    "gather: index NaN");
  test::check_error([&] { run_gather(0, make(DType::F64, {1}, {1e300})); }, ErrorKind::Value,
                    "out of range for axis 0 of size 3");
  test::check_error([&] { run_gather(0, make_i(DType::I64, {1}, {kI64Min})); }, ErrorKind::Value,
                    "out of range");
  // Any index into an empty axis is out of range.
  Buffer empty = make(DType::F32, {0, 2}, {});
  test::check_error(
      [&] { eval(Op(OpKind::Gather, GatherAttrs{0}), {empty, make_i(DType::I64, {1}, {0})}); },
      ErrorKind::Value, "axis 0 of size 0");
}

// ---------------------------------------------------------------------------------------------
// Through run(): the kernels behind a small graph.

TEST_CASE("interp: run evaluates a graph of transpose, reduce_sum, softmax and gather") {
  Graph g("data");
  NodeId x = g.input("x", Shape({2, 3}, DType::F32));
  NodeId t =
      g.add_node(Op(OpKind::Transpose, TransposeAttrs{{1, 0}}), {x}, Shape({3, 2}, DType::F32));
  NodeId s = g.add_node(reduce_op(OpKind::ReduceSum, {-1}), {t}, Shape({3}, DType::F32));
  NodeId p = g.add_node(Op(OpKind::Softmax, AxisAttrs{0}), {s}, Shape({3}, DType::F32));
  NodeId idx = g.input("idx", Shape({2}, DType::I64));
  NodeId gt = g.add_node(Op(OpKind::Gather, GatherAttrs{0}), {s, idx}, Shape({2}, DType::F32));
  g.set_outputs({s, p, gt});
  // x = [[0,1,2],[0,0,0]]: transpose then row sums = column sums of x = [0,1,2];
  // softmax([0,1,2]) = [1, e, e^2] / (1 + e + e^2); gather [2, -3] = [2, 0].
  auto outs = rlx::interp::run(g, {{"x", Buffer::f32({2, 3}, std::vector<float>{0, 1, 2, 0, 0, 0})},
                                   {"idx", Buffer::i64({2}, std::vector<int64_t>{2, -3})}});
  REQUIRE(outs.size() == 3);
  CHECK(outs[0].to_f64() == std::vector<double>{0, 1, 2});
  double z = 1 + std::exp(1.0) + std::exp(2.0);
  std::vector<double> sm = outs[1].to_f64();
  CHECK(sm[0] == doctest::Approx(1 / z).epsilon(1e-6));
  CHECK(sm[1] == doctest::Approx(std::exp(1.0) / z).epsilon(1e-6));
  CHECK(sm[2] == doctest::Approx(std::exp(2.0) / z).epsilon(1e-6));
  CHECK(outs[2].to_f64() == std::vector<double>{2, 0});
}
