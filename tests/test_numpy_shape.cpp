// tests/test_numpy_shape.cpp -- numpy's and PyTorch's shape and movement functions
// (src/frontend/numpy_*.cpp) against numpy/torch references (tests/fixtures/numpy_shape/,
// written by tests/fixtures/make_numpy_shape.py with the parameters repeated here) on both
// backends: axes, roll, tile, repeat, triangles, diagonals, meshgrid, splits, one_hot, products,
// einsum, rank changes, flips, cumulative ops, advanced indexing, gradients (torch autograd in
// f64) and errors. Floats compare within rtol 1e-5 / atol 1e-6 of references computed in f64 and
// rounded once to f32; integers and bools compare exactly.
#include "support/backends.hpp"
#include "support/check_error.hpp"
#include "support/compare.hpp"
#include "support/pending_graph.hpp"

#include <rlx/rlx.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <string>
#include <vector>

namespace {

using rlx::Dims;
using rlx::DType;
using rlx::ErrorKind;
using rlx::Tensor;
using rlx::ir::OpKind;
using rlx::test::check_error;
using rlx::test::on_both_backends;

rlx::test::Fixture case_of(const std::string& name) { return {"numpy_shape", name}; }

/// got has want's sizes, dtype and values (floats within rtol/atol, NaN where want has NaN;
/// integers and bools exactly).
void expect_eq(const Tensor& got, const Tensor& want, const std::string& what, double rtol = 1e-5,
               double atol = 1e-6) {
  rlx::test::check_close(got, want, {rtol, atol}, what);
}

/// The pieces against want_<prefix>_0, _1, ...
void expect_pieces(const std::vector<Tensor>& got, const rlx::test::Fixture& fx,
                   const std::string& prefix, std::size_t count) {
  REQUIRE(got.size() == count);
  for (std::size_t i = 0; i < count; ++i)
    expect_eq(got[i], fx("want_" + prefix + "_" + std::to_string(i)),
              prefix + " piece " + std::to_string(i));
}

using rlx::test::pending_ops;

/// The message says where the caller wrote the call: `line` is taken on the statement's first
/// line, and clang-format may put the call on one of the next two.
void expect_line(const std::string& msg, int line) {
  bool found = false;
  for (int l = line; l <= line + 2; ++l)
    found |= msg.find("test_numpy_shape.cpp:" + std::to_string(l) + ")") != std::string::npos;
  CHECK_MESSAGE(found, "message without the caller's line " << line << ": " << msg);
}

} // namespace

TEST_CASE("T, mT, swapaxes and moveaxis match numpy") {
  auto fx = case_of("axes");
  on_both_backends([&] {
    Tensor x = fx("x");
    expect_eq(x.T(), fx("want_T"), "x.T");
    expect_eq(x.mT(), fx("want_mT"), "x.mT");
    expect_eq(rlx::swapaxes(x, 0, 2), fx("want_swapaxes_0_2"), "swapaxes(x, 0, 2)");
    expect_eq(rlx::moveaxis(x, 0, -1), fx("want_moveaxis_0_m1"), "moveaxis(x, 0, -1)");
    expect_eq(rlx::moveaxis(x, Dims{0, 1}, Dims{-1, -3}), fx("want_moveaxis_list"),
              "moveaxis(x, [0, 1], [-1, -3])");
  });
}

TEST_CASE("roll matches numpy flattened, along one axis and along several") {
  auto fx = case_of("roll");
  on_both_backends([&] {
    Tensor x = fx("x");
    expect_eq(rlx::roll(x, 7), fx("want_flat_7"), "roll(x, 7)");
    expect_eq(rlx::roll(x, -2, 1), fx("want_axis1_m2"), "roll(x, -2, axis=1)");
    expect_eq(rlx::roll(x, Dims{1, 3}, Dims{0, 1}), fx("want_two"), "roll(x, (1, 3), (0, 1))");
    expect_eq(rlx::roll(x, Dims{2}, Dims{0, 1}), fx("want_same_shift"), "roll(x, 2, (0, 1))");
  });
}

