// src/onnx/ops_resize.cpp -- ONNX Resize and Upsample as one constant interpolation matrix per
// resized axis: y = x @ M along that axis (moved last and back), M[i, j] = the weight of input i
// in output j. The weights follow the ONNX reference (onnx/reference/ops/op_resize.py): output j
// maps to x = transform(j); its n nearest padded positions (ties to the smaller) get the mode's
// coefficients (nearest: 2 with the rounding mode, linear: 2, cubic: 4 with coefficient a), a
// position outside the input reads the edge (or, with exclude_outside, is dropped and the rest
// renormalized).
#include "importer.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace rlx::onnx::detail {

using ir::DType;
using ir::NodeId;

namespace {

struct ResizeSpec {
  std::string mode = "nearest", transform = "half_pixel", nearest = "round_prefer_floor";
  double cubic_a = -0.75;
  bool exclude_outside = false;
};

std::vector<double> coefficients(const ResizeSpec& s, double ratio, bool integral) {
  if (s.mode == "nearest") {
    if (integral) return {0, 1};
    if (s.nearest == "round_prefer_floor") return {double(ratio <= 0.5), double(ratio > 0.5)};
    if (s.nearest == "round_prefer_ceil") return {double(ratio < 0.5), double(ratio >= 0.5)};
    if (s.nearest == "floor") return {1, 0};
    return {0, 1}; // ceil
  }
  if (s.mode == "linear") return {1 - ratio, ratio};
  double a = s.cubic_a, r = ratio, q = 1 - ratio;
  return {((a * (r + 1) - 5 * a) * (r + 1) + 8 * a) * (r + 1) - 4 * a,
          ((a + 2) * r - (a + 3)) * r * r + 1, ((a + 2) * q - (a + 3)) * q * q + 1,
          ((a * (q + 1) - 5 * a) * (q + 1) + 8 * a) * (q + 1) - 4 * a};
}

/// The [in, out] interpolation matrix of one axis, row-major.
std::vector<double> resize_matrix(const ResizeSpec& s, int64_t in, int64_t out, double scale) {
  std::vector<double> m(static_cast<std::size_t>(in * out), 0.0);
  for (int64_t j = 0; j < out; ++j) {
    double x = double(j);
    if (s.transform == "half_pixel")
      x = (x + 0.5) / scale - 0.5;
    else if (s.transform == "pytorch_half_pixel")
      x = out > 1 ? (x + 0.5) / scale - 0.5 : 0;
    else if (s.transform == "align_corners") // the unrounded output length, as the reference
      x = double(in) * scale == 1 ? 0 : x * double(in - 1) / (double(in) * scale - 1);
    else if (s.transform == "asymmetric")
      x = x / scale;
    else
      x = (x + 0.5) / scale; // tf_half_pixel_for_nn
    double fl = std::floor(x);
    bool integral = x == fl;
    std::vector<double> c = coefficients(s, integral ? 1.0 : x - fl, integral);
    int64_t n = int64_t(c.size());
    // The n positions nearest to x, ties to the smaller: floor(x) - n/2 + 1 ... for a fraction,
    // x - n/2 ... x + n/2 - 1 for an integer x.
    int64_t first = integral ? int64_t(fl) - n / 2 : int64_t(fl) - n / 2 + 1;
    double kept = 0;
    for (int64_t k = 0; k < n; ++k) {
      int64_t p = first + k;
      if (s.exclude_outside && (p < 0 || p >= in)) c[std::size_t(k)] = 0;
      kept += c[std::size_t(k)];
    }
    for (int64_t k = 0; k < n; ++k) {
      int64_t p = std::clamp<int64_t>(first + k, 0, in - 1);
      double w = c[std::size_t(k)] / (s.exclude_outside ? kept : 1.0);
      m[std::size_t(p * out + j)] += w;
    }
  }
  return m;
}

/// x resized to `out` along every axis, with `scales` as the coordinate scales.
NodeId resize_axes(Ctx& c, NodeId x, const ResizeSpec& s, const std::vector<int64_t>& out,
                   const std::vector<double>& scales) {
  std::vector<int64_t> dims = c.sizes(0);
  DType dt = c.dtype(0);
  if (!ir::is_float(dt)) c.unsupported("resizing " + std::string(ir::dtype_name(dt)) + " tensors");
  int64_t r = int64_t(dims.size());
  for (int64_t a = 0; a < r; ++a) {
    int64_t in = dims[std::size_t(a)], o = out[std::size_t(a)];
    if (in == o && scales[std::size_t(a)] == 1.0) continue;
    if (in == 0 || o < 0) fail(ErrorKind::Shape, "cannot resize axis ", a, " from ", in, " to ", o);
    c.check_materialized(o > 0 && in > (int64_t(1) << 24) / o ? -1 : in * o, "a resize matrix");
    std::vector<double> m = resize_matrix(s, in, o, scales[std::size_t(a)]);
    NodeId mat = c.constant(Buffer::from_f64(ir::Shape::of(std::vector<int64_t>{in, o}, dt), m));
    std::vector<int64_t> perm(static_cast<std::size_t>(r));
    std::iota(perm.begin(), perm.end(), int64_t(0));
    std::swap(perm[std::size_t(a)], perm.back());
    bool last = a == r - 1;
    NodeId t = last ? x : c.g.transpose_(x, perm);
    t = c.g.mm(t, mat);
    x = last ? t : c.g.transpose_(t, perm);
  }
  return x;
}

void resize(Ctx& c) {
  ResizeSpec s;
  s.mode = c.attr_s("mode", "nearest");
  if (s.mode != "nearest" && s.mode != "linear" && s.mode != "cubic")
    c.unsupported("Resize mode '" + s.mode + "'");
  s.transform =
      c.attr_s("coordinate_transformation_mode", c.opset >= 11 ? "half_pixel" : "asymmetric");
  if (s.transform != "half_pixel" && s.transform != "pytorch_half_pixel" &&
      s.transform != "align_corners" && s.transform != "asymmetric" &&
      s.transform != "tf_half_pixel_for_nn")
    c.unsupported("coordinate_transformation_mode '" + s.transform + "'");
  s.nearest = c.attr_s("nearest_mode", "round_prefer_floor");
  s.cubic_a = c.attr_f("cubic_coeff_a", -0.75f);
  s.exclude_outside = c.attr_i("exclude_outside", 0) != 0;
  c.ignore("extrapolation_value"); // read only by tf_crop_and_resize
  std::vector<int64_t> dims = c.sizes(0);
  std::size_t r = dims.size();
  std::vector<int64_t> out(r);
  std::vector<double> scales(r);
  std::size_t sizes_at = c.opset >= 11 ? 3 : 99, scales_at = c.opset >= 11 ? 2 : 1;
  std::optional<Buffer> sizes = c.has(sizes_at) ? c.value(sizes_at) : std::nullopt;
  if (sizes && sizes->numel() > 0) {
    std::vector<int64_t> v = to_ints(*sizes);
    if (v.size() != r) fail(ErrorKind::Shape, "sizes needs one value per axis");
    for (std::size_t k = 0; k < r; ++k)
      out[k] = v[k], scales[k] = dims[k] ? double(v[k]) / double(dims[k]) : 1.0;
  } else {
    Buffer sb = c.need(scales_at, "scales");
    if (sb.numel() != int64_t(r)) fail(ErrorKind::Shape, "scales needs one value per axis");
    for (std::size_t k = 0; k < r; ++k) {
      scales[k] = sb.get_f64(int64_t(k));
      if (!(scales[k] > 0 && scales[k] < 1e6)) fail(ErrorKind::Value, "scale ", scales[k]);
      out[k] = int64_t(std::floor(double(dims[k]) * scales[k]));
    }
  }
  c.out(0, resize_axes(c, c.in(0), s, out, scales));
}

void upsample(Ctx& c) {
  ResizeSpec s;
  s.mode = c.attr_s("mode", "nearest");
  if (s.mode != "nearest" && s.mode != "linear") c.unsupported("Upsample mode '" + s.mode + "'");
  s.transform = "asymmetric", s.nearest = "floor";
  std::vector<int64_t> dims = c.sizes(0);
  Buffer sb = c.need(1, "scales");
  if (sb.numel() != int64_t(dims.size())) fail(ErrorKind::Shape, "scales needs one value per axis");
  std::vector<int64_t> out(dims.size());
  std::vector<double> scales(dims.size());
  for (std::size_t k = 0; k < dims.size(); ++k) {
    scales[k] = sb.get_f64(int64_t(k));
    if (!(scales[k] > 0 && scales[k] < 1e6)) fail(ErrorKind::Value, "scale ", scales[k]);
    out[k] = int64_t(std::floor(double(dims[k]) * scales[k]));
  }
  c.out(0, resize_axes(c, c.in(0), s, out, scales));
}

} // namespace

void add_resize_rules(Rules& r) {
  r["Resize"] = {resize, 10, 0b1110};
  r["Upsample"] = {upsample, 9, 0b10};
}

} // namespace rlx::onnx::detail
