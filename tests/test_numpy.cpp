// tests/test_numpy.cpp -- the Tensor API against numpy/torch references (tests/fixtures/frontend).
//
// Every case loads its inputs from tests/fixtures/frontend/<case>/ (written by
// tests/fixtures/make_frontend.py; MANIFEST.txt there lists each file and the numpy expression
// behind it), computes with the public Tensor API as a user would, and compares with the want_*
// arrays: same sizes, same dtype (the fixtures hold the dtype rlx documents), values within
// rtol 1e-5 / atol 1e-6 for floats (the references are exact double math rounded once to f32,
// which is how the interpreter computes every node) and exactly for integers and bools.
#include "support/backends.hpp"
#include "support/compare.hpp"

#include <rlx/tensor.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include <unistd.h>

namespace numpy_eq {

using rlx::DType;
using rlx::Tensor;

using Tol = rlx::test::Tolerance;

/// The folder of one fixture case of tests/fixtures/frontend/; fx("name") loads <case>/name.npy.
struct Fixture : rlx::test::Fixture {
  explicit Fixture(std::string_view name) : rlx::test::Fixture("frontend", std::string(name)) {}
};

/// "" when `got` has want's sizes, dtype and values (floats within tol, integers and bools
/// exactly); otherwise what differs.
std::string diff(const Tensor& got, const Tensor& want, Tol tol = {1e-5, 1e-6}) {
  return rlx::test::mismatch_report(want.buffer(), got.buffer(), tol);
}

/// A fresh path under /tmp for this process.
std::string temp_npy(std::string_view name) {
  return "/tmp/rlx_test_numpy_" + std::to_string(::getpid()) + "_" + std::string(name) + ".npy";
}

} // namespace numpy_eq

// CHECKs that `got` matches `want` (optionally with a numpy_eq::Tol), reporting the first
// difference at the caller's line.
#define NUMPY_CHECK(...)                                                                           \
  do {                                                                                             \
    const std::string numpy_diff_ = numpy_eq::diff(__VA_ARGS__);                                   \
    CHECK_MESSAGE(numpy_diff_.empty(), numpy_diff_);                                               \
  } while (false)

using numpy_eq::Fixture;
using rlx::DType;
using rlx::Tensor;

// ---------------------------------------------------------------------------------------------
// Operators, broadcasting and dtype promotion

TEST_CASE("numpy: + - * / of a [3,1] column and a [4] row broadcast to [3,4]") {
  Fixture fx("binary_broadcast_col_row");
  Tensor a = fx("a"), b = fx("b");
  NUMPY_CHECK(a + b, fx("want_add"));
  NUMPY_CHECK(a - b, fx("want_sub"));
  NUMPY_CHECK(a * b, fx("want_mul"));
  NUMPY_CHECK(a / b, fx("want_div"));
}

TEST_CASE("numpy: a [2,1,4] and a [3,1] operand broadcast to [2,3,4] in either order") {
  Fixture fx("binary_broadcast_3d");
  Tensor a = fx("a"), b = fx("b");
  NUMPY_CHECK(a * b, fx("want_mul"));
  NUMPY_CHECK(b - a, fx("want_rsub"));
}

TEST_CASE("numpy: C++ scalars on either side of an operator act like numpy scalars") {
  Fixture fx("scalar_operands");
  Tensor x = fx("x");
  NUMPY_CHECK(x + 2.5, fx("want_add"));
  NUMPY_CHECK(x * -3, fx("want_mul"));
  NUMPY_CHECK(x / 4, fx("want_div"));
  NUMPY_CHECK(2.5 - x, fx("want_rsub"));
  NUMPY_CHECK(1.0 / x, fx("want_rdiv"));
  NUMPY_CHECK(2 - x * x, fx("want_chain"));
}

TEST_CASE("numpy: compound assignments and unary minus match numpy") {
  Fixture fx("compound_assignment");
  Tensor x = fx("x"), b = fx("b");
  Tensor y = x;
  y += b;
  y *= 2;
  y -= x;
  y /= 4;
  NUMPY_CHECK(y, fx("want"));
  NUMPY_CHECK(-x, fx("want_neg"));
  // The assignments rebound y only: x keeps its values.
  NUMPY_CHECK(x, fx("x"));
}

TEST_CASE("numpy: i32 plus f32 gives the exact sum in f32") {
  // numpy gives float64 here; rlx promotes i32 + f32 to f32 (rlx::ir::promote: only i64 + f32
  // widens to f64, docs/semantics.md "Promotion"). The values are the exact sums rounded to f32.
  Fixture fx("promote_i32_plus_f32");
  NUMPY_CHECK(fx("a") + fx("b"), fx("want"));
}

TEST_CASE("numpy: i64 plus f32 gives f64 as in numpy") {
  // docs/semantics.md "Promotion": i64 + f32 gives f64 (numpy agrees, PyTorch gives f32).
  Fixture fx("promote_i64_plus_f32");
  NUMPY_CHECK(fx("a") + fx("b"), fx("want"));
}

TEST_CASE("numpy: an int tensor times a float scalar computes in f32") {
  // include/rlx/tensor.hpp (Operators): a float scalar with an integer tensor gives f32; numpy
  // gives float64. The values are exact either way.
  Fixture fx("promote_int_times_float_scalar");
  Tensor a = fx("a");
  NUMPY_CHECK(a * 0.5, fx("want_mul"));
  NUMPY_CHECK(a + 0.25f, fx("want_add"));
}

TEST_CASE("numpy: an int scalar keeps an i32 tensor's dtype") {
  Fixture fx("promote_int_scalar_keeps_dtype");
  Tensor a = fx("a");
  NUMPY_CHECK(a * 3, fx("want_mul"));
  NUMPY_CHECK(7 - a, fx("want_rsub"));
}

