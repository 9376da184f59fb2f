// src/ir/bind.cpp -- Graph::bind: specialize dynamic dims to sizes, checking every shape rule.
#include "rlx/ir/graph.hpp"
#include "rlx/ir/infer.hpp"

namespace rlx::ir {

namespace {
std::string binding_str(const DimBinding& b) {
  std::string out = "{";
  for (auto [s, n] : b.entries()) {
    if (out.size() > 1) out += ", ";
    out += to_string(Dim::dynamic(s)) + "=" + std::to_string(n);
  }
  return out + "}";
}
} // namespace

Graph Graph::bind(const DimBinding& b) const {
  for (const Node& n : nodes_)
    for (uint32_t s : n.shape.dynamic_symbols())
      if (!b.get(s))
        fail(ErrorKind::Bind, "bind: symbol ", to_string(Dim::dynamic(s)), " is not bound (graph @",
             name, " uses it at ", n.id, " (", n.op.name(), ") : ", to_string(n.shape),
             "; binding ", binding_str(b), ")");
  Graph out = *this;
  for (Node& n : out.nodes_) {
    try {
      n.shape = n.shape.bind(b);
    } catch (const Error& e) { // bound sizes that make more bytes than any tensor may have
      fail(e.kind(), "bind: binding ", binding_str(b), " at ", n.id, " (", n.op.name(),
           "): ", e.what());
    }
  }
  for (const Node& n : out.nodes_) {
    if (n.inputs.empty()) continue;
    std::vector<Shape> shapes;
    for (NodeId in : n.inputs) shapes.push_back(out.nodes_[in.index].shape);
    std::optional<Shape> inferred;
    try {
      inferred = infer_shape(n.op, shapes);
    } catch (const Error& e) {
      fail(ErrorKind::Bind, "bind: binding ", binding_str(b), " is inconsistent at ", n.id, " (",
           n.op.name(), "): ", e.what());
    }
    if (inferred && *inferred != n.shape)
      fail(ErrorKind::Bind, "bind: binding ", binding_str(b), " is inconsistent at ", n.id, " (",
           n.op.name(), "): declared ", short_str(n.shape), " but the operands give ",
           short_str(*inferred));
  }
  return out;
}

} // namespace rlx::ir
