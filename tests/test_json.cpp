// tests/test_json.cpp -- the JSON form of a graph: round trips, layout, and malformed input.
#include "support/all_ops.hpp"
#include "support/example_graphs.hpp"

#include <doctest/doctest.h>

#include <rlx/all.hpp>

#include <cmath>
#include <limits>
#include <string>
#include <string_view>

using namespace rlx::ir;
using rlx::ErrorKind;

namespace {

const char* const kBertPretty = R"({
  "name": "bert_layer",
  "nodes": [
    {
      "id": 0,
      "op": {"input": {"name": "hidden"}},
      "inputs": [],
      "shape": {"dims": [4, 15, 384], "dtype": "f32"},
      "name": null
    },
    {
      "id": 1,
      "op": {"param": {"name": "qkv_weight"}},
      "inputs": [],
      "shape": {"dims": [384, 1152], "dtype": "f32"},
      "name": null
    },
    {
      "id": 2,
      "op": {"param": {"name": "qkv_bias"}},
      "inputs": [],
      "shape": {"dims": [1152], "dtype": "f32"},
      "name": null
    },
    {
      "id": 3,
      "op": {"matmul": {}},
      "inputs": [0, 1],
      "shape": {"dims": [4, 15, 1152], "dtype": "f32"},
      "name": null
    },
    {
      "id": 4,
      "op": {"add": {}},
      "inputs": [3, 2],
      "shape": {"dims": [4, 15, 1152], "dtype": "f32"},
      "name": null
    }
  ],
  "outputs": [4]
}
)";

/// One node of a hand-written document.
std::string node(int id, std::string_view op, std::string_view inputs = "[]",
                 std::string_view dims = "[4]", std::string_view dtype = "\"f32\"") {
  return "{\"id\": " + std::to_string(id) + ", \"op\": " + std::string(op) +
         ", \"inputs\": " + std::string(inputs) + ", \"shape\": {\"dims\": " + std::string(dims) +
         ", \"dtype\": " + std::string(dtype) + "}, \"name\": null}";
}

const std::string kX = node(0, R"({"input": {"name": "x"}})");

/// A document with these nodes (comma separated) and outputs.
std::string doc(const std::string& nodes, std::string_view outputs = "[0]") {
  return "{\"name\": \"g\", \"nodes\": [" + nodes + "], \"outputs\": " + std::string(outputs) + "}";
}

/// from_json(json) must throw rlx::Error of kind Parse whose message contains `needle`.
void expect_parse_error(std::string_view json, std::string_view needle) {
  std::string shown(json.substr(0, 300));
  CAPTURE(shown);
  CAPTURE(needle);
  try {
    (void)from_json(json);
    FAIL_CHECK("from_json accepted malformed input");
  } catch (const rlx::Error& e) {
    std::string what = e.what();
    CAPTURE(what);
    CHECK(e.kind() == ErrorKind::Parse);
    CHECK(what.find(needle) != std::string::npos);
    CHECK(what.rfind("json", 0) == 0);
  } catch (const std::exception& e) {
    FAIL_CHECK("wrong exception type: " << e.what());
  }
}

} // namespace

TEST_CASE("json: a graph with every op kind round-trips exactly") {
  Graph g = rlx::test::all_ops_graph();
  for (bool pretty : {false, true}) {
    CAPTURE(pretty);
    std::string text = to_json(g, pretty);
    Graph back = from_json(text);
    CHECK(back == g);
    CHECK(back.len() == g.len());
  }
}

TEST_CASE("json: to_json is a fixed point after one round") {
  Graph g = rlx::test::all_ops_graph();
  for (bool pretty : {false, true}) {
    CAPTURE(pretty);
    std::string once = to_json(g, pretty);
    std::string twice = to_json(from_json(once), pretty);
    CHECK(once == twice);
    CHECK(to_json(from_json(twice), pretty) == twice);
  }
  // Compact and pretty forms describe the same graph.
  CHECK(from_json(to_json(g, true)) == from_json(to_json(g, false)));
}

