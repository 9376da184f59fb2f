// src/ops/recurrent.cpp -- lstm, gru and rnn (semantics in include/rlx/ir/ops.def, weight layout
// in recurrent.hpp): the shape rule and the decomposition autodiff goes through (one scan per
// layer and direction, the cell's step as its body).
#include "recurrent.hpp"

#include "infer_common.hpp"

#include <string>

namespace rlx::ops {

using ir::NodeId;
using ir::OpKind;

int64_t recurrent_gates(OpKind k) {
  switch (k) {
  case OpKind::Lstm:
    return 4;
  case OpKind::Gru:
    return 3;
  default:
    return 1;
  }
}

RecurrentLayout recurrent_layout(const ir::Op& op, const ir::Shape& x) {
  const auto& a = op.attrs<ir::RecurrentAttrs>();
  auto s = x.sizes();
  RecurrentLayout l;
  l.gates = recurrent_gates(op.kind());
  l.hidden = a.hidden_size;
  l.layers = a.num_layers;
  l.dirs = a.bidirectional ? 2 : 1;
  l.batch_first = a.batch_first;
  l.batch = a.batch_first ? s[0] : s[1];
  l.seq = a.batch_first ? s[1] : s[0];
  l.input = s[2];
  return l;
}

namespace {

/// Rows [start, start + rows) of a flat operand, shaped [rows / cols, cols].
NodeId block_of(Emitter& e, NodeId flat, int64_t start, int64_t rows, int64_t cols) {
  return e.reshape(e.narrow(flat, 0, start, rows * cols), {rows, cols});
}

/// The body of one step of a cell, a scan body with Inputs [carry, w, x_t]: carry is h [B, H]
/// (lstm: h ++ c, [B, 2H]), w is W_hh^T [H, G*H] (gru: with b_hh as one more row, [H+1, G*H])
/// and x_t the step's input projection W_ih x_t + b [B, G*H].
ir::Graph cell_body(OpKind kind, bool relu, int64_t B, int64_t H, int64_t G, ir::DType t) {
  const int64_t C = kind == OpKind::Lstm ? 2 * H : H;
  ir::Graph body(std::string(ir::op_name(kind)) + "_step");
  NodeId carry = body.input("carry", ir::Shape({B, C}, t));
  NodeId w = body.input("w_hh", ir::Shape({kind == OpKind::Gru ? H + 1 : H, G * H}, t));
  NodeId xt = body.input("x_t", ir::Shape({B, G * H}, t));
  Emitter e(body);
  auto gate = [&](NodeId g, int64_t k) { return e.narrow(g, 1, k * H, H); };
  auto act = [&](OpKind k, NodeId v) { return e.op(k, {v}); };
  NodeId h = kind == OpKind::Lstm ? e.narrow(carry, 1, 0, H) : carry;
  NodeId next;
  if (kind == OpKind::Lstm) {
    NodeId c = e.narrow(carry, 1, H, H);
    NodeId g = e.add(xt, e.op(OpKind::MatMul, {h, w}));
    NodeId i = act(OpKind::Sigmoid, gate(g, 0)), f = act(OpKind::Sigmoid, gate(g, 1));
    NodeId cand = act(OpKind::Tanh, gate(g, 2)), o = act(OpKind::Sigmoid, gate(g, 3));
    c = e.add(e.mul(f, c), e.mul(i, cand));
    next = e.concat({e.mul(o, act(OpKind::Tanh, c)), c}, 1);
  } else if (kind == OpKind::Gru) {
    NodeId hh = e.add(e.op(OpKind::MatMul, {h, e.narrow(w, 0, 0, H)}), e.narrow(w, 0, H, 1));
    NodeId r = act(OpKind::Sigmoid, e.add(gate(xt, 0), gate(hh, 0)));
    NodeId z = act(OpKind::Sigmoid, e.add(gate(xt, 1), gate(hh, 1)));
    NodeId nn = act(OpKind::Tanh, e.add(gate(xt, 2), e.mul(r, gate(hh, 2))));
    next = e.add(nn, e.mul(z, e.sub(h, nn))); // (1 - z) * n + z * h
  } else {
    next = act(relu ? OpKind::Relu : OpKind::Tanh, e.add(xt, e.op(OpKind::MatMul, {h, w})));
  }
  body.set_outputs({next});
  return body;
}

/// One layer and direction's run: its outputs [S, B, H] in time order and its final states.
struct DirectionRun {
  NodeId y, h, c;
};

} // namespace

NodeId decompose_recurrent(Emitter& e, const ir::Node& n, std::span<const NodeId> in) {
  const OpKind kind = n.op.kind();
  const auto& attrs = n.op.attrs<ir::RecurrentAttrs>();
  const RecurrentLayout L = recurrent_layout(n.op, e.shape(in[0]));
  const ir::DType t = e.shape(in[0]).dtype();
  const int64_t B = L.batch, S = L.seq, H = L.hidden, GH = L.gates * H;
  const std::size_t first_state = recurrent_weight_operands(kind);
  const bool has_init = in.size() > first_state;
  const bool lstm = kind == OpKind::Lstm;

  // Time-major throughout: the scans' xs and trajectories are [S, B, ...].
  NodeId x = L.batch_first ? e.transpose(in[0], {1, 0, 2}) : in[0];
  NodeId w_ih = e.reshape(in[1], {-1}), w_hh = e.reshape(in[2], {-1});
  NodeId bias = e.reshape(in[3], {-1});
  NodeId b_hh = kind == OpKind::Gru ? e.reshape(in[4], {-1}) : bias;
  NodeId zeros = e.tensor(std::vector<double>(std::size_t(B * H), 0.0), ir::Shape({B, H}, t));
  auto initial = [&](std::size_t operand, int64_t block) {
    if (!has_init) return zeros;
    return e.reshape(e.narrow(in[operand], 0, block, 1), {B, H});
  };
  const ir::Graph body = cell_body(kind, attrs.relu, B, H, L.gates, t);

  auto run = [&](NodeId layer_in, int64_t l, int64_t d) -> DirectionRun {
    const int64_t blk = L.block(l, d);
    NodeId h0 = initial(first_state, blk);
    NodeId c0 = lstm ? initial(first_state + 1, blk) : zeros;
    if (S == 0) return {e.tensor({}, ir::Shape({0, B, H}, t)), h0, c0};
    NodeId w = block_of(e, w_ih, L.w_ih_offset(l, d), GH, L.in_size(l));
    NodeId u = e.transpose(block_of(e, w_hh, L.w_hh_offset(l, d), GH, H), {1, 0});
    if (kind == OpKind::Gru)
      u = e.concat({u, e.reshape(e.narrow(b_hh, 0, L.bias_offset(l, d), GH), {1, GH})}, 0);
    // The input projections of every step in one GEMM: [S, B, G*H].
    NodeId xp = e.add(e.op(OpKind::MatMul, {layer_in, e.transpose(w, {1, 0})}),
                      e.narrow(bias, 0, L.bias_offset(l, d), GH));
    auto reverse = [&](NodeId v) {
      return d == 0 ? v : e.op(ir::Op(OpKind::Reverse, ir::ReverseAttrs{{0}}), {v});
    };
    NodeId init = lstm ? e.concat({h0, c0}, 1) : h0;
    NodeId traj = e.scan(init, {u}, {reverse(xp)}, body, S, true); // [S, B, C]
    NodeId last = e.reshape(e.narrow(traj, 0, S - 1, 1), {B, lstm ? 2 * H : H});
    NodeId y = reverse(lstm ? e.narrow(traj, 2, 0, H) : traj);
    if (!lstm) return {y, last, c0};
    return {y, e.narrow(last, 1, 0, H), e.narrow(last, 1, H, H)};
  };

  std::vector<NodeId> hn, cn;
  NodeId layer_in = x;
  for (int64_t l = 0; l < L.layers; ++l) {
    std::vector<NodeId> dir_out;
    for (int64_t d = 0; d < L.dirs; ++d) {
      DirectionRun r = run(layer_in, l, d);
      dir_out.push_back(r.y);
      hn.push_back(e.reshape(r.h, {1, B, H}));
      cn.push_back(e.reshape(r.c, {1, B, H}));
    }
    layer_in = dir_out.size() == 1 ? dir_out[0] : e.concat(dir_out, 2);
  }
  NodeId y = L.batch_first ? e.transpose(layer_in, {1, 0, 2}) : layer_in;
  if (!attrs.carry) return y;
  auto flat_states = [&](const std::vector<NodeId>& v) {
    return e.reshape(v.size() == 1 ? v[0] : e.concat(v, 0), {-1});
  };
  std::vector<NodeId> parts{e.reshape(y, {-1}), flat_states(hn)};
  if (lstm) parts.push_back(flat_states(cn));
  return e.concat(parts, 0);
}

} // namespace rlx::ops

