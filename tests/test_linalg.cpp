// tests/test_linalg.cpp -- rlx::linalg (include/rlx/linalg.hpp) against numpy.linalg and
// torch.autograd (tests/fixtures/linalg/, written by tests/fixtures/make_linalg.py with the
// parameters repeated here), on both backends (the JIT runs the LAPACK kernels as interpreter
// steps): batched f32 and f64 values, factors up to LAPACK's sign freedom (plus reconstructions
// and orthonormality), rank-deficient least squares, every norm order, gradients in f64, run-time
// errors of singular and indefinite matrices, and the Graph API's dense_solve,
// batched_dense_solve and vmap of dense_solve.
#include "support/backends.hpp"
#include "support/check_error.hpp"
#include "support/compare.hpp"

#include <rlx/autodiff.hpp>
#include <rlx/ir/graph.hpp>
#include <rlx/rlx.hpp>
#include <rlx/runtime.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace {

using rlx::DType;
using rlx::ErrorKind;
using rlx::Tensor;
using rlx::test::check_error;
using rlx::test::on_both_backends;
namespace la = rlx::linalg;

rlx::test::Fixture case_of(const std::string& name) { return {"linalg", name}; }

const std::vector<std::string> kTags = {"f32", "f64"};
double tol_of(const std::string& tag) { return tag == "f32" ? 2e-4 : 1e-10; }

/// got has want's sizes and dtype and every element is within tol * max(max |want|, 1).
void expect_close(const Tensor& got, const Tensor& want, const std::string& what, double tol) {
  rlx::test::check_close_scaled(got, want, tol, 1, what);
}

Tensor mT(const Tensor& x) { return rlx::transpose(x, x.ndim() - 2, x.ndim() - 1); }
Tensor eye_like(const Tensor& x, int64_t n) { return rlx::eye(n, std::nullopt, 0, x.dtype()); }

/// Columns of u flipped to agree with want's (the signs LAPACK may choose differently).
Tensor column_signs(const Tensor& u, const Tensor& want) {
  return rlx::sign(rlx::sum(u * want, {-2}, true));
}

/// q has orthonormal columns.
void expect_orthonormal_columns(const Tensor& q, const std::string& what, double tol) {
  int64_t k = q.size(-1);
  expect_close(rlx::matmul(mT(q), q),
               rlx::broadcast_to(eye_like(q, k), rlx::matmul(mT(q), q).sizes()), what, tol);
}

} // namespace

TEST_CASE("solve matches numpy for batched matrix right-hand sides, broadcast vectors and one "
          "system") {
  on_both_backends([] {
    for (const std::string& tag : kTags) {
      auto f = case_of("solve_" + tag);
      double tol = tol_of(tag);
      expect_close(la::solve(f("a"), f("b")), f("want_solve"), "solve " + tag, tol);
      expect_close(la::solve(f("a"), f("bv")), f("want_solve_vector_batched"),
                   "solve vector over a batch " + tag, tol);
      expect_close(la::solve(f("a1"), f("bv")), f("want_solve_vector"), "solve vector " + tag, tol);
    }
  });
}

TEST_CASE("inv, det, slogdet and matrix_power match numpy") {
  on_both_backends([] {
    for (const std::string& tag : kTags) {
      auto f = case_of("square_" + tag);
      double tol = tol_of(tag);
      Tensor a = f("a");
      expect_close(la::inv(a), f("want_inv"), "inv " + tag, tol);
      expect_close(la::det(a), f("want_det"), "det " + tag, tol);
      la::Slogdet s = la::slogdet(a);
      expect_close(s.sign, f("want_sign"), "slogdet sign " + tag, 0);
      expect_close(s.logabsdet, f("want_logabsdet"), "slogdet " + tag, tol);
      Tensor a0 = rlx::reshape(rlx::narrow(a, 0, 0, 1), {3, 3});
      expect_close(la::matrix_power(a0, 3), f("want_power3"), "matrix_power 3 " + tag, tol);
      expect_close(la::matrix_power(a0, 0), f("want_power0"), "matrix_power 0 " + tag, 0);
      expect_close(la::matrix_power(a0, -2), f("want_powerm2"), "matrix_power -2 " + tag, tol);
    }
  });
}

