// tests/test_recurrent.cpp -- lstm, gru and rnn against torch.nn.LSTM/GRU/RNN (fixtures from
// tests/fixtures/make_recurrent.py): rlx::nn's outputs and final states, the gradients of a
// scalar loss with respect to the input, the initial states and the packed weights, the Graph
// builders' carry convention, pack_weights, and the errors.
#include "support/check_error.hpp"
#include "support/compare.hpp"

#include <rlx/all.hpp>
#include <rlx/nn.hpp>

#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>

using namespace rlx;
namespace fs = std::filesystem;

namespace {

struct Fixture {
  std::string kind;
  int64_t hidden = 0, layers = 0;
  bool bidir = false, batch_first = true, relu = false, init = false;
  std::map<std::string, Tensor> a; ///< every .npy of the case by file stem
};

Fixture load(const fs::path& dir) {
  Fixture f;
  std::ifstream p(dir / "params.txt");
  int bd = 0, bf = 0, re = 0, in = 0;
  p >> f.kind >> f.hidden >> f.layers >> bd >> bf >> re >> in;
  REQUIRE(p);
  f.bidir = bd, f.batch_first = bf, f.relu = re, f.init = in;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".npy")
      f.a.emplace(e.path().stem().string(), Tensor(load_npy(e.path().string())));
  return f;
}

std::vector<fs::path> cases() {
  std::vector<fs::path> out;
  for (const auto& e :
       fs::directory_iterator(fs::path(RLX_SOURCE_DIR) / "tests" / "fixtures" / "recurrent"))
    out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

void check_close(const Tensor& got, const Tensor& want, const std::string& what) {
  // f32: the references are float64 results rounded once; rlx computes in f32.
  const bool f64 = want.dtype() == DType::F64;
  rlx::test::check_close(
      got, want, f64 ? rlx::test::Tolerance{1e-10, 1e-12} : rlx::test::Tolerance{1e-4, 1e-5}, what);
}

nn::RecurrentOptions options(const Fixture& f) {
  return {f.hidden, f.layers, f.bidir, f.batch_first, f.relu};
}

/// The case's operands in ops.def order (x, weights, [states]).
std::vector<Tensor> operands(const Fixture& f) {
  std::vector<Tensor> ops{f.a.at("x"), f.a.at("w_ih"), f.a.at("w_hh")};
  if (f.kind == "gru") {
    ops.push_back(f.a.at("b_ih"));
    ops.push_back(f.a.at("b_hh"));
  } else {
    ops.push_back(f.a.at("bias"));
  }
  if (f.init) ops.push_back(f.a.at("h0"));
  if (f.init && f.kind == "lstm") ops.push_back(f.a.at("c0"));
  return ops;
}

std::vector<std::string> operand_names(const Fixture& f) {
  std::vector<std::string> n{"x", "w_ih", "w_hh"};
  if (f.kind == "gru") {
    n.push_back("b_ih");
    n.push_back("b_hh");
  } else {
    n.push_back("bias");
  }
  if (f.init) n.push_back("h0");
  if (f.init && f.kind == "lstm") n.push_back("c0");
  return n;
}

/// The fixture's layer through rlx::nn from operands in ops.def order.
nn::RecurrentResult run(const Fixture& f, std::span<const Tensor> o) {
  const bool gru = f.kind == "gru";
  nn::RecurrentWeights w{o[1], o[2], o[3], gru ? std::optional<Tensor>(o[4]) : std::nullopt};
  std::size_t s = gru ? 5 : 4;
  std::optional<Tensor> h0, c0;
  if (f.init) h0 = o[s];
  if (f.init && f.kind == "lstm") c0 = o[s + 1];
  if (f.kind == "lstm") return nn::lstm(o[0], w, options(f), h0, c0);
  if (gru) return nn::gru(o[0], w, options(f), h0);
  return nn::rnn(o[0], w, options(f), h0);
}

} // namespace

