// tests/test_sort.cpp -- sorting, selection and scattering (src/frontend/sort.cpp) against numpy
// and torch (tests/fixtures/sort/, written by tests/fixtures/make_sort.py with the parameters
// repeated here) on both backends: ties, NaNs, both directions, every axis, k = 1 and k = n,
// duplicate and negative indices, gradients in f64 against torch, the scatter_add gradient of an
// embedding lookup staying O(indices), and errors.
#include "support/backends.hpp"
#include "support/check_error.hpp"
#include "support/compare.hpp"

#include <rlx/all.hpp>

#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

namespace {

using rlx::Dims;
using rlx::DType;
using rlx::ErrorKind;
using rlx::Tensor;
using rlx::test::check_error;
using rlx::test::on_both_backends;

rlx::test::Fixture case_of(const std::string& name) { return {"sort", name}; }

/// got has want's sizes and dtype; integers equal exactly, floats within atol + rtol |want|, NaN
/// where want has NaN.
void expect_close(const Tensor& got, const Tensor& want, const std::string& what,
                  double rtol = 1e-6, double atol = 1e-6) {
  rlx::test::check_close(got, want, {rtol, atol}, what);
}

} // namespace

TEST_CASE("sort and argsort match numpy ascending and torch's stable descending on every axis") {
  auto fx = case_of("sort_axes");
  Tensor x = fx("x"), xi = fx("xi");
  on_both_backends([&] {
    for (int64_t ax = 0; ax < 3; ++ax) {
      std::string a = std::to_string(ax);
      int64_t neg = ax - 3; // the same axis counted from the end
      expect_close(rlx::sort(x, ax), fx("want_sort_" + a), "sort axis " + a);
      expect_close(rlx::argsort(x, neg), fx("want_argsort_" + a), "argsort axis " + a);
      expect_close(rlx::sort(x, neg, true), fx("want_sort_desc_" + a), "sort desc axis " + a);
      expect_close(rlx::argsort(x, ax, true), fx("want_argsort_desc_" + a),
                   "argsort desc axis " + a);
    }
    expect_close(rlx::sort(xi), fx("want_sort_int"), "sort i32");
    expect_close(rlx::argsort(xi), fx("want_argsort_int"), "argsort i32");
  });
}

TEST_CASE("topk and kthvalue match torch, with ties going to the smaller index") {
  auto fx = case_of("topk_and_kthvalue");
  Tensor x = fx("x");
  on_both_backends([&] {
    for (int64_t ax : {0, 1}) {
      int64_t n = x.size(ax);
      for (int64_t k : {int64_t(1), int64_t(3), n})
        for (bool largest : {true, false}) {
          std::string tag =
              std::to_string(ax) + "_" + std::to_string(k) + "_" + (largest ? "l" : "s");
          auto [v, i] = rlx::topk(x, k, ax, largest);
          expect_close(v, fx("want_topk_val_" + tag), "topk values " + tag);
          expect_close(i, fx("want_topk_idx_" + tag), "topk indices " + tag);
        }
      for (int64_t k : {int64_t(1), int64_t(4), n}) {
        std::string tag = std::to_string(ax) + "_" + std::to_string(k);
        auto [v, i] = rlx::kthvalue(x, k, ax);
        expect_close(v, fx("want_kth_val_" + tag), "kthvalue values " + tag);
        expect_close(i, fx("want_kth_idx_" + tag), "kthvalue indices " + tag);
      }
    }
    auto [kv, ki] = rlx::kthvalue(x, 2, 1, true);
    CHECK(kv.sizes() == Dims{5, 1});
    CHECK(ki.sizes() == Dims{5, 1});
  });
}

TEST_CASE("mode matches torch: the smallest most frequent value and its last index") {
  auto fx = case_of("modes");
  on_both_backends([&] {
    for (const char* t : {"i", "f"})
      for (int64_t ax : {0, 1}) {
        std::string tag = std::string(t) + "_" + std::to_string(ax);
        auto [v, i] = rlx::mode(fx(std::string("x") + t), ax);
        expect_close(v, fx("want_val_" + tag), "mode values " + tag);
        expect_close(i, fx("want_idx_" + tag), "mode indices " + tag);
      }
    auto [v, i] = rlx::mode(fx("xf"), 0, true);
    CHECK(v.sizes() == Dims{1, 5});
  });
}

