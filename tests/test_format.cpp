// tests/test_format.cpp -- format_buffer: torch-style text of a tensor's values.
//
// Every expected string was printed by torch 1.13 (/usr/bin/python3) with our suffix in place of
// torch's dtype=, through torch's own layout functions:
//   import torch; from torch._tensor_str import _tensor_str, _add_suffixes, set_printoptions
//   fmt = lambda t, s: _add_suffixes("tensor(" + _tensor_str(t, 7), [s], 7, False)
//   nan, inf = float("nan"), float("inf")
// The comment above each check is the python line that produced it.
#include "frontend/format.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <complex>
#include <string>
#include <vector>

namespace {

using rlx::Buffer;
using rlx::detail::format_buffer;
using rlx::detail::PrintOptions;
using rlx::ir::DType;
using rlx::ir::Shape;

const double kNan = std::nan("");
const double kInf = INFINITY;

Buffer f32(std::vector<int64_t> dims, std::vector<float> values) {
  return Buffer::f32(std::move(dims), values);
}

Buffer i64(std::vector<int64_t> dims, std::vector<int64_t> values) {
  return Buffer::i64(std::move(dims), values);
}

Buffer of(Shape shape, std::vector<double> values) { return Buffer::from_f64(shape, values); }

/// torch.arange(n.) * scale + offset, as f32 (each value exact in the tests below).
Buffer arange_f32(std::vector<int64_t> dims, float scale = 1, float offset = 0) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  std::vector<float> v;
  for (int64_t i = 0; i < n; ++i) v.push_back(float(i) * scale + offset);
  return f32(std::move(dims), v);
}

Buffer arange_i64(std::vector<int64_t> dims, int64_t scale = 1) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  std::vector<int64_t> v;
  for (int64_t i = 0; i < n; ++i) v.push_back(i * scale);
  return i64(std::move(dims), v);
}

} // namespace

TEST_CASE("format: a rank-0 tensor prints its one value without brackets") {
  // print(fmt(torch.tensor(3.5), "f32[]"))
  CHECK_EQ(format_buffer(of(Shape::scalar(DType::F32), {3.5})), "tensor(3.5000, f32[])");
  // print(fmt(torch.tensor(-7, dtype=torch.int64), "i64[]"))
  CHECK_EQ(format_buffer(of(Shape::scalar(DType::I64), {-7})), "tensor(-7, i64[])");
}

TEST_CASE("format: a 1-D f32 tensor right-aligns negative numbers and mixed widths") {
  // print(fmt(torch.tensor([-1.5, 2.25, 100.125]), "f32[3]"))
  CHECK_EQ(format_buffer(f32({3}, {-1.5f, 2.25f, 100.125f})),
           "tensor([ -1.5000,   2.2500, 100.1250], f32[3])");
}

TEST_CASE("format: a 2-D f32 tensor prints rows aligned under the first element") {
  // print(fmt(torch.tensor([[1.5, -2.0, 3.25], [4.0, 5.5, -6.75]]), "f32[2,3]"))
  CHECK_EQ(format_buffer(f32({2, 3}, {1.5f, -2.0f, 3.25f, 4.0f, 5.5f, -6.75f})),
           "tensor([[ 1.5000, -2.0000,  3.2500],\n"
           "        [ 4.0000,  5.5000, -6.7500]], f32[2,3])");
}

TEST_CASE("format: a 3-D tensor separates its blocks with a blank line") {
  // print(fmt(torch.arange(24.).reshape(2, 3, 4) / 8 - 1, "f32[2,3,4]"))
  CHECK_EQ(format_buffer(arange_f32({2, 3, 4}, 0.125f, -1)),
           "tensor([[[-1.0000, -0.8750, -0.7500, -0.6250],\n"
           "         [-0.5000, -0.3750, -0.2500, -0.1250],\n"
           "         [ 0.0000,  0.1250,  0.2500,  0.3750]],\n"
           "\n"
           "        [[ 0.5000,  0.6250,  0.7500,  0.8750],\n"
           "         [ 1.0000,  1.1250,  1.2500,  1.3750],\n"
           "         [ 1.5000,  1.6250,  1.7500,  1.8750]]], f32[2,3,4])");
}