TEST_CASE("recurrent: rlx::nn's outputs and final states equal torch's") {
  auto dirs = cases();
  REQUIRE(dirs.size() >= 7);
  for (const fs::path& dir : dirs) {
    INFO("case " << dir.filename().string());
    Fixture f = load(dir);
    std::vector<Tensor> o = operands(f);
    nn::RecurrentResult r = run(f, o);
    check_close(r.output, f.a.at("y"), "output");
    check_close(r.h_n, f.a.at("hn"), "h_n");
    CHECK(r.c_n.has_value() == (f.kind == "lstm"));
    if (r.c_n) check_close(*r.c_n, f.a.at("cn"), "c_n");
  }
}

TEST_CASE("recurrent: gradients w.r.t. the input, the initial states and the packed weights "
          "equal torch's") {
  for (const fs::path& dir : cases()) {
    INFO("case " << dir.filename().string());
    Fixture f = load(dir);
    std::vector<Tensor> o = operands(f);
    const std::size_t n = o.size();
    Tensor gy = f.a.at("gy"), gh = f.a.at("gh");
    std::optional<Tensor> gc;
    if (f.kind == "lstm") gc = f.a.at("gc");
    // A six-operand function; the unused trailing arguments are not differentiated.
    auto loss = [&](Tensor a0, Tensor a1, Tensor a2, Tensor a3, Tensor a4, Tensor a5) {
      std::array<Tensor, 6> all{a0, a1, a2, a3, a4, a5};
      nn::RecurrentResult r = run(f, std::span<const Tensor>(all.data(), n));
      Tensor l = sum(r.output * gy) + sum(r.h_n * gh);
      if (r.c_n) l = l + sum(*r.c_n * *gc);
      return l;
    };
    while (o.size() < 6) o.push_back(o[0]);
    std::vector<int> argnums;
    for (std::size_t i = 0; i < n; ++i) argnums.push_back(int(i));
    std::vector<Tensor> g = grad(loss, argnums)(o[0], o[1], o[2], o[3], o[4], o[5]);
    REQUIRE(g.size() == n);
    std::vector<std::string> names = operand_names(f);
    for (std::size_t i = 0; i < n; ++i) check_close(g[i], f.a.at("d_" + names[i]), "d_" + names[i]);
  }
}

TEST_CASE("recurrent: pack_weights packs per-layer blocks like the fixtures' packed operands") {
  // gru_two_layers_bidirectional_initial_state: hidden 3, input 2, 2 layers, both directions.
  Fixture f = load(fs::path(RLX_SOURCE_DIR) / "tests/fixtures/recurrent" /
                   "gru_two_layers_bidirectional_initial_state");
  const int64_t H = 3, G = 3, I = 2, D = 2;
  std::vector<nn::LayerWeights> blocks;
  int64_t pi = 0, ph = 0, pb = 0;
  for (int64_t l = 0; l < 2; ++l)
    for (int64_t d = 0; d < D; ++d) {
      int64_t in = l == 0 ? I : D * H;
      blocks.push_back({reshape(narrow(f.a.at("w_ih"), 0, pi, G * H * in), {G * H, in}),
                        reshape(narrow(f.a.at("w_hh"), 0, ph, G * H * H), {G * H, H}),
                        narrow(f.a.at("b_ih"), 0, pb, G * H),
                        narrow(f.a.at("b_hh"), 0, pb, G * H)});
      pi += G * H * in, ph += G * H * H, pb += G * H;
    }
  nn::RecurrentWeights w = nn::pack_weights(blocks);
  nn::RecurrentResult r = nn::gru(f.a.at("x"), w, options(f), f.a.at("h0"));
  check_close(r.output, f.a.at("y"), "output");
  check_close(r.h_n, f.a.at("hn"), "h_n");
}