TEST_CASE("numpy: a bool tensor plus an i32 tensor gives i32") {
  Fixture fx("promote_bool_plus_int");
  NUMPY_CHECK(fx("b") + fx("i"), fx("want"));
}

TEST_CASE("numpy: a bool tensor with an int scalar other than 0 and 1 gives i64") {
  // include/rlx/tensor.hpp (Operators): an int scalar with bool gives i64 (numpy: int64).
  Fixture fx("promote_bool_plus_int_scalar");
  Tensor b = fx("b");
  NUMPY_CHECK(b * 3, fx("want_mul3"));
  NUMPY_CHECK(b + 2, fx("want_add2"));
}

// Regression: 0 and 1 used to keep the bool dtype and the add failed.
TEST_CASE("numpy: a bool tensor plus or times the int scalar 1 gives i64") {
  Fixture fx("promote_bool_plus_int_scalar");
  Tensor b = fx("b");
  NUMPY_CHECK(b + 1, fx("want_add1"));
  NUMPY_CHECK(b * 1, fx("want_mul1"));
}

TEST_CASE("numpy: dividing i32 tensors is true division in f32") {
  // include/rlx/tensor.hpp (Operators): `/` is true division, integers divide as f32 (numpy
  // float64); small integers are exact in f32, so the quotient rounds once like the reference.
  Fixture fx("int_true_division");
  NUMPY_CHECK(fx("a") / fx("b"), fx("want"));
}

TEST_CASE("numpy: comparisons broadcast and give bool tensors") {
  Fixture fx("comparisons");
  Tensor a = fx("a"), b = fx("b");
  NUMPY_CHECK(a == b, fx("want_eq"));
  NUMPY_CHECK(a != b, fx("want_ne"));
  NUMPY_CHECK(a < b, fx("want_lt"));
  NUMPY_CHECK(a <= b, fx("want_le"));
  NUMPY_CHECK(a > b, fx("want_gt"));
  NUMPY_CHECK(a >= b, fx("want_ge"));
}

TEST_CASE("numpy: comparisons with a scalar on either side give bool tensors") {
  Fixture fx("comparisons");
  Tensor a = fx("a");
  NUMPY_CHECK(a > 0, fx("want_gt0"));
  NUMPY_CHECK(0.5 <= a, fx("want_rle"));
}

TEST_CASE("numpy: logical and, or and not of bool tensors match numpy") {
  Fixture fx("logical_ops");
  Tensor p = fx("p"), q = fx("q");
  NUMPY_CHECK(p && q, fx("want_and"));
  NUMPY_CHECK(p || q, fx("want_or"));
  NUMPY_CHECK(!p, fx("want_not"));
  // Floats by truthiness.
  Tensor x = fx("x");
  NUMPY_CHECK(rlx::logical_and(x, q), fx("want_xand"));
  NUMPY_CHECK(rlx::logical_not(x), fx("want_notx"));
}

TEST_CASE("numpy: pow with a broadcast tensor exponent, a scalar exponent or a scalar base") {
  Fixture fx("pow_forms");
  Tensor a = fx("a");
  NUMPY_CHECK(rlx::pow(a, fx("b")), fx("want_tt"));
  NUMPY_CHECK(a.pow(2.0), fx("want_sq"));
  NUMPY_CHECK(rlx::pow(a, 0.5), fx("want_sqrt"));
  NUMPY_CHECK(rlx::pow(2.0, fx("b")), fx("want_rpow"));
}

TEST_CASE("numpy: an i32 base with a float exponent gives f32") {
  // include/rlx/tensor.hpp: pow gives a float result for integer bases with a float exponent
  // (f32, as every float scalar with an integer tensor; numpy gives float64).
  Fixture fx("pow_forms");
  NUMPY_CHECK(rlx::pow(fx("i"), 0.5), fx("want_int"));
}

TEST_CASE("numpy: maximum and minimum broadcast and propagate NaN") {
  Fixture fx("maximum_minimum");
  Tensor a = fx("a"), b = fx("b");
  NUMPY_CHECK(rlx::maximum(a, b), fx("want_max"));
  NUMPY_CHECK(rlx::minimum(a, b), fx("want_min"));
  NUMPY_CHECK(rlx::maximum(a, 0.0), fx("want_max0"));
}

TEST_CASE("numpy: fmod takes the dividend's sign for floats and integers") {
  Fixture fx("fmod_signs");
  NUMPY_CHECK(rlx::fmod(fx("a"), fx("b")), fx("want"));
  NUMPY_CHECK(rlx::fmod(fx("ia"), fx("ib")), fx("want_int"));
}

// ---------------------------------------------------------------------------------------------
// Element-wise functions

TEST_CASE("numpy: exp, tanh, sigmoid, sin and cos match numpy") {
  Fixture fx("unary_math");
  Tensor x = fx("x");
  NUMPY_CHECK(x.exp(), fx("want_exp"));
  NUMPY_CHECK(rlx::tanh(x), fx("want_tanh"));
  NUMPY_CHECK(x.sigmoid(), fx("want_sigmoid"));
  NUMPY_CHECK(rlx::sin(x), fx("want_sin"));
  NUMPY_CHECK(rlx::cos(x), fx("want_cos"));
}

TEST_CASE("numpy: relu, abs and sign match numpy, zeros included") {
  Fixture fx("unary_math");
  Tensor x = fx("x");
  NUMPY_CHECK(x.relu(), fx("want_relu"));
  NUMPY_CHECK(rlx::abs(x), fx("want_abs"));
  NUMPY_CHECK(rlx::sign(x), fx("want_sign"));
}