TEST_CASE("cholesky matches numpy on batched positive definite matrices") {
  on_both_backends([] {
    for (const std::string& tag : kTags) {
      auto f = case_of("cholesky_" + tag);
      expect_close(la::cholesky(f("a")), f("want_cholesky"), "cholesky " + tag, tol_of(tag));
    }
  });
}

TEST_CASE("qr gives numpy's reduced factors up to signs, and they rebuild a with orthonormal Q "
          "and upper-triangular R") {
  on_both_backends([] {
    for (const std::string& tag : kTags)
      for (const char* shape : {"tall", "wide", "square"}) {
        auto f = case_of(std::string("factor_") + shape + "_" + tag);
        std::string what = std::string("qr ") + shape + " " + tag;
        double tol = tol_of(tag);
        Tensor a = f("a");
        auto [q, r] = la::qr(a);
        Tensor sg = column_signs(q, f("want_q"));
        expect_close(q * sg, f("want_q"), what + " Q", tol);
        expect_close(r * mT(sg), f("want_r"), what + " R", tol);
        expect_close(rlx::matmul(q, r), a, what + " QR = a", tol);
        expect_orthonormal_columns(q, what + " Q^T Q = I", tol);
        int64_t k = r.size(-2), n = r.size(-1);
        Tensor below = Tensor::from_vector(std::vector<double>(std::size_t(k * n), 0.0), {k, n});
        std::vector<double> lower(std::size_t(k * n), 0.0);
        for (int64_t i = 0; i < k; ++i)
          for (int64_t j = 0; j < i && j < n; ++j) lower[std::size_t(i * n + j)] = 1;
        Tensor mask = Tensor::from_vector(lower, {k, n}).astype(r.dtype());
        expect_close(rlx::abs(r * mask), rlx::broadcast_to(below.astype(r.dtype()), r.sizes()),
                     what + " R upper triangular", 0);
      }
  });
}

TEST_CASE("svd gives numpy's singular values, its vectors up to sign, and full and reduced "
          "factors that rebuild a") {
  on_both_backends([] {
    for (const std::string& tag : kTags)
      for (const char* shape : {"tall", "wide", "square"}) {
        auto f = case_of(std::string("factor_") + shape + "_" + tag);
        std::string what = std::string("svd ") + shape + " " + tag;
        double tol = tol_of(tag);
        Tensor a = f("a");
        la::Svd s = la::svd(a, false);
        expect_close(s.S, f("want_s"), what + " S", tol);
        expect_close(la::svdvals(a), f("want_s"), what + " svdvals", tol);
        Tensor sg = column_signs(s.U, f("want_u"));
        expect_close(s.U * sg, f("want_u"), what + " U", tol);
        expect_close(s.Vh * mT(sg), f("want_vh"), what + " Vh", tol);
        expect_close(rlx::matmul(s.U * rlx::unsqueeze(s.S, -2), s.Vh), a, what + " U S Vh = a",
                     tol);
        la::Svd full = la::svd(a); // numpy's default full_matrices = true
        int64_t m = a.size(-2), n = a.size(-1), k = std::min(m, n);
        REQUIRE(full.U.size(-1) == m);
        REQUIRE(full.Vh.size(-2) == n);
        expect_close(full.S, f("want_s"), what + " full S", tol);
        expect_orthonormal_columns(full.U, what + " full U orthogonal", tol);
        expect_orthonormal_columns(mT(full.Vh), what + " full Vh orthogonal", tol);
        Tensor uk = rlx::narrow(full.U, a.ndim() - 1, 0, k);
        Tensor vk = rlx::narrow(full.Vh, a.ndim() - 2, 0, k);
        expect_close(rlx::matmul(uk * rlx::unsqueeze(full.S, -2), vk), a,
                     what + " full factors rebuild a", tol);
      }
  });
}

