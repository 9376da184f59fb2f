// src/frontend/nn_functional.cpp -- torch.nn.functional's convolutions, pooling, norms,
// scaled_dot_product_attention and multi_head_attention_forward on Tensors (rlx/nn.hpp), with
// every option of torch's signatures.
//
// Convolutions lower onto the Conv primitives (conv1d as conv2d over a unit axis; asymmetric
// padding as an explicit zero pad). Pooling is composed: one strided slice of the padded input
// per kernel offset, stacked and reduced, so dilation, ceil_mode and the avg divisors cost no new
// op kind and the gradient comes from slice, pad and the reductions. Norms and attention are
// compositions of reductions, elementwise ops and matmul.
#include "frontend/impl.hpp"
#include "frontend/ops.hpp"
#include "rlx/nn.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace rlx::nn {

namespace {

using rlx::detail::at_loc;
using rlx::detail::dims_str;

void check_float(const Tensor& x, const char* role, std::string_view what, const Loc& loc) {
  rlx::detail::check_defined(x, what, loc);
  if (!ir::is_float(x.dtype()))
    fail(ErrorKind::Type, what, ": ", role, " must be a float tensor, got ",
         ir::short_str(x.shape()), at_loc(loc));
}

/// A per-axis option (one value for every axis, or one per axis) spread to `n` axes.
Dims per_axis(const Dims& v, std::size_t n, const char* name, std::string_view what,
              const Loc& loc) {
  if (v.size() == 1) return Dims(n, v[0]);
  if (v.size() != n)
    fail(ErrorKind::Value, what, ": ", name, " ", dims_str(v), " needs 1 or ", n, " values",
         at_loc(loc));
  return v;
}

void check_positive(const Dims& v, const char* name, std::string_view what, const Loc& loc) {
  for (int64_t e : v)
    if (e <= 0)
      fail(ErrorKind::Value, what, ": ", name, " must be positive, got ", dims_str(v), at_loc(loc));
}

void check_nonnegative(const Dims& v, const char* name, std::string_view what, const Loc& loc) {
  for (int64_t e : v)
    if (e < 0)
      fail(ErrorKind::Value, what, ": ", name, " must not be negative, got ", dims_str(v),
           at_loc(loc));
}

/// x with a batch axis: torch's functions take [C, *] as one sample. `batched` says whether to
/// drop it again from the result.
Tensor batch_of(const Tensor& x, std::size_t spatial, bool& batched, std::string_view what,
                const Loc& loc) {
  rlx::detail::check_defined(x, what, loc);
  auto r = std::size_t(x.ndim());
  if (r != spatial + 1 && r != spatial + 2)
    fail(ErrorKind::Shape, what, ": input must be [N, C, ", spatial, " spatial axes] or [C, ",
         spatial, " spatial axes], got ", ir::short_str(x.shape()), at_loc(loc));
  batched = r == spatial + 2;
  return batched ? x : x.unsqueeze(0, loc);
}

Tensor unbatch(const Tensor& y, bool batched, const Loc& loc) {
  return batched ? y : y.squeeze(0, loc);
}

/// Sizes [1, C, 1, ...] of rank `rank` (a per-channel vector on axis 1).
Dims channel_sizes(int64_t rank, int64_t c) {
  Dims s(std::size_t(rank), 1);
  s[1] = c;
  return s;
}

/// A per-channel [C] operand, checked.
Tensor channel_vector(const Tensor& v, int64_t c, const char* role, std::string_view what,
                      const Loc& loc) {
  check_float(v, role, what, loc);
  if (v.ndim() != 1 || v.size(0, loc) != c)
    fail(ErrorKind::Shape, what, ": ", role, " must be [", c, "] (one per channel), got ",
         ir::short_str(v.shape()), at_loc(loc));
  return v;
}

/// A per-channel [C] operand reshaped onto axis 1 of a rank-`rank` tensor.
Tensor per_channel(const Tensor& v, int64_t rank, int64_t c, const char* role,
                   std::string_view what, const Loc& loc) {
  return channel_vector(v, c, role, what, loc).reshape(channel_sizes(rank, c), loc);
}

// ---- Convolutions

/// What conv and conv_transpose check alike: the input (given a batch axis) and the weight are
/// float, the weight is [<channels>, sp kernel axes], and stride and dilation spread to sp
/// positive values.
struct ConvArgs {
  Tensor x;
  bool batched = true;
  Dims stride, dilation;
};
ConvArgs conv_args(std::size_t sp, const Tensor& x0, const Tensor& w, const Dims& stride,
                   const Dims& dilation, const char* channels, std::string_view what,
                   const Loc& loc) {
  ConvArgs a;
  a.x = batch_of(x0, sp, a.batched, what, loc);
  check_float(a.x, "input", what, loc);
  check_float(w, "weight", what, loc);
  if (std::size_t(w.ndim()) != sp + 2)
    fail(ErrorKind::Shape, what, ": weight must be [", channels, ", ", sp, " kernel axes], got ",
         ir::short_str(w.shape()), at_loc(loc));
  a.stride = per_axis(stride, sp, "stride", what, loc);
  a.dilation = per_axis(dilation, sp, "dilation", what, loc);
  check_positive(a.stride, "stride", what, loc);
  check_positive(a.dilation, "dilation", what, loc);
  return a;
}

Tensor conv_nd(std::size_t sp, const Tensor& x0, const Tensor& w, const std::optional<Tensor>& bias,
               const ConvOptions& o, std::string_view what, const Loc& loc) {
  auto [x, batched, stride, dilation] =
      conv_args(sp, x0, w, o.stride, o.dilation, "C_out, C_in/groups", what, loc);
  int64_t c_in = x.size(1, loc), c_out = w.size(0, loc);
  if (o.groups <= 0 || c_in % o.groups != 0 || c_out % o.groups != 0 ||
      w.size(1, loc) * o.groups != c_in)
    fail(ErrorKind::Shape, what, ": input ", ir::short_str(x.shape()), " and weight ",
         ir::short_str(w.shape()), " do not fit groups=", o.groups,
         " (needs C_in = weight.size(1) * groups and C_out divisible by groups)", at_loc(loc));
  Dims before, after;
  std::string_view mode = o.padding.mode;
  if (mode == "same" || mode == "valid") {
    for (std::size_t i = 0; i < sp; ++i) {
      int64_t total = mode == "same" ? dilation[i] * (w.size(int64_t(2 + i), loc) - 1) : 0;
      if (mode == "same" && stride[i] != 1)
        fail(ErrorKind::Value, what, ": padding=\"same\" needs stride 1, got stride ",
             dims_str(stride), at_loc(loc));
      before.push_back(total / 2);
      after.push_back(total - total / 2);
    }
  } else if (mode.empty()) {
    before = per_axis(o.padding.before, sp, "padding", what, loc);
    after = per_axis(o.padding.after, sp, "padding", what, loc);
    check_nonnegative(before, "padding", what, loc);
    check_nonnegative(after, "padding", what, loc);
  } else {
    fail(ErrorKind::Value, what, ": padding must be \"same\" or \"valid\", got \"", mode, "\"",
         at_loc(loc));
  }
  // The op pads symmetrically; the excess of one side is an explicit zero pad.
  Dims sym(sp), extra(2 * (sp + 2), 0);
  bool asym = false;
  for (std::size_t i = 0; i < sp; ++i) {
    sym[i] = std::min(before[i], after[i]);
    extra[2 * (2 + i)] = before[i] - sym[i];
    extra[2 * (2 + i) + 1] = after[i] - sym[i];
    asym = asym || before[i] != after[i];
    int64_t eff = dilation[i] * (w.size(int64_t(2 + i), loc) - 1) + 1;
    if (x.size(int64_t(2 + i), loc) + before[i] + after[i] < eff)
      fail(ErrorKind::Shape, what, ": input ", ir::short_str(x.shape()), " padded by ",
           dims_str(before), "/", dims_str(after), " is smaller than the dilated kernel of weight ",
           ir::short_str(w.shape()), at_loc(loc));
  }
  if (asym) x = rlx::pad(x, extra, ir::PadMode::Constant, 0.0, loc);
  Tensor y;
  if (sp == 1) {
    Conv2dOptions c{{1, stride[0]}, {0, sym[0]}, {1, dilation[0]}, o.groups};
    y = rlx::conv2d(x.unsqueeze(2, loc), w.unsqueeze(2, loc), std::nullopt, c, loc).squeeze(2, loc);
  } else if (sp == 2) {
    Conv2dOptions c{{stride[0], stride[1]}, {sym[0], sym[1]}, {dilation[0], dilation[1]}, o.groups};
    y = rlx::conv2d(x, w, std::nullopt, c, loc);
  } else {
    Conv3dOptions c{{stride[0], stride[1], stride[2]},
                    {sym[0], sym[1], sym[2]},
                    {dilation[0], dilation[1], dilation[2]},
                    {0, 0, 0},
                    o.groups};
    y = rlx::conv3d(x, w, c, loc);
  }
  if (bias) y = y + per_channel(*bias, y.ndim(), c_out, "bias", what, loc);
  return unbatch(y, batched, loc);
}

Tensor conv_transpose_nd(std::size_t sp, const Tensor& x0, const Tensor& w,
                         const std::optional<Tensor>& bias, const ConvTransposeOptions& o,
                         std::string_view what, const Loc& loc) {
  auto [x, batched, stride, dilation] =
      conv_args(sp, x0, w, o.stride, o.dilation, "C_in, C_out/groups", what, loc);
  Dims padding = per_axis(o.padding, sp, "padding", what, loc);
  Dims out_pad = per_axis(o.output_padding, sp, "output_padding", what, loc);
  check_nonnegative(padding, "padding", what, loc);
  check_nonnegative(out_pad, "output_padding", what, loc);
  int64_t c_in = x.size(1, loc);
  if (o.groups <= 0 || w.size(0, loc) != c_in || c_in % o.groups != 0)
    fail(ErrorKind::Shape, what, ": input ", ir::short_str(x.shape()), " and weight ",
         ir::short_str(w.shape()), " do not fit groups=", o.groups,
         " (needs weight.size(0) = C_in, divisible by groups)", at_loc(loc));
  for (std::size_t i = 0; i < sp; ++i) {
    if (out_pad[i] >= std::max(stride[i], dilation[i]))
      fail(ErrorKind::Value, what, ": output_padding ", dims_str(out_pad),
           " must be smaller than stride ", dims_str(stride), " or dilation ", dims_str(dilation),
           at_loc(loc));
    int64_t n = (x.size(int64_t(2 + i), loc) - 1) * stride[i] - 2 * padding[i] +
                dilation[i] * (w.size(int64_t(2 + i), loc) - 1) + out_pad[i] + 1;
    if (n <= 0)
      fail(ErrorKind::Shape, what, ": input ", ir::short_str(x.shape()), " with weight ",
           ir::short_str(w.shape()), " and padding ", dims_str(padding), " gives an empty output",
           at_loc(loc));
  }
  Tensor y;
  if (sp == 1) {
    ConvTranspose1dOptions c{stride[0], padding[0], dilation[0], out_pad[0], o.groups};
    y = rlx::conv_transpose1d(x, w, c, loc);
  } else if (sp == 2) {
    ConvTranspose2dOptions c{{stride[0], stride[1]},
                             {padding[0], padding[1]},
                             {dilation[0], dilation[1]},
                             {out_pad[0], out_pad[1]},
                             o.groups};
    y = rlx::conv_transpose2d(x, w, std::nullopt, c, loc);
  } else {
    Conv3dOptions c{{stride[0], stride[1], stride[2]},
                    {padding[0], padding[1], padding[2]},
                    {dilation[0], dilation[1], dilation[2]},
                    {out_pad[0], out_pad[1], out_pad[2]},
                    o.groups};
    y = rlx::conv_transpose3d(x, w, c, loc);
  }
  if (bias) y = y + per_channel(*bias, y.ndim(), y.size(1, loc), "bias", what, loc);
  return unbatch(y, batched, loc);
}

// ---- Pooling

/// The geometry of one pooling call, per spatial axis.
struct PoolGeom {
  std::size_t sp = 0;
  Dims in, kernel, stride, padding, dilation, out;
};

PoolGeom pool_geom(std::size_t sp, const Tensor& x, const Dims& kernel_size, const PoolOptions& o,
                   bool is_max, std::string_view what, const Loc& loc) {
  PoolGeom g;
  g.sp = sp;
  g.kernel = per_axis(kernel_size, sp, "kernel_size", what, loc);
  g.stride = o.stride.empty() ? g.kernel : per_axis(o.stride, sp, "stride", what, loc);
  g.padding = per_axis(o.padding, sp, "padding", what, loc);
  g.dilation = per_axis(o.dilation, sp, "dilation", what, loc);
  check_positive(g.kernel, "kernel_size", what, loc);
  check_positive(g.stride, "stride", what, loc);
  check_positive(g.dilation, "dilation", what, loc);
  check_nonnegative(g.padding, "padding", what, loc);
  if (!is_max && g.dilation != Dims(sp, 1))
    fail(ErrorKind::Value, what, ": average pooling has no dilation, got ", dims_str(g.dilation),
         at_loc(loc));
  if (o.divisor_override && (is_max || *o.divisor_override == 0))
    fail(ErrorKind::Value, what, ": divisor_override ", *o.divisor_override,
         is_max ? " is for average pooling only" : " must not be zero", at_loc(loc));
  for (std::size_t i = 0; i < sp; ++i) {
    if (g.padding[i] > g.kernel[i] / 2)
      fail(ErrorKind::Value, what, ": padding ", dims_str(g.padding),
           " must be at most half of kernel_size ", dims_str(g.kernel), at_loc(loc));
    int64_t n = x.size(int64_t(2 + i), loc);
    int64_t span = n + 2 * g.padding[i] - g.dilation[i] * (g.kernel[i] - 1) - 1;
    int64_t out =
        span < 0 ? 0
                 : (o.ceil_mode ? (span + g.stride[i] - 1) / g.stride[i] : span / g.stride[i]) + 1;
    // torch's rule: the last window must start inside the input or its left padding.
    if (o.ceil_mode && out > 0 && (out - 1) * g.stride[i] >= n + g.padding[i]) --out;
    if (out <= 0)
      fail(ErrorKind::Shape, what, ": input ", ir::short_str(x.shape()),
           " is too small for kernel ", dims_str(g.kernel), " with padding ", dims_str(g.padding),
           " and dilation ", dims_str(g.dilation), at_loc(loc));
    g.in.push_back(n);
    g.out.push_back(out);
  }
  return g;
}

/// x padded with `value` on every spatial side (and on the right as far as the last ceil_mode
/// window reaches), so that every window is a strided slice.
Tensor pool_pad(const Tensor& x, const PoolGeom& g, double value, const Loc& loc) {
  Dims pads(4, 0);
  bool any = false;
  for (std::size_t i = 0; i < g.sp; ++i) {
    int64_t need = (g.out[i] - 1) * g.stride[i] + g.dilation[i] * (g.kernel[i] - 1) + 1;
    int64_t right = std::max<int64_t>(need - g.in[i] - g.padding[i], g.padding[i]);
    pads.push_back(g.padding[i]);
    pads.push_back(right);
    any = any || g.padding[i] != 0 || right != 0;
  }
  return any ? rlx::pad(x, pads, ir::PadMode::Constant, value, loc) : x;
}

/// One strided slice of the padded input per kernel offset (row-major over the offsets), each
/// [N, C, out...].
std::vector<Tensor> pool_windows(const Tensor& xp, const PoolGeom& g, const Loc& loc) {
  std::vector<Tensor> parts;
  int64_t count = 1;
  for (int64_t k : g.kernel) count *= k;
  for (int64_t j = 0; j < count; ++j) {
    Tensor t = xp;
    int64_t rest = j;
    for (std::size_t i = g.sp; i-- > 0;) {
      int64_t off = rest % g.kernel[i];
      rest /= g.kernel[i];
      int64_t start = off * g.dilation[i];
      t = rlx::slice(t, int64_t(2 + i), start, start + (g.out[i] - 1) * g.stride[i] + 1,
                     g.stride[i], loc);
    }
    parts.push_back(t);
  }
  return parts;
}

/// A 1-D constant along spatial axis i of a rank-(sp+2) result: [1, 1, .., n, .., 1].
Tensor along_axis(const std::vector<double>& v, const PoolGeom& g, std::size_t i, DType dtype,
                  const Loc& loc) {
  Dims sizes(g.sp + 2, 1);
  sizes[2 + i] = int64_t(v.size());
  return Tensor::from_vector(v, sizes, loc).cast(dtype, loc);
}

PoolWithIndices max_pool_nd(std::size_t sp, const Tensor& x0, const Dims& kernel_size,
                            const PoolOptions& o, bool want_indices, std::string_view what,
                            const Loc& loc) {
  bool batched = true;
  Tensor x = batch_of(x0, sp, batched, what, loc);
  check_float(x, "input", what, loc);
  if (!o.count_include_pad)
    fail(ErrorKind::Value, what, ": count_include_pad is for average pooling only", at_loc(loc));
  PoolGeom g = pool_geom(sp, x, kernel_size, o, true, what, loc);
  Tensor xp = pool_pad(x, g, -std::numeric_limits<double>::infinity(), loc);
  Tensor stacked = rlx::stack(pool_windows(xp, g, loc), int64_t(sp + 2), loc);
  PoolWithIndices r{unbatch(rlx::max(stacked, {-1}, false, loc), batched, loc), Tensor()};
  if (!want_indices) return r;
  // Flat index in the input plane = base(output position) + offset(kernel offset).
  Dims plane(sp, 1);
  for (std::size_t i = sp - 1; i-- > 0;) plane[i] = plane[i + 1] * g.in[i + 1];
  std::vector<int64_t> offsets;
  int64_t count = 1;
  for (int64_t k : g.kernel) count *= k;
  for (int64_t j = 0; j < count; ++j) {
    int64_t rest = j, off = 0;
    for (std::size_t i = sp; i-- > 0;) {
      off += (rest % g.kernel[i]) * g.dilation[i] * plane[i];
      rest /= g.kernel[i];
    }
    offsets.push_back(off);
  }
  Tensor idx = rlx::take(Tensor::from_vector(offsets, {count}, loc),
                         rlx::argmax(stacked, int64_t(-1), false, loc), 0, loc);
  for (std::size_t i = 0; i < sp; ++i) {
    std::vector<int64_t> base;
    for (int64_t p = 0; p < g.out[i]; ++p)
      base.push_back((p * g.stride[i] - g.padding[i]) * plane[i]);
    Dims sizes(sp + 2, 1);
    sizes[2 + i] = g.out[i];
    idx = idx + Tensor::from_vector(base, sizes, loc);
  }
  r.indices = unbatch(idx, batched, loc);
  return r;
}

Tensor avg_pool_nd(std::size_t sp, const Tensor& x0, const Dims& kernel_size, const PoolOptions& o,
                   std::string_view what, const Loc& loc) {
  bool batched = true;
  Tensor x = batch_of(x0, sp, batched, what, loc);
  check_float(x, "input", what, loc);
  PoolGeom g = pool_geom(sp, x, kernel_size, o, false, what, loc);
  std::vector<Tensor> parts = pool_windows(pool_pad(x, g, 0.0, loc), g, loc);
  Tensor sum = parts[0];
  for (std::size_t j = 1; j < parts.size(); ++j) sum = sum + parts[j];
  if (o.divisor_override) return unbatch(sum / double(*o.divisor_override), batched, loc);
  // torch's divisor is a product over the axes of each window's length, clipped to the padded
  // input (count_include_pad) or to the input.
  Tensor y = sum;
  for (std::size_t i = 0; i < sp; ++i) {
    std::vector<double> div;
    for (int64_t p = 0; p < g.out[i]; ++p) {
      int64_t start = p * g.stride[i] - g.padding[i];
      int64_t end = std::min(start + g.kernel[i], g.in[i] + g.padding[i]);
      if (!o.count_include_pad) {
        start = std::max<int64_t>(start, 0);
        end = std::min(end, g.in[i]);
      }
      div.push_back(double(end - start));
    }
    y = y / along_axis(div, g, i, x.dtype(), loc);
  }
  return unbatch(y, batched, loc);
}

/// Adaptive pooling along one spatial axis: output cell i reduces [floor(i n / out),
/// ceil((i + 1) n / out)).
Tensor adaptive_axis(const Tensor& x, int64_t axis, int64_t out, bool is_max, const Loc& loc) {
  int64_t n = x.size(axis, loc);
  std::vector<Tensor> cells;
  for (int64_t i = 0; i < out; ++i) {
    int64_t start = (i * n) / out, end = ((i + 1) * n + out - 1) / out;
    Tensor s = rlx::narrow(x, axis, start, end - start, loc);
    cells.push_back(is_max ? rlx::max(s, {axis}, true, loc) : rlx::mean(s, {axis}, true, loc));
  }
  return cells.size() == 1 ? cells[0] : rlx::concat(cells, axis, loc);
}

Tensor adaptive_nd(std::size_t sp, const Tensor& x0, const Dims& output_size, bool is_max,
                   std::string_view what, const Loc& loc) {
  bool batched = true;
  Tensor x = batch_of(x0, sp, batched, what, loc);
  check_float(x, "input", what, loc);
  Dims out = per_axis(output_size, sp, "output_size", what, loc);
  check_positive(out, "output_size", what, loc);
  for (std::size_t i = 0; i < sp; ++i)
    if (x.size(int64_t(2 + i), loc) == 0)
      fail(ErrorKind::Shape, what, ": input ", ir::short_str(x.shape()), " has an empty axis",
           at_loc(loc));
  // Both reductions are separable: a window is a product of intervals.
  for (std::size_t i = 0; i < sp; ++i) x = adaptive_axis(x, int64_t(2 + i), out[i], is_max, loc);
  return unbatch(x, batched, loc);
}

/// Adaptive max pooling with indices: one cell at a time (the index needs the whole window, so
/// the separable form does not serve), each cell's argmax mapped through a table of flat offsets.
PoolWithIndices adaptive_max_indexed(std::size_t sp, const Tensor& x0, const Dims& output_size,
                                     std::string_view what, const Loc& loc) {
  bool batched = true;
  Tensor x = batch_of(x0, sp, batched, what, loc);
  check_float(x, "input", what, loc);
  Dims out = per_axis(output_size, sp, "output_size", what, loc);
  check_positive(out, "output_size", what, loc);
  int64_t h = sp == 2 ? x.size(2, loc) : 1, w = x.size(int64_t(sp + 1), loc);
  if (h == 0 || w == 0)
    fail(ErrorKind::Shape, what, ": input ", ir::short_str(x.shape()), " has an empty axis",
         at_loc(loc));
  int64_t oh = sp == 2 ? out[0] : 1, ow = out[sp - 1];
  Tensor xs = sp == 2 ? x : x.unsqueeze(2, loc); // [N, C, h, w]
  std::vector<Tensor> rows_v, rows_i;
  for (int64_t i = 0; i < oh; ++i) {
    int64_t hs = (i * h) / oh, he = ((i + 1) * h + oh - 1) / oh;
    std::vector<Tensor> cells_v, cells_i;
    for (int64_t j = 0; j < ow; ++j) {
      int64_t ws = (j * w) / ow, we = ((j + 1) * w + ow - 1) / ow;
      Tensor cell = rlx::narrow(rlx::narrow(xs, 2, hs, he - hs, loc), 3, ws, we - ws, loc)
                        .flatten(2, 3, loc); // [N, C, cell]
      std::vector<int64_t> offsets;
      for (int64_t r = hs; r < he; ++r)
        for (int64_t c = ws; c < we; ++c) offsets.push_back(r * w + c);
      cells_v.push_back(rlx::max(cell, {2}, true, loc));
      cells_i.push_back(rlx::take(Tensor::from_vector(offsets, {int64_t(offsets.size())}, loc),
                                  rlx::argmax(cell, int64_t(2), true, loc), 0, loc));
    }
    rows_v.push_back(rlx::concat(cells_v, 2, loc).unsqueeze(2, loc));
    rows_i.push_back(rlx::concat(cells_i, 2, loc).unsqueeze(2, loc));
  }
  Tensor v = rlx::concat(rows_v, 2, loc), idx = rlx::concat(rows_i, 2, loc); // [N, C, oh, ow]
  if (sp == 1) {
    v = v.squeeze(2, loc);
    idx = idx.squeeze(2, loc);
  }
  return {unbatch(v, batched, loc), unbatch(idx, batched, loc)};
}

// ---- Norms

Dims spatial_axes(int64_t rank, bool with_batch) {
  Dims a;
  if (with_batch) a.push_back(0);
  for (int64_t i = 2; i < rank; ++i) a.push_back(i);
  return a;
}

Tensor affine(Tensor y, const std::optional<Tensor>& weight, const std::optional<Tensor>& bias,
              int64_t c, std::string_view what, const Loc& loc) {
  if (weight) y = y * per_channel(*weight, y.ndim(), c, "weight", what, loc);
  if (bias) y = y + per_channel(*bias, y.ndim(), c, "bias", what, loc);
  return y;
}

void check_nc(const Tensor& x, std::string_view what, const Loc& loc) {
  check_float(x, "input", what, loc);
  if (x.ndim() < 2)
    fail(ErrorKind::Shape, what, ": input must be [N, C, *], got ", ir::short_str(x.shape()),
         at_loc(loc));
}

/// Normalise with given (broadcastable) statistics.
Tensor normalise(const Tensor& x, const Tensor& mean, const Tensor& var, double eps,
                 const Loc& loc) {
  return (x - mean) * rlx::rsqrt(var + eps, loc);
}

/// batch_norm's and instance_norm's running_mean and running_var: both or neither, each [C].
std::pair<std::optional<Tensor>, std::optional<Tensor>>
running_stats(const std::optional<Tensor>& mean, const std::optional<Tensor>& var, int64_t c,
              std::string_view what, const Loc& loc) {
  if (mean.has_value() != var.has_value())
    fail(ErrorKind::Value, what, ": pass both running_mean and running_var or neither",
         at_loc(loc));
  if (!mean) return {};
  return {channel_vector(*mean, c, "running_mean", what, loc),
          channel_vector(*var, c, "running_var", what, loc)};
}

/// A running statistic moved toward this batch's value by momentum m, in the running dtype.
Tensor running_update(const Tensor& running, const Tensor& batch, double m, const Loc& loc) {
  return running * (1 - m) + batch.cast(running.dtype(), loc) * m;
}

/// x normalised with the running statistics [C] (inference), in x's dtype.
Tensor normalise_running(const Tensor& x, const Tensor& rm, const Tensor& rv, int64_t c, double eps,
                         const Loc& loc) {
  const Dims sizes = channel_sizes(x.ndim(), c);
  return normalise(x, rm.reshape(sizes, loc).cast(x.dtype(), loc),
                   rv.reshape(sizes, loc).cast(x.dtype(), loc), eps, loc);
}

} // namespace

