// tests/test_builders.cpp -- every Graph builder: the node it appends (op, attributes, inputs,
// shape), the exact subgraph of the composite ones, interpolation numerics, and builder errors.
#include "support/check_error.hpp"

#include <rlx/all.hpp>

#include <bit>
#include <cmath>
#include <limits>
#include <string>

using namespace rlx;
using namespace rlx::ir;
using rlx::Buffer;

namespace {

Shape f32(std::vector<int64_t> dims) { return Shape::of(dims, DType::F32); }
Shape of(std::vector<int64_t> dims, DType t) { return Shape::of(dims, t); }

/// " (at .../test_builders.cpp:<line>)" is how builders name the caller's line.
std::string at_line(int line) { return "test_builders.cpp:" + std::to_string(line) + ")"; }

/// CHECKs node `id`: op kind and attributes, inputs, shape, and that it records this file.
void check_node(const Graph& g, NodeId id, const Op& op, const std::vector<NodeId>& inputs,
                const Shape& shape) {
  const Node& n = g.node(id);
  INFO("node " << id << " = " << n.op << " : " << n.shape);
  CHECK(n.op == op);
  CHECK(n.inputs == inputs);
  CHECK(n.shape == shape);
  CHECK(n.loc.file.find("test_builders.cpp") != std::string::npos);
}

const std::vector<uint8_t>& bytes_of(const Graph& g, NodeId id) {
  return g.node(id).op.attrs<ConstantAttrs>().data.data;
}

/// The f32 values of a constant node, read from its little-endian bytes.
std::vector<float> f32_values(const Graph& g, NodeId id) {
  const auto& b = bytes_of(g, id);
  std::vector<float> out;
  for (std::size_t i = 0; i + 3 < b.size(); i += 4)
    out.push_back(std::bit_cast<float>(uint32_t(b[i]) | uint32_t(b[i + 1]) << 8 |
                                       uint32_t(b[i + 2]) << 16 | uint32_t(b[i + 3]) << 24));
  return out;
}

void check_values(const std::vector<float>& got, const std::vector<double>& want) {
  REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    INFO("index " << i << ": got " << got[i] << ", want " << want[i]);
    CHECK(got[i] == doctest::Approx(want[i]));
  }
}

} // namespace

// ---- Element-wise

TEST_CASE("builders: cast keeps the dims and changes the dtype") {
  Graph g("t");
  auto x = g.input("x", f32({2, 3}));
  auto c = g.cast(x, DType::I32);
  check_node(g, c, Op(OpKind::Cast, CastAttrs{DType::I32}), {x}, of({2, 3}, DType::I32));
}

TEST_CASE("builders: constant stores the value's little-endian bytes in a rank-0 node") {
  Graph g("t");
  using B = std::vector<uint8_t>;
  struct Case {
    double v;
    DType t;
    B bytes;
  };
  // 2.5f = 0x40200000; 1.5 = 0x3FF8000000000000; -2 as i16 = 0xFFFE; -1 as i64 = all ones;
  // -128 as i8 = 0x80; 2^32-1 as u32 = all ones; 200 as u8 = 0xC8; c64 3 = (0x40400000, 0).
  for (const Case& c :
       {Case{2.5, DType::F32, B{0x00, 0x00, 0x20, 0x40}},
        Case{1.5, DType::F64, B{0, 0, 0, 0, 0, 0, 0xF8, 0x3F}}, Case{-2, DType::I16, B{0xFE, 0xFF}},
        Case{-1, DType::I64, B(8, 0xFF)}, Case{-128, DType::I8, B{0x80}},
        Case{4294967295.0, DType::U32, B{0xFF, 0xFF, 0xFF, 0xFF}}, Case{200, DType::U8, B{0xC8}},
        Case{1, DType::Bool, B{0x01}},
        Case{3, DType::C64, B{0x00, 0x00, 0x40, 0x40, 0, 0, 0, 0}}}) {
    INFO(c.v << " as " << c.t);
    auto id = g.constant(c.v, c.t);
    check_node(g, id, Op(OpKind::Constant, ConstantAttrs{Bytes{c.bytes}}), {}, Shape::scalar(c.t));
  }
}

TEST_CASE("builders: constant lowers f16 and bf16 to an f32 constant plus a cast") {
  Graph g("t");
  auto h = g.constant(1.0, DType::F16);
  REQUIRE(g.len() == 2);
  // 1.0f = 0x3F800000
  check_node(g, NodeId(0), Op(OpKind::Constant, ConstantAttrs{Bytes{{0x00, 0x00, 0x80, 0x3F}}}), {},
             Shape::scalar(DType::F32));
  check_node(g, h, Op(OpKind::Cast, CastAttrs{DType::F16}), {NodeId(0)}, Shape::scalar(DType::F16));
  auto b = g.constant(-2.0, DType::BF16); // -2.0f = 0xC0000000
  CHECK(g.node(b).op == Op(OpKind::Cast, CastAttrs{DType::BF16}));
  CHECK(bytes_of(g, g.node(b).inputs.at(0)) == std::vector<uint8_t>{0, 0, 0, 0xC0});
}

TEST_CASE("builders: try_constant refuses what the dtype cannot hold and appends nothing") {
  Graph g("t");
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  CHECK_FALSE(g.try_constant(300, DType::I8).has_value());
  CHECK_FALSE(g.try_constant(0.5, DType::I32).has_value());
  CHECK_FALSE(g.try_constant(nan, DType::I32).has_value());
  CHECK_FALSE(g.try_constant(inf, DType::I64).has_value());
  CHECK_FALSE(g.try_constant(-1, DType::U8).has_value());
  CHECK_FALSE(g.try_constant(256, DType::U8).has_value());
  CHECK_FALSE(g.try_constant(-129, DType::I8).has_value());
  CHECK_FALSE(g.try_constant(4294967296.0, DType::U32).has_value());
  CHECK_FALSE(g.try_constant(0x1p63, DType::I64).has_value()); // one past INT64_MAX
  CHECK_FALSE(g.try_constant(2, DType::Bool).has_value());
  CHECK_FALSE(g.try_constant(1e39, DType::F32).has_value());  // beyond FLT_MAX ~3.4e38
  CHECK_FALSE(g.try_constant(65520, DType::F16).has_value()); // beyond 65504
  CHECK(g.len() == 0);
}

TEST_CASE("builders: try_constant accepts values the dtype holds") {
  Graph g("t");
  auto a = g.try_constant(2.5, DType::F32);
  REQUIRE(a.has_value());
  CHECK(bytes_of(g, *a) == std::vector<uint8_t>{0x00, 0x00, 0x20, 0x40});
  auto b = g.try_constant(-0x1p63, DType::I64); // INT64_MIN = 0x8000000000000000
  REQUIRE(b.has_value());
  CHECK(bytes_of(g, *b) == std::vector<uint8_t>{0, 0, 0, 0, 0, 0, 0, 0x80});
  auto c = g.try_constant(std::numeric_limits<double>::infinity(), DType::F32); // 0x7F800000
  REQUIRE(c.has_value());
  CHECK(bytes_of(g, *c) == std::vector<uint8_t>{0x00, 0x00, 0x80, 0x7F});
  auto d = g.try_constant(0.1, DType::F32); // rounds to nearest: 0x3DCCCCCD
  REQUIRE(d.has_value());
  CHECK(bytes_of(g, *d) == std::vector<uint8_t>{0xCD, 0xCC, 0xCC, 0x3D});
  auto e = g.try_constant(65504, DType::F16); // the largest f16: f32 constant + cast
  REQUIRE(e.has_value());
  CHECK(g.node(*e).op == Op(OpKind::Cast, CastAttrs{DType::F16}));
  CHECK(g.try_constant(std::numeric_limits<double>::quiet_NaN(), DType::F64).has_value());
  CHECK(g.try_constant(255, DType::U8).has_value());
  CHECK(g.try_constant(0, DType::Bool).has_value());
}

