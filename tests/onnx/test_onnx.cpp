// tests/onnx/test_onnx.cpp -- rlx::onnx: TensorProto reading, import errors that name the op, the
// node and the opset, malformed files (every truncation and garbled bytes of real models), the
// BERT encoder layer exported by PyTorch (tests/fixtures/make_onnx_bert.py) on both backends,
// and Scan/Loop models written here (a small protobuf writer) against their recurrences.
#include <doctest/doctest.h>

#include <rlx/io/npy.hpp>
#include <rlx/memory.hpp>
#include <rlx/onnx.hpp>
#include <rlx/runtime.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <variant>

namespace fs = std::filesystem;
using rlx::Buffer;

namespace {

const fs::path kNode = "/usr/share/libonnx-testdata/data/node";
const fs::path kBert = fs::path(RLX_SOURCE_DIR) / "tests/fixtures/onnx_bert";

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// The error parse_model throws on `bytes`, or "" when it imports.
std::string import_error(const std::string& bytes, const rlx::onnx::LoadOptions& o = {}) {
  try {
    rlx::onnx::parse_model(bytes, "m.onnx", o);
    return "";
  } catch (const rlx::Error& e) {
    return e.what();
  }
}

std::vector<const Buffer*> leaves_of(const rlx::onnx::Model& m, const Buffer& x) {
  std::vector<const Buffer*> leaves;
  for (const rlx::ir::Node& n : m.graph.nodes()) {
    if (n.op.kind() == rlx::ir::OpKind::Input) leaves.push_back(&x);
    if (n.op.kind() == rlx::ir::OpKind::Param)
      leaves.push_back(&m.params.at(n.op.attrs<rlx::ir::LeafAttrs>().name));
  }
  return leaves;
}

// ---- A minimal ONNX writer (protobuf wire format) for one-node models built in a test.
std::string varint(uint64_t v) {
  std::string out;
  for (; v >= 0x80; v >>= 7) out += char((v & 0x7f) | 0x80);
  return out + char(v);
}
std::string field(int num, const std::string& bytes) { // length-delimited
  return varint(uint64_t(num) << 3 | 2) + varint(bytes.size()) + bytes;
}
std::string field_int(int num, int64_t v) {
  return varint(uint64_t(num) << 3) + varint(uint64_t(v));
}

/// A graph-valued attribute: a serialized GraphProto.
struct GraphBytes {
  std::string bytes;
};

struct OnnxAttr {
  std::string name;
  std::variant<int64_t, float, std::string, std::vector<std::string>, std::vector<int64_t>,
               GraphBytes>
      v;
};

/// A NodeProto named `name`.
std::string node_proto(const std::string& op, const std::vector<std::string>& inputs,
                       const std::vector<std::string>& outputs, const std::vector<OnnxAttr>& attrs,
                       const std::string& name = "rec") {
  std::string node;
  for (const std::string& n : inputs) node += field(1, n);
  for (const std::string& n : outputs) node += field(2, n);
  node += field(3, name) + field(4, op);
  for (const OnnxAttr& a : attrs) {
    std::string at = field(1, a.name);
    if (auto* i = std::get_if<int64_t>(&a.v)) at += field_int(3, *i) + field_int(20, 2);
    if (auto* f = std::get_if<float>(&a.v)) {
      char raw[4];
      std::memcpy(raw, f, 4);
      at += varint(2 << 3 | 5) + std::string(raw, 4) + field_int(20, 1);
    }
    if (auto* str = std::get_if<std::string>(&a.v)) at += field(4, *str) + field_int(20, 3);
    if (auto* list = std::get_if<std::vector<std::string>>(&a.v)) {
      for (const std::string& e : *list) at += field(9, e);
      at += field_int(20, 8);
    }
    if (auto* ints = std::get_if<std::vector<int64_t>>(&a.v)) {
      for (int64_t e : *ints) at += field_int(8, e);
      at += field_int(20, 7);
    }
    if (auto* g = std::get_if<GraphBytes>(&a.v)) at += field(6, g->bytes) + field_int(20, 5);
    node += field(5, at);
  }
  return node;
}

/// A ValueInfoProto of a tensor (TensorProto.DataType `elem`, e.g. 1 FLOAT, 7 INT64, 9 BOOL).
std::string value_info(const std::string& name, int elem, const std::vector<int64_t>& dims) {
  std::string shape;
  for (int64_t d : dims) shape += field(1, field_int(1, d));
  return field(1, name) + field(2, field(1, field_int(1, elem) + field(2, shape)));
}

/// A GraphProto of `nodes` (NodeProtos), initializers, inputs and outputs (ValueInfoProtos).
std::string graph_proto(const std::string& name, const std::vector<std::string>& nodes,
                        const std::vector<std::pair<std::string, Buffer>>& inits,
                        const std::vector<std::string>& inputs,
                        const std::vector<std::string>& outputs) {
  std::string g;
  for (const std::string& n : nodes) g += field(1, n);
  g += field(2, name);
  for (const auto& [n, value] : inits) g += field(5, rlx::onnx::write_tensor(value, n));
  for (const std::string& v : inputs) g += field(11, v);
  for (const std::string& v : outputs) g += field(12, v);
  return g;
}

std::string model_proto(const std::string& graph, int64_t opset) {
  return field_int(1, 7) + field(8, field(1, "") + field_int(2, opset)) + field(7, graph);
}

/// A ModelProto (opset 14) of one node `op` with float inputs `inputs` (name, dims), initializers
/// `inits`, outputs `outputs` (names; "" skips one) and attributes `attrs`.
std::string one_node_model(const std::string& op,
                           const std::vector<std::pair<std::string, std::vector<int64_t>>>& inputs,
                           const std::vector<std::pair<std::string, Buffer>>& inits,
                           const std::vector<std::string>& node_inputs,
                           const std::vector<std::string>& outputs,
                           const std::vector<OnnxAttr>& attrs) {
  std::vector<std::string> ins, outs;
  for (const auto& [name, dims] : inputs)
    ins.push_back(value_info(name, name == "lens" ? 7 : 1, dims));
  for (const std::string& n : outputs)
    if (!n.empty()) outs.push_back(field(1, n));
  return model_proto(
      graph_proto("g", {node_proto(op, node_inputs, outputs, attrs)}, inits, ins, outs), 14);
}

/// Deterministic values in [-1, 1) for a test's weights and inputs.
Buffer ramp(std::vector<int64_t> dims, int salt) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  std::vector<float> v(static_cast<std::size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    v[std::size_t(i)] = float(((i * 37 + salt * 11) % 41) - 20) / 20.0f;
  return Buffer::f32(dims, v);
}

/// The model's outputs on `backend` (the JIT unless told), its Inputs fed by name.
std::vector<Buffer> run_named(const rlx::onnx::Model& m, const std::map<std::string, Buffer>& in,
                              rlx::Backend backend = rlx::Backend::Jit) {
  std::vector<const Buffer*> leaves;
  for (const rlx::ir::Node& n : m.graph.nodes()) {
    if (n.op.kind() == rlx::ir::OpKind::Input)
      leaves.push_back(&in.at(n.op.attrs<rlx::ir::LeafAttrs>().name));
    if (n.op.kind() == rlx::ir::OpKind::Param)
      leaves.push_back(&m.params.at(n.op.attrs<rlx::ir::LeafAttrs>().name));
  }
  return rlx::compile(m.graph, backend)->run(leaves);
}

/// How many nodes of `kind` the graph has.
int count_ops(const rlx::ir::Graph& g, rlx::ir::OpKind kind) {
  int n = 0;
  for (const rlx::ir::Node& node : g.nodes()) n += node.op.kind() == kind;
  return n;
}

} // namespace