TEST_CASE("recurrent: lstm_carry returns y and recurrent_states reaches hn and cn of one node") {
  using namespace rlx::ir;
  Graph g("carry");
  const int64_t B = 2, S = 3, I = 4, H = 5;
  NodeId x = g.input("x", Shape({B, S, I}, DType::F32));
  NodeId wi = g.input("w_ih", Shape({4 * H, I}, DType::F32));
  NodeId wh = g.input("w_hh", Shape({4 * H, H}, DType::F32));
  NodeId b = g.input("bias", Shape({4 * H}, DType::F32));
  NodeId h0 = g.input("h0", Shape({1, B, H}, DType::F32));
  NodeId c0 = g.input("c0", Shape({1, B, H}, DType::F32));
  NodeId y = g.lstm_carry(x, wi, wh, b, h0, c0, H, 1, false, Shape({B, S, H}, DType::F32));
  CHECK(g.shape(y) == Shape({B, S, H}, DType::F32));
  RecurrentAttrs a;
  a.hidden_size = H;
  RecurrentOutputs r = g.recurrent_states(OpKind::Lstm, {x, wi, wh, b, h0, c0}, a);
  CHECK(g.node(r.packed).op.kind() == OpKind::Lstm);
  CHECK(g.shape(r.packed) == Shape({B * S * H + 2 * B * H}, DType::F32));
  CHECK(g.shape(r.hn) == Shape({1, B, H}, DType::F32));
  REQUIRE(r.cn.has_value());
  CHECK(g.shape(*r.cn) == Shape({1, B, H}, DType::F32));
  NodeId plain = g.lstm(x, wi, wh, b, H, 1, false, Shape({B, S, H}, DType::F32));
  CHECK(g.node(plain).op.kind() == OpKind::Lstm);
  CHECK_FALSE(g.node(plain).op.attrs<RecurrentAttrs>().carry);
  // The declared shape is checked against the inferred one, naming the op and the line.
  std::size_t before = g.len();
  std::string msg = test::check_error(
      [&] { g.lstm_carry(x, wi, wh, b, h0, c0, H, 1, false, Shape({B, S, 2 * H}, DType::F32)); },
      ErrorKind::Shape, "lstm_carry: declared output f32[2,3,10]");
  CHECK(msg.find("test_recurrent.cpp") != std::string::npos);
  CHECK(g.len() == before); // nothing left behind
  NodeId gi = g.input("g_ih", Shape({3 * H, I}, DType::F32));
  NodeId gh = g.input("g_hh", Shape({3 * H, H}, DType::F32));
  NodeId gb = g.input("g_b", Shape({3 * H}, DType::F32));
  CHECK(g.shape(g.gru(x, gi, gh, gb, gb, h0, H, 1, false, Shape({B, S, H}, DType::F32))) ==
        Shape({B, S, H}, DType::F32));
  test::check_error(
      [&] { g.gru(x, gi, gh, gb, gb, std::nullopt, H, 1, false, Shape({B, H}, DType::F32)); },
      ErrorKind::Shape, "gru: declared output f32[2,5] does not match f32[2,3,5]");
  test::check_error(
      [&] { g.gru(x, wi, wh, b, b, std::nullopt, H, 1, false, Shape({B, S, H}, DType::F32)); },
      ErrorKind::Shape, "gru: w_ih holds 80 elements; the packed layout needs 60");
}