TEST_CASE("format: a 4-D tensor separates its outer blocks with two blank lines") {
  // print(fmt(torch.arange(16).reshape(2, 2, 2, 2), "i64[2,2,2,2]"))
  CHECK_EQ(format_buffer(arange_i64({2, 2, 2, 2})), "tensor([[[[ 0,  1],\n"
                                                    "          [ 2,  3]],\n"
                                                    "\n"
                                                    "         [[ 4,  5],\n"
                                                    "          [ 6,  7]]],\n"
                                                    "\n"
                                                    "\n"
                                                    "        [[[ 8,  9],\n"
                                                    "          [10, 11]],\n"
                                                    "\n"
                                                    "         [[12, 13],\n"
                                                    "          [14, 15]]]], i64[2,2,2,2])");
}

TEST_CASE("format: an empty tensor prints empty brackets and its shape") {
  // print(fmt(torch.zeros(0), "f32[0]"))
  CHECK_EQ(format_buffer(f32({0}, {})), "tensor([], f32[0])");
  // print(fmt(torch.zeros(2, 0), "f32[2,0]"))
  CHECK_EQ(format_buffer(f32({2, 0}, {})), "tensor([], f32[2,0])");
}

TEST_CASE("format: integer-valued floats print with a trailing dot") {
  // print(fmt(torch.tensor([1., -2., 30.]), "f32[3]"))
  CHECK_EQ(format_buffer(f32({3}, {1, -2, 30})), "tensor([ 1., -2., 30.], f32[3])");
  // print(fmt(torch.tensor([[0., 0.], [0., 0.]]), "f32[2,2]"))
  CHECK_EQ(format_buffer(f32({2, 2}, {0, 0, 0, 0})), "tensor([[0., 0.],\n"
                                                     "        [0., 0.]], f32[2,2])");
  // print(fmt(torch.tensor([1e8, 1.0e7]), "f32[2]"))  -- 1e8 itself is not yet scientific
  CHECK_EQ(format_buffer(f32({2}, {1e8f, 1e7f})), "tensor([100000000.,  10000000.], f32[2])");
}

TEST_CASE("format: large magnitudes switch the whole tensor to scientific notation") {
  // print(fmt(torch.tensor([1e10, 1.5, -2.0]), "f32[3]"))
  CHECK_EQ(format_buffer(f32({3}, {1e10f, 1.5f, -2.0f})),
           "tensor([ 1.0000e+10,  1.5000e+00, -2.0000e+00], f32[3])");
  // print(fmt(torch.tensor([1., 2000.]), "f32[2]"))  -- integer values, max/min > 1000
  CHECK_EQ(format_buffer(f32({2}, {1, 2000})), "tensor([1.0000e+00, 2.0000e+03], f32[2])");
}

TEST_CASE("format: small magnitudes and wide ratios switch to scientific notation") {
  // print(fmt(torch.tensor([1e-5, 0.5]), "f32[2]"))
  CHECK_EQ(format_buffer(f32({2}, {1e-5f, 0.5f})), "tensor([1.0000e-05, 5.0000e-01], f32[2])");
  // print(fmt(torch.tensor([0.001, 2.5]), "f32[2]"))
  CHECK_EQ(format_buffer(f32({2}, {0.001f, 2.5f})), "tensor([1.0000e-03, 2.5000e+00], f32[2])");
}

