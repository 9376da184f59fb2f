// tests/test_interp_nn.cpp -- interpreter kernels of the contract, norm and attention families.
// Expected values are derived by hand (arithmetic in comments) or by direct reference loops
// written per output element, in long double where precision matters.
#include "support/check_error.hpp"

#include <rlx/all.hpp>
#include <rlx/interp.hpp>

#include <cmath>
#include <complex>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

using namespace rlx;
using namespace rlx::ir;
using rlx::Buffer;

namespace {

Buffer f64(std::vector<int64_t> dims, std::vector<double> v) {
  return Buffer::from_f64(Shape::of(dims, DType::F64), v);
}

Buffer f32(std::vector<int64_t> dims, std::vector<float> v) { return Buffer::f32(dims, v); }

Buffer ints(DType t, std::vector<int64_t> dims, std::vector<int64_t> v) {
  return Buffer::from_i64(Shape::of(dims, t), v);
}

Shape shape(std::vector<int64_t> dims, DType t = DType::F64) { return Shape::of(dims, t); }

/// Runs one op through a graph (operands are inputs x0, x1, ...) and returns its result.
Buffer run_op(Op op, const std::vector<Buffer>& operands, Shape out) {
  Graph g("t");
  interp::Feed feed;
  std::vector<NodeId> ids;
  for (std::size_t i = 0; i < operands.size(); ++i) {
    std::string name = "x" + std::to_string(i);
    ids.push_back(g.input(name, operands[i].shape()));
    feed[name] = operands[i];
  }
  g.set_outputs({g.add_node(std::move(op), ids, std::move(out))});
  return interp::run(g, feed).at(0);
}

/// Calls the kernel directly, bypassing the verifier's shape rules.
Buffer eval_direct(Op op, const std::vector<Buffer>& operands, Shape out) {
  Node n{NodeId(0), std::move(op), {}, std::move(out), std::nullopt, {}};
  std::vector<const Buffer*> ptrs;
  for (const Buffer& b : operands) ptrs.push_back(&b);
  return interp::eval_node(n, ptrs);
}

/// |got - want| <= tol * max(1, |want|) element-wise.
void check_close(const std::vector<double>& got, const std::vector<double>& want, double tol) {
  REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    INFO("element " << i << ": got " << got[i] << ", want " << want[i]);
    CHECK(std::abs(got[i] - want[i]) <= tol * std::max(1.0, std::abs(want[i])));
  }
}

/// Deterministic values in [-1, 1) (a small LCG), for the reference-loop comparisons.
std::vector<double> pseudo_random(std::size_t n, uint32_t seed) {
  std::vector<double> v(n);
  for (double& x : v) {
    seed = seed * 1664525u + 1013904223u;
    x = double(seed >> 8) / double(1u << 23) - 1.0;
  }
  return v;
}

/// Small integers in [-6, 6] as doubles: sums of products stay exact.
std::vector<double> small_ints(std::size_t n, int64_t mul) {
  std::vector<double> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = double(int64_t(i) * mul % 13 - 6);
  return v;
}

constexpr double kTight = 1e-12; // f64 results vs double/long-double references

} // namespace

// ---------------------------------------------------------------------------------- matmul

TEST_CASE("interp: matmul of two 2x2 matrices matches the written-out products") {
  // [[1,2],[3,4]] @ [[5,6],[7,8]] = [[1*5+2*7, 1*6+2*8], [3*5+4*7, 3*6+4*8]] = [[19,22],[43,50]]
  Buffer r = run_op(Op(OpKind::MatMul), {f32({2, 2}, {1, 2, 3, 4}), f32({2, 2}, {5, 6, 7, 8})},
                    shape({2, 2}, DType::F32));
  CHECK(r.shape() == shape({2, 2}, DType::F32));
  CHECK(r.to_f64() == std::vector<double>{19, 22, 43, 50});
  // [[1,2,3]] @ [[1],[0],[-1]] = 1 - 3 = -2 (f64)
  Buffer s =
      run_op(Op(OpKind::MatMul), {f64({1, 3}, {1, 2, 3}), f64({3, 1}, {1, 0, -1})}, shape({1, 1}));
  CHECK(s.to_f64() == std::vector<double>{-2});
}

TEST_CASE("interp: batched matmul broadcasts batch dims like NumPy") {
  // a [2,1,2,3] x b [3,3,4] -> [2,3,2,4]; out[p,q,i,j] = sum_k a[p,0,i,k] * b[q,k,j]
  std::vector<double> av = small_ints(12, 7), bv = small_ints(36, 5);
  Buffer r =
      run_op(Op(OpKind::MatMul), {f64({2, 1, 2, 3}, av), f64({3, 3, 4}, bv)}, shape({2, 3, 2, 4}));
  std::vector<double> want;
  for (int p = 0; p < 2; ++p)
    for (int q = 0; q < 3; ++q)
      for (int i = 0; i < 2; ++i)
        for (int j = 0; j < 4; ++j) {
          double acc = 0;
          for (int k = 0; k < 3; ++k) acc += av[p * 6 + i * 3 + k] * bv[q * 12 + k * 4 + j];
          want.push_back(acc);
        }
  CHECK(r.to_f64() == want);

  // a [2,3] (no batch) x b [2,3,4] -> [2,2,4]: the matrix is reused for every batch.
  std::vector<double> cv = small_ints(6, 3), dv = small_ints(24, 11);
  Buffer s = run_op(Op(OpKind::MatMul), {f64({2, 3}, cv), f64({2, 3, 4}, dv)}, shape({2, 2, 4}));
  std::vector<double> want2;
  for (int t = 0; t < 2; ++t)
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 4; ++j) {
        double acc = 0;
        for (int k = 0; k < 3; ++k) acc += cv[i * 3 + k] * dv[t * 12 + k * 4 + j];
        want2.push_back(acc);
      }
  CHECK(s.to_f64() == want2);
}

TEST_CASE("interp: matmul treats rank-1 operands as row and column vectors and drops their axes") {
  // [1,2,3] @ [[1,2],[3,4],[5,6]] = [1+6+15, 2+8+18] = [22, 28]
  Buffer vm = run_op(Op(OpKind::MatMul), {f64({3}, {1, 2, 3}), f64({3, 2}, {1, 2, 3, 4, 5, 6})},
                     shape({2}));
  CHECK(vm.shape() == shape({2}));
  CHECK(vm.to_f64() == std::vector<double>{22, 28});
  // [[1,2,3],[4,5,6]] @ [1,0,-1] = [1-3, 4-6] = [-2, -2]
  Buffer mv = run_op(Op(OpKind::MatMul), {f64({2, 3}, {1, 2, 3, 4, 5, 6}), f64({3}, {1, 0, -1})},
                     shape({2}));
  CHECK(mv.to_f64() == std::vector<double>{-2, -2});
  // [1,2,3] . [4,5,6] = 4 + 10 + 18 = 32, a rank-0 result
  Buffer vv = run_op(Op(OpKind::MatMul), {f64({3}, {1, 2, 3}), f64({3}, {4, 5, 6})}, shape({}));
  CHECK(vv.shape() == shape({}));
  CHECK(vv.to_f64() == std::vector<double>{32});

  // Vector against a batch of matrices, both ways, vs the per-element formula.
  std::vector<double> v = {2, -1, 3}, b = small_ints(12, 5);
  Buffer vb = run_op(Op(OpKind::MatMul), {f64({3}, v), f64({2, 3, 2}, b)}, shape({2, 2}));
  Buffer bv = run_op(Op(OpKind::MatMul), {f64({2, 2, 3}, b), f64({3}, v)}, shape({2, 2}));
  std::vector<double> want_vb, want_bv;
  for (int t = 0; t < 2; ++t)
    for (int j = 0; j < 2; ++j) {
      double x = 0, y = 0;
      for (int k = 0; k < 3; ++k) {
        x += v[k] * b[t * 6 + k * 2 + j]; // b as [2,3,2]: element [t,k,j]
        y += b[t * 6 + j * 3 + k] * v[k]; // b as [2,2,3]: element [t,j,k]
      }
      want_vb.push_back(x);
      want_bv.push_back(y);
    }
  CHECK(vb.to_f64() == want_vb);
  CHECK(bv.to_f64() == want_bv);
}