Tensor conv1d(const Tensor& x, const Tensor& w, std::optional<Tensor> b, const ConvOptions& o,
              Loc loc) {
  return conv_nd(1, x, w, b, o, "conv1d", loc);
}
Tensor conv2d(const Tensor& x, const Tensor& w, std::optional<Tensor> b, const ConvOptions& o,
              Loc loc) {
  return conv_nd(2, x, w, b, o, "conv2d", loc);
}
Tensor conv3d(const Tensor& x, const Tensor& w, std::optional<Tensor> b, const ConvOptions& o,
              Loc loc) {
  return conv_nd(3, x, w, b, o, "conv3d", loc);
}
Tensor conv_transpose1d(const Tensor& x, const Tensor& w, std::optional<Tensor> b,
                        const ConvTransposeOptions& o, Loc loc) {
  return conv_transpose_nd(1, x, w, b, o, "conv_transpose1d", loc);
}
Tensor conv_transpose2d(const Tensor& x, const Tensor& w, std::optional<Tensor> b,
                        const ConvTransposeOptions& o, Loc loc) {
  return conv_transpose_nd(2, x, w, b, o, "conv_transpose2d", loc);
}
Tensor conv_transpose3d(const Tensor& x, const Tensor& w, std::optional<Tensor> b,
                        const ConvTransposeOptions& o, Loc loc) {
  return conv_transpose_nd(3, x, w, b, o, "conv_transpose3d", loc);
}

