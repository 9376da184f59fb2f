// src/onnx/ops_nn.cpp -- ONNX contractions, convolutions, pooling, normalizations and
// quantization: MatMul, Gemm, Conv, ConvTranspose, MaxPool, AveragePool, Global*Pool,
// BatchNormalization, InstanceNormalization, LayerNormalization, Quantize/DequantizeLinear,
// DynamicQuantizeLinear, and the integer QLinearMatMul, QLinearConv, MatMulInteger, ConvInteger
// on rlx's q_matmul and q_conv2d. Asymmetric or automatic padding becomes an explicit pad (or a
// crop for transposed convolutions) around rlx's symmetric-padding ops; 1-d ops run as 2-d ones.
#include "importer.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace rlx::onnx::detail {

using ir::DType;
using ir::NodeId;
using ir::Op;
using ir::OpKind;

namespace {

/// v reshaped to [C, 1, ...] so that it broadcasts along axis 1 of a rank-r tensor.
NodeId per_channel(Ctx& c, NodeId v, int64_t r) {
  std::vector<int64_t> d(static_cast<std::size_t>(std::max<int64_t>(r - 1, 1)), 1);
  d[0] = -1;
  return c.g.reshape_(v, d);
}

void matmul(Ctx& c) { c.out(0, c.g.mm(c.in(0), c.in(1))); }

void gemm(Ctx& c) {
  NodeId a = c.in(0), b = c.in(1);
  if (c.attr_i("transA", 0)) a = c.g.transpose_(a, {1, 0});
  if (c.attr_i("transB", 0)) b = c.g.transpose_(b, {1, 0});
  float alpha = c.attr_f("alpha", 1), beta = c.attr_f("beta", 1);
  if (c.opset < 7) c.ignore("broadcast");
  NodeId y = c.g.mm(a, b);
  if (alpha != 1) y = op2(c, OpKind::Mul, y, like(c, y, alpha));
  if (c.has(2)) {
    NodeId bias = c.in(2);
    if (beta != 1) bias = op2(c, OpKind::Mul, bias, like(c, bias, beta));
    y = op2(c, OpKind::Add, y, bias);
  }
  c.out(0, y);
}

/// Spatial geometry of a conv or pool node: kernel, strides, dilations and the begin/end pads
/// after auto_pad (and, for pools, ceil_mode).
struct Window {
  std::vector<int64_t> in, kernel, strides, dilations, begin, end;
  std::size_t rank() const { return in.size(); }
  bool symmetric() const { return begin == end; }
  bool padded() const {
    return std::any_of(begin.begin(), begin.end(), [](int64_t p) { return p != 0; }) ||
           std::any_of(end.begin(), end.end(), [](int64_t p) { return p != 0; });
  }
};

Window window(Ctx& c, std::vector<int64_t> in, std::vector<int64_t> kernel, bool ceil_mode) {
  Window w;
  std::size_t n = in.size();
  w.in = std::move(in);
  w.kernel = std::move(kernel);
  if (w.kernel.size() != n) fail(ErrorKind::Shape, "kernel_shape needs ", n, " values");
  w.strides = c.attr_ints("strides", std::vector<int64_t>(n, 1));
  w.dilations = c.attr_ints("dilations", std::vector<int64_t>(n, 1));
  std::vector<int64_t> pads = c.attr_ints("pads", std::vector<int64_t>(2 * n, 0));
  if (w.strides.size() != n || w.dilations.size() != n || pads.size() != 2 * n)
    fail(ErrorKind::Shape, "strides, dilations and pads must match the spatial rank ", n);
  w.begin.assign(pads.begin(), pads.begin() + std::ptrdiff_t(n));
  w.end.assign(pads.begin() + std::ptrdiff_t(n), pads.end());
  std::string auto_pad = c.attr_s("auto_pad", "NOTSET");
  for (std::size_t k = 0; k < n; ++k) {
    int64_t ext = (w.kernel[k] - 1) * w.dilations[k] + 1, s = w.strides[k];
    if (s <= 0 || w.dilations[k] <= 0 || w.kernel[k] <= 0)
      fail(ErrorKind::Value, "strides, dilations and kernel sizes must be positive");
    if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      int64_t out = (w.in[k] + s - 1) / s;
      int64_t total = std::max<int64_t>(0, (out - 1) * s + ext - w.in[k]);
      int64_t small = total / 2;
      bool upper = auto_pad == "SAME_UPPER";
      w.begin[k] = upper ? small : total - small;
      w.end[k] = upper ? total - small : small;
    } else if (auto_pad == "VALID") {
      w.begin[k] = w.end[k] = 0;
    } else if (auto_pad != "NOTSET") {
      c.unsupported("auto_pad '" + auto_pad + "'");
    }
    if (ceil_mode) {
      int64_t span = w.in[k] + w.begin[k] + w.end[k] - ext;
      int64_t out = (span + s - 1) / s + 1;
      if ((out - 1) * s >= w.in[k] + w.begin[k]) --out; // the last window starts inside
      w.end[k] += std::max<int64_t>(0, (out - 1) * s + ext - (w.in[k] + w.begin[k] + w.end[k]));
    }
  }
  return w;
}