TEST_CASE("json: compact output has no whitespace outside strings") {
  std::string text = to_json(rlx::test::bert_qkv_graph(), false);
  CHECK(text.find(' ') == std::string::npos);
  CHECK(text.find('\n') == std::string::npos);
  CHECK(text.rfind(R"({"name":"bert_layer","nodes":[{"id":0,"op":{"input":{"name":"hidden"}},)"
                   R"("inputs":[],"shape":{"dims":[4,15,384],"dtype":"f32"},"name":null},)",
                   0) == 0);
  CHECK(text.ends_with(R"("outputs":[4]})"));
}

TEST_CASE("json: the bert_layer graph has the documented layout and parses back") {
  Graph g = rlx::test::bert_qkv_graph();
  CHECK(to_json(g, true) == kBertPretty);
  Graph back = from_json(kBertPretty);
  CHECK(back == g);
  CHECK(back.name == "bert_layer");
  CHECK(back.len() == 5);
  CHECK(back.node(NodeId(0)).op.attrs<LeafAttrs>().name == "hidden");
  CHECK(back.shape(NodeId(4)) == Shape({4, 15, 1152}, DType::F32));
  CHECK(back.outputs == std::vector<NodeId>{NodeId(4)});
}

TEST_CASE("json: attribute values keep their exact values and documented spellings") {
  Graph g("attrs");
  auto x = g.input("x", Shape({2}, DType::F32));
  g.add_node(Op(OpKind::LeakyRelu, LeakyReluAttrs{0.2f}), {x}, Shape({2}, DType::F32));
  g.add_node(Op(OpKind::Clamp, ClampAttrs{-kInf, kInf}), {x}, Shape({2}, DType::F32));
  g.add_node(Op(OpKind::Constant, ConstantAttrs{Bytes{{0x00, 0xab, 0x7f}}}), {},
             Shape({3}, DType::U8));
  g.add_node(Op(OpKind::Cast, CastAttrs{DType::BF16}), {x}, Shape({2}, DType::BF16));
  g.add_node(Op(OpKind::Attention, AttentionAttrs{2, 4, MaskType::Causal, 0, 0.5f, std::nullopt}),
             {x, x, x}, Shape({2}, DType::F32));
  g.add_node(Op(OpKind::LayerNorm, NormAttrs{-1, 7.038531e-26f}), {x, x, x},
             Shape({2}, DType::F32));
  std::string text = to_json(g, false);
  CHECK(text.find(R"({"leaky_relu":{"alpha":0.2}})") != std::string::npos);
  CHECK(text.find(R"({"clamp":{"min":"-inf","max":"inf"}})") != std::string::npos);
  CHECK(text.find(R"({"constant":{"data":"00ab7f"}})") != std::string::npos);
  CHECK(text.find(R"({"cast":{"to":"bf16"}})") != std::string::npos);
  CHECK(text.find(R"("mask":"Causal","window":0,"score_scale":0.5,"attn_logit_softcap":null)") !=
        std::string::npos);
  // A float whose shortest text would be misread through a double still round-trips.
  Graph back = from_json(text);
  CHECK(back == g);
  CHECK(back.node(NodeId(6)).op.attrs<NormAttrs>().eps == 7.038531e-26f);

  Graph nan_graph("nan");
  auto y = nan_graph.input("y", Shape({1}, DType::F64));
  nan_graph.add_node(Op(OpKind::Clamp, ClampAttrs{std::nan(""), 1.0}), {y}, Shape({1}, DType::F64));
  std::string nan_text = to_json(nan_graph);
  CHECK(nan_text.find(R"({"clamp":{"min":"nan","max":1.0}})") != std::string::npos);
  CHECK(std::isnan(from_json(nan_text).node(NodeId(1)).op.attrs<ClampAttrs>().min));
}

TEST_CASE("json: missing attribute fields and node names take their defaults") {
  std::string text =
      doc(kX + "," +
              R"({"id": 1, "op": {"layer_norm": {"eps": 0.001}}, "inputs": [0, 0, 0],)"
              R"( "shape": {"dims": [4], "dtype": "f32"}})",
          "[1]");
  Graph g = from_json(text);
  const Node& n = g.node(NodeId(1));
  CHECK(n.op.attrs<NormAttrs>().axis == -1);
  CHECK(n.op.attrs<NormAttrs>().eps == 0.001f);
  CHECK_FALSE(n.name.has_value());
  // An integer literal is accepted where a number is expected.
  Graph g2 = from_json(doc(kX + "," + node(1, R"({"elu": {"alpha": 2}})", "[0]")));
  CHECK(g2.node(NodeId(1)).op.attrs<EluAttrs>().alpha == 2.0f);
}