Tensor max_pool1d(const Tensor& x, Dims k, const PoolOptions& o, Loc loc) {
  return max_pool_nd(1, x, k, o, false, "max_pool1d", loc).values;
}
Tensor max_pool2d(const Tensor& x, Dims k, const PoolOptions& o, Loc loc) {
  return max_pool_nd(2, x, k, o, false, "max_pool2d", loc).values;
}
Tensor max_pool3d(const Tensor& x, Dims k, const PoolOptions& o, Loc loc) {
  return max_pool_nd(3, x, k, o, false, "max_pool3d", loc).values;
}
PoolWithIndices max_pool1d_with_indices(const Tensor& x, Dims k, const PoolOptions& o, Loc loc) {
  return max_pool_nd(1, x, k, o, true, "max_pool1d_with_indices", loc);
}
PoolWithIndices max_pool2d_with_indices(const Tensor& x, Dims k, const PoolOptions& o, Loc loc) {
  return max_pool_nd(2, x, k, o, true, "max_pool2d_with_indices", loc);
}
PoolWithIndices max_pool3d_with_indices(const Tensor& x, Dims k, const PoolOptions& o, Loc loc) {
  return max_pool_nd(3, x, k, o, true, "max_pool3d_with_indices", loc);
}
Tensor avg_pool1d(const Tensor& x, Dims k, const PoolOptions& o, Loc loc) {
  return avg_pool_nd(1, x, k, o, "avg_pool1d", loc);
}
Tensor avg_pool2d(const Tensor& x, Dims k, const PoolOptions& o, Loc loc) {
  return avg_pool_nd(2, x, k, o, "avg_pool2d", loc);
}
Tensor avg_pool3d(const Tensor& x, Dims k, const PoolOptions& o, Loc loc) {
  return avg_pool_nd(3, x, k, o, "avg_pool3d", loc);
}
Tensor adaptive_avg_pool1d(const Tensor& x, int64_t out, Loc loc) {
  return adaptive_nd(1, x, {out}, false, "adaptive_avg_pool1d", loc);
}
Tensor adaptive_avg_pool2d(const Tensor& x, Dims out, Loc loc) {
  return adaptive_nd(2, x, out, false, "adaptive_avg_pool2d", loc);
}
Tensor adaptive_max_pool1d(const Tensor& x, int64_t out, Loc loc) {
  return adaptive_nd(1, x, {out}, true, "adaptive_max_pool1d", loc);
}
Tensor adaptive_max_pool2d(const Tensor& x, Dims out, Loc loc) {
  return adaptive_nd(2, x, out, true, "adaptive_max_pool2d", loc);
}

