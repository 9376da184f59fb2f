// tools/rlx/graph_file.cpp -- reading graphs (text IR or JSON) and --bind options from the user.
#include "graph_file.hpp"

#include "args.hpp"

#include <rlx/error.hpp>
#include <rlx/io/file.hpp>
#include <rlx/ir/json.hpp>
#include <rlx/ir/text.hpp>
#include <rlx/ir/verify.hpp>
#include <rlx/onnx.hpp>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>

namespace rlx::cli {

std::string read_file(const std::string& path) {
  if (path == "-") return io::read_stream(std::cin, "standard input");
  return io::read_file(path);
}

bool looks_like_json(std::string_view path, std::string_view text) {
  if (path.ends_with(".json")) return true;
  std::size_t i = text.find_first_not_of(" \t\r\n");
  return i != std::string_view::npos && text[i] == '{';
}

bool is_onnx(std::string_view path) { return path.ends_with(".onnx"); }

ir::Graph load_graph(const std::string& path, interp::Feed* params) {
  if (is_onnx(path)) {
    onnx::Model m = onnx::load(path);
    if (params) *params = std::move(m.params);
    return std::move(m.graph);
  }
  std::string text = read_file(path);
  std::string source = path == "-" ? "<stdin>" : path;
  if (!looks_like_json(path, text)) return ir::parse_text(text, source);
  try {
    return ir::from_json(text);
  } catch (const Error& e) {
    // The JSON reader names its source "json" ("json:3:7: ..." or "json: $.nodes[0]: ...").
    std::string_view what = e.what();
    if (what.starts_with("json"))
      what.remove_prefix(4);
    else
      source += ": ";
    throw Error(e.kind(), source + std::string(what));
  }
}

void verify_graph(const ir::Graph& g, std::string_view path) {
  std::vector<std::string> problems = ir::verify_all(g);
  if (problems.empty()) return;
  std::string source = path == "-" ? "<stdin>" : std::string(path);
  if (problems.size() == 1) fail(ErrorKind::Verify, source, ": ", problems[0]);
  std::string msg = detail::cat(source, ": graph @", g.name, " does not verify (", problems.size(),
                                " problems):");
  for (const std::string& p : problems) msg += "\n  " + p;
  throw Error(ErrorKind::Verify, msg);
}

std::string symbol_str(uint32_t symbol) { return ir::to_string(ir::Dim::dynamic(symbol)); }

uint32_t find_symbol(const ir::Graph& g, std::string_view name, std::string_view option) {
  std::string_view bare = name.starts_with('?') ? name.substr(1) : name;
  std::vector<uint32_t> symbols = g.dynamic_symbols();
  for (uint32_t s : symbols)
    if (symbol_str(s).substr(1) == bare) return s;
  std::string known;
  for (uint32_t s : symbols) known += (known.empty() ? "" : ", ") + symbol_str(s);
  fail(ErrorKind::Bind, option, ": graph @", g.name, " has no dynamic dim ?", bare,
       known.empty() ? std::string(" (all its dims are static)") : " (its symbols: " + known + ")");
}

ir::DimBinding parse_bindings(const ir::Graph& g, std::span<const std::string> values) {
  ir::DimBinding b;
  for (const std::string& v : values) {
    auto [name, size_text] = split_assignment("--bind", v, "SYMBOL=SIZE");
    int64_t size = parse_size("--bind " + name, size_text);
    uint32_t s = find_symbol(g, name, "--bind " + v);
    if (auto old = b.get(s); old && *old != size)
      fail(ErrorKind::Bind, "--bind ", v, ": ", symbol_str(s), " is already bound to ", *old);
    if (size > ir::kMaxDimSize) fail(ErrorKind::Bind, "--bind ", v, ": sizes are limited to 2^48");
    b.set(s, size);
  }
  return b;
}

ir::Graph bind_graph(const ir::Graph& g, const ir::DimBinding& b, std::string_view path) {
  if (!g.has_dynamic_dims()) return g;
  try {
    return g.bind(b);
  } catch (const Error& e) {
    throw Error(e.kind(), detail::cat(path == "-" ? "<stdin>" : path, ": ", e.what()));
  }
}

} // namespace rlx::cli