TEST_CASE("json: dynamic dims are written as ?name or ?id and read back") {
  Graph g("dyn");
  uint32_t fresh = symbol_id("json_test_symbol");
  g.input("x", Shape({Dim::dynamic(sym::kBatch), Dim::dynamic(fresh), Dim::dynamic(100000u), 7},
                     DType::I32));
  g.set_outputs({NodeId(0)});
  std::string text = to_json(g);
  CHECK(text.find(R"("dims":["?batch","?json_test_symbol","?100000",7])") != std::string::npos);
  CHECK(from_json(text) == g);

  Graph parsed = from_json(doc(
      node(0, R"({"input": {"name": "x"}})", "[]", R"(["?seq", "?json_test_other", "?3", 0])")));
  const auto& dims = parsed.shape(NodeId(0)).dims();
  REQUIRE(dims.size() == 4);
  CHECK(dims[0] == Dim::dynamic(sym::kSeq));
  CHECK(dims[1] == Dim::dynamic(symbol_id("json_test_other")));
  CHECK(dims[2] == Dim::dynamic(sym::kPastSeq));
  CHECK(dims[3] == Dim(0));

  // A symbol whose name is all digits is written by id, so it still reads back as itself.
  Graph digits("digits");
  digits.input("x", Shape({Dim::dynamic("12345")}, DType::F32));
  std::string digits_text = to_json(digits);
  CHECK(digits_text.find("\"?12345\"") == std::string::npos);
  CHECK(from_json(digits_text) == digits);
}

TEST_CASE("json: strings decode escapes, surrogate pairs and UTF-8 and are re-escaped") {
  std::string label = "tab\t nl\n quote\" backslash\\ slash/ ctrl\x01 e\xC3\xA9 "
                      "\xE4\xB8\xAD \xF0\x9F\x98\x80";
  std::string text = doc(kX + "," +
                         R"({"id": 1, "op": {"relu": {}}, "inputs": [0], "shape": {"dims": [],)"
                         R"( "dtype": "bool"}, "name": "tab\t nl\n quote\" backslash\\ slash\/)"
                         R"( ctrl\u0001 \u00e9 \u4E2D \ud83d\ude00"})");
  Graph g = from_json(text);
  REQUIRE(g.node(NodeId(1)).name.has_value());
  std::string expected = label;
  expected.replace(expected.find("e\xC3\xA9"), 3, "\xC3\xA9");
  CHECK(*g.node(NodeId(1)).name == expected);
  std::string out = to_json(g);
  CHECK(out.find(R"("name":"tab\t nl\n quote\" backslash\\ slash/ ctrl\u0001 )"
                 "\xC3\xA9 \xE4\xB8\xAD \xF0\x9F\x98\x80\"}") != std::string::npos);
  CHECK(from_json(out) == g);
}

TEST_CASE("json: numbers at the edges of their ranges are read exactly") {
  auto axes_of = [](std::string_view axes) {
    Graph g = from_json(
        doc(kX + "," + node(1, R"({"reduce_sum": {"axes": )" + std::string(axes) + "}}", "[0]")));
    return g.node(NodeId(1)).op.attrs<ReduceAttrs>().axes;
  };
  CHECK(axes_of("[9223372036854775807, -9223372036854775808, -0, 0]") ==
        Ints{std::numeric_limits<int64_t>::max(), std::numeric_limits<int64_t>::min(), 0, 0});
  auto clamp_of = [](std::string_view min) {
    Graph g = from_json(
        doc(kX + "," + node(1, R"({"clamp": {"min": )" + std::string(min) + "}}", "[0]")));
    return g.node(NodeId(1)).op.attrs<ClampAttrs>().min;
  };
  CHECK(clamp_of("1.5e3") == 1500.0);
  CHECK(clamp_of("-2.5E-3") == -0.0025);
  CHECK(clamp_of("5e-324") == std::numeric_limits<double>::denorm_min());
  CHECK(clamp_of("1e-400") == 0.0);
  CHECK(clamp_of("1.7976931348623157e308") == std::numeric_limits<double>::max());
  CHECK(clamp_of("\"-inf\"") == -kInf);
}

