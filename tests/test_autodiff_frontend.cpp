// tests/test_autodiff_frontend.cpp -- rlx::grad, value_and_grad, jvp and vmap on Tensor code:
// values against hand-derived derivatives, nesting, composition with rlx::jit, errors; and the
// graph-level vmap against a loop over the batch.
#include "support/check_error.hpp"
#include "support/random.hpp"

#include <rlx/all.hpp>

#include <cmath>

using namespace rlx;

namespace {

Tensor vec(std::vector<double> v) {
  int64_t n = int64_t(v.size());
  return Tensor::from_vector(v, {n});
}

void check_all_close(const std::vector<double>& got, const std::vector<double>& want,
                     double tol = 1e-12) {
  REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    INFO("element ", i, ": ", got[i], " vs ", want[i]);
    CHECK(std::abs(got[i] - want[i]) <= tol * (1 + std::abs(want[i])));
  }
}

} // namespace

TEST_CASE("grad of a Tensor function is its derivative") {
  auto f = [](Tensor x) { return sum(x * x * x); }; // d/dx = 3 x^2
  Tensor x = vec({1, -2, 0.5});
  check_all_close(grad(f)(x).to_vector<double>(), {3, 12, 0.75});
}

TEST_CASE("value_and_grad returns the value and the gradients of the chosen arguments") {
  auto f = [](Tensor w, Tensor x, Tensor b) { return sum(tanh(matmul(x, w)) * b); };
  Tensor w = Tensor(test::random_buffer(Shape({3, 2}, DType::F64), 1));
  Tensor x = Tensor(test::random_buffer(Shape({4, 3}, DType::F64), 2));
  Tensor b = vec({0.5, -1.5});
  auto [value, grads] = value_and_grad(f, {0, 2})(w, x, b);
  REQUIRE(grads.size() == 2);
  CHECK(value.item<double>() == f(w, x, b).item<double>());
  // d/db = sum over rows of tanh(x w); d/dw = x^T ((1 - tanh^2) * b).
  Tensor t = tanh(matmul(x, w));
  check_all_close(grads[1].to_vector<double>(), sum(t, {0}).to_vector<double>());
  check_all_close(grads[0].to_vector<double>(),
                  matmul(transpose(x), (1.0 - t * t) * b).to_vector<double>());
  auto [v1, g1] = value_and_grad(f)(w, x, b);
  CHECK(v1.item<double>() == value.item<double>());
  check_all_close(g1.to_vector<double>(), grads[0].to_vector<double>());
}

TEST_CASE("grad nests: the second derivative of x^3 is 6x") {
  auto f = [](Tensor x) { return sum(x * x * x); };
  auto d2 = grad([&](Tensor x) { return sum(grad(f)(x)); });
  check_all_close(d2(vec({2.0})).to_vector<double>(), {12});
}

TEST_CASE("grad composes with rlx::jit in both orders") {
  auto f = [](Tensor x) { return mean(exp(x) * x); }; // d/dx = e^x (1 + x) / n
  Tensor x = vec({0.1, 0.2, -0.3, 1.0});
  std::vector<double> want;
  for (double v : x.to_vector<double>()) want.push_back(std::exp(v) * (1 + v) / 4);
  auto jg = jit(grad(f));
  check_all_close(jg(x).to_vector<double>(), want);
  check_all_close(jg(x).to_vector<double>(), want);
  CHECK(jg.stats().traces == 1);
  CHECK(jg.stats().cache_hits == 1);
  auto gj = grad(jit(f));
  check_all_close(gj(x).to_vector<double>(), want);
}

TEST_CASE("jvp gives the outputs and their tangents") {
  auto f = [](Tensor x, Tensor y) { return std::pair(sin(x) * y, sum(y)); };
  Tensor x = vec({0.1, 1.0, -2.0}), y = vec({2, 3, 4});
  Tensor tx = vec({1, 0, 2}), ty = vec({0.5, 0.5, -1});
  auto [outs, tans] = rlx::jvp(f, {x, y}, {tx, ty});
  REQUIRE(outs.size() == 2);
  REQUIRE(tans.size() == 2);
  std::vector<double> want;
  auto xv = x.to_vector<double>(), yv = y.to_vector<double>(), txv = tx.to_vector<double>(),
       tyv = ty.to_vector<double>();
  for (std::size_t i = 0; i < 3; ++i)
    want.push_back(std::cos(xv[i]) * txv[i] * yv[i] + std::sin(xv[i]) * tyv[i]);
  check_all_close(tans[0].to_vector<double>(), want);
  check_all_close(tans[1].to_vector<double>(), {0});
  check_all_close(outs[1].to_vector<double>(), {9});
}

TEST_CASE("vmap maps a function over the leading axis, sharing what it captures") {
  Tensor w = Tensor(test::random_buffer(Shape({3, 4}, DType::F64), 3));
  auto f = [&](Tensor x) {
    return softmax(matmul(x, w)) +
           layer_norm(x, ones({3}, DType::F64), zeros({3}, DType::F64)).sum();
  };
  Tensor xb = Tensor(test::random_buffer(Shape({5, 2, 3}, DType::F64), 4));
  Tensor yb = vmap(f)(xb);
  REQUIRE(yb.sizes() == Dims{5, 2, 4});
  for (int64_t i = 0; i < 5; ++i) {
    INFO("batch element ", i);
    check_all_close(yb[i].to_vector<double>(), f(xb[i]).to_vector<double>());
  }
}

