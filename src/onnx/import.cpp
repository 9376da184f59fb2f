// src/onnx/import.cpp -- ONNX model -> rlx Graph: graph inputs, initializers as params, one rule
// per node (src/onnx/ops_*.cpp), values known at load time, and the errors that name the node.
#include "importer.hpp"

#include "rlx/interp.hpp"
#include "rlx/io/file.hpp"
#include "rlx/onnx.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace rlx::onnx {

using ir::DType;
using ir::NodeId;

namespace detail {

/// Elements above which a value computed at load time is not computed (it stays a graph value).
constexpr int64_t kMaxFoldElements = int64_t(1) << 20;
/// Nodes all the bodies of a model (each import of one, as an unrolled loop makes) may add.
constexpr int64_t kMaxBodyNodes = int64_t(1) << 22;

class Importer {
public:
  Importer(const ModelDef& m, std::string_view source, const LoadOptions& options)
      : m_(&m), def_(m.graph), source_(source), options_(options),
        graph_(m.graph.name.empty() ? "main" : m.graph.name) {}
  /// The importer of a body of `parent`'s (its own graph and names; outer names are captured).
  Importer(const GraphDef& body, std::string source, Importer& parent)
      : def_(body), source_(std::move(source)), options_(parent.options_),
        graph_(body.name.empty() ? "body" : body.name), parent_(&parent), depth_(parent.depth_ + 1),
        opset_(parent.opset_) {}

  Model run();
  /// Import `body`, a graph attribute of the node being mapped, with these formals. Errors
  /// raised inside name the body (the caller's map_node adds the node).
  Body import_body(const GraphDef& body, const std::vector<Formal>& formals);

  /// What operand names refer to: a graph value, a value known at load time, or both.
  struct Entry {
    std::optional<NodeId> node;
    std::optional<Buffer> value;
    bool initializer = false; ///< the value is an initializer (a Param when read as a tensor)
  };

  NodeId node_of(const std::string& name, const Ctx& ctx, std::size_t i);
  std::optional<Buffer> value_of(const std::string& name);
  std::optional<Buffer> evaluate(NodeId id);
  /// Compute one node's value from its operands' (already in folded_), when all are known.
  void fold(NodeId id);
  void define(const std::string& name, NodeId id) { env_[name] = Entry{id, std::nullopt, false}; }
  std::string where(const NodeDef& n) const {
    return rlx::detail::cat(source_, ": node '", n.name, "' (", n.op_type, ", opset ", opset_, ")");
  }
  std::string_view source() const { return source_; }

private:
  void add_inputs();
  Body run_body(const std::vector<Formal>& formals);
  /// The entry of `name`: this graph's, or an outer value captured as a new Input of a body.
  Entry* find(const std::string& name);
  Importer& root() { return parent_ ? parent_->root() : *this; }
  void map_node(const NodeDef& n);
  /// Label the nodes made for `n`'s outputs with the ONNX node's name (`name:i` for output i > 0),
  /// so dumps (rlx check --inspect) and errors read in the model's terms.
  void label_outputs(const NodeDef& n, std::size_t mark);