TEST_CASE("tile matches numpy for short, equal and long reps") {
  auto fx = case_of("tile");
  on_both_backends([&] {
    Tensor x = fx("x"), v = fx("v");
    expect_eq(rlx::tile(x, {2}), fx("want_2"), "tile(x, 2)");
    expect_eq(rlx::tile(x, {2, 1, 2}), fx("want_2_1_2"), "tile(x, (2, 1, 2))");
    expect_eq(rlx::tile(x, {3, 1}), fx("want_3_1"), "tile(x, (3, 1))");
    expect_eq(rlx::tile(v, {2, 2}), fx("want_v_2_2"), "tile(v, (2, 2))");
  });
}

TEST_CASE("repeat and repeat_interleave match numpy and torch") {
  auto fx = case_of("repeat");
  on_both_backends([&] {
    Tensor x = fx("x");
    expect_eq(rlx::repeat(x, 2), fx("want_flat_2"), "repeat(x, 2)");
    expect_eq(rlx::repeat(x, 3, 0), fx("want_axis0_3"), "repeat(x, 3, axis=0)");
    expect_eq(rlx::repeat(x, Dims{1, 0, 2}, 1), fx("want_list_axis1"),
              "repeat(x, [1, 0, 2], axis=1)");
    expect_eq(rlx::repeat_interleave(x, 2, 1), fx("want_interleave_2_dim1"),
              "repeat_interleave(x, 2, dim=1)");
    expect_eq(rlx::repeat_interleave(x, Dims{2, 1}, 0), fx("want_interleave_list_dim0"),
              "repeat_interleave(x, [2, 1], dim=0)");
  });
}

TEST_CASE("tril and triu match numpy, batched over leading axes") {
  auto fx = case_of("triangles");
  on_both_backends([&] {
    Tensor x = fx("x");
    expect_eq(rlx::tril(x), fx("want_tril"), "tril(x)");
    expect_eq(rlx::tril(x, -1), fx("want_tril_m1"), "tril(x, -1)");
    expect_eq(rlx::triu(x), fx("want_triu"), "triu(x)");
    expect_eq(rlx::triu(x, 2), fx("want_triu_2"), "triu(x, 2)");
    expect_eq(rlx::tril(fx("xi")), fx("want_tril_int"), "tril(int32)");
  });
}

TEST_CASE("diag, diagonal and trace match numpy for every offset sign") {
  auto fx = case_of("diagonals");
  on_both_backends([&] {
    Tensor v = fx("v"), m = fx("m"), x = fx("x");
    expect_eq(rlx::diag(v), fx("want_diag_v"), "diag(v)");
    expect_eq(rlx::diag(v, 1), fx("want_diag_v_1"), "diag(v, 1)");
    expect_eq(rlx::diag(v, -2), fx("want_diag_v_m2"), "diag(v, -2)");
    expect_eq(rlx::diag(m), fx("want_diag_m"), "diag(m)");
    expect_eq(rlx::diag(m, 2), fx("want_diag_m_2"), "diag(m, 2)");
    expect_eq(rlx::diag(m, -1), fx("want_diag_m_m1"), "diag(m, -1)");
    expect_eq(rlx::diagonal(x), fx("want_diagonal_x"), "diagonal(x)");
    expect_eq(rlx::diagonal(x, 1, 1, 2), fx("want_diagonal_x_1_1_2"), "diagonal(x, 1, 1, 2)");
    expect_eq(rlx::diagonal(x, -1, 2, 0), fx("want_diagonal_x_m1_2_0"), "diagonal(x, -1, 2, 0)");
    expect_eq(rlx::trace(m), fx("want_trace_m"), "trace(m)");
    expect_eq(rlx::trace(x, 1, 1, 2), fx("want_trace_x_1_1_2"), "trace(x, 1, 1, 2)");
  });
}

TEST_CASE("meshgrid matches numpy with xy and ij indexing") {
  auto fx = case_of("meshgrid");
  on_both_backends([&] {
    Tensor a = fx("a"), b = fx("b"), c = fx("c");
    expect_pieces(rlx::meshgrid({a, b}), fx, "xy", 2);
    expect_pieces(rlx::meshgrid({a, b}, rlx::Indexing::Ij), fx, "ij", 2);
    expect_pieces(rlx::meshgrid({a, b, c}), fx, "xy3", 3);
  });
}