TEST_CASE("builders: constant names the value, the dtype and the caller's line when it does "
          "not fit") {
  Graph g("t");
  const int line = __LINE__ + 1;
  auto bad = [&] { g.constant(300, DType::I8); };
  std::string msg = test::check_error(bad, ErrorKind::Value, "constant: 300 does not fit i8");
  CHECK(msg.find(at_line(line)) != std::string::npos);
  CHECK(g.len() == 0);
}

TEST_CASE("builders: stop_gradient, where_ and clamp infer their shapes") {
  Graph g("t");
  auto x = g.input("x", f32({2, 3}));
  auto cond = g.input("c", of({2, 1}, DType::Bool));
  auto y = g.input("y", f32({3}));
  auto s = g.stop_gradient(x);
  check_node(g, s, Op(OpKind::StopGradient), {x}, f32({2, 3}));
  auto w = g.where_(cond, y, x); // [2,1], [3], [2,3] broadcast to [2,3]
  check_node(g, w, Op(OpKind::Where), {cond, y, x}, f32({2, 3}));
  auto c = g.clamp(x, -1.0, 1.0);
  check_node(g, c, Op(OpKind::Clamp, ClampAttrs{-1.0, 1.0}), {x}, f32({2, 3}));
  auto open = g.clamp(x, 0.0, kInf);
  check_node(g, open, Op(OpKind::Clamp, ClampAttrs{0.0, kInf}), {x}, f32({2, 3}));
}

TEST_CASE("builders: clamp with min above max is an error naming both bounds") {
  Graph g("t");
  auto x = g.input("x", f32({2}));
  test::check_error([&] { g.clamp(x, 2.0, 1.0); }, ErrorKind::Value,
                    "clamp: needs min <= max, got min 2 and max 1");
  CHECK(g.len() == 1);
}

// ---- Reductions and scans

TEST_CASE("builders: reduce, softmax, cumsum and arg reductions check their declared shapes") {
  Graph g("t");
  auto x = g.input("x", f32({2, 3, 4}));
  auto r = g.reduce(x, ReduceOp::Sum, {1}, true, f32({2, 1, 4}));
  check_node(g, r, Op(OpKind::ReduceSum, ReduceAttrs{{1}, true}), {x}, f32({2, 1, 4}));
  auto m = g.reduce(x, ReduceOp::Max, {0, -1}, false, f32({3}));
  check_node(g, m, Op(OpKind::ReduceMax, ReduceAttrs{{0, -1}, false}), {x}, f32({3}));
  auto s = g.softmax(x, -1, f32({2, 3, 4}));
  check_node(g, s, Op(OpKind::Softmax, AxisAttrs{-1}), {x}, f32({2, 3, 4}));
  auto c = g.cumsum(x, 1, true, f32({2, 3, 4}));
  check_node(g, c, Op(OpKind::Cumsum, CumsumAttrs{1, true}), {x}, f32({2, 3, 4}));
  auto amax = g.argmax(x, 2, false, of({2, 3}, DType::I64));
  check_node(g, amax, Op(OpKind::ArgMax, ArgReduceAttrs{2, false}), {x}, of({2, 3}, DType::I64));
  auto amin = g.argmin(x, 1, true, of({2, 1, 4}, DType::I64));
  check_node(g, amin, Op(OpKind::ArgMin, ArgReduceAttrs{1, true}), {x}, of({2, 1, 4}, DType::I64));
}

TEST_CASE("builders: a declared reduce shape that forgets keep_dim names both shapes and the "
          "line") {
  Graph g("t");
  auto x = g.input("x", f32({2, 3, 4}));
  const int line = __LINE__ + 1;
  auto bad = [&] { g.reduce(x, ReduceOp::Mean, {1}, true, f32({2, 4})); };
  std::string msg = test::check_error(
      bad, ErrorKind::Shape,
      "reduce_mean: declared output f32[2,4] does not match f32[2,1,4] inferred from operands "
      "f32[2,3,4]");
  CHECK(msg.find(at_line(line)) != std::string::npos);
}

// ---- Data movement and indexing

TEST_CASE("builders: reshape, gather and concat check their declared shapes") {
  Graph g("t");
  auto x = g.input("x", f32({2, 3, 4}));
  auto r = g.reshape(x, {6, -1}, f32({6, 4}));
  check_node(g, r, Op(OpKind::Reshape, ReshapeAttrs{{6, -1}}), {x}, f32({6, 4}));
  auto table = g.param("table", f32({10, 8}));
  auto idx = g.input("idx", of({2, 5}, DType::I64));
  auto e = g.gather(table, idx, 0, f32({2, 5, 8}));
  check_node(g, e, Op(OpKind::Gather, GatherAttrs{0}), {table, idx}, f32({2, 5, 8}));
  auto a = g.input("a", f32({2, 3}));
  auto b = g.input("b", f32({2, 5}));
  auto c = g.concat({a, b}, 1, f32({2, 8}));
  check_node(g, c, Op(OpKind::Concat, ConcatAttrs{1}), {a, b}, f32({2, 8}));
  test::check_error([&] { g.concat({a, b}, 1, f32({2, 9})); }, ErrorKind::Shape,
                    "concat: declared output f32[2,9] does not match f32[2,8]");
}

TEST_CASE("builders: reverse, expand, slice and pad infer their shapes") {
  Graph g("t");
  auto x = g.input("x", f32({3, 1}));
  auto r = g.reverse(x, {0, -1});
  check_node(g, r, Op(OpKind::Reverse, ReverseAttrs{{0, -1}}), {x}, f32({3, 1}));
  auto e = g.expand(x, {2, 3, 4}); // [3,1] right-aligned against [2,3,4]
  check_node(g, e, Op(OpKind::Expand, ExpandAttrs{{2, 3, 4}}), {x}, f32({2, 3, 4}));
  auto y = g.input("y", f32({10, 4}));
  auto s = g.slice(y, 0, 8, 3, -2); // rows 8, 6, 4
  check_node(g, s, Op(OpKind::Slice, SliceAttrs{0, 8, 3, -2}), {y}, f32({3, 4}));
  auto s1 = g.slice(y, 1, 1, 2); // step defaults to 1
  check_node(g, s1, Op(OpKind::Slice, SliceAttrs{1, 1, 2, 1}), {y}, f32({10, 2}));
  auto p = g.pad(y, {1, 0, 2, 2}, PadMode::Reflect); // [10+1+0, 4+2+2]
  check_node(g, p, Op(OpKind::Pad, PadAttrs{{1, 0, 2, 2}, PadMode::Reflect, 0.0}), {y},
             f32({11, 8}));
  auto pc = g.pad(y, {0, 1, 0, 0}, PadMode::Constant, 1.5);
  check_node(g, pc, Op(OpKind::Pad, PadAttrs{{0, 1, 0, 0}, PadMode::Constant, 1.5}), {y},
             f32({11, 4}));
}

// ---- The GraphExt short names