TEST_CASE("take_along_axis matches numpy with negative and broadcast indices, gather torch's") {
  auto fx = case_of("take_and_gather");
  Tensor x = fx("x");
  on_both_backends([&] {
    for (int64_t ax = 0; ax < 3; ++ax) {
      std::string a = std::to_string(ax);
      expect_close(rlx::take_along_axis(x, fx("idx_" + a), ax), fx("want_take_" + a),
                   "take_along_axis " + a);
      expect_close(rlx::take_along_axis(x, fx("bidx_" + a), ax), fx("want_take_b_" + a),
                   "take_along_axis broadcast " + a);
      expect_close(rlx::gather(x, ax, fx("gidx_" + a)), fx("want_gather_" + a), "gather " + a);
    }
  });
}

TEST_CASE("scatter_add, scatter, index_add and put_along_axis handle duplicate indices") {
  auto fx = case_of("scatters");
  Tensor x = fx("x"), src = fx("src");
  on_both_backends([&] {
    for (int64_t ax : {0, 1}) {
      std::string a = std::to_string(ax);
      Tensor idx = fx("idx_" + a);
      expect_close(rlx::scatter_add(x, ax, idx, src), fx("want_scatter_add_" + a),
                   "scatter_add " + a);
      expect_close(rlx::scatter(x, ax, idx, src), fx("want_scatter_" + a), "scatter " + a);
    }
    expect_close(rlx::index_add(x, 1, fx("iidx"), src), fx("want_index_add_1"), "index_add");
    expect_close(rlx::put_along_axis(x, fx("pidx"), fx("vals"), 1), fx("want_put_1"),
                 "put_along_axis");
  });
}

TEST_CASE("searchsorted matches numpy on both sides, with repeats, NaN and out-of-range values") {
  auto fx = case_of("searchsorted_sides");
  Tensor a = fx("a"), v = fx("v");
  on_both_backends([&] {
    expect_close(rlx::searchsorted(a, v), fx("want_left"), "left");
    expect_close(rlx::searchsorted(a, v, "right"), fx("want_right"), "right");
    expect_close(rlx::searchsorted(fx("ai"), fx("vi")), fx("want_int_left"), "i64 left");
    expect_close(rlx::searchsorted(fx("ai"), fx("vi"), "right"), fx("want_int_right"), "i64 right");
    expect_close(rlx::searchsorted(rlx::narrow(a, 0, 0, 1), v), fx("want_one"), "one entry");
  });
}

TEST_CASE("searchsorted is a binary search: its graph grows with log n, not n") {
  // One gather per halving: 2^12 sorted values take 13 halvings, not 4096 comparisons.
  Tensor a = rlx::arange(4096.0, DType::F32), v = rlx::tensor({3.5f, -1.f, 5000.f});
  Tensor r = rlx::searchsorted(a, v);
  CHECK(r.to_vector<int64_t>() == std::vector<int64_t>{4, 0, 4096});
}

TEST_CASE("unique matches numpy with inverse and counts, NaNs collapsed into one") {
  auto fx = case_of("unique_values");
  on_both_backends([&] {
    auto ri = rlx::unique(fx("xi"), true, true);
    expect_close(ri.values, fx("want_vi"), "values i64");
    expect_close(ri.inverse, fx("want_ii"), "inverse i64");
    expect_close(ri.counts, fx("want_ci"), "counts i64");
    auto rf = rlx::unique(fx("xf"), true, true);
    expect_close(rf.values, fx("want_vf"), "values f32");
    expect_close(rf.inverse, fx("want_if"), "inverse f32");
    expect_close(rf.counts, fx("want_cf"), "counts f32");
    CHECK_FALSE(rlx::unique(fx("xf")).inverse.defined());
  });
}