TEST_CASE("format: nan and infinities print as nan, inf and -inf and do not set the width") {
  // print(fmt(torch.tensor([nan, inf, -inf, 1.5, 0.]), "f32[5]"))
  CHECK_EQ(format_buffer(of(Shape({5}, DType::F32), {kNan, kInf, -kInf, 1.5, 0})),
           "tensor([   nan,    inf,   -inf, 1.5000, 0.0000], f32[5])");
  // print(fmt(torch.tensor([nan, -inf, 2.]), "f32[3]"))
  CHECK_EQ(format_buffer(of(Shape({3}, DType::F32), {kNan, -kInf, 2})),
           "tensor([nan, -inf, 2.], f32[3])");
  // print(fmt(torch.tensor([-nan, 1e-6, -inf]), "f32[3]"))  -- a negative nan too
  CHECK_EQ(format_buffer(of(Shape({3}, DType::F32), {-kNan, 1e-6, -kInf})),
           "tensor([       nan, 1.0000e-06,       -inf], f32[3])");
}

TEST_CASE("format: integers print plainly, right-aligned") {
  // print(fmt(torch.tensor([1, -20, 300]), "i64[3]"))
  CHECK_EQ(format_buffer(i64({3}, {1, -20, 300})), "tensor([  1, -20, 300], i64[3])");
  // print(fmt(torch.tensor([[7, -1], [12, 0]], dtype=torch.int32), "i32[2,2]"))
  CHECK_EQ(format_buffer(of(Shape({2, 2}, DType::I32), {7, -1, 12, 0})),
           "tensor([[ 7, -1],\n"
           "        [12,  0]], i32[2,2])");
}

TEST_CASE("format: bools print as True and False") {
  // print(fmt(torch.tensor([True, False, True]), "bool[3]"))
  CHECK_EQ(format_buffer(of(Shape({3}, DType::Bool), {1, 0, 1})),
           "tensor([ True, False,  True], bool[3])");
}

TEST_CASE("format: f64, f16 and bf16 tensors print like f32 with their own suffix") {
  // print(fmt(torch.tensor([1/3, -2/3, 10.0], dtype=torch.float64), "f64[3]"))
  CHECK_EQ(format_buffer(of(Shape({3}, DType::F64), {1.0 / 3, -2.0 / 3, 10.0})),
           "tensor([ 0.3333, -0.6667, 10.0000], f64[3])");
  // print(fmt(torch.tensor([[1., 2.], [3., 4.]], dtype=torch.float64), "f64[2,2]"))
  CHECK_EQ(format_buffer(of(Shape({2, 2}, DType::F64), {1, 2, 3, 4})),
           "tensor([[1., 2.],\n"
           "        [3., 4.]], f64[2,2])");
  // print(fmt(torch.tensor([0.1, -1000.5], dtype=torch.float16), "f16[2]"))
  CHECK_EQ(format_buffer(of(Shape({2}, DType::F16), {0.1, -1000.5})),
           "tensor([ 9.9976e-02, -1.0005e+03], f16[2])");
  // print(fmt(torch.tensor([nan, 1.5], dtype=torch.bfloat16), "bf16[2]"))
  CHECK_EQ(format_buffer(of(Shape({2}, DType::BF16), {kNan, 1.5})),
           "tensor([   nan, 1.5000], bf16[2])");
}

TEST_CASE("format: c64 values print as real+imagj with separate widths for each part") {
  Buffer b(Shape({3}, DType::C64));
  b.set_c64(0, {1.0f, 2.0f});
  b.set_c64(1, {-3.5f, -0.25f});
  b.set_c64(2, {0.0f, 1.0f});
  // print(fmt(torch.tensor([1+2j, -3.5-0.25j, 1j]), "c64[3]"))
  CHECK_EQ(format_buffer(b), "tensor([ 1.0000+2.0000j, -3.5000-0.2500j,  0.0000+1.0000j], c64[3])");

  Buffer col(Shape({3, 1}, DType::C64));
  for (int64_t i = 0; i < 3; ++i) col.set_c64(i, b.get_c64(i));
  // print(fmt(torch.tensor([1+2j, -3.5-0.25j, 1j]).reshape(3, 1), "c64[3,1]"))
  CHECK_EQ(format_buffer(col), "tensor([[ 1.0000+2.0000j],\n"
                               "        [-3.5000-0.2500j],\n"
                               "        [ 0.0000+1.0000j]], c64[3,1])");
}