TEST_CASE("builders: mm and the binary short names infer shapes and dtypes") {
  Graph g("t");
  auto a = g.input("a", f32({2, 3}));
  auto w = g.param("w", f32({3, 4}));
  auto v = g.input("v", f32({3}));
  check_node(g, g.mm(a, w), Op(OpKind::MatMul), {a, w}, f32({2, 4}));
  check_node(g, g.add(a, v), Op(OpKind::Add), {a, v}, f32({2, 3}));
  check_node(g, g.sub(v, a), Op(OpKind::Sub), {v, a}, f32({2, 3}));
  check_node(g, g.mul(a, a), Op(OpKind::Mul), {a, a}, f32({2, 3}));
  check_node(g, g.div(a, v), Op(OpKind::Div), {a, v}, f32({2, 3}));
  check_node(g, g.eq(a, v), Op(OpKind::Eq), {a, v}, of({2, 3}, DType::Bool));
  check_node(g, g.lt(v, a), Op(OpKind::Lt), {v, a}, of({2, 3}, DType::Bool));
}

TEST_CASE("builders: the activation short names append their activation") {
  Graph g("t");
  auto x = g.input("x", f32({4}));
  check_node(g, g.gelu(x), Op(OpKind::Gelu), {x}, f32({4}));
  check_node(g, g.gelu_approx(x), Op(OpKind::GeluApprox), {x}, f32({4}));
  check_node(g, g.silu(x), Op(OpKind::Silu), {x}, f32({4}));
  check_node(g, g.relu(x), Op(OpKind::Relu), {x}, f32({4}));
  check_node(g, g.exp(x), Op(OpKind::Exp), {x}, f32({4}));
  check_node(g, g.sqrt(x), Op(OpKind::Sqrt), {x}, f32({4}));
  check_node(g, g.neg(x), Op(OpKind::Neg), {x}, f32({4}));
  check_node(g, g.tanh(x), Op(OpKind::Tanh), {x}, f32({4}));
}

TEST_CASE("builders: ln, sum, mean and sm infer their shapes") {
  Graph g("t");
  auto x = g.input("x", f32({2, 3, 4}));
  auto gamma = g.param("g", f32({4}));
  auto beta = g.param("b", f32({4}));
  check_node(g, g.ln(x, gamma, beta, 1e-6f), Op(OpKind::LayerNorm, NormAttrs{-1, 1e-6f}),
             {x, gamma, beta}, f32({2, 3, 4}));
  check_node(g, g.sum(x, {0, 2}, false), Op(OpKind::ReduceSum, ReduceAttrs{{0, 2}, false}), {x},
             f32({3}));
  check_node(g, g.mean(x, {-1}, true), Op(OpKind::ReduceMean, ReduceAttrs{{-1}, true}), {x},
             f32({2, 3, 1}));
  check_node(g, g.sm(x, 1), Op(OpKind::Softmax, AxisAttrs{1}), {x}, f32({2, 3, 4}));
}

TEST_CASE("builders: reshape_, transpose_, narrow_, concat_ and gather_ infer their shapes") {
  Graph g("t");
  auto x = g.input("x", f32({2, 3, 4}));
  check_node(g, g.reshape_(x, {-1, 4}), Op(OpKind::Reshape, ReshapeAttrs{{-1, 4}}), {x},
             f32({6, 4}));
  check_node(g, g.transpose_(x, {2, 0, 1}), Op(OpKind::Transpose, TransposeAttrs{{2, 0, 1}}), {x},
             f32({4, 2, 3}));
  check_node(g, g.narrow_(x, 1, 1, 2), Op(OpKind::Narrow, NarrowAttrs{1, 1, 2}), {x},
             f32({2, 2, 4}));
  auto y = g.input("y", f32({2, 1, 4}));
  check_node(g, g.concat_({x, y, x}, 1), Op(OpKind::Concat, ConcatAttrs{1}), {x, y, x},
             f32({2, 7, 4}));
  auto idx = g.input("idx", of({5}, DType::I32));
  check_node(g, g.gather_(x, idx, 1), Op(OpKind::Gather, GatherAttrs{1}), {x, idx}, f32({2, 5, 4}));
}

// ---- Matmul and linear layers

TEST_CASE("builders: linear_bias is a matmul plus an optional bias add") {
  Graph g("t");
  auto x = g.input("x", f32({2, 3}));
  auto w = g.param("w", f32({3, 5}));
  auto b = g.param("b", f32({5}));
  auto plain = g.linear_bias(x, w, std::nullopt);
  CHECK(g.len() == 4);
  check_node(g, plain, Op(OpKind::MatMul), {x, w}, f32({2, 5}));
  auto biased = g.linear_bias(x, w, b);
  REQUIRE(g.len() == 6);
  check_node(g, NodeId(4), Op(OpKind::MatMul), {x, w}, f32({2, 5}));
  check_node(g, biased, Op(OpKind::Add), {NodeId(4), b}, f32({2, 5}));
}

TEST_CASE("builders: linear_bias_act appends matmul, add and the activation in order") {
  Graph g("t");
  auto x = g.input("x", f32({2, 3}));
  auto w = g.param("w", f32({3, 5}));
  auto b = g.param("b", f32({5}));
  auto out = g.linear_bias_act(x, w, b, Activation::Gelu);
  REQUIRE(g.len() == 6);
  check_node(g, NodeId(3), Op(OpKind::MatMul), {x, w}, f32({2, 5}));
  check_node(g, NodeId(4), Op(OpKind::Add), {NodeId(3), b}, f32({2, 5}));
  check_node(g, out, Op(OpKind::Gelu), {NodeId(4)}, f32({2, 5}));
  CHECK(out == NodeId(5));
  auto act_only = g.linear_bias_act(x, w, std::nullopt, Activation::Relu);
  REQUIRE(g.len() == 8);
  check_node(g, NodeId(6), Op(OpKind::MatMul), {x, w}, f32({2, 5}));
  check_node(g, act_only, Op(OpKind::Relu), {NodeId(6)}, f32({2, 5}));
  auto neither = g.linear_bias_act(x, w, std::nullopt, std::nullopt);
  CHECK(g.len() == 9);
  check_node(g, neither, Op(OpKind::MatMul), {x, w}, f32({2, 5}));
}

TEST_CASE("builders: linear_bias refuses a bias that would grow the product and rolls back") {
  Graph g("t");
  auto x = g.input("x", f32({2, 3}));
  auto w = g.param("w", f32({3, 5}));
  auto b = g.param("b", f32({4, 1, 5}));
  const int line = __LINE__ + 1;
  auto bad = [&] { g.linear_bias_act(x, w, b, Activation::Relu); };
  std::string msg = test::check_error(
      bad, ErrorKind::Shape,
      "linear_bias: bias f32[4,1,5] must broadcast to the product f32[2,5] without changing it "
      "(got f32[4,2,5])");
  CHECK(msg.find(at_line(line)) != std::string::npos);
  CHECK(g.len() == 3); // the matmul and add it appended were dropped
}