PoolWithIndices adaptive_max_pool1d_with_indices(const Tensor& x, int64_t out, Loc loc) {
  return adaptive_max_indexed(1, x, {out}, "adaptive_max_pool1d_with_indices", loc);
}
PoolWithIndices adaptive_max_pool2d_with_indices(const Tensor& x, Dims out, Loc loc) {
  return adaptive_max_indexed(2, x, out, "adaptive_max_pool2d_with_indices", loc);
}

NormResult batch_norm(const Tensor& x, std::optional<Tensor> running_mean,
                      std::optional<Tensor> running_var, const BatchNormOptions& o, Loc loc) {
  constexpr std::string_view what = "batch_norm";
  check_nc(x, what, loc);
  int64_t c = x.size(1, loc), rank = x.ndim();
  auto [rm, rv] = running_stats(running_mean, running_var, c, what, loc);
  if (!o.training) {
    if (!rm)
      fail(ErrorKind::Value, what,
           ": inference (training = false) needs running_mean and "
           "running_var",
           at_loc(loc));
    Tensor y = normalise_running(x, *rm, *rv, c, o.eps, loc);
    return {affine(y, o.weight, o.bias, c, what, loc), running_mean, running_var};
  }
  int64_t n = c ? x.numel() / c : 0;
  if (n <= 1)
    fail(ErrorKind::Shape, what, ": training needs more than 1 value per channel, got input ",
         ir::short_str(x.shape()), at_loc(loc));
  Dims axes = spatial_axes(rank, true);
  Tensor mean = x.mean(axes, true, loc), var = x.var(axes, true, 0, loc);
  NormResult r{affine(normalise(x, mean, var, o.eps, loc), o.weight, o.bias, c, what, loc),
               std::nullopt, std::nullopt};
  if (rm) {
    double m = o.momentum, unbias = double(n) / double(n - 1);
    r.running_mean = running_update(*rm, mean.reshape({c}, loc), m, loc);
    r.running_var = running_update(*rv, var.reshape({c}, loc) * unbias, m, loc);
  }
  return r;
}