TEST_CASE("chunk, array_split, split and unbind give torch's and numpy's pieces") {
  auto fx = case_of("splits");
  on_both_backends([&] {
    Tensor x = fx("x");
    expect_pieces(rlx::chunk(x, 3), fx, "chunk3", 3);
    expect_pieces(rlx::chunk(x, 4, 1), fx, "chunk4_dim1", 4);
    expect_pieces(rlx::chunk(rlx::narrow(x, 0, 0, 6), 4), fx, "chunk4_of6", 3);
    auto empty = rlx::chunk(rlx::narrow(x, 0, 0, 0), 3);
    CHECK(int64_t(empty.size()) == fx("want_chunk3_of_empty_count").item<int64_t>());
    for (const Tensor& p : empty) CHECK(p.sizes() == Dims{0, 4});
    expect_pieces(rlx::array_split(x, 3), fx, "array_split3", 3);
    expect_pieces(rlx::split(rlx::narrow(x, 0, 0, 6), 3), fx, "split3", 3);
    expect_pieces(rlx::unbind(x, 1), fx, "unbind1", 4);
  });
}

TEST_CASE("one_hot matches torch, i64 by default or in a given dtype") {
  auto fx = case_of("one_hot");
  on_both_backends([&] {
    Tensor idx = fx("idx");
    expect_eq(rlx::one_hot(idx, 5), fx("want_one_hot"), "one_hot(idx, 5)");
    expect_eq(rlx::one_hot(idx, 5, DType::F32), fx("want_one_hot_f32"), "one_hot f32");
  });
}

TEST_CASE("outer, tensordot and kron match numpy") {
  auto fx = case_of("products");
  on_both_backends([&] {
    Tensor a = fx("a"), b = fx("b"), m = fx("m"), A = fx("A"), B = fx("B"), C = fx("C");
    expect_eq(rlx::outer(a, b), fx("want_outer"), "outer(a, b)");
    expect_eq(rlx::tensordot(A, B), fx("want_tensordot_2"), "tensordot(A, B)");
    expect_eq(rlx::tensordot(A, C, Dims{0, 2}, Dims{2, 0}), fx("want_tensordot_lists"),
              "tensordot(A, C, ([0, 2], [2, 0]))");
    expect_eq(rlx::tensordot(a, m, 0), fx("want_tensordot_0"), "tensordot(a, m, 0)");
    expect_eq(rlx::kron(m, b), fx("want_kron_m_b"), "kron(m, b)");
    expect_eq(rlx::kron(a, b), fx("want_kron_a_b"), "kron(a, b)");
  });
}

TEST_CASE("einsum matches numpy on its documented forms and more") {
  // name -> spec, as EINSUM in make_numpy_shape.py
  const std::vector<std::pair<std::string, std::string>> specs = {
      {"trace", "ii"},
      {"trace_explicit", "ii->"},
      {"diagonal", "ii->i"},
      {"row_sum", "ij->i"},
      {"transpose_implicit", "ji"},
      {"transpose", "ij->ji"},
      {"matvec", "ij,j"},
      {"inner", "i,i"},
      {"outer", "i,j"},
      {"matmul", "ij,jk->ik"},
      {"batched_matmul", "bij,bjk->bik"},
      {"ellipsis_diagonal", "...ii->...i"},
      {"ellipsis_matvec", "...j,j"},
      {"ellipsis_sum_first", "i...->..."},
      {"ellipsis_broadcast", "...ij,...jk->...ik"},
      {"tensordot_like", "ijk,jil->kl"},
      {"scalar_times", ",ij->ij"},
      {"three_chain", "ij,jk,kl->il"},
      {"three_bilinear", "bn,anm,bm->ba"},
      {"three_inner", "i,i,i"},
      {"repeated_with_other", "iij,jk->ik"},
      {"hadamard", "ij,ij->ij"},
      {"frobenius", "ij,ij->"},
      {"batch_outer_later", "bi,bj->bji"},
  };
  auto fx = case_of("einsum");
  on_both_backends([&] {
    for (const auto& [name, spec] : specs) {
      std::vector<Tensor> ops;
      const std::size_t n = std::count(spec.begin(), spec.end(), ',') + 1;
      for (std::size_t k = 0; k < n; ++k) ops.push_back(fx("x" + std::to_string(k) + "_" + name));
      expect_eq(rlx::einsum(spec, ops), fx("want_" + name), name + ": " + spec);
    }
  });
}