TEST_CASE("builders: linear_fused and fused_matmul_bias_act emit one fused node") {
  Graph g("t");
  auto x = g.input("x", f32({2, 3}));
  auto w = g.param("w", f32({3, 5}));
  auto b = g.param("b", f32({5}));
  auto f = g.linear_fused(x, w, b, Activation::Silu, f32({2, 5}));
  check_node(g, f, Op(OpKind::FusedMatMulBiasAct, FusedMatMulAttrs{Activation::Silu}), {x, w, b},
             f32({2, 5}));
  auto h = g.fused_matmul_bias_act(x, w, b, std::nullopt, f32({2, 5}));
  check_node(g, h, Op(OpKind::FusedMatMulBiasAct, FusedMatMulAttrs{std::nullopt}), {x, w, b},
             f32({2, 5}));
  test::check_error([&] { g.linear_fused(x, w, b, std::nullopt, f32({2, 3})); }, ErrorKind::Shape,
                    "fused_matmul_bias_act: declared output f32[2,3] does not match f32[2,5]");
}

TEST_CASE("builders: shared_matmul_pair returns two matmuls of the same input in order") {
  Graph g("t");
  auto x = g.input("x", f32({2, 3}));
  auto w1 = g.param("w1", f32({3, 4}));
  auto w2 = g.param("w2", f32({3, 6}));
  auto [first, second] = g.shared_matmul_pair(x, w1, w2);
  REQUIRE(g.len() == 5);
  CHECK(first == NodeId(3));
  CHECK(second == NodeId(4));
  check_node(g, first, Op(OpKind::MatMul), {x, w1}, f32({2, 4}));
  check_node(g, second, Op(OpKind::MatMul), {x, w2}, f32({2, 6}));
}

TEST_CASE("builders: swiglu_ffn is silu(x@gate) * (x@up), then @down, from primitives") {
  Graph g("t");
  auto x = g.input("x", f32({2, 8}));
  auto up = g.param("up", f32({8, 16}));
  auto gate = g.param("gate", f32({8, 16}));
  auto down = g.param("down", f32({16, 8}));
  auto out = g.swiglu_ffn(x, up, gate, down);
  REQUIRE(g.len() == 9);
  check_node(g, NodeId(4), Op(OpKind::MatMul), {x, up}, f32({2, 16}));
  check_node(g, NodeId(5), Op(OpKind::MatMul), {x, gate}, f32({2, 16}));
  check_node(g, NodeId(6), Op(OpKind::Silu), {NodeId(5)}, f32({2, 16}));
  check_node(g, NodeId(7), Op(OpKind::Mul), {NodeId(6), NodeId(4)}, f32({2, 16}));
  check_node(g, out, Op(OpKind::MatMul), {NodeId(7), down}, f32({2, 8}));
  CHECK(out == NodeId(8));
}

TEST_CASE("builders: swiglu_ffn with a misfit down projection appends nothing") {
  Graph g("t");
  auto x = g.input("x", f32({2, 8}));
  auto up = g.param("up", f32({8, 16}));
  auto gate = g.param("gate", f32({8, 16}));
  auto down = g.param("down", f32({15, 8}));
  test::check_error([&] { g.swiglu_ffn(x, up, gate, down); }, ErrorKind::Shape,
                    "matmul: contracting dims differ: f32[2,16] @ f32[15,8] (16 != 15)");
  CHECK(g.len() == 4);
}

TEST_CASE("builders: fused_swiglu_ffn concatenates [up, gate], multiplies once, fuses, projects") {
  Graph g("t");
  auto x = g.input("x", f32({2, 8}));
  auto up = g.param("up", f32({8, 16}));
  auto gate = g.param("gate", f32({8, 16}));
  auto down = g.param("down", f32({16, 8}));
  auto out = g.fused_swiglu_ffn(x, up, gate, down, f32({2, 8}));
  REQUIRE(g.len() == 8);
  check_node(g, NodeId(4), Op(OpKind::Concat, ConcatAttrs{-1}), {up, gate}, f32({8, 32}));
  check_node(g, NodeId(5), Op(OpKind::MatMul), {x, NodeId(4)}, f32({2, 32}));
  check_node(g, NodeId(6), Op(OpKind::FusedSwiGLU, SwiGluAttrs{false}), {NodeId(5)}, f32({2, 16}));
  check_node(g, out, Op(OpKind::MatMul), {NodeId(6), down}, f32({2, 8}));
  CHECK(out == NodeId(7));
  test::check_error([&] { g.fused_swiglu_ffn(x, up, gate, down, f32({2, 16})); }, ErrorKind::Shape,
                    "matmul: declared output f32[2,16] does not match f32[2,8]");
  CHECK(g.len() == 8);
}

// ---- Normalisation

TEST_CASE("builders: layer_norm, layer_norm2d, group_norm, batch_norm_inference and rms_norm") {
  Graph g("t");
  auto x = g.input("x", f32({2, 5}));
  auto g5 = g.param("g5", f32({5}));
  auto b5 = g.param("b5", f32({5}));
  check_node(g, g.layer_norm(x, g5, b5, -1, 1e-5f, f32({2, 5})),
             Op(OpKind::LayerNorm, NormAttrs{-1, 1e-5f}), {x, g5, b5}, f32({2, 5}));
  check_node(g, g.rms_norm(x, g5, b5, 1e-6f), Op(OpKind::RmsNorm, NormAttrs{-1, 1e-6f}),
             {x, g5, b5}, f32({2, 5}));
  auto img = g.input("img", f32({1, 4, 2, 2}));
  auto g4 = g.param("g4", f32({4}));
  auto b4 = g.param("b4", f32({4}));
  check_node(g, g.layer_norm2d(img, g4, b4, 1e-6f), Op(OpKind::LayerNorm2d, EpsAttrs{1e-6f}),
             {img, g4, b4}, f32({1, 4, 2, 2}));
  check_node(g, g.group_norm(img, g4, b4, 2, 1e-5f),
             Op(OpKind::GroupNorm, GroupNormAttrs{2, 1e-5f}), {img, g4, b4}, f32({1, 4, 2, 2}));
  auto mean = g.param("mean", f32({4}));
  auto var = g.param("var", f32({4}));
  check_node(g, g.batch_norm_inference(img, g4, b4, mean, var, 1e-3f),
             Op(OpKind::BatchNormInference, EpsAttrs{1e-3f}), {img, g4, b4, mean, var},
             f32({1, 4, 2, 2}));
  test::check_error([&] { g.group_norm(img, g4, b4, 3, 1e-5f); }, ErrorKind::Shape,
                    "group_norm: channels do not divide into 3 groups (operands f32[1,4,2,2]");
  test::check_error([&] { g.layer_norm(x, g4, b5, -1, 1e-5f, f32({2, 5})); }, ErrorKind::Shape,
                    "layer_norm: gamma must have 5 elements, got f32[4]");
}

TEST_CASE("builders: fused residual norms take the bias as a third input only when given") {
  Graph g("t");
  auto x = g.input("x", f32({2, 5}));
  auto res = g.input("res", f32({2, 5}));
  auto bias = g.param("bias", f32({5}));
  auto gamma = g.param("gamma", f32({5}));
  auto beta = g.param("beta", f32({5}));
  check_node(g, g.fused_residual_ln(x, res, bias, gamma, beta, 1e-5f, f32({2, 5})),
             Op(OpKind::FusedResidualLN, FusedResidualNormAttrs{true, 1e-5f}),
             {x, res, bias, gamma, beta}, f32({2, 5}));
  check_node(g, g.fused_residual_ln(x, res, std::nullopt, gamma, beta, 1e-5f, f32({2, 5})),
             Op(OpKind::FusedResidualLN, FusedResidualNormAttrs{false, 1e-5f}),
             {x, res, gamma, beta}, f32({2, 5}));
  check_node(g, g.fused_residual_rms_norm(x, res, bias, gamma, beta, 1e-6f, f32({2, 5})),
             Op(OpKind::FusedResidualRmsNorm, FusedResidualNormAttrs{true, 1e-6f}),
             {x, res, bias, gamma, beta}, f32({2, 5}));
  check_node(g, g.fused_residual_rms_norm(x, res, std::nullopt, gamma, beta, 1e-6f, f32({2, 5})),
             Op(OpKind::FusedResidualRmsNorm, FusedResidualNormAttrs{false, 1e-6f}),
             {x, res, gamma, beta}, f32({2, 5}));
}

