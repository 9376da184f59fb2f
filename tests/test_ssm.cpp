// tests/test_ssm.cpp -- the state-space scans beyond their fixtures (tests/fixtures/ops_ssm,
// suite ops) and gradients (suite autodiff): shape errors name the op, the shapes and the line;
// the JIT's selective_scan kernel equals the interpreter on random shapes; decoding
// gated_delta_net in two pieces through its carried state equals one run; the scans are causal.
#include "support/check_error.hpp"
#include "support/compare.hpp"
#include "support/random.hpp"

#include <rlx/all.hpp>

#include <doctest/doctest.h>

#include <chrono>
#include <cmath>

using namespace rlx;
using namespace rlx::ir;

namespace {

Shape f32(std::vector<int64_t> d) { return Shape::of(d, DType::F32); }

/// A selective_scan graph on static inputs [B,S,H] x [H,N] x [B,S,N] (f32 unless told).
Graph scan_graph(int64_t b, int64_t s, int64_t h, int64_t n, DType t = DType::F32) {
  auto sh = [&](std::vector<int64_t> d) { return Shape::of(d, t); };
  Graph g("ss");
  NodeId x = g.input("x", sh({b, s, h})), d = g.input("delta", sh({b, s, h}));
  NodeId a = g.input("a", sh({h, n}));
  NodeId bb = g.input("b", sh({b, s, n})), c = g.input("c", sh({b, s, n}));
  g.set_outputs({g.selective_scan(x, d, a, bb, c, n, sh({b, s, h}))});
  return g;
}

std::vector<Buffer> scan_inputs(int64_t b, int64_t s, int64_t h, int64_t n, uint64_t seed,
                                DType t = DType::F32) {
  auto sh = [&](std::vector<int64_t> d) { return Shape::of(d, t); };
  return {test::random_buffer(sh({b, s, h}), seed, -2, 2),
          test::random_buffer(sh({b, s, h}), seed + 1, 0.01, 1.5),
          test::random_buffer(sh({h, n}), seed + 2, -3, -0.05),
          test::random_buffer(sh({b, s, n}), seed + 3, -1, 1),
          test::random_buffer(sh({b, s, n}), seed + 4, -1, 1)};
}

} // namespace

TEST_CASE("ssm: bad operands are shape errors naming the op, the shapes and the caller's line") {
  Graph g("bad");
  NodeId x = g.input("x", f32({2, 5, 3})), a = g.input("a", f32({4, 8}));
  NodeId b = g.input("b", f32({2, 5, 8}));
  int line = __LINE__ + 1;
  std::string msg = test::check_error([&] { g.selective_scan(x, x, a, b, b, 8, f32({2, 5, 3})); },
                                      ErrorKind::Shape, "selective_scan");
  CHECK(msg.find("a's first axis") != std::string::npos);
  CHECK(msg.find("f32[4,8]") != std::string::npos);
  CHECK(msg.find("test_ssm.cpp:" + std::to_string(line)) != std::string::npos);
  NodeId a3 = g.input("a3", f32({3, 8}));
  test::check_error([&] { g.selective_scan(x, x, a3, b, b, 4, f32({2, 5, 3})); }, ErrorKind::Shape,
                    "state_size = 4");
  NodeId x4 = g.input("x4", f32({1, 2, 6, 3})), dt = g.input("dt", f32({1, 2, 6}));
  NodeId a6 = g.input("a6", f32({6})), bg = g.input("bg", f32({1, 2, 4, 5}));
  test::check_error([&] { g.mamba2(x4, dt, a6, bg, bg, 3, 5, f32({1, 2, 6, 3})); },
                    ErrorKind::Shape, "groups G = 4 must divide the heads H = 6");
  NodeId q = g.input("q", f32({1, 2, 3, 4})), gb = g.input("gb", f32({1, 2, 3}));
  NodeId st = g.input("st", f32({1, 3, 4, 5}));
  test::check_error([&] { g.gated_delta_net_carry(q, q, q, gb, gb, st, 4, f32({1, 2, 3, 4})); },
                    ErrorKind::Shape, "state must be [B, H, N, N]");
  NodeId x64 = g.input("x64", Shape::of(std::vector<int64_t>{2, 5, 3}, DType::F64));
  test::check_error([&] { g.selective_scan(x64, x, a3, b, b, 8, f32({2, 5, 3})); }, ErrorKind::Type,
                    "one dtype");
}

