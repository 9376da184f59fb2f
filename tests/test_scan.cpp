// tests/test_scan.cpp -- scan and its backward companions: values against closed forms, the
// gradients of plain, trajectory and checkpointed scans against each other and against central
// differences (f64), forward mode, errors naming the op and the caller's line, text IR and JSON
// round trips with nested bodies, the memory a checkpointed backward plans, and the JIT against
// the interpreter on random cases. (The numpy fixtures are in tests/fixtures/ops_scan/, run by
// the ops and backends suites.)
#include "support/check_error.hpp"
#include "support/compare.hpp"
#include "support/random.hpp"

#include <rlx/all.hpp>
#include <rlx/autodiff.hpp>

#include <cmath>
#include <cstring>

using namespace rlx;
using namespace rlx::ir;

namespace {

constexpr DType F64 = DType::F64, F32 = DType::F32;

Shape sh(std::vector<int64_t> dims, DType t = F64) { return Shape::of(dims, t); }

/// h' = a * h + b (a, b broadcast operands).
Graph affine_body(const Shape& s) {
  Graph f("affine");
  NodeId h = f.input("h", s), a = f.input("a", s), b = f.input("b", s);
  f.set_outputs({f.add(f.mul(a, h), b)});
  return f;
}

/// h' = tanh(h @ u + x_t @ w): h [B, H], u [H, H], w [I, H] broadcast, x_t [B, I].
Graph rnn_body(int64_t batch, int64_t hidden, int64_t in, DType t = F64) {
  Graph f("rnn_step");
  NodeId h = f.input("h", sh({batch, hidden}, t));
  NodeId u = f.input("u", sh({hidden, hidden}, t));
  NodeId w = f.input("w", sh({in, hidden}, t));
  NodeId x = f.input("x", sh({batch, in}, t));
  f.set_outputs({f.tanh(f.add(f.mm(h, u), f.mm(x, w)))});
  return f;
}

/// A scan node with every attribute given (bcasts, xs, trajectory, checkpoints).
NodeId scan_node(Graph& g, NodeId init, std::vector<NodeId> bcasts, std::vector<NodeId> xs,
                 Graph body, int64_t length, bool trajectory, int64_t k) {
  ScanAttrs a;
  a.body = SubGraph(std::move(body));
  a.length = length;
  a.save_trajectory = trajectory;
  a.num_bcast = int64_t(bcasts.size());
  a.num_xs = int64_t(xs.size());
  a.num_checkpoints = k;
  std::vector<NodeId> ins{init};
  ins.insert(ins.end(), bcasts.begin(), bcasts.end());
  ins.insert(ins.end(), xs.begin(), xs.end());
  return g.add_inferred(Op(OpKind::Scan, std::move(a)), std::move(ins));
}

/// The RNN's loss: sum(h * (h + 0.5)) of the final carry h, as a graph over h0, u, w, xs, for a
/// plain, trajectory or checkpointed scan. Leaves in order h0, u, w, xs.
enum class Mode { Plain, Trajectory, Checkpointed };
struct Rnn {
  int64_t batch = 2, hidden = 3, in = 4, length = 9;
};
Graph rnn_loss(const Rnn& r, Mode mode, int64_t k = 3, DType t = F64) {
  Graph g("rnn_loss");
  NodeId h0 = g.input("h0", sh({r.batch, r.hidden}, t));
  NodeId u = g.input("u", sh({r.hidden, r.hidden}, t));
  NodeId w = g.input("w", sh({r.in, r.hidden}, t));
  NodeId xs = g.input("xs", sh({r.length, r.batch, r.in}, t));
  Graph body = rnn_body(r.batch, r.hidden, r.in, t);
  NodeId last;
  if (mode == Mode::Trajectory) {
    NodeId traj = scan_node(g, h0, {u, w}, {xs}, body, r.length, true, 0);
    last = g.reshape_(g.narrow_(traj, 0, r.length - 1, 1), {r.batch, r.hidden});
  } else {
    last = scan_node(g, h0, {u, w}, {xs}, body, r.length, false, mode == Mode::Plain ? 0 : k);
  }
  g.set_outputs({g.sum(g.mul(last, g.add(last, g.constant(0.5, t))), {0, 1}, false)});
  return g;
}

std::vector<Buffer> rnn_leaves(const Rnn& r, uint64_t seed, DType t = F64) {
  return {test::random_buffer(sh({r.batch, r.hidden}, t), seed),
          test::random_buffer(sh({r.hidden, r.hidden}, t), seed + 1, -0.7, 0.7),
          test::random_buffer(sh({r.in, r.hidden}, t), seed + 2, -0.7, 0.7),
          test::random_buffer(sh({r.length, r.batch, r.in}, t), seed + 3)};
}

interp::Feed feed(const Graph& g, const std::vector<Buffer>& leaves) {
  interp::Feed f;
  std::size_t i = 0;
  for (const Node& n : g.nodes())
    if (n.op.kind() == OpKind::Input && i < leaves.size())
      f.emplace(n.op.attrs<LeafAttrs>().name, leaves[i++]);
  return f;
}

Buffer one(DType t = F64) { return Buffer::from_f64(Shape::scalar(t), std::vector<double>{1.0}); }

/// The gradients of a one-output graph w.r.t. its four leaves (interpreter).
std::vector<Buffer> grads_of(const Graph& g, const std::vector<Buffer>& leaves) {
  std::vector<NodeId> wrt;
  for (const Node& n : g.nodes())
    if (n.op.kind() == OpKind::Input) wrt.push_back(n.id);
  Graph gg = autodiff::grad(g, wrt);
  interp::Feed f = feed(g, leaves);
  f.emplace("d_output", one(g.shape(g.outputs[0]).dtype()));
  return interp::run(gg, f);
}

double loss_of(const Graph& g, const std::vector<Buffer>& leaves) {
  return interp::run(g, feed(g, leaves)).at(0).get_f64(0);
}

/// CHECKs grads[k] (k < leaves_checked) against central differences of g's loss; returns the
/// sum of |difference quotient| per leaf.
std::vector<double> check_central_differences(const Graph& g, const std::vector<Buffer>& leaves,
                                              const std::vector<Buffer>& grads,
                                              std::size_t leaves_checked) {
  const double eps = 1e-6;
  std::vector<double> norms(leaves_checked, 0.0);
  for (std::size_t k = 0; k < leaves_checked; ++k) {
    INFO("leaf " << k);
    REQUIRE(grads[k].shape() == leaves[k].shape());
    for (int64_t i = 0; i < leaves[k].numel(); ++i) {
      std::vector<Buffer> p = leaves, m = leaves;
      p[k].set_f64(i, leaves[k].get_f64(i) + eps);
      m[k].set_f64(i, leaves[k].get_f64(i) - eps);
      double fd = (loss_of(g, p) - loss_of(g, m)) / (2 * eps);
      CHECK(grads[k].get_f64(i) == doctest::Approx(fd).epsilon(1e-7).scale(1.0));
      norms[k] += std::fabs(fd);
    }
  }
  return norms;
}

std::size_t count(const Graph& g, OpKind k) {
  return std::size_t(std::count_if(g.nodes().begin(), g.nodes().end(),
                                   [k](const Node& n) { return n.op.kind() == k; }));
}

} // namespace

