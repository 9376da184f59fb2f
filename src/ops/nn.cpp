// src/ops/nn.cpp -- shape rules of the contract, norm, attention, conv and pool families.
#include "infer_common.hpp"
#include "support/size_math.hpp"

namespace rlx::ir::detail {

namespace {

constexpr int64_t kMaxConvParam = int64_t(1) << 24;

Shape matmul_rule(const Op& op, std::span<const Shape> in, const Shape& a, const Shape& b) {
  if (a.rank() == 0 || b.rank() == 0) shape_error(op, in, "operands must have rank >= 1");
  if (a.dtype() != b.dtype())
    fail(ErrorKind::Type, op.name(), ": dtypes differ: ", short_str(a), " @ ", short_str(b));
  const Dim& ka = a.dims().back();
  const Dim& kb = b.rank() == 1 ? b.dims()[0] : b.dims()[b.rank() - 2];
  if (ka.is_static() && kb.is_static() && ka.size() != kb.size())
    fail(ErrorKind::Shape, op.name(), ": contracting dims differ: ", short_str(a), " @ ",
         short_str(b), " (", ka.size(), " != ", kb.size(), ")");
  auto batch = [](const Shape& s) {
    std::vector<Dim> d(s.dims().begin(), s.dims().end() - std::min<std::size_t>(s.rank(), 2));
    return Shape(std::move(d), s.dtype());
  };
  Shape out = broadcast_shapes(op.name(), batch(a), batch(b));
  std::vector<Dim> dims = out.dims();
  if (a.rank() >= 2) dims.push_back(a.dims()[a.rank() - 2]);
  if (b.rank() >= 2) dims.push_back(b.dims().back());
  return Shape(std::move(dims), a.dtype());
}

/// num_heads * head_dim, both >= 1, or a shape error when the product leaves [1, 2^48] (it is
/// compared with an axis; a wrapped product could match one).
int64_t heads_times_dim(const Op& op, std::span<const Shape> in, int64_t num_heads,
                        int64_t head_dim) {
  if (num_heads < 1 || head_dim < 1) shape_error(op, in, "num_heads and head_dim must be >= 1");
  std::optional<int64_t> width = rlx::detail::checked_mul(num_heads, head_dim);
  if (!width || *width > kMaxDimSize)
    shape_error(op, in, "num_heads*head_dim = ", num_heads, "*", head_dim, " exceeds 2^48");
  return *width;
}

void require_float(const Op& op, std::span<const Shape> in, std::size_t i) {
  if (!is_float(in[i].dtype()))
    fail(ErrorKind::Type, op.name(), ": needs floating-point operands, got ", shapes_str(in));
}

void check_vector(const Op& op, std::span<const Shape> in, std::size_t i, const Dim& want,
                  std::string_view what) {
  const Shape& s = in[i];
  auto n = s.num_elements();
  if (want.is_static() && n && *n != want.size())
    shape_error(op, in, what, " must have ", want.size(), " elements, got ", short_str(s));
}

Shape conv_out(const Op& op, std::span<const Shape> in, const Shape& x, const Shape& w,
               std::span<const int64_t> k, std::span<const int64_t> s, std::span<const int64_t> p,
               std::span<const int64_t> d, int64_t groups, bool transpose,
               std::span<const int64_t> out_pad) {
  std::size_t sp = k.size();
  if (x.rank() != sp + 2 || w.rank() != sp + 2)
    shape_error(op, in, "expects a rank-", sp + 2, " input and weight");
  if (x.dtype() != w.dtype())
    fail(ErrorKind::Type, op.name(), ": dtypes differ: ", short_str(x), " and ", short_str(w));
  if (groups < 1 || groups > kMaxConvParam) shape_error(op, in, "groups must be in [1, 2^24]");
  for (std::size_t i = 0; i < sp; ++i) {
    if (k[i] < 1 || s[i] < 1 || d[i] < 1 || p[i] < 0)
      shape_error(op, in, "kernel, stride and dilation must be >= 1 and padding >= 0");
    if (k[i] > kMaxConvParam || s[i] > kMaxConvParam || d[i] > kMaxConvParam ||
        p[i] > kMaxConvParam || (transpose && out_pad[i] > kMaxConvParam))
      shape_error(op, in, "kernel, stride, dilation and padding must be <= 2^24");
    if (static_size(w.dims()[2 + i]) != k[i])
      shape_error(op, in, "kernel size ", k[i], " does not match the weight's ",
                  w.dims()[2 + i].size());
  }
  int64_t n = static_size(x.dims()[0]);
  int64_t c = static_size(x.dims()[1]);
  int64_t w0 = static_size(w.dims()[0]), w1 = static_size(w.dims()[1]);
  if (c % groups)
    shape_error(op, in, "input channels ", c, " do not divide into ", groups, " groups");
  // w1 <= 2^48 and groups <= 2^24: the product needs more than int64 (2^72).
  std::optional<int64_t> w1_groups = rlx::detail::checked_mul(w1, groups);
  if (!w1_groups || *w1_groups > kMaxDimSize)
    shape_error(op, in, "weight axis 1 (", w1, ") times groups (", groups, ") exceeds 2^48");
  int64_t c_out;
  if (!transpose) {
    if (*w1_groups != c)
      shape_error(op, in, "weight expects ", *w1_groups, " input channels, the input has ", c);
    if (w0 % groups)
      shape_error(op, in, "output channels ", w0, " do not divide into ", groups, " groups");
    c_out = w0;
  } else {
    if (w0 != c) shape_error(op, in, "weight expects ", w0, " input channels, the input has ", c);
    c_out = *w1_groups;
  }
  std::vector<Dim> dims{Dim(n), Dim(c_out)};
  for (std::size_t i = 0; i < sp; ++i) {
    int64_t len = static_size(x.dims()[2 + i]);
    __extension__ __int128 o; // wide: sizes up to 2^48 times parameters up to 2^24
    if (!transpose) {
      __extension__ __int128 span = __int128(len) + 2 * p[i] - __int128(d[i]) * (k[i] - 1) - 1;
      if (span < 0)
        shape_error(op, in, "the kernel does not fit spatial axis ", i, " (size ", len, ")");
      o = span / s[i] + 1;
    } else {
      if (out_pad[i] < 0 || out_pad[i] >= std::max(s[i], d[i]))
        shape_error(op, in, "output_padding must be smaller than stride or dilation");
      o = __int128(len - 1) * s[i] - 2 * p[i] + __int128(d[i]) * (k[i] - 1) + out_pad[i] + 1;
      if (o < 0) shape_error(op, in, "padding is larger than the output on axis ", i);
    }
    if (o > kMaxDimSize) shape_error(op, in, "output axis ", i, " would exceed 2^48");
    dims.emplace_back(int64_t(o));
  }
  return Shape(std::move(dims), x.dtype());
}

} // namespace

std::optional<Shape> infer_contract(const Op& op, std::span<const Shape> in) {
  switch (op.kind()) {
  case OpKind::MatMul:
    return matmul_rule(op, in, in[0], in[1]);
  case OpKind::FusedMatMulBiasAct: {
    Shape mm = matmul_rule(op, in, in[0], in[1]);
    Shape out = broadcast_shapes(op.name(), mm, in[2]);
    if (!shapes_compatible(out, mm)) shape_error(op, in, "bias must broadcast to the product");
    return mm;
  }
  case OpKind::FusedSwiGLU: {
    const Shape& h = in[0];
    if (h.rank() == 0) shape_error(op, in, "needs rank >= 1");
    int64_t n = static_size(h.dims().back());
    if (n % 2) shape_error(op, in, "last axis ", n, " must be even ([up, gate] halves)");
    std::optional<DType> to = op.attrs<SwiGluAttrs>().cast_to;
    if (to && !is_float(*to)) shape_error(op, in, "cast_to must be a floating-point dtype");
    return h.with_dim(h.rank() - 1, Dim(n / 2)).with_dtype(to.value_or(h.dtype()));
  }
  default:
    return std::nullopt;
  }
}

std::optional<Shape> infer_norm_attention(const Op& op, std::span<const Shape> in) {
  const Shape& x = in[0];
  switch (op.kind()) {
  case OpKind::LayerNorm:
  case OpKind::RmsNorm: {
    require_float(op, in, 0);
    int64_t axis = norm_axis(op, in, op.attrs<NormAttrs>().axis, x.rank());
    check_vector(op, in, 1, x.dims()[std::size_t(axis)], "gamma");
    check_vector(op, in, 2, x.dims()[std::size_t(axis)], "beta");
    return x;
  }
  case OpKind::LayerNorm2d:
  case OpKind::GroupNorm:
  case OpKind::BatchNormInference: {
    if (x.rank() < 2 || (op.kind() == OpKind::LayerNorm2d && x.rank() != 4))
      shape_error(op, in, "expects NCHW input");
    const Dim& c = x.dims()[1];
    if (op.kind() == OpKind::GroupNorm) {
      int64_t g = op.attrs<GroupNormAttrs>().num_groups;
      if (g < 1 || (c.is_static() && c.size() % g))
        shape_error(op, in, "channels do not divide into ", g, " groups");
    }
    for (std::size_t i = 1; i < in.size(); ++i) check_vector(op, in, i, c, "per-channel operand");
    return x;
  }
  case OpKind::FusedResidualLN:
  case OpKind::FusedResidualRmsNorm: {
    bool bias = op.attrs<FusedResidualNormAttrs>().has_bias;
    if (in.size() != (bias ? 5u : 4u))
      shape_error(op, in, "takes ", bias ? 5 : 4,
                  " inputs with has_bias=", bias ? "true" : "false");
    require_float(op, in, 0);
    // x + residual [+ bias] is summed in x's dtype, as the add it replaces had it.
    for (std::size_t i = 1; i < (bias ? 3u : 2u); ++i)
      if (in[i].dtype() != x.dtype())
        fail(ErrorKind::Type, op.name(), ": the ", i == 1 ? "residual" : "bias",
             " must have x's dtype, got ", shapes_str(in));
    Shape s = broadcast_shapes(op.name(), x, in[1]);
    if (!shapes_compatible(s, x)) shape_error(op, in, "residual must broadcast to x");
    if (bias && !shapes_compatible(broadcast_shapes(op.name(), x, in[2]), x))
      shape_error(op, in, "bias must broadcast to x");
    const Dim& last = x.dims().back();
    check_vector(op, in, in.size() - 2, last, "gamma");
    check_vector(op, in, in.size() - 1, last, "beta");
    return x;
  }
  case OpKind::Attention: {
    const auto& a = op.attrs<AttentionAttrs>();
    bool has_mask = a.mask == MaskType::Custom || a.mask == MaskType::Bias;
    if (in.size() != (has_mask ? 4u : 3u))
      shape_error(op, in, "takes ", has_mask ? 4 : 3, " inputs with mask ", enum_name(a.mask));
    int64_t width = heads_times_dim(op, in, a.num_heads, a.head_dim);
    for (std::size_t i = 0; i < 3; ++i) {
      if (in[i].rank() != 3) shape_error(op, in, "q, k and v must be [batch, seq, heads*head_dim]");
      const Dim& last = in[i].dims()[2];
      if (last.is_static() && last.size() != width)
        shape_error(op, in, "last axis must be num_heads*head_dim = ", width);
    }
    require_float(op, in, 0);
    if (!shapes_compatible(in[1], in[2])) shape_error(op, in, "k and v must have the same shape");
    if (in[0].dtype() != in[1].dtype() || in[1].dtype() != in[2].dtype())
      fail(ErrorKind::Type, op.name(), ": q, k and v must share a dtype (", shapes_str(in), ")");
    const Dim &bq = in[0].dims()[0], &bk = in[1].dims()[0];
    if (bq.is_static() && bk.is_static() && bq.size() != bk.size())
      shape_error(op, in, "q and k have different batch sizes");
    if (has_mask) {
      // Custom: a [B, Sk] validity mask; Bias: an additive [B, H, Sq, Sk] tensor (both broadcast).
      std::vector<Dim> want{bq, in[1].dims()[1]};
      if (a.mask == MaskType::Bias) want = {bq, Dim(a.num_heads), in[0].dims()[1], in[1].dims()[1]};
      Shape target(want, in[3].dtype());
      Shape got = broadcast_shapes(op.name(), target, in[3]);
      if (!shapes_compatible(got, target))
        shape_error(op, in, "the ", a.mask == MaskType::Bias ? "bias" : "mask",
                    " must broadcast to ", short_str(target));
    }
    if (a.mask == MaskType::SlidingWindow && a.window < 1)
      shape_error(op, in, "a sliding window needs window >= 1");
    return x;
  }
  case OpKind::Rope: {
    const auto& a = op.attrs<RopeAttrs>();
    if (a.head_dim < 1 || a.n_rot < 0 || a.n_rot > a.head_dim || a.n_rot % 2)
      shape_error(op, in, "needs head_dim >= 1 and an even n_rot <= head_dim");
    require_float(op, in, 0);
    if (x.rank() >= 2 && x.dims()[x.rank() - 2].is_static()) {
      int64_t n_rot = a.n_rot == 0 ? a.head_dim : a.n_rot;
      std::optional<int64_t> n_pairs =
          rlx::detail::checked_mul(x.dims()[x.rank() - 2].size(), n_rot / 2);
      if (!n_pairs || *n_pairs > kMaxDimSize)
        shape_error(op, in, "seq * n_rot/2 exceeds 2^48 (n_rot ", n_rot, ")");
      Dim pairs(*n_pairs);
      check_vector(op, in, 1, pairs, "cos ([seq, n_rot/2])");
      check_vector(op, in, 2, pairs, "sin ([seq, n_rot/2])");
    }
    if (x.rank() == 0 || (x.dims().back().is_static() && x.dims().back().size() % a.head_dim))
      shape_error(op, in, "last axis must be a multiple of head_dim ", a.head_dim);
    return x;
  }
  case OpKind::AxialRope2d: {
    const auto& a = op.attrs<AxialRopeAttrs>();
    if (x.rank() != 3) shape_error(op, in, "expects [batch, seq, heads*head_dim]");
    int64_t width = heads_times_dim(op, in, a.num_heads, a.head_dim);
    const Dim& last = x.dims()[2];
    if (last.is_static() && last.size() != width)
      shape_error(op, in, "last axis must be num_heads*head_dim = ", width);
    if (a.head_dim % 4) shape_error(op, in, "head_dim ", a.head_dim, " must be a multiple of 4");
    if (a.end_x < 1 || a.end_y < 1) shape_error(op, in, "end_x and end_y must be >= 1");
    // Without forming end_x*end_y (it may not fit): seq % end_x, then (seq / end_x) % end_y.
    const Dim& seq = x.dims()[1];
    if (seq.is_static() && (seq.size() % a.end_x || (seq.size() / a.end_x) % a.end_y))
      shape_error(op, in, "sequence length ", seq.size(), " is not a multiple of end_x*end_y (",
                  a.end_x, "*", a.end_y, ")");
    return x;
  }
  default:
    return std::nullopt;
  }
}

std::optional<Shape> infer_conv_pool(const Op& op, std::span<const Shape> in) {
  const Shape& x = in[0];
  switch (op.kind()) {
  case OpKind::Conv2d: {
    const auto& a = op.attrs<Conv2dAttrs>();
    return conv_out(op, in, x, in[1], a.kernel_size, a.stride, a.padding, a.dilation, a.groups,
                    false, {});
  }
  case OpKind::ConvTranspose2d: {
    const auto& a = op.attrs<ConvTranspose2dAttrs>();
    return conv_out(op, in, x, in[1], a.kernel_size, a.stride, a.padding, a.dilation, a.groups,
                    true, a.output_padding);
  }
  case OpKind::Conv3d:
  case OpKind::ConvTranspose3d: {
    const Shape& w = in[1];
    if (w.rank() != 5) shape_error(op, in, "expects a rank-5 weight");
    Ints3 k{static_size(w.dims()[2]), static_size(w.dims()[3]), static_size(w.dims()[4])};
    if (op.kind() == OpKind::Conv3d) {
      const auto& a = op.attrs<Conv3dAttrs>();
      return conv_out(op, in, x, w, k, a.stride, a.padding, a.dilation, a.groups, false, {});
    }
    const auto& a = op.attrs<ConvTranspose3dAttrs>();
    return conv_out(op, in, x, w, k, a.stride, a.padding, a.dilation, a.groups, true,
                    a.output_padding);
  }
  case OpKind::ConvTranspose1d: {
    const auto& a = op.attrs<ConvTranspose1dAttrs>();
    int64_t k = a.kernel, s = a.stride, p = a.padding, d = a.dilation, o = a.output_padding;
    return conv_out(op, in, x, in[1], {&k, 1}, {&s, 1}, {&p, 1}, {&d, 1}, a.groups, true, {&o, 1});
  }
  case OpKind::Im2Col: {
    const auto& a = op.attrs<Im2ColAttrs>();
    if (x.rank() != 4) shape_error(op, in, "expects NCHW input");
    // Shape as a conv with one output channel and a [1, C, kh, kw] weight.
    int64_t c = static_size(x.dims()[1]);
    Shape w({1, c, a.kernel_size[0], a.kernel_size[1]}, x.dtype());
    Shape o = conv_out(op, in, x, w, a.kernel_size, a.stride, a.padding, a.dilation, 1, false, {});
    Shape cols({o.dims()[0], o.dims()[2], o.dims()[3], Dim(c), Dim(a.kernel_size[0]),
                Dim(a.kernel_size[1])},
               x.dtype());
    auto total = cols.num_elements(); // checked product
    int64_t ck =
        *Shape({Dim(c), Dim(a.kernel_size[0]), Dim(a.kernel_size[1])}, x.dtype()).num_elements();
    return Shape({ck ? *total / ck : 0, ck}, x.dtype());
  }
  case OpKind::MaxPool2d:
  case OpKind::AvgPool2d: {
    const auto& a = op.attrs<Pool2dAttrs>();
    if (x.rank() != 4) shape_error(op, in, "expects NCHW input");
    std::vector<Dim> dims{x.dims()[0], x.dims()[1]};
    for (std::size_t i = 0; i < 2; ++i) {
      int64_t k = a.kernel_size[i], s = a.stride[i], p = a.padding[i];
      if (k < 1 || s < 1 || p < 0 || p > k / 2 || k > kMaxConvParam || s > kMaxConvParam)
        shape_error(op, in, "needs kernel, stride >= 1 and 0 <= padding <= kernel/2");
      int64_t len = static_size(x.dims()[2 + i]);
      if (len + 2 * p < k) shape_error(op, in, "the window does not fit spatial axis ", i);
      dims.emplace_back((len + 2 * p - k) / s + 1);
    }
    return Shape(std::move(dims), x.dtype());
  }
  default:
    return std::nullopt;
  }
}

} // namespace rlx::ir::detail
