// src/interp/interpreter.cpp -- run a graph node by node; dispatch each node to its family.
#include "kernels.hpp"

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

} // namespace detail

bool has_kernel(ir::OpKind k) {
  using namespace detail;
  switch (ir::op_family(k)) {
  case ir::Family::Leaf:
    return true;
  case ir::Family::EwUnary:
  case ir::Family::EwBinary:
  case ir::Family::EwTernary:
    return elementwise_has(k);
  case ir::Family::Reduce:
  case ir::Family::Scan:
    return reduce_scan_has(k);
  case ir::Family::Movement:
  case ir::Family::Index:
    return movement_has(k);
  case ir::Family::Contract:
    return contract_has(k);
  case ir::Family::Norm:
    return norm_has(k);
  case ir::Family::Attention:
    return attention_has(k);
  case ir::Family::Conv:
  case ir::Family::Pool:
    return conv_pool_has(k);
  case ir::Family::Composite:
    return reduce_scan_has(k) || contract_has(k) || norm_has(k) || attention_has(k);
  }
  return false;
}

Buffer eval_node(const ir::Node& n, std::span<const Buffer* const> in) {
  using namespace detail;
  if (n.op.kind() == ir::OpKind::Constant) {
    Buffer b(n.shape);
    const auto& data = n.op.attrs<ir::ConstantAttrs>().data.data;
    if (data.size() != b.bytes().size())
      fail(ErrorKind::Runtime, "constant ", n.id, ": ", data.size(), " bytes for ",
           ir::short_str(n.shape));
    if (!data.empty()) std::memcpy(b.bytes().data(), data.data(), data.size());
    return b;
  }
  if (!has_kernel(n.op.kind()))
    fail(ErrorKind::Unsupported, "interp: no kernel for op ", n.op.name(), " yet (", n.id, ")");
  switch (n.op.family()) {
  case ir::Family::EwUnary:
  case ir::Family::EwBinary:
  case ir::Family::EwTernary:
    return eval_elementwise(n, in);
  case ir::Family::Reduce:
  case ir::Family::Scan:
    return eval_reduce_scan(n, in);
  case ir::Family::Movement:
  case ir::Family::Index:
    return eval_movement(n, in);
  case ir::Family::Contract:
    return eval_contract(n, in);
  case ir::Family::Norm:
    return eval_norm(n, in);
  case ir::Family::Attention:
    return eval_attention(n, in);
  case ir::Family::Conv:
  case ir::Family::Pool:
    return eval_conv_pool(n, in);
  case ir::Family::Composite:
    if (reduce_scan_has(n.op.kind())) return eval_reduce_scan(n, in);
    if (contract_has(n.op.kind())) return eval_contract(n, in);
    if (norm_has(n.op.kind())) return eval_norm(n, in);
    return eval_attention(n, in);
  case ir::Family::Leaf:
    break;
  }
  fail(ErrorKind::Unsupported, "interp: cannot evaluate ", n.op.name());
}

std::vector<Buffer> run(const ir::Graph& g, const Feed& inputs, const Feed& params) {
  if (g.has_dynamic_dims())
    fail(ErrorKind::Runtime, "run: graph @", g.name,
         " has dynamic dims; bind them first (Graph::bind)");
  ir::verify(g);
  std::vector<Buffer> values(g.len());
  std::vector<const Buffer*> operands;
  for (const ir::Node& n : g.nodes()) {
    ir::OpKind k = n.op.kind();
    if (k == ir::OpKind::Input || k == ir::OpKind::Param) {
      const Feed& feed = k == ir::OpKind::Input ? inputs : params;
      std::string_view what = k == ir::OpKind::Input ? "input" : "param";
      const std::string& name = n.op.attrs<ir::LeafAttrs>().name;
      auto it = feed.find(name);
      if (it == feed.end())
        fail(ErrorKind::Runtime, "run: missing ", what, " \"", name, "\" (", ir::short_str(n.shape),
             ") of graph @", g.name);
      if (it->second.shape() != n.shape)
        fail(ErrorKind::Runtime, "run: ", what, " \"", name, "\" is ",
             ir::short_str(it->second.shape()), " but graph @", g.name, " expects ",
             ir::short_str(n.shape));
      values[n.id.index] = it->second;
      continue;
    }
    operands.clear();
    for (ir::NodeId id : n.inputs) operands.push_back(&values[id.index]);
    values[n.id.index] = eval_node(n, operands);
    RLX_CHECK(values[n.id.index].shape() == n.shape, "kernel for ", n.op.name(), " produced ",
              ir::short_str(values[n.id.index].shape()), ", node says ", ir::short_str(n.shape));
  }
  std::vector<Buffer> outs;
  for (ir::NodeId id : g.outputs) outs.push_back(values[id.index]);
  return outs;
}

} // namespace rlx::interp