TEST_CASE("numpy: floor and ceil match numpy") {
  Fixture fx("unary_math");
  Tensor x = fx("x");
  NUMPY_CHECK(rlx::floor(x), fx("want_floor"));
  NUMPY_CHECK(rlx::ceil(x), fx("want_ceil"));
}

TEST_CASE("numpy: round goes half to even like numpy.round") {
  Fixture fx("round_half_to_even");
  NUMPY_CHECK(rlx::round(fx("x")), fx("want"));
}

TEST_CASE("numpy: log, sqrt, rsqrt and reciprocal of positive values match numpy") {
  Fixture fx("unary_positive");
  Tensor x = fx("x");
  NUMPY_CHECK(x.log(), fx("want_log"));
  NUMPY_CHECK(x.sqrt(), fx("want_sqrt"));
  NUMPY_CHECK(rlx::rsqrt(x), fx("want_rsqrt"));
  NUMPY_CHECK(rlx::reciprocal(x), fx("want_recip"));
}

TEST_CASE("numpy: gelu (erf and tanh), silu, softplus, leaky_relu, elu and mish match torch") {
  Fixture fx("activations_torch");
  Tensor x = fx("x");
  NUMPY_CHECK(rlx::gelu(x), fx("want_gelu"));
  NUMPY_CHECK(rlx::gelu_approx(x), fx("want_gelu_approx"));
  NUMPY_CHECK(rlx::silu(x), fx("want_silu"));
  NUMPY_CHECK(rlx::softplus(x), fx("want_softplus"));
  NUMPY_CHECK(rlx::leaky_relu(x, 0.1), fx("want_leaky"));
  NUMPY_CHECK(rlx::elu(x), fx("want_elu"));
  NUMPY_CHECK(rlx::mish(x), fx("want_mish"));
}

TEST_CASE("numpy: abs, neg, relu and sign keep an i32 tensor's dtype") {
  Fixture fx("unary_on_integers");
  Tensor i = fx("i");
  NUMPY_CHECK(rlx::abs(i), fx("want_abs"));
  NUMPY_CHECK(-i, fx("want_neg"));
  NUMPY_CHECK(i.relu(), fx("want_relu"));
  NUMPY_CHECK(rlx::sign(i), fx("want_sign"));
}

TEST_CASE("numpy: exp of an i32 tensor computes in f32") {
  // include/rlx/tensor.hpp: float-only functions compute integer inputs in f32 (numpy float64).
  Fixture fx("unary_on_integers");
  NUMPY_CHECK(rlx::exp(fx("i")), fx("want_exp"));
}

TEST_CASE("numpy: where with broadcast tensor branches matches numpy.where") {
  Fixture fx("where_forms");
  NUMPY_CHECK(rlx::where(fx("c"), fx("a"), fx("b")), fx("want_tt"));
}

TEST_CASE("numpy: where with a scalar branch takes the tensor branch's dtype") {
  // include/rlx/tensor.hpp (where): scalars take the other branch's dtype, here f32.
  Fixture fx("where_forms");
  Tensor c = fx("c");
  NUMPY_CHECK(rlx::where(c, fx("a"), 0.0), fx("want_ts"));
  NUMPY_CHECK(rlx::where(c, -1, fx("b")), fx("want_st"));
}

TEST_CASE("numpy: where with a float condition treats nonzero as true") {
  Fixture fx("where_forms");
  NUMPY_CHECK(rlx::where(fx("fc"), fx("b"), 7.5), fx("want_fc"));
}

TEST_CASE("numpy: clamp with both, only a lower or only an upper bound matches numpy.clip") {
  Fixture fx("clamp_bounds");
  Tensor x = fx("x");
  NUMPY_CHECK(x.clamp(-1.0, 1.5), fx("want_both"));
  NUMPY_CHECK(rlx::clamp(x, 0.0, std::nullopt), fx("want_lo"));
  NUMPY_CHECK(x.clamp(std::nullopt, 0.5), fx("want_hi"));
}

TEST_CASE("numpy: clamp of an i32 tensor stays i32") {
  Fixture fx("clamp_bounds");
  NUMPY_CHECK(rlx::clamp(fx("i"), -2, 3), fx("want_int"));
}

TEST_CASE("numpy: cast from f32 to i32 truncates toward zero like astype") {
  Fixture fx("cast_truncates");
  NUMPY_CHECK(fx("x").cast(DType::I32), fx("want_i32"));
}

TEST_CASE("numpy: casts to bool, f32 and f64 match astype") {
  Fixture fx("cast_truncates");
  NUMPY_CHECK(fx("x").astype(DType::Bool), fx("want_bool"));
  NUMPY_CHECK(rlx::cast(fx("i"), DType::F32), fx("want_f32"));
  NUMPY_CHECK(fx("b").cast(DType::F32), fx("want_bf32"));
  NUMPY_CHECK(fx("x").cast(DType::F64), fx("want_f64"));
}

// ---------------------------------------------------------------------------------------------
// Reductions and scans

TEST_CASE("numpy: sum over all axes gives a rank-0 tensor") {
  Fixture fx("sum_axes");
  NUMPY_CHECK(fx("x").sum(), fx("want_all"));
}

TEST_CASE("numpy: sum over a negative axis with keepdims matches numpy") {
  Fixture fx("sum_axes");
  NUMPY_CHECK(fx("x").sum(-1, true), fx("want_last_keep"));
}

TEST_CASE("numpy: sum over several axes, negative ones and keepdims included, matches numpy") {
  Fixture fx("sum_axes");
  Tensor x = fx("x");
  NUMPY_CHECK(rlx::sum(x, {0, 2}), fx("want_02"));
  NUMPY_CHECK(x.sum({-1, 0}, true), fx("want_m10_keep"));
}