// ---- Attention and positions

namespace {
AttentionAttrs attn(MaskKind mask, std::optional<float> scale = std::nullopt,
                    std::optional<float> softcap = std::nullopt) {
  AttentionAttrs a;
  a.num_heads = 2;
  a.head_dim = 4;
  a.mask = mask.type;
  a.window = mask.window;
  a.score_scale = scale;
  a.attn_logit_softcap = softcap;
  return a;
}
} // namespace

TEST_CASE("builders: the attention variants set the mask, the scale and the softcap") {
  Graph g("t");
  auto q = g.input("q", f32({1, 3, 8}));
  auto k = g.input("k", f32({1, 5, 8}));
  auto v = g.input("v", f32({1, 5, 8}));
  auto mask = g.input("mask", f32({1, 5}));
  auto bias = g.input("bias", f32({1, 2, 3, 5}));
  const Shape out = f32({1, 3, 8});
  check_node(g, g.attention(q, k, v, mask, 2, 4, out),
             Op(OpKind::Attention, attn(MaskKind::custom())), {q, k, v, mask}, out);
  check_node(g, g.attention_opts(q, k, v, mask, 2, 4, out, 0.5f, 30.0f),
             Op(OpKind::Attention, attn(MaskKind::custom(), 0.5f, 30.0f)), {q, k, v, mask}, out);
  check_node(g, g.attention_kind(q, k, v, 2, 4, MaskKind::causal(), out),
             Op(OpKind::Attention, attn(MaskKind::causal())), {q, k, v}, out);
  check_node(g, g.attention_kind(q, k, v, 2, 4, MaskKind::none(), out),
             Op(OpKind::Attention, attn(MaskKind::none())), {q, k, v}, out);
  check_node(
      g,
      g.attention_kind_opts(q, k, v, 2, 4, MaskKind::sliding_window(2), out, 0.25f, std::nullopt),
      Op(OpKind::Attention, attn(MaskKind::sliding_window(2), 0.25f)), {q, k, v}, out);
  check_node(g, g.attention_bias(q, k, v, bias, 2, 4, out),
             Op(OpKind::Attention, attn(MaskKind::bias())), {q, k, v, bias}, out);
  check_node(g, g.attention_bias_opts(q, k, v, bias, 2, 4, out, 1.0f, 50.0f),
             Op(OpKind::Attention, attn(MaskKind::bias(), 1.0f, 50.0f)), {q, k, v, bias}, out);
  check_node(g, g.attention_(q, k, v, mask, 2, 4), Op(OpKind::Attention, attn(MaskKind::custom())),
             {q, k, v, mask}, out);
}

TEST_CASE("builders: attention_kind with a Custom or Bias mask is an error: they need a mask "
          "input") {
  Graph g("t");
  auto q = g.input("q", f32({1, 3, 8}));
  const int line = __LINE__ + 1;
  auto custom = [&] { g.attention_kind(q, q, q, 2, 4, MaskKind::custom(), f32({1, 3, 8})); };
  std::string msg =
      test::check_error(custom, ErrorKind::Value, "attention_kind: mask Custom needs a mask input");
  CHECK(msg.find(at_line(line)) != std::string::npos);
  test::check_error(
      [&] {
        g.attention_kind_opts(q, q, q, 2, 4, MaskKind::bias(), f32({1, 3, 8}), 1.0f, std::nullopt);
      },
      ErrorKind::Value, "attention_kind: mask Bias needs a mask input");
  CHECK(g.len() == 1);
}

TEST_CASE("builders: attention checks heads against the last axis and names the line") {
  Graph g("t");
  auto q = g.input("q", f32({1, 3, 8}));
  const int line = __LINE__ + 1;
  auto bad = [&] { g.attention_kind(q, q, q, 3, 4, MaskKind::causal(), f32({1, 3, 8})); };
  std::string msg = test::check_error(bad, ErrorKind::Shape,
                                      "attention: last axis must be num_heads*head_dim = 12");
  CHECK(msg.find(at_line(line)) != std::string::npos);
}

TEST_CASE("builders: rope variants set head_dim, n_rot and the pairing style") {
  Graph g("t");
  auto x = g.input("x", f32({1, 3, 16}));
  // cos and sin hold one angle per rotated pair: [seq, n_rot/2].
  auto cos = g.input("cos", f32({3, 4})), sin = g.input("sin", f32({3, 4}));
  auto cos4 = g.input("cos4", f32({3, 2})), sin4 = g.input("sin4", f32({3, 2}));
  auto cos2 = g.input("cos2", f32({3, 1})), sin2 = g.input("sin2", f32({3, 1}));
  const Shape s = f32({1, 3, 16});
  check_node(g, g.rope(x, cos, sin, 8), Op(OpKind::Rope, RopeAttrs{8, 8, RopeStyle::NeoX}),
             {x, cos, sin}, s);
  check_node(g, g.rope_n(x, cos4, sin4, 8, 4), Op(OpKind::Rope, RopeAttrs{8, 4, RopeStyle::NeoX}),
             {x, cos4, sin4}, s);
  check_node(g, g.rope_styled(x, cos, sin, 8, RopeStyle::GptJ),
             Op(OpKind::Rope, RopeAttrs{8, 8, RopeStyle::GptJ}), {x, cos, sin}, s);
  check_node(g, g.rope_n_styled(x, cos2, sin2, 8, 2, RopeStyle::GptJ),
             Op(OpKind::Rope, RopeAttrs{8, 2, RopeStyle::GptJ}), {x, cos2, sin2}, s);
  test::check_error([&] { g.rope_n(x, cos, sin, 8, 3); }, ErrorKind::Shape,
                    "rope: needs head_dim >= 1 and an even n_rot <= head_dim");
  test::check_error([&] { g.rope_n(x, cos, sin, 8, 4); }, ErrorKind::Shape,
                    "rope: cos ([seq, n_rot/2]) must have 6 elements, got f32[3,4]");
}

TEST_CASE("builders: axial_rope2d keeps the shape and records its attributes") {
  Graph g("t");
  auto x = g.input("x", f32({1, 16, 32}));
  check_node(g, g.axial_rope2d(x, 4, 4, 16, 2, 100.0f, 2),
             Op(OpKind::AxialRope2d, AxialRopeAttrs{4, 4, 16, 2, 100.0f, 2}), {x},
             f32({1, 16, 32}));
}

// ---- Convolution and pooling

