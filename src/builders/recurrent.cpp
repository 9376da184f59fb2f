// src/builders/recurrent.cpp -- the recurrent-cell builders: lstm, lstm_carry, gru, rnn (RLX's
// names and argument order) and recurrent_states, which returns y, hn and cn as narrow views of
// the one node that computes them (weight layout in src/ops/recurrent.hpp).
#include "rlx/ir/graph.hpp"

#include "rlx/ir/infer.hpp"

namespace rlx::ir {

namespace {

RecurrentAttrs attrs_of(int64_t hidden, int64_t layers, bool bidirectional, bool relu) {
  return RecurrentAttrs{hidden, layers, bidirectional, /*batch_first=*/true, relu, /*carry=*/false};
}

} // namespace

NodeId Graph::lstm(NodeId x, NodeId w_ih, NodeId w_hh, NodeId bias, int64_t hidden_size,
                   int64_t num_layers, bool bidirectional, Shape shape, Loc loc) {
  return build(Op(OpKind::Lstm, attrs_of(hidden_size, num_layers, bidirectional, false)),
               {x, w_ih, w_hh, bias}, shape, loc);
}

NodeId Graph::lstm_carry(NodeId x, NodeId w_ih, NodeId w_hh, NodeId bias, NodeId h0, NodeId c0,
                         int64_t hidden_size, int64_t num_layers, bool bidirectional, Shape shape,
                         Loc loc) {
  return transaction([&] {
    RecurrentOutputs r =
        recurrent_states(OpKind::Lstm, {x, w_ih, w_hh, bias, h0, c0},
                         attrs_of(hidden_size, num_layers, bidirectional, false), loc);
    if (!shapes_compatible(this->shape(r.y), shape))
      fail(ErrorKind::Shape, "lstm_carry: declared output ", short_str(shape), " does not match ",
           short_str(this->shape(r.y)), " inferred from the operands", rlx::detail::at_loc(loc));
    return r.y;
  });
}

NodeId Graph::gru(NodeId x, NodeId w_ih, NodeId w_hh, NodeId b_ih, NodeId b_hh,
                  std::optional<NodeId> h0, int64_t hidden_size, int64_t num_layers,
                  bool bidirectional, Shape shape, Loc loc) {
  std::vector<NodeId> ins{x, w_ih, w_hh, b_ih, b_hh};
  if (h0) ins.push_back(*h0);
  return build(Op(OpKind::Gru, attrs_of(hidden_size, num_layers, bidirectional, false)),
               std::move(ins), shape, loc);
}

NodeId Graph::rnn(NodeId x, NodeId w_ih, NodeId w_hh, NodeId bias, std::optional<NodeId> h0,
                  int64_t hidden_size, int64_t num_layers, bool bidirectional, bool relu,
                  Shape shape, Loc loc) {
  std::vector<NodeId> ins{x, w_ih, w_hh, bias};
  if (h0) ins.push_back(*h0);
  return build(Op(OpKind::Rnn, attrs_of(hidden_size, num_layers, bidirectional, relu)),
               std::move(ins), shape, loc);
}

RecurrentOutputs Graph::recurrent_states(OpKind kind, std::vector<NodeId> operands,
                                         RecurrentAttrs attrs, Loc loc) {
  if (op_family(kind) != Family::Recurrent)
    fail(ErrorKind::Value, "recurrent_states: ", op_name(kind), " is not lstm, gru or rnn",
         rlx::detail::at_loc(loc));
  return transaction([&] {
    attrs.carry = true;
    const Shape x = shape(operands.at(0));
    NodeId packed = build_inferred(Op(kind, attrs), std::move(operands), loc);
    const auto xs = x.sizes();
    const int64_t batch = attrs.batch_first ? xs[0] : xs[1];
    const int64_t dirs = attrs.bidirectional ? 2 : 1, h = attrs.hidden_size;
    const int64_t y_numel = xs[0] * xs[1] * dirs * h;
    const int64_t state_numel = attrs.num_layers * dirs * batch * h;
    auto view = [&](int64_t start, int64_t len, std::vector<int64_t> dims) {
      return reshape_(narrow_(packed, 0, start, len, loc), std::move(dims), loc);
    };
    RecurrentOutputs r;
    r.packed = packed;
    r.y = view(0, y_numel, {xs[0], xs[1], dirs * h});
    r.hn = view(y_numel, state_numel, {attrs.num_layers * dirs, batch, h});
    if (kind == OpKind::Lstm)
      r.cn = view(y_numel + state_numel, state_numel, {attrs.num_layers * dirs, batch, h});
    return r;
  });
}

} // namespace rlx::ir