TEST_CASE("onnx: a tensor written and read back is the same buffer, with its name") {
  Buffer b = Buffer::f32({2, 3}, std::vector<float>{1, 2, 3, 4, 5, -6});
  std::string name;
  CHECK(rlx::onnx::read_tensor(rlx::onnx::write_tensor(b, "w"), "t", &name) == b);
  CHECK(name == "w");
}

TEST_CASE("onnx: typed int64_data is read, and a value count that misses the dims is an error") {
  // TensorProto{dims: [3], data_type: INT64, int64_data: [1, 2, 300]} written by hand:
  // field 1 varint 3, field 2 varint 7, field 7 packed varints 1 2 300 (0xac 0x02).
  std::string ok("\x08\x03\x10\x07\x3a\x04\x01\x02\xac\x02", 10);
  Buffer b = rlx::onnx::read_tensor(ok);
  CHECK(b.shape() == rlx::ir::Shape({3}, rlx::ir::DType::I64));
  CHECK(b.to_i64() == std::vector<int64_t>{1, 2, 300});
  std::string bad("\x08\x04\x10\x07\x3a\x04\x01\x02\xac\x02", 10); // dims [4]
  CHECK_THROWS_WITH_AS(rlx::onnx::read_tensor(bad, "t.pb"),
                       doctest::Contains("int64_data holds 3 values for i64[4]"), rlx::Error);
  std::string strings("\x08\x01\x10\x08", 4); // a STRING tensor
  CHECK_THROWS_WITH_AS(rlx::onnx::read_tensor(strings, "t.pb"),
                       doctest::Contains("STRING has no rlx dtype"), rlx::Error);
}

TEST_CASE("onnx: an op rlx does not map is an Unsupported error naming the op and the opset") {
  std::string bytes = read_file(kNode / "test_det_2d/model.onnx");
  REQUIRE(!bytes.empty());
  try {
    rlx::onnx::parse_model(bytes, "det.onnx");
    FAIL("Det imported");
  } catch (const rlx::Error& e) {
    CHECK(e.kind() == rlx::ErrorKind::Unsupported);
    CHECK(std::string(e.what()) ==
          "det.onnx: node '' (Det, opset 11): op type Det is not supported by rlx");
  }
}

TEST_CASE("onnx: an operand rlx needs at load time that is a graph input is a clear error") {
  std::string bytes = read_file(kNode / "test_reshape_reordered_all_dims/model.onnx");
  REQUIRE(!bytes.empty());
  std::string err = import_error(bytes);
  INFO(err);
  CHECK(err.find("(Reshape, opset 14): operand 1 (shape, 'shape') is only known at run time") !=
        std::string::npos);
  // Given as a LoadOptions value, the shape is read at load time and is no graph input.
  rlx::onnx::LoadOptions o;
  o.input_values["shape"] = Buffer::i64({3}, std::vector<int64_t>{4, 2, 3});
  rlx::onnx::Model m = rlx::onnx::parse_model(bytes, "m.onnx", o);
  CHECK(!m.graph.input_id("shape"));
  CHECK(m.graph.input_id("data"));
  CHECK(m.graph.shape(m.graph.outputs[0]) == rlx::ir::Shape({4, 2, 3}, rlx::ir::DType::F32));
}

TEST_CASE("onnx: every truncation of a model and garbled bytes give an error or a graph, never a "
          "crash") {
  for (const char* test :
       {"test_conv_with_strides_padding", "test_gemm_all_attributes", "test_slice_neg_steps"}) {
    std::string bytes = read_file(kNode / test / "model.onnx");
    REQUIRE(!bytes.empty());
    int errors = 0;
    for (std::size_t n = 0; n < bytes.size(); ++n)
      errors += !import_error(bytes.substr(0, n)).empty();
    CHECK(errors > int(bytes.size()) / 2); // most truncations are malformed
    // Each byte replaced by a few values (deterministic): never anything but rlx::Error.
    for (std::size_t i = 0; i < bytes.size(); ++i)
      for (unsigned char v : {0x00, 0x7f, 0x80, 0xff}) {
        std::string g = bytes;
        g[i] = char(v);
        CHECK_NOTHROW(import_error(g));
      }
  }
  // The exported BERT layer: truncations at 300 points spread over the file.
  std::string bert = read_file(kBert / "model.onnx");
  REQUIRE(bert.size() > 1000);
  for (std::size_t k = 0; k < 300; ++k)
    CHECK_NOTHROW(import_error(bert.substr(0, k * bert.size() / 300)));
  CHECK(import_error("not a model at all").find("m.onnx: ") == 0);
}

TEST_CASE("onnx: the BERT encoder layer exported by PyTorch matches PyTorch on both backends") {
  rlx::onnx::Model m = rlx::onnx::load((kBert / "model.onnx").string());
  Buffer x = rlx::io::load_npy((kBert / "x.npy").string());
  Buffer want = rlx::io::load_npy((kBert / "y.npy").string());
  CHECK(m.opset == 14);
  CHECK(m.graph.input_id("x"));
  CHECK(!m.params.empty());
  for (rlx::Backend backend : {rlx::Backend::Interp, rlx::Backend::Jit}) {
    std::vector<Buffer> got = rlx::compile(m.graph, backend)->run(leaves_of(m, x));
    REQUIRE(got.size() == 1);
    REQUIRE(got[0].shape() == want.shape());
    double worst = 0;
    for (int64_t i = 0; i < want.numel(); ++i)
      worst = std::max(worst, std::abs(got[0].get_f64(i) - want.get_f64(i)));
    INFO("backend " << int(backend));
    CHECK(worst < 1e-5);
  }
}