TEST_CASE("builders: conv2d, im2col and conv_transpose2d infer NCHW output shapes") {
  Graph g("t");
  auto x = g.input("x", f32({1, 4, 8, 8}));
  auto w = g.param("w", f32({6, 2, 3, 3})); // groups 2: C_in/g = 2
  // (8 + 2*1 - 1*(3-1) - 1) / 2 + 1 = 4
  check_node(g, g.conv2d(x, w, {3, 3}, {2, 2}, {1, 1}, {1, 1}, 2),
             Op(OpKind::Conv2d, Conv2dAttrs{{3, 3}, {2, 2}, {1, 1}, {1, 1}, 2}), {x, w},
             f32({1, 6, 4, 4}));
  // 2x2 patches, stride 2 on 8x8: 4x4 positions -> [1*4*4, 4*2*2]
  check_node(g, g.im2col(x, {2, 2}, {2, 2}, {0, 0}, {1, 1}),
             Op(OpKind::Im2Col, Im2ColAttrs{{2, 2}, {2, 2}, {0, 0}, {1, 1}}), {x}, f32({16, 16}));
  auto y = g.input("y", f32({1, 4, 3, 3}));
  auto wt = g.param("wt", f32({4, 2, 3, 3}));
  // (3-1)*2 - 2*1 + 1*(3-1) + 1 + 1 = 6; C_out = 2 * groups 1
  check_node(
      g, g.conv_transpose2d(y, wt, {3, 3}, {2, 2}, {1, 1}, {1, 1}, {1, 1}, 1),
      Op(OpKind::ConvTranspose2d, ConvTranspose2dAttrs{{3, 3}, {2, 2}, {1, 1}, {1, 1}, {1, 1}, 1}),
      {y, wt}, f32({1, 2, 6, 6}));
}

TEST_CASE("builders: conv3d, conv_transpose3d and conv_transpose1d infer their output shapes") {
  Graph g("t");
  auto x = g.input("x", f32({1, 2, 4, 4, 4}));
  auto w = g.param("w", f32({3, 2, 3, 3, 3}));
  // (4 + 2 - 2 - 1) / 1 + 1 = 4 on each axis
  check_node(g, g.conv3d(x, w, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, 1),
             Op(OpKind::Conv3d, Conv3dAttrs{{1, 1, 1}, {1, 1, 1}, {1, 1, 1}, 1}), {x, w},
             f32({1, 3, 4, 4, 4}));
  auto y = g.input("y", f32({1, 2, 2, 2, 2}));
  auto wt = g.param("wt", f32({2, 3, 2, 2, 2}));
  // (2-1)*2 - 0 + 1*(2-1) + 0 + 1 = 4
  check_node(g, g.conv_transpose3d(y, wt, {2, 2, 2}, {0, 0, 0}, {1, 1, 1}, {0, 0, 0}, 1),
             Op(OpKind::ConvTranspose3d,
                ConvTranspose3dAttrs{{2, 2, 2}, {0, 0, 0}, {1, 1, 1}, {0, 0, 0}, 1}),
             {y, wt}, f32({1, 3, 4, 4, 4}));
  auto s = g.input("s", f32({1, 2, 5}));
  auto w1 = g.param("w1", f32({2, 3, 3}));
  // (5-1)*2 - 2*1 + 1*(3-1) + 1 + 1 = 10
  check_node(g, g.conv_transpose1d(s, w1, 3, 2, 1, 1, 1, 1),
             Op(OpKind::ConvTranspose1d, ConvTranspose1dAttrs{3, 2, 1, 1, 1, 1}), {s, w1},
             f32({1, 3, 10}));
}

TEST_CASE("builders: max_pool2d and avg_pool2d infer their output shapes") {
  Graph g("t");
  auto x = g.input("x", f32({1, 3, 8, 8}));
  check_node(g, g.max_pool2d(x, {2, 2}, {2, 2}, {0, 0}),
             Op(OpKind::MaxPool2d, Pool2dAttrs{{2, 2}, {2, 2}, {0, 0}}), {x}, f32({1, 3, 4, 4}));
  // (8 + 2 - 3) / 1 + 1 = 8
  check_node(g, g.avg_pool2d(x, {3, 3}, {1, 1}, {1, 1}),
             Op(OpKind::AvgPool2d, Pool2dAttrs{{3, 3}, {1, 1}, {1, 1}}), {x}, f32({1, 3, 8, 8}));
}

TEST_CASE("builders: conv2d with mismatched channels names both shapes and the line") {
  Graph g("t");
  auto x = g.input("x", f32({1, 3, 8, 8}));
  auto w = g.param("w", f32({4, 2, 3, 3}));
  const int line = __LINE__ + 1;
  auto bad = [&] { g.conv2d(x, w, {3, 3}, {1, 1}, {0, 0}, {1, 1}, 1); };
  std::string msg = test::check_error(
      bad, ErrorKind::Shape,
      "conv2d: weight expects 2 input channels, the input has 3 (operands f32[1,3,8,8], "
      "f32[4,2,3,3])");
  CHECK(msg.find(at_line(line)) != std::string::npos);
}

// ---- Errors of the inferring path

TEST_CASE("builders: mismatched shapes name the op, both shapes and the caller's line") {
  Graph g("t");
  auto a = g.input("a", f32({2, 3}));
  auto b = g.input("b", f32({4, 5}));
  const int add_line = __LINE__ + 1;
  auto bad_add = [&] { g.add(a, b); };
  std::string msg = test::check_error(bad_add, ErrorKind::Shape,
                                      "add: shapes do not broadcast: f32[2,3] vs f32[4,5]");
  CHECK(msg.find(at_line(add_line)) != std::string::npos);
  const int mm_line = __LINE__ + 1;
  auto bad_mm = [&] { g.mm(a, b); };
  msg = test::check_error(bad_mm, ErrorKind::Shape,
                          "matmul: contracting dims differ: f32[2,3] @ f32[4,5] (3 != 4)");
  CHECK(msg.find(at_line(mm_line)) != std::string::npos);
  test::check_error([&] { g.reshape_(a, {4, -1}); }, ErrorKind::Shape,
                    "reshape: cannot infer -1: 6 elements do not divide by 4 (operands f32[2,3])");
  test::check_error([&] { g.add(a, NodeId(99)); }, ErrorKind::Value,
                    "add: operand %99 is not in graph @t");
  CHECK(g.len() == 2);
}

TEST_CASE("builders: an inferring builder that a dynamic dim blocks asks for an explicit shape") {
  Graph g("t");
  auto a = g.input("a", Shape({Dim::dynamic(sym::kBatch), 3}, DType::F32));
  auto b = g.input("b", f32({2, 3}));
  const int line = __LINE__ + 1;
  auto bad = [&] { g.concat_({a, b}, 0); };
  std::string msg = test::check_error(
      bad, ErrorKind::Shape,
      "concat: cannot infer the output shape from operands f32[?batch,3], f32[2,3]");
  CHECK(msg.find("use the builder with an explicit shape") != std::string::npos);
  CHECK(msg.find(at_line(line)) != std::string::npos);
  // The explicit-shape builder accepts it.
  auto c = g.concat({a, b}, 0, Shape({Dim::dynamic("concat_rows"), 3}, DType::F32));
  CHECK(g.node(c).op == Op(OpKind::Concat, ConcatAttrs{0}));
}

// ---- Resampling: structure

