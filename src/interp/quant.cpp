// src/interp/quant.cpp -- the quantization kernels (the specification of ops.def's Quant family):
// quantize, dequantize, fake_quantize, q_matmul, q_conv2d, as plain loops. Rounding is half to
// even (std::nearbyint in the default rounding mode), every integer result saturates to its
// dtype, and the integer kernels accumulate in i32 with two's-complement wrap-around like the
// hardware they stand for. The JIT runs q_matmul on its int8 GEMM and must give these bits.
#include "kernels.hpp"

#include "rlx/ir/infer.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <tuple>
#include <vector>

namespace rlx::interp::detail {

using ir::DType;

namespace {

/// The operands must give the node's shape (the interpreter runs graphs as given).
void check_operands(const ir::Node& n, Operands in) {
  std::vector<ir::Shape> shapes;
  for (const Buffer* b : in) shapes.push_back(b->shape());
  if (std::optional<ir::Shape> s = ir::infer_shape(n.op, shapes); !s || *s != n.shape)
    fail(ErrorKind::Runtime, n.op.name(), ": operands do not give the node's shape ",
         ir::short_str(n.shape));
}

std::pair<double, double> q_range(DType t) {
  if (t == DType::I8) return {-128, 127};
  if (t == DType::U8) return {0, 255};
  return {double(std::numeric_limits<int32_t>::min()), double(std::numeric_limits<int32_t>::max())};
}

/// round_half_even(x / scale) in x's precision (f32 unless x is f64), as ONNX QuantizeLinear;
/// NaN gives NaN.
double scaled_round(const Buffer& x, int64_t i, float scale) {
  if (x.dtype() == DType::F64) return std::nearbyint(x.get_f64(i) / double(scale));
  float v = float(x.get_f64(i)); // exact: f32, f16 and bf16 values are f32 values
  return std::nearbyint(double(v / scale));
}

/// The channel (index along axis) of flat element i, and that channel's scale and zero point.
struct Channel {
  int64_t inner = 1, len = 1; // i / inner % len is the channel; per tensor: len 1
  int64_t of(int64_t i) const { return len == 1 ? 0 : i / inner % len; }
};
Channel channel_of(const ir::Shape& s, const std::optional<int64_t>& axis) {
  if (!axis) return {};
  AxisSplit sp = split_at(s, norm_axis(*axis, s.rank()));
  return {sp.inner, sp.len};
}

/// quantize (dequant false) or fake_quantize (dequant true) of every element.
Buffer quantize_kernel(const ir::Node& n, Operands in, bool dequant) {
  check_operands(n, in);
  const auto& a = n.op.attrs<ir::QuantizeAttrs>();
  const Buffer& x = *in[0];
  auto [lo, hi] = q_range(a.dtype);
  Channel ch = channel_of(x.shape(), a.axis);
  Buffer out = Buffer::uninitialized(n.shape);
  for (int64_t i = 0; i < x.numel(); ++i) {
    int64_t c = ch.of(i);
    double zp = double(a.zero_points[std::size_t(c)]);
    double r = scaled_round(x, i, a.scales[std::size_t(c)]);
    // NaN has no integer: it quantizes to the zero point (a real zero), as onnxruntime does.
    double q = std::isnan(r) ? zp : std::clamp(r + zp, lo, hi);
    if (dequant)
      out.set_f64(i, (q - zp) * double(a.scales[std::size_t(c)]));
    else
      out.set_i64(i, int64_t(q));
  }
  return out;
}

/// An i32 accumulator: int64 arithmetic wrapped to 32 bits.
int64_t wrap32(int64_t v) { return int64_t(int32_t(uint32_t(uint64_t(v)))); }

/// The requantized value of accumulator acc for output channel o.
template <class A> struct Requant {
  const A& a;
  double lo, hi;
  explicit Requant(const A& attrs) : a(attrs) { std::tie(lo, hi) = q_range(attrs.dtype); }
  int64_t w_zp(int64_t o) const { return a.w_zp.size() == 1 ? a.w_zp[0] : a.w_zp[std::size_t(o)]; }
  int64_t operator()(int64_t acc, int64_t o) const {
    if (a.dtype == DType::I32) return acc;
    double m = double(a.mult.size() == 1 ? a.mult[0] : a.mult[std::size_t(o)]);
    return int64_t(std::clamp(std::nearbyint(double(acc) * m) + double(a.out_zp), lo, hi));
  }
};

} // namespace

RLX_KERNEL(Quantize) { return quantize_kernel(n, in, false); }
RLX_KERNEL(FakeQuantize) { return quantize_kernel(n, in, true); }

RLX_KERNEL(Dequantize) {
  check_operands(n, in);
  const auto& a = n.op.attrs<ir::DequantizeAttrs>();
  const Buffer& x = *in[0];
  Channel ch = channel_of(x.shape(), a.axis);
  Buffer out = Buffer::uninitialized(n.shape);
  for (int64_t i = 0; i < x.numel(); ++i) {
    std::size_t c = std::size_t(ch.of(i));
    out.set_f64(i, double(x.get_i64(i) - a.zero_points[c]) * double(a.scales[c]));
  }
  return out;
}

RLX_KERNEL(QMatMul) {
  check_operands(n, in);
  const auto& a = n.op.attrs<ir::QMatMulAttrs>();
  const Buffer &x = *in[0], &w = *in[1];
  const auto& wd = w.shape().dims();
  const int64_t k = wd[0].size(), nn = wd[1].size(), rows = k == 0 ? 0 : x.numel() / k;
  Requant<ir::QMatMulAttrs> rq(a);
  std::vector<int64_t> xv = x.to_i64(), wv = w.to_i64();
  std::vector<int64_t> bias = in.size() == 3 ? in[2]->to_i64() : std::vector<int64_t>(nn, 0);
  Buffer out = Buffer::uninitialized(n.shape);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < nn; ++j) {
      int64_t acc = 0, wzp = rq.w_zp(j);
      for (int64_t p = 0; p < k; ++p) acc += (xv[r * k + p] - a.x_zp) * (wv[p * nn + j] - wzp);
      acc = wrap32(wrap32(acc) + bias[std::size_t(j)]);
      out.set_i64(r * nn + j, rq(acc, j));
    }
  return out;
}