TEST_CASE("numpy: mean over all axes, one axis and several axes with keepdims matches numpy") {
  Fixture fx("mean_axes");
  Tensor x = fx("x");
  NUMPY_CHECK(x.mean(), fx("want_all"));
  NUMPY_CHECK(x.mean(1), fx("want_1"));
  NUMPY_CHECK(rlx::mean(x, {0, -1}, true), fx("want_0m1_keep"));
}

TEST_CASE("numpy: max and min over axes and over everything match numpy") {
  Fixture fx("max_min_axes");
  Tensor x = fx("x");
  NUMPY_CHECK(x.max(-2), fx("want_max_m2"));
  NUMPY_CHECK(x.min({0, 2}, true), fx("want_min_02_keep"));
  NUMPY_CHECK(x.max(), fx("want_max"));
  NUMPY_CHECK(rlx::min(x), fx("want_min"));
}

TEST_CASE("numpy: prod over one axis, several axes and everything matches numpy") {
  Fixture fx("prod_axes");
  Tensor x = fx("x");
  NUMPY_CHECK(x.prod(0), fx("want_0"));
  NUMPY_CHECK(x.prod({1, 2}), fx("want_12"));
  NUMPY_CHECK(rlx::prod(x), fx("want_all"));
}

TEST_CASE("numpy: sums and products of i32 are i64 and max keeps i32") {
  Fixture fx("integer_and_bool_reductions");
  Tensor i = fx("i");
  NUMPY_CHECK(i.sum(1), fx("want_sum"));
  NUMPY_CHECK(i.prod(0), fx("want_prod"));
  NUMPY_CHECK(i.max(1), fx("want_max"));
}

TEST_CASE("numpy: a bool sum counts in i64") {
  // docs/semantics.md "Values and dtypes": bool sums count (i64 result), as numpy.
  Fixture fx("integer_and_bool_reductions");
  NUMPY_CHECK(fx("b").sum(), fx("want_count"));
}

// Regression: the IR's bool reductions give i64; the frontend casts max/min back to bool.
TEST_CASE("numpy: bool max is any and bool min is all, both bool") {
  Fixture fx("integer_and_bool_reductions");
  Tensor b = fx("b");
  NUMPY_CHECK(b.max(0), fx("want_any"));
  NUMPY_CHECK(b.min(1), fx("want_all"));
}

TEST_CASE("numpy: var with ddof 0 and 1 over axes matches numpy.var") {
  Fixture fx("var_std_ddof");
  Tensor x = fx("x");
  NUMPY_CHECK(rlx::var(x, {1}), fx("want_var1"));
  NUMPY_CHECK(rlx::var(x, {0, 2}, true, 1), fx("want_var02"));
}

TEST_CASE("numpy: std with ddof 1 over everything and ddof 0 over the last axis matches numpy") {
  Fixture fx("var_std_ddof");
  Tensor x = fx("x");
  NUMPY_CHECK(rlx::std(x, {}, false, 1), fx("want_std_all"));
  NUMPY_CHECK(rlx::std(x, {-1}), fx("want_std_m1"));
}

TEST_CASE("numpy: argmax without an axis indexes the flattened tensor, first tie wins") {
  Fixture fx("argmax_argmin");
  Tensor x = fx("x");
  NUMPY_CHECK(x.argmax(), fx("want_amax"));
  NUMPY_CHECK(rlx::argmax(x, std::nullopt, true), fx("want_amax_keep"));
}

TEST_CASE("numpy: argmax and argmin along an axis, with keepdims and negative axes, match numpy") {
  Fixture fx("argmax_argmin");
  Tensor x = fx("x");
  NUMPY_CHECK(x.argmax(1), fx("want_amax1"));
  NUMPY_CHECK(x.argmin(0, true), fx("want_amin0_keep"));
  NUMPY_CHECK(rlx::argmin(x, -1), fx("want_aminm1"));
}

TEST_CASE("numpy: cumsum along positive and negative axes matches numpy.cumsum, i32 to i64") {
  Fixture fx("cumsum_axes");
  Tensor x = fx("x");
  NUMPY_CHECK(rlx::cumsum(x, 1), fx("want_1"));
  NUMPY_CHECK(rlx::cumsum(x, -3), fx("want_m3"));
  // numpy: the cumsum of i32 is int64.
  NUMPY_CHECK(rlx::cumsum(fx("i"), 1), fx("want_int"));
}

TEST_CASE("numpy: exclusive cumsum is cumsum minus the element") {
  // The reference is numpy's cumsum - x in double, rounded once to f32.
  Fixture fx("cumsum_axes");
  NUMPY_CHECK(rlx::cumsum(fx("x"), 2, true), fx("want_excl"));
}

TEST_CASE("numpy: softmax over the last axis and axis 0 matches torch, large and -inf included") {
  Fixture fx("softmax_axes");
  Tensor x = fx("x");
  NUMPY_CHECK(x.softmax(), fx("want_last"));
  NUMPY_CHECK(rlx::softmax(x, 0), fx("want_0"));
}

TEST_CASE("numpy: log_softmax over the last axis and a middle axis matches torch") {
  // log_softmax is x - logsumexp(x) in rlx (two rounded f32 nodes): the subtraction may lose
  // the low bits of both operands, at most an ulp of |x| (< 5e-7 here), inside atol 1e-6.
  Fixture fx("log_softmax_axes");
  Tensor x = fx("x");
  NUMPY_CHECK(x.log_softmax(), fx("want_last"));
  NUMPY_CHECK(rlx::log_softmax(x, 1), fx("want_1"));
}

TEST_CASE("numpy: logsumexp over one or all axes is stable and -inf for an all -inf row") {
  Fixture fx("logsumexp_axes");
  NUMPY_CHECK(rlx::logsumexp(fx("x"), {-1}), fx("want_last"));
  NUMPY_CHECK(rlx::logsumexp(fx("y"), {0, 1}, true), fx("want_all_keep"));
}