TEST_CASE("einsum of two operands records one matmul (it runs on the GEMM), no elementwise mul") {
  Tensor a = rlx::ones({2, 3, 4}), b = rlx::ones({4, 5, 2});
  auto ops = pending_ops(rlx::einsum("bij,jkb->bik", {a, b}));
  CHECK(ops.count(OpKind::MatMul) == 1);
  CHECK(ops.count(OpKind::Mul) == 0);
  auto three = pending_ops(
      rlx::einsum("ij,jk,kl->il", {rlx::ones({2, 3}), rlx::ones({3, 4}), rlx::ones({4, 5})}));
  CHECK(three.count(OpKind::MatMul) == 2);
}

TEST_CASE("atleast_nd, expand_dims and squeeze with several axes match numpy") {
  auto fx = case_of("ranks");
  on_both_backends([&] {
    Tensor s = fx("s"), v = fx("v"), m = fx("m"), x = fx("x");
    expect_eq(rlx::atleast_1d(s), fx("want_1d_s"), "atleast_1d(s)");
    expect_eq(rlx::atleast_2d(s), fx("want_2d_s"), "atleast_2d(s)");
    expect_eq(rlx::atleast_2d(v), fx("want_2d_v"), "atleast_2d(v)");
    expect_eq(rlx::atleast_3d(v), fx("want_3d_v"), "atleast_3d(v)");
    expect_eq(rlx::atleast_3d(m), fx("want_3d_m"), "atleast_3d(m)");
    expect_eq(rlx::expand_dims(m, Dims{0, 2}), fx("want_expand_0_2"), "expand_dims(m, (0, 2))");
    expect_eq(rlx::expand_dims(m, -1), fx("want_expand_m1"), "expand_dims(m, -1)");
    expect_eq(rlx::squeeze(x, {0, 2}), fx("want_squeeze_0_2"), "squeeze(x, (0, 2))");
  });
}

TEST_CASE("flipud, fliplr and rot90 match numpy") {
  auto fx = case_of("flips");
  on_both_backends([&] {
    Tensor m = fx("m"), x = fx("x");
    expect_eq(rlx::flipud(m), fx("want_flipud"), "flipud");
    expect_eq(rlx::fliplr(m), fx("want_fliplr"), "fliplr");
    expect_eq(rlx::rot90(m), fx("want_rot90_1"), "rot90(m)");
    expect_eq(rlx::rot90(m, 2), fx("want_rot90_2"), "rot90(m, 2)");
    expect_eq(rlx::rot90(m, 3), fx("want_rot90_3"), "rot90(m, 3)");
    expect_eq(rlx::rot90(m, -1), fx("want_rot90_m1"), "rot90(m, -1)");
    expect_eq(rlx::rot90(x, 1, {1, 2}), fx("want_rot90_x_axes12"), "rot90(x, 1, (1, 2))");
  });
}