TEST_CASE("scan of a first-order linear recurrence equals its closed form") {
  // h_t = a h_{t-1} + b, so h_L = a^L h0 + b (1 - a^L) / (1 - a) elementwise.
  const Shape s = sh({4});
  const int64_t L = 11;
  Graph g("linear");
  NodeId h0 = g.input("h0", s), a = g.input("a", s), b = g.input("b", s);
  g.set_outputs({g.scan_with_bcasts_and_xs(h0, {a, b}, {}, affine_body(s), L)});
  std::vector<double> hv{1.0, -2.0, 0.5, 3.0}, av{0.5, -0.9, 1.1, 0.25}, bv{1.0, 0.5, -1.0, 2.0};
  auto out = interp::run(g, {{"h0", Buffer::from_f64(s, hv)},
                             {"a", Buffer::from_f64(s, av)},
                             {"b", Buffer::from_f64(s, bv)}});
  for (int64_t i = 0; i < 4; ++i) {
    double aL = std::pow(av[i], double(L));
    CHECK(out[0].get_f64(i) == doctest::Approx(aL * hv[i] + bv[i] * (1 - aL) / (1 - av[i])));
  }
}

TEST_CASE("scan_trajectory row t is the carry after step t + 1, its last row scan's result") {
  // h' = 0.5 h + 1 (constants in the body): h_t = 2 + (h0 - 2) / 2^t.
  const Shape s = sh({3});
  Graph body("halve");
  NodeId h = body.input("h", s);
  body.set_outputs({body.add(body.mul(h, body.constant(0.5, F64)), body.constant(1.0, F64))});
  Graph g("traj");
  NodeId h0 = g.input("h0", s);
  NodeId traj = g.scan_trajectory(h0, body, 6);
  NodeId last = g.scan(h0, body, 6);
  CHECK(g.shape(traj) == sh({6, 3}));
  g.set_outputs({traj, last});
  std::vector<double> hv{0.0, 4.0, -6.0};
  auto out = interp::run(g, {{"h0", Buffer::from_f64(s, hv)}});
  for (int64_t t = 0; t < 6; ++t)
    for (int64_t i = 0; i < 3; ++i)
      CHECK(out[0].get_f64(t * 3 + i) == 2 + (hv[i] - 2) / std::pow(2.0, double(t + 1)));
  for (int64_t i = 0; i < 3; ++i) CHECK(out[1].get_f64(i) == out[0].get_f64(15 + i));
}

