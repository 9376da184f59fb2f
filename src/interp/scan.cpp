// src/interp/scan.cpp -- kernels of scan and its backward companions (the specification the JIT
// is checked against): the loops over time, with the body run by a BodyRunner (run_leaves here;
// the JIT passes its compiled bodies).
#include "scan_loop.hpp"

#include "kernels.hpp"
#include "ops/control.hpp"

#include <cstring>

namespace rlx::interp::detail {

namespace {

/// Bytes of one row of a [rows, *row] buffer.
std::size_t row_bytes(const Buffer& b) {
  int64_t rows = b.shape().sizes().at(0);
  return rows == 0 ? 0 : b.bytes().size() / std::size_t(rows);
}

/// Row t of a [rows, *row] buffer as a buffer of shape `row`.
Buffer row_of(const Buffer& b, int64_t t, const ir::Shape& row) {
  Buffer out = Buffer::uninitialized(row);
  std::size_t n = row_bytes(b);
  if (n) std::memcpy(out.bytes().data(), b.bytes().data() + std::size_t(t) * n, n);
  return out;
}

void set_row(Buffer& b, int64_t t, const Buffer& row) {
  std::size_t n = row_bytes(b);
  RLX_CHECK(row.bytes().size() == n, "scan: a row of ", n, " bytes, got ", row.bytes().size());
  if (n) std::memcpy(b.bytes().data() + std::size_t(t) * n, row.bytes().data(), n);
}

ir::Shape drop_leading(const ir::Shape& s) {
  return ir::Shape(std::vector<ir::Dim>(s.dims().begin() + 1, s.dims().end()), s.dtype());
}

/// One step of a forward body: carry, bcasts and the step's x slices in, the next carry out.
Buffer step(const BodyRunner& run, const ir::Graph& body, const Buffer& carry,
            std::span<const Buffer* const> bcasts, std::span<const Buffer> x_t) {
  std::vector<const Buffer*> leaves{&carry};
  leaves.insert(leaves.end(), bcasts.begin(), bcasts.end());
  for (const Buffer& x : x_t) leaves.push_back(&x);
  return std::move(run(body, leaves).at(0));
}

/// The per-step slices of xs at step t.
std::vector<Buffer> slices(Operands xs, int64_t t) {
  std::vector<Buffer> out;
  for (const Buffer* x : xs) out.push_back(row_of(*x, t, drop_leading(x->shape())));
  return out;
}

} // namespace

Buffer run_scan_backward(const ir::Node& n, Operands in, bool want_xs, const BodyRunner& run) {
  const auto& a = n.op.attrs<ir::ScanBackwardAttrs>();
  const Buffer& init = *in[0];
  const Buffer& saved = *in[1];
  const Buffer& upstream = *in[2];
  Operands xs = in.subspan(3);
  const ir::Shape& carry_shape = init.shape();
  const ir::Graph& vjp = a.body_vjp.get();
  std::optional<ir::NodeId> d_out = vjp.input_id("d_output");
  RLX_CHECK(d_out.has_value(), "scan_backward: body_vjp without d_output");
  int64_t rows = ir::detail::scan_saved_rows(a.length, a.num_checkpoints);
  bool checkpointed = rows < a.length;

  // The carry entering step t: init, a saved row, or a carry recomputed in its segment.
  std::vector<Buffer> segment; // carries entering steps [seg_begin, seg_end)
  int64_t seg_begin = 0, seg_end = 0;
  auto carry_in = [&](int64_t t) -> Buffer {
    if (t == 0) return init;
    if (!checkpointed) return row_of(saved, t - 1, carry_shape);
    if (t < seg_begin || t >= seg_end) {
      int64_t j = 0; // the segment holding step t
      while (ir::detail::scan_segment_end(j, a.length, a.num_checkpoints) <= t) ++j;
      seg_begin = j == 0 ? 0 : ir::detail::scan_segment_end(j - 1, a.length, a.num_checkpoints);
      seg_end = ir::detail::scan_segment_end(j, a.length, a.num_checkpoints);
      segment.clear();
      segment.push_back(j == 0 ? init : row_of(saved, j - 1, carry_shape));
      for (int64_t s = seg_begin; s + 1 < seg_end; ++s)
        segment.push_back(step(run, a.forward_body->get(), segment.back(), {}, slices(xs, s)));
    }
    return segment[std::size_t(t - seg_begin)];
  };

  Buffer g = a.save_trajectory ? Buffer(carry_shape) : upstream;
  Buffer dxs;
  if (want_xs) dxs = Buffer(xs[std::size_t(a.xs_idx)]->shape());
  for (int64_t t = a.length; t-- > 0;) {
    if (a.save_trajectory) {
      Buffer up = row_of(upstream, t, carry_shape);
      for (int64_t i = 0; i < g.numel(); ++i) g.set_f64(i, g.get_f64(i) + up.get_f64(i));
    }
    Buffer c = carry_in(t);
    std::vector<Buffer> x_t = slices(xs, t);
    std::vector<const Buffer*> leaves;
    std::size_t next = 0;
    for (const ir::Node& node : vjp.nodes()) {
      if (node.op.kind() != ir::OpKind::Input) continue;
      if (node.id == *d_out)
        leaves.push_back(&g);
      else if (next++ == 0)
        leaves.push_back(&c);
      else
        leaves.push_back(&x_t[next - 2]);
    }
    std::vector<Buffer> outs = run(vjp, leaves);
    if (want_xs) set_row(dxs, t, outs.at(std::size_t(1 + a.xs_idx)));
    g = std::move(outs.at(0));
  }
  return want_xs ? dxs : g;
}

Buffer run_scan(const ir::Node& n, Operands in, const BodyRunner& run) {
  const auto& a = n.op.attrs<ir::ScanAttrs>();
  const ir::Graph& body = a.body.get();
  Operands bcasts = in.subspan(1, std::size_t(a.num_bcast));
  Operands xs = in.subspan(std::size_t(1 + a.num_bcast));
  Buffer carry = *in[0];
  Buffer out;
  if (a.save_trajectory) out = Buffer::uninitialized(n.shape);
  int64_t row = 0;
  for (int64_t t = 0; t < a.length; ++t) {
    carry = step(run, body, carry, bcasts, slices(xs, t));
    if (a.save_trajectory &&
        t + 1 == ir::detail::scan_segment_end(row, a.length, a.num_checkpoints))
      set_row(out, row++, carry);
  }
  return a.save_trajectory ? out : carry;
}

namespace {
std::vector<Buffer> interpret(const ir::Graph& body, Operands leaves) {
  return run_leaves(body, leaves);
}
} // namespace

RLX_KERNEL(Scan) { return run_scan(n, in, interpret); }

RLX_KERNEL(ScanBackward) { return run_scan_backward(n, in, false, interpret); }

RLX_KERNEL(ScanBackwardXs) { return run_scan_backward(n, in, true, interpret); }

} // namespace rlx::interp::detail