TEST_CASE("cumulative ops match numpy and torch, reversed and exclusive too") {
  auto fx = case_of("cumulative");
  on_both_backends([&] {
    Tensor x = fx("x"), xi = fx("xi"), xn = fx("xn");
    expect_eq(rlx::cumprod(x, 1), fx("want_cumprod_1"), "cumprod axis 1 (through zeros)");
    expect_eq(rlx::cumprod(x, 0), fx("want_cumprod_0"), "cumprod axis 0");
    expect_eq(rlx::cummax(x, 1), fx("want_cummax_1"), "cummax");
    expect_eq(rlx::cummin(x, 1), fx("want_cummin_1"), "cummin");
    auto [mv, mi] = rlx::cummax_with_indices(x, 1);
    expect_eq(mv, fx("want_cummax_1"), "cummax_with_indices values");
    expect_eq(mi, fx("want_cummax_idx_1"), "cummax_with_indices indices");
    auto [nv, ni] = rlx::cummin_with_indices(x, -1);
    expect_eq(nv, fx("want_cummin_1"), "cummin_with_indices values");
    expect_eq(ni, fx("want_cummin_idx_1"), "cummin_with_indices indices");
    expect_eq(rlx::logcumsumexp(x, 1), fx("want_logcumsumexp_1"), "logcumsumexp");
    expect_eq(rlx::cumsum(x, 1, false, true), fx("want_cumsum_rev_1"), "cumsum reverse");
    expect_eq(rlx::cumprod(x, 1, false, true), fx("want_cumprod_rev_1"), "cumprod reverse");
    expect_eq(rlx::cummax(x, 1, false, true), fx("want_cummax_rev_1"), "cummax reverse");
    expect_eq(rlx::cumprod(x, 1, true), fx("want_cumprod_excl_1"), "cumprod exclusive");
    expect_eq(rlx::cummax(x, 1, true), fx("want_cummax_excl_1"), "cummax exclusive");
    expect_eq(rlx::logcumsumexp(x, 1, true), fx("want_logcumsumexp_excl_1"),
              "logcumsumexp exclusive");
    expect_eq(rlx::cumsum(x, 1, true, true), fx("want_cumsum_rev_excl_1"),
              "cumsum reverse exclusive");
    expect_eq(rlx::cumprod(xi, 1), fx("want_cumprod_int"), "cumprod int32 (in i64)");
    auto [iv, ii] = rlx::cummax_with_indices(xi, 1);
    expect_eq(iv, fx("want_cummax_int"), "cummax int32 values");
    expect_eq(ii, fx("want_cummax_int_idx"), "cummax int32 indices (last among ties)");
    auto [jv, ji] = rlx::cummin_with_indices(xi, 1);
    expect_eq(jv, fx("want_cummin_int"), "cummin int32 values");
    expect_eq(ji, fx("want_cummin_int_idx"), "cummin int32 indices (last among ties)");
    auto [nanv, nani] = rlx::cummax_with_indices(xn, 0);
    expect_eq(nanv, fx("want_cummax_nan"), "cummax with NaNs");
    expect_eq(nani, fx("want_cummax_nan_idx"), "cummax indices with NaNs");
  });
}

TEST_CASE("cumulative ops record log2(n) doubling steps, and index records one gather") {
  // A scan of 64 elements takes 6 doubling steps, each one element-wise op (random values: the
  // builder folds products with constant ones; a small n: larger graphs are computed as they
  // are recorded, which hides the nodes).
  Tensor x = rlx::rand({64});
  CHECK(pending_ops(rlx::cumprod(x, 0)).count(OpKind::Mul) == 6);
  CHECK(pending_ops(rlx::cummax(x, 0)).count(OpKind::Max) == 6);
  // Three broadcast index tensors and a slice: one gather of 2*3 rows, no one-hot matmul.
  Tensor y = rlx::ones({4, 5, 6}).index(
      {rlx::tensor({0, 1, 2}), rlx::Slice{}, rlx::tensor({1, 2}, {2, 1})});
  auto ops = pending_ops(y);
  CHECK(ops.count(OpKind::Gather) == 1);
  CHECK(ops.count(OpKind::MatMul) == 0);
  CHECK(y.sizes() == Dims{2, 3, 5});
}

