// src/interp/movement.cpp -- movement and index kernels: reshape, transpose, narrow, slice, concat,
// expand, reverse, pad, gather. Elements are copied as raw bytes, so every dtype works.
// transpose/narrow/slice/expand/reverse are one strided copy: each output axis reads the input
// with a (possibly zero or negative) stride from a base offset.
#include "index_operand.hpp"
#include "kernels.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace rlx::interp::detail {

using ir::DType;
using ir::OpKind;

namespace {

/// A view of the input: out[c] = in[base + sum_a c[a] * strides[a]] over the output's sizes.
struct View {
  int64_t base = 0;
  std::vector<int64_t> strides;
};

/// `len` elements of `es` bytes from src, `step` elements apart, to dst (one after the other).
void copy_run(std::byte* dst, const std::byte* src, int64_t len, int64_t step, std::size_t es) {
  if (step == 1) {
    std::memcpy(dst, src, std::size_t(len) * es);
    return;
  }
  // Typed loops for the common element sizes: a memcpy call per element is most of a transpose.
  auto strided = [&]<class T>(T) {
    auto* d = reinterpret_cast<T*>(dst);
    for (int64_t i = 0; i < len; ++i)
      std::memcpy(d + i, src + std::ptrdiff_t(i * step) * std::ptrdiff_t(sizeof(T)), sizeof(T));
  };
  if (es == 4)
    strided(uint32_t{});
  else if (es == 8)
    strided(uint64_t{});
  else if (es == 2)
    strided(uint16_t{});
  else if (es == 1)
    strided(uint8_t{});
  else
    for (int64_t i = 0; i < len; ++i)
      std::memcpy(dst + std::size_t(i) * es, src + std::ptrdiff_t(i * step) * std::ptrdiff_t(es),
                  es);
}

/// The node's output read through the view, one run along the last axis at a time (an odometer
/// over the other axes).
Buffer copy_view(const ir::Node& n, const Buffer& in, const View& v) {
  Buffer out = Buffer::uninitialized(n.shape);
  if (out.numel() == 0) return out;
  std::vector<int64_t> sizes = out.shape().sizes();
  std::size_t es = ir::size_bytes(in.dtype());
  const std::byte* src = in.bytes().data();
  std::byte* dst = out.bytes().data();
  const std::size_t outer = sizes.empty() ? 0 : sizes.size() - 1;
  const int64_t len = sizes.empty() ? 1 : sizes.back();
  const int64_t step = sizes.empty() ? 0 : v.strides.back();
  std::vector<int64_t> coord(outer, 0);
  int64_t off = v.base;
  for (int64_t run = 0, runs = out.numel() / len; run < runs; ++run) {
    int64_t last = off + (len - 1) * step;
    RLX_CHECK(std::min(off, last) >= 0 && std::max(off, last) < in.numel(),
              "movement view reads elements ", off, " to ", last, " of ",
              ir::short_str(in.shape()));
    copy_run(dst + std::size_t(run * len) * es, src + std::size_t(off) * es, len, step, es);
    for (std::size_t a = outer; a-- > 0;) {
      if (++coord[a] < sizes[a]) {
        off += v.strides[a];
        break;
      }
      off -= (sizes[a] - 1) * v.strides[a];
      coord[a] = 0;
    }
  }
  return out;
}

/// The identity view of x (its own row-major strides).
View identity(const Buffer& x) {
  std::vector<int64_t> sizes = x.shape().sizes();
  return View{0, strides_of(sizes)};
}

View transpose_view(const ir::Node& n, const Buffer& x) {
  View in = identity(x);
  const ir::Ints& perm = n.op.attrs<ir::TransposeAttrs>().perm;
  View v;
  for (int64_t p : perm) v.strides.push_back(in.strides[std::size_t(norm_axis(p, perm.size()))]);
  return v;
}

View expand_view(const ir::Node& n, const Buffer& x) {
  std::vector<int64_t> in_sizes = x.shape().sizes();
  View in = identity(x);
  std::size_t off = n.shape.rank() - in_sizes.size();
  View v;
  v.strides.assign(n.shape.rank(), 0);
  for (std::size_t a = 0; a < in_sizes.size(); ++a)
    if (in_sizes[a] != 1) v.strides[off + a] = in.strides[a];
  return v;
}

View reverse_view(const ir::Node& n, const Buffer& x) {
  std::vector<int64_t> sizes = x.shape().sizes();
  View v = identity(x);
  std::vector<bool> flip(sizes.size(), false);
  for (int64_t a : n.op.attrs<ir::ReverseAttrs>().axes)
    flip[std::size_t(norm_axis(a, sizes.size()))] = true; // listing an axis twice flips it once
  for (std::size_t a = 0; a < sizes.size(); ++a) {
    if (!flip[a] || sizes[a] == 0) continue;
    v.base += (sizes[a] - 1) * v.strides[a];
    v.strides[a] = -v.strides[a];
  }
  return v;
}

/// narrow is slice with step 1.
View slice_view(const Buffer& x, int64_t axis, int64_t start, int64_t step) {
  View v = identity(x);
  std::size_t a = std::size_t(norm_axis(axis, x.shape().rank()));
  v.base = start * v.strides[a];
  v.strides[a] *= step;
  return v;
}

Buffer concat(const ir::Node& n, Operands in) {
  Buffer out(n.shape);
  int64_t axis = norm_axis(n.op.attrs<ir::ConcatAttrs>().axis, n.shape.rank());
  AxisSplit os = split_at(n.shape, axis);
  std::size_t es = ir::size_bytes(out.dtype());
  int64_t at = 0; // offset along the axis of the current operand
  for (const Buffer* b : in) {
    AxisSplit s = split_at(b->shape(), axis);
    std::size_t chunk = std::size_t(s.len * s.inner) * es;
    for (int64_t o = 0; o < s.outer && chunk != 0; ++o)
      std::memcpy(out.bytes().data() + std::size_t((o * os.len + at) * os.inner) * es,
                  b->bytes().data() + std::size_t(o) * chunk, chunk);
    at += s.len;
  }
  return out;
}

/// Where output coordinate c (before padding is removed) reads on an axis of size len; -1 for
/// the constant fill.
int64_t pad_source(ir::PadMode mode, int64_t c, int64_t len) {
  if (c >= 0 && c < len) return c;
  switch (mode) {
  case ir::PadMode::Edge:
    return c < 0 ? 0 : len - 1;
  case ir::PadMode::Reflect: {
    if (len == 1) return 0;
    int64_t period = 2 * (len - 1); // numpy 'reflect': mirror about the edges, edges not repeated
    int64_t r = c % period;
    if (r < 0) r += period;
    return r < len ? r : period - r;
  }
  case ir::PadMode::Constant:
    break;
  }
  return -1;
}

/// Constant padding, one output row (the last axis) at a time: the fill around one copy of the
/// input row it holds, or the fill alone where another axis falls in the padding.
Buffer pad_constant(const ir::Node& n, const Buffer& x, const Buffer& fill) {
  const auto& attrs = n.op.attrs<ir::PadAttrs>();
  Buffer out = Buffer::uninitialized(n.shape);
  std::vector<int64_t> in_sizes = x.shape().sizes(), out_sizes = n.shape.sizes();
  std::vector<int64_t> in_strides = strides_of(in_sizes);
  const std::size_t rank = in_sizes.size(), es = ir::size_bytes(out.dtype());
  const int64_t out_len = out_sizes.back(), in_len = in_sizes.back(),
                lo = attrs.pads[2 * (rank - 1)];
  // Output columns [from, to) read input columns [from - lo, to - lo).
  const int64_t from = std::clamp<int64_t>(lo, 0, out_len),
                to = std::clamp<int64_t>(lo + in_len, from, out_len);
  const bool zero = std::all_of(fill.bytes().begin(), fill.bytes().end(),
                                [](std::byte b) { return b == std::byte{0}; });
  auto fill_run = [&](std::byte* dst, int64_t count) {
    if (zero)
      std::memset(dst, 0, std::size_t(count) * es);
    else
      for (int64_t i = 0; i < count; ++i)
        std::memcpy(dst + std::size_t(i) * es, fill.bytes().data(), es);
  };
  std::vector<int64_t> coord(rank - 1, 0);
  for (int64_t row = 0, rows = out.numel() / out_len; row < rows; ++row) {
    std::byte* dst = out.bytes().data() + std::size_t(row * out_len) * es;
    int64_t src = 0;
    for (std::size_t a = 0; a + 1 < rank && src >= 0; ++a) {
      int64_t c = coord[a] - attrs.pads[2 * a];
      src = c < 0 || c >= in_sizes[a] ? -1 : src + c * in_strides[a];
    }
    if (src < 0) {
      fill_run(dst, out_len);
    } else {
      fill_run(dst, from);
      if (to > from)
        std::memcpy(dst + std::size_t(from) * es,
                    x.bytes().data() + std::size_t(src + from - lo) * es,
                    std::size_t(to - from) * es);
      fill_run(dst + std::size_t(to) * es, out_len - to);
    }
    for (std::size_t a = rank - 1; a-- > 0;) {
      if (++coord[a] < out_sizes[a]) break;
      coord[a] = 0;
    }
  }
  return out;
}

Buffer pad(const ir::Node& n, const Buffer& x) {
  const auto& attrs = n.op.attrs<ir::PadAttrs>();
  Buffer fill(ir::Shape::scalar(n.shape.dtype()));
  fill.set_f64(0, attrs.value);
  if (attrs.mode == ir::PadMode::Constant && n.shape.rank() > 0 && n.shape.num_elements() != 0)
    return pad_constant(n, x, fill);
  Buffer out(n.shape);
  std::vector<int64_t> in_sizes = x.shape().sizes(), out_sizes = n.shape.sizes();
  std::vector<int64_t> in_strides = strides_of(in_sizes);
  std::size_t rank = in_sizes.size(), es = ir::size_bytes(out.dtype());
  std::vector<int64_t> coord(rank, 0);
  for (int64_t i = 0; i < out.numel(); ++i) {
    int64_t src = 0;
    for (std::size_t a = 0; a < rank && src >= 0; ++a) {
      int64_t c = pad_source(attrs.mode, coord[a] - attrs.pads[2 * a], in_sizes[a]);
      src = c < 0 ? -1 : src + c * in_strides[a];
    }
    const std::byte* from =
        src < 0 ? fill.bytes().data() : x.bytes().data() + std::size_t(src) * es;
    std::memcpy(out.bytes().data() + std::size_t(i) * es, from, es);
    for (std::size_t a = rank; a-- > 0;) {
      if (++coord[a] < out_sizes[a]) break;
      coord[a] = 0;
    }
  }
  return out;
}

Buffer gather(const ir::Node& n, const Buffer& table, const Buffer& idx) {
  int64_t axis = norm_axis(n.op.attrs<ir::GatherAttrs>().axis, table.shape().rank());
  AxisSplit s = split_at(table.shape(), axis);
  const std::vector<int64_t> pos = index_positions(idx, s.len, [&](const auto& shown, bool nan) {
    fail(ErrorKind::Value, n.op.name(), ": index ", shown,
         nan ? " is not a valid index for axis " : " is out of range for axis ", axis, " of size ",
         s.len, " (table ", ir::short_str(table.shape()), ", indices ", ir::short_str(idx.shape()),
         ")");
  });
  Buffer out(n.shape);
  std::size_t es = ir::size_bytes(out.dtype()), row = std::size_t(s.inner) * es;
  int64_t m = idx.numel();
  for (int64_t o = 0; o < s.outer && row != 0; ++o)
    for (int64_t j = 0; j < m; ++j)
      std::memcpy(out.bytes().data() + std::size_t(o * m + j) * row,
                  table.bytes().data() + std::size_t(o * s.len + pos[std::size_t(j)]) * row, row);
  return out;
}

} // namespace

RLX_KERNEL(Reshape) {
  const Buffer& x = *in[0];
  Buffer out(n.shape);
  if (!x.bytes().empty()) std::memcpy(out.bytes().data(), x.bytes().data(), x.bytes().size());
  return out;
}
RLX_KERNEL(Transpose) { return copy_view(n, *in[0], transpose_view(n, *in[0])); }
RLX_KERNEL(Narrow) {
  const auto& a = n.op.attrs<ir::NarrowAttrs>();
  return copy_view(n, *in[0], slice_view(*in[0], a.axis, a.start, 1));
}
RLX_KERNEL(Slice) {
  const auto& a = n.op.attrs<ir::SliceAttrs>();
  return copy_view(n, *in[0], slice_view(*in[0], a.axis, a.start, a.step));
}
RLX_KERNEL(Expand) { return copy_view(n, *in[0], expand_view(n, *in[0])); }
RLX_KERNEL(Reverse) { return copy_view(n, *in[0], reverse_view(n, *in[0])); }
RLX_KERNEL(Concat) { return concat(n, in); }
RLX_KERNEL(Pad) { return pad(n, *in[0]); }
RLX_KERNEL(Gather) { return gather(n, *in[0], *in[1]); }

} // namespace rlx::interp::detail
