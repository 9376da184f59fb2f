// src/onnx/ops_movement.cpp -- ONNX data movement and constants: Reshape, Flatten, Squeeze,
// Unsqueeze, Transpose, Concat, Split, Slice, Gather, GatherElements, Expand, Pad, Tile,
// DepthToSpace, SpaceToDepth; Shape, Size, Constant, ConstantOfShape, Range, EyeLike, Trilu,
// OneHot; Dropout at inference.
#include "importer.hpp"
#include "support/size_math.hpp"

#include <algorithm>
#include <numeric>

namespace rlx::onnx::detail {

using ir::DType;
using ir::NodeId;
using ir::Op;
using ir::OpKind;

namespace {

int64_t product(std::span<const int64_t> v) {
  return std::accumulate(v.begin(), v.end(), int64_t(1), std::multiplies<>());
}
NodeId ints_constant(Ctx& c, std::vector<int64_t> dims, std::span<const int64_t> values) {
  return c.constant(Buffer::from_i64(ir::Shape::of(dims, DType::I64), values));
}

void reshape(Ctx& c) {
  NodeId x = c.in(0);
  std::vector<int64_t> shape = c.need_ints(1, "shape");
  bool allow_zero = c.attr_i("allowzero", 0) != 0;
  const ir::Shape& s = c.shape(0);
  for (std::size_t k = 0; k < shape.size(); ++k) {
    if (shape[k] != 0 || allow_zero) continue;
    if (k >= s.rank()) fail(ErrorKind::Shape, "shape[", k, "] = 0 copies a dim x does not have");
    if (!s.dims()[k].is_static()) c.unsupported("shape 0 copying a dynamic dim");
    shape[k] = s.dims()[k].size();
  }
  c.out(0, c.g.reshape_(x, shape));
}

void flatten(Ctx& c) {
  std::vector<int64_t> dims = c.sizes(0);
  int64_t r = int64_t(dims.size());
  int64_t axis = c.attr_i("axis", 1);
  if (axis < -r || axis > r) fail(ErrorKind::Value, "axis ", axis, " out of range for rank ", r);
  if (axis < 0) axis += r;
  int64_t rows = product(std::span(dims).first(std::size_t(axis)));
  c.out(0, c.g.reshape_(c.in(0), {rows, product(std::span(dims).subspan(std::size_t(axis)))}));
}

std::vector<int64_t> axes_of(Ctx& c, int since_operand) {
  if (c.opset >= since_operand) return c.has(1) ? c.need_ints(1, "axes") : std::vector<int64_t>{};
  return c.attr_ints("axes");
}

void squeeze(Ctx& c) {
  std::vector<int64_t> dims = c.sizes(0);
  std::vector<int64_t> axes = axes_of(c, 13);
  int64_t r = int64_t(dims.size());
  std::vector<bool> drop(dims.size(), false);
  for (int64_t a : axes) {
    a = c.axis(a, r);
    if (dims[std::size_t(a)] != 1)
      fail(ErrorKind::Shape, "cannot squeeze axis ", a, " of size ", dims[std::size_t(a)]);
    drop[std::size_t(a)] = true;
  }
  std::vector<int64_t> out;
  for (std::size_t k = 0; k < dims.size(); ++k)
    if (!(axes.empty() ? dims[k] == 1 : drop[k])) out.push_back(dims[k]);
  c.out(0, c.g.reshape_(c.in(0), out));
}

void unsqueeze(Ctx& c) {
  std::vector<int64_t> dims = c.sizes(0);
  std::vector<int64_t> axes = axes_of(c, 13);
  int64_t r = int64_t(dims.size() + axes.size());
  std::vector<bool> add(static_cast<std::size_t>(r), false);
  for (int64_t a : axes) {
    a = c.axis(a, r);
    if (add[std::size_t(a)]) fail(ErrorKind::Value, "axis ", a, " is repeated");
    add[std::size_t(a)] = true;
  }
  std::vector<int64_t> out;
  std::size_t next = 0;
  for (int64_t k = 0; k < r; ++k) out.push_back(add[std::size_t(k)] ? 1 : dims[next++]);
  c.out(0, c.g.reshape_(c.in(0), out));
}

void transpose(Ctx& c) {
  int64_t r = c.rank(0);
  std::vector<int64_t> def(static_cast<std::size_t>(r));
  for (int64_t k = 0; k < r; ++k) def[std::size_t(k)] = r - 1 - k;
  c.out(0, c.g.transpose_(c.in(0), c.attr_ints("perm", def)));
}

void concat(Ctx& c) {
  std::vector<NodeId> ins;
  for (std::size_t i = 0; i < c.num_inputs(); ++i)
    if (c.has(i)) ins.push_back(c.in(i));
  int64_t axis = c.axis(c.attr_i("axis", 0), c.rank(0));
  c.out(0, ins.size() == 1 ? ins[0] : c.g.concat_(ins, axis));
}

void split(Ctx& c) {
  NodeId x = c.in(0);
  int64_t axis = c.axis(c.attr_i("axis", 0), c.rank(0));
  int64_t n = c.sizes(0)[std::size_t(axis)];
  std::vector<int64_t> parts = c.opset >= 13
                                   ? (c.has(1) ? c.need_ints(1, "split") : std::vector<int64_t>{})
                                   : c.attr_ints("split");
  int64_t outs = int64_t(c.num_outputs());
  if (c.opset >= 18) outs = c.attr_i("num_outputs", outs);
  if (parts.empty()) {
    int64_t each = (n + outs - 1) / std::max<int64_t>(outs, 1);
    for (int64_t k = 0, left = n; k < outs; ++k, left -= each)
      parts.push_back(std::min(each, std::max<int64_t>(left, 0)));
  }
  if (std::accumulate(parts.begin(), parts.end(), int64_t(0)) != n ||
      parts.size() != c.num_outputs())
    fail(ErrorKind::Shape, "split sizes do not add up to ", n, " in ", c.num_outputs(), " outputs");
  int64_t start = 0;
  for (std::size_t k = 0; k < parts.size(); ++k) {
    if (parts[k] < 0) fail(ErrorKind::Value, "negative split size");
    c.out(k, c.g.narrow_(x, axis, start, parts[k]));
    start += parts[k];
  }
}

void slice(Ctx& c) {
  NodeId x = c.in(0);
  std::vector<int64_t> dims = c.sizes(0);
  int64_t r = int64_t(dims.size());
  std::vector<int64_t> starts, ends, axes, steps;
  if (c.opset < 10) {
    starts = c.attr_ints("starts"), ends = c.attr_ints("ends"), axes = c.attr_ints("axes");
  } else {
    starts = c.need_ints(1, "starts"), ends = c.need_ints(2, "ends");
    if (c.has(3)) axes = c.need_ints(3, "axes");
    if (c.has(4)) steps = c.need_ints(4, "steps");
  }
  if (axes.empty()) {
    axes.resize(starts.size());
    std::iota(axes.begin(), axes.end(), int64_t(0));
  }
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
    fail(ErrorKind::Shape, "starts, ends, axes and steps differ in length");
  for (std::size_t k = 0; k < starts.size(); ++k) {
    int64_t a = c.axis(axes[k], r), d = dims[std::size_t(a)], step = steps[k];
    if (step == 0) fail(ErrorKind::Value, "step 0");
    auto clampv = [](int64_t v, int64_t lo, int64_t hi) { return std::clamp(v, lo, hi); };
    int64_t s = starts[k], e = ends[k];
    if (s < 0) s = s < -d ? -1 : s + d; // values far out of range saturate
    if (e < 0) e = e < -d ? -1 : e + d;
    int64_t len;
    if (step > 0) {
      s = clampv(s, 0, d), e = clampv(e, 0, d);
      len = e > s ? (e - s + step - 1) / step : 0;
    } else {
      s = clampv(s, -1, d - 1), e = clampv(e, -1, d - 1);
      len = s > e ? (s - e + (-step) - 1) / (-step) : 0;
    }
    if (len == 0) s = 0;
    x = c.g.slice(x, a, s, len, step);
  }
  c.out(0, x);
}

void gather(Ctx& c) {
  int64_t axis = c.axis(c.attr_i("axis", 0), c.rank(0));
  c.out(0, c.g.gather_(c.in(0), c.in(1), axis));
}

void gather_elements(Ctx& c) {
  // out[p] = x[p with p[axis] replaced by idx[p]]: a gather from flat x at
  // base(p) + idx[p] * stride(axis), where base is p's flat position with p[axis] = 0.
  std::vector<int64_t> xd = c.sizes(0), id = c.sizes(1);
  int64_t r = int64_t(xd.size());
  int64_t axis = c.axis(c.attr_i("axis", 0), r);
  if (int64_t(id.size()) != r) fail(ErrorKind::Shape, "indices must have x's rank");
  std::vector<int64_t> stride(static_cast<std::size_t>(r), 1);
  for (int64_t k = r - 2; k >= 0; --k)
    stride[std::size_t(k)] = stride[std::size_t(k + 1)] * xd[std::size_t(k + 1)];
  int64_t n = product(id);
  c.check_materialized(n, "GatherElements' index table");
  std::vector<int64_t> base(static_cast<std::size_t>(n));
  for (int64_t p = 0; p < n; ++p) {
    int64_t rem = p, off = 0;
    for (int64_t k = r - 1; k >= 0; --k) {
      int64_t coord = rem % id[std::size_t(k)];
      rem /= id[std::size_t(k)];
      if (k != axis) off += coord * stride[std::size_t(k)];
    }
    base[std::size_t(p)] = off;
  }
  NodeId idx = c.g.cast(c.in(1), DType::I64);
  int64_t dim = xd[std::size_t(axis)];
  NodeId zero = c.scalar(0, DType::I64);
  idx = c.g.where_(op2(c, OpKind::Lt, idx, zero),
                   op2(c, OpKind::Add, idx, c.scalar(double(dim), DType::I64)), idx);
  NodeId flat =
      op2(c, OpKind::Add, ints_constant(c, id, base),
          op2(c, OpKind::Mul, idx, c.scalar(double(stride[std::size_t(axis)]), DType::I64)));
  c.out(0, c.g.gather_(c.g.reshape_(c.in(0), {product(xd)}), flat, 0));
}

void expand(Ctx& c) {
  std::vector<int64_t> dims = c.sizes(0);
  std::vector<int64_t> shape = c.need_ints(1, "shape");
  std::size_t r = std::max(dims.size(), shape.size());
  std::vector<int64_t> target(r);
  for (std::size_t k = 0; k < r; ++k) {
    int64_t a = k + dims.size() >= r ? dims[k + dims.size() - r] : 1;
    int64_t b = k + shape.size() >= r ? shape[k + shape.size() - r] : 1;
    if (a != b && a != 1 && b != 1)
      fail(ErrorKind::Shape, "cannot broadcast dim ", a, " against ", b);
    target[k] = a == 1 ? b : a;
  }
  c.out(0, c.g.expand(c.in(0), target));
}

void pad(Ctx& c) {
  NodeId x = c.in(0);
  int64_t r = c.rank(0);
  std::string mode = c.attr_s("mode", "constant");
  std::vector<int64_t> pads;
  double value = 0;
  std::vector<int64_t> axes;
  if (c.opset < 11) {
    pads = c.attr_ints("pads");
    value = c.attr_f("value", 0);
  } else {
    pads = c.need_ints(1, "pads");
    if (c.has(2)) value = c.need_scalar(2, "constant_value");
    if (c.has(3)) axes = c.need_ints(3, "axes");
  }
  if (axes.empty()) {
    axes.resize(std::size_t(r));
    std::iota(axes.begin(), axes.end(), int64_t(0));
  }
  if (pads.size() != 2 * axes.size())
    fail(ErrorKind::Shape, "pads has ", pads.size(), " values for ", axes.size(), " axes");
  std::vector<int64_t> rp(static_cast<std::size_t>(2 * r), 0);
  for (std::size_t k = 0; k < axes.size(); ++k) {
    int64_t a = c.axis(axes[k], r);
    rp[std::size_t(2 * a)] = pads[k], rp[std::size_t(2 * a + 1)] = pads[k + axes.size()];
  }
  ir::PadMode pm;
  if (mode == "constant")
    pm = ir::PadMode::Constant;
  else if (mode == "reflect")
    pm = ir::PadMode::Reflect;
  else if (mode == "edge")
    pm = ir::PadMode::Edge;
  else
    c.unsupported("pad mode '" + mode + "'");
  c.out(0, c.g.pad(x, rp, pm, value));
}

void tile(Ctx& c) {
  std::vector<int64_t> dims = c.sizes(0);
  std::vector<int64_t> reps = c.need_ints(1, "repeats");
  if (reps.size() != dims.size()) fail(ErrorKind::Shape, "repeats must have one value per axis");
  std::vector<int64_t> inter, target, out;
  for (std::size_t k = 0; k < dims.size(); ++k) {
    if (reps[k] < 0) fail(ErrorKind::Value, "negative repeat");
    std::optional<int64_t> n = rlx::detail::checked_mul(reps[k], dims[k]);
    if (!n || *n > ir::kMaxDimSize)
      fail(ErrorKind::Limit, "repeats ", reps[k], " of axis ", k, " (size ", dims[k],
           ") make more than 2^48 elements");
    inter.insert(inter.end(), {1, dims[k]});
    target.insert(target.end(), {reps[k], dims[k]});
    out.push_back(*n);
  }
  NodeId y = c.g.expand(c.g.reshape_(c.in(0), inter), target);
  c.out(0, c.g.reshape_(y, out));
}

void depth_to_space(Ctx& c) {
  std::vector<int64_t> d = c.sizes(0);
  if (d.size() != 4) fail(ErrorKind::Shape, "needs a 4-d input");
  int64_t b = c.attr_i("blocksize", 0);
  if (b <= 0 || d[1] % (b * b) != 0) fail(ErrorKind::Value, "bad blocksize ", b);
  bool crd = c.attr_s("mode", "DCR") == "CRD";
  int64_t n = d[0], ch = d[1] / (b * b), h = d[2], w = d[3];
  NodeId y =
      crd ? c.g.reshape_(c.in(0), {n, ch, b, b, h, w}) : c.g.reshape_(c.in(0), {n, b, b, ch, h, w});
  y = crd ? c.g.transpose_(y, {0, 1, 4, 2, 5, 3}) : c.g.transpose_(y, {0, 3, 4, 1, 5, 2});
  c.out(0, c.g.reshape_(y, {n, ch, h * b, w * b}));
}

void space_to_depth(Ctx& c) {
  std::vector<int64_t> d = c.sizes(0);
  if (d.size() != 4) fail(ErrorKind::Shape, "needs a 4-d input");
  int64_t b = c.attr_i("blocksize", 0);
  if (b <= 0 || d[2] % b != 0 || d[3] % b != 0) fail(ErrorKind::Value, "bad blocksize ", b);
  int64_t n = d[0], ch = d[1], h = d[2] / b, w = d[3] / b;
  NodeId y = c.g.reshape_(c.in(0), {n, ch, h, b, w, b});
  y = c.g.transpose_(y, {0, 3, 5, 1, 2, 4});
  c.out(0, c.g.reshape_(y, {n, ch * b * b, h, w}));
}

void shape(Ctx& c) {
  std::vector<int64_t> d = c.sizes(0);
  int64_t r = int64_t(d.size());
  int64_t start = c.attr_i("start", 0), end = c.attr_i("end", r);
  if (start < 0) start += r;
  if (end < 0) end += r;
  start = std::clamp<int64_t>(start, 0, r), end = std::clamp<int64_t>(end, start, r);
  std::vector<int64_t> v(d.begin() + start, d.begin() + end);
  c.out(0, ints_constant(c, {int64_t(v.size())}, v));
}

void size(Ctx& c) {
  int64_t n = product(c.sizes(0));
  c.out(0, ints_constant(c, {}, std::span(&n, 1)));
}

void constant(Ctx& c) {
  std::optional<Buffer> v = c.attr_tensor("value");
  if (!v && c.has_attr("value_float")) {
    double f = c.attr_f("value_float", 0);
    v = Buffer::from_f64(ir::Shape::scalar(DType::F32), std::span(&f, 1));
  }
  if (!v && c.has_attr("value_floats")) {
    std::vector<float> fs = c.attr_floats("value_floats");
    v = Buffer::f32({int64_t(fs.size())}, fs);
  }
  if (!v && c.has_attr("value_int")) {
    int64_t i = c.attr_i("value_int", 0);
    v = Buffer::i64({}, std::span(&i, 1));
  }
  if (!v && c.has_attr("value_ints")) {
    std::vector<int64_t> is = c.attr_ints("value_ints");
    v = Buffer::i64({int64_t(is.size())}, is);
  }
  if (!v) c.unsupported("a Constant without a tensor, float or int value");
  c.out(0, c.constant(*v));
}

void constant_of_shape(Ctx& c) {
  std::vector<int64_t> dims = c.need_ints(0, "shape");
  std::optional<Buffer> v = c.attr_tensor("value");
  if (v && v->numel() != 1) fail(ErrorKind::Shape, "value must hold one element");
  DType dt = v ? v->dtype() : DType::F32;
  double x = v ? v->get_f64(0) : 0.0;
  c.out(0, c.g.expand(c.scalar(x, dt), dims));
}

void range(Ctx& c) {
  Buffer s = c.need(0, "start"), l = c.need(1, "limit"), d = c.need(2, "delta");
  double start = s.get_f64(0), limit = l.get_f64(0), delta = d.get_f64(0);
  if (delta == 0) fail(ErrorKind::Value, "delta 0");
  double count = std::max(0.0, std::ceil((limit - start) / delta));
  if (!(count <= double(int64_t(1) << 24))) c.check_materialized(int64_t(1) << 30, "Range");
  std::vector<double> v(static_cast<std::size_t>(count));
  DType dt = s.dtype();
  // Integer ranges accumulate exactly; float ones as start + k * delta.
  for (std::size_t k = 0; k < v.size(); ++k) v[k] = start + double(k) * delta;
  std::vector<int64_t> dims{int64_t(v.size())};
  c.out(0, c.constant(Buffer::from_f64(ir::Shape::of(dims, dt), v)));
}

void eye_like(Ctx& c) {
  std::vector<int64_t> d = c.sizes(0);
  if (d.size() != 2) fail(ErrorKind::Shape, "needs a 2-d input");
  int64_t k = c.attr_i("k", 0);
  DType dt = c.dtype(0);
  if (c.has_attr("dtype")) {
    std::optional<DType> t = dtype_of(int(c.attr_i("dtype", 1)));
    if (!t) c.unsupported("dtype without an rlx dtype");
    dt = *t;
  }
  c.check_materialized(d[0] > 0 && d[1] > (int64_t(1) << 24) / d[0] ? -1 : d[0] * d[1], "EyeLike");
  std::vector<double> v(static_cast<std::size_t>(d[0] * d[1]), 0.0);
  for (int64_t i = 0; i < d[0]; ++i)
    if (i + k >= 0 && i + k < d[1]) v[std::size_t(i * d[1] + i + k)] = 1;
  c.out(0, c.constant(Buffer::from_f64(ir::Shape::of(d, dt), v)));
}

void trilu(Ctx& c) {
  std::vector<int64_t> d = c.sizes(0);
  if (d.size() < 2) fail(ErrorKind::Shape, "needs rank >= 2");
  int64_t k = c.has(1) ? int64_t(c.need_scalar(1, "k")) : 0;
  bool upper = c.attr_i("upper", 1) != 0;
  int64_t n = d[d.size() - 2], m = d.back();
  c.check_materialized(n > 0 && m > (int64_t(1) << 24) / n ? -1 : n * m, "Trilu's mask");
  std::vector<int64_t> keep(static_cast<std::size_t>(n * m));
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < m; ++j) keep[std::size_t(i * m + j)] = upper ? j - i >= k : j - i <= k;
  NodeId mask = c.g.cast(ints_constant(c, {n, m}, keep), DType::Bool);
  NodeId x = c.in(0);
  c.out(0, c.g.where_(mask, x, c.scalar(0, c.dtype(0))));
}

void one_hot(Ctx& c) {
  std::vector<int64_t> id = c.sizes(0);
  double depth_v = c.need_scalar(1, "depth");
  Buffer values = c.need(2, "values");
  if (values.numel() != 2) fail(ErrorKind::Shape, "values must hold [off, on]");
  if (!(depth_v >= 0 && depth_v <= double(int64_t(1) << 24)))
    c.check_materialized(-1, "OneHot's depth");
  int64_t depth = int64_t(depth_v);
  int64_t r = int64_t(id.size()) + 1;
  int64_t axis = c.axis(c.attr_i("axis", -1), r);
  NodeId idx = c.g.cast(c.in(0), DType::I64);
  NodeId zero = c.scalar(0, DType::I64);
  idx = c.g.where_(op2(c, OpKind::Lt, idx, zero),
                   op2(c, OpKind::Add, idx, c.scalar(double(depth), DType::I64)), idx);
  std::vector<int64_t> ud = id;
  ud.insert(ud.begin() + axis, 1);
  idx = c.g.reshape_(idx, ud);
  std::vector<int64_t> pd(static_cast<std::size_t>(r), 1), iota(static_cast<std::size_t>(depth));
  pd[std::size_t(axis)] = depth;
  std::iota(iota.begin(), iota.end(), int64_t(0));
  NodeId hit = op2(c, OpKind::Eq, idx, ints_constant(c, pd, iota));
  DType dt = values.dtype();
  c.out(0, c.g.where_(hit, c.scalar(values.get_f64(1), dt), c.scalar(values.get_f64(0), dt)));
}

void dropout(Ctx& c) {
  c.ignore("seed");
  if (c.opset < 7) c.ignore("is_test");
  if (c.opset < 12) c.ignore("ratio"); // an attribute before opset 12; no effect at inference
  if (c.has(2)) {
    std::optional<Buffer> t = c.value(2);
    if (!t || t->get_f64(0) != 0)
      c.unsupported("training-mode dropout (random); rlx imports inference graphs");
  }
  NodeId x = c.in(0);
  c.out(0, x);
  if (c.wants(1)) c.out(1, c.g.expand(c.scalar(1, DType::Bool), c.sizes(0)));
}

} // namespace

