// src/ir/inspect.cpp -- Graph::inspect: an annotated dump for people (not parsed back).
#include "formats/text_lexer.hpp"
#include "rlx/buffer.hpp"
#include "rlx/ir/graph.hpp"
#include "rlx/ir/lir.hpp"
#include "rlx/ir/text.hpp"

#include <algorithm>
#include <cstring>
#include <map>
#include <sstream>

namespace rlx::ir {

std::string human_bytes(uint64_t b) {
  std::ostringstream os;
  os.precision(3);
  if (b >= (uint64_t(1) << 30))
    os << double(b) / double(uint64_t(1) << 30) << " GiB";
  else if (b >= (1 << 20))
    os << double(b) / double(1 << 20) << " MiB";
  else if (b >= (1 << 10))
    os << double(b) / double(1 << 10) << " KiB";
  else
    os << b << " B";
  return os.str();
}

namespace {

/// A one-element constant as its number (`constant(0.125)`), not its bytes; other nodes as the
/// text IR prints them.
std::string inspect_line(const Graph& g, const Node& n) {
  std::optional<int64_t> numel = n.shape.num_elements();
  if (n.op.kind() != OpKind::Constant || numel != 1) return node_to_text(g, n.id);
  const Bytes& data = n.op.attrs<ConstantAttrs>().data;
  Buffer b = Buffer::uninitialized(n.shape);
  if (data.data.size() != b.bytes().size()) return node_to_text(g, n.id);
  std::memcpy(b.bytes().data(), data.data.data(), data.data.size());
  std::string value;
  DType dt = n.shape.dtype();
  if (dt == DType::C64) {
    std::complex<float> c = b.get_c64(0);
    value = detail::format_number(c.real(), true) + (c.imag() < 0 ? "" : "+") +
            detail::format_number(c.imag(), true) + "i";
  } else if (dt == DType::Bool) {
    value = b.get_i64(0) != 0 ? "true" : "false";
  } else if (is_float(dt)) {
    value = detail::format_number(b.get_f64(0), dt != DType::F64);
  } else {
    value = std::to_string(b.get_i64(0));
  }
  std::ostringstream os;
  os << n.id << " = constant(" << value << ") : " << n.shape;
  if (n.name) os << " #" << detail::quote_string(*n.name);
  return os.str();
}

} // namespace

std::string Graph::inspect() const {
  std::ostringstream os;
  int64_t bytes = 0;
  bool all_static = true;
  std::map<std::string_view, std::size_t> kinds;
  for (const Node& n : nodes_) {
    kinds[n.op.name()]++;
    if (auto b = n.shape.size_bytes())
      bytes += *b;
    else
      all_static = false;
  }
  os << "graph @" << name << " (" << nodes_.size() << " nodes, " << outputs.size() << " outputs, "
     << (all_static ? "" : ">= ") << human_bytes(uint64_t(bytes))
     << " if every node had its own buffer)\n";
  std::vector<std::pair<std::string_view, std::size_t>> sorted(kinds.begin(), kinds.end());
  std::sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) {
    return a.second != b.second ? a.second > b.second : a.first < b.first;
  });
  os << "  op kinds:";
  for (std::size_t i = 0; i < sorted.size(); ++i)
    os << (i ? ", " : " ") << sorted[i].first << "=" << sorted[i].second;
  os << "\n";
  if (has_dynamic_dims()) {
    os << "  dynamic symbols:";
    for (uint32_t s : dynamic_symbols()) os << " " << Dim::dynamic(s);
    os << "\n";
  }
  os << "\n";
  // Counted once for the graph (use_count per node would make the dump quadratic).
  std::vector<std::size_t> users(nodes_.size(), 0);
  std::vector<char> output(nodes_.size(), 0);
  for (const Node& n : nodes_)
    for (NodeId in : n.inputs) ++users[in.index];
  for (NodeId o : outputs) output[o.index] = 1;
  for (const Node& n : nodes_) {
    std::string line = inspect_line(*this, n);
    std::vector<std::string> tags;
    std::size_t users_n = users[n.id.index];
    bool is_out = output[n.id.index] != 0;
    if (users_n == 0 && !is_out) tags.push_back("unused");
    if (users_n > 1) tags.push_back(std::to_string(users_n) + " users");
    if (is_out) tags.push_back("output");
    if (n.loc.known()) {
      std::string_view file = n.loc.file;
      if (auto slash = file.rfind('/'); slash != std::string_view::npos)
        file.remove_prefix(slash + 1);
      tags.push_back(std::string(file) + ":" + std::to_string(n.loc.line));
    }
    os << "  " << line;
    if (!tags.empty()) {
      os << "   //";
      for (std::size_t i = 0; i < tags.size(); ++i) os << (i ? ", " : " ") << tags[i];
    }
    os << "\n";
  }
  os << "  return";
  for (std::size_t i = 0; i < outputs.size(); ++i) os << (i ? ", " : " ") << outputs[i];
  os << "\n";
  return os.str();
}

} // namespace rlx::ir
