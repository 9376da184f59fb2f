// tests/test_pytree.cpp -- pytrees (rlx/pytree.hpp) and the transforms on them: grad, vjp, jvp,
// vmap and jit over structs, containers and static values; closing over traced values across
// nested transforms; errors naming the caller's line.
#include "support/backends.hpp"
#include "support/check_error.hpp"

#include <rlx/rlx.hpp>

#include <doctest/doctest.h>

#include <array>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

using rlx::ErrorKind;
using rlx::Tensor;

namespace demo {

enum class Act { Tanh, Relu };

struct Layer {
  Tensor w, b;
  Act act = Act::Tanh;
};
RLX_PYTREE(Layer, w, b, act)

struct Model {
  std::vector<Layer> layers;
  std::map<std::string, Tensor> extra;
  std::optional<Tensor> scale;
  std::string name;
};
RLX_PYTREE(Model, layers, extra, scale, name)

} // namespace demo

namespace {

Tensor vec(std::vector<float> v) {
  auto n = int64_t(v.size());
  return Tensor::from_vector(v, {n});
}

std::vector<float> values(const Tensor& t) { return t.to_vector<float>(); }

void check_values(const Tensor& t, std::vector<float> want) {
  std::vector<float> got = values(t);
  REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < got.size(); ++i)
    CHECK(got[i] == doctest::Approx(want[i]).epsilon(1e-5));
}

template <class F>
void check_at(F&& f, ErrorKind kind, const std::string& needle, rlx::Loc at = rlx::Loc::current()) {
  std::string msg = rlx::test::check_error(std::forward<F>(f), kind, needle);
  INFO("message: " << msg);
  CHECK(msg.find("test_pytree.cpp:" + std::to_string(at.line())) != std::string::npos);
}

demo::Model small_model() {
  demo::Model m;
  m.layers.push_back({vec({1, 2}), vec({3}), demo::Act::Tanh});
  m.layers.push_back({vec({4}), vec({5}), demo::Act::Relu});
  m.extra = {{"z", vec({7})}, {"a", vec({6})}};
  m.scale = vec({8});
  m.name = "small";
  return m;
}

} // namespace

TEST_CASE("pytree: leaves come in member, element and key order") {
  std::vector<Tensor> ls = rlx::tree_leaves(small_model());
  REQUIRE(ls.size() == 7);
  std::vector<float> firsts;
  for (const Tensor& t : ls) firsts.push_back(values(t)[0]);
  // layers (w, b each), then the map by key ("a" before "z"), then scale.
  CHECK(firsts == std::vector<float>{1, 3, 4, 5, 6, 7, 8});
  auto mixed = std::tuple{vec({1}), 2.5f, std::array<Tensor, 2>{vec({3}), vec({4})},
                          std::pair{std::string("s"), vec({5})}};
  std::vector<Tensor> ml = rlx::tree_leaves(mixed);
  REQUIRE(ml.size() == 4);
  CHECK(values(ml[3])[0] == 5);
  CHECK(rlx::tree_leaves(std::tuple{1, 2.0, std::string("x")}).empty());
}

TEST_CASE("pytree: tree_unflatten rebuilds the structure and keeps static values") {
  demo::Model m = small_model();
  std::vector<Tensor> ls = rlx::tree_leaves(m);
  for (Tensor& t : ls) t = t * 10.0f;
  demo::Model r = rlx::tree_unflatten(m, ls);
  CHECK(r.name == "small");
  CHECK(r.layers[1].act == demo::Act::Relu);
  check_values(r.layers[0].w, {10, 20});
  check_values(r.extra.at("z"), {70});
  check_values(*r.scale, {80});
  ls.pop_back();
  check_at([&] { (void)rlx::tree_unflatten(m, ls); }, ErrorKind::Value,
           "tree_unflatten: the tree has 7 Tensor leaves but 6 were given");
}

TEST_CASE("pytree: tree_map applies a function leafwise over one or several trees") {
  demo::Model a = small_model();
  demo::Model b = rlx::tree_map([](const Tensor& t) { return t + 1.0f; }, a);
  demo::Model c = rlx::tree_map([](const Tensor& x, const Tensor& y) { return x * y; }, a, b);
  check_values(c.layers[0].w, {2, 6});
  check_values(c.extra.at("a"), {42});
  CHECK(c.name == "small");
  demo::Model other = a;
  other.layers.pop_back();
  rlx::test::check_error(
      [&] { (void)rlx::tree_map([](Tensor x, Tensor y) { return x + y; }, a, other); },
      ErrorKind::Value, "the trees must have one structure");
}

