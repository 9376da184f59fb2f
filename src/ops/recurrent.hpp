// src/ops/recurrent.hpp -- the packed-weight layout of lstm, gru and rnn (ops.def "Recurrent"),
// shared by the shape rule, the decomposition, the interpreter's kernel and the JIT step.
//
// Every layer l and direction d (0 forward, 1 reverse) owns, in (l, d) order, PyTorch's
// weight_ih_l{l}[_reverse] [G*H, in_l] (in_0 = I, in_l = D*H after), weight_hh [G*H, H] and
// bias [G*H]; each operand is the flat concatenation of those blocks, row-major. G is 4 (lstm:
// i, f, g, o), 3 (gru: r, z, n) or 1 (rnn). lstm and rnn take one bias (b_ih + b_hh), gru two.
#pragma once

#include "emitter.hpp"
#include "rlx/ir/op.hpp"

#include <cstdint>
#include <span>

namespace rlx::ops {

struct RecurrentLayout {
  int64_t gates = 1, hidden = 1, layers = 1, dirs = 1, input = 1, batch = 1, seq = 1;
  bool batch_first = true;

  int64_t in_size(int64_t l) const { return l == 0 ? input : dirs * hidden; }
  int64_t block(int64_t l, int64_t d) const { return l * dirs + d; }
  int64_t w_ih_offset(int64_t l, int64_t d) const {
    int64_t off = 0;
    for (int64_t k = 0; k < l; ++k) off += dirs * gates * hidden * in_size(k);
    return off + d * gates * hidden * in_size(l);
  }
  int64_t w_hh_offset(int64_t l, int64_t d) const { return block(l, d) * gates * hidden * hidden; }
  int64_t bias_offset(int64_t l, int64_t d) const { return block(l, d) * gates * hidden; }
  int64_t w_ih_total() const { return w_ih_offset(layers, 0); }
  int64_t w_hh_total() const { return layers * dirs * gates * hidden * hidden; }
  int64_t bias_total() const { return layers * dirs * gates * hidden; }
  /// Elements of y ([B, S, D*H] or [S, B, D*H]) and of one state [L*D, B, H].
  int64_t y_numel() const { return batch * seq * dirs * hidden; }
  int64_t state_numel() const { return layers * dirs * batch * hidden; }
};

/// Gates per cell of a recurrent kind (4, 3, 1).
int64_t recurrent_gates(ir::OpKind k);
/// States a cell carries: 2 for lstm (h, c), 1 for gru and rnn.
inline int64_t recurrent_states(ir::OpKind k) { return k == ir::OpKind::Lstm ? 2 : 1; }
/// Operands before the initial states: x, w_ih, w_hh and one bias (two for gru).
inline std::size_t recurrent_weight_operands(ir::OpKind k) { return k == ir::OpKind::Gru ? 5 : 4; }
/// The layout of a node whose operands have static shapes x [B, S, I] (or [S, B, I]).
RecurrentLayout recurrent_layout(const ir::Op& op, const ir::Shape& x);

/// The decomposition of a recurrent node: per layer and direction one GEMM for the input
/// projections of all steps, then one scan whose body is a step (a matmul with W_hh^T, a bcast
/// operand, and the gate arithmetic; lstm carries h ++ c); the outputs are its trajectory.
ir::NodeId decompose_recurrent(Emitter& e, const ir::Node& n, std::span<const ir::NodeId> in);

} // namespace rlx::ops