RLX_KERNEL(QConv2d) {
  check_operands(n, in);
  const auto& a = n.op.attrs<ir::QConv2dAttrs>();
  const Buffer &x = *in[0], &w = *in[1];
  const auto &xd = x.shape().dims(), &od = n.shape.dims();
  const int64_t batch = xd[0].size(), c = xd[1].size(), h = xd[2].size(), wi = xd[3].size();
  const int64_t o = od[1].size(), ho = od[2].size(), wo = od[3].size();
  const int64_t kh = a.kernel_size[0], kw = a.kernel_size[1];
  const int64_t cg = c / a.groups, og = o / a.groups;
  Requant<ir::QConv2dAttrs> rq(a);
  std::vector<int64_t> xv = x.to_i64(), wv = w.to_i64();
  std::vector<int64_t> bias = in.size() == 3 ? in[2]->to_i64() : std::vector<int64_t>(o, 0);
  Buffer out = Buffer::uninitialized(n.shape);
  int64_t idx = 0;
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t oc = 0; oc < o; ++oc) {
      const int64_t g = oc / og, wzp = rq.w_zp(oc);
      for (int64_t y = 0; y < ho; ++y)
        for (int64_t xo = 0; xo < wo; ++xo) {
          int64_t acc = 0;
          for (int64_t ci = 0; ci < cg; ++ci)
            for (int64_t i = 0; i < kh; ++i) {
              int64_t iy = y * a.stride[0] - a.padding[0] + i * a.dilation[0];
              if (iy < 0 || iy >= h) continue; // padding holds x_zp: contributes 0
              for (int64_t j = 0; j < kw; ++j) {
                int64_t ix = xo * a.stride[1] - a.padding[1] + j * a.dilation[1];
                if (ix < 0 || ix >= wi) continue;
                int64_t xval = xv[((b * c + g * cg + ci) * h + iy) * wi + ix];
                int64_t wval = wv[((oc * cg + ci) * kh + i) * kw + j];
                acc += (xval - a.x_zp) * (wval - wzp);
              }
            }
          acc = wrap32(wrap32(acc) + bias[std::size_t(oc)]);
          out.set_i64(idx++, rq(acc, oc));
        }
    }
  return out;
}

} // namespace rlx::interp::detail
