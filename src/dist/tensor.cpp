// src/dist/tensor.cpp -- rlx::dist's collectives on Tensors: each records its Graph builder
// through rlx::apply, so it is lazy, traced by rlx::jit and differentiated by rlx::grad like any
// other op (send and recv too: they communicate when their results are evaluated).
#include "rlx/apply.hpp"
#include "rlx/custom_op.hpp"
#include "rlx/dist.hpp"

#include "dist/shard.hpp"

#include <cstring>
#include <map>
#include <mutex>

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

namespace {

/// [outer, full, inner] -> [outer, len, inner] where full = ranks * len: this rank's block.
struct Blocks {
  int64_t outer = 1, full = 1, inner = 1;
};
Blocks blocks_of(const ir::Shape& s, int64_t axis) {
  Blocks b;
  std::vector<int64_t> d = s.sizes();
  for (int64_t i = 0; i < axis; ++i) b.outer *= d[std::size_t(i)];
  b.full = d[std::size_t(axis)];
  for (std::size_t i = std::size_t(axis) + 1; i < d.size(); ++i) b.inner *= d[i];
  b.inner *= int64_t(ir::size_bytes(s.dtype()));
  return b;
}

/// The annotation's op. As recorded (block 0) its value is its operand, so the program keeps
/// the serial shapes; the pass turns it into its block form (block 1), whose kernel reads the
/// job's rank (every rank has the same graph). Transparent to autodiff, as JAX's sharding
/// constraints: the annotation is the identity, so its cotangent (tangent) is the incoming one
/// under the same annotation, and the pass splits the backward (forward-mode) program as it
/// splits the forward one.
void register_shard_op_once() {
  static std::once_flag once;
  std::call_once(once, [] {
    CustomOp op;
    op.num_inputs = 1;
    op.pure = false;
    op.infer_shape = [](std::span<const ir::Shape> in, AttrBytes bytes) {
      auto s = attr_from_bytes<detail::ShardSpec>(bytes, detail::kShardOp);
      const ir::Shape& x = in[0];
      if (!x.is_static() || s.axis < 0 || s.axis >= int64_t(x.rank()) || s.ranks < 1 ||
          x.sizes()[std::size_t(s.axis)] % s.ranks != 0)
        fail(ErrorKind::Shape, "axis ", s.axis, " of ", ir::short_str(x), " does not split into ",
             s.ranks, " equal blocks");
      if (!s.block) return x;
      std::vector<ir::Dim> d = x.dims();
      d[std::size_t(s.axis)] = ir::Dim(x.sizes()[std::size_t(s.axis)] / s.ranks);
      return ir::Shape(std::move(d), x.dtype());
    };
    op.kernel = [](std::span<const Buffer* const> in, Buffer& out, AttrBytes bytes) {
      auto s = attr_from_bytes<detail::ShardSpec>(bytes, detail::kShardOp);
      const std::byte* from = in[0]->bytes().data();
      std::byte* to = out.bytes().data();
      if (!s.block) {
        std::memcpy(to, from, out.bytes().size());
        return;
      }
      if (s.ranks != size())
        fail(ErrorKind::Runtime, detail::kShardOp, ": split for ", s.ranks,
             " ranks, but the job has ", size());
      Blocks b = blocks_of(in[0]->shape(), s.axis);
      int64_t len = b.full / s.ranks, r = rank();
      for (int64_t o = 0; o < b.outer; ++o)
        std::memcpy(to + o * len * b.inner, from + (o * b.full + r * len) * b.inner,
                    std::size_t(len * b.inner));
    };
    op.vjp = [](std::span<const Tensor>, const Tensor&, const Tensor& d_out, AttrBytes bytes) {
      return std::vector<Tensor>{custom(std::string(detail::kShardOp), {d_out},
                                        std::vector<uint8_t>(bytes.begin(), bytes.end()))};
    };
    op.jvp = [](std::span<const Tensor>, std::span<const Tensor> t, const Tensor&,
                AttrBytes bytes) {
      return custom(std::string(detail::kShardOp), {t[0]},
                    std::vector<uint8_t>(bytes.begin(), bytes.end()));
    };
    register_op(std::string(detail::kShardOp), std::move(op));
  });
}

// At load, so that graphs holding the op parse from text (the pass's golden tests) and run in a
// program that never called shard().
[[maybe_unused]] const bool shard_op_at_load = (register_shard_op_once(), true);

} // namespace

void detail::register_shard_op() { register_shard_op_once(); }

Tensor shard(const Tensor& x, int64_t axis, Loc loc) {
  Dims d = x.sizes(loc);
  auto r = int64_t(d.size());
  if (axis < -r || axis >= r)
    fail(ErrorKind::Value, "dist::shard: axis ", axis, " is out of range for a tensor of rank ", r,
         rlx::detail::at_loc(loc));
  if (axis < 0) axis += r;
  if (d[std::size_t(axis)] % size() != 0)
    fail(ErrorKind::Shape, "dist::shard: axis ", axis, " (size ", d[std::size_t(axis)],
         ") does not split into ", size(), " equal blocks, one per rank", rlx::detail::at_loc(loc));
  detail::register_shard_op();
  return custom(std::string(detail::kShardOp), {x},
                detail::shard_bytes(detail::ShardSpec{axis, size(), 0}), loc);
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