TEST_CASE("the frontend transforms report misuse with the caller's line") {
  Tensor x = vec({1, 2});
  std::string msg =
      test::check_error([&] { grad([](Tensor t) { return t * 2.0; })(x); }, ErrorKind::Value,
                        "one floating-point element, it returned f64[2]");
  CHECK(msg.find("test_autodiff_frontend.cpp") != std::string::npos);
  Tensor i = Tensor::from_vector(std::vector<int64_t>{1, 2}, {2});
  test::check_error([&] { grad([](Tensor t) { return sum(cast(t, DType::F64)); })(i); },
                    ErrorKind::Type, "argument 0 is i64[2]");
  test::check_error([&] { grad([](Tensor t) { return sum(t); }, {1})(x); }, ErrorKind::Value,
                    "argnum 1 is out of range");
  test::check_error([&] { vmap([](Tensor a, Tensor b) { return a + b; })(x, vec({1, 2, 3})); },
                    ErrorKind::Shape, "leading axis of one size");
}

namespace {

/// Run with each feed given as an Input or a Param, as the graph declares it.
std::vector<Buffer> run_split(const ir::Graph& g, const interp::Feed& all) {
  interp::Feed inputs, params;
  for (const ir::Node& n : g.nodes()) {
    if (n.op.kind() != ir::OpKind::Input && n.op.kind() != ir::OpKind::Param) continue;
    const std::string& name = n.op.attrs<ir::LeafAttrs>().name;
    (n.op.kind() == ir::OpKind::Input ? inputs : params)[name] = all.at(name);
  }
  return interp::run(g, inputs, params);
}

/// vmap of a graph: run the batched graph, and the original once per element, and compare.
void check_vmap(const ir::Graph& g, const std::vector<std::string>& batched, int64_t batch,
                interp::Feed shared_feeds) {
  ir::Graph gb = autodiff::vmap(g, batched, batch);
  interp::Feed feeds = shared_feeds;
  for (const std::string& name : batched) {
    ir::Shape s = g.shape(*g.input_id(name));
    std::vector<int64_t> d = s.sizes();
    d.insert(d.begin(), batch);
    feeds[name] = test::random_buffer(ir::Shape::of(d, s.dtype()), name.size() + 17);
  }
  std::vector<Buffer> r = run_split(gb, feeds);
  REQUIRE(r.size() == g.outputs.size());
  for (int64_t k = 0; k < batch; ++k) {
    interp::Feed one = shared_feeds;
    for (const std::string& name : batched) {
      const Buffer& b = feeds[name];
      ir::Shape s = g.shape(*g.input_id(name));
      Buffer slice(s);
      for (int64_t i = 0; i < slice.numel(); ++i)
        slice.set_f64(i, b.get_f64(k * slice.numel() + i));
      one[name] = std::move(slice);
    }
    std::vector<Buffer> y = run_split(g, one);
    for (std::size_t o = 0; o < y.size(); ++o) {
      INFO("output ", o, " batch element ", k);
      REQUIRE(r[o].numel() == batch * y[o].numel());
      for (int64_t i = 0; i < y[o].numel(); ++i)
        CHECK(r[o].get_f64(k * y[o].numel() + i) ==
              doctest::Approx(y[o].get_f64(i)).epsilon(1e-12));
    }
  }
}

} // namespace

TEST_CASE("vmap of a graph equals running it once per batch element") {
  using namespace rlx::ir;
  Graph g("v");
  NodeId x = g.input("x", Shape({2, 3}, DType::F64));
  NodeId s = g.input("s", Shape({3}, DType::F64));
  NodeId w = g.param("w", Shape({3, 4}, DType::F64));
  NodeId h = g.mm(g.add(x, s), w);                        // element-wise with broadcast, matmul
  NodeId sm = g.sm(h, -1);                                // softmax
  NodeId r = g.sum(g.transpose_(sm, {1, 0}), {1}, false); // transpose, reduce
  NodeId c = g.concat_({g.narrow_(h, 1, 1, 3), g.reshape_(s, {1, 3})},
                       0); // narrow, concat with a shared part
  NodeId img = g.reshape_(g.narrow_(h, 1, 0, 4), {1, 2, 2, 2});
  NodeId pooled = g.add_inferred(Op(OpKind::MaxPool2d, Pool2dAttrs{{2, 2}, {1, 1}, {0, 0}}),
                                 {img});   // no rule: loop
  g.set_outputs({r, c, pooled, g.exp(s)}); // the last one is shared
  interp::Feed shared;
  shared["w"] = test::random_buffer(g.shape(w), 5);
  shared["s"] = test::random_buffer(g.shape(s), 6);
  check_vmap(g, {"x"}, 3, shared);
  CHECK(autodiff::has_batching_rule(OpKind::MatMul));
  CHECK(!autodiff::has_batching_rule(OpKind::MaxPool2d));
}
