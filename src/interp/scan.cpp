// src/interp/scan.cpp -- kernels of scan and its backward companions (the specification the JIT
// is checked against): the loops over time on raw pointers, with the body run by a BodyRunner
// (run_leaves through buffered() here; the JIT passes its compiled bodies).
#include "scan_loop.hpp"

#include "kernels.hpp"
#include "ops/control.hpp"

#include <algorithm>
#include <cstring>

namespace rlx::interp::detail {

namespace {

/// Bytes of one row of a [rows, *row] buffer.
std::size_t row_bytes(const Buffer& b) {
  int64_t rows = b.shape().sizes().at(0);
  return rows == 0 ? 0 : b.bytes().size() / std::size_t(rows);
}

const std::byte* row_at(const Buffer& b, int64_t t) {
  return b.bytes().data() + std::size_t(t) * row_bytes(b);
}

/// acc[i] += src[i] (src holds n elements of dtype t).
void accumulate(std::vector<double>& acc, const std::byte* src, const Buffer& like) {
  const std::size_t n = acc.size();
  switch (like.dtype()) {
  case ir::DType::F32: {
    const auto* p = reinterpret_cast<const float*>(src);
    for (std::size_t i = 0; i < n; ++i) acc[i] += double(p[i]);
    break;
  }
  case ir::DType::F64: {
    const auto* p = reinterpret_cast<const double*>(src);
    for (std::size_t i = 0; i < n; ++i) acc[i] += p[i];
    break;
  }
  default: { // the other floats, element by element through a Buffer of `like`'s shape
    Buffer tmp = Buffer::uninitialized(like.shape());
    std::memcpy(tmp.bytes().data(), src, tmp.bytes().size());
    for (std::size_t i = 0; i < n; ++i) acc[i] += tmp.get_f64(int64_t(i));
  }
  }
}

/// g[i] += src[i], both of g's dtype.
void add_into(Buffer& g, const std::byte* src) {
  const std::size_t n = std::size_t(g.numel());
  switch (g.dtype()) {
  case ir::DType::F32: {
    auto* d = reinterpret_cast<float*>(g.bytes().data());
    const auto* p = reinterpret_cast<const float*>(src);
    for (std::size_t i = 0; i < n; ++i) d[i] += p[i];
    break;
  }
  case ir::DType::F64: {
    auto* d = reinterpret_cast<double*>(g.bytes().data());
    const auto* p = reinterpret_cast<const double*>(src);
    for (std::size_t i = 0; i < n; ++i) d[i] += p[i];
    break;
  }
  default: {
    std::vector<double> acc(n);
    for (std::size_t i = 0; i < n; ++i) acc[i] = g.get_f64(int64_t(i));
    accumulate(acc, src, g);
    for (std::size_t i = 0; i < n; ++i) g.set_f64(int64_t(i), acc[i]);
  }
  }
}

/// The Inputs of `body` in id order.
std::vector<ir::NodeId> inputs_of(const ir::Graph& body) {
  std::vector<ir::NodeId> out;
  for (const ir::Node& n : body.nodes())
    if (n.op.kind() == ir::OpKind::Input) out.push_back(n.id);
  return out;
}

/// Where a forward body's leaves are at step t: [carry, bcast..., row t of each xs].
struct ForwardLeaves {
  std::vector<const std::byte*> ptr;
  std::size_t first_x;
  ForwardLeaves(Operands bcasts, Operands xs) : ptr(1 + bcasts.size() + xs.size()) {
    for (std::size_t i = 0; i < bcasts.size(); ++i) ptr[1 + i] = bcasts[i]->bytes().data();
    first_x = 1 + bcasts.size();
  }
  const std::byte* const* at(const std::byte* carry, Operands xs, int64_t t) {
    ptr[0] = carry;
    for (std::size_t i = 0; i < xs.size(); ++i) ptr[first_x + i] = row_at(*xs[i], t);
    return ptr.data();
  }
};

} // namespace

RawBody buffered(const ir::Graph& body, BufferRunner run) {
  std::vector<ir::Shape> leaves, outs;
  for (ir::NodeId id : inputs_of(body)) leaves.push_back(body.shape(id));
  for (ir::NodeId id : body.outputs) outs.push_back(body.shape(id));
  return [&body, run = std::move(run), leaves = std::move(leaves),
          outs = std::move(outs)](const std::byte* const* in, std::byte* const* out) {
    std::vector<Buffer> bufs;
    std::vector<const Buffer*> ptrs;
    bufs.reserve(leaves.size());
    for (std::size_t i = 0; i < leaves.size(); ++i) {
      bufs.push_back(Buffer::uninitialized(leaves[i]));
      std::memcpy(bufs.back().bytes().data(), in[i], bufs.back().bytes().size());
      ptrs.push_back(&bufs.back());
    }
    std::vector<Buffer> res = run(body, ptrs);
    RLX_CHECK(res.size() == outs.size(), "scan: body @", body.name, " gave ", res.size(),
              " outputs for ", outs.size());
    for (std::size_t j = 0; j < res.size(); ++j)
      std::memcpy(out[j], res[j].bytes().data(), res[j].bytes().size());
  };
}

Buffer run_scan_backward(const ir::Node& n, Operands in, bool want_xs, const BodyRunner& run) {
  const auto& a = n.op.attrs<ir::ScanBackwardAttrs>();
  const Buffer& init = *in[0];
  const Buffer& saved = *in[1];
  const Buffer& upstream = *in[2];
  Operands bcasts = in.subspan(3, std::size_t(a.num_bcast));
  Operands xs = in.subspan(std::size_t(3 + a.num_bcast));
  const ir::Shape& carry_shape = init.shape();
  const std::size_t cb = init.bytes().size();
  const ir::Graph& vjp = a.body_vjp.get();
  std::optional<ir::NodeId> d_out = vjp.input_id("d_output");
  RLX_CHECK(d_out.has_value(), "scan_backward: body_vjp without d_output");
  const int64_t rows = ir::detail::scan_saved_rows(a.length, a.num_checkpoints);
  const bool checkpointed = rows < a.length;
  const std::size_t nb = bcasts.size(), nx = xs.size();
  RawBody vjp_run = run(vjp);
  RawBody fwd_run = checkpointed ? run(a.forward_body->get()) : RawBody();

  // The carry entering step t: init, a saved row, or a carry recomputed in its segment (into
  // seg, rows [seg_begin + 1, seg_end) of it; the segment's first carry is where it was saved).
  int64_t max_seg = 1;
  for (int64_t j = 0; checkpointed && j < rows; ++j)
    max_seg = std::max(
        max_seg, ir::detail::scan_segment_end(j, a.length, a.num_checkpoints) -
                     (j ? ir::detail::scan_segment_end(j - 1, a.length, a.num_checkpoints) : 0));
  Buffer seg;
  if (checkpointed) {
    std::vector<int64_t> dims{max_seg};
    for (int64_t d : carry_shape.sizes()) dims.push_back(d);
    seg = Buffer::uninitialized(ir::Shape::of(dims, carry_shape.dtype()));
  }
  ForwardLeaves fwd_leaves(bcasts, xs);
  const std::byte* seg_start = nullptr;
  int64_t seg_begin = 0, seg_end = 0;
  auto seg_row = [&](int64_t s) -> const std::byte* {
    return s == seg_begin ? seg_start : seg.bytes().data() + std::size_t(s - seg_begin - 1) * cb;
  };
  auto carry_in = [&](int64_t t) -> const std::byte* {
    if (t == 0) return init.bytes().data();
    if (!checkpointed) return row_at(saved, t - 1);
    if (t < seg_begin || t >= seg_end) {
      int64_t j = 0; // the segment holding step t
      while (ir::detail::scan_segment_end(j, a.length, a.num_checkpoints) <= t) ++j;
      seg_begin = j == 0 ? 0 : ir::detail::scan_segment_end(j - 1, a.length, a.num_checkpoints);
      seg_end = ir::detail::scan_segment_end(j, a.length, a.num_checkpoints);
      seg_start = j == 0 ? init.bytes().data() : row_at(saved, j - 1);
      for (int64_t s = seg_begin; s + 1 < seg_end; ++s) {
        std::byte* out = seg.bytes().data() + std::size_t(s - seg_begin) * cb;
        fwd_run(fwd_leaves.at(seg_row(s), xs, s), &out);
      }
    }
    return seg_row(t);
  };

  // body_vjp's leaves in its Input order: carry, bcasts, x_t rows, d_output anywhere.
  std::vector<ir::NodeId> vjp_inputs = inputs_of(vjp);
  std::vector<const std::byte*> leaves(vjp_inputs.size());
  std::size_t d_slot = 0, carry_slot = 0;
  std::vector<std::size_t> rest_slot; // bcast, then xs
  for (std::size_t k = 0, next = 0; k < vjp_inputs.size(); ++k) {
    if (vjp_inputs[k] == *d_out)
      d_slot = k;
    else if (next++ == 0)
      carry_slot = k;
    else
      rest_slot.push_back(k);
  }
  RLX_CHECK(rest_slot.size() == nb + nx, "scan_backward: body_vjp's Inputs do not fit");
  for (std::size_t i = 0; i < nb; ++i) leaves[rest_slot[i]] = bcasts[i]->bytes().data();

  // Outputs: d carry into one of a pair, the wanted cotangent where it goes, the rest scratch.
  Buffer g_pair[2] = {Buffer::uninitialized(carry_shape), Buffer::uninitialized(carry_shape)};
  std::vector<Buffer> scratch;
  scratch.reserve(nb + nx);
  std::vector<std::byte*> outs(1 + nb + nx);
  for (std::size_t i = 0; i < nb + nx; ++i) {
    scratch.push_back(Buffer::uninitialized(vjp.shape(vjp.outputs.at(1 + i))));
    outs[1 + i] = scratch.back().bytes().data();
  }
  const bool want_bcast = want_xs && a.xs_idx < a.num_bcast;
  const std::size_t want = std::size_t(a.xs_idx);
  Buffer dxs;
  std::vector<double> acc;
  if (want_xs && !want_bcast) dxs = Buffer::uninitialized(in[3 + want]->shape());
  if (want_bcast) acc.assign(std::size_t(in[3 + want]->numel()), 0.0);

  int cur = 0; // g_pair[cur] holds d carry (after the first step, or with a trajectory)
  const std::byte* g = upstream.bytes().data();
  if (a.save_trajectory) {
    std::memset(g_pair[0].bytes().data(), 0, cb);
    g = g_pair[0].bytes().data();
  }
  for (int64_t t = a.length; t-- > 0;) {
    if (a.save_trajectory) add_into(g_pair[cur], row_at(upstream, t));
    leaves[carry_slot] = carry_in(t);
    leaves[d_slot] = g;
    for (std::size_t i = 0; i < nx; ++i) leaves[rest_slot[nb + i]] = row_at(*xs[i], t);
    int next = g == g_pair[0].bytes().data() ? 1 : 0;
    outs[0] = g_pair[next].bytes().data();
    if (want_xs && !want_bcast)
      outs[1 + want] = dxs.bytes().data() + std::size_t(t) * row_bytes(dxs);
    vjp_run(leaves.data(), outs.data());
    if (want_bcast) accumulate(acc, outs[1 + want], scratch[want]);
    cur = next;
    g = g_pair[cur].bytes().data();
  }
  if (!want_xs) return std::move(g_pair[cur]);
  if (!want_bcast) return dxs;
  return Buffer::from_f64(in[3 + want]->shape(), acc);
}

Buffer run_scan(const ir::Node& n, Operands in, const BodyRunner& run) {
  const auto& a = n.op.attrs<ir::ScanAttrs>();
  Operands bcasts = in.subspan(1, std::size_t(a.num_bcast));
  Operands xs = in.subspan(std::size_t(1 + a.num_bcast));
  const Buffer& init = *in[0];
  const std::size_t cb = init.bytes().size();
  RawBody body = run(a.body.get());
  Buffer out = Buffer::uninitialized(n.shape);
  // Carries not kept in `out` go to one of a pair (never the one the step reads).
  Buffer pair[2];
  ForwardLeaves leaves(bcasts, xs);
  const std::byte* carry = init.bytes().data();
  int64_t row = 0;
  for (int64_t t = 0; t < a.length; ++t) {
    std::byte* dest = nullptr;
    if (a.save_trajectory) {
      if (t + 1 == ir::detail::scan_segment_end(row, a.length, a.num_checkpoints))
        dest = out.bytes().data() + std::size_t(row++) * cb;
    } else if (t + 1 == a.length) {
      dest = out.bytes().data();
    }
    if (!dest) {
      int k = pair[0].numel() && carry == pair[0].bytes().data() ? 1 : 0;
      if (!pair[k].numel()) pair[k] = Buffer::uninitialized(init.shape());
      dest = pair[k].bytes().data();
    }
    body(leaves.at(carry, xs, t), &dest);
    carry = dest;
  }
  return out;
}

namespace {
RawBody interpret(const ir::Graph& body) { return buffered(body, run_leaves); }
} // namespace

RLX_KERNEL(Scan) { return run_scan(n, in, interpret); }

RLX_KERNEL(ScanBackward) { return run_scan_backward(n, in, false, interpret); }

RLX_KERNEL(ScanBackwardXs) { return run_scan_backward(n, in, true, interpret); }

} // namespace rlx::interp::detail