// ---------------------------------------------------------------------------------------------
// Matmul

TEST_CASE("numpy: matmul of two matrices matches numpy") {
  Fixture fx("matmul_2d");
  NUMPY_CHECK(fx("a").matmul(fx("b")), fx("want"));
}

TEST_CASE("numpy: batched matmul broadcasts batch dims like numpy.matmul") {
  Fixture fx("matmul_batched_broadcast");
  NUMPY_CHECK(rlx::matmul(fx("a"), fx("b")), fx("want"));
}

TEST_CASE("numpy: matmul treats 1-D operands as vectors like numpy.matmul") {
  Fixture fx("matmul_vectors");
  Tensor v = fx("v");
  NUMPY_CHECK(rlx::matmul(v, fx("m1")), fx("want_vm"));
  NUMPY_CHECK(rlx::matmul(fx("m2"), v), fx("want_mv"));
  NUMPY_CHECK(rlx::matmul(v, v), fx("want_vv"));
  NUMPY_CHECK(rlx::matmul(fx("bt"), v), fx("want_bv"));
}

TEST_CASE("numpy: matmul of i32 matrices stays i32") {
  Fixture fx("matmul_int");
  NUMPY_CHECK(rlx::matmul(fx("a"), fx("b")), fx("want"));
}

// ---------------------------------------------------------------------------------------------
// Shapes and data movement

TEST_CASE("numpy: reshape infers one -1 size like numpy") {
  Fixture fx("reshape_infer");
  Tensor x = fx("x");
  NUMPY_CHECK(x.reshape({4, -1}), fx("want_4m1"));
  NUMPY_CHECK(rlx::reshape(x, {-1}), fx("want_flat"));
  NUMPY_CHECK(x.reshape({2, -1, 2}), fx("want_2m12"));
}

TEST_CASE("numpy: transpose reverses the axes like .T or swaps two like numpy.swapaxes") {
  Fixture fx("transpose_permute");
  Tensor x = fx("x");
  NUMPY_CHECK(x.transpose(), fx("want_T"));
  NUMPY_CHECK(x.transpose(0, 2), fx("want_sw02"));
  NUMPY_CHECK(rlx::transpose(x, -1, -2), fx("want_swm"));
}

TEST_CASE("numpy: permute matches numpy.transpose with an axes tuple") {
  Fixture fx("transpose_permute");
  Tensor x = fx("x");
  NUMPY_CHECK(x.permute({1, 2, 0}), fx("want_p120"));
  NUMPY_CHECK(rlx::permute(x, {-1, 0, 1}), fx("want_pm101"));
}

TEST_CASE("numpy: squeeze drops every size-1 axis or the given one") {
  Fixture fx("squeeze_unsqueeze");
  Tensor x = fx("x");
  NUMPY_CHECK(x.squeeze(), fx("want_sq"));
  NUMPY_CHECK(x.squeeze(2), fx("want_sq2"));
  NUMPY_CHECK(rlx::squeeze(x, -4), fx("want_sqm4"));
}

TEST_CASE("numpy: unsqueeze inserts an axis like numpy.expand_dims") {
  Fixture fx("squeeze_unsqueeze");
  Tensor x = fx("x");
  NUMPY_CHECK(x.unsqueeze(0), fx("want_un0"));
  NUMPY_CHECK(x.unsqueeze(-1), fx("want_unm1"));
  NUMPY_CHECK(rlx::unsqueeze(x, 2), fx("want_un2"));
}

TEST_CASE("numpy: flatten merges the given axis range like torch.flatten") {
  Fixture fx("flatten_ranges");
  Tensor x = fx("x");
  NUMPY_CHECK(x.flatten(), fx("want_all"));
  NUMPY_CHECK(x.flatten(1), fx("want_1"));
  NUMPY_CHECK(rlx::flatten(x, 1, 2), fx("want_12"));
  NUMPY_CHECK(x.flatten(-2, -1), fx("want_m2m1"));
}

namespace numpy_eq {
/// SLICES of make_frontend.py: x[start:stop:step] along one axis of x [7,6].
struct PySlice {
  int64_t axis;
  std::optional<int64_t> start, stop;
  int64_t step;
  const char* text;
};
const PySlice kSlices[] = {
    {0, 1, 6, 2, "x[1:6:2]"},
    {0, std::nullopt, std::nullopt, -1, "x[::-1]"},
    {1, -2, std::nullopt, 1, "x[:, -2:]"},
    {0, 5, 1, -2, "x[5:1:-2]"},
    {1, -100, 100, 1, "x[:, -100:100]"},
    {0, 100, -100, -3, "x[100:-100:-3]"},
    {0, 3, 3, 1, "x[3:3]"},
    {1, std::nullopt, std::nullopt, 4, "x[:, ::4]"},
    {1, -1, -7, -2, "x[:, -1:-7:-2]"},
    {0, 2, -2, 1, "x[2:-2]"},
    {0, -1, std::nullopt, -1, "x[-1::-1]"},
    {1, 4, 1, 1, "x[:, 4:1]"},
};
} // namespace numpy_eq

TEST_CASE("numpy: slice with steps and out-of-range bounds matches Python slicing") {
  Fixture fx("slicing_python");
  Tensor x = fx("x");
  int i = 0;
  for (const numpy_eq::PySlice& s : numpy_eq::kSlices) {
    INFO(s.text);
    NUMPY_CHECK(x.slice(s.axis, s.start, s.stop, s.step), fx("want_" + std::to_string(i++)));
  }
}

