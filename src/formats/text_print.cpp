// src/formats/text_print.cpp -- print a graph as text IR (the inverse of text_parse.cpp).
#include "rlx/ir/text.hpp"

#include "formats/text_lexer.hpp"
#include "ir/attr_value.hpp"

#include <charconv>
#include <cmath>
#include <span>
#include <sstream>

namespace rlx::ir {

namespace detail {

std::string format_number(double v, bool f32) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[64];
  auto res = f32 ? std::to_chars(buf, buf + sizeof buf, static_cast<float>(v))
                 : std::to_chars(buf, buf + sizeof buf, v);
  std::string out(buf, res.ptr);
  // Keep floats recognisable as floats (and -0.0 distinct from 0): "1" -> "1.0".
  if (out.find_first_of(".e") == std::string::npos) out += ".0";
  return out;
}

void print_value(std::ostream& os, const AttrValue& v) {
  using K = AttrValue::Kind;
  switch (v.kind) {
  case K::None:
    os << "none";
    break;
  case K::Bool:
    os << (v.b ? "true" : "false");
    break;
  case K::Int:
    os << v.i;
    break;
  case K::Float:
    os << format_number(v.f, v.f32);
    break;
  case K::String:
    os << quote_string(v.s);
    break;
  case K::Ident:
    os << v.s;
    break;
  case K::Bytes: {
    static const char* hex = "0123456789abcdef";
    os << "x\"";
    for (uint8_t b : v.bytes) os << hex[b >> 4] << hex[b & 15];
    os << '"';
    break;
  }
  case K::List:
    os << '[';
    for (std::size_t i = 0; i < v.list.size(); ++i) {
      if (i) os << ", ";
      print_value(os, v.list[i]);
    }
    os << ']';
    break;
  case K::Graph: {
    // A nested graph, its lines indented one level deeper than the node holding it.
    std::string body = to_text(v.graph.get());
    if (!body.empty() && body.back() == '\n') body.pop_back();
    for (char c : body) {
      os << c;
      if (c == '\n') os << "    ";
    }
    break;
  }
  }
}

namespace {

bool is_plain_name(std::string_view s) {
  if (s.empty()) return false;
  auto start = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; };
  if (!start(s[0])) return false;
  for (char c : s)
    if (!start(c) && !(c >= '0' && c <= '9') && c != '.') return false;
  return true;
}

/// `name(operands..., key=value...)`: an op with `operands` printed as the node's inputs.
void print_op(std::ostream& os, const Op& op, std::span<const NodeId> operands) {
  os << op.name() << '(';
  bool first = true;
  auto sep = [&] {
    if (!first) os << ", ";
    first = false;
  };
  auto fields = attrs_to_fields(op, /*omit_defaults=*/true);
  // A string field called `name` (leaf names) is positional and always printed.
  for (const auto& [key, value] : attrs_to_fields(op, /*omit_defaults=*/false))
    if (key == "name" && value.kind == AttrValue::Kind::String) sep(), os << quote_string(value.s);
  for (NodeId in : operands) sep(), os << in;
  for (const auto& [key, value] : fields) {
    if (key == "name" && value.kind == AttrValue::Kind::String) continue;
    sep();
    os << key << '=';
    print_value(os, value);
  }
  os << ')';
}

void print_node(std::ostream& os, const Node& n) {
  os << n.id << " = ";
  print_op(os, n.op, n.inputs);
  os << " : " << n.shape;
  if (n.name) os << " #" << quote_string(*n.name);
}

} // namespace

std::string graph_name_token(std::string_view name) {
  return is_plain_name(name) ? std::string(name) : quote_string(name);
}

} // namespace detail

std::string op_to_text(const Op& op) {
  std::ostringstream os;
  detail::print_op(os, op, {});
  return os.str();
}

std::string node_to_text(const Graph& g, NodeId id) {
  std::ostringstream os;
  detail::print_node(os, g.node(id));
  return os.str();
}

std::ostream& operator<<(std::ostream& os, const Graph& g) {
  os << "graph @" << detail::graph_name_token(g.name) << " {\n";
  for (const Node& n : g.nodes()) {
    os << "  ";
    detail::print_node(os, n);
    os << '\n';
  }
  os << "  return";
  for (std::size_t i = 0; i < g.outputs.size(); ++i) os << (i ? ", " : " ") << g.outputs[i];
  return os << "\n}\n";
}

std::string to_text(const Graph& g) {
  std::ostringstream os;
  os << g;
  return os.str();
}

std::ostream& operator<<(std::ostream& os, const Op& op) { return os << op.name(); }

} // namespace rlx::ir