TEST_CASE("format: a [2000] tensor is summarized to its first and last three values") {
  // print(fmt(torch.arange(2000.), "f32[2000]"))
  CHECK_EQ(format_buffer(arange_f32({2000})),
           "tensor([0.0000e+00, 1.0000e+00, 2.0000e+00,  ..., 1.9970e+03, 1.9980e+03,\n"
           "        1.9990e+03], f32[2000])");
}

TEST_CASE("format: the width of a summarized tensor comes from the shown values only") {
  std::vector<int64_t> v;
  for (int64_t i = 0; i < 2000; ++i) v.push_back(i % 10);
  v[1000] = 123456789;
  // t = torch.arange(2000) % 10; t[1000] = 123456789; print(fmt(t, "i64[2000]"))
  CHECK_EQ(format_buffer(i64({2000}, v)), "tensor([0, 1, 2,  ..., 7, 8, 9], i64[2000])");
}

TEST_CASE("format: a [100,100] tensor is summarized along both axes") {
  // print(fmt(torch.arange(10000.).reshape(100, 100) / 4, "f32[100,100]"))
  CHECK_EQ(format_buffer(arange_f32({100, 100}, 0.25f)),
           "tensor([[0.0000e+00, 2.5000e-01, 5.0000e-01,  ..., 2.4250e+01, 2.4500e+01,\n"
           "         2.4750e+01],\n"
           "        [2.5000e+01, 2.5250e+01, 2.5500e+01,  ..., 4.9250e+01, 4.9500e+01,\n"
           "         4.9750e+01],\n"
           "        [5.0000e+01, 5.0250e+01, 5.0500e+01,  ..., 7.4250e+01, 7.4500e+01,\n"
           "         7.4750e+01],\n"
           "        ...,\n"
           "        [2.4250e+03, 2.4252e+03, 2.4255e+03,  ..., 2.4492e+03, 2.4495e+03,\n"
           "         2.4498e+03],\n"
           "        [2.4500e+03, 2.4502e+03, 2.4505e+03,  ..., 2.4742e+03, 2.4745e+03,\n"
           "         2.4748e+03],\n"
           "        [2.4750e+03, 2.4752e+03, 2.4755e+03,  ..., 2.4992e+03, 2.4995e+03,\n"
           "         2.4998e+03]], f32[100,100])");
}

TEST_CASE("format: a long row wraps to the line width under its first element") {
  // print(fmt(torch.arange(30.) / 4 - 3, "f32[30]"))
  CHECK_EQ(format_buffer(arange_f32({30}, 0.25f, -3)),
           "tensor([-3.0000, -2.7500, -2.5000, -2.2500, -2.0000, -1.7500, -1.5000, -1.2500,\n"
           "        -1.0000, -0.7500, -0.5000, -0.2500,  0.0000,  0.2500,  0.5000,  0.7500,\n"
           "         1.0000,  1.2500,  1.5000,  1.7500,  2.0000,  2.2500,  2.5000,  2.7500,\n"
           "         3.0000,  3.2500,  3.5000,  3.7500,  4.0000,  4.2500], f32[30])");
  // print(fmt(torch.arange(10) * 1111111, "i64[10]"))
  CHECK_EQ(format_buffer(arange_i64({10}, 1111111)),
           "tensor([      0, 1111111, 2222222, 3333333, 4444444, 5555555, 6666666, 7777777,\n"
           "        8888888, 9999999], i64[10])");
}