TEST_CASE("median, nanmedian, quantile and percentile match numpy") {
  auto fx = case_of("medians_and_quantiles");
  Tensor x = fx("x"), xn = fx("xn");
  on_both_backends([&] {
    expect_close(rlx::median(x), fx("want_median_all"), "median all");
    expect_close(rlx::median(x, 0), fx("want_median_0"), "median 0 (odd)");
    expect_close(rlx::median(x, -1), fx("want_median_1"), "median 1 (even)");
    expect_close(rlx::median(x, 1, true), fx("want_median_1_keep"), "median keepdims");
    expect_close(rlx::median(xn, 1), fx("want_median_nan_1"), "median with NaN");
    expect_close(rlx::nanmedian(xn, 0), fx("want_nanmedian_0"), "nanmedian 0");
    expect_close(rlx::nanmedian(xn, 1), fx("want_nanmedian_1"), "nanmedian 1");
    expect_close(rlx::nanmedian(xn), fx("want_nanmedian_all"), "nanmedian all");
    for (const char* m : {"linear", "lower", "higher", "midpoint"})
      expect_close(rlx::quantile(x, 0.3, 1, m), fx(std::string("want_q_") + m + "_1"),
                   std::string("quantile ") + m);
    expect_close(rlx::quantile(x, std::vector<double>{0.0, 0.25, 0.5, 0.9, 1.0}, 0),
                 fx("want_q_multi_0"), "quantile several q");
    expect_close(rlx::quantile(x, 0.7), fx("want_q_all"), "quantile all");
    expect_close(rlx::quantile(xn, 0.5, 1), fx("want_q_nan_1"), "quantile with NaN");
    expect_close(rlx::percentile(x, 37.5, 0), fx("want_pct_0"), "percentile");
  });
}

TEST_CASE("histogram and bincount match numpy") {
  auto fx = case_of("histograms_and_bincount");
  Tensor x = fx("x"), xi = fx("xi");
  on_both_backends([&] {
    auto [c0, e0] = rlx::histogram(x, 8);
    expect_close(c0, fx("want_counts_default"), "counts default range");
    expect_close(e0, fx("want_edges_default"), "edges default range");
    auto [c1, e1] = rlx::histogram(x, 5, std::pair{-1.0, 1.5});
    expect_close(c1, fx("want_counts_range"), "counts given range");
    expect_close(e1, fx("want_edges_range"), "edges given range");
    auto [c2, e2] = rlx::histogram(xi, 4);
    expect_close(c2, fx("want_counts_int"), "counts i64");
    expect_close(e2, fx("want_edges_int"), "edges i64", 1e-12, 1e-12);
    expect_close(rlx::bincount(xi), fx("want_bincount"), "bincount");
    expect_close(rlx::bincount(xi, fx("w")), fx("want_bincount_w"), "bincount weights", 1e-12,
                 1e-12);
    expect_close(rlx::bincount(xi, std::nullopt, 12), fx("want_bincount_min"),
                 "bincount minlength");
  });
}

TEST_CASE("gradients of sort, topk, gathers, scatters, quantile and median match torch in f64") {
  auto fx = case_of("gradients");
  Tensor x = fx("x"), src = fx("src");
  auto check = [&](const Tensor& got, const std::string& want) {
    expect_close(got, fx(want), want, 1e-12, 1e-12);
  };
  on_both_backends([&] {
    check(rlx::grad([&](Tensor t) { return (rlx::sort(t, 1, true) * fx("w_sort")).sum(); })(x),
          "want_d_sort");
    check(rlx::grad([&](Tensor t) { return (rlx::topk(t, 3, 1).first * fx("w_topk")).sum(); })(x),
          "want_d_topk");
    check(rlx::grad([&](Tensor t) {
            return (rlx::take_along_axis(t, fx("idx"), 1) * fx("w_take")).sum();
          })(x),
          "want_d_take");
    check(rlx::grad(
              [&](Tensor t) { return (rlx::gather(t, 0, fx("gidx")) * fx("w_gather")).sum(); })(x),
          "want_d_gather");
    auto sa = rlx::grad(
        [&](Tensor t, Tensor s) {
          return (rlx::scatter_add(t, 1, fx("sidx"), s) * fx("w_x")).sum();
        },
        {0, 1})(x, src);
    check(sa[0], "want_d_scatter_add_x");
    check(sa[1], "want_d_scatter_add_src");
    auto sc = rlx::grad(
        [&](Tensor t, Tensor s) { return (rlx::scatter(t, 1, fx("uidx"), s) * fx("w_x")).sum(); },
        {0, 1})(x, src);
    check(sc[0], "want_d_scatter_x");
    check(sc[1], "want_d_scatter_src");
    check(rlx::grad([&](Tensor t) { return (rlx::quantile(t, 0.3, 0) * fx("w_q")).sum(); })(x),
          "want_d_quantile");
    check(rlx::grad([&](Tensor t) { return (rlx::median(t, 1) * fx("w_m")).sum(); })(x),
          "want_d_median");
  });
}

