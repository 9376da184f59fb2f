// src/dist/tensor.cpp -- rlx::dist's collectives on Tensors: each records its Graph builder
// through rlx::apply, so it is lazy, traced by rlx::jit and differentiated by rlx::grad like any
// other op (send and recv too: they communicate when their results are evaluated).
#include "rlx/apply.hpp"
#include "rlx/dist.hpp"

#include <map>

namespace rlx::dist {

Tensor all_reduce(const Tensor& x, CollectiveOp op, Loc loc) {
  return apply(
      {x},
      [&](ir::Graph& g, std::span<const ir::NodeId> in) { return g.all_reduce(in[0], op, loc); },
      loc);
}

Tensor all_gather(const Tensor& x, int64_t axis, Loc loc) {
  return apply(
      {x},
      [&](ir::Graph& g, std::span<const ir::NodeId> in) { return g.all_gather(in[0], axis, loc); },
      loc);
}

Tensor reduce_scatter(const Tensor& x, int64_t axis, Loc loc) {
  return apply(
      {x},
      [&](ir::Graph& g, std::span<const ir::NodeId> in) {
        return g.reduce_scatter(in[0], axis, loc);
      },
      loc);
}

Tensor broadcast(const Tensor& x, int root, Loc loc) {
  return apply(
      {x},
      [&](ir::Graph& g, std::span<const ir::NodeId> in) { return g.broadcast(in[0], root, loc); },
      loc);
}

Tensor reduce(const Tensor& x, int root, Loc loc) {
  return apply(
      {x},
      [&](ir::Graph& g, std::span<const ir::NodeId> in) {
        return g.reduce_to_root(in[0], root, loc);
      },
      loc);
}

Tensor send(const Tensor& x, int peer, int tag, Loc loc) {
  return apply(
      {x},
      [&](ir::Graph& g, std::span<const ir::NodeId> in) { return g.send(in[0], peer, tag, loc); },
      loc);
}

Tensor recv(const Tensor& like, int peer, int tag, Loc loc) {
  return apply(
      {like},
      [&](ir::Graph& g, std::span<const ir::NodeId> in) { return g.recv(in[0], peer, tag, loc); },
      loc);
}

std::vector<Tensor> all_reduce_bucket(const std::vector<Tensor>& grads, CollectiveOp op, Loc loc) {
  // One bucket per dtype (an all_reduce has one dtype), in first-appearance order.
  std::map<ir::DType, std::vector<std::size_t>> by_dtype;
  for (std::size_t i = 0; i < grads.size(); ++i) by_dtype[grads[i].dtype()].push_back(i);
  std::vector<Tensor> out(grads.size());
  for (const auto& [t, idx] : by_dtype) {
    std::vector<Tensor> flat;
    for (std::size_t i : idx) flat.push_back(reshape(grads[i], {-1}, loc));
    Tensor reduced = all_reduce(flat.size() == 1 ? flat[0] : concat(flat, 0, loc), op, loc);
    int64_t at = 0;
    for (std::size_t i : idx) {
      int64_t n = grads[i].numel(loc);
      out[i] = reshape(narrow(reduced, 0, at, n, loc), grads[i].sizes(loc), loc);
      at += n;
    }
  }
  return out;
}

} // namespace rlx::dist
