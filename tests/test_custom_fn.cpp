// tests/test_custom_fn.cpp -- custom_fn and custom_fn_multi: values, override AD bodies (used by
// grad and jvp, the conventions of RLX), inlining, the text and JSON forms of the bodies,
// CSE, symbolic bodies, the JIT against the interpreter, and builder errors.
#include "support/check_error.hpp"

#include "ir/attr_value.hpp"

#include <rlx/all.hpp>
#include <rlx/autodiff.hpp>

#include <cmath>

using namespace rlx;
using namespace rlx::ir;

namespace {

const Shape kS({2, 3}, DType::F32);

Buffer values(const Shape& s, double phase) {
  Buffer b(s);
  for (int64_t i = 0; i < b.numel(); ++i) b.set_f64(i, 1.7 * std::sin(0.9 * double(i) + phase));
  return b;
}

/// f(x, y) = tanh(x) * y + x, over shape s.
Graph tanh_body(const Shape& s) {
  Graph f("f");
  NodeId x = f.input("x", s), y = f.input("y", s);
  f.set_outputs({f.add(f.mul(f.tanh(x), y), x)});
  return f;
}

/// clamp(x, -1, 1) with the straight-through gradient: d_output passes unchanged.
Graph clip_body(const Shape& s) {
  Graph f("clip");
  f.set_outputs({f.clamp(f.input("x", s), -1.0, 1.0)});
  return f;
}
Graph straight_through(const Shape& s) {
  Graph v("straight_through");
  v.input("x", s);
  v.input("primal_output", s);
  v.set_outputs({v.input("d_output", s)});
  return v;
}

std::size_t count(const Graph& g, OpKind k) {
  return std::size_t(std::count_if(g.nodes().begin(), g.nodes().end(),
                                   [k](const Node& n) { return n.op.kind() == k; }));
}

} // namespace

TEST_CASE("custom_fn computes its fwd_body on its operands, inlined or not") {
  Graph g("g");
  NodeId x = g.input("x", kS), y = g.input("y", kS);
  NodeId c = g.custom_fn({x, y}, tanh_body(kS));
  CHECK(g.shape(c) == kS);
  g.set_outputs({g.mul(c, y)});
  Buffer xv = values(kS, 0), yv = values(kS, 1);
  auto out = interp::run(g, {{"x", xv}, {"y", yv}});
  for (int64_t i = 0; i < xv.numel(); ++i) {
    double a = xv.get_f64(i), b = yv.get_f64(i);
    float want = float((double(float(float(std::tanh(a)) * b)) + a)) * float(b);
    CHECK(out[0].get_f64(i) == doctest::Approx(want).epsilon(1e-6));
  }
  Graph inlined = g;
  CHECK(passes::inline_custom_fn(inlined));
  CHECK(count(inlined, OpKind::CustomFn) == 0);
  CHECK(count(inlined, OpKind::Tanh) == 1);
  CHECK_FALSE(passes::inline_custom_fn(inlined)); // nothing left to do
  CHECK(interp::run(inlined, {{"x", xv}, {"y", yv}}) == out);
}

TEST_CASE("grad uses the custom vjp_body even where it differs from the true gradient") {
  Graph g("g");
  NodeId x = g.input("x", kS), w = g.input("w", kS);
  NodeId c = g.custom_fn({x}, clip_body(kS), straight_through(kS));
  g.set_outputs({g.sum(g.mul(c, w), {0, 1}, false)});
  Graph gg = autodiff::grad(g, {x});
  Buffer xv = values(kS, 0.3), wv = values(kS, 2);
  auto out = interp::run(
      gg, {{"x", xv}, {"w", wv}, {"d_output", Buffer::f32({}, std::vector<float>{1.f})}});
  REQUIRE(out.size() == 1);
  int clipped = 0;
  for (int64_t i = 0; i < xv.numel(); ++i) {
    clipped += std::fabs(xv.get_f64(i)) > 1;
    CHECK(out[0].get_f64(i) == wv.get_f64(i)); // the true gradient is 0 where |x| > 1
  }
  CHECK(clipped > 0);
  // Without the override the gradient is the clamp's: zero outside [-1, 1].
  Graph plain("plain");
  NodeId px = plain.input("x", kS), pw = plain.input("w", kS);
  plain.set_outputs(
      {plain.sum(plain.mul(plain.custom_fn({px}, clip_body(kS)), pw), {0, 1}, false)});
  auto true_grad =
      interp::run(autodiff::grad(plain, {px}),
                  {{"x", xv}, {"w", wv}, {"d_output", Buffer::f32({}, std::vector<float>{1.f})}});
  for (int64_t i = 0; i < xv.numel(); ++i)
    CHECK(true_grad[0].get_f64(i) == (std::fabs(xv.get_f64(i)) > 1 ? 0.0 : wv.get_f64(i)));
}