TEST_CASE("the gradient of an embedding lookup into a [50000, 64] table stays O(indices + table)") {
  // gather's adjoint is a scatter_add: no node of the gradient graph holds more than the table
  // or the looked-up rows (a one-hot matrix would be [indices, 50000]).
  using namespace rlx::ir;
  const int64_t rows = 50000, dim = 64, n = 256;
  Graph g("embedding");
  NodeId table = g.param("table", Shape({rows, dim}, DType::F32));
  NodeId idx = g.input("idx", Shape({n}, DType::I64));
  NodeId y = g.gather_(table, idx, 0);
  NodeId loss = g.sum(g.mul(y, y), {0, 1}, false);
  g.set_outputs({loss});
  Graph back = rlx::autodiff::grad(g, {table});
  int64_t biggest = 0;
  for (const Node& node : back.nodes())
    if (auto e = node.shape.num_elements()) biggest = std::max(biggest, *e);
  CHECK(biggest <= rows * dim);
  bool scatter = false;
  for (const Node& node : back.nodes()) scatter |= node.op.kind() == OpKind::ScatterAdd;
  CHECK(scatter);
  // And it computes the right gradient: 2 * y added at each looked-up row (duplicates add).
  std::vector<int64_t> ids(static_cast<std::size_t>(n));
  for (int64_t i = 0; i < n; ++i) ids[std::size_t(i)] = (i * 7919) % 300; // repeats
  Tensor tab = rlx::randn({rows, dim}, 3), ix = Tensor::from_vector(ids, {n});
  Tensor d = rlx::grad([&](Tensor t) {
    Tensor e = rlx::take(t, ix, 0);
    return (e * e).sum();
  })(tab);
  Tensor want = rlx::index_add(rlx::zeros({rows, dim}), 0, ix, rlx::take(tab, ix, 0) * 2.f);
  expect_close(d, want, "embedding gradient", 1e-6, 1e-6);
}

TEST_CASE("the sorting ops trace inside rlx::jit; unique and bincount without minlength refuse") {
  auto fx = case_of("sort_axes");
  Tensor x = fx("x");
  auto f = rlx::jit([](Tensor t) { return rlx::sort(t, 1, true); });
  expect_close(f(x), rlx::sort(x, 1, true), "jit sort");
  auto h = rlx::jit([](Tensor t) { return rlx::bincount(t, std::nullopt, 9); });
  Tensor xi = Tensor::from_vector(std::vector<int64_t>{1, 1, 8, 0}, {4});
  CHECK(h(xi).to_vector<int64_t>() == std::vector<int64_t>{1, 2, 0, 0, 0, 0, 0, 0, 1});
  auto u = rlx::jit([](Tensor t) { return rlx::unique(t).values; });
  check_error([&] { (void)u(x); }, ErrorKind::Trace, "unique: the result's size depends");
  auto b = rlx::jit([](Tensor t) { return rlx::bincount(t); });
  check_error([&] { (void)b(xi); }, ErrorKind::Trace, "bincount: inside rlx::jit");
  // In a trace, a value at or above minlength is out of range when computed.
  auto small = rlx::jit([](Tensor t) { return rlx::bincount(t, std::nullopt, 4); });
  check_error([&] { (void)small(xi).to_vector<int64_t>(); }, ErrorKind::Value,
              "scatter_add: index 8 is out of range for axis 0 of size 4");
}