namespace rlx::ir::detail {

namespace {

std::string packing_note(const rlx::ops::RecurrentLayout& L) {
  return " (hidden_size " + std::to_string(L.hidden) + ", num_layers " + std::to_string(L.layers) +
         ", " + (L.dirs == 2 ? "bidirectional" : "one direction") + ", input size " +
         std::to_string(L.input) + ")";
}

Shape recurrent_rule(const Op& op, std::span<const Shape> in) {
  const OpKind kind = op.kind();
  const auto& a = op.attrs<RecurrentAttrs>();
  const std::size_t nw = rlx::ops::recurrent_weight_operands(kind);
  const std::size_t ns = std::size_t(rlx::ops::recurrent_states(kind));
  if (in.size() != nw && in.size() != nw + ns) {
    if (kind == OpKind::Lstm) shape_error(op, in, "takes (x, w_ih, w_hh, bias) or also (h0, c0)");
    if (kind == OpKind::Gru) shape_error(op, in, "takes (x, w_ih, w_hh, b_ih, b_hh) or also (h0)");
    shape_error(op, in, "takes (x, w_ih, w_hh, bias) or also (h0)");
  }
  const Shape& x = in[0];
  if (x.dtype() != DType::F32 && x.dtype() != DType::F64)
    fail(ErrorKind::Type, op.name(), ": needs f32 or f64 operands, got ", shapes_str(in));
  for (const Shape& s : in)
    if (s.dtype() != x.dtype())
      fail(ErrorKind::Type, op.name(), ": operands must share x's dtype, got ", shapes_str(in));
  if (a.hidden_size < 1 || a.num_layers < 1)
    shape_error(op, in, "needs hidden_size >= 1 and num_layers >= 1, got ", a.hidden_size, " and ",
                a.num_layers);
  if (a.relu && kind != OpKind::Rnn) shape_error(op, in, "relu applies to rnn only");
  if (x.rank() != 3)
    shape_error(op, in, "x must be ",
                a.batch_first ? "[batch, seq, input]" : "[seq, batch, input]");
  rlx::ops::RecurrentLayout L;
  L.gates = rlx::ops::recurrent_gates(kind);
  L.hidden = a.hidden_size;
  L.layers = a.num_layers;
  L.dirs = a.bidirectional ? 2 : 1;
  L.input = static_size(x.dims()[2]);
  auto check_numel = [&](std::size_t i, const char* what, int64_t want) {
    int64_t got = 1;
    for (const Dim& d : in[i].dims()) got *= static_size(d);
    if (got != want)
      shape_error(op, in, what, " holds ", got, " elements; the packed layout needs ", want,
                  packing_note(L));
  };
  check_numel(1, "w_ih", L.w_ih_total());
  check_numel(2, "w_hh", L.w_hh_total());
  check_numel(3, kind == OpKind::Gru ? "b_ih" : "bias", L.bias_total());
  if (kind == OpKind::Gru) check_numel(4, "b_hh", L.bias_total());
  const Dim& batch = a.batch_first ? x.dims()[0] : x.dims()[1];
  for (std::size_t i = nw; i < in.size(); ++i) {
    const Shape& h = in[i];
    const char* what = i == nw ? "h0" : "c0";
    bool ok = h.rank() == 3;
    if (ok) {
      const Dim &d0 = h.dims()[0], &d1 = h.dims()[1], &d2 = h.dims()[2];
      ok = !(d0.is_static() && d0.size() != L.layers * L.dirs) &&
           !(d2.is_static() && d2.size() != L.hidden) &&
           !(d1.is_static() && batch.is_static() && d1.size() != batch.size());
    }
    if (!ok)
      shape_error(op, in, what, " must be [num_layers * directions, batch, hidden] = [",
                  L.layers * L.dirs, ", ", batch.is_static() ? std::to_string(batch.size()) : "?",
                  ", ", L.hidden, "]");
  }
  if (!a.carry) return Shape({x.dims()[0], x.dims()[1], Dim(L.dirs * L.hidden)}, x.dtype());
  L.batch = static_size(batch);
  L.seq = static_size(a.batch_first ? x.dims()[1] : x.dims()[0]);
  int64_t total = L.y_numel() + int64_t(ns) * L.state_numel();
  return Shape({Dim(total)}, x.dtype());
}

} // namespace

std::optional<Shape> infer_recurrent(const Op& op, std::span<const Shape> in) {
  switch (op.kind()) {
  case OpKind::Lstm:
  case OpKind::Gru:
  case OpKind::Rnn:
    return recurrent_rule(op, in);
  default:
    return std::nullopt;
  }
}

} // namespace rlx::ir::detail