/// x with the window's pads applied explicitly on the spatial axes (value `v`).
NodeId pad_spatial(Ctx& c, NodeId x, const Window& w, double v) {
  std::vector<int64_t> p{0, 0, 0, 0};
  for (std::size_t k = 0; k < w.rank(); ++k) p.insert(p.end(), {w.begin[k], w.end[k]});
  return c.g.pad(x, p, ir::PadMode::Constant, v);
}

/// 1-d [N, C, L] as 2-d [N, C, 1, L] (and the window with it).
NodeId as_2d(Ctx& c, NodeId x, Window& w) {
  std::vector<int64_t> d = c.g.shape(x).sizes();
  for (auto* v : {&w.in, &w.kernel, &w.strides, &w.dilations}) v->insert(v->begin(), 1);
  for (auto* v : {&w.begin, &w.end}) v->insert(v->begin(), 0);
  return c.g.reshape_(x, {d[0], d[1], 1, d[2]});
}
NodeId from_2d(Ctx& c, NodeId y) {
  std::vector<int64_t> d = c.g.shape(y).sizes();
  return c.g.reshape_(y, {d[0], d[1], d[3]});
}

void conv(Ctx& c) {
  NodeId x = c.in(0), wt = c.in(1);
  std::vector<int64_t> xd = c.sizes(0), wd = c.sizes(1);
  if (xd.size() < 3 || xd.size() > 5 || wd.size() != xd.size())
    c.unsupported(rlx::detail::cat("Conv of ", ir::short_str(c.shape(0)), " by ",
                                   ir::short_str(c.shape(1)), " (rlx maps 1-d, 2-d and 3-d)"));
  std::vector<int64_t> in(xd.begin() + 2, xd.end());
  std::vector<int64_t> kernel =
      c.attr_ints("kernel_shape", std::vector<int64_t>(wd.begin() + 2, wd.end()));
  Window w = window(c, in, kernel, false);
  int64_t groups = c.attr_i("group", 1);
  bool one_d = in.size() == 1;
  if (one_d) {
    x = as_2d(c, x, w);
    wt = c.g.reshape_(wt, {wd[0], wd[1], 1, wd[2]});
  }
  if (!w.symmetric()) {
    x = pad_spatial(c, x, w, 0);
    w.begin.assign(w.rank(), 0), w.end = w.begin;
  }
  NodeId y;
  if (w.rank() == 2) {
    y = c.g.conv2d(x, wt, {w.kernel[0], w.kernel[1]}, {w.strides[0], w.strides[1]},
                   {w.begin[0], w.begin[1]}, {w.dilations[0], w.dilations[1]}, groups);
  } else {
    y = c.g.conv3d(x, wt, {w.strides[0], w.strides[1], w.strides[2]},
                   {w.begin[0], w.begin[1], w.begin[2]},
                   {w.dilations[0], w.dilations[1], w.dilations[2]}, groups);
  }
  if (one_d) y = from_2d(c, y);
  if (c.has(2)) y = op2(c, OpKind::Add, y, per_channel(c, c.in(2), int64_t(xd.size())));
  c.out(0, y);
}