TEST_CASE("eigh gives numpy's ascending eigenvalues and its eigenvectors up to sign, reading only "
          "the lower triangle") {
  on_both_backends([] {
    for (const std::string& tag : kTags) {
      auto f = case_of("eigh_" + tag);
      double tol = tol_of(tag);
      for (const char* input : {"a", "a_lower"}) {
        std::string what = std::string("eigh ") + input + " " + tag;
        la::Eigh e = la::eigh(f(input));
        expect_close(e.eigenvalues, f("want_w"), what + " w", tol);
        expect_close(la::eigvalsh(f(input)), f("want_w"), what + " eigvalsh", tol);
        Tensor sg = column_signs(e.eigenvectors, f("want_v"));
        expect_close(e.eigenvectors * sg, f("want_v"), what + " V", tol);
        expect_close(
            rlx::matmul(e.eigenvectors * rlx::unsqueeze(e.eigenvalues, -2), mT(e.eigenvectors)),
            f("a"), what + " V diag(w) V^T = sym(a)", tol);
      }
    }
  });
}

TEST_CASE("lstsq, pinv and matrix_rank match numpy, also for rank-deficient matrices") {
  on_both_backends([] {
    for (const std::string& tag : kTags) {
      auto f = case_of("lstsq_" + tag);
      double tol = tol_of(tag);
      expect_close(la::lstsq(f("a"), f("b")), f("want_lstsq"), "lstsq " + tag, tol);
      expect_close(la::lstsq(f("a"), f("bv")), f("want_lstsq_vector"), "lstsq vector " + tag, tol);
      for (const char* shape : {"tall", "wide", "square"}) {
        auto g = case_of(std::string("factor_") + shape + "_" + tag);
        expect_close(la::pinv(g("a")), g("want_pinv"), std::string("pinv ") + shape + " " + tag,
                     tol);
      }
    }
    auto r = case_of("rank");
    Tensor a = r("a");
    CHECK(la::matrix_rank(a).to_vector<int64_t>() == r("want_rank").to_vector<int64_t>());
    CHECK(la::matrix_rank(a, 10.0).to_vector<int64_t>() == std::vector<int64_t>{0, 0});
    expect_close(la::pinv(a), r("want_pinv"), "pinv rank 3", 1e-10);
    Tensor a0 = rlx::reshape(rlx::narrow(a, 0, 0, 1), {5, 4});
    expect_close(la::lstsq(a0, r("b")), r("want_lstsq"), "lstsq rank 3 (minimum norm)", 1e-10);
  });
}

TEST_CASE("norm matches numpy for every vector and matrix order, axes and keepdims") {
  on_both_backends([] {
    for (const std::string& tag : kTags) {
      auto f = case_of("norm_" + tag);
      double tol = tol_of(tag);
      Tensor x = f("x"), v = f("v"), t = f("t");
      const double inf = std::numeric_limits<double>::infinity();
      expect_close(la::norm(t), f("want_all"), "norm of all " + tag, tol);
      expect_close(la::norm(t, std::nullopt, {}, true), f("want_all_keepdims"),
                   "norm keepdims " + tag, tol);
      expect_close(la::norm(x), f("want_mat_none"), "matrix norm None " + tag, tol);
      expect_close(la::norm(x, "fro"), f("want_mat_fro"), "fro " + tag, tol);
      expect_close(la::norm(x, "nuc"), f("want_mat_nuc"), "nuc " + tag, tol);
      for (auto [o, k] : {std::pair{1.0, "1"},
                          {-1.0, "m1"},
                          {2.0, "2"},
                          {-2.0, "m2"},
                          {inf, "inf"},
                          {-inf, "minf"}})
        expect_close(la::norm(x, o), f(std::string("want_mat_") + k),
                     std::string("matrix norm ") + k + " " + tag, tol);
      expect_close(la::norm(v), f("want_vec_none"), "vector norm None " + tag, tol);
      for (auto [o, k] :
           {std::pair{1.0, "1"}, {2.0, "2"}, {inf, "inf"}, {-inf, "minf"}, {0.0, "0"}, {3.0, "3"}})
        expect_close(la::norm(v, o), f(std::string("want_vec_") + k),
                     std::string("vector norm ") + k + " " + tag, tol);
      expect_close(la::norm(x, std::nullopt, {1}, true), f("want_axis1_keepdims"),
                   "norm axis 1 keepdims " + tag, tol);
      expect_close(la::norm(t, 1.0, {0, 2}), f("want_axes02_1"), "norm 1 over axes (0, 2) " + tag,
                   tol);
      expect_close(la::norm(t, "nuc", {2, 1}), f("want_axes21_nuc"), "nuc over axes (2, 1) " + tag,
                   tol);
    }
  });
}

