// tests/test_custom_op.cpp -- ops registered at run time (rlx::register_op): both backends
// against the same computation written with built-in ops, shape rules, packed outputs, the text
// IR and JSON, the errors, the derivative and batching hooks against central differences and
// built-ins, purity in the passes, and the JIT cache keyed by the attribute bytes.
#include "support/backends.hpp"
#include "support/check_error.hpp"

#include <rlx/all.hpp>

#include <doctest/doctest.h>

#include <atomic>
#include <cmath>
#include <string>
#include <vector>

using namespace rlx;
using rlx::test::check_error;
using rlx::test::on_both_backends;

namespace {

struct SoftAttrs {
  double lambda;
};

double soft(double x, double lam) {
  return (x > 0 ? 1.0 : x < 0 ? -1.0 : 0.0) * std::max(std::fabs(x) - lam, 0.0);
}

/// The built-in form of soft-threshold: sign(x) * relu(|x| - lambda).
Tensor soft_builtin(const Tensor& x, double lam) {
  return rlx::sign(x) * rlx::relu(rlx::abs(x) - lam);
}

ir::Shape float_like_first(std::span<const ir::Shape> in, AttrBytes) {
  if (!ir::is_float(in[0].dtype()))
    throw Error(ErrorKind::Type, "needs a floating-point operand, got " + ir::short_str(in[0]));
  return in[0];
}

void soft_kernel(std::span<const Buffer* const> in, Buffer& out, AttrBytes attrs) {
  double lam = attr_from_bytes<SoftAttrs>(attrs, "test.soft").lambda;
  for (int64_t i = 0; i < out.numel(); ++i) out.set_f64(i, soft(in[0]->get_f64(i), lam));
}

std::atomic<int> g_noisy_runs{0};

/// Registers the ops the tests use (replace = true: each test may call it).
void register_test_ops() {
  CustomOp st;
  st.infer_shape = float_like_first;
  st.kernel = soft_kernel;
  st.vjp = [](std::span<const Tensor> in, const Tensor&, const Tensor& dy, AttrBytes attrs) {
    double lam = attr_from_bytes<SoftAttrs>(attrs, "test.soft").lambda;
    return std::vector<Tensor>{rlx::where(rlx::abs(in[0]) > lam, dy, 0.0)};
  };
  st.jvp = [](std::span<const Tensor> in, std::span<const Tensor> t, const Tensor&,
              AttrBytes attrs) {
    double lam = attr_from_bytes<SoftAttrs>(attrs, "test.soft").lambda;
    return rlx::where(rlx::abs(in[0]) > lam, t[0], 0.0);
  };
  st.vmap = [](std::span<const Tensor> in, const std::vector<bool>&, AttrBytes attrs) {
    // Element-wise: the batched operand goes through the op as it is.
    return rlx::custom("test.soft", {in[0]}, std::vector<uint8_t>(attrs.begin(), attrs.end()));
  };
  register_op("test.soft", st, true);

  CustomOp bare; // the same kernel without hooks
  bare.infer_shape = float_like_first;
  bare.kernel = soft_kernel;
  register_op("test.soft_bare", bare, true);

  CustomOp axpy; // a * alpha + b, equal shapes
  axpy.num_inputs = 2;
  axpy.infer_shape = [](std::span<const ir::Shape> in, AttrBytes) {
    if (in[0] != in[1])
      throw Error(ErrorKind::Shape, "operands must have one shape, got " + ir::short_str(in[0]) +
                                        " and " + ir::short_str(in[1]));
    return in[0];
  };
  axpy.kernel = [](std::span<const Buffer* const> in, Buffer& out, AttrBytes attrs) {
    double alpha = attr_from_bytes<double>(attrs, "test.axpy");
    for (int64_t i = 0; i < out.numel(); ++i)
      out.set_f64(i, in[0]->get_f64(i) * alpha + in[1]->get_f64(i));
  };
  axpy.vjp = [](std::span<const Tensor>, const Tensor&, const Tensor& dy, AttrBytes attrs) {
    double alpha = attr_from_bytes<double>(attrs, "test.axpy");
    return std::vector<Tensor>{dy * alpha, dy};
  };
  register_op("test.axpy", axpy, true);

  CustomOp stats; // packed: [2x ..., x^2 ...] for x of [n]; the caller gives [2n]
  stats.infer_shape = [](std::span<const ir::Shape> in, AttrBytes) { return in[0]; };
  stats.kernel = [](std::span<const Buffer* const> in, Buffer& out, AttrBytes) {
    int64_t n = in[0]->numel();
    for (int64_t i = 0; i < n; ++i) {
      double x = in[0]->get_f64(i);
      out.set_f64(i, 2 * x);
      out.set_f64(n + i, x * x);
    }
  };
  register_op("test.stats", stats, true);

  CustomOp noisy = bare; // impure: counts its runs
  noisy.pure = false;
  noisy.kernel = [](std::span<const Buffer* const> in, Buffer& out, AttrBytes) {
    ++g_noisy_runs;
    for (int64_t i = 0; i < out.numel(); ++i) out.set_f64(i, in[0]->get_f64(i));
  };
  register_op("test.noisy", noisy, true);
}

std::vector<uint8_t> lam_bytes(double lam) { return attr_bytes(SoftAttrs{lam}); }

void check_close(const std::vector<double>& got, const std::vector<double>& want, double tol) {
  REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    INFO("element " << i << ": " << got[i] << " vs " << want[i]);
    CHECK(std::fabs(got[i] - want[i]) <= tol * (1 + std::fabs(want[i])));
  }
}