void conv_transpose(Ctx& c) {
  NodeId x = c.in(0), wt = c.in(1);
  std::vector<int64_t> xd = c.sizes(0), wd = c.sizes(1);
  if (xd.size() < 3 || xd.size() > 5 || wd.size() != xd.size())
    c.unsupported("ConvTranspose of rank " + std::to_string(xd.size()));
  std::size_t n = xd.size() - 2;
  std::vector<int64_t> kernel =
      c.attr_ints("kernel_shape", std::vector<int64_t>(wd.begin() + 2, wd.end()));
  std::vector<int64_t> strides = c.attr_ints("strides", std::vector<int64_t>(n, 1));
  std::vector<int64_t> dil = c.attr_ints("dilations", std::vector<int64_t>(n, 1));
  std::vector<int64_t> pads = c.attr_ints("pads", std::vector<int64_t>(2 * n, 0));
  std::vector<int64_t> out_pad = c.attr_ints("output_padding", std::vector<int64_t>(n, 0));
  std::vector<int64_t> out_shape = c.attr_ints("output_shape");
  std::string auto_pad = c.attr_s("auto_pad", "NOTSET");
  int64_t groups = c.attr_i("group", 1);
  if (kernel.size() != n || strides.size() != n || dil.size() != n || pads.size() != 2 * n ||
      out_pad.size() != n || (!out_shape.empty() && out_shape.size() != n))
    fail(ErrorKind::Shape, "attributes must match the spatial rank ", n);
  // The full result (no padding), then the window [begin, begin + out) of it, zeros past its end.
  std::vector<int64_t> full(n), begin(n), out(n);
  for (std::size_t k = 0; k < n; ++k) {
    int64_t in = xd[k + 2];
    full[k] = strides[k] * (in - 1) + (kernel[k] - 1) * dil[k] + 1;
    if (!out_shape.empty() || auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      out[k] = out_shape.empty() ? in * strides[k] : out_shape[k];
      int64_t total = full[k] + out_pad[k] - out[k];
      begin[k] = auto_pad == "SAME_LOWER" ? total - total / 2 : total / 2;
      if (out_shape.empty() && auto_pad == "SAME_UPPER") begin[k] = total / 2;
      if (!out_shape.empty() && auto_pad != "SAME_LOWER") begin[k] = total / 2;
    } else {
      if (auto_pad != "NOTSET" && auto_pad != "VALID") c.unsupported("auto_pad '" + auto_pad + "'");
      bool valid = auto_pad == "VALID";
      begin[k] = valid ? 0 : pads[k];
      out[k] = full[k] + out_pad[k] - (valid ? 0 : pads[k] + pads[k + n]);
    }
    if (begin[k] < 0 || out[k] < 0) c.unsupported("ConvTranspose padding that grows the output");
  }
  NodeId y;
  if (n == 1) {
    y = c.g.conv_transpose1d(x, wt, kernel[0], strides[0], 0, dil[0], 0, groups);
  } else if (n == 2) {
    y = c.g.conv_transpose2d(x, wt, {kernel[0], kernel[1]}, {strides[0], strides[1]}, {0, 0},
                             {dil[0], dil[1]}, {0, 0}, groups);
  } else {
    y = c.g.conv_transpose3d(x, wt, {strides[0], strides[1], strides[2]}, {0, 0, 0},
                             {dil[0], dil[1], dil[2]}, {0, 0, 0}, groups);
  }
  for (std::size_t k = 0; k < n; ++k) {
    int64_t a = int64_t(k + 2);
    int64_t have = std::min(out[k], full[k] - begin[k]);
    if (begin[k] != 0 || have != full[k]) y = c.g.narrow_(y, a, begin[k], have);
    if (have < out[k]) {
      std::vector<int64_t> p(2 * (n + 2), 0);
      p[std::size_t(2 * a + 1)] = out[k] - have;
      y = c.g.pad(y, p);
    }
  }
  if (c.has(2)) y = op2(c, OpKind::Add, y, per_channel(c, c.in(2), int64_t(xd.size())));
  c.out(0, y);
}