TEST_CASE("builders: interpolate1d reshapes leading axes to rows, multiplies, reshapes back") {
  Graph g("t");
  auto x = g.input("x", f32({2, 1, 4}));
  auto y = g.interpolate1d(x, 7, InterpMode::Linear);
  REQUIRE(g.len() == 5);
  const Node& m = g.node(NodeId(1));
  CHECK(m.op.kind() == OpKind::Constant);
  CHECK(m.shape == f32({4, 7}));
  check_node(g, NodeId(2), Op(OpKind::Reshape, ReshapeAttrs{{2, 4}}), {x}, f32({2, 4}));
  check_node(g, NodeId(3), Op(OpKind::MatMul), {NodeId(2), NodeId(1)}, f32({2, 7}));
  check_node(g, y, Op(OpKind::Reshape, ReshapeAttrs{{2, 1, 7}}), {NodeId(3)}, f32({2, 1, 7}));
  // Align corners, 4 -> 7: pos_j = j * 3 / 6 = j / 2. Column j weights sample floor(pos) by
  // 1 - frac and the next one by frac. Row i = input sample, column j = output sample.
  check_values(f32_values(g, NodeId(1)), {
                                             1, .5, 0, 0,  0, 0,  0, // input 0
                                             0, .5, 1, .5, 0, 0,  0, // input 1
                                             0, 0,  0, .5, 1, .5, 0, // input 2
                                             0, 0,  0, 0,  0, .5, 1, // input 3
                                         });
}

TEST_CASE("builders: interpolate1d multiplies rank-1, rank-2 and dynamic inputs directly") {
  Graph g("t");
  auto v = g.input("v", f32({4}));
  auto a = g.interpolate1d(v, 3, InterpMode::Nearest);
  REQUIRE(g.len() == 3);
  check_node(g, a, Op(OpKind::MatMul), {v, NodeId(1)}, f32({3}));
  // Nearest, 4 -> 3: floor(j * 4 / 3) = 0, 1, 2.
  check_values(f32_values(g, NodeId(1)), {1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0});
  auto m = g.input("m", of({3, 4}, DType::F64));
  auto b = g.interpolate1d(m, 2, InterpMode::Linear);
  REQUIRE(g.len() == 6);
  CHECK(g.node(NodeId(4)).shape == of({4, 2}, DType::F64));
  check_node(g, b, Op(OpKind::MatMul), {m, NodeId(4)}, of({3, 2}, DType::F64));
  auto d = g.input("d", Shape({Dim::dynamic(sym::kBatch), 2, 4}, DType::F32));
  auto c = g.interpolate1d(d, 8, InterpMode::Linear);
  REQUIRE(g.len() == 9);
  check_node(g, c, Op(OpKind::MatMul), {d, NodeId(7)},
             Shape({Dim::dynamic(sym::kBatch), 2, 8}, DType::F32));
}

TEST_CASE("builders: interpolate1d of f16 builds its matrix as f32 plus a cast") {
  Graph g("t");
  auto x = g.input("x", of({3}, DType::F16));
  auto y = g.interpolate1d(x, 2, InterpMode::Linear);
  REQUIRE(g.len() == 4);
  CHECK(g.node(NodeId(1)).shape == f32({3, 2}));
  check_node(g, NodeId(2), Op(OpKind::Cast, CastAttrs{DType::F16}), {NodeId(1)},
             of({3, 2}, DType::F16));
  check_node(g, y, Op(OpKind::MatMul), {x, NodeId(2)}, of({2}, DType::F16));
}

TEST_CASE("builders: interpolate1d rejects integers, empty outputs and scalars") {
  Graph g("t");
  auto i = g.input("i", of({4}, DType::I32));
  auto x = g.input("x", f32({4}));
  auto s = g.input("s", f32({}));
  const int line = __LINE__ + 1;
  auto bad = [&] { g.interpolate1d(i, 3, InterpMode::Linear); };
  std::string msg = test::check_error(bad, ErrorKind::Type,
                                      "interpolate1d: needs a floating-point operand, got i32[4]");
  CHECK(msg.find(at_line(line)) != std::string::npos);
  test::check_error([&] { g.interpolate1d(x, 0, InterpMode::Linear); }, ErrorKind::Value,
                    "interpolate1d: output length must be in [1, 2^48], got 0");
  test::check_error([&] { g.interpolate1d(s, 2, InterpMode::Nearest); }, ErrorKind::Shape,
                    "interpolate1d: needs rank >= 1, got f32[]");
  CHECK(g.len() == 3);
}

TEST_CASE("builders: interpolate3d resamples W, then H, then D, skipping unchanged axes") {
  Graph g("t");
  auto x = g.input("x", f32({1, 2, 2, 3, 2}));
  auto y = g.interpolate3d(x, {3, 3, 4}, InterpMode::Linear, true);
  REQUIRE(g.len() == 11);
  // W: 2 -> 4 on rows 1*2*2*3 = 12.
  CHECK(g.node(NodeId(1)).shape == f32({2, 4}));
  check_node(g, NodeId(2), Op(OpKind::Reshape, ReshapeAttrs{{12, 2}}), {x}, f32({12, 2}));
  check_node(g, NodeId(3), Op(OpKind::MatMul), {NodeId(2), NodeId(1)}, f32({12, 4}));
  check_node(g, NodeId(4), Op(OpKind::Reshape, ReshapeAttrs{{1, 2, 2, 3, 4}}), {NodeId(3)},
             f32({1, 2, 2, 3, 4}));
  // H: 3 -> 3 is skipped. D: 2 -> 3 after moving D last: [1, 2, 3, 4, 2], rows 24.
  check_node(g, NodeId(5), Op(OpKind::Transpose, TransposeAttrs{{0, 1, 3, 4, 2}}), {NodeId(4)},
             f32({1, 2, 3, 4, 2}));
  CHECK(g.node(NodeId(6)).shape == f32({2, 3}));
  check_node(g, NodeId(7), Op(OpKind::Reshape, ReshapeAttrs{{24, 2}}), {NodeId(5)}, f32({24, 2}));
  check_node(g, NodeId(8), Op(OpKind::MatMul), {NodeId(7), NodeId(6)}, f32({24, 3}));
  check_node(g, NodeId(9), Op(OpKind::Reshape, ReshapeAttrs{{1, 2, 3, 4, 3}}), {NodeId(8)},
             f32({1, 2, 3, 4, 3}));
  check_node(g, y, Op(OpKind::Transpose, TransposeAttrs{{0, 1, 4, 2, 3}}), {NodeId(9)},
             f32({1, 2, 3, 3, 4}));
  // Align corners, 2 -> 3: pos = 0, 0.5, 1.
  check_values(f32_values(g, NodeId(6)), {1, .5, 0, 0, .5, 1});
}

TEST_CASE("builders: interpolate3d swaps H and W around the H pass") {
  Graph g("t");
  auto x = g.input("x", f32({1, 1, 2, 2, 2}));
  auto y = g.interpolate3d(x, {2, 4, 2}, InterpMode::Nearest, false);
  REQUIRE(g.len() == 7);
  check_node(g, NodeId(1), Op(OpKind::Transpose, TransposeAttrs{{0, 1, 2, 4, 3}}), {x},
             f32({1, 1, 2, 2, 2}));
  check_node(g, NodeId(3), Op(OpKind::Reshape, ReshapeAttrs{{4, 2}}), {NodeId(1)}, f32({4, 2}));
  check_node(g, NodeId(4), Op(OpKind::MatMul), {NodeId(3), NodeId(2)}, f32({4, 4}));
  check_node(g, NodeId(5), Op(OpKind::Reshape, ReshapeAttrs{{1, 1, 2, 2, 4}}), {NodeId(4)},
             f32({1, 1, 2, 2, 4}));
  check_node(g, y, Op(OpKind::Transpose, TransposeAttrs{{0, 1, 2, 4, 3}}), {NodeId(5)},
             f32({1, 1, 2, 4, 2}));
  // Nearest, 2 -> 4: floor(j * 2 / 4) = 0, 0, 1, 1.
  check_values(f32_values(g, NodeId(2)), {1, 1, 0, 0, 0, 0, 1, 1});
}