std::size_t count_custom(const ir::Graph& g) {
  std::size_t k = 0;
  for (const ir::Node& n : g.nodes()) k += n.op.kind() == ir::OpKind::Custom;
  return k;
}

/// x -> soft(x) in a Graph (f32[6]), lambda in the attributes.
ir::Graph soft_graph(double lam) {
  ir::Graph g("soft");
  ir::NodeId x = g.input("x", ir::Shape({6}, ir::DType::F32));
  ir::NodeId y = g.custom_op("test.soft", lam_bytes(lam), {x});
  g.set_outputs({g.add_inferred(ir::Op(ir::OpKind::Exp), {y})});
  return g;
}

const std::vector<float> kX{-2.0f, -0.75f, -0.1f, 0.3f, 0.9f, 3.5f};

} // namespace

TEST_CASE("custom_op: a registered op equals the same computation in built-in ops, fused with "
          "element-wise code, on both backends") {
  register_test_ops();
  on_both_backends([] {
    Tensor x = Tensor::from_vector(kX, {2, 3});
    Tensor got = rlx::exp(rlx::custom("test.soft", {x * 2.0f}, lam_bytes(0.5))) + 1.0f;
    Tensor want = rlx::exp(soft_builtin(x * 2.0f, 0.5)) + 1.0f;
    CHECK(got.shape() == want.shape());
    check_close(got.to_vector<double>(), want.to_vector<double>(), 1e-6);
    Tensor a = Tensor::from_vector(kX, {6}), b = rlx::sin(a);
    Tensor two = rlx::custom("test.axpy", {a, b}, attr_bytes(-1.5));
    check_close(two.to_vector<double>(), (a * -1.5f + b).to_vector<double>(), 1e-6);
  });
}

TEST_CASE("custom_op: the registered rule gives the shape, and rejects operands with the op's "
          "name and the caller's line") {
  register_test_ops();
  ir::Graph g("shapes");
  ir::NodeId x = g.input("x", ir::Shape({4, 5}, ir::DType::F64));
  ir::NodeId y = g.custom_op("test.soft", lam_bytes(0.1), {x});
  CHECK(g.shape(y) == ir::Shape({4, 5}, ir::DType::F64));
  ir::NodeId i = g.input("i", ir::Shape({3}, ir::DType::I32));
  std::string msg = check_error([&] { g.custom_op("test.soft", lam_bytes(0.1), {i}); },
                                ErrorKind::Type, "custom op 'test.soft'");
  CHECK(msg.find("i32[3]") != std::string::npos);
  CHECK(msg.find("test_custom_op.cpp") != std::string::npos);
  ir::NodeId z = g.input("z", ir::Shape({5, 4}, ir::DType::F64));
  check_error([&] { g.custom_op("test.axpy", attr_bytes(1.0), {x, z}); }, ErrorKind::Shape,
              "operands must have one shape");
}