void pool(Ctx& c, bool is_max) {
  NodeId x = c.in(0);
  std::vector<int64_t> xd = c.sizes(0);
  if (xd.size() != 3 && xd.size() != 4)
    c.unsupported(rlx::detail::cat(c.node.op_type, " of ", ir::short_str(c.shape(0)),
                                   " (rlx pools 1-d and 2-d)"));
  std::vector<int64_t> in(xd.begin() + 2, xd.end());
  Window w = window(c, in, c.attr_ints("kernel_shape"), c.attr_i("ceil_mode", 0) != 0);
  if (std::any_of(w.dilations.begin(), w.dilations.end(), [](int64_t d) { return d != 1; }))
    c.unsupported("pooling with dilations");
  if (is_max && c.attr_i("storage_order", 0) != 0) c.unsupported("storage_order 1");
  if (is_max && c.wants(1)) c.unsupported("the Indices output of MaxPool");
  bool include_pad = !is_max && c.attr_i("count_include_pad", 0) != 0;
  bool one_d = in.size() == 1;
  if (one_d) x = as_2d(c, x, w);
  DType dt = c.dtype(0);
  double low = ir::is_float(dt)    ? -ir::kInf
               : ir::is_signed(dt) ? -std::ldexp(1.0, int(8 * ir::size_bytes(dt)) - 1)
                                   : 0.0;
  auto run = [&](NodeId v) {
    ir::Ints2 k{w.kernel[0], w.kernel[1]}, s{w.strides[0], w.strides[1]};
    return is_max ? c.g.max_pool2d(v, k, s, {0, 0}) : c.g.avg_pool2d(v, k, s, {0, 0});
  };
  NodeId y;
  if (!w.padded()) {
    y = run(x);
  } else if (is_max) {
    y = run(pad_spatial(c, x, w, low));
  } else {
    y = run(pad_spatial(c, x, w, 0));
    if (!include_pad) {
      // divide by the share of each window that lies inside x
      std::vector<int64_t> d = c.g.shape(x).sizes();
      d[0] = d[1] = 1;
      NodeId ones = c.g.expand(c.scalar(1, dt), d);
      y = op2(c, OpKind::Div, y, run(pad_spatial(c, ones, w, 0)));
    }
  }
  c.out(0, one_d ? from_2d(c, y) : y);
}
void max_pool(Ctx& c) { pool(c, true); }
void avg_pool(Ctx& c) { pool(c, false); }

template <OpKind K> void global_pool(Ctx& c) {
  int64_t r = c.rank(0);
  std::vector<int64_t> axes;
  for (int64_t k = 2; k < r; ++k) axes.push_back(k);
  c.out(0, reduce(c, K, c.in(0), axes, true));
}

/// (x - mean) * rsqrt(var + eps) over `axes`, the mean and the inverse deviation.
struct Normalized {
  NodeId y, mean, inv;
};
Normalized normalize(Ctx& c, NodeId x, const std::vector<int64_t>& axes, double eps) {
  NodeId m = reduce(c, OpKind::ReduceMean, x, axes, true);
  NodeId d = op2(c, OpKind::Sub, x, m);
  NodeId v = reduce(c, OpKind::ReduceMean, op2(c, OpKind::Mul, d, d), axes, true);
  NodeId inv = op1(c, OpKind::Rsqrt, op2(c, OpKind::Add, v, like(c, v, eps)));
  return {op2(c, OpKind::Mul, d, inv), m, inv};
}

void batch_norm(Ctx& c) {
  c.ignore("momentum");
  if (c.opset < 9) c.ignore("spatial");
  if (c.opset < 7) c.ignore("is_test"), c.ignore("consumed_inputs");
  if (c.attr_i("training_mode", 0) != 0 || c.wants(1) || c.wants(2))
    c.unsupported("training-mode BatchNormalization (rlx imports inference graphs)");
  NodeId x = c.in(0);
  int64_t r = c.rank(0);
  double eps = c.attr_f("epsilon", 1e-5f);
  NodeId var = op2(c, OpKind::Add, per_channel(c, c.in(4), r), like(c, x, eps));
  NodeId y = op2(c, OpKind::Sub, x, per_channel(c, c.in(3), r));
  y = op2(c, OpKind::Mul, y, op1(c, OpKind::Rsqrt, var));
  y = op2(c, OpKind::Mul, y, per_channel(c, c.in(1), r));
  c.out(0, op2(c, OpKind::Add, y, per_channel(c, c.in(2), r)));
}

void instance_norm(Ctx& c) {
  NodeId x = c.in(0);
  int64_t r = c.rank(0);
  std::vector<int64_t> axes;
  for (int64_t k = 2; k < r; ++k) axes.push_back(k);
  Normalized n = normalize(c, x, axes, c.attr_f("epsilon", 1e-5f));
  NodeId y = op2(c, OpKind::Mul, n.y, per_channel(c, c.in(1), r));
  c.out(0, op2(c, OpKind::Add, y, per_channel(c, c.in(2), r)));
}