TEST_CASE("pytree: structures are equal exactly when containers and static values are") {
  demo::Model a = small_model(), b = small_model();
  b.layers[0].w = vec({9, 9, 9}); // other Tensors (even of other shapes): the same structure
  CHECK(rlx::tree_structure(a) == rlx::tree_structure(b));
  CHECK(rlx::tree_structure(a).num_leaves() == 7);
  b.layers[0].act = demo::Act::Relu;
  CHECK(!(rlx::tree_structure(a) == rlx::tree_structure(b)));
  b = small_model();
  b.name = "other";
  CHECK(!(rlx::tree_structure(a) == rlx::tree_structure(b)));
  b = small_model();
  b.scale.reset();
  CHECK(!(rlx::tree_structure(a) == rlx::tree_structure(b)));
  CHECK(!(rlx::tree_structure(std::tuple{1}) == rlx::tree_structure(std::tuple{1.0})));
  CHECK(!(rlx::tree_structure(std::vector<Tensor>{vec({1})}) ==
          rlx::tree_structure(std::vector<Tensor>{vec({1}), vec({1})})));
}

TEST_CASE("pytree: grad of a struct argument is a struct of its gradients") {
  rlx::test::on_both_backends([] {
    demo::Layer p{vec({1, 2}), vec({3}), demo::Act::Tanh};
    Tensor x = vec({5, 7});
    // loss = sum(w * x) + b^2 (+ a static factor): d/dw = x, d/db = 2b
    auto loss = [](const demo::Layer& l, const Tensor& x, int k) {
      return rlx::sum(l.w * x) * float(k) + rlx::sum(l.b * l.b);
    };
    demo::Layer g = rlx::grad(loss)(p, x, 1);
    check_values(g.w, {5, 7});
    check_values(g.b, {6});
    CHECK(g.act == demo::Act::Tanh);
    auto [v, gs] = rlx::value_and_grad(loss, rlx::argnums<0, 1>)(p, x, 2);
    check_values(v, {(5 + 14) * 2 + 9});
    check_values(std::get<0>(gs).w, {10, 14});
    check_values(std::get<1>(gs), {2, 4}); // d/dx = k w
    std::vector<Tensor> flat = rlx::grad(loss, {1, 0})(p, x, 1);
    REQUIRE(flat.size() == 3); // x, then the layer's w and b
    check_values(flat[0], {1, 2});
    check_values(flat[2], {6});
  });
}

TEST_CASE("pytree: grad over a map and a vector of layers reaches every leaf") {
  rlx::test::on_both_backends([] {
    std::map<std::string, Tensor> p{{"a", vec({1, 2})}, {"b", vec({3})}};
    auto loss = [](const std::map<std::string, Tensor>& q) {
      return rlx::sum(q.at("a") * q.at("a")) * rlx::sum(q.at("b"));
    };
    auto g = rlx::grad(loss)(p);
    check_values(g.at("a"), {6, 12}); // 2 a b
    check_values(g.at("b"), {5});     // |a|^2
  });
}

TEST_CASE("pytree: vjp returns the outputs and a pullback to every argument") {
  rlx::test::on_both_backends([] {
    Tensor a = vec({1, 2}), b = vec({3, 4});
    auto f = [](const Tensor& x, const std::vector<Tensor>& ys) {
      return std::pair{x * ys[0], rlx::sum(x + ys[0])};
    };
    auto [out, pull] = rlx::vjp(f, std::tuple{a, std::vector<Tensor>{b}});
    check_values(out.first, {3, 8});
    check_values(out.second, {10});
    auto [ga, gys] = pull(std::pair{vec({1, 10}), rlx::full({}, 2.0, rlx::DType::F32)});
    // d/dx <c1, x y> + c2 sum(x + y) = c1 y + c2; d/dy = c1 x + c2
    check_values(ga, {5, 42});
    REQUIRE(gys.size() == 1);
    check_values(gys[0], {3, 22});
  });
}

TEST_CASE("pytree: jvp pushes tangents of tuples of trees forward") {
  rlx::test::on_both_backends([] {
    demo::Layer p{vec({1, 2}), vec({3}), demo::Act::Relu};
    demo::Layer t{vec({1, 0}), vec({1}), demo::Act::Relu};
    auto f = [](const demo::Layer& l) { return std::vector<Tensor>{l.w * l.w, l.b * 2.0f}; };
    auto [ys, ts] = rlx::jvp(f, std::tuple{p}, std::tuple{t});
    check_values(ys[0], {1, 4});
    check_values(ts[0], {2, 0}); // 2 w t_w
    check_values(ts[1], {2});
  });
}

TEST_CASE("pytree: vmap maps the axes in_axes names and shares the others") {
  rlx::test::on_both_backends([] {
    Tensor xs = Tensor::from_vector(std::vector<float>{1, 2, 3, 4, 5, 6}, {2, 3}); // mapped on 1
    demo::Layer shared{vec({10, 100}), vec({1}), demo::Act::Tanh};
    auto f = [](const Tensor& col, const demo::Layer& l, float k) {
      return rlx::sum(col * l.w) * k + l.b;
    };
    Tensor r = rlx::vmap(f, {1, std::nullopt, std::nullopt})(xs, shared, 2.0f);
    REQUIRE(r.sizes() == rlx::Dims{3, 1});
    // column j is (x[0, j], x[1, j]): (1, 4) -> 2 * (10 + 400) + 1, ...
    check_values(r, {821, 1041, 1261});
  });
}

