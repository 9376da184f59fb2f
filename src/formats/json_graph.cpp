// src/formats/json_graph.cpp -- to_json / from_json: the graph <-> JSON layout of docs/json.md.
#include "rlx/ir/json.hpp"

#include "formats/json_value.hpp"
#include "ir/attr_value.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstdint>

namespace rlx::ir {

namespace {

using detail::AttrValue;
using detail::JsonValue;
using AK = AttrValue::Kind;
using JK = JsonValue::Kind;

constexpr char kHexDigits[] = "0123456789abcdef";

JsonValue graph_to_json(const Graph& g);
Graph graph_from_json(const JsonValue& doc, const std::string& root);

// ---- Graph -> JSON

JsonValue attr_to_json(const AttrValue& v) {
  switch (v.kind) {
  case AK::None:
    return JsonValue::null();
  case AK::Bool:
    return JsonValue::boolean(v.b);
  case AK::Int:
    return JsonValue::integer(v.i);
  case AK::Float:
    if (std::isnan(v.f)) return JsonValue::string("nan");
    if (std::isinf(v.f)) return JsonValue::string(v.f < 0 ? "-inf" : "inf");
    return JsonValue::number(v.f, v.f32);
  case AK::String:
  case AK::Ident:
    return JsonValue::string(v.s);
  case AK::Bytes: {
    std::string hex;
    hex.reserve(v.bytes.size() * 2);
    for (uint8_t b : v.bytes) {
      hex += kHexDigits[b >> 4];
      hex += kHexDigits[b & 15];
    }
    return JsonValue::string(std::move(hex));
  }
  case AK::List: {
    JsonValue a = JsonValue::make_array();
    for (const AttrValue& e : v.list) a.array.push_back(attr_to_json(e));
    return a;
  }
  case AK::Graph:
    return graph_to_json(v.graph.get());
  }
  return JsonValue::null();
}

JsonValue dim_to_json(const Dim& d) {
  if (d.is_static()) return JsonValue::integer(d.size());
  // A name made of digits would read back as a symbol id: write the id instead.
  std::string name = symbol_name(d.symbol());
  bool numeric = name.find_first_not_of("0123456789") == std::string::npos;
  return JsonValue::string("?" + (numeric ? std::to_string(d.symbol()) : name));
}

JsonValue node_to_json(const Node& n) {
  JsonValue attrs = JsonValue::make_object();
  for (auto& [field, value] : detail::attrs_to_fields(n.op, /*omit_defaults=*/false))
    attrs.object.emplace_back(std::string(field), attr_to_json(value));
  JsonValue op = JsonValue::make_object();
  op.object.emplace_back(std::string(n.op.name()), std::move(attrs));

  JsonValue inputs = JsonValue::make_array();
  for (NodeId in : n.inputs) inputs.array.push_back(JsonValue::integer(in.index));
  JsonValue dims = JsonValue::make_array();
  for (const Dim& d : n.shape.dims()) dims.array.push_back(dim_to_json(d));
  JsonValue shape = JsonValue::make_object(
      {{"dims", std::move(dims)},
       {"dtype", JsonValue::string(std::string(dtype_name(n.shape.dtype())))}});

  JsonValue node = JsonValue::make_object();
  node.object.emplace_back("id", JsonValue::integer(n.id.index));
  node.object.emplace_back("op", std::move(op));
  node.object.emplace_back("inputs", std::move(inputs));
  node.object.emplace_back("shape", std::move(shape));
  node.object.emplace_back("name", n.name ? JsonValue::string(*n.name) : JsonValue::null());
  return node;
}

// ---- JSON -> Graph. Every error names the JSON path of the offending value.

[[noreturn]] void path_fail(const std::string& path, const std::string& message) {
  throw Error(ErrorKind::Parse, "json: " + path + ": " + message);
}

bool is_identifier(std::string_view key) {
  if (key.empty() || (key[0] >= '0' && key[0] <= '9')) return false;
  for (char c : key)
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_'))
      return false;
  return true;
}

constexpr std::size_t kMaxShown = 60;

/// A string as a JSON literal for an error message, cut after kMaxShown bytes.
std::string quoted(std::string_view s) {
  std::string out;
  detail::write_json_string(out, s.substr(0, kMaxShown));
  if (s.size() > kMaxShown) out.insert(out.size() - 1, "...");
  return out;
}

/// path.key, or path["key"] when the key is not a (short) identifier.
std::string key_path(const std::string& path, std::string_view key) {
  if (is_identifier(key) && key.size() <= kMaxShown) return path + "." + std::string(key);
  return path + "[" + quoted(key) + "]";
}

std::string index_path(const std::string& path, std::size_t i) {
  return path + "[" + std::to_string(i) + "]";
}

const JsonValue& expect(const JsonValue& v, JK kind, const std::string& path) {
  if (v.kind != kind)
    path_fail(path, "expected " + std::string(detail::json_kind_name(kind)) + ", got " +
                        std::string(detail::json_kind_name(v.kind)));
  return v;
}

/// The members of object `v` named by `keys` (nullptr when absent); any other key is an error.
template <std::size_t N>
std::array<const JsonValue*, N> members(const JsonValue& v, const std::string& path,
                                        const std::array<std::string_view, N>& keys) {
  expect(v, JK::Object, path);
  std::array<const JsonValue*, N> out{};
  for (const auto& [key, value] : v.object) {
    std::size_t k = 0;
    while (k < N && keys[k] != key) ++k;
    if (k == N) {
      std::string known;
      for (std::string_view name : keys) known += (known.empty() ? "" : ", ") + std::string(name);
      path_fail(key_path(path, key), "unknown key (expected one of " + known + ")");
    }
    out[k] = &value;
  }
  return out;
}

const JsonValue& required(const JsonValue* v, const std::string& path, std::string_view key) {
  if (!v) path_fail(path, "missing required key \"" + std::string(key) + "\"");
  return *v;
}

AttrValue json_to_attr(const JsonValue& v, const std::string& path) {
  switch (v.kind) {
  case JK::Null:
    return AttrValue::none();
  case JK::Bool:
    return AttrValue::boolean(v.b);
  case JK::Int:
    return AttrValue::integer(v.i);
  case JK::Float:
    return AttrValue::real(v.f, false);
  case JK::String:
    return AttrValue::string(v.s);
  case JK::Array: {
    AttrValue a;
    a.kind = AK::List;
    for (std::size_t k = 0; k < v.array.size(); ++k)
      a.list.push_back(json_to_attr(v.array[k], index_path(path, k)));
    return a;
  }
  case JK::Object: { // only a nested graph (custom_fn's bodies), known by its "nodes" key
    bool graph = std::any_of(v.object.begin(), v.object.end(),
                             [](const auto& kv) { return kv.first == "nodes"; });
    if (graph) return AttrValue::subgraph(SubGraph(graph_from_json(v, path)));
    break;
  }
  }
  path_fail(path, "expected an attribute value, got an object (only a nested graph, with "
                  "\"nodes\", is one)");
}

Op parse_op(const JsonValue& v, const std::string& path) {
  expect(v, JK::Object, path);
  if (v.object.size() != 1)
    path_fail(path, "expected an object with exactly one key (the op name), got " +
                        std::to_string(v.object.size()) + " keys");
  const auto& [name, body] = v.object[0];
  auto kind = parse_op_kind(name);
  if (!kind) path_fail(path, "unknown op " + quoted(name));
  std::string body_path = key_path(path, name);
  expect(body, JK::Object, body_path);
  std::vector<std::pair<std::string, AttrValue>> fields;
  for (const auto& [field, value] : body.object)
    fields.emplace_back(field, json_to_attr(value, key_path(body_path, field)));
  try {
    return detail::attrs_from_fields(*kind, fields);
  } catch (const detail::AttrError& e) {
    // e.path is a field name, possibly followed by "[i]" steps.
    std::string where = body_path + "." + e.path;
    for (const auto& [field, value] : fields) {
      std::string_view p = e.path;
      if (p.starts_with(field) && (p.size() == field.size() || p[field.size()] == '[')) {
        where = key_path(body_path, field) + std::string(p.substr(field.size()));
        break;
      }
    }
    path_fail(where, e.message);
  }
}

Dim parse_dim(const JsonValue& v, const std::string& path) {
  if (v.kind == JK::Int) {
    if (v.i < 0) path_fail(path, "dimension sizes must be >= 0, got " + std::to_string(v.i));
    if (v.i > kMaxDimSize)
      path_fail(path, "dimension size " + std::to_string(v.i) + " is too large (limit 2^48)");
    return Dim(v.i);
  }
  if (v.kind != JK::String)
    path_fail(path, "expected a dimension (an integer or a \"?symbol\" string), got " +
                        std::string(detail::json_kind_name(v.kind)));
  std::string_view s = v.s;
  if (s.size() < 2 || s[0] != '?')
    path_fail(path, "expected a dimension (an integer or a \"?symbol\" string), got " + quoted(s));
  std::string_view sym = s.substr(1);
  bool numeric = sym.find_first_not_of("0123456789") == std::string_view::npos;
  if (!numeric) return Dim::dynamic(sym);
  uint32_t id = 0;
  auto r = std::from_chars(sym.data(), sym.data() + sym.size(), id);
  if (r.ec != std::errc() || r.ptr != sym.data() + sym.size())
    path_fail(path, "symbol id " + quoted(sym) + " is out of range (limit 2^32 - 1)");
  return Dim::dynamic(id);
}

Shape parse_shape(const JsonValue& v, const std::string& path) {
  auto [dims_v, dtype_v] = members<2>(v, path, {"dims", "dtype"});
  std::string dims_path = path + ".dims";
  const JsonValue& dims = expect(required(dims_v, path, "dims"), JK::Array, dims_path);
  std::vector<Dim> out;
  out.reserve(dims.array.size());
  for (std::size_t k = 0; k < dims.array.size(); ++k)
    out.push_back(parse_dim(dims.array[k], index_path(dims_path, k)));
  std::string dtype_path = path + ".dtype";
  const JsonValue& dt = expect(required(dtype_v, path, "dtype"), JK::String, dtype_path);
  auto dtype = parse_dtype(dt.s);
  if (!dtype) path_fail(dtype_path, "unknown dtype " + quoted(dt.s));
  try {
    return Shape(std::move(out), *dtype);
  } catch (const Error& e) { // more bytes than any tensor may have
    path_fail(path, e.what());
  }
}

/// A node id referenced from `path` (an integer >= 0; the caller checks its upper bound).
uint32_t parse_id(const JsonValue& v, const std::string& path) {
  expect(v, JK::Int, path);
  if (v.i < 0) path_fail(path, "node ids are >= 0, got " + std::to_string(v.i));
  if (v.i > int64_t(UINT32_MAX))
    path_fail(path, "node id " + std::to_string(v.i) + " is too large");
  return uint32_t(v.i);
}

void parse_node(Graph& g, const JsonValue& v, const std::string& path) {
  std::size_t index = g.len();
  auto [id_v, op_v, inputs_v, shape_v, name_v] =
      members<5>(v, path, {"id", "op", "inputs", "shape", "name"});

  const JsonValue& id = expect(required(id_v, path, "id"), JK::Int, path + ".id");
  if (id.i < 0 || uint64_t(id.i) != index)
    path_fail(path + ".id", "expected " + std::to_string(index) +
                                " (node ids are their index), got " + std::to_string(id.i));

  Op op = parse_op(required(op_v, path, "op"), path + ".op");

  std::string inputs_path = path + ".inputs";
  const JsonValue& ins = expect(required(inputs_v, path, "inputs"), JK::Array, inputs_path);
  std::vector<NodeId> inputs;
  inputs.reserve(ins.array.size());
  for (std::size_t k = 0; k < ins.array.size(); ++k) {
    std::string in_path = index_path(inputs_path, k);
    uint32_t in = parse_id(ins.array[k], in_path);
    if (in == index)
      path_fail(in_path, rlx::detail::cat("node ", index,
                                          " uses itself as an input (forward or cyclic "
                                          "references are not allowed)"));
    if (in > index)
      path_fail(in_path, rlx::detail::cat("node ", in, " comes after node ", index,
                                          " (forward or cyclic references are not allowed)"));
    inputs.emplace_back(in);
  }
  int arity = op_info(op.kind()).arity;
  if (arity >= 0 && std::size_t(arity) != inputs.size())
    path_fail(inputs_path,
              rlx::detail::cat(op.name(), " takes ", arity, arity == 1 ? " input" : " inputs",
                               ", got ", inputs.size()));
  if (arity < 0 && inputs.empty())
    path_fail(inputs_path, rlx::detail::cat(op.name(), " takes at least one input, got none"));

  Shape shape = parse_shape(required(shape_v, path, "shape"), path + ".shape");

  std::optional<std::string> label;
  if (name_v && name_v->kind == JK::String)
    label = name_v->s;
  else if (name_v && name_v->kind != JK::Null)
    path_fail(path + ".name", "expected a string or null, got " +
                                  std::string(detail::json_kind_name(name_v->kind)));

  try {
    g.append_node(std::move(op), std::move(inputs), std::move(shape), std::move(label), Loc{});
  } catch (const Error& e) {
    path_fail(path, e.what());
  }
}

JsonValue graph_to_json(const Graph& g) {
  JsonValue nodes = JsonValue::make_array();
  nodes.array.reserve(g.len());
  for (const Node& n : g.nodes()) nodes.array.push_back(node_to_json(n));
  JsonValue outputs = JsonValue::make_array();
  for (NodeId id : g.outputs) outputs.array.push_back(JsonValue::integer(id.index));
  JsonValue doc = JsonValue::make_object();
  doc.object.emplace_back("name", JsonValue::string(g.name));
  doc.object.emplace_back("nodes", std::move(nodes));
  doc.object.emplace_back("outputs", std::move(outputs));
  return doc;
}

Graph graph_from_json(const JsonValue& doc, const std::string& root) {
  auto [name_v, nodes_v, outputs_v] = members<3>(doc, root, {"name", "nodes", "outputs"});

  const JsonValue& name = expect(required(name_v, root, "name"), JK::String, root + ".name");
  Graph g(name.s);

  const JsonValue& nodes = expect(required(nodes_v, root, "nodes"), JK::Array, root + ".nodes");
  for (std::size_t k = 0; k < nodes.array.size(); ++k)
    parse_node(g, nodes.array[k], index_path(root + ".nodes", k));

  const JsonValue& outs =
      expect(required(outputs_v, root, "outputs"), JK::Array, root + ".outputs");
  std::vector<NodeId> outputs;
  outputs.reserve(outs.array.size());
  for (std::size_t k = 0; k < outs.array.size(); ++k) {
    std::string out_path = index_path(root + ".outputs", k);
    uint32_t id = parse_id(outs.array[k], out_path);
    if (id >= g.len())
      path_fail(out_path,
                rlx::detail::cat("node ", id, " is not in the graph (it has ", g.len(), " nodes)"));
    outputs.emplace_back(id);
  }
  g.set_outputs(std::move(outputs));
  return g;
}

} // namespace

std::string to_json(const Graph& g, bool pretty) {
  return detail::write_json(graph_to_json(g), pretty);
}

Graph from_json(std::string_view json) { return graph_from_json(detail::parse_json(json), "$"); }

} // namespace rlx::ir