NormResult instance_norm(const Tensor& x, const InstanceNormOptions& o, Loc loc) {
  constexpr std::string_view what = "instance_norm";
  check_nc(x, what, loc);
  int64_t c = x.size(1, loc), rank = x.ndim();
  auto [rm, rv] = running_stats(o.running_mean, o.running_var, c, what, loc);
  if (!o.use_input_stats) {
    if (!rm)
      fail(ErrorKind::Value, what, ": use_input_stats = false needs running_mean and running_var",
           at_loc(loc));
    Tensor y = normalise_running(x, *rm, *rv, c, o.eps, loc);
    return {affine(y, o.weight, o.bias, c, what, loc), o.running_mean, o.running_var};
  }
  int64_t n = c && x.size(0, loc) ? x.numel() / (c * x.size(0, loc)) : 0;
  if (n <= 1)
    fail(ErrorKind::Shape, what, ": needs more than 1 spatial element per channel, got input ",
         ir::short_str(x.shape()), at_loc(loc));
  Dims axes = spatial_axes(rank, false);
  Tensor mean = x.mean(axes, true, loc), var = x.var(axes, true, 0, loc);
  NormResult r{affine(normalise(x, mean, var, o.eps, loc), o.weight, o.bias, c, what, loc),
               std::nullopt, std::nullopt};
  if (rm) {
    // torch averages the per-sample statistics over the batch before the update.
    double m = o.momentum, unbias = double(n) / double(n - 1);
    Tensor bm = mean.reshape({x.size(0, loc), c}, loc).mean({0}, false, loc);
    Tensor bv = (var.reshape({x.size(0, loc), c}, loc) * unbias).mean({0}, false, loc);
    r.running_mean = running_update(*rm, bm, m, loc);
    r.running_var = running_update(*rv, bv, m, loc);
  }
  return r;
}