void add_movement_rules(Rules& r) {
  r["Reshape"] = {reshape, 5, 1u << 1};
  r["Flatten"] = {flatten, 1};
  r["Squeeze"] = {squeeze, 1, 1u << 1};
  r["Unsqueeze"] = {unsqueeze, 1, 1u << 1};
  r["Transpose"] = {transpose, 1};
  r["Concat"] = {concat, 4};
  r["Split"] = {split, 2, 1u << 1};
  r["Slice"] = {slice, 1, 0b11110};
  r["Gather"] = {gather, 1};
  r["GatherElements"] = {gather_elements, 11};
  r["Expand"] = {expand, 8, 1u << 1};
  r["Pad"] = {pad, 2, 0b1110};
  r["Tile"] = {tile, 6, 1u << 1};
  r["DepthToSpace"] = {depth_to_space, 1};
  r["SpaceToDepth"] = {space_to_depth, 1};
  r["Shape"] = {shape, 1};
  r["Size"] = {size, 1};
  r["Constant"] = {constant, 1};
  r["ConstantOfShape"] = {constant_of_shape, 9, 1u << 0};
  r["Range"] = {range, 11, 0b111};
  r["EyeLike"] = {eye_like, 9};
  r["Trilu"] = {trilu, 14, 1u << 1};
  r["OneHot"] = {one_hot, 9, 0b110};
  r["Dropout"] = {dropout, 1, 0b110};
}

} // namespace rlx::onnx::detail