TEST_CASE("index with integer tensors and bool masks matches numpy's advanced indexing") {
  auto fx = case_of("indexing");
  on_both_backends([&] {
    Tensor x = fx("x"), i0 = fx("i0"), i1 = fx("i1"), i2 = fx("i2");
    Tensor mask = fx("mask"), mask6 = fx("mask6");
    rlx::Slice all_of{};
    expect_eq(x.index({i0}), fx("want_i0"), "x[i0] (negative indices)");
    expect_eq(x.index({all_of, rlx::fmod(i1, 5)}), fx("want_slice_i1"), "x[:, i1 % 5]");
    expect_eq(x.index({all_of, i2, i1}), fx("want_adjacent"), "x[:, i2, i1]");
    expect_eq(x.index({i2, all_of, i1}), fx("want_separated"), "x[i2, :, i1]");
    expect_eq(x.index({1, all_of, i1}), fx("want_int_separated"), "x[1, :, i1]");
    expect_eq(x.index({all_of, 2, i1}), fx("want_int_adjacent"), "x[:, 2, i1]");
    expect_eq(x.index({mask}), fx("want_mask"), "x[mask]");
    expect_eq(x.index({all_of, all_of, mask6}), fx("want_mask_last"), "x[:, :, mask6]");
    expect_eq(x.index({rlx::newaxis, rlx::fmod(i1, 4)}), fx("want_newaxis"), "x[None, i1 % 4]");
    expect_eq(x.index({i0, rlx::Slice{1, 4, 2}}), fx("want_i0_slice"), "x[i0, 1:4:2]");
  });
}

TEST_CASE("gradients of roll, tile, repeat, tril, einsum, cumulative ops and index match torch") {
  auto fx = case_of("grads");
  auto check = [&](const std::string& name, auto f) {
    Tensor x = fx("x_" + name), w = fx("w_" + name);
    Tensor g = rlx::grad([&](Tensor t) { return rlx::sum(f(t) * w); })(x);
    expect_eq(g, fx("want_" + name + "_0"), "d/dx of " + name, 1e-9, 1e-12);
  };
  on_both_backends([&] {
    check("roll", [](Tensor t) { return rlx::roll(t, Dims{1, 3}, Dims{0, 1}); });
    check("tile", [](Tensor t) { return rlx::tile(t, {2, 1, 2}); });
    check("repeat", [](Tensor t) { return rlx::repeat(t, Dims{1, 0, 2}, 1); });
    check("repeat_flat", [](Tensor t) { return rlx::repeat(t, 2); });
    check("tril", [](Tensor t) { return rlx::tril(t, -1); });
    check("einsum_diag", [](Tensor t) { return rlx::einsum("ii->i", {t}); });
    check("cumprod", [](Tensor t) { return rlx::cumprod(t, 1); });
    check("cummax", [](Tensor t) { return rlx::cummax(t, 1); });
    check("logcumsumexp", [](Tensor t) { return rlx::logcumsumexp(t, 1); });
    Tensor i1 = fx("i1"), i2 = fx("i2");
    check("index", [&](Tensor t) { return t.index({i2, rlx::Slice{}, i1}); });

    Tensor a = fx("x_einsum_a"), b = fx("x_einsum_b"), w = fx("w_einsum");
    auto grads = rlx::grad(
        [&](Tensor s, Tensor t) { return rlx::sum(rlx::einsum("bij,bjk->bik", {s, t}) * w); },
        {0, 1})(a, b);
    REQUIRE(grads.size() == 2);
    expect_eq(grads[0], fx("want_einsum_0"), "d/da of einsum bij,bjk->bik", 1e-9, 1e-12);
    expect_eq(grads[1], fx("want_einsum_1"), "d/db of einsum bij,bjk->bik", 1e-9, 1e-12);
  });
}