  const ModelDef* m_ = nullptr; ///< the model (the root importer only)
  const GraphDef& def_;
  std::string source_;
  const LoadOptions& options_;
  ir::Graph graph_;
  interp::Feed params_;
  std::map<std::string, Entry, std::less<>> env_;
  std::map<uint32_t, std::optional<Buffer>> folded_;
  Importer* parent_ = nullptr;
  int depth_ = 0;
  int64_t opset_ = 0;
  int64_t body_nodes_ = 0; ///< nodes of all bodies imported so far (the root's count)
  std::vector<std::string> captures_;
  std::vector<NodeId> capture_inputs_;
};

// ---- Ctx

NodeId Ctx::in(std::size_t i) {
  if (!has(i))
    fail(ErrorKind::Shape, "operand ", i, " is required but ",
         i < node.inputs.size() ? "empty" : "not given");
  return imp_.node_of(node.inputs[i], *this, i);
}

std::vector<int64_t> Ctx::sizes(std::size_t i) {
  const ir::Shape& s = shape(i);
  if (!s.is_static())
    unsupported(rlx::detail::cat("operand ", i, " '", node.inputs[i], "' has dynamic dims (",
                                 ir::short_str(s), "); rlx needs its sizes here"));
  return s.sizes();
}

std::optional<Buffer> Ctx::value(std::size_t i) {
  if (!has(i)) return std::nullopt;
  return imp_.value_of(node.inputs[i]);
}

Buffer Ctx::need(std::size_t i, std::string_view role) {
  if (!has(i)) fail(ErrorKind::Shape, "operand ", i, " (", role, ") is required but missing");
  std::optional<Buffer> v = value(i);
  if (!v)
    unsupported(rlx::detail::cat(
        "operand ", i, " (", role, ", '", node.inputs[i],
        "') is only known at run time; rlx needs it at load time (an initializer, a Constant "
        "node or a LoadOptions value)"));
  return std::move(*v);
}

std::vector<int64_t> Ctx::need_ints(std::size_t i, std::string_view role) {
  return to_ints(need(i, role));
}

double Ctx::need_scalar(std::size_t i, std::string_view role) {
  Buffer b = need(i, role);
  if (b.numel() != 1)
    fail(ErrorKind::Shape, "operand ", i, " (", role, ") must hold one value, not ",
         ir::short_str(b.shape()));
  return b.get_f64(0);
}

const Attr* Ctx::find_attr(std::string_view name, Attr::Kind kind) {
  used_.insert(std::string(name));
  auto it = node.attrs.find(name);
  if (it == node.attrs.end()) return nullptr;
  if (it->second.kind != kind) fail(ErrorKind::Parse, "attribute '", name, "' has the wrong type");
  return &it->second;
}

int64_t Ctx::attr_i(std::string_view name, int64_t def) {
  const Attr* a = find_attr(name, Attr::Kind::Int);
  return a ? a->i : def;
}
float Ctx::attr_f(std::string_view name, float def) {
  const Attr* a = find_attr(name, Attr::Kind::Float);
  return a ? a->f : def;
}
std::string Ctx::attr_s(std::string_view name, std::string def) {
  const Attr* a = find_attr(name, Attr::Kind::String);
  return a ? a->s : def;
}
std::vector<int64_t> Ctx::attr_ints(std::string_view name, std::vector<int64_t> def) {
  const Attr* a = find_attr(name, Attr::Kind::Ints);
  return a ? a->ints : def;
}
std::vector<float> Ctx::attr_floats(std::string_view name) {
  const Attr* a = find_attr(name, Attr::Kind::Floats);
  return a ? a->floats : std::vector<float>{};
}
std::optional<Buffer> Ctx::attr_tensor(std::string_view name) {
  const Attr* a = find_attr(name, Attr::Kind::Tensor);
  if (!a) return std::nullopt;
  return a->t;
}

const GraphDef& Ctx::attr_graph(std::string_view name) {
  const Attr* a = find_attr(name, Attr::Kind::Graph);
  if (!a) fail(ErrorKind::Parse, "the graph attribute '", name, "' is missing");
  return *a->g;
}

Body Ctx::body(const GraphDef& body, const std::vector<Formal>& formals) {
  return imp_.import_body(body, formals);
}

NodeId Ctx::named(const std::string& name) { return imp_.node_of(name, *this, 0); }

void Ctx::out(std::size_t i, NodeId id) {
  if (!wants(i)) return;
  imp_.define(node.outputs[i], id);
}

NodeId Ctx::constant(const Buffer& value) {
  DType dt = value.dtype();
  if (dt == DType::F16 || dt == DType::BF16) {
    std::vector<double> v = value.to_f64();
    return g.cast(constant(Buffer::from_f64(value.shape().with_dtype(DType::F32), v)), dt);
  }
  ir::Bytes bytes;
  auto src = value.bytes();
  bytes.data.resize(src.size());
  if (!src.empty()) std::memcpy(bytes.data.data(), src.data(), src.size());
  return g.append_node(ir::Op(ir::OpKind::Constant, ir::ConstantAttrs{std::move(bytes)}), {},
                       value.shape(), std::nullopt);
}

void Ctx::check_materialized(int64_t elements, std::string_view what) const {
  if (elements < 0 || elements > (int64_t(1) << 24))
    unsupported(rlx::detail::cat(what, " of ", elements,
                                 " elements (rlx builds at most 2^24 at load time)"));
}

int64_t Ctx::axis(int64_t a, int64_t r) const {
  if (a < -r || a >= r) fail(ErrorKind::Value, "axis ", a, " is out of range for rank ", r);
  return a < 0 ? a + r : a;
}

void Ctx::unsupported(const std::string& what) const { throw Error(ErrorKind::Unsupported, what); }

std::vector<int64_t> to_ints(const Buffer& b) {
  if (ir::is_float(b.dtype()) || ir::is_complex(b.dtype()))
    fail(ErrorKind::Type, "expected an integer tensor, got ", ir::short_str(b.shape()));
  return b.to_i64();
}

// ---- Importer

Importer::Entry* Importer::find(const std::string& name) {
  if (auto it = env_.find(name); it != env_.end()) return &it->second;
  if (!parent_) return nullptr;
  Entry* outer = parent_->find(name);
  if (!outer) return nullptr;
  // A body reading an outer value: an Input of the body (a bcast operand of the scan, or the
  // value itself where the loop is unrolled), folded from the outer value when that is known.
  ir::Shape shape = outer->node ? parent_->graph_.shape(*outer->node) : outer->value->shape();
  NodeId id = graph_.input(name, shape);
  folded_[id.index] = parent_->value_of(name);
  captures_.push_back(name);
  capture_inputs_.push_back(id);
  return &(env_[name] = Entry{id, std::nullopt, false});
}

NodeId Importer::node_of(const std::string& name, const Ctx& ctx, std::size_t i) {
  Entry* found = find(name);
  if (!found)
    fail(ErrorKind::Parse, "operand ", i, " '", name, "' is not defined before node '",
         ctx.node.name, "'");
  Entry& e = *found;
  if (e.node) return *e.node;
  RLX_CHECK(e.value, "entry without a node or a value");
  if (e.initializer) {
    e.node = graph_.param(name, e.value->shape());
    params_[name] = *e.value;
  } else {
    Ctx c(*this, graph_, ctx.node, opset_);
    e.node = c.constant(*e.value);
  }
  return *e.node;
}

std::optional<Buffer> Importer::value_of(const std::string& name) {
  Entry* e = find(name);
  if (!e) return std::nullopt;
  if (e->value) return e->value;
  if (e->node) return evaluate(*e->node);
  return std::nullopt;
}

std::optional<Buffer> Importer::evaluate(NodeId root) {
  // Operands first, without recursion (a chain of nodes may be as long as the file allows).
  std::vector<NodeId> stack{root};
  while (!stack.empty()) {
    NodeId id = stack.back();
    if (folded_.contains(id.index)) {
      stack.pop_back();
      continue;
    }
    bool ready = true;
    for (NodeId in : graph_.node(id).inputs)
      if (!folded_.contains(in.index)) stack.push_back(in), ready = false;
    if (!ready) continue;
    stack.pop_back();
    fold(id);
  }
  return folded_.at(root.index);
}

void Importer::fold(NodeId id) {
  const ir::Node& n = graph_.node(id);
  std::optional<Buffer> result;
  std::optional<int64_t> numel = n.shape.num_elements();
  if (n.op.kind() == ir::OpKind::Param) {
    result = params_.at(n.op.attrs<ir::LeafAttrs>().name);
  } else if (n.op.kind() == ir::OpKind::Input) {
    if (parent_) return void(folded_[id.index] = std::nullopt); // a body's formal, not given
    auto given = options_.input_values.find(n.op.attrs<ir::LeafAttrs>().name);
    if (given != options_.input_values.end() && given->second.shape() == n.shape)
      result = given->second;
  } else if (n.op.kind() != ir::OpKind::Input && numel && *numel <= kMaxFoldElements) {
    bool known = true;
    std::vector<const Buffer*> ptrs;
    for (NodeId in : n.inputs) {
      const std::optional<Buffer>& v = folded_.at(in.index);
      known = known && v.has_value();
      ptrs.push_back(v ? &*v : nullptr);
    }
    if (known) result = interp::eval_node(n, ptrs);
  }
  folded_[id.index] = std::move(result);
}

void Importer::add_inputs() {
  // Which graph inputs given in LoadOptions are read only where rlx needs values.
  std::set<std::string, std::less<>> dynamic_use;
  for (const NodeDef& n : def_.nodes) {
    auto r = rules().find(n.op_type);
    uint32_t mask = r == rules().end() ? 0 : r->second.static_operands;
    for (std::size_t i = 0; i < n.inputs.size(); ++i)
      if (i >= 32 || !(mask & (1u << i))) dynamic_use.insert(n.inputs[i]);
  }
  for (const ValueDef& out : def_.outputs) dynamic_use.insert(out.name);
  for (const auto& [name, value] : def_.initializers) env_[name] = Entry{std::nullopt, value, true};
  for (const ValueDef& v : def_.inputs) {
    auto init = env_.find(v.name);
    if (init != env_.end() && init->second.initializer) continue; // IR < 4 lists them as inputs
    std::string what = rlx::detail::cat(source_, ": graph input '", v.name, "'");
    if (v.kind != "tensor")
      fail(ErrorKind::Unsupported, what, " is ",
           v.kind.empty() ? std::string("untyped") : "a " + v.kind,
           "; rlx imports tensor inputs only");
    std::optional<DType> dt = dtype_of(v.elem_type);
    if (!dt)
      fail(ErrorKind::Unsupported, what, " has element type ", elem_type_name(v.elem_type),
           ", which rlx lacks");
    auto given = options_.input_values.find(v.name);
    Entry e;
    if (given != options_.input_values.end()) {
      if (given->second.dtype() != *dt)
        fail(ErrorKind::Type, what, " is ", ir::dtype_name(*dt), " but its given value is ",
             ir::short_str(given->second.shape()));
      e.value = given->second;
      if (!dynamic_use.contains(v.name)) {
        env_[v.name] = std::move(e);
        continue;
      }
    }
    if (!v.has_shape) fail(ErrorKind::Unsupported, what, " has no shape; rlx needs its rank");
    std::vector<ir::Dim> dims;
    for (std::size_t k = 0; k < v.dims.size(); ++k) {
      const DimDef& d = v.dims[k];
      if (d.value) {
        if (*d.value < 0 || *d.value > ir::kMaxDimSize)
          fail(ErrorKind::Parse, what, " has dim ", *d.value);
        dims.emplace_back(*d.value);
      } else if (!d.param.empty()) {
        dims.push_back(ir::Dim::dynamic(d.param));
      } else {
        dims.push_back(ir::Dim::dynamic(rlx::detail::cat(v.name, "_dim", k)));
      }
    }
    e.node = graph_.input(v.name, ir::Shape(dims, *dt));
    env_[v.name] = std::move(e);
  }
}

void Importer::map_node(const NodeDef& n) {
  if (!n.domain.empty())
    fail(ErrorKind::Unsupported, where(n), ": domain '", n.domain,
         "' is not supported (rlx maps the default ONNX domain)");
  auto r = rules().find(n.op_type);
  if (r == rules().end())
    fail(ErrorKind::Unsupported, where(n), ": op type ", n.op_type, " is not supported by rlx");
  if (opset_ < r->second.since)
    fail(ErrorKind::Unsupported, where(n), ": rlx maps ", n.op_type, " from opset ",
         r->second.since);
  std::size_t mark = graph_.len();
  Ctx ctx(*this, graph_, n, opset_);
  try {
    r->second.rule(ctx);
    for (const auto& [name, attr] : n.attrs)
      if (!ctx.used().contains(name))
        fail(ErrorKind::Unsupported, "attribute '", name, "' is not supported");
    for (std::size_t i = 0; i < n.outputs.size(); ++i)
      if (!n.outputs[i].empty() && !env_.contains(n.outputs[i]))
        fail(ErrorKind::Unsupported, "output ", i, " ('", n.outputs[i], "') is not supported");
  } catch (const Error& e) {
    throw Error(e.kind(), where(n) + ": " + e.what());
  }
  label_outputs(n, mark);
}

void Importer::label_outputs(const NodeDef& n, std::size_t mark) {
  if (n.name.empty()) return;
  for (std::size_t i = 0; i < n.outputs.size(); ++i) {
    auto e = env_.find(n.outputs[i]);
    if (n.outputs[i].empty() || e == env_.end() || !e->second.node) continue;
    // Only the nodes this ONNX node appended (an Identity's result is its operand's node), not
    // params and inputs (named already; an initializer's Param is made by its first user), and
    // not the graph's outputs, which run() names after their values (rlx run's file names).
    NodeId id = *e->second.node;
    bool graph_output = std::any_of(def_.outputs.begin(), def_.outputs.end(),
                                    [&](const ValueDef& v) { return v.name == n.outputs[i]; });
    ir::Node& node = graph_.node_mut(id);
    if (id.index < mark || graph_output || node.name || ir::has_trait(node.op.kind(), ir::kFed))
      continue;
    node.name = i == 0 ? n.name : rlx::detail::cat(n.name, ":", i);
  }
}

Model Importer::run() {
  auto it = m_->opsets.find("");
  if (it == m_->opsets.end())
    fail(ErrorKind::Unsupported, source_, ": the model imports no version of the default domain");
  opset_ = it->second;
  if (opset_ < 1 || opset_ > 18)
    fail(ErrorKind::Unsupported, source_, ": opset ", opset_, " (rlx maps opsets 1 to 18)");
  add_inputs();
  for (const NodeDef& n : def_.nodes) map_node(n);
  std::vector<NodeId> outs;
  for (const ValueDef& v : def_.outputs) {
    auto e = env_.find(v.name);
    if (e == env_.end())
      fail(ErrorKind::Parse, source_, ": graph output '", v.name, "' is never computed");
    NodeDef none;
    Ctx ctx(*this, graph_, none, opset_);
    NodeId id = node_of(v.name, ctx, 0);
    ir::Node& node = graph_.node_mut(id);
    if (!node.name) node.name = v.name;
    outs.push_back(id);
  }
  if (outs.empty()) fail(ErrorKind::Parse, source_, ": the graph has no outputs");
  graph_.set_outputs(std::move(outs));
  Model model;
  model.graph = std::move(graph_);
  model.params = std::move(params_);
  model.opset = opset_;
  model.producer = m_->producer;
  return model;
}

Body Importer::import_body(const GraphDef& body, const std::vector<Formal>& formals) {
  if (depth_ + 1 > kMaxGraphDepth)
    fail(ErrorKind::Unsupported, "bodies nested more than ", kMaxGraphDepth,
         " deep are not supported");
  Importer child(body, rlx::detail::cat("body '", body.name, "'"), *this);
  Body out = child.run_body(formals);
  Importer& r = root();
  r.body_nodes_ += int64_t(out.graph.len());
  if (r.body_nodes_ > kMaxBodyNodes)
    fail(ErrorKind::Unsupported, "the model's bodies add more than ", kMaxBodyNodes,
         " nodes (rlx's limit; an unrolled loop counts once per iteration)");
  return out;
}

Body Importer::run_body(const std::vector<Formal>& formals) {
  auto what = [&](const ValueDef& v) { return rlx::detail::cat(source_, ": '", v.name, "'"); };
  if (formals.size() != def_.inputs.size())
    fail(ErrorKind::Parse, source_, " has ", def_.inputs.size(), " inputs, but the node gives it ",
         formals.size());
  // Initializers of a body are constants there (a body has no params); inputs shadow them.
  for (const auto& [name, value] : def_.initializers)
    env_[name] = Entry{std::nullopt, value, false};
  Body out;
  for (std::size_t i = 0; i < formals.size(); ++i) {
    const ValueDef& v = def_.inputs[i];
    const ir::Shape& shape = formals[i].shape;
    if (!v.kind.empty() && v.kind != "tensor")
      fail(ErrorKind::Unsupported, what(v), " is a ", v.kind, "; rlx imports tensor bodies only");
    if (v.elem_type != 0 && dtype_of(v.elem_type) != shape.dtype())
      fail(ErrorKind::Type, what(v), " is declared ", elem_type_name(v.elem_type), " but receives ",
           ir::short_str(shape));
    bool fits = !v.has_shape || v.dims.size() == shape.rank();
    for (std::size_t k = 0; fits && v.has_shape && k < v.dims.size(); ++k)
      fits = !v.dims[k].value || !shape.dims()[k].is_static() ||
             *v.dims[k].value == shape.dims()[k].size();
    if (!fits)
      fail(ErrorKind::Shape, what(v), "'s declared shape does not fit ", ir::short_str(shape),
           ", which it receives");
    NodeId id = graph_.input(v.name, shape);
    folded_[id.index] = formals[i].value;
    env_[v.name] = Entry{id, std::nullopt, false};
    out.inputs.push_back(id);
  }
  for (const NodeDef& n : def_.nodes) map_node(n);
  if (def_.outputs.empty()) fail(ErrorKind::Parse, source_, " has no outputs");
  for (const ValueDef& v : def_.outputs) {
    if (!v.kind.empty() && v.kind != "tensor")
      fail(ErrorKind::Unsupported, what(v), " is a ", v.kind, "; rlx imports tensor bodies only");
    if (!find(v.name)) fail(ErrorKind::Parse, what(v), ", an output, is never computed");
    NodeDef none;
    Ctx ctx(*this, graph_, none, opset_);
    out.outputs.push_back(node_of(v.name, ctx, 0));
    out.values.push_back(value_of(v.name));
  }
  out.captures = captures_;
  out.capture_inputs = capture_inputs_;
  graph_.set_outputs(out.outputs);
  out.graph = std::move(graph_);
  return out;
}

const Rules& rules() {
  static const Rules table = [] {
    Rules r;
    add_elementwise_rules(r);
    add_reduce_rules(r);
    add_movement_rules(r);
    add_nn_rules(r);
    add_resize_rules(r);
    add_recurrent_rules(r);
    add_control_rules(r);
    return r;
  }();
  return table;
}

} // namespace detail