Tensor layer_norm(const Tensor& x, Dims shape, std::optional<Tensor> weight,
                  std::optional<Tensor> bias, double eps, Loc loc) {
  constexpr std::string_view what = "layer_norm";
  check_float(x, "input", what, loc);
  auto r = std::size_t(x.ndim());
  Dims xs = x.sizes();
  if (shape.empty() || shape.size() > r ||
      !std::equal(shape.begin(), shape.end(), xs.end() - std::ptrdiff_t(shape.size())))
    fail(ErrorKind::Shape, what, ": normalized_shape ", dims_str(shape),
         " must be the trailing sizes of input ", ir::short_str(x.shape()), at_loc(loc));
  Dims axes;
  for (std::size_t i = r - shape.size(); i < r; ++i) axes.push_back(int64_t(i));
  Tensor y = normalise(x, x.mean(axes, true, loc), x.var(axes, true, 0, loc), eps, loc);
  for (auto [t, role] : {std::pair{&weight, "weight"}, std::pair{&bias, "bias"}}) {
    if (!*t) continue;
    check_float(**t, role, what, loc);
    if ((*t)->sizes() != shape)
      fail(ErrorKind::Shape, what, ": ", role, " ", ir::short_str((*t)->shape()),
           " must have normalized_shape ", dims_str(shape), at_loc(loc));
    y = std::string_view(role) == "weight" ? y * **t : y + **t;
  }
  return y;
}