TEST_CASE("ssm: the JIT's selective_scan kernel equals the interpreter on random shapes") {
  Backend other = test::other_backend();
  struct Dims {
    int64_t b, s, h, n;
  };
  // Channel counts below, at and past the kernel's 8-channel blocks; one step; a long scan.
  for (Dims d : {Dims{1, 1, 1, 1}, Dims{2, 7, 3, 4}, Dims{1, 33, 8, 16}, Dims{3, 20, 13, 5},
                 Dims{1, 300, 19, 16}, Dims{2, 9, 64, 32}}) {
    INFO("b " << d.b << " s " << d.s << " h " << d.h << " n " << d.n);
    Graph g = scan_graph(d.b, d.s, d.h, d.n);
    std::vector<Buffer> in = scan_inputs(d.b, d.s, d.h, d.n, uint64_t(d.s * 100 + d.h));
    test::RunResult want = test::run_on(Backend::Interp, g, in);
    test::RunResult got = test::run_on(other, g, in, true);
    REQUIRE_FALSE(want.error.has_value());
    REQUIRE_MESSAGE(!got.error.has_value(), got.error.value_or(""));
    test::check_buffers_close(want.outputs[0], got.outputs[0],
                              test::output_tolerance(g, g.outputs[0]), "selective_scan");
  }
}

/// Inputs of `shapes` drawn uniformly from `ranges`; the op's node on them, on both backends.
void check_backends_agree(const Op& op, const std::vector<Shape>& shapes,
                          const std::vector<std::pair<double, double>>& ranges, uint64_t seed) {
  Graph g("scan");
  std::vector<NodeId> ins;
  std::vector<Buffer> feed;
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    ins.push_back(g.input("in" + std::to_string(i), shapes[i]));
    feed.push_back(test::random_buffer(shapes[i], seed + i, ranges[i].first, ranges[i].second));
  }
  g.set_outputs({g.add_inferred(op, ins)});
  test::RunResult want = test::run_on(Backend::Interp, g, feed);
  test::RunResult got = test::run_on(test::other_backend(), g, feed, true);
  REQUIRE_FALSE(want.error.has_value());
  REQUIRE_MESSAGE(!got.error.has_value(), got.error.value_or(""));
  test::check_buffers_close(want.outputs[0], got.outputs[0],
                            test::output_tolerance(g, g.outputs[0]), std::string(op.name()));
}

TEST_CASE("ssm: the JIT's mamba2 and gated_delta_net kernels equal the interpreter") {
  using R = std::pair<double, double>;
  const R any{-1, 1}, step{0.01, 1}, rate{-2, -0.05}, gate{0, 1}, decay{-1, 0}, unit{-0.5, 0.5};
  // mamba2: grouped and shared b, c; state sizes 8 and 64 (the kernel's multiples of 8).
  check_backends_agree(
      Op(OpKind::Mamba2, Mamba2Attrs{3, 16}),
      {f32({2, 11, 4, 3}), f32({2, 11, 4}), f32({4}), f32({2, 11, 2, 16}), f32({2, 11, 2, 16})},
      {any, step, rate, any, any}, 1);
  check_backends_agree(
      Op(OpKind::Mamba2, Mamba2Attrs{16, 64}),
      {f32({1, 37, 3, 16}), f32({1, 37, 3}), f32({3}), f32({1, 37, 64}), f32({1, 37, 64})},
      {any, step, rate, any, any}, 2);
  check_backends_agree(
      Op(OpKind::Mamba2, Mamba2Attrs{1, 8}),
      {f32({1, 1, 1, 1}), f32({1, 1, 1}), f32({1}), f32({1, 1, 1, 8}), f32({1, 1, 1, 8})},
      {any, step, rate, any, any}, 3);
  // gated_delta_net with and without a carried state; state sizes 8 and 32.
  for (int64_t n : {8, 32}) {
    std::vector<Shape> s = {f32({2, 13, 3, n}), f32({2, 13, 3, n}), f32({2, 13, 3, n}),
                            f32({2, 13, 3}), f32({2, 13, 3})};
    std::vector<R> r = {unit, unit, any, decay, gate};
    check_backends_agree(Op(OpKind::GatedDeltaNet, GatedDeltaNetAttrs{n, false}), s, r, 4);
    s.push_back(f32({2, 3, n, n}));
    r.push_back(any);
    check_backends_agree(Op(OpKind::GatedDeltaNet, GatedDeltaNetAttrs{n, true}), s, r, 5);
  }
}