TEST_CASE("numpy: index with ints, steps and newaxis matches numpy basic indexing") {
  Fixture fx("index_basic");
  Tensor x = fx("x");
  NUMPY_CHECK(x.index({1, rlx::Slice{0, 4, 2}, rlx::newaxis}), fx("want_a"));
  NUMPY_CHECK(x.index({rlx::_, -1}), fx("want_b"));
  NUMPY_CHECK(x.index({rlx::newaxis, rlx::Slice{.step = -2}, 3}), fx("want_c"));
  NUMPY_CHECK(x.index({-2, rlx::Slice{.start = -3}, rlx::Slice{.start = 1, .step = 3}}),
              fx("want_d"));
}

TEST_CASE("numpy: operator[] selects along axis 0, negative indices included") {
  Fixture fx("index_basic");
  Tensor x = fx("x");
  NUMPY_CHECK(x[-1], fx("want_e"));
  NUMPY_CHECK(x[2][1], fx("want_f"));
}

TEST_CASE("numpy: concat joins along axis 0 and a negative axis") {
  Fixture fx("concat_axes");
  Tensor a = fx("a");
  NUMPY_CHECK(rlx::concat({a, fx("b")}, 0), fx("want_0"));
  NUMPY_CHECK(rlx::concat({a, fx("c")}, -1), fx("want_m1"));
}

TEST_CASE("numpy: concat of i64 and f32 promotes to f64 like numpy") {
  Fixture fx("concat_axes");
  NUMPY_CHECK(rlx::concat({fx("i"), fx("f")}), fx("want_mixed"));
}

TEST_CASE("numpy: stack inserts a new axis at 0, 1 and -1 like numpy.stack") {
  Fixture fx("stack_axes");
  Tensor a = fx("a"), b = fx("b"), c = fx("c");
  NUMPY_CHECK(rlx::stack({a, b, c}), fx("want_0"));
  NUMPY_CHECK(rlx::stack({a, b, c}, 1), fx("want_1"));
  NUMPY_CHECK(rlx::stack({a, b, c}, -1), fx("want_m1"));
}

TEST_CASE("numpy: split by sizes matches numpy.split at the running offsets") {
  Fixture fx("split_sizes");
  Tensor x = fx("x");
  std::vector<Tensor> p = rlx::split(x, {2, 4, 1}, 1);
  REQUIRE(p.size() == 3);
  NUMPY_CHECK(p[0], fx("want_a0"));
  NUMPY_CHECK(p[1], fx("want_a1"));
  NUMPY_CHECK(p[2], fx("want_a2"));
  std::vector<Tensor> q = rlx::split(x, {1, 2});
  REQUIRE(q.size() == 2);
  NUMPY_CHECK(q[0], fx("want_b0"));
  NUMPY_CHECK(q[1], fx("want_b1"));
}

TEST_CASE("numpy: take with negative indices matches numpy.take on axis 0 and axis -1") {
  Fixture fx("take_negative");
  NUMPY_CHECK(rlx::take(fx("x"), fx("i")), fx("want_0"));
  NUMPY_CHECK(rlx::take(fx("x"), fx("j"), -1), fx("want_m1"));
}

TEST_CASE("numpy: flip reverses one axis or several like numpy.flip") {
  Fixture fx("flip_axes");
  Tensor x = fx("x");
  NUMPY_CHECK(rlx::flip(x, {0}), fx("want_0"));
  NUMPY_CHECK(rlx::flip(x, {-1, 0}), fx("want_m10"));
}

TEST_CASE("numpy: pad in constant, reflect and edge modes matches numpy.pad") {
  Fixture fx("pad_modes");
  Tensor x = fx("x");
  NUMPY_CHECK(rlx::pad(x, {1, 2, 0, 3}, rlx::ir::PadMode::Constant, 1.5), fx("want_const"));
  NUMPY_CHECK(rlx::pad(x, {2, 1, 1, 2}, rlx::ir::PadMode::Reflect), fx("want_reflect"));
  NUMPY_CHECK(rlx::pad(x, {0, 2, 3, 1}, rlx::ir::PadMode::Edge), fx("want_edge"));
}

TEST_CASE("numpy: expand and broadcast_to match numpy.broadcast_to") {
  Fixture fx("expand_broadcast");
  Tensor x = fx("x");
  NUMPY_CHECK(x.expand({2, 3, 4}), fx("want_234"));
  NUMPY_CHECK(x.expand({-1, 5}), fx("want_35"));
  NUMPY_CHECK(rlx::broadcast_to(fx("y"), {2, 2}), fx("want_22"));
}

// ---------------------------------------------------------------------------------------------
// Creation

TEST_CASE("numpy: arange with one argument counts in i64 like numpy.arange") {
  Fixture fx("arange_forms");
  NUMPY_CHECK(rlx::arange(5), fx("want_5"));
}

TEST_CASE("numpy: arange with start, stop and step matches numpy.arange") {
  // include/rlx/tensor.hpp: the (start, stop, step) form defaults to f32 (numpy infers int64 for
  // integer arguments); the count is ceil((stop - start) / step) as numpy's.
  Fixture fx("arange_forms");
  NUMPY_CHECK(rlx::arange(2, 10, 3), fx("want_2_10_3"));
  NUMPY_CHECK(rlx::arange(0, 1, 0.1), fx("want_tenth"));
  NUMPY_CHECK(rlx::arange(5, -1, -1.5), fx("want_neg"));
  NUMPY_CHECK(rlx::arange(1, 2, 0.25, DType::F64), fx("want_f64"));
  NUMPY_CHECK(rlx::arange(-3, 3, 1, DType::I32), fx("want_i32"));
  NUMPY_CHECK(rlx::arange(3, 3), fx("want_empty"));
}