TEST_CASE("a vjp_body receives the primal inputs in id order, primal_output and d_output") {
  // y = x0 * x1; the vjp_body returns [2 * primal_output * d, x0 * d] (not the true gradient),
  // so each binding shows in the result.
  Shape s({4}, DType::F64);
  Graph f("f");
  NodeId a = f.input("a", s), b = f.input("b", s);
  f.set_outputs({f.mul(a, b)});
  Graph v("v");
  NodeId d = v.input("d_output", s); // the special names may come first
  NodeId va = v.input("a", s);
  v.input("b", s);
  NodeId p = v.input("primal_output", s);
  v.set_outputs({v.mul(v.add(p, p), d), v.mul(va, d)});
  Graph g("g");
  NodeId x0 = g.input("x0", s), x1 = g.input("x1", s);
  g.set_outputs({g.custom_fn({x0, x1}, f, v)});
  Graph vj = autodiff::vjp(g, std::vector<NodeId>{x0, x1});
  Buffer u = Buffer::from_f64(s, std::vector<double>{1, -2, 0.5, 3});
  Buffer w = Buffer::from_f64(s, std::vector<double>{2, 0.25, -1, 4});
  Buffer dy = Buffer::from_f64(s, std::vector<double>{1, 2, 3, -1});
  auto out = interp::run(vj, {{"x0", u}, {"x1", w}, {"d_output", dy}});
  REQUIRE(out.size() == 3);
  for (int64_t i = 0; i < 4; ++i) {
    double uu = u.get_f64(i), ww = w.get_f64(i), dd = dy.get_f64(i);
    CHECK(out[0].get_f64(i) == uu * ww);
    CHECK(out[1].get_f64(i) == 2 * uu * ww * dd);
    CHECK(out[2].get_f64(i) == uu * dd);
  }
}

TEST_CASE("without vjp_body the gradient equals the inlined graph's and central differences") {
  Shape s({3, 2}, DType::F64);
  Graph g("g");
  NodeId x = g.input("x", s), y = g.input("y", s);
  g.set_outputs({g.sum(g.custom_fn({x, y}, tanh_body(s)), {0, 1}, false)});
  Graph inl = g;
  passes::inline_custom_fn(inl);
  Buffer xv = values(s, 0), yv = values(s, 0.5);
  interp::Feed feed{{"x", xv},
                    {"y", yv},
                    {"d_output", Buffer::from_f64(Shape({}, DType::F64), std::vector<double>{1})}};
  auto got = interp::run(autodiff::grad(g, {x, y}), feed);
  auto want = interp::run(autodiff::grad(inl, {*inl.input_id("x"), *inl.input_id("y")}), feed);
  REQUIRE(got.size() == 2);
  CHECK(got == want);
  for (int64_t i = 0; i < xv.numel(); ++i) {
    const double h = 1e-6;
    Buffer xp = xv, xm = xv;
    xp.set_f64(i, xv.get_f64(i) + h);
    xm.set_f64(i, xv.get_f64(i) - h);
    double fp = interp::run(g, {{"x", xp}, {"y", yv}})[0].get_f64(0);
    double fm = interp::run(g, {{"x", xm}, {"y", yv}})[0].get_f64(0);
    CHECK(got[0].get_f64(i) == doctest::Approx((fp - fm) / (2 * h)).epsilon(1e-7));
  }
}

TEST_CASE("jvp uses the custom jvp_body, and differentiates fwd_body without one") {
  Shape s({5}, DType::F64);
  Graph f("square");
  NodeId a = f.input("a", s);
  f.set_outputs({f.mul(a, a)});
  Graph j("three_t"); // deliberately not 2 a t
  j.input("a", s);
  NodeId t = j.input("tangent_0", s);
  j.set_outputs({j.mul(t, j.constant(3.0, DType::F64))});
  Buffer xv = Buffer::from_f64(s, std::vector<double>{1, -2, 0.5, 3, 0});
  Buffer tv = Buffer::from_f64(s, std::vector<double>{1, 1, 2, -1, 4});
  for (bool custom : {true, false}) {
    INFO("custom jvp_body: " << custom);
    Graph g("g");
    NodeId x = g.input("x", s);
    g.set_outputs(
        {g.custom_fn({x}, f, std::nullopt, custom ? std::optional<Graph>(j) : std::nullopt)});
    auto out = interp::run(autodiff::jvp(g, {x}), {{"x", xv}, {"tangent_x", tv}});
    REQUIRE(out.size() == 2);
    for (int64_t i = 0; i < 5; ++i) {
      double xx = xv.get_f64(i), tt = tv.get_f64(i);
      CHECK(out[0].get_f64(i) == xx * xx);
      CHECK(out[1].get_f64(i) == (custom ? 3 * tt : 2 * xx * tt));
    }
  }
}