TEST_CASE("format: the suffix moves to its own line when the last line is full") {
  // print(fmt(torch.arange(30.).reshape(2, 15) / 4 - 3, "f32[2,15]"))
  CHECK_EQ(format_buffer(arange_f32({2, 15}, 0.25f, -3)),
           "tensor([[-3.0000, -2.7500, -2.5000, -2.2500, -2.0000, -1.7500, -1.5000, -1.2500,\n"
           "         -1.0000, -0.7500, -0.5000, -0.2500,  0.0000,  0.2500,  0.5000],\n"
           "        [ 0.7500,  1.0000,  1.2500,  1.5000,  1.7500,  2.0000,  2.2500,  2.5000,\n"
           "          2.7500,  3.0000,  3.2500,  3.5000,  3.7500,  4.0000,  4.2500]],\n"
           "       f32[2,15])");
}

TEST_CASE("format: precision sets the number of decimals") {
  PrintOptions o;
  o.precision = 2;
  // set_printoptions(precision=2); print(fmt(torch.tensor([1.12345, -2.5]), "f32[2]"))
  CHECK_EQ(format_buffer(f32({2}, {1.12345f, -2.5f}), o), "tensor([ 1.12, -2.50], f32[2])");
  // set_printoptions(precision=2); print(fmt(torch.tensor([123456.0, 0.5]), "f32[2]"))
  CHECK_EQ(format_buffer(f32({2}, {123456.0f, 0.5f}), o), "tensor([1.23e+05, 5.00e-01], f32[2])");
}

TEST_CASE("format: threshold and edgeitems choose when and how much to summarize") {
  PrintOptions o;
  o.threshold = 5;
  o.edgeitems = 2;
  // set_printoptions(threshold=5, edgeitems=2); print(fmt(torch.arange(10), "i64[10]"))
  CHECK_EQ(format_buffer(arange_i64({10}), o), "tensor([0, 1,  ..., 8, 9], i64[10])");
  // set_printoptions(threshold=5, edgeitems=2); print(fmt(torch.arange(5), "i64[5]"))
  CHECK_EQ(format_buffer(arange_i64({5}), o), "tensor([0, 1, 2, 3, 4], i64[5])");
  // set_printoptions(threshold=5, edgeitems=2)
  // print(fmt(torch.arange(60.).reshape(5, 2, 6) - 20, "f32[5,2,6]"))
  CHECK_EQ(format_buffer(arange_f32({5, 2, 6}, 1, -20), o),
           "tensor([[[-20., -19.,  ..., -16., -15.],\n"
           "         [-14., -13.,  ..., -10.,  -9.]],\n"
           "\n"
           "        [[ -8.,  -7.,  ...,  -4.,  -3.],\n"
           "         [ -2.,  -1.,  ...,   2.,   3.]],\n"
           "\n"
           "        ...,\n"
           "\n"
           "        [[ 16.,  17.,  ...,  20.,  21.],\n"
           "         [ 22.,  23.,  ...,  26.,  27.]],\n"
           "\n"
           "        [[ 28.,  29.,  ...,  32.,  33.],\n"
           "         [ 34.,  35.,  ...,  38.,  39.]]], f32[5,2,6])");
  o.edgeitems = 1;
  // set_printoptions(threshold=5, edgeitems=1); print(fmt(torch.arange(100).reshape(10, 10),
  // "i64[10,10]"))
  CHECK_EQ(format_buffer(arange_i64({10, 10}), o), "tensor([[ 0,  ...,  9],\n"
                                                   "        ...,\n"
                                                   "        [90,  ..., 99]], i64[10,10])");
}

TEST_CASE("format: linewidth sets where rows wrap") {
  PrintOptions o;
  o.linewidth = 40;
  // set_printoptions(linewidth=40); print(fmt(torch.arange(12.) - 6, "f32[12]"))
  CHECK_EQ(format_buffer(arange_f32({12}, 1, -6), o), "tensor([-6., -5., -4., -3., -2., -1.,\n"
                                                      "         0.,  1.,  2.,  3.,  4.,  5.],\n"
                                                      "       f32[12])");
}