TEST_CASE("ssm: the JIT runs the f32 scans with its own kernels, other state sizes and f64 not") {
  if (test::other_backend() != Backend::Jit) return;
  auto ssm_steps = [](const Graph& g) {
    int k = 0;
    for (const LirStep& st : plan_for(g, Backend::Jit).steps)
      k += st.rule && st.rule->name() == "ssm";
    return k;
  };
  auto one = [](const Op& op, const std::vector<Shape>& shapes) {
    Graph g("scan");
    std::vector<NodeId> ins;
    for (std::size_t i = 0; i < shapes.size(); ++i)
      ins.push_back(g.input("in" + std::to_string(i), shapes[i]));
    g.set_outputs({g.add_inferred(op, ins)});
    return g;
  };
  CHECK(ssm_steps(scan_graph(1, 4, 8, 4)) == 1);
  auto m2 = [&](int64_t n, DType t) {
    auto sh = [&](std::vector<int64_t> d) { return Shape::of(d, t); };
    return one(Op(OpKind::Mamba2, Mamba2Attrs{2, n}),
               {sh({1, 3, 2, 2}), sh({1, 3, 2}), sh({2}), sh({1, 3, n}), sh({1, 3, n})});
  };
  CHECK(ssm_steps(m2(16, DType::F32)) == 1);
  CHECK(ssm_steps(m2(6, DType::F32)) == 0);
  CHECK(ssm_steps(m2(16, DType::F64)) == 0);
  Graph gdn = one(
      Op(OpKind::GatedDeltaNet, GatedDeltaNetAttrs{8, false}),
      {f32({1, 3, 2, 8}), f32({1, 3, 2, 8}), f32({1, 3, 2, 8}), f32({1, 3, 2}), f32({1, 3, 2})});
  CHECK(ssm_steps(gdn) == 1);
}

TEST_CASE("ssm: gated_delta_net decoded in two pieces through its state equals one run") {
  const int64_t b = 2, s = 7, h = 3, n = 4, cut = 3;
  auto l2 = [](const Tensor& t) { return t / rlx::sqrt(rlx::sum(t * t, {-1}, true)); };
  Tensor q = l2(rlx::randn({b, s, h, n}, 1)) * 0.5f, k = l2(rlx::randn({b, s, h, n}, 2));
  Tensor v = rlx::randn({b, s, h, n}, 3);
  Tensor gg = -rlx::softplus(rlx::randn({b, s, h}, 4)),
         beta = rlx::sigmoid(rlx::randn({b, s, h}, 5));
  Tensor whole = nn::gated_delta_net(q, k, v, gg, beta);
  auto first = [&](const Tensor& t) { return rlx::narrow(t, 1, 0, cut); };
  auto rest = [&](const Tensor& t) { return rlx::narrow(t, 1, cut, s - cut); };
  nn::GatedDeltaNetState a = nn::gated_delta_net(first(q), first(k), first(v), first(gg),
                                                 first(beta), rlx::zeros({b, h, n, n}));
  nn::GatedDeltaNetState c =
      nn::gated_delta_net(rest(q), rest(k), rest(v), rest(gg), rest(beta), a.state);
  CHECK(c.state.shape().sizes() == std::vector<int64_t>{b, h, n, n});
  std::vector<float> w = whole.to_vector<float>();
  std::vector<float> got = rlx::concat({a.output, c.output}, 1).to_vector<float>();
  REQUIRE(got.size() == w.size());
  for (std::size_t i = 0; i < w.size(); ++i) CHECK(got[i] == doctest::Approx(w[i]).epsilon(1e-5));
}

TEST_CASE("ssm: changing x at step t changes no output before t") {
  const int64_t b = 1, s = 12, h = 5, n = 4, t = 6;
  Graph g = scan_graph(b, s, h, n);
  std::vector<Buffer> in = scan_inputs(b, s, h, n, 42);
  std::vector<Buffer> moved = in;
  for (int64_t c = 0; c < h; ++c) moved[0].set_f64(t * h + c, in[0].get_f64(t * h + c) + 1.0);
  for (Backend be : {Backend::Interp, test::other_backend()}) {
    Buffer y0 = test::run_on(be, g, in).outputs.at(0),
           y1 = test::run_on(be, g, moved).outputs.at(0);
    for (int64_t i = 0; i < t * h; ++i) CHECK(y0.get_f64(i) == y1.get_f64(i));
    bool changed = false;
    for (int64_t c = 0; c < h; ++c) changed |= y0.get_f64(t * h + c) != y1.get_f64(t * h + c);
    CHECK(changed);
  }
}

