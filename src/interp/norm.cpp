// src/interp/norm.cpp -- normalisation kernels: layer/rms norm, layer_norm2d, group_norm,
// batch_norm_inference and the fused residual norms. Statistics are two-pass in double (mean,
// then the biased variance of the centred values), so a large common offset does not cancel;
// each output is rounded once. All operands must be floating point.
#include "kernels.hpp"

#include <cmath>
#include <string_view>
#include <vector>

namespace rlx::interp::detail {

using ir::OpKind;

namespace {

struct Moments {
  double mean = 0, var = 0;
};

/// Mean and biased variance of x[base + l * stride] for l < count (two passes).
Moments moments(const std::vector<double>& x, int64_t base, int64_t stride, int64_t count) {
  Moments m;
  if (count == 0) return m;
  double sum = 0;
  for (int64_t l = 0; l < count; ++l) sum += x[std::size_t(base + l * stride)];
  m.mean = sum / double(count);
  double ss = 0;
  for (int64_t l = 0; l < count; ++l) {
    double d = x[std::size_t(base + l * stride)] - m.mean;
    ss += d * d;
  }
  m.var = ss / double(count);
  return m;
}

/// Mean of the squares of x[base + l * stride] for l < count.
double mean_square(const std::vector<double>& x, int64_t base, int64_t stride, int64_t count) {
  if (count == 0) return 0;
  double ss = 0;
  for (int64_t l = 0; l < count; ++l) {
    double v = x[std::size_t(base + l * stride)];
    ss += v * v;
  }
  return ss / double(count);
}

void check_operands(const ir::Node& n, Operands in, std::size_t count) {
  if (in.size() != count)
    fail(ErrorKind::Runtime, n.op.name(), ": takes ", count, " operands, got ", in.size());
  if (!ir::is_float(n.shape.dtype()))
    fail(ErrorKind::Type, n.op.name(), ": needs floating-point operands, got ",
         ir::short_str(n.shape));
  for (const Buffer* b : in)
    if (!ir::is_float(b->dtype()))
      fail(ErrorKind::Type, n.op.name(), ": needs floating-point operands, got ",
           ir::short_str(b->shape()));
  if (in[0]->shape().sizes() != n.shape.sizes())
    fail(ErrorKind::Shape, n.op.name(), ": input ", ir::short_str(in[0]->shape()),
         " does not match the output ", ir::short_str(n.shape));
}

/// A per-feature operand (gamma, beta, running statistics): any shape with `len` elements.
void check_vector(const ir::Node& n, const Buffer& v, int64_t len, std::string_view what) {
  if (v.numel() != len)
    fail(ErrorKind::Shape, n.op.name(), ": ", what, " must have ", len, " elements, got ",
         ir::short_str(v.shape()));
}

/// (x - mean) / sqrt(var + eps) * gamma + beta (or x / sqrt(mean(x^2) + eps) * gamma + beta)
/// over `axis` of the node's shape, for every position of the other axes.
Buffer normalize_axis(const ir::Node& n, const std::vector<double>& x, int64_t axis, bool rms,
                      double eps, const Buffer& gamma, const Buffer& beta) {
  AxisSplit s = split_at(n.shape, axis);
  check_vector(n, gamma, s.len, "gamma");
  check_vector(n, beta, s.len, "beta");
  Buffer out(n.shape);
  for (int64_t o = 0; o < s.outer; ++o)
    for (int64_t i = 0; i < s.inner; ++i) {
      int64_t base = o * s.len * s.inner + i;
      double center = 0, denom;
      if (rms) {
        denom = std::sqrt(mean_square(x, base, s.inner, s.len) + eps);
      } else {
        Moments m = moments(x, base, s.inner, s.len);
        center = m.mean;
        denom = std::sqrt(m.var + eps);
      }
      for (int64_t l = 0; l < s.len; ++l) {
        int64_t idx = base + l * s.inner;
        double y = (x[std::size_t(idx)] - center) / denom;
        out.set_f64(idx, y * gamma.get_f64(l) + beta.get_f64(l));
      }
    }
  return out;
}

Buffer batch_norm(const ir::Node& n, Operands in) {
  check_operands(n, in, 5);
  if (n.shape.rank() < 2)
    fail(ErrorKind::Shape, n.op.name(), ": expects [N, C, ...], got ", ir::short_str(n.shape));
  double eps = n.op.attrs<ir::EpsAttrs>().eps;
  const Buffer &x = *in[0], &gamma = *in[1], &beta = *in[2], &mean = *in[3], &var = *in[4];
  AxisSplit s = split_at(n.shape, 1);
  check_vector(n, gamma, s.len, "gamma");
  check_vector(n, beta, s.len, "beta");
  check_vector(n, mean, s.len, "running mean");
  check_vector(n, var, s.len, "running variance");
  Buffer out(n.shape);
  for (int64_t c = 0; c < s.len; ++c) {
    double m = mean.get_f64(c), denom = std::sqrt(var.get_f64(c) + eps);
    double g = gamma.get_f64(c), b = beta.get_f64(c);
    for (int64_t o = 0; o < s.outer; ++o)
      for (int64_t i = 0; i < s.inner; ++i) {
        int64_t idx = (o * s.len + c) * s.inner + i;
        out.set_f64(idx, (x.get_f64(idx) - m) / denom * g + b);
      }
  }
  return out;
}

Buffer group_norm(const ir::Node& n, Operands in) {
  check_operands(n, in, 3);
  const auto& a = n.op.attrs<ir::GroupNormAttrs>();
  if (n.shape.rank() < 2)
    fail(ErrorKind::Shape, n.op.name(), ": expects [N, C, ...], got ", ir::short_str(n.shape));
  AxisSplit s = split_at(n.shape, 1); // outer = N, len = C, inner = spatial
  if (a.num_groups < 1 || s.len % a.num_groups)
    fail(ErrorKind::Shape, n.op.name(), ": channels ", s.len, " do not divide into ", a.num_groups,
         " groups");
  const Buffer &gamma = *in[1], &beta = *in[2];
  check_vector(n, gamma, s.len, "gamma");
  check_vector(n, beta, s.len, "beta");
  std::vector<double> x = in[0]->to_f64();
  int64_t per_group = s.len / a.num_groups, block = per_group * s.inner;
  Buffer out(n.shape);
  for (int64_t o = 0; o < s.outer; ++o)
    for (int64_t g = 0; g < a.num_groups; ++g) {
      int64_t base = (o * s.len + g * per_group) * s.inner; // the group is contiguous
      Moments m = moments(x, base, 1, block);
      double denom = std::sqrt(m.var + double(a.eps));
      for (int64_t e = 0; e < block; ++e) {
        int64_t c = g * per_group + e / s.inner;
        double y = (x[std::size_t(base + e)] - m.mean) / denom;
        out.set_f64(base + e, y * gamma.get_f64(c) + beta.get_f64(c));
      }
    }
  return out;
}

/// norm(x + residual [+ bias]) over the last axis; the sum stays in double (no rounding).
Buffer fused_residual(const ir::Node& n, Operands in, bool rms) {
  const auto& a = n.op.attrs<ir::FusedResidualNormAttrs>();
  std::size_t count = a.has_bias ? 5 : 4;
  check_operands(n, in, count);
  if (n.shape.rank() == 0)
    fail(ErrorKind::Shape, n.op.name(), ": needs rank >= 1, got ", ir::short_str(n.shape));
  std::vector<int64_t> out_sizes = n.shape.sizes();
  std::vector<double> sum = in[0]->to_f64();
  for (std::size_t k = 1; k + 2 < count; ++k) {
    const Buffer& add = *in[k];
    if (!broadcasts_to(add.shape().sizes(), out_sizes))
      fail(ErrorKind::Shape, n.op.name(), ": ", k == 1 ? "residual " : "bias ",
           ir::short_str(add.shape()), " does not broadcast to ", ir::short_str(n.shape));
    BroadcastIndex bi(add.shape(), n.shape);
    for (std::size_t i = 0; i < sum.size(); ++i) sum[i] += add.get_f64(bi(int64_t(i)));
  }
  return normalize_axis(n, sum, int64_t(n.shape.rank()) - 1, rms, a.eps, *in[count - 2],
                        *in[count - 1]);
}

/// layer_norm / rms_norm over their axis.
Buffer axis_norm(const ir::Node& n, Operands in, bool rms) {
  check_operands(n, in, 3);
  const auto& a = n.op.attrs<ir::NormAttrs>();
  int64_t rank = int64_t(n.shape.rank());
  if (a.axis < -rank || a.axis >= rank)
    fail(ErrorKind::Shape, n.op.name(), ": axis ", a.axis, " is out of range for ",
         ir::short_str(n.shape));
  return normalize_axis(n, in[0]->to_f64(), norm_axis(a.axis, n.shape.rank()), rms, a.eps, *in[1],
                        *in[2]);
}

} // namespace

RLX_KERNEL(LayerNorm) { return axis_norm(n, in, false); }
RLX_KERNEL(RmsNorm) { return axis_norm(n, in, true); }
RLX_KERNEL(LayerNorm2d) {
  check_operands(n, in, 3);
  if (n.shape.rank() != 4)
    fail(ErrorKind::Shape, n.op.name(), ": expects NCHW input, got ", ir::short_str(n.shape));
  return normalize_axis(n, in[0]->to_f64(), 1, false, n.op.attrs<ir::EpsAttrs>().eps, *in[1],
                        *in[2]);
}
RLX_KERNEL(GroupNorm) { return group_norm(n, in); }
RLX_KERNEL(BatchNormInference) { return batch_norm(n, in); }
RLX_KERNEL(FusedResidualLN) { return fused_residual(n, in, false); }
RLX_KERNEL(FusedResidualRmsNorm) { return fused_residual(n, in, true); }

} // namespace rlx::interp::detail