void layer_norm(Ctx& c) {
  NodeId x = c.in(0);
  int64_t r = c.rank(0);
  int64_t axis = c.axis(c.attr_i("axis", -1), r);
  float eps = c.attr_f("epsilon", 1e-5f);
  c.ignore("stash_type");
  if (axis == r - 1 && c.has(2) && !c.wants(1) && !c.wants(2))
    return c.out(0, c.g.ln(x, c.in(1), c.in(2), eps));
  std::vector<int64_t> axes;
  for (int64_t k = axis; k < r; ++k) axes.push_back(k);
  Normalized n = normalize(c, x, axes, eps);
  NodeId y = op2(c, OpKind::Mul, n.y, c.in(1));
  if (c.has(2)) y = op2(c, OpKind::Add, y, c.in(2));
  c.out(0, y);
  c.out(1, n.mean);
  c.out(2, n.inv);
}

/// x / (bias + alpha / size * sum of x^2 over `size` neighbouring channels)^beta: the channel
/// window sum is an average pool over [N, 1, C, rest] with the channels padded by zeros.
void lrn(Ctx& c) {
  NodeId x = c.in(0);
  std::vector<int64_t> d = c.sizes(0);
  if (d.size() < 3) fail(ErrorKind::Shape, "LRN needs rank >= 3");
  int64_t size = c.attr_i("size", 0);
  if (size <= 0) fail(ErrorKind::Value, "size must be positive");
  double alpha = c.attr_f("alpha", 1e-4f), beta = c.attr_f("beta", 0.75f),
         bias = c.attr_f("bias", 1.0f);
  int64_t rest = 1;
  for (std::size_t k = 2; k < d.size(); ++k) rest *= d[k];
  NodeId sq = c.g.reshape_(op2(c, OpKind::Mul, x, x), {d[0], 1, d[1], rest});
  sq = c.g.pad(sq, {0, 0, 0, 0, (size - 1) / 2, size / 2, 0, 0});
  NodeId sum =
      op2(c, OpKind::Mul, c.g.avg_pool2d(sq, {size, 1}, {1, 1}, {0, 0}), like(c, x, double(size)));
  NodeId den = op2(c, OpKind::Add, like(c, x, bias),
                   op2(c, OpKind::Mul, c.g.reshape_(sum, d), like(c, x, alpha / double(size))));
  c.out(0, op2(c, OpKind::Div, x, op2(c, OpKind::Pow, den, like(c, x, beta))));
}

/// Scale or zero point `v` shaped to broadcast along `axis` of a rank-r tensor (a scalar or a
/// one-element tensor broadcasts as is).
NodeId along(Ctx& c, NodeId v, int64_t axis, int64_t r) {
  const ir::Shape& s = c.g.shape(v);
  if (s.rank() == 0 || (s.rank() == 1 && s.dims()[0].is_static() && s.dims()[0].size() == 1))
    return v;
  axis = c.axis(axis, r);
  std::vector<int64_t> d(static_cast<std::size_t>(r), 1);
  d[std::size_t(axis)] = -1;
  return c.g.reshape_(v, d);
}

/// round(x / scale) + zero_point, saturated to `dt` (round half to even).
NodeId quantize(Ctx& c, NodeId x, NodeId scale, std::optional<NodeId> zp, DType dt) {
  NodeId q = op1(c, OpKind::Round, op2(c, OpKind::Div, x, scale));
  if (zp) q = op2(c, OpKind::Add, q, c.g.cast(*zp, c.g.shape(q).dtype()));
  double lo = dt == DType::U8 ? 0 : -128, hi = dt == DType::U8 ? 255 : 127;
  return c.g.cast(c.g.clamp(q, lo, hi), dt);
}

void quantize_linear(Ctx& c) {
  NodeId x = c.in(0);
  int64_t r = c.rank(0);
  int64_t axis = c.attr_i("axis", 1);
  DType dt = c.has(2) ? c.dtype(2) : DType::U8;
  if (dt != DType::U8 && dt != DType::I8)
    c.unsupported("quantizing to " + std::string(ir::dtype_name(dt)));
  std::optional<NodeId> zp;
  if (c.has(2)) zp = along(c, c.in(2), axis, r);
  c.out(0, quantize(c, x, along(c, c.in(1), axis, r), zp, dt));
}