TEST_CASE("gradients of solve, inv, det and slogdet match torch.autograd") {
  on_both_backends([] {
    auto f = case_of("grad");
    Tensor a = f("solve_a"), b = f("solve_b"), w = f("solve_w");
    auto gs = rlx::grad([&](Tensor x, Tensor y) { return rlx::sum(la::solve(x, y) * w); }, {0, 1});
    std::vector<Tensor> d = gs(a, b);
    expect_close(d[0], f("want_solve_da"), "d solve / d a", 1e-9);
    expect_close(d[1], f("want_solve_db"), "d solve / d b", 1e-9);
    Tensor wi = f("inv_w");
    expect_close(rlx::grad([&](Tensor x) { return rlx::sum(la::inv(x) * wi); })(a),
                 f("want_inv_da"), "d inv", 1e-9);
    expect_close(rlx::grad([](Tensor x) { return rlx::sum(la::det(x)); })(a), f("want_det_da"),
                 "d det", 1e-9);
    expect_close(rlx::grad([](Tensor x) { return rlx::sum(la::slogdet(x).logabsdet); })(a),
                 f("want_logabsdet_da"), "d logabsdet", 1e-9);
  });
}

TEST_CASE("gradients of cholesky, qr (tall and wide), svd and eigh match torch.autograd on "
          "sign-invariant losses") {
  on_both_backends([] {
    auto f = case_of("grad");
    Tensor wl = f("chol_w");
    auto chol = [&](Tensor x) {
      Tensor s = rlx::matmul(x, mT(x)) + rlx::eye(3, std::nullopt, 0, DType::F64) * 3.0;
      return rlx::sum(la::cholesky(s) * wl);
    };
    expect_close(rlx::grad(chol)(f("chol_x")), f("want_chol_dx"), "d cholesky", 1e-9);
    Tensor wq = f("qr_wq"), wr = f("qr_wr");
    auto qr = [&](Tensor x) {
      auto [q, r] = la::qr(x);
      return rlx::sum(q * q * wq) + rlx::sum(r * r * wr);
    };
    expect_close(rlx::grad(qr)(f("qr_a")), f("want_qr_da"), "d qr", 1e-9);
    Tensor wq2 = f("qr_wide_wq"), wr2 = f("qr_wide_wr");
    auto qr_wide = [&](Tensor x) {
      auto [q, r] = la::qr(x);
      return rlx::sum(q * q * wq2) + rlx::sum(r * r * wr2);
    };
    expect_close(rlx::grad(qr_wide)(f("qr_wide_a")), f("want_qr_wide_da"), "d qr, wide", 1e-9);
    Tensor ws = f("svd_ws");
    for (const char* shape : {"tall", "wide"}) {
      std::string p = std::string("svd_") + shape;
      Tensor wu = f(p + "_wu"), wv = f(p + "_wv");
      auto sv = [&](Tensor x) {
        la::Svd s = la::svd(x, false);
        return rlx::sum(s.S * ws) + rlx::sum(s.U * s.U * wu) + rlx::sum(s.Vh * s.Vh * wv);
      };
      expect_close(rlx::grad(sv)(f(p + "_a")), f("want_" + p + "_da"), "d " + p, 1e-8);
    }
    Tensor ww = f("eigh_ww"), wv = f("eigh_wv");
    auto eh = [&](Tensor x) {
      la::Eigh e = la::eigh((x + mT(x)) * 0.5);
      return rlx::sum(e.eigenvalues * ww) + rlx::sum(e.eigenvectors * e.eigenvectors * wv);
    };
    expect_close(rlx::grad(eh)(f("eigh_x")), f("want_eigh_dx"), "d eigh", 1e-8);
  });
}