TEST_CASE("recurrent: wrong packed sizes, states and dtypes are errors naming the op, the "
          "shapes and the line") {
  using namespace rlx::ir;
  Graph g("bad");
  NodeId x = g.input("x", Shape({2, 3, 4}, DType::F32));
  NodeId w = g.input("w", Shape({80}, DType::F32));   // 4 * 5 * 4: right for lstm hidden 5
  NodeId u = g.input("u", Shape({100}, DType::F32));  // 4 * 5 * 5
  NodeId u2 = g.input("u2", Shape({99}, DType::F32)); // one short
  NodeId b = g.input("b", Shape({20}, DType::F32));
  NodeId h_bad = g.input("h", Shape({2, 2, 5}, DType::F32));
  NodeId xd = g.input("xd", Shape({2, 3, 4}, DType::F64));
  std::string msg = test::check_error(
      [&] { g.lstm(x, w, u2, b, 5, 1, false, Shape({2, 3, 5}, DType::F32)); }, ErrorKind::Shape,
      "lstm: w_hh holds 99 elements; the packed layout needs 100 (hidden_size 5, num_layers 1");
  CHECK(msg.find("f32[2,3,4]") != std::string::npos);
  CHECK(msg.find("test_recurrent.cpp") != std::string::npos);
  test::check_error([&] { g.lstm(x, w, u, b, 5, 2, false, Shape({2, 3, 5}, DType::F32)); },
                    ErrorKind::Shape, "w_ih holds 80 elements; the packed layout needs 180");
  test::check_error(
      [&] { g.rnn(x, w, u, b, h_bad, 20, 1, false, false, Shape({2, 3, 20}, DType::F32)); },
      ErrorKind::Shape, "rnn: w_hh holds 100 elements; the packed layout needs 400");
  test::check_error(
      [&] { g.lstm_carry(x, w, u, b, h_bad, h_bad, 5, 1, false, Shape({2, 3, 5}, DType::F32)); },
      ErrorKind::Shape, "h0 must be [num_layers * directions, batch, hidden] = [1, 2, 5]");
  test::check_error([&] { g.lstm(xd, w, u, b, 5, 1, false, Shape({2, 3, 5}, DType::F64)); },
                    ErrorKind::Type, "lstm: operands must share x's dtype");
  test::check_error([&] { g.lstm(b, w, u, b, 5, 1, false, Shape({2, 3, 5}, DType::F32)); },
                    ErrorKind::Shape, "lstm: x must be [batch, seq, input]");
  test::check_error(
      [&] {
        nn::lstm(Tensor(load_npy(std::string(RLX_SOURCE_DIR) +
                                 "/tests/fixtures/recurrent/lstm_one_layer/x.npy")),
                 {zeros({16, 3}), zeros({16, 4}), zeros({16}), std::nullopt}, {.hidden = 4},
                 zeros({1, 2, 4}));
      },
      ErrorKind::Value, "nn::lstm: give both h0 and c0 or neither");
}

namespace {

/// The number of nodes of the gradient graph of a two-layer bidirectional `kind` over S steps
/// from initial states, with its final states (weights in the packed layout), and of its scans.
std::pair<std::size_t, int> gradient_nodes(ir::OpKind kind, int64_t S) {
  using namespace rlx::ir;
  const int64_t B = 2, I = 3, H = 4, L = 2, D = 2;
  const int64_t G = kind == OpKind::Lstm ? 4 : kind == OpKind::Gru ? 3 : 1;
  auto f64 = [](std::vector<int64_t> d) { return Shape::of(d, DType::F64); };
  Graph g("rec");
  std::vector<NodeId> ins{
      g.input("x", f64({B, S, I})), g.input("w_ih", f64({D * G * H * I + D * G * H * D * H})),
      g.input("w_hh", f64({L * D * G * H * H})), g.input("bias", f64({L * D * G * H}))};
  if (kind == OpKind::Gru) ins.push_back(g.input("b_hh", f64({L * D * G * H})));
  ins.push_back(g.input("h0", f64({L * D, B, H})));
  if (kind == OpKind::Lstm) ins.push_back(g.input("c0", f64({L * D, B, H})));
  g.set_outputs({g.add_inferred(Op(kind, RecurrentAttrs{H, L, true, true, false, true}), ins)});
  Graph d = autodiff::grad(g, ins);
  int scans = 0;
  for (const Node& n : d.nodes()) scans += n.op.kind() == OpKind::Scan;
  return {d.len(), scans};
}

} // namespace

TEST_CASE("recurrent: a gradient graph has as many nodes at 256 steps as at 4, with one scan "
          "per layer and direction") {
  for (ir::OpKind kind : {ir::OpKind::Lstm, ir::OpKind::Gru, ir::OpKind::Rnn}) {
    INFO(ir::op_name(kind));
    auto [short_len, short_scans] = gradient_nodes(kind, 4);
    auto [long_len, long_scans] = gradient_nodes(kind, 256);
    CHECK(long_len == short_len);
    CHECK(short_scans == 4);
    CHECK(long_scans == 4);
  }
}