Tensor group_norm(const Tensor& x, int64_t groups, std::optional<Tensor> weight,
                  std::optional<Tensor> bias, double eps, Loc loc) {
  constexpr std::string_view what = "group_norm";
  check_nc(x, what, loc);
  int64_t c = x.size(1, loc);
  if (groups <= 0 || c % groups != 0)
    fail(ErrorKind::Shape, what, ": ", c, " channels of input ", ir::short_str(x.shape()),
         " do not split into num_groups=", groups, at_loc(loc));
  Tensor xg = x.reshape({x.size(0, loc), groups, -1}, loc);
  Tensor y = normalise(xg, xg.mean({2}, true, loc), xg.var({2}, true, 0, loc), eps, loc)
                 .reshape(x.sizes(), loc);
  return affine(y, weight, bias, c, what, loc);
}

Tensor scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v,
                                    const SdpaOptions& o, Loc loc) {
  constexpr std::string_view what = "scaled_dot_product_attention";
  check_float(q, "query", what, loc);
  check_float(k, "key", what, loc);
  check_float(v, "value", what, loc);
  auto shapes = [&] {
    return "q " + ir::short_str(q.shape()) + ", k " + ir::short_str(k.shape()) + ", v " +
           ir::short_str(v.shape());
  };
  if (o.dropout_p != 0.0)
    fail(ErrorKind::Unsupported, what, ": dropout_p must be 0, got ", o.dropout_p,
         " (apply dropout to the weights apart)", at_loc(loc));
  if (q.ndim() < 2 || k.ndim() != q.ndim() || v.ndim() != q.ndim())
    fail(ErrorKind::Shape, what, ": q, k and v must have one rank of at least 2, got ", shapes(),
         at_loc(loc));
  if (q.size(-1, loc) != k.size(-1, loc) || k.size(-2, loc) != v.size(-2, loc))
    fail(ErrorKind::Shape, what, ": q and k must share E and k and v the key length S, got ",
         shapes(), at_loc(loc));
  Tensor kk = k, vv = v;
  if (q.ndim() >= 3) {
    int64_t hq = q.size(-3, loc), hk = k.size(-3, loc);
    if (v.size(-3, loc) != hk || hk == 0 || hq % hk != 0)
      fail(ErrorKind::Shape, what, ": k and v need the same number of heads, dividing q's, got ",
           shapes(), at_loc(loc));
    if (hq != hk) {
      if (!o.enable_gqa)
        fail(ErrorKind::Shape, what, ": q has ", hq, " heads and k/v ", hk,
             ": set enable_gqa for grouped-query attention, got ", shapes(), at_loc(loc));
      kk = rlx::repeat_interleave(k, hq / hk, int64_t(-3), loc);
      vv = rlx::repeat_interleave(v, hq / hk, int64_t(-3), loc);
    }
  }
  double scale = o.scale.value_or(1.0 / std::sqrt(double(q.size(-1, loc))));
  Tensor s = rlx::matmul(q, kk.transpose(-2, -1, loc), loc) * scale;
  const double inf = std::numeric_limits<double>::infinity();
  if (o.is_causal) {
    int64_t l = q.size(-2, loc), n = k.size(-2, loc);
    Tensor keep = rlx::arange(double(n), DType::I64, loc).reshape({1, n}, loc) <=
                  rlx::arange(double(l), DType::I64, loc).reshape({l, 1}, loc);
    s = rlx::where(keep, s, -inf, loc);
  }
  // A mask or bias must broadcast to the scores [.., Hq, L, S] (checked here so that the
  // error names this function rather than the add inside it).
  auto check_broadcast = [&](const Tensor& m, const char* role) {
    rlx::detail::check_defined(m, what, loc);
    Dims ms = m.sizes(), ss = s.sizes();
    bool ok = ms.size() <= ss.size();
    for (std::size_t i = 0; ok && i < ms.size(); ++i) {
      int64_t a = ms[ms.size() - 1 - i], b = ss[ss.size() - 1 - i];
      ok = a == b || a == 1;
    }
    if (!ok)
      fail(ErrorKind::Shape, what, ": ", role, " ", ir::short_str(m.shape()),
           " does not broadcast to the scores ", dims_str(ss), " of ", shapes(), at_loc(loc));
  };
  if (o.attn_mask) {
    check_broadcast(*o.attn_mask, "attn_mask");
    if (o.attn_mask->dtype() == DType::Bool)
      s = rlx::where(*o.attn_mask, s, -inf, loc);
    else
      s = s + o.attn_mask->cast(s.dtype(), loc);
  }
  if (o.bias) {
    check_broadcast(*o.bias, "bias");
    check_float(*o.bias, "bias", what, loc);
    s = s + o.bias->cast(s.dtype(), loc);
  }
  return rlx::matmul(rlx::softmax(s, -1, loc), vv, loc);
}