TEST_CASE("gradients of lstsq and of the fro, nuc and 2 norms match torch.autograd") {
  on_both_backends([] {
    auto f = case_of("grad");
    Tensor wx = f("lstsq_w");
    auto ls = rlx::grad([&](Tensor a, Tensor b) { return rlx::sum(la::lstsq(a, b) * wx); }, {0, 1});
    std::vector<Tensor> d = ls(f("lstsq_a"), f("lstsq_b"));
    expect_close(d[0], f("want_lstsq_da"), "d lstsq / d a", 1e-9);
    expect_close(d[1], f("want_lstsq_db"), "d lstsq / d b", 1e-9);
    Tensor x = f("norm_x");
    expect_close(rlx::grad([](Tensor y) { return la::norm(y, "fro"); })(x), f("want_norm_fro_dx"),
                 "d fro", 1e-9);
    expect_close(rlx::grad([](Tensor y) { return la::norm(y, "nuc"); })(x), f("want_norm_nuc_dx"),
                 "d nuc", 1e-9);
    expect_close(rlx::grad([](Tensor y) { return la::norm(y, 2.0); })(x), f("want_norm_2_dx"),
                 "d 2-norm", 1e-9);
  });
}

TEST_CASE("forward mode through solve, slogdet, cholesky, qr, svd and eigh matches central "
          "differences") {
  auto f = case_of("grad");
  Tensor a = f("solve_a"), b = f("solve_b"), x3 = f("qr_a"), xs = f("eigh_x");
  auto fns = std::vector<std::pair<std::string, std::function<Tensor(Tensor)>>>{
      {"solve", [&](Tensor t) { return la::solve(t, b); }},
      {"slogdet", [](Tensor t) { return la::slogdet(t).logabsdet; }},
      {"cholesky",
       [](Tensor t) {
         return la::cholesky(rlx::matmul(t, mT(t)) +
                             rlx::eye(3, std::nullopt, 0, DType::F64) * 3.0);
       }},
      {"qr",
       [](Tensor t) {
         auto [q, r] = la::qr(t);
         return rlx::sum(q * q) + rlx::sum(r * r * r);
       }},
      {"svd",
       [](Tensor t) {
         la::Svd s = la::svd(t, false);
         return rlx::sum(s.S * s.S * s.S) + rlx::sum(s.U * s.U * s.U * s.U);
       }},
      {"eigh", [](Tensor t) {
         la::Eigh e = la::eigh(t + mT(t));
         return rlx::sum(e.eigenvalues * e.eigenvalues * e.eigenvalues) +
                rlx::sum(e.eigenvectors * e.eigenvectors * e.eigenvectors * e.eigenvectors);
       }}};
  for (auto& [name, fn] : fns) {
    Tensor p = name == "qr" || name == "svd" ? x3 : name == "eigh" ? xs : a;
    Tensor dir = rlx::sin(p * 3.0 + 1.0); // a fixed direction
    auto [ys, ts] = rlx::jvp(fn, {p}, {dir});
    const double h = 1e-6;
    Tensor fd = (fn(p + dir * h) - fn(p - dir * h)) / (2 * h);
    REQUIRE(ts.size() == 1);
    expect_close(rlx::reshape(ts[0], fd.sizes()), fd, "jvp " + name, 1e-6);
  }
}