TEST_CASE("interp: f32 matmul accumulates in double and rounds once") {
  // In f32, 1e8 + 1 rounds back to 1e8 (its ulp is 8), so a float accumulator gives 0;
  // in double 1e8 + 1 - 1e8 = 1 exactly.
  Buffer r = run_op(Op(OpKind::MatMul), {f32({1, 3}, {1e8f, 1, -1e8f}), f32({3, 1}, {1, 1, 1})},
                    shape({1, 1}, DType::F32));
  CHECK(r.to_f64() == std::vector<double>{1});
}

TEST_CASE("interp: integer matmul on i32 computes exact integer sums") {
  // [[1,-2,3],[4,5,-6]] @ [[7,8],[9,-10],[11,12]]
  //   = [[7-18+33, 8+20+36], [28+45-66, 32-50-72]] = [[22, 64], [7, -90]]
  Buffer r = run_op(Op(OpKind::MatMul),
                    {ints(DType::I32, {2, 3}, {1, -2, 3, 4, 5, -6}),
                     ints(DType::I32, {3, 2}, {7, 8, 9, -10, 11, 12})},
                    shape({2, 2}, DType::I32));
  CHECK(r.dtype() == DType::I32);
  CHECK(r.to_i64() == std::vector<int64_t>{22, 64, 7, -90});
  // A sum past i32's range saturates when stored (Buffer::set_i64), like element-wise add:
  // 2^30 + 2^30 = 2^31 -> 2^31 - 1.
  Buffer sat = run_op(Op(OpKind::MatMul),
                      {ints(DType::I32, {1, 2}, {int64_t(1) << 30, int64_t(1) << 30}),
                       ints(DType::I32, {2, 1}, {1, 1})},
                      shape({1, 1}, DType::I32));
  CHECK(sat.to_i64() == std::vector<int64_t>{2147483647});
}

TEST_CASE("interp: i64 matmul is exact past 2^53 and wraps around on overflow") {
  // (2^53 + 1) * 1 + 1 * 1 = 2^53 + 2; a double accumulator would lose the +1.
  int64_t big = (int64_t(1) << 53) + 1;
  Buffer r = run_op(Op(OpKind::MatMul),
                    {ints(DType::I64, {1, 2}, {big, 1}), ints(DType::I64, {2, 1}, {1, 1})},
                    shape({1, 1}, DType::I64));
  CHECK(r.to_i64() == std::vector<int64_t>{(int64_t(1) << 53) + 2});
  // 2^62 * 2 + 2^62 * 2 = 2^64 = 0 (mod 2^64); 2^62 * 2 + 1 * 0 = 2^63 = INT64_MIN (mod 2^64).
  int64_t p62 = int64_t(1) << 62;
  Buffer w =
      run_op(Op(OpKind::MatMul),
             {ints(DType::I64, {2, 2}, {p62, p62, p62, 1}), ints(DType::I64, {2, 1}, {2, 2})},
             shape({2, 1}, DType::I64));
  // row 1: 2^62 * 2 + 1 * 2 = 2^63 + 2 = INT64_MIN + 2
  CHECK(w.to_i64() == std::vector<int64_t>{0, std::numeric_limits<int64_t>::min() + 2});
}

TEST_CASE("interp: c64 matmul multiplies complex numbers") {
  // [[i, 1+i]] @ [[2i], [3]] = i*2i + (1+i)*3 = -2 + 3 + 3i = 1 + 3i
  Buffer a(shape({1, 2}, DType::C64)), b(shape({2, 1}, DType::C64));
  a.set_c64(0, {0, 1});
  a.set_c64(1, {1, 1});
  b.set_c64(0, {0, 2});
  b.set_c64(1, {3, 0});
  Buffer r = run_op(Op(OpKind::MatMul), {a, b}, shape({1, 1}, DType::C64));
  CHECK(r.get_c64(0) == std::complex<float>(1, 3));
}

TEST_CASE("interp: matmul with mismatched operands reports a shape error instead of reading "
          "out of bounds") {
  test::check_error(
      [] {
        eval_direct(Op(OpKind::MatMul),
                    {f64({2, 3}, std::vector<double>(6)), f64({2, 2}, std::vector<double>(4))},
                    shape({2, 2}));
      },
      ErrorKind::Shape, "matmul");
  test::check_error(
      [] {
        eval_direct(Op(OpKind::MatMul),
                    {f64({2, 3}, std::vector<double>(6)), f64({3, 2}, std::vector<double>(6))},
                    shape({3, 3}));
      },
      ErrorKind::Shape, "matmul");
}

// ------------------------------------------------------------------ fused contractions

TEST_CASE("interp: fused_matmul_bias_act adds a broadcast bias, then applies the activation") {
  // x @ w = [[1,2],[3,4]] @ [[1,0],[0,-1]] = [[1,-2],[3,-4]]; + bias [0.5, 1] = [[1.5,-1],[3.5,-3]]
  Buffer x = f64({2, 2}, {1, 2, 3, 4}), w = f64({2, 2}, {1, 0, 0, -1});
  Buffer bias = f64({2}, {0.5, 1});
  Buffer plain =
      run_op(Op(OpKind::FusedMatMulBiasAct, FusedMatMulAttrs{}), {x, w, bias}, shape({2, 2}));
  CHECK(plain.to_f64() == std::vector<double>{1.5, -1, 3.5, -3});
  Buffer relu = run_op(Op(OpKind::FusedMatMulBiasAct, FusedMatMulAttrs{Activation::Relu}),
                       {x, w, bias}, shape({2, 2}));
  CHECK(relu.to_f64() == std::vector<double>{1.5, 0, 3.5, 0});
  // silu(v) = v / (1 + e^-v)
  Buffer silu = run_op(Op(OpKind::FusedMatMulBiasAct, FusedMatMulAttrs{Activation::Silu}),
                       {x, w, bias}, shape({2, 2}));
  std::vector<double> want;
  for (double v : {1.5, -1.0, 3.5, -3.0}) want.push_back(v / (1 + std::exp(-v)));
  check_close(silu.to_f64(), want, kTight);
  // A column bias [[10],[20]] broadcasts along rows: [[11,8],[23,16]].
  Buffer col = run_op(Op(OpKind::FusedMatMulBiasAct, FusedMatMulAttrs{}),
                      {x, w, f64({2, 1}, {10, 20})}, shape({2, 2}));
  CHECK(col.to_f64() == std::vector<double>{11, 8, 23, 16});
  // The same on i32 with relu.
  Buffer xi = ints(DType::I32, {2, 2}, {1, 2, 3, 4}), wi = ints(DType::I32, {2, 2}, {1, 0, 0, -1});
  Buffer irelu = run_op(Op(OpKind::FusedMatMulBiasAct, FusedMatMulAttrs{Activation::Relu}),
                        {xi, wi, ints(DType::I32, {2}, {1, 3})}, shape({2, 2}, DType::I32));
  CHECK(irelu.to_i64() == std::vector<int64_t>{2, 1, 4, 0});
}

TEST_CASE("interp: fused_matmul_bias_act rejects float-only activations on integers") {
  Buffer xi = ints(DType::I32, {1, 1}, {1});
  test::check_error(
      [&] {
        run_op(Op(OpKind::FusedMatMulBiasAct, FusedMatMulAttrs{Activation::Gelu}), {xi, xi, xi},
               shape({1, 1}, DType::I32));
      },
      ErrorKind::Type, "fused_matmul_bias_act");
}