TEST_CASE("errors name the function, the shapes and the caller's line") {
  Tensor m = rlx::ones({2, 3}), v = rlx::ones({4});
  int line = 0;
  std::string msg;

  line = __LINE__, msg = check_error([&] { (void)rlx::einsum("ij,jk", {m, m}); }, ErrorKind::Shape,
                                     "einsum: letter 'j' has size 3 in operand 0 (f32[2,3]) but 2 "
                                     "in operand 1 (f32[2,3])");
  expect_line(msg, line);
  line = __LINE__, msg = check_error([&] { (void)rlx::einsum("ij%", {m}); }, ErrorKind::Value,
                                     "einsum: invalid character '%' in operand 0's term 'ij%'");
  expect_line(msg, line);
  line = __LINE__, msg = check_error([&] { (void)rlx::einsum("ijk", {m}); }, ErrorKind::Shape,
                                     "einsum: operand 0 is f32[2,3] but its term 'ijk' names 3 "
                                     "axes");
  expect_line(msg, line);
  line = __LINE__, msg = check_error([&] { (void)rlx::einsum("ij->ik", {m}); }, ErrorKind::Value,
                                     "einsum: output letter 'k' is not in any operand");
  expect_line(msg, line);
  line = __LINE__, msg = check_error([&] { (void)rlx::einsum("ij,j", {m}); }, ErrorKind::Value,
                                     "has 2 operand terms but 1 operands were given");
  expect_line(msg, line);
  line = __LINE__, msg = check_error([&] { (void)rlx::einsum("ij->ii", {m}); }, ErrorKind::Value,
                                     "einsum: output letter 'i' appears more than once");
  expect_line(msg, line);
  line = __LINE__, msg = check_error([&] { (void)rlx::tril(v); }, ErrorKind::Shape,
                                     "tril: needs rank >= 2, got f32[4]");
  expect_line(msg, line);
  line = __LINE__, msg = check_error([&] { (void)rlx::repeat(m, Dims{1, 2}, 1); }, ErrorKind::Shape,
                                     "repeat: 2 counts for axis 1 of f32[2,3] (of length 3)");
  expect_line(msg, line);
  line = __LINE__, msg = check_error([&] { (void)rlx::split(v, 3); }, ErrorKind::Shape,
                                     "split: axis 0 of f32[4] does not split into 3 equal");
  expect_line(msg, line);
  line = __LINE__, msg = check_error([&] { (void)rlx::tensordot(m, v, 1); }, ErrorKind::Shape,
                                     "tensordot: axis 1 of f32[2,3] and axis 0 of f32[4] differ");
  expect_line(msg, line);
  line = __LINE__,
  msg = check_error([&] { (void)rlx::diag(rlx::ones({2, 2, 2})); }, ErrorKind::Shape,
                    "diag: needs a 1-D or 2-D tensor, got f32[2,2,2]");
  expect_line(msg, line);
  line = __LINE__, msg = check_error([&] { (void)rlx::one_hot(m, 3); }, ErrorKind::Type,
                                     "one_hot: needs integer indices, got f32[2,3]");
  expect_line(msg, line);
  line = __LINE__, msg = check_error([&] { (void)rlx::cumprod(m, 2); }, ErrorKind::Value,
                                     "cumprod: axis 2 is out of range for f32[2,3]");
  expect_line(msg, line);
  line = __LINE__, msg = check_error([&] { (void)rlx::moveaxis(m, Dims{0, 0}, Dims{0, 1}); },
                                     ErrorKind::Value, "moveaxis: repeated axis in [0,0]");
  expect_line(msg, line);
  Tensor bad_idx = rlx::tensor({0, 1, 2}), idx2 = rlx::tensor({0, 1});
  line = __LINE__, msg = check_error([&] { (void)m.index({bad_idx.astype(DType::F32)}); },
                                     ErrorKind::Type, "index: an index tensor must be integer");
  expect_line(msg, line);
  line = __LINE__,
  msg = check_error([&] { (void)rlx::ones({3, 3}).index({bad_idx, idx2}); }, ErrorKind::Shape,
                    "index: index tensors of shapes [3] and i32[2] do not broadcast");
  expect_line(msg, line);
  // Out of range along its own axis, though the flat offset 0 * 6 + 7 would fit in 5 * 6.
  Tensor x = rlx::ones({4, 5, 6});
  const int index_line = __LINE__ + 1;
  Tensor seven = x.index({rlx::Slice{}, rlx::tensor({int64_t(0)}), rlx::tensor({int64_t(7)})});
  msg = check_error([&] { (void)seven.to_vector<float>(); }, ErrorKind::Value,
                    "gather: index 30 is out of range for axis 0 of size 30");
  // the line of the index call, not of the read
  CHECK(msg.find("test_numpy_shape.cpp:" + std::to_string(index_line)) != std::string::npos);
  Tensor mask3 = rlx::Tensor::from_vector(std::vector<bool>{true, false, true}, {3});
  line = __LINE__, msg = check_error([&] { (void)m.index({mask3}); }, ErrorKind::Shape,
                                     "index: bool mask bool[3] does not match the axes from 0 of "
                                     "f32[2,3]");
  expect_line(msg, line);
}