TEST_CASE("a singular solve or inv and an indefinite cholesky are errors naming the op and the "
          "batch element") {
  on_both_backends([] {
    std::vector<double> v = {2, 0, 0, 1, /* singular: */ 1, 2, 2, 4};
    Tensor a = Tensor::from_vector(v, {2, 2, 2});
    check_error([&] { (void)la::solve(a, rlx::ones({2, 2, 1}, DType::F64)).to_vector<double>(); },
                ErrorKind::Value, "solve: the matrix of batch element 1 is singular");
    check_error([&] { (void)la::inv(a).to_vector<double>(); }, ErrorKind::Value,
                "batch element 1 is singular");
    std::string msg = check_error([&] { (void)la::cholesky(a).to_vector<double>(); },
                                  ErrorKind::Value, "batch element 1 is not positive definite");
    CHECK(msg.find("test_linalg.cpp") != std::string::npos);
    // slogdet and det of a singular matrix are (0, -inf) and 0, as numpy's
    la::Slogdet s = la::slogdet(a);
    CHECK(s.sign.to_vector<double>() == std::vector<double>{1, 0});
    CHECK(s.logabsdet.to_vector<double>()[1] == -std::numeric_limits<double>::infinity());
    CHECK(la::det(a).to_vector<double>() == std::vector<double>{2, 0});
  });
}

TEST_CASE("bad operands are errors naming the function and the shapes") {
  Tensor sq = rlx::ones({3, 3}), rect = rlx::ones({2, 3}), vec3 = rlx::ones({3});
  check_error([&] { (void)la::solve(rect, vec3); }, ErrorKind::Shape, "linalg.solve: needs square");
  check_error([&] { (void)la::solve(sq, rlx::ones({4})); }, ErrorKind::Shape,
              "needs b with 3 rows");
  check_error([&] { (void)la::inv(rlx::ones({3, 3}, DType::I64)); }, ErrorKind::Type,
              "linalg.inv: needs f32 or f64");
  check_error([&] { (void)la::cholesky(vec3); }, ErrorKind::Shape,
              "linalg.cholesky: needs a matrix");
  check_error([&] { (void)la::eigh(rect); }, ErrorKind::Shape, "f32[2,3]");
  check_error([&] { (void)la::norm(rlx::ones({2, 3, 4}), 2.0); }, ErrorKind::Shape,
              "linalg.norm: an ord without axis needs a 1-D or 2-D x");
  check_error([&] { (void)la::norm(vec3, "fro"); }, ErrorKind::Value, "for vectors");
  check_error([&] { (void)la::norm(sq, 3.0); }, ErrorKind::Value, "invalid norm order 3");
  std::string msg =
      check_error([&] { (void)la::qr(vec3); }, ErrorKind::Shape, "linalg.qr: needs a matrix");
  CHECK(msg.find("test_linalg.cpp") != std::string::npos);
}

TEST_CASE("dense_solve, batched_dense_solve and vmap of dense_solve solve on both backends") {
  namespace ir = rlx::ir;
  auto f = case_of("solve_f64");
  auto run = [](const ir::Graph& g, std::vector<rlx::Buffer> feeds, rlx::Backend be) {
    std::vector<const rlx::Buffer*> p;
    for (const auto& x : feeds) p.push_back(&x);
    return Tensor(rlx::compile(g, be)->run(p)[0]);
  };
  for (rlx::Backend be : {rlx::Backend::Interp, rlx::Backend::Jit}) {
    CAPTURE(be);
    ir::Graph g{"dense_solve"};
    auto a = g.input("a", ir::Shape({4, 4}, DType::F64));
    auto b = g.input("b", ir::Shape({4}, DType::F64));
    g.set_outputs({g.dense_solve(a, b, ir::Shape({4}, DType::F64))});
    expect_close(run(g, {f("a1").buffer(), f("bv").buffer()}, be), f("want_solve_vector"),
                 "dense_solve", 1e-10);

    ir::Graph gb{"batched"};
    auto ab = gb.input("a", ir::Shape({3, 4, 4}, DType::F64));
    auto bb = gb.input("b", ir::Shape({3, 4, 2}, DType::F64));
    gb.set_outputs({gb.batched_dense_solve(ab, bb, ir::Shape({3, 4, 2}, DType::F64))});
    expect_close(run(gb, {f("a").buffer(), f("b").buffer()}, be), f("want_solve"),
                 "batched_dense_solve", 1e-10);

    ir::Graph gv = rlx::autodiff::vmap(g, {"a"}, 3); // b shared by the batch
    int solves = 0;
    for (const ir::Node& n : gv.nodes())
      if (n.op.kind() == ir::OpKind::Solve) {
        ++solves;
        CHECK(n.shape == ir::Shape({3, 4}, DType::F64));
      }
    CHECK(solves == 1); // one batched solve, not one per element
    expect_close(run(gv, {f("a").buffer(), f("bv").buffer()}, be), f("want_solve_vector_batched"),
                 "vmap of dense_solve", 1e-10);
  }
  ir::Graph bad{"bad"};
  auto a3 = bad.input("a", ir::Shape({2, 3, 3}, DType::F64));
  auto b3 = bad.input("b", ir::Shape({2, 3}, DType::F64));
  check_error([&] { bad.dense_solve(a3, b3, ir::Shape({2, 3}, DType::F64)); }, ErrorKind::Shape,
              "dense_solve: needs A of rank 2");
  check_error([&] { bad.batched_dense_solve(a3, b3, ir::Shape({2, 4}, DType::F64)); },
              ErrorKind::Shape, "solve");
}