TEST_CASE("sorting and scattering errors name the function, the shapes and the caller's line") {
  Tensor x = rlx::ones({3, 4});
  Tensor i = Tensor::from_vector(std::vector<int64_t>{0, 1}, {1, 2});
  std::string line = "test_sort.cpp:";
  std::string m = check_error([&] { (void)rlx::topk(x, 5); }, ErrorKind::Value,
                              "topk: k = 5 is not in [0, 4] for axis -1 of f32[3,4]");
  CHECK(m.find(line) != std::string::npos);
  m = check_error([&] { (void)rlx::take_along_axis(x, rlx::ones({2, 2}), 1); }, ErrorKind::Type,
                  "take_along_axis: indices must be an integer tensor, got f32[2,2]");
  CHECK(m.find(line) != std::string::npos);
  check_error([&] { (void)rlx::gather(x, 1, rlx::zeros({4, 2}, DType::I64)); }, ErrorKind::Shape,
              "gather: index [4,2] is larger than x [3,4] on axis 0");
  check_error([&] { (void)rlx::take_along_axis(x, rlx::zeros({3}, DType::I64), 1); },
              ErrorKind::Shape, "take_along_axis: indices [3] must have the rank of x [3,4]");
  check_error([&] { (void)rlx::scatter_add(x, 0, i, rlx::ones({1, 1})); }, ErrorKind::Shape,
              "scatter_add: index [1,2] is larger than src [1,1] on axis 1");
  check_error([&] { (void)rlx::index_add(x, 0, i, rlx::ones({2, 4})); }, ErrorKind::Shape,
              "index_add: index must be 1-D, got [1,2]");
  check_error([&] { (void)rlx::searchsorted(x, x); }, ErrorKind::Shape,
              "searchsorted: sorted must be 1-D, got f32[3,4]");
  check_error([&] { (void)rlx::searchsorted(rlx::ones({3}), x, "middle"); }, ErrorKind::Value,
              "searchsorted: side must be \"left\" or \"right\"");
  check_error([&] { (void)rlx::quantile(x, 1.5); }, ErrorKind::Value,
              "quantile: quantiles must be in [0, 1]");
  check_error([&] { (void)rlx::quantile(x, 0.5, 0, "nearest"); }, ErrorKind::Unsupported,
              "quantile: method \"nearest\"");
  check_error([&] { (void)rlx::bincount(x); }, ErrorKind::Type,
              "bincount: x must be a 1-D integer tensor, got f32[3,4]");
  check_error([&] { (void)rlx::bincount(Tensor::from_vector(std::vector<int64_t>{1, -2}, {2})); },
              ErrorKind::Value, "bincount: x must be non-negative, got -2");
  check_error([&] { (void)rlx::sort(rlx::ones({})); }, ErrorKind::Value,
              "sort: needs a tensor of rank >= 1");
  // An index out of range is an error when the value is computed (take_along_axis flattens, so
  // the message names the flattened gather).
  Tensor bad = Tensor::from_vector(std::vector<int64_t>{0, 4}, {1, 2});
  on_both_backends([&] {
    check_error([&] { (void)rlx::take_along_axis(x, bad, 1).to_vector<float>(); }, ErrorKind::Value,
                "out of range");
    check_error(
        [&] {
          (void)rlx::index_add(x, 0, rlx::tensor({int64_t(3)}), rlx::ones({1, 4}))
              .to_vector<float>();
        },
        ErrorKind::Value, "scatter_add: index 3 is out of range for axis 0 of size 3");
  });
}

TEST_CASE("the IR ops' shape rules name the op and the shapes") {
  using namespace rlx::ir;
  Graph g("bad");
  NodeId x = g.input("x", Shape({3, 4}, DType::F32));
  NodeId i2 = g.input("i", Shape({2, 2}, DType::I64));
  NodeId i3 = g.input("j", Shape({5}, DType::I64));
  check_error([&] { (void)g.scatter_add(x, i2, 0, 7); }, ErrorKind::Shape,
              "scatter_add: indices must be 1-D, got rank 2 (operands f32[3,4], i64[2,2])");
  check_error([&] { (void)g.scatter_add(x, i3, 0, 7); }, ErrorKind::Shape,
              "scatter_add: updates have 3 rows along axis 0 but 5 indices");
  check_error([&] { (void)g.top_k(x, 5); }, ErrorKind::Shape, "top_k: k = 5 is not in [0, 4]");
  NodeId c = g.input("c", Shape({3}, DType::C64));
  check_error([&] { (void)g.argsort(c); }, ErrorKind::Type,
              "argsort: complex values have no order");
  CHECK(g.shape(g.scatter_add(x, g.input("k", Shape({4}, DType::F32)), 1, 9)) ==
        Shape({3, 9}, DType::F32));
  CHECK(g.shape(g.top_k(x, 2, false)) == Shape({3, 2}, DType::I64));
  CHECK(g.shape(g.argsort(x, true)) == Shape({3, 4}, DType::I64));
}