TEST_CASE("builders: interpolate3d to the same size returns x; bad inputs are errors") {
  Graph g("t");
  auto x = g.input("x", f32({1, 1, 2, 3, 4}));
  CHECK(g.interpolate3d(x, {2, 3, 4}, InterpMode::Linear, false) == x);
  CHECK(g.len() == 1);
  auto flat = g.input("flat", f32({2, 3, 4}));
  const int line = __LINE__ + 1;
  auto bad = [&] { g.interpolate3d(flat, {2, 3, 4}, InterpMode::Linear, true); };
  std::string msg = test::check_error(bad, ErrorKind::Shape,
                                      "interpolate3d: expects [N, C, D, H, W], got f32[2,3,4]");
  CHECK(msg.find(at_line(line)) != std::string::npos);
  test::check_error([&] { g.interpolate3d(x, {2, 0, 4}, InterpMode::Linear, true); },
                    ErrorKind::Value, "interpolate3d: out_dhw must be >= 1, got [2, 0, 4]");
  CHECK(g.len() == 2);
}

// ---- Resampling: numbers, through the interpreter

TEST_CASE("builders: interpolate1d resamples rows like torch with align_corners=True") {
  Graph g("t");
  auto x = g.input("x", f32({2, 1, 4}));
  g.set_outputs({g.interpolate1d(x, 7, InterpMode::Linear),
                 g.interpolate1d(x, 3, InterpMode::Linear),
                 g.interpolate1d(x, 6, InterpMode::Nearest)});
  std::vector<float> xs{0, 10, 20, 40, 1, 2, 3, 4};
  auto out = interp::run(g, {{"x", Buffer::f32({2, 1, 4}, xs)}});
  REQUIRE(out.size() == 3);
  // 4 -> 7: pos = j/2 = 0, .5, 1, 1.5, 2, 2.5, 3; e.g. pos 2.5 -> (20 + 40) / 2 = 30.
  check_values(out[0].to_f32(), {0, 5, 10, 15, 20, 30, 40, 1, 1.5, 2, 2.5, 3, 3.5, 4});
  // 4 -> 3: pos = j*3/2 = 0, 1.5, 3 -> 0, (10+20)/2, 40.
  check_values(out[1].to_f32(), {0, 15, 40, 1, 2.5, 4});
  // Nearest 4 -> 6: floor(j*4/6) = 0, 0, 1, 2, 2, 3.
  check_values(out[2].to_f32(), {0, 0, 10, 20, 20, 40, 1, 1, 2, 3, 3, 4});
}

namespace {
/// x[0, c, d, h, w] = 1000c + 100d + 10h + w on [1, 2, 2, 3, 2]. The field is linear along each
/// axis, so (tri)linear resampling reproduces it exactly at the sampled positions:
/// out = 1000c + 100*pos_d + 10*pos_h + pos_w.
std::vector<float> linear_field() {
  std::vector<float> v;
  for (int c = 0; c < 2; ++c)
    for (int d = 0; d < 2; ++d)
      for (int h = 0; h < 3; ++h)
        for (int w = 0; w < 2; ++w) v.push_back(float(1000 * c + 100 * d + 10 * h + w));
  return v;
}

std::vector<double> expected_field(const std::vector<double>& pd, const std::vector<double>& ph,
                                   const std::vector<double>& pw) {
  std::vector<double> v;
  for (int c = 0; c < 2; ++c)
    for (double d : pd)
      for (double h : ph)
        for (double w : pw) v.push_back(1000.0 * c + 100 * d + 10 * h + w);
  return v;
}
} // namespace

TEST_CASE("builders: interpolate3d with align_corners maps endpoints to endpoints") {
  Graph g("t");
  auto x = g.input("x", f32({1, 2, 2, 3, 2}));
  g.set_outputs({g.interpolate3d(x, {3, 3, 4}, InterpMode::Linear, true)});
  auto out = interp::run(g, {{"x", Buffer::f32({1, 2, 2, 3, 2}, linear_field())}});
  REQUIRE(out.size() == 1);
  CHECK(out[0].shape() == f32({1, 2, 3, 3, 4}));
  // D 2 -> 3: pos = j/2; H unchanged; W 2 -> 4: pos = j/3.
  check_values(out[0].to_f32(), expected_field({0, 0.5, 1}, {0, 1, 2}, {0, 1.0 / 3, 2.0 / 3, 1}));
}

TEST_CASE("builders: interpolate3d without align_corners uses clamped half-pixel positions") {
  Graph g("t");
  auto x = g.input("x", f32({1, 2, 2, 3, 2}));
  g.set_outputs({g.interpolate3d(x, {5, 3, 4}, InterpMode::Linear, false)});
  auto out = interp::run(g, {{"x", Buffer::f32({1, 2, 2, 3, 2}, linear_field())}});
  REQUIRE(out.size() == 1);
  CHECK(out[0].shape() == f32({1, 2, 5, 3, 4}));
  // D 2 -> 5: (j + .5) * 2/5 - .5 = -.3 -> 0, .1, .5, .9, 1.3 -> 1 (align_corners: j/4).
  // W 2 -> 4: (j + .5) / 2 - .5 = -.25 -> 0, .25, .75, 1.25 -> 1 (align_corners: j/3).
  check_values(out[0].to_f32(),
               expected_field({0, 0.1, 0.5, 0.9, 1}, {0, 1, 2}, {0, 0.25, 0.75, 1}));
}

TEST_CASE("builders: interpolate3d nearest replicates source voxels") {
  Graph g("t");
  auto x = g.input("x", f32({1, 1, 1, 2, 2}));
  g.set_outputs({g.interpolate3d(x, {1, 4, 3}, InterpMode::Nearest, true)});
  auto out = interp::run(g, {{"x", Buffer::f32({1, 1, 1, 2, 2}, std::vector<float>{1, 2, 3, 4})}});
  REQUIRE(out.size() == 1);
  // H 2 -> 4 picks rows 0, 0, 1, 1; W 2 -> 3 picks columns 0, 0, 1.
  check_values(out[0].to_f32(), {1, 1, 2, 1, 1, 2, 3, 3, 4, 3, 3, 4});
}

TEST_CASE("builders: the README example runs a linear layer in the interpreter") {
  Graph g("demo");
  auto x = g.input("x", f32({2, 3}));
  auto w = g.param("w", f32({3, 2}));
  auto b = g.param("b", f32({2}));
  auto h = g.linear_bias_act(x, w, b, Activation::Relu); // relu(x @ w + b)
  g.set_outputs({g.mul(h, g.constant(0.5, DType::F32))});
  auto out = interp::run(g, {{"x", Buffer::f32({2, 3}, std::vector<float>{1, 2, 3, 4, 5, 6})}},
                         {{"w", Buffer::f32({3, 2}, std::vector<float>{1, -1, 0, 1, 1, -1})},
                          {"b", Buffer::f32({2}, std::vector<float>{0.5f, 0})}});
  // Row 1: [1+0+3, -1+2-3] + b = [4.5, -2] -> relu [4.5, 0] -> * 0.5 = [2.25, 0].
  // Row 2: [4+0+6, -4+5-6] + b = [10.5, -5] -> [10.5, 0] -> [5.25, 0].
  REQUIRE(out.size() == 1);
  CHECK(out[0].to_f32() == std::vector<float>{2.25f, 0, 5.25f, 0});
}