TEST_CASE("onnx: bidirectional LSTM and GRU exported by PyTorch match PyTorch on both backends") {
  const fs::path dir = fs::path(RLX_SOURCE_DIR) / "tests/fixtures/onnx_recurrent";
  rlx::onnx::Model m = rlx::onnx::load((dir / "model.onnx").string());
  Buffer x = rlx::io::load_npy((dir / "x.npy").string());
  std::vector<Buffer> want = {rlx::io::load_npy((dir / "y.npy").string()),
                              rlx::io::load_npy((dir / "h.npy").string())};
  // Default attributes: both nodes become rlx's recurrent ops (the unrolled path is compared
  // with them below).
  int ops = 0;
  for (const rlx::ir::Node& n : m.graph.nodes())
    ops += n.op.kind() == rlx::ir::OpKind::Lstm || n.op.kind() == rlx::ir::OpKind::Gru;
  CHECK(ops == 2);
  for (rlx::Backend backend : {rlx::Backend::Interp, rlx::Backend::Jit}) {
    std::vector<Buffer> got = rlx::compile(m.graph, backend)->run(leaves_of(m, x));
    REQUIRE(got.size() == 2);
    for (std::size_t k = 0; k < 2; ++k) {
      REQUIRE(got[k].shape() == want[k].shape());
      double worst = 0;
      for (int64_t i = 0; i < want[k].numel(); ++i)
        worst = std::max(worst, std::abs(got[k].get_f64(i) - want[k].get_f64(i)));
      INFO("backend " << int(backend) << ", output " << k);
      CHECK(worst < 1e-5);
    }
  }
}

TEST_CASE("onnx: an LSTM/GRU/RNN unrolled from primitives (a clip that never binds) matches rlx's "
          "recurrent op, per direction") {
  const int64_t S = 4, B = 2, I = 3, H = 5;
  struct Case {
    const char* op;
    int64_t gates;
    std::vector<OnnxAttr> extra;
  };
  const Case cases[] = {{"LSTM", 4, {}},
                        {"GRU", 3, {{"linear_before_reset", int64_t(1)}}},
                        {"RNN", 1, {}},
                        {"RNN", 1, {{"activations", std::vector<std::string>{"Relu", "Relu"}}}}};
  for (const Case& c : cases) {
    for (const char* dir : {"forward", "reverse", "bidirectional"}) {
      CAPTURE(c.op);
      CAPTURE(dir);
      const int64_t D = std::string(dir) == "bidirectional" ? 2 : 1;
      if (c.extra.size() == 1 && c.extra[0].name == "activations" && D == 1) continue;
      std::vector<std::pair<std::string, Buffer>> inits = {{"W", ramp({D, c.gates * H, I}, 1)},
                                                           {"R", ramp({D, c.gates * H, H}, 2)},
                                                           {"B", ramp({D, 2 * c.gates * H}, 3)},
                                                           {"h0", ramp({D, B, H}, 4)}};
      std::vector<std::string> ins = {"X", "W", "R", "B", "", "h0"};
      std::vector<std::string> outs = {"Y", "Y_h"};
      if (std::string(c.op) == "LSTM") {
        inits.push_back({"c0", ramp({D, B, H}, 5)});
        ins.push_back("c0");
        outs.push_back("Y_c");
      }
      std::vector<OnnxAttr> attrs = c.extra;
      attrs.push_back({"direction", std::string(dir)});
      attrs.push_back({"hidden_size", H});
      std::map<std::string, Buffer> feed = {{"X", ramp({S, B, I}, 6)}};
      rlx::onnx::Model op_model = rlx::onnx::parse_model(
          one_node_model(c.op, {{"X", {S, B, I}}}, inits, ins, outs, attrs), "op.onnx");
      attrs.push_back({"clip", 1e6f});
      rlx::onnx::Model unrolled = rlx::onnx::parse_model(
          one_node_model(c.op, {{"X", {S, B, I}}}, inits, ins, outs, attrs), "unrolled.onnx");
      auto has_recurrent = [](const rlx::onnx::Model& m) {
        for (const rlx::ir::Node& n : m.graph.nodes())
          if (n.op.kind() == rlx::ir::OpKind::Lstm || n.op.kind() == rlx::ir::OpKind::Gru ||
              n.op.kind() == rlx::ir::OpKind::Rnn)
            return true;
        return false;
      };
      CHECK(has_recurrent(op_model));
      CHECK(!has_recurrent(unrolled));
      std::vector<Buffer> a = run_named(op_model, feed), b = run_named(unrolled, feed);
      REQUIRE(a.size() == outs.size());
      REQUIRE(b.size() == outs.size());
      CHECK(a[0].shape() == rlx::ir::Shape({S, D, B, H}, rlx::ir::DType::F32));
      for (std::size_t k = 0; k < a.size(); ++k) {
        REQUIRE(a[k].shape() == b[k].shape());
        for (int64_t i = 0; i < a[k].numel(); ++i)
          CHECK(a[k].get_f64(i) == doctest::Approx(b[k].get_f64(i)).epsilon(1e-5));
      }
    }
  }
}

TEST_CASE("onnx: an LSTM with input_forget=1 couples its gates (f = 1 - i) on both backends") {
  const int64_t S = 4, B = 2, I = 3, H = 2;
  const Buffer w = ramp({1, 4 * H, I}, 1), r = ramp({1, 4 * H, H}, 2), bias = ramp({1, 8 * H}, 3);
  const Buffer x = ramp({S, B, I}, 6);
  // The recurrence in double, ONNX's gate order i, o, f, c; the forget rows of W, R and B unused.
  std::vector<double> h(std::size_t(B * H), 0.0), c(std::size_t(B * H), 0.0), want_y;
  auto sigmoid = [](double v) { return 1.0 / (1.0 + std::exp(-v)); };
  for (int64_t t = 0; t < S; ++t) {
    std::vector<double> hn(h.size()), cn(c.size());
    for (int64_t b = 0; b < B; ++b)
      for (int64_t j = 0; j < H; ++j) {
        auto pre = [&](int64_t gate) {
          const int64_t row = gate * H + j;
          double v = bias.get_f64(row) + bias.get_f64(4 * H + row);
          for (int64_t k = 0; k < I; ++k)
            v += w.get_f64(row * I + k) * x.get_f64((t * B + b) * I + k);
          for (int64_t k = 0; k < H; ++k) v += r.get_f64(row * H + k) * h[std::size_t(b * H + k)];
          return v;
        };
        const double i = sigmoid(pre(0)), o = sigmoid(pre(1)), g = std::tanh(pre(3));
        const std::size_t at = std::size_t(b * H + j);
        cn[at] = (1.0 - i) * c[at] + i * g;
        hn[at] = o * std::tanh(cn[at]);
      }
    h = hn, c = cn;
    want_y.insert(want_y.end(), h.begin(), h.end());
  }
  rlx::onnx::Model m = rlx::onnx::parse_model(
      one_node_model("LSTM", {{"X", {S, B, I}}}, {{"W", w}, {"R", r}, {"B", bias}},
                     {"X", "W", "R", "B"}, {"Y", "Y_h", "Y_c"},
                     {{"hidden_size", H}, {"input_forget", int64_t(1)}}),
      "coupled.onnx");
  for (rlx::Backend backend : {rlx::Backend::Interp, rlx::Backend::Jit}) {
    CAPTURE(int(backend));
    std::vector<Buffer> got = run_named(m, {{"X", x}}, backend);
    REQUIRE(got.size() == 3);
    REQUIRE(got[0].numel() == int64_t(want_y.size()));
    for (std::size_t i = 0; i < want_y.size(); ++i)
      CHECK(got[0].get_f64(int64_t(i)) == doctest::Approx(want_y[i]).epsilon(1e-5));
    for (std::size_t i = 0; i < c.size(); ++i) {
      CHECK(got[1].get_f64(int64_t(i)) == doctest::Approx(h[i]).epsilon(1e-5));
      CHECK(got[2].get_f64(int64_t(i)) == doctest::Approx(c[i]).epsilon(1e-5));
    }
  }
  // The same node without coupling computes something else, so the checks above can fail.
  rlx::onnx::Model plain = rlx::onnx::parse_model(
      one_node_model("LSTM", {{"X", {S, B, I}}}, {{"W", w}, {"R", r}, {"B", bias}},
                     {"X", "W", "R", "B"}, {"Y", "Y_h", "Y_c"}, {{"hidden_size", H}}),
      "plain.onnx");
  CHECK(std::abs(run_named(plain, {{"X", x}})[2].get_f64(0) - c[0]) > 1e-3);
}