TEST_CASE("solve with more rows and right-hand sides than a transposition tile gives back the X "
          "that made B, on both backends") {
  // The kernel transposes several right-hand sides into LAPACK's layout in tiles of 32: 40 rows
  // and 35 columns leave partial tiles, and two batch elements check the offsets. A is strictly
  // diagonally dominant (off-diagonal rows sum to at most 39 < 40), so X comes back to ~1e-15.
  const int64_t batch = 2, n = 40, k = 35;
  std::mt19937 gen(3);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  std::vector<double> a(std::size_t(batch * n * n)), x(std::size_t(batch * n * k)),
      b(std::size_t(batch * n * k), 0.0);
  for (double& v : a) v = u(gen);
  for (double& v : x) v = u(gen);
  for (int64_t e = 0; e < batch; ++e)
    for (int64_t i = 0; i < n; ++i) {
      a[std::size_t((e * n + i) * n + i)] += double(n);
      for (int64_t j = 0; j < n; ++j)
        for (int64_t c = 0; c < k; ++c)
          b[std::size_t((e * n + i) * k + c)] +=
              a[std::size_t((e * n + i) * n + j)] * x[std::size_t((e * n + j) * k + c)];
    }
  on_both_backends([&] {
    expect_close(
        la::solve(Tensor::from_vector(a, {batch, n, n}), Tensor::from_vector(b, {batch, n, k})),
        Tensor::from_vector(x, {batch, n, k}), "solve", 1e-12);
  });
}

TEST_CASE("empty matrices and empty batches give numpy's empty results, and det of 0x0 is 1") {
  on_both_backends([] {
    Tensor e = rlx::zeros({0, 0}, DType::F64);
    CHECK(la::det(e).to_vector<double>() == std::vector<double>{1});
    CHECK(la::solve(rlx::zeros({2, 0, 0}), rlx::zeros({2, 0, 1})).sizes() ==
          std::vector<int64_t>{2, 0, 1});
    CHECK(la::inv(rlx::zeros({0, 3, 3})).sizes() == std::vector<int64_t>{0, 3, 3});
    auto [q, r] = la::qr(rlx::zeros({0, 3}));
    CHECK(q.sizes() == std::vector<int64_t>{0, 0});
    CHECK(r.sizes() == std::vector<int64_t>{0, 3});
    CHECK(la::cholesky(e).sizes() == std::vector<int64_t>{0, 0});
    CHECK(la::eigh(e).eigenvalues.sizes() == std::vector<int64_t>{0});
    la::Svd s = la::svd(rlx::zeros({2, 0}));
    CHECK(s.S.sizes() == std::vector<int64_t>{0});
    CHECK(s.U.to_vector<float>() == std::vector<float>{1, 0, 0, 1}); // the full U is I
  });
}