TEST_CASE("custom_op: a packed op takes its shape from the caller, and narrow reads its outputs") {
  register_test_ops();
  on_both_backends([] {
    Tensor x = Tensor::from_vector(kX, {6});
    Tensor p = rlx::custom_packed("test.stats", std::array{x}, {}, ir::Shape({12}, ir::DType::F32));
    CHECK(p.shape() == ir::Shape({12}, ir::DType::F32));
    check_close(rlx::narrow(p, 0, 0, 6).to_vector<double>(), (x * 2.0f).to_vector<double>(), 1e-6);
    check_close(rlx::narrow(p, 0, 6, 6).to_vector<double>(), (x * x).to_vector<double>(), 1e-6);
  });
  ir::Graph g("packed");
  ir::NodeId x = g.input("x", ir::Shape({3}, ir::DType::F32));
  check_error(
      [&] {
        g.custom_op_packed("test.stats", {}, {x},
                           ir::Shape({ir::Dim::dynamic("n")}, ir::DType::F32));
      },
      ErrorKind::Shape, "needs a static out_shape");
}

TEST_CASE("custom_op: the text IR and JSON carry the name and the attribute bytes exactly") {
  register_test_ops();
  ir::Graph g = soft_graph(0.625);
  ir::NodeId p = g.custom_op_packed("test.stats", {0x00, 0xff, 0x10}, {g.outputs[0]},
                                    ir::Shape({12}, ir::DType::F32));
  g.set_outputs({g.outputs[0], p});
  std::string text = ir::to_text(g);
  CHECK(text.find("test.soft") != std::string::npos);
  ir::Graph back = ir::parse_text(text);
  CHECK(back == g);
  CHECK(ir::to_text(back) == text);
  ir::Graph from_json = ir::from_json(ir::to_json(g));
  CHECK(from_json == g);
  const auto& a = from_json.node(p).op.attrs<ir::CustomAttrs>();
  CHECK(a.data.data == std::vector<uint8_t>{0x00, 0xff, 0x10});
  CHECK(a.packed_dims == ir::Ints{12});
  // The bytes change the node: the same graph with another lambda is a different graph.
  CHECK_FALSE(soft_graph(0.625) == soft_graph(0.25));
}

TEST_CASE("custom_op: unknown names and wrong input counts are errors naming the op and the "
          "caller's line") {
  register_test_ops();
  Tensor x = rlx::ones({3});
  std::string msg = check_error([&] { rlx::custom("test.no_such_op", {x}); },
                                ErrorKind::Unsupported, "no custom op named 'test.no_such_op'");
  CHECK(msg.find("test_custom_op.cpp") != std::string::npos);
  msg = check_error([&] { rlx::custom("test.soft", {x, x}, lam_bytes(1)); }, ErrorKind::Value,
                    "custom op 'test.soft' takes 1 inputs, got 2");
  CHECK(msg.find("test_custom_op.cpp") != std::string::npos);
  CustomOp again;
  again.infer_shape = float_like_first;
  again.kernel = soft_kernel;
  check_error([&] { register_op("test.soft", again); }, ErrorKind::Value, "registered already");
  CustomOp kernel_less;
  kernel_less.infer_shape = float_like_first;
  check_error([&] { register_op("test.kernel_less", kernel_less); }, ErrorKind::Value,
              "needs a kernel");
  CHECK(is_op_registered("test.soft"));
  CHECK_FALSE(is_op_registered("test.kernel_less"));
}