namespace {

/// The number of nodes of the gradient (with respect to every operand) of an ssm op over S steps,
/// and of its scans.
std::pair<std::size_t, int> gradient_nodes(OpKind kind, int64_t s) {
  const int64_t b = 2, h = 4, n = 3;
  Graph g("ssm");
  std::vector<Shape> shapes;
  Op op(kind);
  if (kind == OpKind::SelectiveScan) {
    op = Op(kind, SelectiveScanAttrs{n});
    shapes = {f32({b, s, h}), f32({b, s, h}), f32({h, n}), f32({b, s, n}), f32({b, s, n})};
  } else if (kind == OpKind::Mamba2) {
    op = Op(kind, Mamba2Attrs{2, n});
    shapes = {f32({b, s, h, 2}), f32({b, s, h}), f32({h}), f32({b, s, 2, n}), f32({b, s, 2, n})};
  } else {
    op = Op(kind, GatedDeltaNetAttrs{n, true});
    shapes = {f32({b, s, h, n}), f32({b, s, h, n}), f32({b, s, h, n}),
              f32({b, s, h}),    f32({b, s, h}),    f32({b, h, n, n})};
  }
  std::vector<NodeId> ins;
  for (std::size_t i = 0; i < shapes.size(); ++i)
    ins.push_back(g.input("in" + std::to_string(i), shapes[i]));
  g.set_outputs({g.add_inferred(op, ins)});
  Graph d = autodiff::grad(g, ins);
  int scans = 0;
  for (const Node& nd : d.nodes()) scans += nd.op.kind() == OpKind::Scan;
  return {d.len(), scans};
}

} // namespace

TEST_CASE("ssm: a gradient graph has as many nodes at 256 steps as at 4, with one scan per op") {
  for (OpKind kind : {OpKind::SelectiveScan, OpKind::Mamba2, OpKind::GatedDeltaNet}) {
    INFO(op_name(kind));
    auto [short_len, short_scans] = gradient_nodes(kind, 4);
    auto [long_len, long_scans] = gradient_nodes(kind, 256);
    CHECK(long_len == short_len);
    CHECK(short_scans == 1);
    CHECK(long_scans == 1);
  }
}

TEST_CASE("ssm: a selective_scan gradient at [b 1, s 2048, h 64, n 16] runs on the JIT and "
          "equals central differences") {
  const int64_t b = 1, s = 2048, h = 64, n = 16;
  const Backend be = test::other_backend();
  Graph g = scan_graph(b, s, h, n, DType::F64);
  std::vector<Buffer> in = scan_inputs(b, s, h, n, 7, DType::F64);
  const Buffer w = test::random_buffer(g.shape(g.outputs[0]), 99, -1, 1); // loss = sum(y * w)
  std::vector<Buffer> feed = in;
  feed.push_back(w); // the cotangent "d_output"
  Graph dg = autodiff::grad(g, test::leaf_ids(g));
  auto t0 = std::chrono::steady_clock::now();
  test::RunResult r = test::run_on(be, dg, feed);
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  MESSAGE("selective_scan gradient at [1, 2048, 64, 16] on " << enum_name(be) << ": " << secs
                                                             << " s (compile and run)");
  REQUIRE_MESSAGE(!r.error.has_value(), r.error.value_or(""));
  REQUIRE(r.outputs.size() == 5);
  std::shared_ptr<const Executable> fwd = compile(g, Backend::Interp);
  auto loss = [&](const std::vector<Buffer>& at) {
    std::vector<const Buffer*> ptrs;
    for (const Buffer& v : at) ptrs.push_back(&v);
    Buffer y = fwd->run(ptrs).at(0);
    double l = 0;
    for (int64_t i = 0; i < y.numel(); ++i) l += y.get_f64(i) * w.get_f64(i);
    return l;
  };
  const char* names[] = {"x", "delta", "a", "b", "c"};
  for (std::size_t k = 0; k < in.size(); ++k) {
    const int64_t numel = in[k].numel();
    // The first, a middle and the last element: early steps see the longest chain back.
    for (int64_t i : {int64_t(0), numel / 2 + 5, numel - 1}) {
      std::vector<Buffer> at = in;
      const double v = in[k].get_f64(i), eps = 1e-5 * std::max(1.0, std::fabs(v));
      at[k].set_f64(i, v + eps);
      const double up = loss(at);
      at[k].set_f64(i, v - eps);
      const double fd = (up - loss(at)) / (2 * eps), got = r.outputs[k].get_f64(i);
      INFO("d " << names[k] << "[" << i << "]: gradient " << got << ", central differences " << fd);
      CHECK(std::fabs(got - fd) <= 1e-6 * (1 + std::fabs(fd)));
    }
  }
}