TEST_CASE("custom_fn_multi's outputs equal the body's outputs") {
  Graph f("two");
  NodeId x = f.input("x", kS);
  NodeId y = f.input("y", Shape({3}, DType::F32));
  NodeId s1 = f.add_inferred(Op(OpKind::Sin), {f.mul(x, y)});
  NodeId s2 = f.sum(x, {0, 1}, false);
  NodeId s3 = f.reshape_(f.exp(y), {3, 1});
  f.set_outputs({s1, s2, s3});
  Graph g("g");
  NodeId gx = g.input("x", kS), gy = g.input("y", Shape({3}, DType::F32));
  MultiOutputHandle h = g.custom_fn_multi({gx, gy}, f);
  CHECK(h.len() == 3);
  CHECK(g.shape(h.source) == Shape({10}, DType::F32));
  std::vector<NodeId> outs;
  for (std::size_t i = 0; i < h.len(); ++i) outs.push_back(h.output(g, i));
  CHECK(g.shape(outs[0]) == kS);
  CHECK(g.shape(outs[1]) == Shape({}, DType::F32));
  CHECK(g.shape(outs[2]) == Shape({3, 1}, DType::F32));
  g.set_outputs(outs);
  interp::Feed feed{{"x", values(kS, 0)}, {"y", values(Shape({3}, DType::F32), 1)}};
  CHECK(interp::run(g, feed) == interp::run(f, feed));
  test::check_error([&] { h.output(g, 3); }, ErrorKind::Value, "index 3 is out of range");
}

TEST_CASE("text and JSON round trips keep the bodies, and CSE merges only equal bodies") {
  Graph g("g");
  NodeId x = g.input("x", kS), y = g.input("y", kS);
  Graph other = tanh_body(kS);
  other.set_outputs({other.mul(*other.input_id("x"), *other.input_id("y"))});
  NodeId c1 = g.custom_fn({x, y}, tanh_body(kS));
  NodeId c2 = g.custom_fn({x, y}, other);
  NodeId c3 = g.custom_fn({x, y}, tanh_body(kS));
  NodeId clip = g.custom_fn({c1}, clip_body(kS), straight_through(kS));
  g.set_outputs({g.add(g.add(c1, c2), g.add(c3, clip))});
  std::string text = to_text(g);
  INFO(text);
  CHECK(text.find("fwd_body=graph @f {") != std::string::npos);
  CHECK(text.find("vjp_body=graph @straight_through {") != std::string::npos);
  Graph back = parse_text(text);
  CHECK(back == g);
  CHECK(to_text(back) == text);
  CHECK(from_json(to_json(g)) == g);
  CHECK(from_json(to_json(g, true)) == g);
  // Different bodies are different ops; equal ones hash and compare alike.
  CHECK_FALSE(g.node(c1).op == g.node(c2).op);
  CHECK(g.node(c1).op == g.node(c3).op);
  CHECK(ir::detail::hash_op(g.node(c1).op) == ir::detail::hash_op(g.node(c3).op));
  CHECK(ir::detail::hash_op(g.node(c1).op) != ir::detail::hash_op(g.node(c2).op));
  Graph merged = g;
  CHECK(passes::cse(merged));
  CHECK(count(merged, OpKind::CustomFn) == 3); // c3 merged into c1, c2 kept
}

TEST_CASE("a body with symbols takes the operands' sizes, static or symbolic, and binds") {
  Shape sym({Dim::dynamic("cf_n")}, DType::F32);
  Graph f("f");
  NodeId a = f.input("a", sym);
  f.set_outputs({f.exp(a)});
  Graph g("g");
  NodeId x = g.input("x", Shape({4}, DType::F32));
  NodeId s = g.input("s", Shape({Dim::dynamic(sym::kSeq)}, DType::F32));
  NodeId cx = g.custom_fn({x}, f), cs = g.custom_fn({s}, f);
  CHECK(g.shape(cx) == Shape({4}, DType::F32));
  CHECK(g.shape(cs) == g.shape(s));
  g.set_outputs({cx, cs});
  Graph b = g.bind(DimBinding{{sym::kSeq, 3}});
  CHECK(b.shape(b.outputs[1]) == Shape({3}, DType::F32));
  Buffer xv = values(Shape({4}, DType::F32), 0), sv = values(Shape({3}, DType::F32), 1);
  auto out = interp::run(b, {{"x", xv}, {"s", sv}});
  for (int64_t i = 0; i < 3; ++i)
    CHECK(out[1].get_f64(i) == double(float(std::exp(double(float(sv.get_f64(i)))))));
  // An output dim the Inputs do not determine.
  Graph bad("bad");
  NodeId ba = bad.input("a", Shape({4}, DType::F32));
  bad.set_outputs({bad.reshape(ba, {-1}, Shape({Dim::dynamic("cf_free")}, DType::F32))});
  test::check_error([&] { g.custom_fn({x}, bad); }, ErrorKind::Shape,
                    "which its Inputs do not determine");
}