TEST_CASE("custom_op: a graph naming an op this process never registered prints and parses, and "
          "fails clearly where its shape or kernel is needed") {
  register_test_ops();
  std::string text = ir::to_text(soft_graph(0.5));
  std::string unknown = "test.never_registered";
  for (auto at = text.find("test.soft"); at != std::string::npos; at = text.find("test.soft"))
    text.replace(at, 9, unknown);
  ir::Graph g = ir::parse_text(text);
  CHECK(ir::to_text(g) == text);
  CHECK(ir::from_json(ir::to_json(g)) == g);
  interp::Feed feed{{"x", Buffer::f32({6}, kX)}};
  std::string msg;
  try {
    interp::run(g, feed);
  } catch (const Error& e) {
    msg = e.what();
  }
  INFO(msg);
  CHECK(msg.find("test.never_registered") != std::string::npos);
  CHECK(msg.find("registered in this process") != std::string::npos);
  // The JIT fails where it first needs the op (verifying, or running its step), not later.
  auto run_jit = [&] {
    Buffer x = Buffer::f32({6}, kX);
    std::array<const Buffer*, 1> leaves{&x};
    rlx::compile(g, Backend::Jit)->run(leaves);
  };
  CHECK_THROWS_AS(run_jit(), Error);
}

TEST_CASE("custom_op: grad goes through the VJP hook and matches central differences in f64") {
  register_test_ops();
  std::vector<double> x0{-1.3, -0.2, 0.45, 0.8, 2.1, -0.6};
  Tensor w = Tensor::from_vector(std::vector<double>{0.5, -1.0, 2.0, 1.5, -0.25, 3.0}, {6});
  auto loss = [&](const Tensor& x) {
    Tensor y = rlx::custom("test.soft", {x}, lam_bytes(0.3));
    Tensor z = rlx::custom("test.axpy", {y, x}, attr_bytes(0.7));
    return rlx::sum(z * z * w);
  };
  on_both_backends([&] {
    Tensor x = Tensor::from_vector(x0, {6});
    std::vector<double> g = rlx::grad(loss)(x).to_vector<double>();
    const double h = 1e-6;
    for (std::size_t i = 0; i < x0.size(); ++i) {
      std::vector<double> xp = x0, xm = x0;
      xp[i] += h;
      xm[i] -= h;
      double fd = (loss(Tensor::from_vector(xp, {6})).item<double>() -
                   loss(Tensor::from_vector(xm, {6})).item<double>()) /
                  (2 * h);
      INFO("component " << i);
      CHECK(g[i] == doctest::Approx(fd).epsilon(1e-6));
    }
  });
}

TEST_CASE("custom_op: grad through an op without a VJP names the op and the user's line") {
  register_test_ops();
  auto f = [](const Tensor& x) {
    return rlx::sum(rlx::custom("test.soft_bare", {x}, lam_bytes(0.1)));
  };
  std::string msg = check_error([&] { (void)rlx::grad(f)(rlx::ones({3})); }, ErrorKind::Unsupported,
                                "custom op 'test.soft_bare' has no VJP registered");
  CHECK(msg.find("test_custom_op.cpp") != std::string::npos);
  check_error(
      [&] {
        (void)rlx::jvp(f, std::vector<Tensor>{rlx::ones({3})}, std::vector<Tensor>{rlx::ones({3})});
      },
      ErrorKind::Unsupported, "has no JVP registered");
}

TEST_CASE("custom_op: jvp goes through the JVP hook and matches central differences in f64") {
  register_test_ops();
  std::vector<double> x0{-1.3, -0.2, 0.45, 0.8, 2.1, -0.6}, t0{1.0, -2.0, 0.5, 3.0, -1.0, 0.25};
  auto f = [](const Tensor& x) { return rlx::custom("test.soft", {x * x}, lam_bytes(0.3)); };
  on_both_backends([&] {
    auto [ys, ts] = rlx::jvp(f, std::vector<Tensor>{Tensor::from_vector(x0, {6})},
                             std::vector<Tensor>{Tensor::from_vector(t0, {6})});
    std::vector<double> tan = ts[0].to_vector<double>();
    const double h = 1e-6;
    std::vector<double> xp = x0, xm = x0;
    for (std::size_t i = 0; i < x0.size(); ++i) {
      xp[i] += h * t0[i];
      xm[i] -= h * t0[i];
    }
    std::vector<double> fp = f(Tensor::from_vector(xp, {6})).to_vector<double>();
    std::vector<double> fm = f(Tensor::from_vector(xm, {6})).to_vector<double>();
    for (std::size_t i = 0; i < x0.size(); ++i) {
      INFO("component " << i);
      CHECK(tan[i] == doctest::Approx((fp[i] - fm[i]) / (2 * h)).epsilon(1e-6));
    }
  });
}