TEST_CASE("interp: fused_swiglu multiplies silu of the gate half by the up half") {
  // silu(g) = g / (1 + e^-g). Rows [up | gate]: [1,2 | 0,-1] and [3,-1 | 2,0.5].
  auto silu = [](double g) { return g / (1 + std::exp(-g)); };
  Buffer h = f64({2, 4}, {1, 2, 0, -1, 3, -1, 2, 0.5});
  Buffer r = run_op(Op(OpKind::FusedSwiGLU, SwiGluAttrs{}), {h}, shape({2, 2}));
  check_close(r.to_f64(), {silu(0) * 1, silu(-1) * 2, silu(2) * 3, silu(0.5) * -1}, kTight);
  // gate_first: rows [gate | up].
  Buffer s = run_op(Op(OpKind::FusedSwiGLU, SwiGluAttrs{true}), {h}, shape({2, 2}));
  check_close(s.to_f64(), {silu(1) * 0, silu(2) * -1, silu(3) * 2, silu(-1) * 0.5}, kTight);
  // Large |gate| neither overflows nor produces NaN: silu(-1000) = -0, silu(1000) = 1000.
  Buffer big = run_op(Op(OpKind::FusedSwiGLU, SwiGluAttrs{}), {f64({2}, {1, -1000})}, shape({1}));
  CHECK(big.to_f64()[0] == 0.0);
  Buffer big2 = run_op(Op(OpKind::FusedSwiGLU, SwiGluAttrs{}), {f64({2}, {2, 1000})}, shape({1}));
  CHECK(big2.to_f64()[0] == 2000.0);
  test::check_error(
      [] {
        run_op(Op(OpKind::FusedSwiGLU, SwiGluAttrs{}), {ints(DType::I32, {2}, {1, 2})},
               shape({1}, DType::I32));
      },
      ErrorKind::Type, "fused_swiglu");
}

TEST_CASE("interp: fused_swiglu with cast_to rounds the product once, to cast_to's dtype") {
  // f32 halves [up | gate] = [1/3 | 1]: silu(1) * (1/3) in double, where the unfused f32 chain
  // would round silu(1) and the product to f32 first.
  float up = 1.0f / 3.0f;
  double want = (1.0 / (1.0 + std::exp(-1.0))) * double(up);
  Buffer h = f32({2}, {up, 1.0f});
  Buffer y = run_op(Op(OpKind::FusedSwiGLU, SwiGluAttrs{false, DType::F64}), {h}, shape({1}));
  REQUIRE(y.dtype() == DType::F64);
  CHECK(y.to_f64()[0] == want);
  CHECK(y.to_f64()[0] != double(float(want))); // not rounded to f32 on the way
  // To f16: the double product rounded once to half precision (0.2437 -> 0.24365234375).
  Buffer z =
      run_op(Op(OpKind::FusedSwiGLU, SwiGluAttrs{false, DType::F16}), {h}, shape({1}, DType::F16));
  REQUIRE(z.dtype() == DType::F16);
  CHECK(z.to_f64()[0] == 0.24365234375);
}

TEST_CASE("interp: fused_swiglu refuses a cast_to that is not a floating-point dtype") {
  Graph g("t");
  NodeId h = g.input("h", shape({2, 4}, DType::F32));
  test::check_error(
      [&] { g.add_inferred(Op(OpKind::FusedSwiGLU, SwiGluAttrs{false, DType::I32}), {h}); },
      ErrorKind::Shape, "cast_to must be a floating-point dtype");
}

// -------------------------------------------------------------------------------- norms

namespace {

/// Two-pass layer norm of `x` (long double) with per-element gamma/beta, as a reference.
std::vector<double> layer_norm_ref(const std::vector<long double>& x, double eps,
                                   const std::vector<double>& gamma,
                                   const std::vector<double>& beta) {
  long double mean = 0, var = 0;
  for (long double v : x) mean += v;
  mean /= (long double)x.size();
  for (long double v : x) var += (v - mean) * (v - mean);
  var /= (long double)x.size();
  std::vector<double> out;
  for (std::size_t i = 0; i < x.size(); ++i)
    out.push_back(double((x[i] - mean) / std::sqrt(var + eps) * gamma[i] + beta[i]));
  return out;
}

} // namespace

TEST_CASE("interp: layer_norm of [1,2,3,4] matches the hand computation") {
  // mean 2.5; biased var = (2.25 + 0.25 + 0.25 + 2.25) / 4 = 1.25; eps 0.
  // y = [-1.5, -0.5, 0.5, 1.5] / sqrt(1.25) * [1,2,1,1] + [0,0,1,-1]
  double r = 1 / std::sqrt(1.25);
  Buffer x = f64({4}, {1, 2, 3, 4});
  Buffer y = run_op(Op(OpKind::LayerNorm, NormAttrs{-1, 0.0f}),
                    {x, f64({4}, {1, 2, 1, 1}), f64({4}, {0, 0, 1, -1})}, shape({4}));
  check_close(y.to_f64(), {-1.5 * r, -0.5 * r * 2, 0.5 * r + 1, 1.5 * r - 1}, kTight);
  // eps 0.25 (exact in f32): denominator sqrt(1.25 + 0.25) = sqrt(1.5).
  double q = 1 / std::sqrt(1.5);
  Buffer z = run_op(Op(OpKind::LayerNorm, NormAttrs{0, 0.25f}),
                    {x, f64({4}, {1, 1, 1, 1}), f64({4}, {0, 0, 0, 0})}, shape({4}));
  check_close(z.to_f64(), {-1.5 * q, -0.5 * q, 0.5 * q, 1.5 * q}, kTight);
}

TEST_CASE("interp: layer_norm over a middle axis reads gamma and beta flat from any rank") {
  // x [2,3,2], axis 1 (and -2): each (a, c) column of 3 values is normalised.
  std::vector<double> xv = pseudo_random(12, 7), g = {0.5, 1, 2}, b = {1, -1, 0.25};
  for (int64_t axis : {1, -2}) {
    Buffer y = run_op(Op(OpKind::LayerNorm, NormAttrs{axis, 1e-3f}),
                      {f64({2, 3, 2}, xv), f64({1, 3}, g), f64({3, 1}, b)}, shape({2, 3, 2}));
    std::vector<double> want(12);
    for (int a = 0; a < 2; ++a)
      for (int c = 0; c < 2; ++c) {
        std::vector<long double> col;
        for (int l = 0; l < 3; ++l) col.push_back(xv[a * 6 + l * 2 + c]);
        std::vector<double> ref = layer_norm_ref(col, double(1e-3f), g, b);
        for (int l = 0; l < 3; ++l) want[a * 6 + l * 2 + c] = ref[l];
      }
    check_close(y.to_f64(), want, kTight);
  }
}

TEST_CASE("interp: layer_norm stays accurate with a mean offset of 1e4") {
  // 64 values 1e4 + k * 1e-3, k in [-32, 31] (std ~ 0.018). One-pass E[x^2] - E[x]^2 in
  // double loses ~1e-4 of the variance here; two passes keep the normalised outputs within
  // ~1e-8 of a long double reference.
  std::vector<double> xv;
  std::vector<long double> xl;
  for (int i = 0; i < 64; ++i) {
    xv.push_back(1e4 + double((i * 37) % 64 - 32) * 1e-3);
    xl.push_back(xv.back());
  }
  std::vector<double> ones(64, 1.0), zeros(64, 0.0);
  Buffer y = run_op(Op(OpKind::LayerNorm, NormAttrs{-1, 0.0f}),
                    {f64({1, 64}, xv), f64({64}, ones), f64({64}, zeros)}, shape({1, 64}));
  check_close(y.to_f64(), layer_norm_ref(xl, 0.0, ones, zeros), 1e-7);

  // f32: 1e4 + k/64 is exact in f32; outputs match the reference to f32 rounding (1 ulp).
  std::vector<float> xf;
  std::vector<long double> xfl;
  for (int i = 0; i < 64; ++i) {
    xf.push_back(1e4f + float((i * 37) % 129 - 64) / 64.0f);
    xfl.push_back(xf.back());
  }
  Buffer yf = run_op(Op(OpKind::LayerNorm, NormAttrs{-1, 0.0f}),
                     {f32({64}, xf), f32({64}, std::vector<float>(64, 1.0f)),
                      f32({64}, std::vector<float>(64, 0.0f))},
                     shape({64}, DType::F32));
  check_close(yf.to_f64(), layer_norm_ref(xfl, 0.0, ones, zeros), 1.2e-7);
}

