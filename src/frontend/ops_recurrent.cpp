// src/frontend/ops_recurrent.cpp -- rlx::nn::lstm, gru, rnn and pack_weights: one recurrent node
// (its carry form, y ++ hn [++ cn] flattened) recorded through Graph::recurrent_states, and the
// Tensors y, hn, cn as narrow views of it.
#include "ops.hpp"
#include "rlx/ir/graph.hpp"
#include "rlx/nn.hpp"

namespace rlx::nn {

namespace {

Tensor flat_concat(std::span<const LayerWeights> blocks, Tensor LayerWeights::* member,
                   const Loc& loc) {
  std::vector<Tensor> parts;
  for (const LayerWeights& b : blocks) parts.push_back(reshape(b.*member, {-1}, loc));
  return concat(parts, 0, loc);
}

RecurrentResult run(ir::OpKind kind, const Tensor& x, const RecurrentWeights& w,
                    const RecurrentOptions& o, std::optional<Tensor> h0, std::optional<Tensor> c0,
                    const Loc& loc) {
  std::vector<Tensor> ops{x, w.w_ih, w.w_hh};
  if (kind == ir::OpKind::Gru) {
    ops.push_back(w.b_ih);
    ops.push_back(w.b_hh ? *w.b_hh : zeros_like(w.b_ih, loc));
  } else {
    ops.push_back(w.b_hh ? w.b_ih + *w.b_hh : w.b_ih);
  }
  if (h0) ops.push_back(*h0);
  if (kind == ir::OpKind::Lstm && (h0.has_value() != c0.has_value()))
    fail(ErrorKind::Value, "nn::lstm: give both h0 and c0 or neither", rlx::detail::at_loc(loc));
  if (c0) ops.push_back(*c0);
  const ir::RecurrentAttrs a{o.hidden, o.layers, o.bidirectional, o.batch_first, o.relu, false};
  // One node; the views are recorded as separate Tensors reading it.
  std::optional<ir::RecurrentOutputs> parts;
  Tensor packed = apply(
      ops,
      [&](ir::Graph& g, std::span<const ir::NodeId> in) {
        parts = g.recurrent_states(kind, std::vector<ir::NodeId>(in.begin(), in.end()), a, loc);
        return parts->packed;
      },
      loc);
  const Shape& xs = x.shape();
  const int64_t d = o.bidirectional ? 2 : 1;
  const int64_t s0 = xs.dims()[0].size(), s1 = xs.dims()[1].size();
  const int64_t batch = o.batch_first ? s0 : s1;
  const int64_t y_numel = s0 * s1 * d * o.hidden, st = o.layers * d * batch * o.hidden;
  RecurrentResult r{
      reshape(narrow(packed, 0, 0, y_numel, loc), {s0, s1, d * o.hidden}, loc),
      reshape(narrow(packed, 0, y_numel, st, loc), {o.layers * d, batch, o.hidden}, loc),
      std::nullopt};
  if (kind == ir::OpKind::Lstm)
    r.c_n = reshape(narrow(packed, 0, y_numel + st, st, loc), {o.layers * d, batch, o.hidden}, loc);
  return r;
}

} // namespace

RecurrentWeights pack_weights(std::span<const LayerWeights> blocks, Loc loc) {
  if (blocks.empty())
    fail(ErrorKind::Value, "nn::pack_weights: no blocks", rlx::detail::at_loc(loc));
  return {
      flat_concat(blocks, &LayerWeights::w_ih, loc), flat_concat(blocks, &LayerWeights::w_hh, loc),
      flat_concat(blocks, &LayerWeights::b_ih, loc), flat_concat(blocks, &LayerWeights::b_hh, loc)};
}

RecurrentResult lstm(const Tensor& x, const RecurrentWeights& w, const RecurrentOptions& opts,
                     std::optional<Tensor> h0, std::optional<Tensor> c0, Loc loc) {
  if (opts.relu)
    fail(ErrorKind::Value, "nn::lstm: relu applies to rnn only", rlx::detail::at_loc(loc));
  return run(ir::OpKind::Lstm, x, w, opts, std::move(h0), std::move(c0), loc);
}

RecurrentResult gru(const Tensor& x, const RecurrentWeights& w, const RecurrentOptions& opts,
                    std::optional<Tensor> h0, Loc loc) {
  if (opts.relu)
    fail(ErrorKind::Value, "nn::gru: relu applies to rnn only", rlx::detail::at_loc(loc));
  return run(ir::OpKind::Gru, x, w, opts, std::move(h0), std::nullopt, loc);
}

RecurrentResult rnn(const Tensor& x, const RecurrentWeights& w, const RecurrentOptions& opts,
                    std::optional<Tensor> h0, Loc loc) {
  return run(ir::OpKind::Rnn, x, w, opts, std::move(h0), std::nullopt, loc);
}

} // namespace rlx::nn