TEST_CASE("custom_op: vmap uses the vmap hook, and loops over the batch for an op without one") {
  register_test_ops();
  on_both_backends([] {
    Tensor xb = Tensor::from_vector(kX, {3, 2});
    for (const char* name : {"test.soft", "test.soft_bare"}) {
      INFO(name);
      auto f = [&](const Tensor& x) { return rlx::custom(name, {x}, lam_bytes(0.5)); };
      Tensor got = rlx::vmap(f, {0})(xb);
      CHECK(got.shape() == xb.shape());
      check_close(got.to_vector<double>(), soft_builtin(xb, 0.5).to_vector<double>(), 1e-6);
    }
  });
  // With the hook the batched graph holds one custom node; without it, one per batch element.
  auto batched = [](const char* name) {
    ir::Graph g("f");
    ir::NodeId x = g.input("x", ir::Shape({2}, ir::DType::F32));
    g.set_outputs({g.custom_op(name, lam_bytes(0.5), {x})});
    return count_custom(autodiff::vmap(g, {"x"}, 3));
  };
  CHECK(batched("test.soft") == 1);
  CHECK(batched("test.soft_bare") == 3);
}

TEST_CASE("custom_op: passes merge and fold pure custom ops and never impure ones") {
  register_test_ops();
  auto two_calls = [](const char* name) {
    ir::Graph g("twice");
    ir::NodeId x = g.input("x", ir::Shape({6}, ir::DType::F32));
    ir::NodeId a = g.custom_op(name, lam_bytes(0.5), {x});
    ir::NodeId b = g.custom_op(name, lam_bytes(0.5), {x});
    ir::NodeId c = g.custom_op(name, lam_bytes(0.25), {x}); // other bytes: never merged with a
    g.set_outputs({g.add_inferred(ir::Op(ir::OpKind::Add), {a, b}), c});
    g.custom_op(name, lam_bytes(0.5), {c}); // unused
    return g;
  };
  ir::Graph pure = two_calls("test.soft");
  passes::cse(pure);
  passes::dce(pure);
  CHECK(count_custom(pure) == 2);
  ir::Graph impure = two_calls("test.noisy");
  passes::cse(impure);
  passes::dce(impure);
  CHECK(count_custom(impure) == 4);

  ir::Graph folded("fold");
  ir::NodeId k = folded.constant(1.5, ir::DType::F32);
  folded.set_outputs({folded.custom_op("test.soft", lam_bytes(0.5), {k})});
  CHECK(passes::constant_fold(folded));
  CHECK(count_custom(folded) == 0);
  ir::Graph kept("keep");
  ir::NodeId k2 = kept.constant(1.5, ir::DType::F32);
  kept.set_outputs({kept.custom_op("test.noisy", lam_bytes(0.5), {k2})});
  passes::constant_fold(kept);
  CHECK(count_custom(kept) == 1);
  int before = g_noisy_runs;
  interp::run(kept, {});
  CHECK(g_noisy_runs == before + 1);
}

TEST_CASE("custom_op: the JIT's cache tells graphs apart by their attribute bytes") {
  register_test_ops();
  bool hit = true;
  auto run = [&](double lam) {
    auto exe = rlx::compile(soft_graph(lam), Backend::Jit, &hit);
    Buffer x = Buffer::f32({6}, kX);
    std::array<const Buffer*, 1> leaves{&x};
    return exe->run(leaves).at(0).to_f64();
  };
  std::vector<double> a = run(0.375);
  std::vector<double> a2 = run(0.375);
  CHECK(hit);
  std::vector<double> b = run(0.0625);
  CHECK_FALSE(hit);
  CHECK(a == a2);
  for (std::size_t i = 0; i < kX.size(); ++i) {
    CHECK(a[i] == doctest::Approx(std::exp(soft(kX[i], 0.375))).epsilon(1e-6));
    CHECK(b[i] == doctest::Approx(std::exp(soft(kX[i], 0.0625))).epsilon(1e-6));
  }
}