TEST_CASE("interp: rms_norm divides by the root mean square") {
  // mean(x^2) = (1 + 4 + 9 + 16) / 4 = 7.5; + eps 0.5 = 8; y = x / sqrt(8) * g + b
  double r = 1 / std::sqrt(8.0);
  Buffer y =
      run_op(Op(OpKind::RmsNorm, NormAttrs{-1, 0.5f}),
             {f64({4}, {1, 2, 3, 4}), f64({4}, {1, 1, 1, 2}), f64({4}, {0, 0, 0, 1})}, shape({4}));
  check_close(y.to_f64(), {1 * r, 2 * r, 3 * r, 4 * r * 2 + 1}, kTight);
  // Over axis 0 of [[3,1],[4,7]]: column (3,4) has mean square 12.5; column (1,7) has 25 -> /5.
  Buffer z = run_op(Op(OpKind::RmsNorm, NormAttrs{0, 0.0f}),
                    {f64({2, 2}, {3, 1, 4, 7}), f64({2}, {1, 1}), f64({2}, {0, 0})}, shape({2, 2}));
  double c = 1 / std::sqrt(12.5);
  check_close(z.to_f64(), {3 * c, 0.2, 4 * c, 1.4}, kTight);
}

TEST_CASE("interp: layer_norm2d normalises over channels at each pixel") {
  // x [1,2,1,2]: pixel w0 has channels (1,3): mean 2, var 1 -> (-1, 1);
  // pixel w1 has (2,6): mean 4, var 4 -> (-2, 2)/2 = (-1, 1). gamma [2,3], beta [10,20]:
  // channel 0 -> -1*2 + 10 = 8; channel 1 -> 1*3 + 20 = 23.
  Buffer y = run_op(Op(OpKind::LayerNorm2d, EpsAttrs{0.0f}),
                    {f64({1, 2, 1, 2}, {1, 2, 3, 6}), f64({2}, {2, 3}), f64({2}, {10, 20})},
                    shape({1, 2, 1, 2}));
  CHECK(y.to_f64() == std::vector<double>{8, 8, 23, 23});

  // [2,3,2,2] vs a per-pixel reference.
  std::vector<double> xv = pseudo_random(24, 3), g = {1, 0.5, 2}, b = {0, 1, -1};
  Buffer z = run_op(Op(OpKind::LayerNorm2d, EpsAttrs{1e-5f}),
                    {f64({2, 3, 2, 2}, xv), f64({3}, g), f64({3}, b)}, shape({2, 3, 2, 2}));
  std::vector<double> want(24);
  for (int n = 0; n < 2; ++n)
    for (int p = 0; p < 4; ++p) {
      std::vector<long double> px;
      for (int c = 0; c < 3; ++c) px.push_back(xv[n * 12 + c * 4 + p]);
      std::vector<double> ref = layer_norm_ref(px, double(1e-5f), g, b);
      for (int c = 0; c < 3; ++c) want[n * 12 + c * 4 + p] = ref[c];
    }
  check_close(z.to_f64(), want, kTight);
}

TEST_CASE("interp: group_norm normalises each group of channels over channels and space") {
  // x [1,4,2], 2 groups. Group 0 = channels 0,1 = [1,2,3,4]: mean 2.5, var 1.25.
  // Group 1 = channels 2,3 = [10,10,10,14]: mean 11, var (1+1+1+9)/4 = 3. eps 0.
  // gamma [1,2,1,1], beta [0,0,0,5] per channel.
  double a = 1 / std::sqrt(1.25), s3 = std::sqrt(3.0);
  Buffer y = run_op(Op(OpKind::GroupNorm, GroupNormAttrs{2, 0.0f}),
                    {f64({1, 4, 2}, {1, 2, 3, 4, 10, 10, 10, 14}), f64({4}, {1, 2, 1, 1}),
                     f64({4}, {0, 0, 0, 5})},
                    shape({1, 4, 2}));
  check_close(
      y.to_f64(),
      {-1.5 * a, -0.5 * a, 2 * 0.5 * a, 2 * 1.5 * a, -1 / s3, -1 / s3, -1 / s3 + 5, 3 / s3 + 5},
      kTight);

  // [2,6,2,2] with 3 groups vs a reference over each (n, group) block.
  std::vector<double> xv = pseudo_random(48, 11), g = pseudo_random(6, 5), b = pseudo_random(6, 9);
  Buffer z = run_op(Op(OpKind::GroupNorm, GroupNormAttrs{3, 1e-5f}),
                    {f64({2, 6, 2, 2}, xv), f64({6}, g), f64({6}, b)}, shape({2, 6, 2, 2}));
  std::vector<double> want(48);
  for (int n = 0; n < 2; ++n)
    for (int grp = 0; grp < 3; ++grp) {
      std::vector<long double> block;
      std::vector<double> gg, bb;
      for (int c = 2 * grp; c < 2 * grp + 2; ++c)
        for (int p = 0; p < 4; ++p) {
          block.push_back(xv[n * 24 + c * 4 + p]);
          gg.push_back(g[c]);
          bb.push_back(b[c]);
        }
      std::vector<double> ref = layer_norm_ref(block, double(1e-5f), gg, bb);
      for (int e = 0; e < 8; ++e) want[n * 24 + grp * 8 + e] = ref[e];
    }
  check_close(z.to_f64(), want, kTight);
}

TEST_CASE("interp: batch_norm_inference uses running statistics per channel of axis 1") {
  // mean [1, 2], var [4, 0.25], eps 0, gamma [1, 2], beta [0, 1]:
  // channel 0: (x - 1) / 2; channel 1: (x - 2) / 0.5 * 2 + 1.
  Buffer g = f64({2}, {1, 2}), b = f64({2}, {0, 1}), m = f64({2}, {1, 2}), v = f64({2}, {4, 0.25});
  // [N, C] = [[1,2],[3,4]]: (1-1)/2 = 0, (2-2)/0.5*2+1 = 1, (3-1)/2 = 1, (4-2)/0.5*2+1 = 9
  Buffer y = run_op(Op(OpKind::BatchNormInference, EpsAttrs{0.0f}),
                    {f64({2, 2}, {1, 2, 3, 4}), g, b, m, v}, shape({2, 2}));
  CHECK(y.to_f64() == std::vector<double>{0, 1, 1, 9});
  // [N, C, L] = [[[1,3],[2,4]]]: channel 0 (1,3) -> (0,1); channel 1 (2,4) -> (1,9)
  Buffer z = run_op(Op(OpKind::BatchNormInference, EpsAttrs{0.0f}),
                    {f64({1, 2, 2}, {1, 3, 2, 4}), g, b, m, v}, shape({1, 2, 2}));
  CHECK(z.to_f64() == std::vector<double>{0, 1, 1, 9});
  // eps is added to the variance: var 4 + eps 5 = 9 -> (x - 1) / 3.
  Buffer e = run_op(Op(OpKind::BatchNormInference, EpsAttrs{5.0f}),
                    {f64({1, 1}, {7}), f64({1}, {1}), f64({1}, {0}), f64({1}, {1}), f64({1}, {4})},
                    shape({1, 1}));
  CHECK(e.to_f64() == std::vector<double>{2});
}