void dequantize_linear(Ctx& c) {
  NodeId x = c.in(0);
  int64_t r = c.rank(0);
  int64_t axis = c.attr_i("axis", 1);
  NodeId scale = along(c, c.in(1), axis, r);
  DType ft = c.g.shape(scale).dtype();
  NodeId v = c.g.cast(x, ft);
  if (c.has(2)) v = op2(c, OpKind::Sub, v, c.g.cast(along(c, c.in(2), axis, r), ft));
  c.out(0, op2(c, OpKind::Mul, v, scale));
}

void dynamic_quantize_linear(Ctx& c) {
  NodeId x = c.in(0);
  int64_t r = c.rank(0);
  std::vector<int64_t> all(static_cast<std::size_t>(r));
  std::iota(all.begin(), all.end(), int64_t(0));
  NodeId zero = like(c, x, 0);
  NodeId hi = op2(c, OpKind::Max, reduce(c, OpKind::ReduceMax, x, all, false), zero);
  NodeId lo = op2(c, OpKind::Min, reduce(c, OpKind::ReduceMin, x, all, false), zero);
  NodeId scale = op2(c, OpKind::Div, op2(c, OpKind::Sub, hi, lo), like(c, x, 255));
  NodeId zp = quantize(c, op1(c, OpKind::Neg, lo), scale, std::nullopt, DType::U8);
  c.out(0, quantize(c, x, scale, zp, DType::U8));
  c.out(1, scale);
  c.out(2, zp);
}

// ---- Integer contractions on the Quant family's q_matmul and q_conv2d. Their scales and zero
// points are attributes, so they must be known at load time (initializers, as quantizers write
// them); MatMulInteger with run-time zero points (DynamicQuantizeLinear's) computes in f64
// instead, exact at these magnitudes. The requantization multiplier is computed in f32, as
// ONNX's reference: a_scale * w_scale / y_scale.

/// A load-time scale or zero-point operand (a scalar or one value per channel) as doubles.
std::vector<double> load_time(Ctx& c, std::size_t i, std::string_view role) {
  return c.need(i, role).to_f64();
}

/// The one value of a per-tensor parameter, or Unsupported naming it.
double per_tensor(Ctx& c, const std::vector<double>& v, std::string_view role) {
  if (v.size() != 1) c.unsupported(std::string(role) + " with more than one value");
  return v[0];
}

/// x_scale * w_scale[j] / y_scale for each of w's scales, in f32.
std::vector<float> multipliers(double xs, const std::vector<double>& ws, double ys) {
  std::vector<float> m;
  for (double w : ws) m.push_back(float(xs) * float(w) / float(ys));
  return m;
}

ir::Ints as_ints(const std::vector<double>& v) { return ir::Ints(v.begin(), v.end()); }