TEST_CASE("pytree: jit traces again for a new static value and returns pytrees") {
  rlx::test::on_both_backends([] {
    auto f = rlx::jit([](const demo::Layer& l, int k, const std::string& mode) {
      Tensor y = mode == "double" ? l.w * 2.0f : l.w;
      return demo::Layer{y * float(k), l.b + float(k), l.act};
    });
    demo::Layer p{vec({1, 2}), vec({3}), demo::Act::Relu};
    demo::Layer r = f(p, 2, std::string("double"));
    check_values(r.w, {4, 8});
    check_values(r.b, {5});
    CHECK(r.act == demo::Act::Relu);
    (void)f(p, 2, std::string("double"));
    CHECK(f.stats().traces == 1);
    check_values(f(p, 3, std::string("double")).w, {6, 12}); // a new k: a new trace
    CHECK(f.stats().traces == 2);
    check_values(f(p, 3, std::string("single")).w, {3, 6});
    CHECK(f.stats().traces == 3);
    p.act = demo::Act::Tanh; // an enum is static too
    CHECK(f(p, 3, std::string("single")).act == demo::Act::Tanh);
    CHECK(f.stats().traces == 4);
    (void)f(demo::Layer{vec({5, 6}), vec({7}), demo::Act::Tanh}, 3, std::string("single"));
    CHECK(f.stats().traces == 4); // new data, same structure: replayed
  });
}

TEST_CASE("pytree: grad inside jit closes over the jit's minibatch") {
  rlx::test::on_both_backends([] {
    auto step = rlx::jit([](const demo::Layer& p, const Tensor& xb) {
      // The loss captures xb, a placeholder of the enclosing jit trace.
      auto loss = [&](const demo::Layer& q) { return rlx::sum(q.w * xb) + rlx::sum(q.b * xb); };
      return rlx::grad(loss)(p);
    });
    demo::Layer p{vec({1, 2}), vec({3}), demo::Act::Tanh};
    demo::Layer g = step(p, vec({5, 7}));
    check_values(g.w, {5, 7});
    check_values(g.b, {12});
    g = step(p, vec({-1, 2})); // the next minibatch: replayed with its values
    check_values(g.w, {-1, 2});
    check_values(g.b, {1});
    CHECK(step.stats().traces == 1);
  });
}

TEST_CASE("pytree: grad of grad capturing the primal differentiates through the capture") {
  rlx::test::on_both_backends([] {
    Tensor x = vec({1, 2, 3});
    // inner(y) = sum(x y^2) captures x; d/dy = 2 x y; at y = x that is 2 x^2, whose
    // derivative in x is 4x (2x would mean the capture was treated as a constant).
    auto outer = [](const Tensor& x) {
      auto inner = [&](const Tensor& y) { return rlx::sum(x * y * y); };
      return rlx::sum(rlx::grad(inner)(x));
    };
    check_values(rlx::grad(outer)(x), {4, 8, 12});
  });
}

TEST_CASE("pytree: a jitted function called inside a trace is inlined") {
  rlx::test::on_both_backends([] {
    auto cube = rlx::jit([](const Tensor& t) { return t * t * t; });
    Tensor x = vec({1, 2});
    Tensor g = rlx::grad([&](const Tensor& v) { return rlx::sum(cube(v)); })(x);
    check_values(g, {3, 12});
    // Untraced arguments, but the function captures the enclosing trace's value.
    Tensor c = vec({5, 7});
    Tensor g2 = rlx::grad([&](const Tensor& v) {
      return rlx::jit([&](const Tensor& k) { return rlx::sum(k * v * v); })(c);
    })(x);
    check_values(g2, {10, 28});
    CHECK(cube.stats().traces == 0); // traced as part of grad's trace, never on its own
    CHECK(cube.stats().compiles == 0);
  });
}

TEST_CASE("pytree: errors name the caller's line, also inside nested traces") {
  Tensor t = rlx::ones({3, 2});
  check_at([&] { (void)t[10]; }, ErrorKind::Value, "out of range");
  auto f = rlx::jit([](const Tensor& x) {
    return rlx::grad([](const Tensor& y) { return rlx::sum(y * rlx::ones({4})); })(x);
  });
  int line = __LINE__ - 2; // the failing multiplication
  std::string msg =
      rlx::test::check_error([&] { (void)f(rlx::ones({3})); }, ErrorKind::Shape, "mul");
  CHECK(msg.find("test_pytree.cpp:" + std::to_string(line)) != std::string::npos);
  auto sum_y = [](const Tensor& y, const Tensor&) { return rlx::sum(y); };
  check_at([&] { (void)rlx::grad(sum_y, {2})(t, t); }, ErrorKind::Value,
           "grad: argnum 2 is out of range");
  demo::Layer int_bias{rlx::ones({2}), rlx::ones({1}, rlx::DType::I64), demo::Act::Tanh};
  auto sum_w = [](const demo::Layer& l) { return rlx::sum(l.w); };
  check_at([&] { (void)rlx::grad(sum_w)(int_bias); }, ErrorKind::Type,
           "grad: argument 0 (leaf 1) is i64[1]");
}