TEST_CASE("interp: fused residual norms normalise x + residual [+ bias] over the last axis") {
  Buffer ones = f64({4}, {1, 1, 1, 1}), zeros = f64({4}, {0, 0, 0, 0});
  Buffer x = f64({1, 4}, {0, 1, 2, 3}), res = f64({4}, {1, 1, 1, 1});
  Buffer bias = f64({4}, {0, 0, 0, 4});
  // x + res = [1,2,3,4]: layer norm = [-1.5,-0.5,0.5,1.5] / sqrt(1.25) (eps 0)
  double r = 1 / std::sqrt(1.25);
  Buffer ln = run_op(Op(OpKind::FusedResidualLN, FusedResidualNormAttrs{false, 0.0f}),
                     {x, res, ones, zeros}, shape({1, 4}));
  check_close(ln.to_f64(), {-1.5 * r, -0.5 * r, 0.5 * r, 1.5 * r}, kTight);
  // + bias = [1,2,3,8]: mean 3.5, deviations (-2.5,-1.5,-0.5,4.5), var (6.25+2.25+0.25+20.25)/4
  // = 7.25
  double q = 1 / std::sqrt(7.25);
  Buffer lnb = run_op(Op(OpKind::FusedResidualLN, FusedResidualNormAttrs{true, 0.0f}),
                      {x, res, bias, ones, zeros}, shape({1, 4}));
  check_close(lnb.to_f64(), {-2.5 * q, -1.5 * q, -0.5 * q, 4.5 * q}, kTight);
  // rms: [1,2,3,4] -> mean square 7.5 + eps 0.5 = 8; [1,2,3,8] -> (1+4+9+64)/4 = 19.5 + 0.5 = 20
  double s8 = std::sqrt(8.0), s20 = std::sqrt(20.0);
  Buffer rms = run_op(Op(OpKind::FusedResidualRmsNorm, FusedResidualNormAttrs{false, 0.5f}),
                      {x, res, ones, zeros}, shape({1, 4}));
  check_close(rms.to_f64(), {1 / s8, 2 / s8, 3 / s8, 4 / s8}, kTight);
  Buffer rmsb =
      run_op(Op(OpKind::FusedResidualRmsNorm, FusedResidualNormAttrs{true, 0.5f}),
             {x, res, bias, f64({4}, {2, 2, 2, 2}), f64({4}, {1, 1, 1, 1})}, shape({1, 4}));
  check_close(rmsb.to_f64(), {2 / s20 + 1, 4 / s20 + 1, 6 / s20 + 1, 16 / s20 + 1}, kTight);
}

TEST_CASE("interp: fused residual layer norm keeps the sum in double before normalising") {
  // f32 x = [1e8, 1e8], residual [1, -1]: the exact sums 1e8 +- 1 have mean 1e8 and var 1, so
  // y = [1, -1]. Rounding the sum to f32 first would give [1e8, 1e8] and y = [0, 0].
  Buffer y = run_op(Op(OpKind::FusedResidualLN, FusedResidualNormAttrs{false, 0.0f}),
                    {f32({2}, {1e8f, 1e8f}), f32({2}, {1, -1}), f32({2}, {1, 1}), f32({2}, {0, 0})},
                    shape({2}, DType::F32));
  CHECK(y.to_f64() == std::vector<double>{1, -1});
}

TEST_CASE("interp: bad per-feature operands and integer dtypes of norms are reported") {
  Buffer x = f64({2, 4}, std::vector<double>(8, 1.0));
  test::check_error(
      [&] {
        run_op(Op(OpKind::FusedResidualLN, FusedResidualNormAttrs{false, 1e-5f}),
               {x, x, f64({3}, {1, 1, 1}), f64({4}, {0, 0, 0, 0})}, shape({2, 4}));
      },
      ErrorKind::Verify, "fused_residual_ln: gamma must have 4 elements");
  test::check_error(
      [&] {
        run_op(Op(OpKind::FusedResidualRmsNorm, FusedResidualNormAttrs{true, 1e-5f}),
               {x, x, f64({3}, {1, 1, 1}), f64({4}, {1, 1, 1, 1}), f64({4}, {0, 0, 0, 0})},
               shape({2, 4}));
      },
      ErrorKind::Verify, "fused_residual_rms_norm: shapes do not broadcast: f64[2,4] vs f64[3]");
  test::check_error(
      [] {
        Buffer xi = ints(DType::I32, {4}, {1, 2, 3, 4});
        run_op(Op(OpKind::LayerNorm, NormAttrs{}), {xi, xi, xi}, shape({4}, DType::I32));
      },
      ErrorKind::Verify, "layer_norm: needs floating-point operands");
  test::check_error(
      [] {
        eval_direct(Op(OpKind::BatchNormInference, EpsAttrs{}),
                    {f64({1, 2}, {1, 2}), f64({2}, {1, 1}), f64({2}, {0, 0}), f64({1}, {0}),
                     f64({2}, {1, 1})},
                    shape({1, 2}));
      },
      ErrorKind::Shape, "running mean");
}

// ---------------------------------------------------------------------------- attention

namespace {

struct AttnCase {
  int64_t batch = 2, sq = 3, sk = 5, heads = 2, dim = 3;
  std::vector<double> q, k, v;
  AttnCase() {
    q = pseudo_random(std::size_t(batch * sq * heads * dim), 1);
    k = pseudo_random(std::size_t(batch * sk * heads * dim), 2);
    v = pseudo_random(std::size_t(batch * sk * heads * dim), 3);
  }
  Buffer qb() const { return f64({batch, sq, heads * dim}, q); }
  Buffer kb() const { return f64({batch, sk, heads * dim}, k); }
  Buffer vb() const { return f64({batch, sk, heads * dim}, v); }
  Shape out() const { return shape({batch, sq, heads * dim}); }
};

/// Attention by the definition, per output element, in long double: weights exp(s) / sum exp(s)
/// over the keys `keep(b, h, i, j)` admits (no max subtraction: the scores here are small).
std::vector<double>
attention_ref(const AttnCase& c, double scale, double cap,
              const std::function<bool(int64_t, int64_t, int64_t)>& keep,
              const std::function<double(int64_t, int64_t, int64_t, int64_t)>& bias) {
  int64_t w = c.heads * c.dim;
  std::vector<double> out;
  for (int64_t b = 0; b < c.batch; ++b)
    for (int64_t i = 0; i < c.sq; ++i)
      for (int64_t h = 0; h < c.heads; ++h)
        for (int64_t d = 0; d < c.dim; ++d) {
          long double num = 0, den = 0;
          for (int64_t j = 0; j < c.sk; ++j) {
            if (!keep(b, i, j)) continue;
            long double s = 0;
            for (int64_t e = 0; e < c.dim; ++e)
              s += (long double)c.q[std::size_t(b * c.sq * w + i * w + h * c.dim + e)] *
                   c.k[std::size_t(b * c.sk * w + j * w + h * c.dim + e)];
            s *= scale;
            if (cap > 0) s = cap * std::tanh(s / cap);
            s += bias(b, h, i, j);
            long double e = std::exp(s);
            num += e * c.v[std::size_t(b * c.sk * w + j * w + h * c.dim + d)];
            den += e;
          }
          out.push_back(den == 0 ? 0.0 : double(num / den));
        }
  return out;
}

auto no_bias = [](int64_t, int64_t, int64_t, int64_t) { return 0.0; };

AttentionAttrs attn(int64_t heads, int64_t dim, MaskType mask, int64_t window = 0) {
  AttentionAttrs a;
  a.num_heads = heads;
  a.head_dim = dim;
  a.mask = mask;
  a.window = window;
  return a;
}

} // namespace