TEST_CASE("numpy: linspace includes both ends like numpy.linspace, for one point or none too") {
  Fixture fx("linspace_forms");
  NUMPY_CHECK(rlx::linspace(0, 1, 5), fx("want_a"));
  NUMPY_CHECK(rlx::linspace(-2, 3, 7), fx("want_b"));
  NUMPY_CHECK(rlx::linspace(1, 0, 4, DType::F64), fx("want_c"));
  NUMPY_CHECK(rlx::linspace(2, 2, 1), fx("want_d"));
  NUMPY_CHECK(rlx::linspace(0, 1, 0), fx("want_e"));
}

TEST_CASE("numpy: eye with rectangular sizes and diagonal offsets matches numpy.eye") {
  Fixture fx("eye_forms");
  NUMPY_CHECK(rlx::eye(3), fx("want_3"));
  NUMPY_CHECK(rlx::eye(3, 4, 1), fx("want_34k1"));
  NUMPY_CHECK(rlx::eye(4, 3, -2), fx("want_43km2"));
  NUMPY_CHECK(rlx::eye(2, std::nullopt, 0, DType::I32), fx("want_i32"));
}

TEST_CASE("numpy: zeros, ones and full match numpy, full taking the C++ value's dtype") {
  // include/rlx/tensor.hpp: full's dtype is the C++ type's (float -> f32, int -> i32,
  // double -> f64); zeros defaults to f32.
  Fixture fx("fill_forms");
  NUMPY_CHECK(rlx::zeros({2, 3}), fx("want_zeros"));
  NUMPY_CHECK(rlx::ones({3}, DType::I64), fx("want_ones"));
  NUMPY_CHECK(rlx::full({2, 3}, 2.5f), fx("want_full_f"));
  NUMPY_CHECK(rlx::full({2}, 7), fx("want_full_i"));
  NUMPY_CHECK(rlx::full({2, 2}, 1.5), fx("want_full_d"));
}

TEST_CASE("numpy: zeros_like, ones_like and full_like keep the model's sizes and dtype") {
  Fixture fx("fill_forms");
  Tensor i = fx("i");
  NUMPY_CHECK(rlx::zeros_like(i), fx("want_zl"));
  NUMPY_CHECK(rlx::ones_like(i), fx("want_ol"));
  NUMPY_CHECK(rlx::full_like(i, 4), fx("want_fl"));
}

// ---------------------------------------------------------------------------------------------
// Neural-network layers

TEST_CASE("numpy: layer_norm over the last axis matches torch layer_norm") {
  Fixture fx("layer_norm_last");
  Tensor x = fx("x"), g = fx("gamma"), b = fx("beta");
  NUMPY_CHECK(rlx::layer_norm(x, g, b), fx("want"));
  NUMPY_CHECK(rlx::layer_norm(x, g, b, 1e-2), fx("want_eps"));
}

TEST_CASE("numpy: rms_norm with and without beta matches the numpy formula") {
  Fixture fx("rms_norm_last");
  Tensor x = fx("x"), g = fx("gamma");
  NUMPY_CHECK(rlx::rms_norm(x, g), fx("want"));
  NUMPY_CHECK(rlx::rms_norm(x, g, fx("beta"), 1e-3), fx("want_beta"));
}

TEST_CASE("numpy: conv2d with stride, padding and bias matches torch conv2d") {
  Fixture fx("conv2d_options");
  NUMPY_CHECK(rlx::conv2d(fx("x"), fx("w"), fx("b"),
                          rlx::Conv2dOptions{.stride = {2, 1}, .padding = {1, 2}}),
              fx("want"));
}

TEST_CASE("numpy: grouped dilated conv2d without bias matches torch conv2d") {
  Fixture fx("conv2d_options");
  NUMPY_CHECK(rlx::conv2d(fx("x2"), fx("w2"), std::nullopt,
                          rlx::Conv2dOptions{.dilation = {2, 1}, .groups = 2}),
              fx("want_grouped"));
}

TEST_CASE("numpy: max_pool2d with stride and padding, and with the default stride, match torch") {
  Fixture fx("pool2d");
  Tensor x = fx("x");
  NUMPY_CHECK(rlx::max_pool2d(x, {3, 2}, rlx::ir::Ints2{2, 2}, {1, 1}), fx("want_max"));
  NUMPY_CHECK(rlx::max_pool2d(x, {2, 2}), fx("want_max2"));
}

TEST_CASE("numpy: avg_pool2d counts padding like torch with count_include_pad") {
  // docs/semantics.md "Convolution and pooling": avg pooling counts padding in the divisor.
  Fixture fx("pool2d");
  Tensor x = fx("x");
  NUMPY_CHECK(rlx::avg_pool2d(x, {3, 3}, rlx::ir::Ints2{2, 2}, {1, 1}), fx("want_avg"));
  NUMPY_CHECK(rlx::avg_pool2d(x, {2, 3}), fx("want_avg23"));
}

TEST_CASE("numpy: multi-head attention matches a hand-written numpy attention") {
  Fixture fx("attention_heads");
  NUMPY_CHECK(rlx::attention(fx("q"), fx("k"), fx("v"), 3), fx("want"));
}

TEST_CASE("numpy: causal attention masks later keys, aligned to the end for short queries") {
  // docs/semantics.md: Causal masks key j for query i when j > i + (Sk - Sq).
  Fixture fx("attention_heads");
  Tensor k = fx("k"), v = fx("v");
  rlx::AttentionOptions causal{.mask = rlx::ir::MaskKind::causal()};
  NUMPY_CHECK(rlx::attention(fx("q"), k, v, 3, causal), fx("want_causal"));
  NUMPY_CHECK(rlx::attention(fx("qs"), k, v, 3, causal), fx("want_causal_short"));
}