TEST_CASE("scan_with_xs feeds row t of each xs to step t") {
  // c' = c + x_t: the final carry is c0 + sum_t x_t.
  const Shape s = sh({2});
  Graph body("acc");
  NodeId c = body.input("c", s), x = body.input("x", s);
  body.set_outputs({body.add(c, x)});
  Graph g("cumsum");
  NodeId c0 = g.input("c0", s), xs = g.input("xs", sh({5, 2}));
  g.set_outputs({g.scan_with_xs(c0, {xs}, body, 5)});
  std::vector<double> xv{1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  auto out = interp::run(
      g, {{"c0", Buffer::from_f64(s, {{0.5, -1}})}, {"xs", Buffer::from_f64(sh({5, 2}), xv)}});
  CHECK(out[0].get_f64(0) == 0.5 + 25);
  CHECK(out[0].get_f64(1) == -1 + 30);
}

TEST_CASE("a checkpointed scan computes the plain scan's value") {
  Rnn r;
  std::vector<Buffer> leaves = rnn_leaves(r, 7);
  double plain = loss_of(rnn_loss(r, Mode::Plain), leaves);
  for (int64_t k : {1, 2, 3, 5, 9})
    CHECK(loss_of(rnn_loss(r, Mode::Checkpointed, k), leaves) == plain);
  CHECK(loss_of(rnn_loss(r, Mode::Trajectory), leaves) == plain);
}

TEST_CASE("scan gradients w.r.t. init, captured operands and xs equal central differences (f64)") {
  Rnn r;
  Graph g = rnn_loss(r, Mode::Plain);
  std::vector<Buffer> leaves = rnn_leaves(r, 11);
  std::vector<Buffer> grads = grads_of(g, leaves);
  REQUIRE(grads.size() == 4);
  for (double norm : check_central_differences(g, leaves, grads, 4))
    CHECK(norm > 1e-3); // every leaf matters
}

TEST_CASE("trajectory and checkpointed scans have the plain scan's gradients") {
  Rnn r;
  std::vector<Buffer> leaves = rnn_leaves(r, 23);
  std::vector<Buffer> plain = grads_of(rnn_loss(r, Mode::Plain), leaves);
  std::vector<Buffer> traj = grads_of(rnn_loss(r, Mode::Trajectory), leaves);
  for (std::size_t k = 0; k < 4; ++k) CHECK(traj[k] == plain[k]);
  for (int64_t K : {1, 2, 4, 9}) {
    INFO("K = " << K);
    Graph gk = rnn_loss(r, Mode::Checkpointed, K);
    std::vector<Buffer> ck = grads_of(gk, leaves);
    for (std::size_t k = 0; k < 4; ++k) CHECK(ck[k] == plain[k]);
    std::vector<NodeId> wrt;
    for (const Node& n : gk.nodes())
      if (n.op.kind() == OpKind::Input) wrt.push_back(n.id);
    Graph gg = autodiff::grad(gk, wrt);
    bool checkpointed_backward = false;
    for (const Node& n : gg.nodes())
      if (n.op.kind() == OpKind::ScanBackward)
        checkpointed_backward =
            n.op.attrs<ScanBackwardAttrs>().num_checkpoints == (K < r.length ? K : 0) &&
            n.op.attrs<ScanBackwardAttrs>().forward_body.has_value() == (K < r.length);
    CHECK(checkpointed_backward);
  }
}

TEST_CASE("the gradient of a whole trajectory sums each row's contribution") {
  // loss = sum(trajectory * weights): every row's cotangent enters the backward sweep.
  Rnn r{2, 2, 3, 5};
  Graph g("traj_loss");
  NodeId h0 = g.input("h0", sh({2, 2}));
  NodeId u = g.input("u", sh({2, 2}));
  NodeId w = g.input("w", sh({3, 2}));
  NodeId xs = g.input("xs", sh({5, 2, 3}));
  NodeId traj = scan_node(g, h0, {u, w}, {xs}, rnn_body(2, 2, 3), 5, true, 0);
  NodeId wt = g.input("wt", sh({5, 2, 2}));
  g.set_outputs({g.sum(g.mul(traj, wt), {0, 1, 2}, false)});
  std::vector<Buffer> leaves = rnn_leaves(r, 31);
  leaves.push_back(test::random_buffer(sh({5, 2, 2}), 99));
  std::vector<Buffer> grads = grads_of(g, leaves);
  check_central_differences(g, leaves, grads, 4);
  // d wt = the trajectory itself.
  Buffer tv = interp::run(
      [&] {
        Graph t = g;
        t.set_outputs({traj});
        return t;
      }(),
      feed(g, leaves))[0];
  CHECK(grads[4] == tv);
}

TEST_CASE("forward mode through scan equals a central difference along the tangent (f64)") {
  Rnn r;
  Graph g = rnn_loss(r, Mode::Plain);
  std::vector<NodeId> wrt;
  for (const Node& n : g.nodes())
    if (n.op.kind() == OpKind::Input) wrt.push_back(n.id);
  Graph j = autodiff::jvp(g, wrt);
  CHECK(count(j, OpKind::Scan) >= 1);
  std::vector<Buffer> leaves = rnn_leaves(r, 41);
  std::vector<Buffer> dirs;
  interp::Feed f = feed(g, leaves);
  const char* names[] = {"h0", "u", "w", "xs"};
  for (std::size_t k = 0; k < 4; ++k) {
    dirs.push_back(test::random_buffer(leaves[k].shape(), 50 + k));
    f.emplace(std::string("tangent_") + names[k], dirs.back());
  }
  auto out = interp::run(j, f);
  REQUIRE(out.size() == 2);
  const double eps = 1e-6;
  std::vector<Buffer> p = leaves, m = leaves;
  for (std::size_t k = 0; k < 4; ++k)
    for (int64_t i = 0; i < leaves[k].numel(); ++i) {
      p[k].set_f64(i, leaves[k].get_f64(i) + eps * dirs[k].get_f64(i));
      m[k].set_f64(i, leaves[k].get_f64(i) - eps * dirs[k].get_f64(i));
    }
  double fd = (loss_of(g, p) - loss_of(g, m)) / (2 * eps);
  CHECK(out[1].get_f64(0) == doctest::Approx(fd).epsilon(1e-7));
  CHECK(std::fabs(fd) > 1e-3);
}

TEST_CASE("scan errors name the op, the shapes and the caller's line") {
  const Shape s = sh({3});
  Graph g("bad");
  NodeId h0 = g.input("h0", s);
  NodeId xs = g.input("xs", sh({4, 3}));
  NodeId other = g.input("o", sh({2}));
  const int line = __LINE__ + 1;
  std::string msg = test::check_error([&] { g.scan_with_xs(h0, {xs}, affine_body(s), 5); },
                                      ErrorKind::Shape, "leading dim must be length = 5");
  CHECK(msg.find("scan") != std::string::npos);
  CHECK(msg.find("f64[4,3]") != std::string::npos);
  CHECK(msg.find("test_scan.cpp:" + std::to_string(line)) != std::string::npos);
  // The body takes [carry, a, b]; a scan with one xs gives it only two Inputs' worth.
  test::check_error([&] { g.scan_with_xs(h0, {xs}, affine_body(s), 4); }, ErrorKind::Shape,
                    "body @affine has 3 Inputs, expected 2");
  // A carry of the wrong shape.
  test::check_error([&] { g.scan_with_bcasts_and_xs(other, {h0, h0}, {}, affine_body(s), 4); },
                    ErrorKind::Shape, "body's carry Input is f64[3], expected f64[2]");
  // A body whose output is not the carry's shape.
  Graph widen("widen");
  widen.set_outputs({widen.concat_({widen.input("h", s), widen.input("h2", s)}, 0)});
  Graph one_in("widen1");
  NodeId wi = one_in.input("h", s);
  one_in.set_outputs({one_in.concat_({wi, wi}, 0)});
  test::check_error([&] { g.scan(h0, one_in, 3); }, ErrorKind::Shape,
                    "body's output (the next carry) is f64[6], expected f64[3]");
  test::check_error([&] { g.scan(h0, affine_body(s), 0); }, ErrorKind::Shape,
                    "length must be at least 1");
  Graph halve("halve");
  halve.set_outputs({halve.mul(halve.input("h", s), halve.constant(0.5, F64))});
  test::check_error([&] { g.scan_checkpointed(h0, halve, 4, 5); }, ErrorKind::Shape,
                    "num_checkpoints must be in [0, length = 4], got 5");
  test::check_error([&] { g.scan_checkpointed(h0, halve, 4, 0); }, ErrorKind::Value,
                    "num_checkpoints must be in [1, length = 4], got 0");
  // A backward whose trajectory has the wrong number of rows.
  Graph vjp("halve_vjp");
  vjp.input("h", s);
  vjp.set_outputs({vjp.mul(vjp.input("d_output", s), vjp.constant(0.5, F64))});
  NodeId bad_traj = g.input("t", sh({3, 3}));
  test::check_error([&] { g.scan_backward(h0, bad_traj, h0, {}, vjp, 4, false, s); },
                    ErrorKind::Shape, "the trajectory is f64[3,3], expected f64[4,3]");
  NodeId traj = g.input("t4", sh({4, 3}));
  test::check_error(
      [&] {
        g.scan_backward_with_checkpoints(h0, g.input("t2", sh({2, 3})), h0, {}, vjp, 4, false, 2,
                                         std::nullopt, s);
      },
      ErrorKind::Shape, "needs a forward_body");
  test::check_error([&] { g.scan_backward_xs(h0, traj, h0, {}, vjp, 4, false, 0, s); },
                    ErrorKind::Shape, "xs_idx 0 is out of range for 0 xs");
  CHECK(g.shape(g.scan_backward(h0, traj, h0, {}, vjp, 4, false, s)) == s);
}

TEST_CASE("text IR and JSON round trips keep scan's nested bodies, and CSE sees them") {
  Rnn r;
  Graph g = rnn_loss(r, Mode::Checkpointed, 3);
  std::vector<NodeId> wrt;
  for (const Node& n : g.nodes())
    if (n.op.kind() == OpKind::Input) wrt.push_back(n.id);
  Graph gg = autodiff::grad(g, wrt); // scan, scan_backward(_xs) with body_vjp and forward_body
  REQUIRE(count(gg, OpKind::ScanBackward) == 1);
  REQUIRE(count(gg, OpKind::ScanBackwardXs) == 3);
  std::string text = to_text(gg);
  INFO(text);
  CHECK(text.find("body=graph @rnn_step {") != std::string::npos);
  CHECK(text.find("forward_body=graph @rnn_step {") != std::string::npos);
  CHECK(text.find("body_vjp=graph @rnn_step_vjp {") != std::string::npos);
  Graph back = parse_text(text);
  CHECK(back == gg);
  CHECK(to_text(back) == text);
  CHECK(from_json(to_json(gg)) == gg);
  CHECK(from_json(to_json(gg, true)) == gg);
  // Two scans differing only inside their bodies stay apart; equal ones merge.
  const Shape s = sh({3});
  Graph c("cse");
  NodeId h0 = c.input("h0", s);
  auto body = [&](double k) {
    Graph b("b");
    b.set_outputs({b.mul(b.input("h", s), b.constant(k, F64))});
    return b;
  };
  NodeId s1 = c.scan(h0, body(0.5), 3), s2 = c.scan(h0, body(0.5), 3),
         s3 = c.scan(h0, body(0.25), 3);
  c.set_outputs({c.add(c.add(s1, s2), s3)});
  CHECK(passes::cse(c));
  CHECK(count(c, OpKind::Scan) == 2);
}

TEST_CASE("a checkpointed scan's backward plans O(K) carries, a plain one O(length)") {
  const int64_t carry = 256, length = 400, K = 20;
  const Shape s = sh({carry}, F32);
  Graph body("step");
  NodeId h = body.input("h", s);
  body.set_outputs({body.tanh(body.add(h, body.constant(0.25, F32)))});
  auto loss = [&](bool checkpointed) {
    Graph g("mem");
    NodeId h0 = g.input("h0", s);
    NodeId y = checkpointed ? g.scan_checkpointed(h0, body, length, K) : g.scan(h0, body, length);
    g.set_outputs({g.sum(y, {0}, false)});
    return autodiff::grad(g, std::vector<NodeId>{h0});
  };
  const uint64_t carry_bytes = carry * 4;
  uint64_t plain = plan_for(loss(false), Backend::Interp).memory.arena_size;
  uint64_t ck = plan_for(loss(true), Backend::Interp).memory.arena_size;
  INFO("plain arena " << plain << " bytes, checkpointed " << ck);
  CHECK(plain >= uint64_t(length) * carry_bytes);
  CHECK(ck <= uint64_t(K + 8) * carry_bytes);
  // Both compute the same gradient.
  Buffer h0 = test::random_buffer(s, 5);
  auto run = [&](const Graph& gg) {
    return interp::run(gg, {{"h0", h0}, {"d_output", one(F32)}}).at(0);
  };
  CHECK(run(loss(true)) == run(loss(false)));
}

TEST_CASE("a scan's backward sums a broadcast weight's cotangents: memory does not grow with "
          "length x weight") {
  // h' = tanh(h @ w + x_t) with w [H, H] captured (broadcast): the backward's arena holds the
  // trajectory (length x carry) and a few weights' worth, not one weight per step.
  const int64_t batch = 2, hidden = 64;
  const Shape hs = sh({batch, hidden}, F32), ws = sh({hidden, hidden}, F32);
  Graph body("step");
  NodeId h = body.input("h", hs), w = body.input("w", ws), x = body.input("x", hs);
  body.set_outputs({body.tanh(body.add(body.mm(h, w), x))});
  auto grad_graph = [&](int64_t length) {
    Graph g("mem");
    NodeId h0 = g.input("h0", hs), gw = g.input("w", ws);
    NodeId xs = g.input("xs", sh({length, batch, hidden}, F32));
    NodeId y = g.scan_with_bcasts_and_xs(h0, {gw}, {xs}, body, uint32_t(length));
    g.set_outputs({g.sum(y, {0, 1}, false)});
    return autodiff::grad(g, std::vector<NodeId>{gw});
  };
  const uint64_t w_bytes = uint64_t(hidden * hidden * 4),
                 carry_bytes = uint64_t(batch * hidden * 4);
  uint64_t short_arena = plan_for(grad_graph(32), Backend::Interp).memory.arena_size;
  uint64_t long_arena = plan_for(grad_graph(128), Backend::Interp).memory.arena_size;
  INFO("arena at length 32: " << short_arena << " bytes, at 128: " << long_arena);
  // 96 more steps cost at most a few carries each (the trajectory, the xs' cotangent), far less
  // than a weight each (16 KiB here, 8x a carry).
  CHECK(long_arena - short_arena <= 96 * 3 * carry_bytes);
  CHECK(long_arena <= 128 * 3 * carry_bytes + 4 * w_bytes);
  // The summed cotangent is the weight's gradient: against the same scan with w stacked as an
  // xs (one copy per step), whose gradient is per step.
  const int64_t length = 7;
  const Shape xs_shape = sh({length, batch, hidden}, F32);
  Graph g("stacked");
  NodeId h0 = g.input("h0", hs), ww = g.input("ws", sh({length, hidden, hidden}, F32));
  NodeId xs = g.input("xs", xs_shape);
  g.set_outputs({g.sum(g.scan_with_xs(h0, {ww, xs}, body, length), {0, 1}, false)});
  Buffer hv = test::random_buffer(hs, 3), wv = test::random_buffer(ws, 4, -0.2, 0.2),
         xv = test::random_buffer(xs_shape, 5);
  Buffer stacked_w = Buffer::uninitialized(sh({length, hidden, hidden}, F32));
  for (int64_t t = 0; t < length; ++t)
    std::memcpy(stacked_w.bytes().data() + t * w_bytes, wv.bytes().data(), w_bytes);
  Buffer per_row =
      interp::run(autodiff::grad(g, std::vector<NodeId>{ww}),
                  {{"h0", hv}, {"ws", stacked_w}, {"xs", xv}, {"d_output", one(F32)}})[0];
  Graph b("summed");
  NodeId bh0 = b.input("h0", hs), bw = b.input("w", ws), bxs = b.input("xs", xs_shape);
  b.set_outputs({b.sum(b.scan_with_bcasts_and_xs(bh0, {bw}, {bxs}, body, length), {0, 1}, false)});
  Buffer summed = interp::run(autodiff::grad(b, std::vector<NodeId>{bw}),
                              {{"h0", hv}, {"w", wv}, {"xs", xv}, {"d_output", one(F32)}})[0];
  REQUIRE(summed.shape() == ws);
  double norm = 0;
  for (int64_t i = 0; i < summed.numel(); ++i) {
    double want = 0;
    for (int64_t t = 0; t < length; ++t) want += per_row.get_f64(t * summed.numel() + i);
    CHECK(summed.get_f64(i) == doctest::Approx(want).epsilon(1e-5));
    norm += std::fabs(want);
  }
  CHECK(norm > 1e-2);
}

TEST_CASE("a differentiated scan runs its forward once: the value is the trajectory's last row") {
  Rnn r;
  std::vector<Buffer> leaves = rnn_leaves(r, 13);
  for (Mode mode : {Mode::Plain, Mode::Checkpointed}) {
    Graph g = rnn_loss(r, mode, 3);
    std::vector<NodeId> wrt;
    for (const Node& n : g.nodes())
      if (n.op.kind() == OpKind::Input) wrt.push_back(n.id);
    Graph gg = autodiff::grad_with_loss(g, wrt);
    INFO(to_text(gg));
    CHECK(count(gg, OpKind::Scan) == 1);
    ir::LirModule plan = plan_for(gg, Backend::Interp);
    std::size_t scan_steps = 0;
    for (const ir::LirStep& st : plan.steps)
      for (NodeId id : st.nodes) scan_steps += plan.mir.node(id).op.kind() == OpKind::Scan;
    CHECK(scan_steps == 1);
    // The loss it reports is the forward's.
    interp::Feed f = feed(g, leaves);
    f.emplace("d_output", one());
    CHECK(interp::run(gg, f).at(0).get_f64(0) == loss_of(g, leaves));
  }
}

TEST_CASE("scans and their gradients agree on the JIT and the interpreter on random cases") {
  Backend other = test::other_backend();
  for (uint64_t seed = 0; seed < 6; ++seed) {
    Rnn r{1 + int64_t(seed % 3), 2 + int64_t(seed % 4), 1 + int64_t(seed % 2) * 3,
          1 + int64_t(seed * 5 % 13)};
    DType t = seed % 2 ? F32 : F64;
    Mode mode = Mode(seed % 3);
    int64_t k = 1 + int64_t(seed) % r.length;
    Graph g = rnn_loss(r, mode, k, t);
    std::vector<NodeId> wrt;
    for (const Node& n : g.nodes())
      if (n.op.kind() == OpKind::Input) wrt.push_back(n.id);
    Graph gg = autodiff::grad_with_loss(g, wrt);
    std::vector<Buffer> leaves = rnn_leaves(r, 100 + seed, t);
    leaves.push_back(one(t));
    INFO("seed " << seed << "\n" << to_text(gg));
    test::RunResult a = test::run_on(Backend::Interp, gg, leaves);
    test::RunResult b = test::run_on(other, gg, leaves, true);
    test::Comparison c = test::compare_runs(gg, a, b, "jit");
    CHECK(!a.error);
    CHECK(c.problems == "");
  }
}

TEST_CASE("rlx::scan runs a lambda body over the xs; captured tensors are broadcast operands") {
  // h_t = tanh(h_{t-1} @ u + x_t @ w) with u, w captured: rlx::scan against the graph builder.
  Rnn r;
  std::vector<Buffer> leaves = rnn_leaves(r, 61);
  auto t = [&](std::size_t k) { return Tensor(leaves[k]); };
  Tensor h0 = t(0), u = t(1), w = t(2), xs = t(3);
  auto step = [&](const Tensor& h, const Tensor& x) {
    return rlx::tanh(h.matmul(u) + x.matmul(w));
  };
  Tensor last = rlx::scan(step, h0, {xs});
  Tensor traj = rlx::scan_trajectory(step, h0, {xs});
  CHECK(traj.shape() == sh({r.length, r.batch, r.hidden}));
  Graph g("want");
  NodeId gh = g.input("h0", leaves[0].shape()), gu = g.input("u", leaves[1].shape()),
         gw = g.input("w", leaves[2].shape()), gx = g.input("xs", leaves[3].shape());
  g.set_outputs(
      {scan_node(g, gh, {gu, gw}, {gx}, rnn_body(r.batch, r.hidden, r.in), r.length, true, 0)});
  Buffer want = interp::run(g, feed(g, leaves))[0];
  std::vector<double> got = traj.to_vector<double>(), fin = last.to_vector<double>();
  REQUIRE(int64_t(got.size()) == want.numel());
  for (int64_t i = 0; i < want.numel(); ++i)
    CHECK(got[std::size_t(i)] == doctest::Approx(want.get_f64(i)).epsilon(1e-12));
  const int64_t row = r.batch * r.hidden;
  for (int64_t i = 0; i < row; ++i)
    CHECK(fin[std::size_t(i)] ==
          doctest::Approx(want.get_f64((r.length - 1) * row + i)).epsilon(1e-12));
}

TEST_CASE("rlx::grad differentiates through rlx::scan, captured weights included") {
  Rnn r;
  std::vector<Buffer> leaves = rnn_leaves(r, 71);
  auto t = [&](std::size_t k) { return Tensor(leaves[k]); };
  auto loss = [&](const Tensor& h0, const Tensor& u, const Tensor& w, const Tensor& xs) {
    auto step = [&](const Tensor& h, const Tensor& x) {
      return rlx::tanh(h.matmul(u) + x.matmul(w));
    };
    Tensor last = rlx::scan(step, h0, {xs}, {.checkpoints = 3});
    return rlx::sum(last * (last + 0.5));
  };
  std::vector<Tensor> grads = rlx::grad(loss, {0, 1, 2, 3})(t(0), t(1), t(2), t(3));
  std::vector<Buffer> want = grads_of(rnn_loss(r, Mode::Plain), leaves);
  REQUIRE(grads.size() == 4);
  for (std::size_t k = 0; k < 4; ++k) {
    std::vector<double> got = grads[k].to_vector<double>();
    REQUIRE(int64_t(got.size()) == want[k].numel());
    for (int64_t i = 0; i < want[k].numel(); ++i)
      CHECK(got[std::size_t(i)] == doctest::Approx(want[k].get_f64(i)).epsilon(1e-10));
  }
}

TEST_CASE("rlx::scan errors name the problem and the caller's line") {
  Tensor h0 = rlx::zeros({3}, F64);
  const int line = __LINE__ + 2;
  std::string msg =
      test::check_error([&] { rlx::scan([](const Tensor& h) { return h + 1.0; }, h0); },
                        ErrorKind::Value, "without xs the number of steps must be given");
  CHECK(msg.find("test_scan.cpp:" + std::to_string(line)) != std::string::npos);
  test::check_error(
      [&] {
        rlx::scan([](const Tensor& h) { return rlx::concat({h, h}, 0); }, h0, {}, {.length = 2});
      },
      ErrorKind::Shape, "body's output (the next carry) is f64[6], expected f64[3]");
  CHECK(rlx::scan([](const Tensor& h) { return h * 2.0; }, h0 + 1.0, {}, {.length = 3})
            .to_vector<double>() == std::vector<double>{8, 8, 8});
}

TEST_CASE("the JIT runs a scan's bodies compiled once per executable, not node by node") {
  REQUIRE(backend_available(Backend::Jit));
  Rnn r{2, 3, 2, 40};
  Graph g = rnn_loss(r, Mode::Checkpointed, 4);
  std::vector<NodeId> wrt;
  for (const Node& n : g.nodes())
    if (n.op.kind() == OpKind::Input) wrt.push_back(n.id);
  Graph gg = autodiff::grad(g, wrt);
  std::shared_ptr<const Executable> exe = compile(gg, Backend::Jit);
  // Every body the plan's scan steps hold is in the executable cache already: each was compiled
  // when the executable was built, once, however many steps run.
  std::vector<const Graph*> bodies;
  for (const Node& n : gg.nodes()) {
    if (n.op.kind() == OpKind::Scan) bodies.push_back(&n.op.attrs<ScanAttrs>().body.get());
    if (n.op.kind() == OpKind::ScanBackward) {
      bodies.push_back(&n.op.attrs<ScanBackwardAttrs>().body_vjp.get());
      bodies.push_back(&n.op.attrs<ScanBackwardAttrs>().forward_body->get());
    }
  }
  REQUIRE(bodies.size() == 3); // the forward runs once (its trajectory), the backward twice
  for (const Graph* b : bodies) {
    bool hit = false;
    compile(*b, Backend::Jit, &hit);
    CHECK(hit);
  }
  int64_t compiles = cache_stats().compiles;
  std::vector<Buffer> leaves = rnn_leaves(r, 3);
  leaves.push_back(one());
  std::vector<const Buffer*> ptrs;
  for (const Buffer& b : leaves) ptrs.push_back(&b);
  exe->run(ptrs);
  CHECK(cache_stats().compiles == compiles); // running compiles nothing more
}

TEST_CASE("rlx::scan takes JAX's form: a body returning (carry, y) gives (final carry, ys)") {
  // c' = c + x_t, y_t = c': the ys are c0 plus the running sums of the xs.
  const int64_t L = 5;
  std::vector<double> xv{1, -2, 3, 0.5, 4, 10, 20, 30, 40, 50}; // xs [5, 2]
  Tensor xs = Tensor::from_vector(xv, {L, 2});
  Tensor c0 = Tensor::from_vector(std::vector<double>{0.25, -1}, {2});
  auto body = [](const Tensor& c, const Tensor& x) {
    Tensor next = c + x;
    return std::pair{next, next};
  };
  for (bool reverse : {false, true}) {
    INFO("reverse " << reverse);
    auto [last, ys] = rlx::scan(body, c0, {xs}, {.reverse = reverse});
    static_assert(std::is_same_v<decltype(ys), Tensor>);
    REQUIRE(ys.shape() == sh({L, 2}));
    std::vector<double> got = ys.to_vector<double>(), fin = last.to_vector<double>();
    for (int64_t j = 0; j < 2; ++j) {
      // Forward: ys[t] = c0 + x_0 + ... + x_t; reverse: ys[t] = c0 + x_t + ... + x_{L-1}.
      double run = j == 0 ? 0.25 : -1;
      for (int64_t k = 0; k < L; ++k) {
        int64_t t = reverse ? L - 1 - k : k;
        run += xv[std::size_t(t * 2 + j)];
        CHECK(got[std::size_t(t * 2 + j)] == run);
      }
      CHECK(fin[std::size_t(j)] == run);
    }
  }
  // The tuple form is the same.
  auto [last_t, ys_t] = rlx::scan(
      [](const Tensor& c, const Tensor& x) { return std::tuple{c + x, (c + x) * 2.0}; }, c0, {xs});
  // Column 0 of the xs is 1, 3, 4, 20, 40.
  CHECK(ys_t.to_vector<double>()[8] == 2 * (0.25 + 1 + 3 + 4 + 20 + 40));
  CHECK(last_t.to_vector<double>()[0] == 0.25 + 1 + 3 + 4 + 20 + 40);
}

TEST_CASE("rlx::scan carries a tuple, an array or a vector of tensors") {
  // (a, b) -> (a + x_t, 0.5 b + a'), y = a' * b': an explicit loop in double is the reference.
  const int64_t L = 6;
  Tensor xs = Tensor(test::random_buffer(sh({L, 3}), 17));
  Tensor a0 = Tensor(test::random_buffer(sh({3}), 18));
  Tensor b0 = Tensor(test::random_buffer(sh({1, 3}), 19));
  std::vector<double> x = xs.to_vector<double>(), a = a0.to_vector<double>(),
                      b = b0.to_vector<double>(), ys_want;
  for (int64_t t = 0; t < L; ++t)
    for (std::size_t j = 0; j < 3; ++j) {
      a[j] += x[std::size_t(t) * 3 + j];
      b[j] = 0.5 * b[j] + a[j];
      ys_want.push_back(a[j] * b[j]);
    }
  auto step = [](const Tensor& a, const Tensor& b, const Tensor& x) {
    Tensor a2 = a + x, b2 = b * 0.5 + a2.reshape({1, 3});
    return std::tuple{a2, b2, a2 * b2.reshape({3})};
  };
  auto check = [&](const Tensor& fa, const Tensor& fb, const Tensor& ys) {
    CHECK(fa.shape() == sh({3}));
    CHECK(fb.shape() == sh({1, 3}));
    REQUIRE(ys.shape() == sh({L, 3}));
    for (std::size_t j = 0; j < 3; ++j) {
      CHECK(fa.to_vector<double>()[j] == doctest::Approx(a[j]).epsilon(1e-14));
      CHECK(fb.to_vector<double>()[j] == doctest::Approx(b[j]).epsilon(1e-14));
    }
    std::vector<double> got = ys.to_vector<double>();
    for (std::size_t i = 0; i < ys_want.size(); ++i)
      CHECK(got[i] == doctest::Approx(ys_want[i]).epsilon(1e-14));
  };
  auto [tc, tys] = rlx::scan(
      [&](const std::tuple<Tensor, Tensor>& c, const Tensor& x) {
        auto [na, nb, y] = step(std::get<0>(c), std::get<1>(c), x);
        return std::pair{std::tuple{na, nb}, y};
      },
      std::tuple{a0, b0}, {xs});
  check(std::get<0>(tc), std::get<1>(tc), tys);
  auto [ac, ays] = rlx::scan(
      [&](const std::array<Tensor, 2>& c, const Tensor& x) {
        auto [na, nb, y] = step(c[0], c[1], x);
        return std::pair{std::array<Tensor, 2>{na, nb}, y};
      },
      std::array<Tensor, 2>{a0, b0}, {xs});
  check(ac[0], ac[1], ays);
  auto [vc, vys] = rlx::scan(
      [&](const std::vector<Tensor>& c, const Tensor& x) {
        auto [na, nb, y] = step(c[0], c[1], x);
        return std::pair{std::vector<Tensor>{na, nb}, y};
      },
      std::vector<Tensor>{a0, b0}, {xs});
  REQUIRE(vc.size() == 2);
  check(vc[0], vc[1], vys);
  // Without a y: the final carry, or with trajectory each part stacked.
  auto carry_only = [&](const std::tuple<Tensor, Tensor>& c, const Tensor& x) {
    auto [na, nb, y] = step(std::get<0>(c), std::get<1>(c), x);
    return std::tuple<Tensor, Tensor>{na, nb};
  };
  std::tuple<Tensor, Tensor> fin = rlx::scan(carry_only, std::tuple{a0, b0}, {xs});
  check(std::get<0>(fin), std::get<1>(fin), tys);
  auto traj = rlx::scan_trajectory(carry_only, std::tuple{a0, b0}, {xs});
  CHECK(std::get<0>(traj).shape() == sh({L, 3}));
  REQUIRE(std::get<1>(traj).shape() == sh({L, 1, 3}));
  CHECK(std::get<1>(traj).to_vector<double>()[15] == doctest::Approx(b[0]).epsilon(1e-14));
}

TEST_CASE("rlx::grad differentiates through a packed carry, ys and a reversed scan") {
  // loss = sum(ys) with ys[t] = c0 + running sum of the xs: d loss / d x_t counts the ys that
  // include x_t, L - t forward and t + 1 reversed; d loss / d c0 = L.
  const int64_t L = 4;
  Tensor xs = Tensor(test::random_buffer(sh({L, 2}), 5));
  Tensor c0 = Tensor(test::random_buffer(sh({2}), 6));
  for (bool reverse : {false, true}) {
    INFO("reverse " << reverse);
    auto loss = [&](const Tensor& c, const Tensor& x) {
      auto [last, ys] =
          rlx::scan([](const Tensor& h, const Tensor& xt) { return std::pair{h + xt, h + xt}; }, c,
                    {x}, {.reverse = reverse});
      return rlx::sum(ys) + 0.0 * rlx::sum(last);
    };
    std::vector<Tensor> g = rlx::grad(loss, {0, 1})(c0, xs);
    std::vector<double> dc = g[0].to_vector<double>(), dx = g[1].to_vector<double>();
    CHECK(dc == std::vector<double>{double(L), double(L)});
    for (int64_t t = 0; t < L; ++t)
      for (int64_t j = 0; j < 2; ++j)
        CHECK(dx[std::size_t(t * 2 + j)] == double(reverse ? t + 1 : L - t));
  }
}

TEST_CASE("rlx::scan's tuple carries share one dtype and keep their shapes") {
  Tensor a = rlx::zeros({3}, F64), b = rlx::zeros({3}, F32);
  Tensor xs = rlx::zeros({4, 3}, F64);
  const int line = __LINE__ + 3;
  std::string msg = test::check_error(
      [&] {
        rlx::scan([](const std::tuple<Tensor, Tensor>& c, const Tensor&) { return c; },
                  std::tuple{a, b}, {xs});
      },
      ErrorKind::Type,
      "the carry's tensors share one dtype; carry[0] is f64[3], carry[1] is f32[3]");
  CHECK(msg.find("test_scan.cpp:" + std::to_string(line)) != std::string::npos);
  test::check_error(
      [&] {
        rlx::scan(
            [](const std::tuple<Tensor, Tensor>& c, const Tensor& x) {
              return std::tuple<Tensor, Tensor>{std::get<0>(c) + x,
                                                rlx::concat({std::get<1>(c), x}, 0)};
            },
            std::tuple{a, a}, {xs});
      },
      ErrorKind::Shape, "the body's next carry[1] is f64[6], expected f64[3]");
  test::check_error(
      [&] {
        rlx::scan([](const Tensor& c, const Tensor& x) { return std::pair{c + x, c}; }, a, {xs},
                  {.checkpoints = 2});
      },
      ErrorKind::Value, "checkpoints apply to scans returning the final carry");
}

TEST_CASE("the JIT calls a scan's body on raw pointers: no allocation per step") {
  REQUIRE(backend_available(Backend::Jit));
  // A carry of 64 KiB (pooled blocks are counted): a run of 64 steps asks the pool for as many
  // blocks as a run of 4 (the result, the carry pair, the body's arena), not one per step.
  const int64_t n = 16384;
  const Shape s = sh({n}, F32);
  Graph body("step");
  NodeId h = body.input("h", s), x = body.input("x", s);
  body.set_outputs({body.tanh(body.add(body.mul(h, body.constant(0.5, F32)), x))});
  auto requests = [&](int64_t length) {
    Graph g("scan");
    NodeId h0 = g.input("h0", s), xs = g.input("xs", sh({length, n}, F32));
    g.set_outputs({g.scan_with_xs(h0, {xs}, body, uint32_t(length))});
    std::shared_ptr<const Executable> exe = compile(g, Backend::Jit);
    Buffer hv = test::random_buffer(s, 1), xv = test::random_buffer(sh({length, n}, F32), 2);
    std::vector<const Buffer*> leaves{&hv, &xv};
    exe->run(leaves); // warm
    MemoryStats before = memory_stats();
    Buffer out = exe->run(leaves).at(0);
    MemoryStats after = memory_stats();
    // The value is the interpreter's.
    CHECK(test::compare_runs(g, test::run_on(Backend::Interp, g, {hv, xv}),
                             test::run_on(Backend::Jit, g, {hv, xv}, true), "jit")
              .problems == "");
    return (after.reuses + after.fresh) - (before.reuses + before.fresh);
  };
  uint64_t short_run = requests(4), long_run = requests(64);
  INFO("pool requests: 4 steps " << short_run << ", 64 steps " << long_run);
  CHECK(long_run == short_run);
  CHECK(short_run <= 6);
}