TEST_CASE("interp: attention of one query over two keys matches the hand-computed softmax") {
  // D = 1, scale 1/sqrt(1) = 1: scores q*k = [0, ln 3] -> weights [1/4, 3/4];
  // output = 4/4 + 8*3/4 = 7.
  Buffer r =
      run_op(Op(OpKind::Attention, attn(1, 1, MaskType::None)),
             {f64({1, 1, 1}, {1}), f64({1, 2, 1}, {0, std::log(3.0)}), f64({1, 2, 1}, {4, 8})},
             shape({1, 1, 1}));
  check_close(r.to_f64(), {7}, kTight);
  // D = 4, default scale 1/sqrt(4) = 0.5: q.k1 = 2 ln 3 -> score ln 3; same weights.
  double l = std::log(3.0) / 2;
  Buffer s = run_op(Op(OpKind::Attention, attn(1, 4, MaskType::None)),
                    {f64({1, 1, 4}, {1, 1, 1, 1}), f64({1, 2, 4}, {0, 0, 0, 0, l, l, l, l}),
                     f64({1, 2, 4}, {4, 0, 1, -4, 8, 4, 1, 0})},
                    shape({1, 1, 4}));
  // [4,0,1,-4]/4 + [8,4,1,0]*3/4 = [1+6, 0+3, 0.25+0.75, -1+0]
  check_close(s.to_f64(), {7, 3, 1, -1}, kTight);
}

TEST_CASE("interp: attention score_scale replaces 1/sqrt(head_dim)") {
  // q = 2, k = [0, ln 3], score_scale 0.5 -> scores [0, ln 3] -> 7 as above. The default scale
  // (1) would give scores [0, 2 ln 3] -> weights [1/10, 9/10] -> 0.4 + 7.2 = 7.6.
  AttentionAttrs a = attn(1, 1, MaskType::None);
  a.score_scale = 0.5f;
  Buffer q = f64({1, 1, 1}, {2}), k = f64({1, 2, 1}, {0, std::log(3.0)}),
         v = f64({1, 2, 1}, {4, 8});
  check_close(run_op(Op(OpKind::Attention, a), {q, k, v}, shape({1, 1, 1})).to_f64(), {7}, kTight);
  check_close(run_op(Op(OpKind::Attention, attn(1, 1, MaskType::None)), {q, k, v}, shape({1, 1, 1}))
                  .to_f64(),
              {7.6}, kTight);
}

TEST_CASE("interp: attention softcap squashes scores as c * tanh(s / c) before the bias") {
  // c = 2; k1 = 2 atanh(ln3 / 2) so that 2 tanh(k1 / 2) = ln 3 -> weights [1/4, 3/4] -> 7.
  double k1 = 2 * std::atanh(std::log(3.0) / 2);
  AttentionAttrs a = attn(1, 1, MaskType::None);
  a.attn_logit_softcap = 2.0f;
  Buffer r = run_op(Op(OpKind::Attention, a),
                    {f64({1, 1, 1}, {1}), f64({1, 2, 1}, {0, k1}), f64({1, 2, 1}, {4, 8})},
                    shape({1, 1, 1}));
  check_close(r.to_f64(), {7}, kTight);
  // Bias after softcap: c = 1, scores [0, 100] -> capped [0, tanh 100 = 1]; bias [0, ln3 - 1]
  // -> [0, ln 3] -> 7. (Bias before the cap would give tanh(100 + ...) = 1 -> weights
  // [1/(1+e), e/(1+e)].)
  AttentionAttrs b = attn(1, 1, MaskType::Bias);
  b.attn_logit_softcap = 1.0f;
  Buffer s = run_op(Op(OpKind::Attention, b),
                    {f64({1, 1, 1}, {1}), f64({1, 2, 1}, {0, 100}), f64({1, 2, 1}, {4, 8}),
                     f64({1, 1, 1, 2}, {0, std::log(3.0) - 1})},
                    shape({1, 1, 1}));
  check_close(s.to_f64(), {7}, kTight);
}

TEST_CASE("interp: causal attention aligns queries to the end of longer keys") {
  // q = 0 makes every visible key weigh the same: the output is the mean of visible values.
  // Sq = 2, Sk = 3: query 0 sees keys j <= 0 + 1, query 1 sees all. v = [1, 2, 4]:
  // (1 + 2) / 2 = 1.5; (1 + 2 + 4) / 3 = 7/3.
  Buffer r = run_op(Op(OpKind::Attention, attn(1, 1, MaskType::Causal)),
                    {f64({1, 2, 1}, {0, 0}), f64({1, 3, 1}, {1, 2, 3}), f64({1, 3, 1}, {1, 2, 4})},
                    shape({1, 2, 1}));
  check_close(r.to_f64(), {1.5, 7.0 / 3}, kTight);
  // Sq = Sk = 2: query 0 sees only key 0 -> v0 = 5 regardless of scores.
  Buffer s = run_op(Op(OpKind::Attention, attn(1, 1, MaskType::Causal)),
                    {f64({1, 2, 1}, {3, 0}), f64({1, 2, 1}, {1, 2}), f64({1, 2, 1}, {5, 7})},
                    shape({1, 2, 1}));
  check_close(s.to_f64(), {5, 6}, kTight);
}

TEST_CASE("interp: sliding-window attention sees at most `window` keys ending at its position") {
  // Sq = Sk = 4, window 2, q = 0: query i averages keys {i-1, i} (clipped at 0).
  // v = [1, 2, 4, 8] -> [1, 1.5, 3, 6]
  Buffer zeros4 = f64({1, 4, 1}, {0, 0, 0, 0}), v = f64({1, 4, 1}, {1, 2, 4, 8});
  Buffer r = run_op(Op(OpKind::Attention, attn(1, 1, MaskType::SlidingWindow, 2)),
                    {zeros4, f64({1, 4, 1}, {1, 2, 3, 4}), v}, shape({1, 4, 1}));
  check_close(r.to_f64(), {1, 1.5, 3, 6}, kTight);
  // Decode: Sq = 1, Sk = 4, window 2: the query sits at position 3 and sees keys {2, 3} -> 6.
  Buffer s = run_op(Op(OpKind::Attention, attn(1, 1, MaskType::SlidingWindow, 2)),
                    {f64({1, 1, 1}, {0}), f64({1, 4, 1}, {1, 2, 3, 4}), v}, shape({1, 1, 1}));
  check_close(s.to_f64(), {6}, kTight);
}

TEST_CASE("interp: custom-mask attention ignores keys whose mask is below 0.5") {
  // Batch 0 pads key 2 (mask 0); batch 1 masks key 1 with 0.49 and keeps key 2 with exactly 0.5.
  // q = 0: batch 0 -> (1 + 2) / 2 = 1.5; batch 1 -> (10 + 40) / 2 = 25.
  Buffer r = run_op(Op(OpKind::Attention, attn(1, 1, MaskType::Custom)),
                    {f64({2, 1, 1}, {0, 0}), f64({2, 3, 1}, {1, 2, 3, 4, 5, 6}),
                     f64({2, 3, 1}, {1, 2, 4, 10, 20, 40}), f64({2, 3}, {1, 1, 0, 1, 0.49, 0.5})},
                    shape({2, 1, 1}));
  check_close(r.to_f64(), {1.5, 25}, kTight);
  // A bool mask works too.
  Buffer m = Buffer::from_i64(Shape({2, 3}, DType::Bool), std::vector<int64_t>{1, 1, 0, 1, 0, 1});
  Buffer s = run_op(Op(OpKind::Attention, attn(1, 1, MaskType::Custom)),
                    {f64({2, 1, 1}, {0, 0}), f64({2, 3, 1}, {1, 2, 3, 4, 5, 6}),
                     f64({2, 3, 1}, {1, 2, 4, 10, 20, 40}), m},
                    shape({2, 1, 1}));
  check_close(s.to_f64(), {1.5, 25}, kTight);
}