/// QLinearMatMul with a batched b [.., K, N] (numpy's matmul broadcasting of the batch dims):
/// q_matmul takes one weight matrix, so each matrix of the broadcast batch is one q_matmul of
/// a's matching [M, K] slice, and the results are stacked back to [.., M, N]. Every entry runs
/// the 2-D node's integer arithmetic, so the bits are those of the unbatched import.
NodeId batched_q_matmul(Ctx& c, const ir::QMatMulAttrs& attrs) {
  constexpr int64_t kMaxMatrices = 4096; // the nodes the unrolled batch adds to the graph
  const std::vector<int64_t> ad = c.sizes(0), bd = c.sizes(3);
  if (ad.size() < 2) c.unsupported("QLinearMatMul of a 1-D a by a batched b");
  const int64_t m = ad[ad.size() - 2], k = ad.back(), kb = bd[bd.size() - 2], n = bd.back();
  std::vector<int64_t> ab(ad.begin(), ad.end() - 2), bb(bd.begin(), bd.end() - 2);
  const std::size_t r = std::max(ab.size(), bb.size());
  ab.insert(ab.begin(), r - ab.size(), 1);
  bb.insert(bb.begin(), r - bb.size(), 1);
  std::vector<int64_t> batch(r);
  int64_t total = 1, a_count = 1, b_count = 1;
  for (std::size_t i = 0; i < r; ++i) {
    if (ab[i] != bb[i] && ab[i] != 1 && bb[i] != 1)
      fail(ErrorKind::Shape, "QLinearMatMul: the batch dims of a ", ir::short_str(c.shape(0)),
           " and b ", ir::short_str(c.shape(3)), " do not broadcast");
    batch[i] = ab[i] == 1 ? bb[i] : ab[i];
    total *= batch[i];
    a_count *= ab[i];
    b_count *= bb[i];
  }
  if (total < 1 || total > kMaxMatrices)
    c.unsupported(rlx::detail::cat("QLinearMatMul over ", total,
                                   " batched matrices (rlx maps 1 to ", kMaxMatrices,
                                   ", one q_matmul each)"));
  const NodeId a3 = c.g.reshape_(c.in(0), {a_count, m, k});
  const NodeId b3 = c.g.reshape_(c.in(3), {b_count, kb, n});
  std::vector<NodeId> parts;
  for (int64_t t = 0; t < total; ++t) {
    // t's index in the broadcast batch, then the matrix of a and of b it reads.
    int64_t rest = t, ia = 0, ib = 0, sa = 1, sb = 1;
    for (std::size_t i = r; i-- > 0;) {
      const int64_t idx = rest % batch[i];
      rest /= batch[i];
      ia += (ab[i] == 1 ? 0 : idx) * sa;
      ib += (bb[i] == 1 ? 0 : idx) * sb;
      sa *= ab[i];
      sb *= bb[i];
    }
    const NodeId x = c.g.reshape_(c.g.narrow_(a3, 0, ia, 1), {m, k});
    const NodeId w = c.g.reshape_(c.g.narrow_(b3, 0, ib, 1), {kb, n});
    parts.push_back(c.g.reshape_(c.g.add_inferred(Op(OpKind::QMatMul, attrs), {x, w}), {1, m, n}));
  }
  batch.push_back(m);
  batch.push_back(n);
  return c.g.reshape_(c.g.concat_(std::move(parts), 0), batch);
}

void qlinear_matmul(Ctx& c) {
  if (c.rank(3) < 2) c.unsupported("QLinearMatMul with a 1-D b");
  double xs = per_tensor(c, load_time(c, 1, "a_scale"), "a_scale");
  double xz = per_tensor(c, load_time(c, 2, "a_zero_point"), "a_zero_point");
  double ys = per_tensor(c, load_time(c, 6, "y_scale"), "y_scale");
  double yz = per_tensor(c, load_time(c, 7, "y_zero_point"), "y_zero_point");
  ir::QMatMulAttrs a{int64_t(xz), as_ints(load_time(c, 5, "b_zero_point")), int64_t(yz),
                     multipliers(xs, load_time(c, 4, "b_scale"), ys),
                     c.need(7, "y_zero_point").dtype()};
  if (c.rank(3) > 2) return c.out(0, batched_q_matmul(c, a));
  c.out(0, c.g.add_inferred(Op(OpKind::QMatMul, std::move(a)), {c.in(0), c.in(3)}));
}

void matmul_integer(Ctx& c) {
  NodeId a = c.in(0), b = c.in(1);
  std::optional<Buffer> az = c.has(2) ? c.value(2) : std::optional<Buffer>(Buffer());
  std::optional<Buffer> bz = c.has(3) ? c.value(3) : std::optional<Buffer>(Buffer());
  auto zps = [](const std::optional<Buffer>& z) {
    return z->numel() == 0 ? std::vector<double>{0} : z->to_f64();
  };
  if (az && bz && zps(az).size() == 1 && c.rank(1) == 2) {
    ir::QMatMulAttrs at{int64_t(zps(az)[0]), as_ints(zps(bz)), 0, {1.0f}, DType::I32};
    return c.out(0, c.g.add_inferred(Op(OpKind::QMatMul, std::move(at)), {a, b}));
  }
  // Run-time (or per-row) zero points: (a - a_zp) @ (b - b_zp) in f64, then i32.
  NodeId af = c.g.cast(a, DType::F64), bf = c.g.cast(b, DType::F64);
  if (c.has(2)) {
    NodeId z = c.g.cast(c.in(2), DType::F64);
    if (c.g.shape(z).rank() == 1 && c.rank(0) >= 2) z = c.g.reshape_(z, {-1, 1}); // per row
    af = op2(c, OpKind::Sub, af, z);
  }
  if (c.has(3)) bf = op2(c, OpKind::Sub, bf, c.g.cast(c.in(3), DType::F64));
  c.out(0, c.g.cast(c.g.mm(af, bf), DType::I32));
}

