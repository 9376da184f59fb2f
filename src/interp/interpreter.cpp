// src/interp/interpreter.cpp -- run a graph node by node, each on its kind's kernel (the table
// generated from ops.def); the leaf family's kernels.
#include "kernels.hpp"

#include "rlx/host.hpp"
#include "rlx/ir/verify.hpp"

#include <cstring>

namespace rlx::interp {

namespace detail {

std::vector<int64_t> strides_of(std::span<const int64_t> sizes) {
  std::vector<int64_t> s(sizes.size(), 1);
  for (std::size_t i = sizes.size(); i-- > 1;) s[i - 1] = s[i] * sizes[i];
  return s;
}

BroadcastIndex::BroadcastIndex(const ir::Shape& operand, const ir::Shape& out)
    : out_sizes_(out.sizes()), in_strides_(out.rank(), 0) {
  std::vector<int64_t> in_sizes = operand.sizes();
  std::vector<int64_t> st = strides_of(in_sizes);
  std::size_t off = out.rank() - operand.rank();
  for (std::size_t i = 0; i < operand.rank(); ++i)
    in_strides_[off + i] = in_sizes[i] == 1 ? 0 : st[i];
}

int64_t BroadcastIndex::operator()(int64_t out_index) const {
  int64_t in = 0;
  for (std::size_t i = out_sizes_.size(); i-- > 0;) {
    int64_t size = out_sizes_[i];
    if (size == 0) return 0;
    in += (out_index % size) * in_strides_[i];
    out_index /= size;
  }
  return in;
}

AxisSplit split_at(const ir::Shape& s, int64_t axis) {
  AxisSplit a;
  auto sizes = s.sizes();
  for (int64_t i = 0; i < int64_t(sizes.size()); ++i) {
    if (i < axis)
      a.outer *= sizes[std::size_t(i)];
    else if (i == axis)
      a.len = sizes[std::size_t(i)];
    else
      a.inner *= sizes[std::size_t(i)];
  }
  return a;
}

// ---- The leaf family: constants hold their bytes; inputs and params are fed, not computed.

RLX_KERNEL(Constant) {
  Buffer b(n.shape);
  const auto& data = n.op.attrs<ir::ConstantAttrs>().data.data;
  if (data.size() != b.bytes().size())
    fail(ErrorKind::Runtime, "constant ", n.id, ": ", data.size(), " bytes for ",
         ir::short_str(n.shape));
  if (!data.empty()) std::memcpy(b.bytes().data(), data.data(), data.size());
  return b;
}
RLX_KERNEL(Input) { fail(ErrorKind::Unsupported, "interp: cannot evaluate ", n.op.name()); }
RLX_KERNEL(Param) { fail(ErrorKind::Unsupported, "interp: cannot evaluate ", n.op.name()); }

namespace {

using KernelFn = Buffer (*)(const ir::Node& n, Operands in);

/// Every kind's kernel, by kind (generated from ops.def).
constexpr KernelFn kKernels[] = {
#define OP(E, N, F, A, T, S) &kernel<ir::OpKind::E>,
#include "rlx/ir/ops.def"
};

} // namespace

} // namespace detail

Buffer eval_node(const ir::Node& n, std::span<const Buffer* const> in) {
  return detail::kKernels[static_cast<std::size_t>(n.op.kind())](n, in);
}

namespace {

/// " (node %3 reduce_max, built at file.cpp:12)" for an error found while running node n.
std::string node_context(const ir::Node& n) {
  std::string s = rlx::detail::cat(" (node ", n.id, " ", n.op.name());
  if (n.loc.known()) s += rlx::detail::cat(", built at ", n.loc.file, ":", n.loc.line);
  return s + ")";
}

} // namespace

Buffer eval_node_of_graph(const ir::Node& n, std::span<const Buffer* const> operands) {
  try {
    // A safe point for a host's interrupt (rlx::request_interrupt): between the nodes it runs.
    if (interrupt_requested()) rlx::detail::check_interrupt("the interpreter");
    return eval_node(n, operands);
  } catch (const Error& e) {
    throw Error(e.kind(), e.what() + node_context(n));
  }
}

std::vector<const Buffer*> feed_leaves(const ir::Graph& g, std::span<const Buffer* const> leaves) {
  std::vector<const Buffer*> values(g.len(), nullptr);
  std::size_t next_leaf = 0;
  for (const ir::Node& n : g.nodes()) {
    if (!ir::has_trait(n.op.kind(), ir::kFed)) continue;
    std::string_view what = n.op.name();
    const std::string& name = n.op.attrs<ir::LeafAttrs>().name;
    if (next_leaf >= leaves.size() || leaves[next_leaf] == nullptr)
      fail(ErrorKind::Runtime, "run: missing ", what, " \"", name, "\" (", ir::short_str(n.shape),
           ") of graph @", g.name);
    const Buffer* b = leaves[next_leaf++];
    if (b->shape() != n.shape)
      fail(ErrorKind::Runtime, "run: ", what, " \"", name, "\" is ", ir::short_str(b->shape()),
           " but graph @", g.name, " expects ", ir::short_str(n.shape));
    values[n.id.index] = b;
  }
  if (next_leaf != leaves.size())
    fail(ErrorKind::Runtime, "run: ", leaves.size(), " leaf buffers for graph @", g.name, " with ",
         next_leaf, " inputs and params");
  return values;
}

std::vector<Buffer> run_leaves(const ir::Graph& g, std::span<const Buffer* const> leaves) {
  rlx::detail::WorkScope work; // not to be abandoned: a safe point per node comes soon
  if (g.has_dynamic_dims())
    fail(ErrorKind::Runtime, "run: graph @", g.name,
         " has dynamic dims; bind them first (Graph::bind)");
  ir::verify(g);
  // Last use of every node (outputs live to the end) so intermediates can be freed early.
  std::vector<uint32_t> last_use(g.len(), 0);
  for (const ir::Node& n : g.nodes())
    for (ir::NodeId id : n.inputs) last_use[id.index] = n.id.index;
  for (ir::NodeId id : g.outputs) last_use[id.index] = uint32_t(g.len());
  std::vector<Buffer> owned(g.len());
  std::vector<const Buffer*> values = feed_leaves(g, leaves);
  std::vector<const Buffer*> operands;
  for (const ir::Node& n : g.nodes()) {
    if (values[n.id.index] != nullptr) continue; // fed
    operands.clear();
    for (ir::NodeId id : n.inputs) operands.push_back(values[id.index]);
    owned[n.id.index] = eval_node_of_graph(n, operands);
    values[n.id.index] = &owned[n.id.index];
    RLX_CHECK(owned[n.id.index].shape() == n.shape, "kernel for ", n.op.name(), " produced ",
              ir::short_str(owned[n.id.index].shape()), ", node says ", ir::short_str(n.shape));
    for (ir::NodeId id : n.inputs)
      if (last_use[id.index] == n.id.index) owned[id.index] = Buffer();
  }
  std::vector<Buffer> outs;
  outs.reserve(g.outputs.size());
  for (ir::NodeId id : g.outputs) outs.push_back(*values[id.index]);
  return outs;
}

std::vector<Buffer> run(const ir::Graph& g, const Feed& inputs, const Feed& params) {
  std::vector<const Buffer*> leaves;
  for (const ir::Node& n : g.nodes()) {
    if (!ir::has_trait(n.op.kind(), ir::kFed)) continue;
    const Feed& feed = n.op.kind() == ir::OpKind::Input ? inputs : params;
    auto it = feed.find(n.op.attrs<ir::LeafAttrs>().name);
    leaves.push_back(it == feed.end() ? nullptr : &it->second);
  }
  return run_leaves(g, leaves);
}

} // namespace rlx::interp