TEST_CASE("numpy: attention with an explicit scale and with a key mask matches numpy") {
  // docs/semantics.md: a Custom mask is [B, Sk] with values < 0.5 masked (0.5 is kept).
  Fixture fx("attention_heads");
  Tensor q = fx("q"), k = fx("k"), v = fx("v");
  NUMPY_CHECK(rlx::attention(q, k, v, 3, {.scale = 0.3f}), fx("want_scale"));
  NUMPY_CHECK(rlx::attention_masked(q, k, v, fx("valid"), 3), fx("want_masked"));
}

TEST_CASE("numpy: linear with bias equals x @ w + b") {
  Fixture fx("linear_bias_activation");
  NUMPY_CHECK(rlx::linear(fx("x"), fx("w"), fx("b")), fx("want_plain"));
}

TEST_CASE("numpy: linear with bias and relu matches numpy fused and unfused") {
  Fixture fx("linear_bias_activation");
  Tensor x = fx("x"), w = fx("w"), b = fx("b");
  NUMPY_CHECK(rlx::linear(x, w, b, rlx::ir::Activation::Relu, true), fx("want_relu"));
  NUMPY_CHECK(rlx::linear(x, w, b, rlx::ir::Activation::Relu, false), fx("want_relu_unfused"));
}

TEST_CASE("numpy: linear with bias and gelu matches torch fused and unfused") {
  Fixture fx("linear_bias_activation");
  Tensor x = fx("x"), w = fx("w"), b = fx("b");
  NUMPY_CHECK(rlx::linear(x, w, b, rlx::ir::Activation::Gelu, true), fx("want_gelu"));
  NUMPY_CHECK(rlx::linear(x, w, b, rlx::ir::Activation::Gelu, false), fx("want_gelu_unfused"));
}

TEST_CASE("numpy: fused linear without bias applies the activation to x @ w") {
  Fixture fx("linear_bias_activation");
  NUMPY_CHECK(rlx::linear(fx("x"), fx("w"), std::nullopt, rlx::ir::Activation::Tanh, true),
              fx("want_tanh"));
}

TEST_CASE("numpy: a small MLP written with operators matches numpy") {
  Fixture fx("mlp_composition");
  Tensor x = fx("x"), w1 = fx("w1"), b1 = fx("b1"), w2 = fx("w2");
  Tensor h = (x.matmul(w1) + b1).relu();
  NUMPY_CHECK(rlx::softmax(h.matmul(w2) - 1), fx("want"));
}

// ---------------------------------------------------------------------------------------------
// Files and random numbers

TEST_CASE("numpy: save_npy then load_npy round-trips values, sizes and dtypes") {
  Fixture fx("npy_round_trip");
  for (const char* name : {"f", "i", "b", "d"}) {
    INFO(name);
    Tensor t = fx(name);
    std::string path = numpy_eq::temp_npy(name);
    rlx::save_npy(path, t);
    Tensor back = rlx::load_npy(path);
    std::filesystem::remove(path);
    NUMPY_CHECK(back, t, numpy_eq::Tol{0, 0});
  }
}

TEST_CASE("numpy: save_npy of a lazy result writes the computed values") {
  Fixture fx("npy_round_trip");
  Tensor y = fx("f") * 2 + 1;
  std::string path = numpy_eq::temp_npy("lazy");
  rlx::save_npy(path, y);
  Tensor back = rlx::load_npy(path);
  std::filesystem::remove(path);
  NUMPY_CHECK(back, y, numpy_eq::Tol{0, 0});
}

TEST_CASE("numpy: rand and randn with the same seed give the same values") {
  CHECK(rlx::rand({1000}, 7).to_vector<float>() == rlx::rand({1000}, 7).to_vector<float>());
  CHECK(rlx::randn({3, 5}, 9).to_vector<float>() == rlx::randn({3, 5}, 9).to_vector<float>());
}

TEST_CASE("numpy: rand and randn with different seeds give different values") {
  std::vector<float> a = rlx::rand({1000}, 7).to_vector<float>();
  std::vector<float> b = rlx::rand({1000}, 8).to_vector<float>();
  std::vector<float> c = rlx::randn({1000}, 7).to_vector<float>();
  std::vector<float> d = rlx::randn({1000}, 8).to_vector<float>();
  int same_u = 0, same_n = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    same_u += a[i] == b[i];
    same_n += c[i] == d[i];
  }
  CHECK(same_u < 5);
  CHECK(same_n < 5);
}

TEST_CASE("numpy: rand is uniform on [0, 1) with a mean within 4 sigma of 0.5") {
  const int64_t n = 100000;
  Tensor u = rlx::rand({n}, 1234);
  CHECK(u.dtype() == DType::F32);
  CHECK(u.sizes() == rlx::Dims{n});
  std::vector<float> v = u.to_vector<float>();
  float lo = 1, hi = 0;
  for (float x : v) lo = std::min(lo, x), hi = std::max(hi, x);
  CHECK(lo >= 0.0f);
  CHECK(hi < 1.0f);
  // The mean of n uniforms has sigma sqrt(1/12 / n).
  double sigma = std::sqrt(1.0 / 12.0 / double(n));
  CHECK(std::fabs(u.mean().item<double>() - 0.5) < 4 * sigma);
}

TEST_CASE("numpy: randn has mean and std within 4 sigma of 0 and 1") {
  const int64_t n = 100000;
  Tensor z = rlx::randn({n}, 99, DType::F64);
  CHECK(z.dtype() == DType::F64);
  // sigma of the sample mean: 1/sqrt(n); of the sample std of a normal: about 1/sqrt(2n).
  CHECK(std::fabs(z.mean().item<double>()) < 4 / std::sqrt(double(n)));
  CHECK(std::fabs(rlx::std(z).item<double>() - 1.0) < 4 / std::sqrt(2.0 * double(n)));
}