/// QLinearConv (quantized = true: x, x_scale, x_zp, w, w_scale, w_zp, y_scale, y_zp, [B]) or
/// ConvInteger (x, w, [x_zp], [w_zp]) on q_conv2d; asymmetric pads pad x with its zero point.
void conv_integer(Ctx& c, bool quantized) {
  std::size_t wi = quantized ? 3 : 1;
  std::vector<int64_t> xd = c.sizes(0), wd = c.sizes(wi);
  if (xd.size() != 4 || wd.size() != 4)
    c.unsupported(rlx::detail::cat(c.node.op_type, " of ", ir::short_str(c.shape(0)), " by ",
                                   ir::short_str(c.shape(wi)), " (rlx maps 2-d)"));
  std::vector<int64_t> kernel =
      c.attr_ints("kernel_shape", std::vector<int64_t>(wd.begin() + 2, wd.end()));
  Window w = window(c, {xd[2], xd[3]}, kernel, false);
  int64_t groups = c.attr_i("group", 1);
  ir::QConv2dAttrs a;
  std::vector<NodeId> ins;
  if (quantized) {
    double xs = per_tensor(c, load_time(c, 1, "x_scale"), "x_scale");
    a.x_zp = int64_t(per_tensor(c, load_time(c, 2, "x_zero_point"), "x_zero_point"));
    a.w_zp = as_ints(load_time(c, 5, "w_zero_point"));
    double ys = per_tensor(c, load_time(c, 6, "y_scale"), "y_scale");
    a.out_zp = int64_t(per_tensor(c, load_time(c, 7, "y_zero_point"), "y_zero_point"));
    a.mult = multipliers(xs, load_time(c, 4, "w_scale"), ys);
    a.dtype = c.need(7, "y_zero_point").dtype();
  } else {
    if (c.has(2)) a.x_zp = int64_t(per_tensor(c, load_time(c, 2, "x_zero_point"), "x_zero_point"));
    if (c.has(3)) a.w_zp = as_ints(load_time(c, 3, "w_zero_point"));
    a.dtype = DType::I32;
  }
  NodeId x = c.in(0);
  if (!w.symmetric()) {
    x = pad_spatial(c, x, w, double(a.x_zp));
    w.begin.assign(w.rank(), 0), w.end = w.begin;
  }
  a.kernel_size = {w.kernel[0], w.kernel[1]};
  a.stride = {w.strides[0], w.strides[1]};
  a.padding = {w.begin[0], w.begin[1]};
  a.dilation = {w.dilations[0], w.dilations[1]};
  a.groups = groups;
  ins = {x, c.in(wi)};
  if (quantized && c.has(8)) ins.push_back(c.in(8));
  c.out(0, c.g.add_inferred(Op(OpKind::QConv2d, std::move(a)), ins));
}

void qlinear_conv(Ctx& c) { conv_integer(c, true); }
void conv_integer_rule(Ctx& c) { conv_integer(c, false); }

} // namespace

void add_nn_rules(Rules& r) {
  r["MatMul"] = {matmul, 1};
  r["Gemm"] = {gemm, 6};
  r["Conv"] = {conv, 1};
  r["ConvTranspose"] = {conv_transpose, 1};
  r["MaxPool"] = {max_pool, 1};
  r["AveragePool"] = {avg_pool, 1};
  r["GlobalAveragePool"] = {global_pool<OpKind::ReduceMean>, 1};
  r["GlobalMaxPool"] = {global_pool<OpKind::ReduceMax>, 1};
  r["BatchNormalization"] = {batch_norm, 6};
  r["InstanceNormalization"] = {instance_norm, 6};
  r["LayerNormalization"] = {layer_norm, 17};
  r["LRN"] = {lrn, 1};
  r["QuantizeLinear"] = {quantize_linear, 10};
  r["DequantizeLinear"] = {dequantize_linear, 10};
  r["DynamicQuantizeLinear"] = {dynamic_quantize_linear, 11};
  // Operands read at load time: the scales and zero points.
  r["QLinearMatMul"] = {qlinear_matmul, 10, 0b11110110};
  r["QLinearConv"] = {qlinear_conv, 10, 0b11110110};
  r["MatMulInteger"] = {matmul_integer, 10};
  r["ConvInteger"] = {conv_integer_rule, 10, 0b1100};
}

} // namespace rlx::onnx::detail