TEST_CASE("onnx: an RNN's sequence_lens masks the steps past each length, forward and reverse") {
  const int64_t S = 5, B = 2, I = 3, H = 4, L = 2; // batch 1 has length L
  std::vector<std::pair<std::string, Buffer>> inits = {
      {"W", ramp({1, H, I}, 1)}, {"R", ramp({1, H, H}, 2)}, {"B", ramp({1, 2 * H}, 3)}};
  Buffer x = ramp({S, B, I}, 7);
  std::vector<double> head(static_cast<std::size_t>(L * B * I));
  for (std::size_t i = 0; i < head.size(); ++i) head[i] = x.get_f64(int64_t(i));
  Buffer x_head = Buffer::from_f64(rlx::ir::Shape({L, B, I}, rlx::ir::DType::F32), head);
  for (const char* dir : {"forward", "reverse"}) {
    CAPTURE(dir);
    std::vector<OnnxAttr> attrs = {{"hidden_size", H}, {"direction", std::string(dir)}};
    rlx::onnx::Model m =
        rlx::onnx::parse_model(one_node_model("RNN", {{"X", {S, B, I}}, {"lens", {B}}}, inits,
                                              {"X", "W", "R", "B", "lens"}, {"Y", "Y_h"}, attrs),
                               "rnn.onnx");
    // The same RNN on the first L steps only, without sequence_lens.
    rlx::onnx::Model short_m = rlx::onnx::parse_model(
        one_node_model("RNN", {{"X", {L, B, I}}}, inits, {"X", "W", "R", "B"}, {"Y", "Y_h"}, attrs),
        "short.onnx");
    auto lens = [&](int64_t second) { return Buffer::i64({B}, std::vector<int64_t>{S, second}); };
    std::vector<Buffer> full = run_named(m, {{"X", x}, {"lens", lens(S)}});
    std::vector<Buffer> part = run_named(m, {{"X", x}, {"lens", lens(L)}});
    std::vector<Buffer> ref = run_named(short_m, {{"X", x_head}});
    // Y [S, 1, B, H]: batch 0 as in the full run; batch 1 as the L-step run, then zeros.
    for (int64_t t = 0; t < S; ++t)
      for (int64_t b = 0; b < B; ++b)
        for (int64_t j = 0; j < H; ++j) {
          int64_t i = (t * B + b) * H + j;
          double want = b == 0 ? full[0].get_f64(i) : t < L ? ref[0].get_f64(i) : 0.0;
          CHECK(part[0].get_f64(i) == doctest::Approx(want).epsilon(1e-6));
        }
    // Y_h [1, B, H]: batch 1's state is the L-step run's.
    for (int64_t j = 0; j < H; ++j) {
      CHECK(part[1].get_f64(j) == doctest::Approx(full[1].get_f64(j)).epsilon(1e-6));
      CHECK(part[1].get_f64(H + j) == doctest::Approx(ref[1].get_f64(H + j)).epsilon(1e-6));
    }
    // The L-step run differs from the full one, so the checks above can fail.
    CHECK(std::abs(ref[1].get_f64(H) - full[1].get_f64(H)) > 1e-3);
  }
}

