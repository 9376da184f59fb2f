// tools/rlx/graph_file.hpp -- reading graphs (text IR or JSON) and --bind options from the user.
#pragma once

#include <rlx/interp.hpp>
#include <rlx/ir/graph.hpp>
#include <rlx/ir/shape.hpp>

#include <span>
#include <string>
#include <string_view>

namespace rlx::cli {

/// The whole file (`-` reads standard input); rlx::Error (ErrorKind::Io) naming the path when it
/// cannot be read.
std::string read_file(const std::string& path);

/// Whether a graph file is JSON: its first non-blank byte is '{', or the path ends in .json.
bool looks_like_json(std::string_view path, std::string_view text);

/// Whether a path names an ONNX model (it ends in .onnx).
bool is_onnx(std::string_view path);

/// Parse a graph file in any form (text IR, JSON, ONNX); parse errors are rlx::Errors naming the
/// path (and the line and column, or the JSON path). An ONNX model's initializers go to
/// `params` when given. The graph is not verified here.
ir::Graph load_graph(const std::string& path, interp::Feed* params = nullptr);

/// Throw rlx::Error (ErrorKind::Verify) listing every problem verify_all finds in `g`.
void verify_graph(const ir::Graph& g, std::string_view path);

/// `?name` or `?N` for a symbol, as the text IR prints it.
std::string symbol_str(uint32_t symbol);

/// The symbol of graph `g` called `name` (`batch`, `?batch` or `?7`); rlx::Error (ErrorKind::Bind)
/// naming `option` when the graph has no such dynamic dim.
uint32_t find_symbol(const ir::Graph& g, std::string_view name, std::string_view option);

/// The bindings given as `--bind SYMBOL=SIZE` options.
ir::DimBinding parse_bindings(const ir::Graph& g, std::span<const std::string> values);

/// g.bind(b), with the error naming the path; returns g itself when it has no dynamic dims.
ir::Graph bind_graph(const ir::Graph& g, const ir::DimBinding& b, std::string_view path);

} // namespace rlx::cli