MultiHeadAttentionResult multi_head_attention_forward(const Tensor& query, const Tensor& key,
                                                      const Tensor& value, int64_t num_heads,
                                                      const Tensor& in_w, const Tensor& out_w,
                                                      const MultiHeadAttentionOptions& o, Loc loc) {
  constexpr std::string_view what = "multi_head_attention_forward";
  check_float(query, "query", what, loc);
  check_float(key, "key", what, loc);
  check_float(value, "value", what, loc);
  check_float(in_w, "in_proj_weight", what, loc);
  check_float(out_w, "out_proj_weight", what, loc);
  auto shapes = [&] {
    return "query " + ir::short_str(query.shape()) + ", key " + ir::short_str(key.shape()) +
           ", value " + ir::short_str(value.shape());
  };
  if (query.ndim() != 3 || key.ndim() != 3 || value.ndim() != 3 || key.sizes() != value.sizes() ||
      key.size(1, loc) != query.size(1, loc) || key.size(2, loc) != query.size(2, loc))
    fail(ErrorKind::Shape, what, ": needs query [L, N, E] and key, value [S, N, E], got ", shapes(),
         at_loc(loc));
  int64_t l = query.size(0, loc), n = query.size(1, loc), e = query.size(2, loc);
  int64_t s = key.size(0, loc);
  if (num_heads <= 0 || e % num_heads != 0)
    fail(ErrorKind::Shape, what, ": embed dim ", e, " does not split into num_heads=", num_heads,
         at_loc(loc));
  if (in_w.sizes() != Dims{3 * e, e} || out_w.sizes() != Dims{e, e})
    fail(ErrorKind::Shape, what, ": in_proj_weight ", ir::short_str(in_w.shape()), " must be [",
         3 * e, ", ", e, "] and out_proj_weight ", ir::short_str(out_w.shape()), " [", e, ", ", e,
         "]", at_loc(loc));
  int64_t h = num_heads, d = e / num_heads;
  auto bias_part = [&](int64_t i) -> std::optional<Tensor> {
    if (!o.in_proj_bias) return std::nullopt;
    return rlx::narrow(channel_vector(*o.in_proj_bias, 3 * e, "in_proj_bias", what, loc), 0, i * e,
                       e, loc);
  };
  // Project, then split heads: [len, N, E] -> [N, H, len, D].
  auto project = [&](const Tensor& x, int64_t i, int64_t len) {
    Tensor y = rlx::matmul(x, rlx::narrow(in_w, 0, i * e, e, loc).transpose(loc), loc);
    if (auto b = bias_part(i)) y = y + *b;
    return y.reshape({len, n, h, d}, loc).permute({1, 2, 0, 3}, loc);
  };
  Tensor q = project(query, 0, l), k = project(key, 1, s), v = project(value, 2, s);
  Tensor scores = rlx::matmul(q, k.transpose(-2, -1, loc), loc) * (1.0 / std::sqrt(double(d)));
  const double inf = std::numeric_limits<double>::infinity();
  // torch's MHA masks: a bool true marks a key to leave out (the opposite of sdpa's).
  auto apply_mask = [&](const Tensor& sc, const Tensor& m, Dims sizes) {
    Tensor mm = m.reshape(std::move(sizes), loc);
    return m.dtype() == DType::Bool ? rlx::where(mm, -inf, sc, loc) : sc + mm.cast(sc.dtype(), loc);
  };
  if (o.attn_mask) {
    rlx::detail::check_defined(*o.attn_mask, what, loc);
    Dims ms = o.attn_mask->sizes();
    if (ms == Dims{l, s})
      scores = apply_mask(scores, *o.attn_mask, {l, s});
    else if (ms == Dims{n * h, l, s})
      scores = apply_mask(scores, *o.attn_mask, {n, h, l, s});
    else
      fail(ErrorKind::Shape, what, ": attn_mask ", ir::short_str(o.attn_mask->shape()),
           " must be [", l, ", ", s, "] or [", n * h, ", ", l, ", ", s, "] for ", shapes(),
           at_loc(loc));
  }
  if (o.key_padding_mask) {
    rlx::detail::check_defined(*o.key_padding_mask, what, loc);
    if (o.key_padding_mask->sizes() != Dims{n, s})
      fail(ErrorKind::Shape, what, ": key_padding_mask ",
           ir::short_str(o.key_padding_mask->shape()), " must be [", n, ", ", s, "] for ", shapes(),
           at_loc(loc));
    scores = apply_mask(scores, *o.key_padding_mask, {n, 1, 1, s});
  }
  Tensor weights = rlx::softmax(scores, -1, loc);
  Tensor out = rlx::matmul(weights, v, loc).permute({2, 0, 1, 3}, loc).reshape({l, n, e}, loc);
  out = rlx::matmul(out, out_w.transpose(loc), loc);
  if (o.out_proj_bias) out = out + channel_vector(*o.out_proj_bias, e, "out_proj_bias", what, loc);
  MultiHeadAttentionResult r{out, std::nullopt};
  if (o.need_weights) r.weights = o.average_attn_weights ? weights.mean({1}, false, loc) : weights;
  return r;
}

} // namespace rlx::nn