TEST_CASE("the JIT computes what the interpreter computes on graphs with custom_fn") {
  Graph g("g");
  NodeId x = g.input("x", Shape({64, 33}, DType::F32)),
         y = g.input("y", Shape({64, 33}, DType::F32));
  Graph outer("outer");
  NodeId p = outer.input("p", Shape({64, 33}, DType::F32));
  outer.set_outputs({outer.relu(outer.custom_fn({p, p}, tanh_body(Shape({64, 33}, DType::F32))))});
  NodeId c = g.custom_fn({x, y}, tanh_body(Shape({64, 33}, DType::F32)));
  g.set_outputs({g.custom_fn({c}, outer), g.sum(c, {1}, false)});
  std::vector<Buffer> leaves{values(g.shape(x), 0), values(g.shape(y), 2)};
  std::vector<const Buffer*> ptrs{&leaves[0], &leaves[1]};
  auto jit = rlx::compile(g, Backend::Jit)->run(ptrs);
  auto ref = rlx::compile(g, Backend::Interp)->run(ptrs);
  auto direct = interp::run_leaves(g, ptrs); // un-inlined, through the kernel
  REQUIRE(jit.size() == 2);
  for (std::size_t o = 0; o < 2; ++o)
    for (int64_t i = 0; i < ref[o].numel(); ++i) {
      CHECK(jit[o].get_f64(i) == doctest::Approx(ref[o].get_f64(i)).epsilon(1e-5));
      CHECK(direct[o].get_f64(i) == ref[o].get_f64(i));
    }
}

TEST_CASE("custom_fn errors name the op, the shapes and the caller's line") {
  Graph g("g");
  NodeId x = g.input("x", kS), y = g.input("y", kS);
  NodeId v = g.input("v", Shape({3}, DType::F32));
  std::size_t before = g.len();
  std::string m =
      test::check_error([&] { g.custom_fn({x}, tanh_body(kS)); }, ErrorKind::Shape,
                        "custom_fn: fwd_body @f has 2 Inputs, the call gives 1 operand");
  CHECK(m.find("f32[2,3]") != std::string::npos);
  CHECK(m.find("test_custom_fn.cpp") != std::string::npos);
  test::check_error([&] { g.custom_fn({x, v}, tanh_body(kS)); }, ErrorKind::Shape,
                    "operand 1 is f32[3] but fwd_body's Input \"y\" is f32[2,3]");
  Graph no_d("no_d");
  no_d.input("x", kS);
  no_d.set_outputs({no_d.input("primal_output", kS)});
  test::check_error([&] { g.custom_fn({x}, clip_body(kS), no_d); }, ErrorKind::Shape,
                    "vjp_body must have an Input named \"d_output\"");
  Graph wrong_jvp("j");
  wrong_jvp.input("x", kS);
  wrong_jvp.set_outputs({wrong_jvp.input("tangent_1", kS)});
  test::check_error([&] { g.custom_fn({x}, clip_body(kS), std::nullopt, wrong_jvp); },
                    ErrorKind::Shape, "jvp_body must have an Input named \"tangent_0\"");
  Graph with_param("p");
  with_param.set_outputs({with_param.add(with_param.input("x", kS), with_param.param("w", kS))});
  test::check_error([&] { g.custom_fn({x}, with_param); }, ErrorKind::Shape, "has a param \"w\"");
  Graph f64_out("f64_out");
  f64_out.set_outputs({f64_out.cast(f64_out.input("x", kS), DType::F64)});
  test::check_error([&] { g.custom_fn_multi({x}, f64_out); }, ErrorKind::Type,
                    "custom_fn_multi: fwd_body @f64_out's output 0 is f64[2,3]; every output must "
                    "be f32");
  CHECK(g.len() == before); // nothing appended by the failures
  // A parsed graph whose body does not fit fails verify, naming the node.
  Graph bad = g;
  CustomFnAttrs a{SubGraph(tanh_body(kS)), std::nullopt, std::nullopt, 1};
  bad.add_node(Op(OpKind::CustomFn, a), {x}, kS);
  test::check_error([&] { verify(bad); }, ErrorKind::Verify,
                    "(custom_fn): custom_fn: fwd_body @f has 2 Inputs");
  (void)y;
}
