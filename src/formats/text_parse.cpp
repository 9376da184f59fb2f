// src/formats/text_parse.cpp -- parse text IR back into a Graph, with line:column errors.
#include "rlx/ir/text.hpp"

#include "formats/text_lexer.hpp"
#include "ir/attr_value.hpp"

#include <algorithm>
#include <unordered_map>

namespace rlx::ir {

namespace {

using detail::AttrValue;
using detail::Token;
using K = Token::Kind;

constexpr int kMaxListDepth = 64;
constexpr int kMaxGraphDepth = 16; // custom_fn bodies inside bodies

std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j)
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] != b[j - 1])});
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::string did_you_mean(std::string_view name) {
  std::string_view best;
  std::size_t best_d = 3;
  for (const OpInfo& info : kOpInfo) {
    std::size_t d = edit_distance(name, info.name);
    if (d < best_d) best_d = d, best = info.name;
  }
  return best.empty() ? std::string() : " (did you mean '" + std::string(best) + "'?)";
}

class Parser {
public:
  Parser(std::string_view text, std::string_view source) : lex_(text, source) {
    tok_ = lex_.next();
  }

  Graph parse_graph() {
    Graph g = parse_graph_body();
    bump(); // '}'
    if (tok_.kind != K::End) error("unexpected " + detail::describe(tok_) + " after the graph");
    return g;
  }

private:
  /// `graph @name { nodes return ... }`: the top-level graph or a nested one (an attribute
  /// value, custom_fn's bodies), whose value names are its own.
  Graph parse_graph_body() {
    if (++graph_depth_ > kMaxGraphDepth) error("graphs are nested too deeply");
    auto outer_ids = std::move(ids_);
    ids_.clear();
    expect_ident("graph");
    expect(K::At, "after 'graph'");
    Graph g;
    if (tok_.kind == K::Ident || tok_.kind == K::String) {
      g.name = tok_.text;
      bump();
    } else {
      error("expected the graph name after '@', found " + detail::describe(tok_));
    }
    expect(K::LBrace, "to open the graph body");
    while (!(tok_.kind == K::Ident && tok_.text == "return")) {
      if (tok_.kind != K::Ref)
        error("expected a node (%N = ...) or 'return', found " + detail::describe(tok_));
      parse_node(g);
    }
    bump(); // return
    std::vector<NodeId> outs;
    if (tok_.kind == K::Ref) {
      outs.push_back(resolve(tok_));
      bump();
      while (tok_.kind == K::Comma) {
        bump();
        if (tok_.kind != K::Ref)
          error("expected a value reference after ',' in return, found " + detail::describe(tok_));
        outs.push_back(resolve(tok_));
        bump();
      }
    }
    g.outputs = std::move(outs);
    if (tok_.kind != K::RBrace)
      error("expected " + std::string(detail::token_kind_name(K::RBrace)) +
            " to close the graph body, found " + detail::describe(tok_));
    ids_ = std::move(outer_ids);
    --graph_depth_;
    return g;
  }

  void bump() { tok_ = lex_.next(); }
  [[noreturn]] void error(const std::string& msg) const { lex_.error_at(tok_.line, tok_.col, msg); }
  [[noreturn]] void error_at(const Token& t, const std::string& msg) const {
    lex_.error_at(t.line, t.col, msg);
  }
  void expect(K k, std::string_view why) {
    if (tok_.kind != k)
      error("expected " + std::string(detail::token_kind_name(k)) + " " + std::string(why) +
            ", found " + detail::describe(tok_));
    bump();
  }
  void expect_ident(std::string_view word) {
    if (tok_.kind != K::Ident || tok_.text != word)
      error("expected '" + std::string(word) + "', found " + detail::describe(tok_));
    bump();
  }

  NodeId resolve(const Token& ref) const {
    auto it = ids_.find(ref.i);
    if (it == ids_.end())
      error_at(ref, "use of undefined value %" + std::to_string(ref.i) +
                        " (values must be defined before use; cycles are not allowed)");
    return it->second;
  }