TEST_CASE("interp: bias attention adds the [B, H, Sq, Sk] tensor to the scores per head") {
  // H = 2, D = 1, q = 0. Head 0 bias [0, ln 3] -> weights [1/4, 3/4]; head 1 bias [ln 3, 0] ->
  // [3/4, 1/4]. v columns: head 0 (4, 8) -> 1 + 6 = 7; head 1 (4, 12) -> 3 + 3 = 6.
  double l3 = std::log(3.0);
  Buffer r = run_op(Op(OpKind::Attention, attn(2, 1, MaskType::Bias)),
                    {f64({1, 1, 2}, {0, 0}), f64({1, 2, 2}, {1, 2, 3, 4}),
                     f64({1, 2, 2}, {4, 4, 8, 12}), f64({1, 2, 1, 2}, {0, l3, l3, 0})},
                    shape({1, 1, 2}));
  check_close(r.to_f64(), {7, 6}, kTight);
}

TEST_CASE("interp: a fully masked query row outputs zeros") {
  // Causal with Sk = 1 < Sq = 3: query i sees key 0 only when 0 <= i + (1 - 3), i.e. i = 2.
  Buffer r =
      run_op(Op(OpKind::Attention, attn(1, 2, MaskType::Causal)),
             {f64({1, 3, 2}, {1, 1, 1, 1, 1, 1}), f64({1, 1, 2}, {1, 1}), f64({1, 1, 2}, {3, -4})},
             shape({1, 3, 2}));
  CHECK(r.to_f64() == std::vector<double>{0, 0, 0, 0, 3, -4});
  // A custom mask of all zeros.
  Buffer s = run_op(
      Op(OpKind::Attention, attn(1, 1, MaskType::Custom)),
      {f64({1, 1, 1}, {1}), f64({1, 2, 1}, {1, 2}), f64({1, 2, 1}, {5, 6}), f64({1, 2}, {0, 0})},
      shape({1, 1, 1}));
  CHECK(s.to_f64() == std::vector<double>{0});
  // A bias of -inf on every key counts as fully masked too (zeros, not NaN).
  double inf = std::numeric_limits<double>::infinity();
  Buffer t = run_op(Op(OpKind::Attention, attn(1, 1, MaskType::Bias)),
                    {f64({1, 1, 1}, {1}), f64({1, 2, 1}, {1, 2}), f64({1, 2, 1}, {5, 6}),
                     f64({1, 1, 1, 2}, {-inf, -inf})},
                    shape({1, 1, 1}));
  CHECK(t.to_f64() == std::vector<double>{0});
}

TEST_CASE("interp: attention with every mask kind matches a per-element reference") {
  AttnCase c; // B = 2, Sq = 3, Sk = 5, H = 2, D = 3 (keys longer than queries)
  double scale = 1 / std::sqrt(3.0);
  int64_t shift = c.sk - c.sq;
  SUBCASE("none") {
    Buffer r = run_op(Op(OpKind::Attention, attn(2, 3, MaskType::None)), {c.qb(), c.kb(), c.vb()},
                      c.out());
    auto all = [](int64_t, int64_t, int64_t) { return true; };
    check_close(r.to_f64(), attention_ref(c, scale, 0, all, no_bias), kTight);
  }
  SUBCASE("causal") {
    Buffer r = run_op(Op(OpKind::Attention, attn(2, 3, MaskType::Causal)), {c.qb(), c.kb(), c.vb()},
                      c.out());
    auto keep = [&](int64_t, int64_t i, int64_t j) { return i + shift - j >= 0; };
    check_close(r.to_f64(), attention_ref(c, scale, 0, keep, no_bias), kTight);
  }
  SUBCASE("sliding window") {
    Buffer r = run_op(Op(OpKind::Attention, attn(2, 3, MaskType::SlidingWindow, 2)),
                      {c.qb(), c.kb(), c.vb()}, c.out());
    auto keep = [&](int64_t, int64_t i, int64_t j) {
      int64_t back = i + shift - j; // how far key j lies behind the query's position
      return back >= 0 && back < 2;
    };
    check_close(r.to_f64(), attention_ref(c, scale, 0, keep, no_bias), kTight);
  }
  SUBCASE("custom with padded keys and a softcap") {
    std::vector<double> mask = {1, 1, 1, 0, 0, 1, 0, 1, 1, 1};
    AttentionAttrs a = attn(2, 3, MaskType::Custom);
    a.attn_logit_softcap = 0.3f;
    Buffer r =
        run_op(Op(OpKind::Attention, a), {c.qb(), c.kb(), c.vb(), f64({2, 5}, mask)}, c.out());
    auto keep = [&](int64_t b, int64_t, int64_t j) { return mask[std::size_t(b * 5 + j)] == 1; };
    check_close(r.to_f64(), attention_ref(c, scale, double(0.3f), keep, no_bias), kTight);
  }
  SUBCASE("bias with a score_scale") {
    std::vector<double> bias = pseudo_random(2 * 2 * 3 * 5, 4);
    AttentionAttrs a = attn(2, 3, MaskType::Bias);
    a.score_scale = 0.75f;
    Buffer r = run_op(Op(OpKind::Attention, a), {c.qb(), c.kb(), c.vb(), f64({2, 2, 3, 5}, bias)},
                      c.out());
    auto all = [](int64_t, int64_t, int64_t) { return true; };
    auto add = [&](int64_t b, int64_t h, int64_t i, int64_t j) {
      return bias[std::size_t(((b * 2 + h) * 3 + i) * 5 + j)];
    };
    check_close(r.to_f64(), attention_ref(c, 0.75, 0, all, add), kTight);
  }
}

TEST_CASE("interp: mismatched attention batches, masks and a zero softcap are reported") {
  Buffer q = f64({2, 1, 1}, {0, 0}), k = f64({1, 2, 1}, {0, 0});
  test::check_error(
      [&] { run_op(Op(OpKind::Attention, attn(1, 1, MaskType::None)), {q, k, k}, q.shape()); },
      ErrorKind::Verify, "attention: q and k have different batch sizes");
  Buffer k2 = f64({2, 2, 1}, {0, 0, 0, 0});
  test::check_error(
      [&] {
        run_op(Op(OpKind::Attention, attn(1, 1, MaskType::Custom)),
               {q, k2, k2, f64({2, 3}, std::vector<double>(6))}, q.shape());
      },
      ErrorKind::Verify, "attention: shapes do not broadcast: f64[2,2] vs f64[2,3]");
  test::check_error(
      [&] {
        run_op(Op(OpKind::Attention, attn(1, 1, MaskType::Bias)),
               {q, k2, k2, f64({2, 2}, std::vector<double>(4))}, q.shape());
      },
      ErrorKind::Verify, "attention: the bias must broadcast to f64[2,1,1,2]");
  AttentionAttrs a = attn(1, 1, MaskType::None);
  a.attn_logit_softcap = 0.0f;
  test::check_error([&] { run_op(Op(OpKind::Attention, a), {q, k2, k2}, q.shape()); },
                    ErrorKind::Value, "attn_logit_softcap");
}

// ---------------------------------------------------------------------------------- rope