TEST_CASE("json: syntax errors report the line and column") {
  expect_parse_error("{\n  \"name\": tru\n}", "json:2:11: invalid literal");
  expect_parse_error("{\"name\": \"g\",\n\"nodes\": [1 2]}", "json:2:13: expected ',' or ']'");
}

TEST_CASE("json: malformed documents are rejected with a parse error naming the problem") {
  const std::string relu = node(1, R"({"relu": {}})", "[0]");
  const std::string good = doc(kX + "," + relu, "[1]");
  REQUIRE_NOTHROW(from_json(good));

  SUBCASE("syntax") {
    std::string full = to_json(rlx::test::bert_qkv_graph(), false);
    expect_parse_error(full.substr(0, full.find("\"shape\"")), "got end of input");
    expect_parse_error(full.substr(0, full.size() - 1), "unterminated object");
    expect_parse_error("", "json:1:1: empty input");
    expect_parse_error(" \n\t ", "expected a value, got end of input");
    expect_parse_error(good + " x", "unexpected 'x' after the JSON value");
    expect_parse_error(good + "{}", "after the JSON value");
    expect_parse_error(R"({"name": "g", "nodes": [], "outputs": [],})", "trailing comma in object");
    expect_parse_error(R"({"name": "g", "nodes": [], "outputs": [1,]})", "trailing comma in array");
    expect_parse_error(R"({"name": 'g'})", "expected a value, got '''");
    expect_parse_error(R"({name: "g"})", "expected a string key");
    expect_parse_error(R"({"name" "g"})", "expected ':'");
    expect_parse_error(R"({"name": "g)", "unterminated string");
    expect_parse_error(R"({"name": NaN})", "expected a value, got 'N'");
    expect_parse_error(R"({"outputs": [01]})", "leading zeros");
    expect_parse_error(R"({"outputs": [1.]})", "expected a digit after '.'");
    expect_parse_error(R"({"outputs": [1e+]})", "expected a digit in the exponent");
    expect_parse_error(R"({"outputs": [-]})", "invalid number");
    expect_parse_error(R"({"outputs": [+1]})", "expected a value, got '+'");
    expect_parse_error("\xEF\xBB\xBF{}", "byte 0xef");
    expect_parse_error(std::string(100000, '['),
                       "json:1:129: arrays and objects are nested deeper than 128 levels");
    // 128 levels are fine: the syntax is accepted and only the layout is wrong.
    expect_parse_error(std::string(128, '[') + std::string(128, ']'),
                       "json: $: expected an object, got an array");
    expect_parse_error(std::string(129, '[') + std::string(129, ']'), "nested deeper than 128");
    std::string objects;
    for (int i = 0; i < 100000; ++i) objects += "{\"a\":";
    expect_parse_error(objects, "nested deeper than 128 levels");
  }

  SUBCASE("numbers out of range") {
    expect_parse_error(doc(node(0, R"({"input": {"name": "x"}})", "[]", "[99999999999999999999]")),
                       "number out of range");
    expect_parse_error(R"({"outputs": [9223372036854775808]})", "number out of range");
    expect_parse_error(R"({"outputs": [-9223372036854775809]})", "number out of range");
    expect_parse_error(doc(kX + "," + node(1, R"({"clamp": {"min": 1e999}})", "[0]")),
                       "number out of range");
    expect_parse_error(doc(kX + "," + node(1, R"({"clamp": {"max": -1e999}})", "[0]")),
                       "number out of range");
  }

  SUBCASE("strings") {
    expect_parse_error("{\"name\": \"a\xC3\x28\"}", "invalid UTF-8 in string: truncated");
    expect_parse_error("{\"name\": \"\xC0\xAF\"}", "invalid UTF-8 in string: overlong");
    expect_parse_error("{\"name\": \"\xE0\x80\xAF\"}", "invalid UTF-8 in string: overlong");
    expect_parse_error("{\"name\": \"\xF0\x80\x80\xAF\"}", "invalid UTF-8 in string: overlong");
    expect_parse_error("{\"name\": \"\xED\xA0\x80\"}", "surrogate encoded in UTF-8");
    expect_parse_error("{\"name\": \"\xF4\x90\x80\x80\"}", "above U+10FFFF");
    expect_parse_error("{\"name\": \"\xF5\x80\x80\x80\"}", "byte 0xf5");
    expect_parse_error("{\"name\": \"\xFF\"}", "byte 0xff");
    expect_parse_error("{\"name\": \"\x80\"}", "unexpected continuation byte 0x80");
    expect_parse_error("{\"name\": \"\xE2\x82\"}", "truncated sequence");
    expect_parse_error("{\"name\": \"\xE2\x82", "truncated sequence");
    std::string bad_name = doc(kX + "," + node(1, R"({"relu": {}})", "[0]"));
    bad_name.insert(bad_name.find("\"x\"") + 2, "\xC3");
    expect_parse_error(bad_name, "invalid UTF-8 in string: truncated sequence");
    expect_parse_error(R"({"name": "\ud800"})", "lone high surrogate \\ud800");
    expect_parse_error(R"({"name": "\ud800\u0041"})", "lone high surrogate");
    expect_parse_error(R"({"name": "\uDC00"})", "lone low surrogate");
    expect_parse_error(R"({"name": "\u12"})", "invalid \\u escape");
    expect_parse_error(R"({"name": "\x41"})", "invalid escape sequence");
    expect_parse_error("{\"name\": \"a\tb\"}", "control character 0x09 in string");
    expect_parse_error(std::string("{\"name\": \"a\0b\"}", 14), "control character 0x00");
  }

  SUBCASE("structure") {
    expect_parse_error("[1, 2]", "json: $: expected an object, got an array");
    expect_parse_error("\"graph\"", "json: $: expected an object, got a string");
    expect_parse_error(R"({"name": "g", "outputs": []})",
                       "json: $: missing required key \"nodes\"");
    expect_parse_error(R"({"nodes": [], "outputs": []})", "json: $: missing required key \"name\"");
    expect_parse_error(R"({"name": "g", "nodes": []})", "missing required key \"outputs\"");
    expect_parse_error(R"({"name": "g", "nodes": [], "outputs": [], "version": 2})",
                       "json: $.version: unknown key (expected one of name, nodes, outputs)");
    expect_parse_error(R"({"name": "g", "nodes": [], "outputs": [], "a b": 2})",
                       "json: $[\"a b\"]: unknown key");
    expect_parse_error(R"({"name": "a", "name": "b", "nodes": [], "outputs": []})",
                       "json:1:15: duplicate key \"name\"");
    expect_parse_error(R"({"name": 7, "nodes": [], "outputs": []})",
                       "json: $.name: expected a string, got an integer");
    expect_parse_error(R"({"name": "g", "nodes": {}, "outputs": []})",
                       "json: $.nodes: expected an array, got an object");
    expect_parse_error(doc("[]"), "json: $.nodes[0]: expected an object, got an array");
    std::string many_keys = "{";
    for (int i = 0; i < 40; ++i) many_keys += "\"k" + std::to_string(i) + "\": 0, ";
    expect_parse_error(many_keys + "\"k7\": 1}", "duplicate key \"k7\"");
  }

  SUBCASE("nodes") {
    expect_parse_error(doc(node(7, R"({"input": {"name": "x"}})")),
                       "json: $.nodes[0].id: expected 0 (node ids are their index), got 7");
    expect_parse_error(doc(kX + "," + node(1, R"({"frobnicate": {}})", "[0]")),
                       "json: $.nodes[1].op: unknown op \"frobnicate\"");
    expect_parse_error(doc(kX + "," + node(1, R"({"relu": {}, "exp": {}})", "[0]")),
                       "json: $.nodes[1].op: expected an object with exactly one key");
    expect_parse_error(doc(kX + "," + node(1, R"({})", "[0]")), "exactly one key");
    expect_parse_error(doc(kX + "," + node(1, R"("relu")", "[0]")),
                       "json: $.nodes[1].op: expected an object, got a string");
    expect_parse_error(doc(kX + "," + node(1, R"({"relu": null})", "[0]")),
                       "json: $.nodes[1].op.relu: expected an object, got null");
    expect_parse_error(doc(kX + "," + node(1, R"({"add": {}})", "[0]")),
                       "json: $.nodes[1].inputs: add takes 2 inputs, got 1");
    expect_parse_error(doc(kX + "," + node(1, R"({"relu": {}})", "[0, 0]")),
                       "relu takes 1 input, got 2");
    expect_parse_error(doc(kX + "," + node(1, R"({"concat": {}})", "[]")),
                       "json: $.nodes[1].inputs: concat takes at least one input, got none");
    expect_parse_error(
        doc(kX + "," + node(1, R"({"relu": {}})", "[2]") + "," + node(2, R"({"relu": {}})", "[0]")),
        "json: $.nodes[1].inputs[0]: node 2 comes after node 1 (forward or cyclic "
        "references are not allowed)");
    expect_parse_error(doc(kX + "," + node(1, R"({"relu": {}})", "[1]")),
                       "json: $.nodes[1].inputs[0]: node 1 uses itself as an input");
    expect_parse_error(doc(kX + "," + node(1, R"({"relu": {}})", "[-1]")), "node ids are >= 0");
    expect_parse_error(doc(kX + "," + node(1, R"({"relu": {}})", R"(["0"])")),
                       "json: $.nodes[1].inputs[0]: expected an integer, got a string");
    expect_parse_error(doc(kX + "," + node(1, R"({"relu": {}})", "0")),
                       "json: $.nodes[1].inputs: expected an array, got an integer");
    expect_parse_error(doc(R"({"id": 0, "inputs": [], "shape": {"dims": [], "dtype": "f32"}})"),
                       "json: $.nodes[0]: missing required key \"op\"");
    expect_parse_error(doc(R"({"id": 0, "op": {"input": {}}, "inputs": []})"),
                       "json: $.nodes[0]: missing required key \"shape\"");
    expect_parse_error(doc(R"({"id": 0, "op": {"input": {}}, "inputs": [], "shape": {"dims": [],)"
                           R"( "dtype": "f32"}, "label": "x"})"),
                       "json: $.nodes[0].label: unknown key (expected one of id, op, inputs, "
                       "shape, name)");
    expect_parse_error(doc(R"({"id": 0, "op": {"input": {}}, "inputs": [], "shape": {"dims": [],)"
                           R"( "dtype": "f32"}, "name": 3})"),
                       "json: $.nodes[0].name: expected a string or null, got an integer");
    expect_parse_error(doc(kX, "[1]"),
                       "json: $.outputs[0]: node 1 is not in the graph (it has 1 nodes)");
    expect_parse_error(doc(kX, "[0, 5000000000]"), "json: $.outputs[1]: node id 5000000000");
    expect_parse_error(doc(kX, "0"), "json: $.outputs: expected an array, got an integer");
  }

  SUBCASE("shapes") {
    auto input_with = [](std::string_view dims, std::string_view dtype = "\"f32\"") {
      return doc(node(0, R"({"input": {"name": "x"}})", "[]", dims, dtype));
    };
    expect_parse_error(input_with("[4]", "\"f128\""),
                       "json: $.nodes[0].shape.dtype: unknown dtype \"f128\"");
    expect_parse_error(input_with("[4]", "32"),
                       "json: $.nodes[0].shape.dtype: expected a string, got an integer");
    expect_parse_error(input_with("[4, -1]"),
                       "json: $.nodes[0].shape.dims[1]: dimension sizes must be >= 0, got -1");
    expect_parse_error(
        input_with("[281474976710657]"),
        "json: $.nodes[0].shape.dims[0]: dimension size 281474976710657 is too large");
    expect_parse_error(input_with("[4.0]"), "json: $.nodes[0].shape.dims[0]: expected a dimension");
    expect_parse_error(input_with("[null]"), "expected a dimension");
    expect_parse_error(input_with("[\"seq\"]"), "expected a dimension (an integer or a \"?symbol\" "
                                                "string), got \"seq\"");
    expect_parse_error(input_with("[\"?\"]"), "got \"?\"");
    expect_parse_error(input_with("[\"?99999999999\"]"),
                       "symbol id \"99999999999\" is out of range");
    expect_parse_error(input_with("4"), "json: $.nodes[0].shape.dims: expected an array, got an "
                                        "integer");
    expect_parse_error(
        doc(R"({"id": 0, "op": {"input": {}}, "inputs": [], "shape": {"dims": []}})"),
        "json: $.nodes[0].shape: missing required key \"dtype\"");
    expect_parse_error(doc(R"({"id": 0, "op": {"input": {}}, "inputs": [], "shape": {"dims": [],)"
                           R"( "dtype": "f32", "layout": "nchw"}})"),
                       "json: $.nodes[0].shape.layout: unknown key");
  }

  SUBCASE("attributes") {
    expect_parse_error(doc(kX + "," + node(1, R"({"reduce_sum": {"axes": [0, "a"]}})", "[0]")),
                       "json: $.nodes[1].op.reduce_sum.axes[1]: expected an integer, got a string");
    expect_parse_error(doc(kX + "," + node(1, R"({"reduce_sum": {"keep_dim": 1}})", "[0]")),
                       "json: $.nodes[1].op.reduce_sum.keep_dim: expected true or false");
    expect_parse_error(doc(kX + "," + node(1, R"({"relu": {"alpha": 1}})", "[0]")),
                       "json: $.nodes[1].op.relu.alpha: unknown attribute (this op has none)");
    expect_parse_error(doc(kX + "," + node(1, R"({"elu": {"beta": 1}})", "[0]")),
                       "json: $.nodes[1].op.elu.beta: unknown attribute (expected one of alpha)");
    expect_parse_error(doc(kX + "," + node(1, R"({"elu": {"my alpha": 1}})", "[0]")),
                       "json: $.nodes[1].op.elu[\"my alpha\"]: unknown attribute");
    expect_parse_error(doc(kX + "," + node(1, R"({"cast": {"to": "f128"}})", "[0]")),
                       "json: $.nodes[1].op.cast.to: unknown dtype 'f128'");
    expect_parse_error(doc(kX + "," + node(1, R"({"pad": {"mode": "Mirror"}})", "[0]")),
                       "json: $.nodes[1].op.pad.mode: unknown value 'Mirror'");
    expect_parse_error(doc(kX + "," + node(1, R"({"conv2d": {"stride": [1, 2, 3]}})", "[0, 0]")),
                       "json: $.nodes[1].op.conv2d.stride: expected a list of 2 values, got 3");
    expect_parse_error(doc(kX + "," + node(1, R"({"reduce_sum": {"axes": {"x": 1}}})", "[0]")),
                       "json: $.nodes[1].op.reduce_sum.axes: expected an attribute value, got an "
                       "object");
    expect_parse_error(doc(kX + "," + node(1, R"({"reduce_sum": {"axes": [[{}]]}})", "[0]")),
                       "json: $.nodes[1].op.reduce_sum.axes[0][0]: expected an attribute value");
    expect_parse_error(doc(kX + "," + node(1, R"({"leaky_relu": {"alpha": 1e300}})", "[0]")),
                       "json: $.nodes[1].op.leaky_relu.alpha: number is out of range for f32");
    expect_parse_error(doc(kX + "," + node(1, R"({"clamp": {"min": "-infinity"}})", "[0]")),
                       "json: $.nodes[1].op.clamp.min: expected a number, got a string");
    expect_parse_error(doc(node(0, R"({"constant": {"data": "abc"}})")),
                       "json: $.nodes[0].op.constant.data: hex bytes need an even number");
    expect_parse_error(doc(node(0, R"({"constant": {"data": "zz"}})")), "must be hex digits");
    expect_parse_error(doc(node(0, R"({"input": {"name": null}})")),
                       "json: $.nodes[0].op.input.name: expected a string, got none");
  }
}

TEST_CASE("json: from_json never crashes on truncations or byte flips of a valid document") {
  std::string full = to_json(rlx::test::all_ops_graph(), false);
  std::size_t rejected = 0;
  for (std::size_t cut = 0; cut < full.size(); cut += 7) {
    try {
      (void)from_json(std::string_view(full).substr(0, cut));
    } catch (const rlx::Error& e) {
      CHECK(e.kind() == ErrorKind::Parse);
      ++rejected;
    }
  }
  CHECK(rejected == (full.size() + 6) / 7);
  const char flips[] = {'"', '[', ']', '{', '}', ',', ':', '0', '9', '-', 'x', '\x80', '\0'};
  for (std::size_t pos = 0; pos < full.size(); pos += 13) {
    for (char c : flips) {
      std::string mutated = full;
      mutated[pos] = c;
      try {
        (void)from_json(mutated);
      } catch (const rlx::Error& e) {
        CHECK(e.kind() == ErrorKind::Parse);
      }
    }
  }
}