  void parse_node(Graph& g) {
    Token def = tok_;
    bump();
    if (ids_.count(def.i)) error_at(def, "redefinition of %" + std::to_string(def.i));
    expect(K::Equals, "after the value name");
    if (tok_.kind != K::Ident) error("expected an op name, found " + detail::describe(tok_));
    Token op_tok = tok_;
    auto kind = parse_op_kind(op_tok.text);
    if (!kind) error_at(op_tok, "unknown op '" + op_tok.text + "'" + did_you_mean(op_tok.text));
    bump();
    expect(K::LParen, "after the op name");
    std::vector<NodeId> inputs;
    std::vector<std::pair<std::string, AttrValue>> fields;
    bool first = true;
    while (tok_.kind != K::RParen) {
      if (!first) expect(K::Comma, "between operands");
      if (first && tok_.kind == K::String) {
        fields.emplace_back("name", AttrValue::string(tok_.text));
        bump();
      } else if (tok_.kind == K::Ref) {
        if (!fields.empty() && !(fields.size() == 1 && fields[0].first == "name"))
          error("operands must come before attributes");
        inputs.push_back(resolve(tok_));
        bump();
      } else if (tok_.kind == K::Ident) {
        std::string key = tok_.text;
        bump();
        expect(K::Equals, "after attribute name '" + key + "'");
        fields.emplace_back(key, parse_value(0));
      } else {
        error("expected an operand (%N) or an attribute (key=value), found " +
              detail::describe(tok_));
      }
      first = false;
    }
    bump(); // ')'
    Op op(*kind);
    try {
      op = detail::attrs_from_fields(*kind, fields);
    } catch (const detail::AttrError& e) {
      error_at(op_tok, op_tok.text + ": attribute " + e.path + ": " + e.message);
    }
    int arity = op_info(*kind).arity;
    if (arity >= 0 && inputs.size() != std::size_t(arity))
      error_at(op_tok, op_tok.text + " takes " + std::to_string(arity) + " operand" +
                           (arity == 1 ? "" : "s") + ", got " + std::to_string(inputs.size()));
    if (arity < 0 && inputs.empty()) error_at(op_tok, op_tok.text + " takes at least one operand");
    expect(K::Colon, "before the result type");
    Shape shape = parse_shape();
    std::optional<std::string> label;
    if (tok_.kind == K::Hash) {
      bump();
      if (tok_.kind != K::String)
        error("expected a quoted label after '#', found " + detail::describe(tok_));
      label = tok_.text;
      bump();
    }
    NodeId id =
        g.append_node(std::move(op), std::move(inputs), std::move(shape), std::move(label), Loc{});
    ids_.emplace(def.i, id);
  }

  Shape parse_shape() {
    Token open = tok_;
    expect(K::LBracket, "to open the shape");
    std::vector<Dim> dims;
    while (tok_.kind != K::RBracket) {
      if (!dims.empty()) expect(K::Comma, "between dimensions");
      if (tok_.kind == K::Int) {
        if (tok_.i < 0) error("dimension " + tok_.text + " is negative");
        if (tok_.i > kMaxDimSize) error("dimension " + tok_.text + " is too large (limit 2^48)");
        dims.emplace_back(tok_.i);
        bump();
      } else if (tok_.kind == K::Question) {
        bump();
        if (tok_.kind == K::Ident) {
          dims.push_back(Dim::dynamic(tok_.text));
        } else if (tok_.kind == K::Int && tok_.i >= 0 && tok_.i <= int64_t(UINT32_MAX)) {
          dims.push_back(Dim::dynamic(uint32_t(tok_.i)));
        } else {
          error("expected a symbol name or number after '?', found " + detail::describe(tok_));
        }
        bump();
      } else {
        error("expected a dimension (a size or ?symbol), found " + detail::describe(tok_));
      }
      if (dims.size() > 64) error("shapes may have at most 64 dimensions");
    }
    bump(); // ']'
    if (tok_.kind != K::Ident)
      error("expected a dtype after the dimensions, found " + detail::describe(tok_));
    auto dtype = parse_dtype(tok_.text);
    if (!dtype) {
      std::string names;
      for (std::size_t i = 0; i < kNumDTypes; ++i)
        names += (i ? ", " : "") + std::string(dtype_name(static_cast<DType>(i)));
      error("unknown dtype '" + tok_.text + "' (expected one of " + names + ")");
    }
    bump();
    try {
      return Shape(std::move(dims), *dtype);
    } catch (const Error& e) { // more bytes than any tensor may have
      error_at(open, e.what());
    }
  }

  AttrValue parse_value(int depth) {
    if (depth > kMaxListDepth) error("attribute lists are nested too deeply");
    AttrValue v;
    switch (tok_.kind) {
    case K::Int:
      v = AttrValue::integer(tok_.i);
      break;
    case K::Float:
      v = AttrValue::real(tok_.f, false);
      break;
    case K::String:
      v = AttrValue::string(tok_.text);
      break;
    case K::Bytes: {
      v.kind = AttrValue::Kind::Bytes;
      for (std::size_t i = 0; i + 1 < tok_.text.size(); i += 2)
        v.bytes.push_back(uint8_t(std::stoi(tok_.text.substr(i, 2), nullptr, 16)));
      break;
    }
    case K::Ident:
      if (tok_.text == "graph") {
        v = AttrValue::subgraph(SubGraph(parse_graph_body())); // stops on its '}'
        break;
      }
      if (tok_.text == "none")
        v = AttrValue::none();
      else if (tok_.text == "true")
        v = AttrValue::boolean(true);
      else if (tok_.text == "false")
        v = AttrValue::boolean(false);
      else
        v = AttrValue::ident(tok_.text);
      break;
    case K::LBracket: {
      bump();
      v.kind = AttrValue::Kind::List;
      while (tok_.kind != K::RBracket) {
        if (!v.list.empty()) expect(K::Comma, "between list elements");
        v.list.push_back(parse_value(depth + 1));
      }
      break;
    }
    default:
      error("expected an attribute value, found " + detail::describe(tok_));
    }
    bump();
    return v;
  }

  detail::Lexer lex_;
  Token tok_;
  std::unordered_map<int64_t, NodeId> ids_;
  int graph_depth_ = 0;
};

} // namespace

Graph parse_text(std::string_view text, std::string_view source_name) {
  Parser p(text, source_name);
  return p.parse_graph();
}

} // namespace rlx::ir