TEST_CASE("interp: rope pairs halves in NeoX style and neighbours in GptJ style") {
  // One head, D = 4, S = 2. Position 0: pair 0 (cos 0, sin 1), pair 1 (cos 0.6, sin 0.8);
  // position 1: identity. (a, b) -> (a cos - b sin, b cos + a sin).
  Buffer x = f64({2, 4}, {1, 2, 3, 4, 5, 6, 7, 8});
  Buffer cos = f64({2, 2}, {0, 0.6, 1, 1}), sin = f64({2, 2}, {1, 0.8, 0, 0});
  // NeoX pairs (x0, x2) = (1, 3) -> (0 - 3, 0 + 1) = (-3, 1);
  //           (x1, x3) = (2, 4) -> (1.2 - 3.2, 2.4 + 1.6) = (-2, 4)
  Buffer neox =
      run_op(Op(OpKind::Rope, RopeAttrs{4, 4, RopeStyle::NeoX}), {x, cos, sin}, shape({2, 4}));
  check_close(neox.to_f64(), {-3, -2, 1, 4, 5, 6, 7, 8}, kTight);
  // GptJ pairs (x0, x1) = (1, 2) -> (-2, 1); (x2, x3) = (3, 4) -> (1.8 - 3.2, 2.4 + 2.4)
  Buffer gptj =
      run_op(Op(OpKind::Rope, RopeAttrs{4, 4, RopeStyle::GptJ}), {x, cos, sin}, shape({2, 4}));
  check_close(gptj.to_f64(), {-2, 1, -1.4, 4.8, 5, 6, 7, 8}, kTight);
  // n_rot = 0 means head_dim.
  Buffer whole =
      run_op(Op(OpKind::Rope, RopeAttrs{4, 0, RopeStyle::NeoX}), {x, cos, sin}, shape({2, 4}));
  check_close(whole.to_f64(), neox.to_f64(), 0);
}

TEST_CASE("interp: rope with n_rot below head_dim copies the remaining dims of each head") {
  // D = 6, n_rot = 4, two heads, S = 1; cos [0, 0.6], sin [1, 0.8].
  Buffer x = f64({1, 12}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12});
  Buffer cos = f64({1, 2}, {0, 0.6}), sin = f64({1, 2}, {1, 0.8});
  // NeoX head 1: (7, 9) -> (-9, 7); (8, 10) -> (4.8 - 8, 6 + 6.4) = (-3.2, 12.4)
  Buffer neox =
      run_op(Op(OpKind::Rope, RopeAttrs{6, 4, RopeStyle::NeoX}), {x, cos, sin}, shape({1, 12}));
  check_close(neox.to_f64(), {-3, -2, 1, 4, 5, 6, -9, -3.2, 7, 12.4, 11, 12}, kTight);
  // GptJ head 1: (7, 8) -> (-8, 7); (9, 10) -> (5.4 - 8, 6 + 7.2) = (-2.6, 13.2)
  Buffer gptj =
      run_op(Op(OpKind::Rope, RopeAttrs{6, 4, RopeStyle::GptJ}), {x, cos, sin}, shape({1, 12}));
  check_close(gptj.to_f64(), {-2, 1, -1.4, 4.8, 5, 6, -8, 7, -2.6, 13.2, 11, 12}, kTight);
}

TEST_CASE("interp: rope over a batch matches a per-element reference for both styles") {
  // x [2, 3, 2*6]: B = 2, S = 3, H = 2, D = 6, n_rot = 4; cos/sin [3, 2].
  std::vector<double> xv = pseudo_random(72, 21), cv = pseudo_random(6, 22),
                      sv = pseudo_random(6, 23);
  for (RopeStyle style : {RopeStyle::NeoX, RopeStyle::GptJ}) {
    Buffer r = run_op(Op(OpKind::Rope, RopeAttrs{6, 4, style}),
                      {f64({2, 3, 12}, xv), f64({3, 2}, cv), f64({3, 2}, sv)}, shape({2, 3, 12}));
    std::vector<double> want;
    for (int b = 0; b < 2; ++b)
      for (int s = 0; s < 3; ++s)
        for (int h = 0; h < 2; ++h)
          for (int d = 0; d < 6; ++d) {
            auto at = [&](int e) { return xv[std::size_t(b * 36 + s * 12 + h * 6 + e)]; };
            double y = at(d);
            if (d < 4 && style == RopeStyle::NeoX) {
              int p = d % 2; // partner d + 2 or d - 2
              double c = cv[std::size_t(s * 2 + p)], sn = sv[std::size_t(s * 2 + p)];
              y = d < 2 ? at(d) * c - at(d + 2) * sn : at(d) * c + at(d - 2) * sn;
            } else if (d < 4) {
              int p = d / 2; // partner d + 1 or d - 1
              double c = cv[std::size_t(s * 2 + p)], sn = sv[std::size_t(s * 2 + p)];
              y = d % 2 == 0 ? at(d) * c - at(d + 1) * sn : at(d) * c + at(d - 1) * sn;
            }
            want.push_back(y);
          }
    check_close(r.to_f64(), want, kTight);
  }
}

TEST_CASE("interp: rope reports cos and sin of the wrong size") {
  test::check_error(
      [] {
        run_op(
            Op(OpKind::Rope, RopeAttrs{4, 4, RopeStyle::NeoX}),
            {f64({2, 4}, std::vector<double>(8)), f64({2, 1}, {1, 1}), f64({2, 2}, {0, 0, 0, 0})},
            shape({2, 4}));
      },
      ErrorKind::Verify, "rope: cos ([seq, n_rot/2]) must have 4 elements, got f64[2,1]");
}

// ---------------------------------------------------------------------------- axial rope

TEST_CASE("interp: axial_rope2d rotates pairs by x then y grid positions") {
  // end_x = end_y = 2, D = 8, theta 100: freqs 1/100^(0/8) = 1 and 1/100^(4/8) = 0.1.
  // Position p (mod 4) sits at (tx, ty) = (p % 2, p / 2). Pairs 0, 1 rotate by tx * {1, 0.1},
  // pairs 2, 3 by ty * {1, 0.1}. Input pairs (1, 0) -> (cos a, sin a); (0, 1) -> (-sin a, cos a).
  // S = 8 = 2 repeats of the grid; head 1 holds twice head 0.
  std::vector<double> head = {1, 0, 0, 1, 1, 0, 0, 1}, xv;
  for (int s = 0; s < 8; ++s) {
    for (double e : head) xv.push_back(e);
    for (double e : head) xv.push_back(2 * e);
  }
  AxialRopeAttrs a;
  a.end_x = 2;
  a.end_y = 2;
  a.head_dim = 8;
  a.num_heads = 2;
  a.theta = 100.0f;
  a.repeat_factor = 2;
  Buffer r = run_op(Op(OpKind::AxialRope2d, a), {f64({1, 8, 16}, xv)}, shape({1, 8, 16}));
  std::vector<double> want;
  for (int s = 0; s < 8; ++s) {
    double tx = (s % 4) % 2, ty = (s % 4) / 2;
    std::vector<double> rot = {std::cos(tx), std::sin(tx), -std::sin(0.1 * tx), std::cos(0.1 * tx),
                               std::cos(ty), std::sin(ty), -std::sin(0.1 * ty), std::cos(0.1 * ty)};
    for (double e : rot) want.push_back(e);
    for (double e : rot) want.push_back(2 * e);
  }
  check_close(r.to_f64(), want, kTight);
}

TEST_CASE("interp: axial_rope2d reports a sequence that is not a multiple of the grid") {
  AxialRopeAttrs a;
  a.end_x = 2;
  a.end_y = 2;
  a.head_dim = 4;
  test::check_error(
      [&] {
        eval_direct(Op(OpKind::AxialRope2d, a), {f64({1, 6, 4}, std::vector<double>(24))},
                    shape({1, 6, 4}));
      },
      ErrorKind::Shape, "axial_rope2d: sequence length 6");
  a.head_dim = 6;
  test::check_error(
      [&] {
        eval_direct(Op(OpKind::AxialRope2d, a), {f64({1, 4, 6}, std::vector<double>(24))},
                    shape({1, 4, 6}));
      },
      ErrorKind::Shape, "multiple of 4");
}