TEST_CASE("onnx: an LSTM/GRU/RNN attribute rlx cannot honour is an error naming it") {
  const int64_t S = 3, B = 1, I = 2, H = 2;
  auto lstm = [&](std::vector<OnnxAttr> attrs) {
    std::vector<std::pair<std::string, std::vector<int64_t>>> inputs = {{"X", {S, B, I}}};
    std::vector<std::string> ins = {"X", "W", "R"};
    attrs.push_back({"hidden_size", H});
    return one_node_model("LSTM", inputs,
                          {{"W", ramp({2, 4 * H, I}, 1)}, {"R", ramp({2, 4 * H, H}, 2)}}, ins,
                          {"Y"}, attrs);
  };
  std::vector<OnnxAttr> bidi = {{"direction", std::string("bidirectional")}};
  auto with = [&](OnnxAttr a) {
    std::vector<OnnxAttr> v = bidi;
    v.push_back(a);
    return v;
  };
  std::string err = import_error(
      lstm(with({"activations",
                 std::vector<std::string>{"Sigmoid", "Gelu", "Tanh", "Sigmoid", "Tanh", "Tanh"}})));
  CHECK(err.find("node 'rec' (LSTM, opset 14): attribute 'activations' names 'Gelu'") !=
        std::string::npos);
  err = import_error(
      lstm(with({"activations", std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"}})));
  CHECK(err.find("attribute 'activations' has 3 functions; LSTM with direction 'bidirectional' "
                 "takes 6") != std::string::npos);
  err = import_error(lstm({{"direction", std::string("sideways")}}));
  CHECK(err.find("attribute 'direction' is 'sideways'") != std::string::npos);
  std::string long_seq =
      one_node_model("RNN", {{"X", {int64_t(1) << 20, 1, I}}},
                     {{"W", ramp({1, H, I}, 1)}, {"R", ramp({1, H, H}, 2)}}, {"X", "W", "R"}, {"Y"},
                     {{"hidden_size", H}, {"clip", 3.0f}});
  CHECK(
      import_error(long_seq).find("sequence length 1048576 with 1 direction(s) needs the unrolled "
                                  "recurrence") != std::string::npos);
}

TEST_CASE("onnx: a symbolic input dim becomes a dynamic dim that binding specializes") {
  const fs::path dir = fs::path(RLX_SOURCE_DIR) / "tests/fixtures/onnx_dynamic";
  rlx::onnx::Model m = rlx::onnx::load((dir / "model.onnx").string());
  auto x_id = m.graph.input_id("x");
  REQUIRE(x_id);
  const rlx::ir::Shape& xs = m.graph.shape(*x_id);
  REQUIRE(xs.rank() == 2);
  CHECK(xs.dims()[0] == rlx::ir::Dim::dynamic("batch"));
  CHECK(xs.dims()[1] == rlx::ir::Dim(8));
  CHECK(m.graph.shape(m.graph.outputs[0]).dims()[0] == rlx::ir::Dim::dynamic("batch"));
  Buffer x = rlx::io::load_npy((dir / "x.npy").string());
  Buffer want = rlx::io::load_npy((dir / "y.npy").string());
  rlx::ir::DimBinding b;
  b.set("batch", 3);
  rlx::ir::Graph bound = m.graph.bind(b);
  m.graph = bound;
  std::vector<Buffer> got = rlx::compile(bound, rlx::Backend::Jit)->run(leaves_of(m, x));
  REQUIRE(got[0].shape() == want.shape());
  for (int64_t i = 0; i < want.numel(); ++i)
    CHECK(got[0].get_f64(i) == doctest::Approx(want.get_f64(i)).epsilon(1e-5));
}

TEST_CASE("onnx: every node-test model, truncated and garbled at fixed points, never crashes the "
          "importer") {
  REQUIRE(fs::is_directory(kNode));
  std::vector<fs::path> dirs;
  for (const auto& e : fs::directory_iterator(kNode)) dirs.push_back(e.path());
  std::sort(dirs.begin(), dirs.end());
  uint64_t state = 0x9e3779b97f4a7c15ull; // xorshift64: the same bytes on every run
  auto next = [&] {
    state ^= state << 13, state ^= state >> 7, state ^= state << 17;
    return state;
  };
  int imported = 0;
  for (const fs::path& dir : dirs) {
    std::string bytes = read_file(dir / "model.onnx");
    if (bytes.empty()) continue;
    imported += import_error(bytes).empty();
    for (int k = 0; k < 8; ++k) {
      CHECK_NOTHROW(import_error(bytes.substr(0, next() % bytes.size())));
      std::string g = bytes;
      for (int j = 0; j < 1 + k; ++j) g[next() % g.size()] = char(next());
      CHECK_NOTHROW(import_error(g));
    }
  }
  CHECK(imported > 200); // the unmodified models that need no load-time inputs import
}

TEST_CASE(
    "onnx: ~100-byte models whose Expand, Tile or ConstantOfShape make 2^64 bytes are errors") {
  const int64_t big = int64_t(1) << 31;
  struct Case {
    const char* test;
    const char* operand;
    Buffer value;
    const char* needle;
  };
  const Case cases[] = {
      {"test_expand_dim_changed", "new_shape", Buffer::i64({3}, std::vector<int64_t>{big, 3, big}),
       "expand: shape f32[2147483648,3,2147483648] is too large"},
      {"test_constantofshape_int_zeros", "x", Buffer::i64({2}, std::vector<int64_t>{big, big}),
       "[2147483648,2147483648] is too large"},
      {"test_tile", "y", Buffer::i64({4}, std::vector<int64_t>{int64_t(1) << 62, 1, 1, 1}),
       "repeats 4611686018427387904 of axis 0 (size 2) make more than 2^48 elements"}};
  for (const Case& c : cases) {
    CAPTURE(c.test);
    std::string bytes = read_file(kNode / c.test / "model.onnx");
    REQUIRE(!bytes.empty());
    CHECK(bytes.size() < 200);
    rlx::onnx::LoadOptions o;
    o.input_values[c.operand] = c.value;
    std::string err = import_error(bytes, o);
    INFO(err);
    CHECK(err.find(c.needle) != std::string::npos);
  }
}

TEST_CASE("onnx: a tensor's value count is checked before its buffer is allocated") {
  // TensorProto{dims: [1024, 1024], data_type: FLOAT} without values: 4 MiB, over a 1 MiB limit.
  std::string few("\x08\x80\x08\x08\x80\x08\x10\x01", 8);
  // dims [2^22, 2^22]: 64 TiB of floats from 12 bytes.
  std::string huge("\x08\x80\x80\x80\x02\x08\x80\x80\x80\x02\x10\x01", 12);
  std::size_t saved = rlx::memory_limit();
  rlx::set_memory_limit(std::size_t(1) << 20);
  for (const std::string& t : {few, huge}) {
    try {
      rlx::onnx::read_tensor(t, "t.pb");
      FAIL("read");
    } catch (const rlx::Error& e) {
      INFO(e.what());
      CHECK(e.kind() == rlx::ErrorKind::Parse);
      CHECK(std::string(e.what()).find("float_data holds 0 values") != std::string::npos);
    }
  }
  rlx::set_memory_limit(saved);
  // dims [2^24, 2^24] of floats are 2^50 bytes: more than any tensor may have.
  std::string impossible("\x08\x80\x80\x80\x08\x08\x80\x80\x80\x08\x10\x01", 12);
  CHECK_THROWS_WITH_AS(rlx::onnx::read_tensor(impossible, "t.pb"),
                       doctest::Contains("t.pb: 281474976710656 elements of f32 are more than"),
                       rlx::Error);
}

// ---- Scan and Loop (graph-valued attributes)

namespace {

/// Scan (opset 11) with states a, b [2], a reversed scan input x [3, 2], a scan input w [2, 3]
/// along axis 1 and a captured initializer k; outputs the final states, y (the new a each
/// step, stacked along axis 1) and z (b - the old a, stacked in reverse).
std::string two_state_scan(const std::string& body_name = "step") {
  std::string body =
      graph_proto(body_name,
                  {node_proto("Add", {"a_in", "x_t"}, {"a_out"}, {}, "n1"),
                   node_proto("Mul", {"b_in", "w_t"}, {"bw"}, {}, "n2"),
                   node_proto("Mul", {"a_out", "k"}, {"ak"}, {}, "n3"),
                   node_proto("Add", {"bw", "ak"}, {"b_out"}, {}, "n4"),
                   node_proto("Identity", {"a_out"}, {"y"}, {}, "n5"),
                   node_proto("Sub", {"b_out", "a_in"}, {"z"}, {}, "n6")},
                  {},
                  {value_info("a_in", 1, {2}), value_info("b_in", 1, {2}),
                   value_info("x_t", 1, {2}), value_info("w_t", 1, {2})},
                  {field(1, "a_out"), field(1, "b_out"), field(1, "y"), field(1, "z")});
  std::vector<OnnxAttr> attrs{{"body", GraphBytes{body}},
                              {"num_scan_inputs", int64_t(2)},
                              {"scan_input_directions", std::vector<int64_t>{1, 0}},
                              {"scan_input_axes", std::vector<int64_t>{0, 1}},
                              {"scan_output_axes", std::vector<int64_t>{1, 0}},
                              {"scan_output_directions", std::vector<int64_t>{0, 1}}};
  std::string graph = graph_proto(
      "g", {node_proto("Scan", {"a", "b", "x", "w"}, {"a_f", "b_f", "ys", "zs"}, attrs, "scan")},
      {{"k", Buffer::f32({2}, std::vector<float>{0.5f, -2.0f})}},
      {value_info("a", 1, {2}), value_info("b", 1, {2}), value_info("x", 1, {3, 2}),
       value_info("w", 1, {2, 3})},
      {field(1, "a_f"), field(1, "b_f"), field(1, "ys"), field(1, "zs")});
  return model_proto(graph, 11);
}

/// Loop (opset 11) of `trips` iterations (an initializer, or the graph input M when trips < 0)
/// summing its counter into s (f32): outputs the final s and the running sums. `cond_node`
/// computes the body's condition output c_out (from c and s_out).
std::string counter_loop(int64_t trips, const std::string& cond_node = "") {
  std::string cond =
      cond_node.empty() ? node_proto("Identity", {"c"}, {"c_out"}, {}, "keep") : cond_node;
  std::string body =
      graph_proto("sum_body",
                  {node_proto("Cast", {"i"}, {"fi"}, {{"to", int64_t(1)}}, "as_float"),
                   node_proto("Add", {"s", "fi"}, {"s_out"}, {}, "add"), cond,
                   node_proto("Identity", {"s_out"}, {"acc"}, {}, "acc")},
                  {}, {value_info("i", 7, {}), value_info("c", 9, {}), value_info("s", 1, {})},
                  {field(1, "c_out"), field(1, "s_out"), field(1, "acc")});
  std::vector<std::pair<std::string, Buffer>> inits;
  std::vector<std::string> inputs{value_info("s0", 1, {})};
  if (trips >= 0)
    inits.emplace_back("M", Buffer::i64({}, std::vector<int64_t>{trips}));
  else
    inputs.push_back(value_info("M", 7, {}));
  std::string graph = graph_proto(
      "g",
      {node_proto("Loop", {"M", "", "s0"}, {"s_f", "sums"}, {{"body", GraphBytes{body}}}, "loop")},
      inits, inputs, {field(1, "s_f"), field(1, "sums")});
  return model_proto(graph, 11);
}

} // namespace

TEST_CASE("onnx: a Scan with two states, a reversed input and a captured value matches its "
          "recurrence on both backends") {
  rlx::onnx::Model m = rlx::onnx::parse_model(two_state_scan(), "scan.onnx");
  CHECK(count_ops(m.graph, rlx::ir::OpKind::Scan) == 1);
  std::map<std::string, Buffer> in{
      {"a", ramp({2}, 1)}, {"b", ramp({2}, 2)}, {"x", ramp({3, 2}, 3)}, {"w", ramp({2, 3}, 4)}};
  // The recurrence, step by step.
  const float k[2] = {0.5f, -2.0f};
  std::vector<float> a = in["a"].to_f32(), b = in["b"].to_f32(), x = in["x"].to_f32(),
                     w = in["w"].to_f32();
  std::vector<float> ys(6), zs(6);
  for (int t = 0; t < 3; ++t)
    for (int i = 0; i < 2; ++i) {
      float a_old = a[i];
      a[i] += x[(2 - t) * 2 + i];               // x reversed along axis 0
      b[i] = b[i] * w[i * 3 + t] + a[i] * k[i]; // w sliced along axis 1
      ys[i * 3 + t] = a[i];                     // stacked along axis 1
      zs[(2 - t) * 2 + i] = b[i] - a_old;       // stacked in reverse
    }
  const std::vector<Buffer> want{Buffer::f32({2}, a), Buffer::f32({2}, b), Buffer::f32({2, 3}, ys),
                                 Buffer::f32({3, 2}, zs)};
  for (rlx::Backend backend : {rlx::Backend::Interp, rlx::Backend::Jit}) {
    std::vector<Buffer> got = run_named(m, in, backend);
    REQUIRE(got.size() == 4);
    for (std::size_t o = 0; o < 4; ++o) {
      INFO("backend " << int(backend) << ", output " << o);
      REQUIRE(got[o].shape() == want[o].shape());
      for (int64_t i = 0; i < want[o].numel(); ++i)
        CHECK(got[o].get_f64(i) == doctest::Approx(want[o].get_f64(i)).epsilon(1e-6));
    }
  }
}

TEST_CASE("onnx: a Loop summing its counter becomes one scan (unrolled when its condition reads "
          "the counter) and matches on both backends") {
  rlx::onnx::Model m = rlx::onnx::parse_model(counter_loop(5), "loop.onnx");
  CHECK(count_ops(m.graph, rlx::ir::OpKind::Scan) == 1);
  for (rlx::Backend backend : {rlx::Backend::Interp, rlx::Backend::Jit}) {
    std::vector<Buffer> got =
        run_named(m, {{"s0", Buffer::f32({}, std::vector<float>{0.5f})}}, backend);
    REQUIRE(got.size() == 2);
    CHECK(got[0].shape() == rlx::ir::Shape({}, rlx::ir::DType::F32));
    CHECK(got[0].to_f32() == std::vector<float>{10.5f});
    CHECK(got[1].to_f32() == std::vector<float>{0.5f, 1.5f, 3.5f, 6.5f, 10.5f});
  }
  // A condition on the counter (i < M) is true at every iteration, which the unrolled loop
  // shows iteration by iteration.
  rlx::onnx::Model unrolled = rlx::onnx::parse_model(
      counter_loop(5, node_proto("Less", {"i", "M"}, {"c_out"}, {}, "stop")), "loop.onnx");
  CHECK(count_ops(unrolled.graph, rlx::ir::OpKind::Scan) == 0);
  std::vector<Buffer> got =
      run_named(unrolled, {{"s0", Buffer::f32({}, std::vector<float>{0.5f})}});
  REQUIRE(got.size() == 2);
  CHECK(got[0].to_f32() == std::vector<float>{10.5f});
  CHECK(got[1].to_f32() == std::vector<float>{0.5f, 1.5f, 3.5f, 6.5f, 10.5f});
}

TEST_CASE("onnx: a Loop whose body needs its counter at load time is unrolled (test_loop11)") {
  std::string bytes = read_file(kNode / "test_loop11/model.onnx");
  REQUIRE(!bytes.empty());
  rlx::onnx::LoadOptions o;
  o.input_values["trip_count"] = Buffer::i64({}, std::vector<int64_t>{5});
  o.input_values["cond"] =
      Buffer::from_i64(rlx::ir::Shape({}, rlx::ir::DType::Bool), std::vector<int64_t>{1});
  rlx::onnx::Model m = rlx::onnx::parse_model(bytes, "loop11.onnx", o);
  CHECK(count_ops(m.graph, rlx::ir::OpKind::Scan) == 0); // the body slices x at the counter
  for (rlx::Backend backend : {rlx::Backend::Interp, rlx::Backend::Jit}) {
    std::vector<Buffer> got =
        run_named(m, {{"y", Buffer::f32({1}, std::vector<float>{-2})}}, backend);
    REQUIRE(got.size() == 2);
    CHECK(got[0].to_f32() == std::vector<float>{13}); // -2 + 1 + 2 + 3 + 4 + 5
    CHECK(got[1].to_f32() == std::vector<float>{-1, 1, 4, 8, 13});
  }
}

TEST_CASE("onnx: a Loop rlx cannot run as a fixed number of steps is refused naming the node") {
  // A condition computed from the state may end the loop early.
  std::string err =
      import_error(counter_loop(5, node_proto("Less", {"s_out", "s"}, {"c_out"}, {}, "stop")));
  INFO(err);
  CHECK(err.find("m.onnx: node 'loop' (Loop, opset 11): the body's condition output 'c_out' is "
                 "not provably true at every iteration") == 0);
  // The trip count as a graph input is only known at run time.
  err = import_error(counter_loop(-1));
  INFO(err);
  CHECK(err.find("node 'loop' (Loop, opset 11): the trip count M ('M') is only known at run "
                 "time") != std::string::npos);
  // Given at load time, the same model imports.
  rlx::onnx::LoadOptions o;
  o.input_values["M"] = Buffer::i64({}, std::vector<int64_t>{3});
  CHECK(import_error(counter_loop(-1), o).empty());
}

TEST_CASE("onnx: malformed or unsupported Scan bodies are errors naming the node, never a crash") {
  auto scan_model = [](const std::vector<std::string>& nodes,
                       const std::vector<std::string>& body_inputs, const std::string& out,
                       std::vector<std::pair<std::string, std::vector<int64_t>>> states) {
    std::string body = graph_proto("bad", nodes, {}, body_inputs, {field(1, out)});
    std::vector<std::string> ins, names;
    for (const auto& [name, dims] : states) {
      ins.push_back(value_info(name, name == "n" ? 7 : 1, dims));
      names.push_back(name);
    }
    ins.push_back(value_info("x", 1, {3, 2}));
    names.push_back("x");
    std::string graph = graph_proto(
        "g",
        {node_proto("Scan", names, {"o"},
                    {{"body", GraphBytes{body}}, {"num_scan_inputs", int64_t(1)}}, "scan")},
        {}, ins, {field(1, "o")});
    return model_proto(graph, 11);
  };
  auto error_of = [](const std::string& bytes) {
    std::string e = import_error(bytes);
    INFO(e);
    CHECK(e.find("m.onnx: node 'scan' (Scan, opset 11): ") == 0);
    return e;
  };
  const std::string add = node_proto("Add", {"s", "x_t"}, {"o"}, {}, "add");
  const std::string s_in = value_info("s", 1, {2}), x_in = value_info("x_t", 1, {2});
  // The body takes one input too few.
  CHECK(error_of(scan_model({add}, {s_in}, "o", {{"s", {2}}}))
            .find("body 'bad' has 1 inputs, but the node gives it 2") != std::string::npos);
  // The body reads a name defined nowhere.
  CHECK(error_of(scan_model({node_proto("Add", {"s", "nowhere"}, {"o"}, {}, "add")}, {s_in, x_in},
                            "o", {{"s", {2}}}))
            .find("operand 1 'nowhere' is not defined") != std::string::npos);
  // The state's shape changes in the body.
  CHECK(
      error_of(scan_model(
                   {add, node_proto("ReduceSum", {"o"}, {"r"}, {{"keepdims", int64_t(0)}}, "sum")},
                   {s_in, x_in}, "r", {{"s", {2}}}))
          .find("the body's state output 0 is f32[] but the state is f32[2]") != std::string::npos);
  // States of dtypes no one carry holds (i64 is not exact in f64).
  // States of dtypes no one carry holds (i64 is not exact in f64): s f32[2] and n i64[].
  std::string mixed = model_proto(
      graph_proto(
          "g",
          {node_proto(
              "Scan", {"s", "n", "x"}, {"o", "n_f"},
              {{"body",
                GraphBytes{graph_proto(
                    "bad", {add, node_proto("Identity", {"n_in"}, {"n_out"}, {}, "keep")}, {},
                    {s_in, value_info("n_in", 7, {}), x_in}, {field(1, "o"), field(1, "n_out")})}},
               {"num_scan_inputs", int64_t(1)}},
              "scan")},
          {}, {value_info("s", 1, {2}), value_info("n", 7, {}), value_info("x", 1, {3, 2})},
          {field(1, "o"), field(1, "n_f")}),
      11);
  CHECK(error_of(mixed).find("have dtypes no single carry holds exactly") != std::string::npos);
  // The body given as an INT attribute.
  std::string as_int = model_proto(
      graph_proto("g",
                  {node_proto("Scan", {"s", "x"}, {"o"},
                              {{"body", int64_t(3)}, {"num_scan_inputs", int64_t(1)}}, "scan")},
                  {}, {value_info("s", 1, {2}), value_info("x", 1, {3, 2})}, {field(1, "o")}),
      11);
  CHECK(error_of(as_int).find("attribute 'body' has the wrong type") != std::string::npos);
  // Bodies nested 17 deep: refused while decoding.
  std::string body = graph_proto("b", {add}, {}, {s_in, x_in}, {field(1, "o")});
  for (int level = 0; level < 17; ++level)
    body = graph_proto(
        "b",
        {node_proto("Scan", {"s", "x_t"}, {"o"},
                    {{"body", GraphBytes{body}}, {"num_scan_inputs", int64_t(1)}}, "scan")},
        {}, {s_in, x_in}, {field(1, "o")});
  std::string deep = import_error(model_proto(
      graph_proto(
          "g",
          {node_proto("Scan", {"s", "x"}, {"o"},
                      {{"body", GraphBytes{body}}, {"num_scan_inputs", int64_t(1)}}, "scan")},
          {}, {value_info("s", 1, {2}), value_info("x", 1, {3, 2})}, {field(1, "o")}),
      11));
  INFO(deep);
  CHECK(deep.find("graphs nested more than 16 deep are not supported") != std::string::npos);
  // Every truncation, and every byte garbled, of a Scan and a Loop model: errors or graphs.
  for (const std::string& bytes : {two_state_scan(), counter_loop(4)}) {
    for (std::size_t n = 0; n < bytes.size(); ++n) CHECK_NOTHROW(import_error(bytes.substr(0, n)));
    for (std::size_t i = 0; i < bytes.size(); ++i)
      for (unsigned char v : {0x00, 0x7f, 0xff}) {
        std::string g = bytes;
        g[i] = char(v);
        CHECK_NOTHROW(import_error(g));
      }
  }
}

TEST_CASE("onnx: a Scan inside a Scan's body reads an initializer two graphs out") {
  // Outer: s [2] over the rows of x [3, 2]; inner: s over the two values of the row, adding
  // v * k with k an initializer of the model's graph. So s_f = s0 + (sum of x) * k.
  std::string inner =
      graph_proto("inner",
                  {node_proto("Mul", {"v", "k"}, {"vk"}, {}, "mul"),
                   node_proto("Add", {"t", "vk"}, {"t_out"}, {}, "add")},
                  {}, {value_info("t", 1, {2}), value_info("v", 1, {})}, {field(1, "t_out")});
  std::vector<OnnxAttr> scan1{{"body", GraphBytes{inner}}, {"num_scan_inputs", int64_t(1)}};
  std::string outer =
      graph_proto("outer", {node_proto("Scan", {"s_in", "row"}, {"s_out"}, scan1, "inner_scan")},
                  {}, {value_info("s_in", 1, {2}), value_info("row", 1, {2})}, {field(1, "s_out")});
  std::vector<OnnxAttr> scan2{{"body", GraphBytes{outer}}, {"num_scan_inputs", int64_t(1)}};
  std::string bytes = model_proto(
      graph_proto("g", {node_proto("Scan", {"s", "x"}, {"s_f"}, scan2, "outer_scan")},
                  {{"k", Buffer::f32({2}, std::vector<float>{2.0f, -1.0f})}},
                  {value_info("s", 1, {2}), value_info("x", 1, {3, 2})}, {field(1, "s_f")}),
      11);
  rlx::onnx::Model m = rlx::onnx::parse_model(bytes, "nested.onnx");
  CHECK(count_ops(m.graph, rlx::ir::OpKind::Scan) == 1); // the inner one is in the body
  Buffer x = ramp({3, 2}, 5);
  float sum = 0;
  for (float v : x.to_f32()) sum += v;
  for (rlx::Backend backend : {rlx::Backend::Interp, rlx::Backend::Jit}) {
    std::vector<Buffer> got =
        run_named(m, {{"s", Buffer::f32({2}, std::vector<float>{1, 2})}, {"x", x}}, backend);
    REQUIRE(got.size() == 1);
    CHECK(got[0].get_f64(0) == doctest::Approx(1 + sum * 2.0f).epsilon(1e-6));
    CHECK(got[0].get_f64(1) == doctest::Approx(2 - sum).epsilon(1e-6));
  }
}

TEST_CASE("onnx: QLinearMatMul, DynamicQuantizeLinear + MatMulInteger, QLinearConv and ConvInteger "
          "give the int8 arithmetic's bits on both backends") {
  const fs::path dir = fs::path(RLX_SOURCE_DIR) / "tests/fixtures/onnx_quant";
  rlx::onnx::Model m = rlx::onnx::load((dir / "model.onnx").string());
  auto npy = [&](const char* name) { return rlx::io::load_npy((dir / name).string() + ".npy"); };
  std::map<std::string, Buffer> feeds{{"x", npy("x")}, {"f", npy("f")}, {"xc", npy("xc")}};
  std::vector<const Buffer*> leaves;
  int q_nodes = 0;
  for (const rlx::ir::Node& n : m.graph.nodes()) {
    if (n.op.kind() == rlx::ir::OpKind::Input)
      leaves.push_back(&feeds.at(n.op.attrs<rlx::ir::LeafAttrs>().name));
    if (n.op.kind() == rlx::ir::OpKind::Param)
      leaves.push_back(&m.params.at(n.op.attrs<rlx::ir::LeafAttrs>().name));
    q_nodes += int(rlx::ir::op_family(n.op.kind()) == rlx::ir::Family::Quant);
  }
  CHECK(q_nodes == 3); // QLinearMatMul, QLinearConv, ConvInteger (MatMulInteger's zp is dynamic)
  const char* outs[] = {"y_mm", "y_dyn", "y_conv", "y_convint"};
  for (rlx::Backend backend : {rlx::Backend::Interp, rlx::Backend::Jit}) {
    std::vector<Buffer> got = rlx::compile(m.graph, backend)->run(leaves);
    REQUIRE(got.size() == 4);
    for (std::size_t k = 0; k < 4; ++k) {
      Buffer want = npy(outs[k]);
      INFO("backend " << int(backend) << ", output " << outs[k]);
      REQUIRE(got[k].shape() == want.shape());
      CHECK(got[k].to_i64() == want.to_i64());
    }
  }
}

TEST_CASE("onnx: QLinearMatMul with a batched b broadcasts a over b's batch (one q_matmul per "
          "matrix) and requantizes each column by its own b_scale, on both backends") {
  // a u8 [2, 4] (a graph input) times b i8 [3, 4, 2] (an initializer), per-column b_scale.
  const int64_t m = 2, k = 4, n = 2, batch = 3;
  std::vector<int64_t> av(m * k), bv(batch * k * n);
  for (std::size_t i = 0; i < av.size(); ++i) av[i] = int64_t((i * 53 + 7) % 256);
  for (std::size_t i = 0; i < bv.size(); ++i) bv[i] = int64_t((i * 71 + 3) % 256) - 128;
  using rlx::ir::DType;
  using rlx::ir::Shape;
  auto scalar_f32 = [](float v) { return Buffer::f32({}, std::vector<float>{v}); };
  auto scalar_int = [](DType t, int64_t v) {
    return Buffer::from_i64(Shape::of(std::vector<int64_t>{}, t), std::vector<int64_t>{v});
  };
  const float a_scale = 0.02f, y_scale = 0.05f, b_scale[2] = {0.03f, 0.011f};
  const int64_t a_zp = 128, b_zp = 1, y_zp = 100;
  std::vector<std::pair<std::string, Buffer>> inits = {
      {"a_scale", scalar_f32(a_scale)},
      {"a_zp", scalar_int(DType::U8, a_zp)},
      {"b", Buffer::from_i64(Shape({batch, k, n}, DType::I8), bv)},
      {"b_scale", Buffer::f32({n}, std::vector<float>{b_scale[0], b_scale[1]})},
      {"b_zp", scalar_int(DType::I8, b_zp)},
      {"y_scale", scalar_f32(y_scale)},
      {"y_zp", scalar_int(DType::U8, y_zp)}};
  const std::string bytes = model_proto(
      graph_proto("g",
                  {node_proto("QLinearMatMul",
                              {"a", "a_scale", "a_zp", "b", "b_scale", "b_zp", "y_scale", "y_zp"},
                              {"y"}, {})},
                  inits, {value_info("a", 2, {m, k})}, {field(1, "y")}),
      13);
  rlx::onnx::Model model = rlx::onnx::parse_model(bytes, "qmm.onnx");
  CHECK(count_ops(model.graph, rlx::ir::OpKind::QMatMul) == batch);
  // ONNX's definition: y = saturate(round((a - a_zp) (b - b_zp) * a_scale b_scale / y_scale) +
  // y_zp), the multiplier in f32, the rounding half to even.
  std::vector<int64_t> want;
  for (int64_t t = 0; t < batch; ++t)
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        int64_t acc = 0;
        for (int64_t p = 0; p < k; ++p)
          acc +=
              (av[std::size_t(i * k + p)] - a_zp) * (bv[std::size_t((t * k + p) * n + j)] - b_zp);
        const float mult = a_scale * b_scale[j] / y_scale;
        const double y = std::nearbyint(double(acc) * double(mult)) + double(y_zp);
        want.push_back(int64_t(std::clamp(y, 0.0, 255.0)));
      }
  const Buffer a = Buffer::from_i64(Shape({m, k}, DType::U8), av);
  for (rlx::Backend backend : {rlx::Backend::Interp, rlx::Backend::Jit}) {
    std::vector<Buffer> got = run_named(model, {{"a", a}}, backend);
    REQUIRE(got.size() == 1);
    CHECK(got[0].shape() == Shape({batch, m, n}, DType::U8));
    CHECK(got[0].to_i64() == want);
  }
}