Model parse_model(std::string_view bytes, std::string_view source, const LoadOptions& options) {
  detail::ModelDef m = detail::decode_model(bytes, source);
  return detail::Importer(m, source, options).run();
}

Model load(const std::string& path, const LoadOptions& options) {
  return parse_model(io::read_file(path), path, options);
}

Buffer load_tensor(const std::string& path, std::string* name) {
  return read_tensor(io::read_file(path), path, name);
}

ModelSummary summarize(std::string_view bytes, std::string_view source) {
  detail::ModelDef m = detail::decode_model(bytes, source);
  ModelSummary out;
  if (auto it = m.opsets.find(""); it != m.opsets.end()) out.opset = it->second;
  for (const detail::NodeDef& n : m.graph.nodes)
    out.nodes.push_back(NodeSummary{n.op_type, n.domain, n.name, n.inputs});
  for (const auto* list : {&m.graph.inputs, &m.graph.outputs})
    for (const detail::ValueDef& v : *list)
      out.io_types.push_back(
          v.kind == "tensor" ? rlx::detail::cat("tensor(", detail::elem_type_name(v.elem_type), ")")
                             : v.kind);
  return out;
}

std::vector<std::string> supported_ops() {
  std::vector<std::string> out;
  for (const auto& [name, entry] : detail::rules()) out.push_back(name);
  return out;
}

} // namespace rlx::onnx
