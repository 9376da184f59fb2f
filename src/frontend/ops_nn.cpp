// src/frontend/ops_nn.cpp -- matmul, linear layers, norms, convolutions, pooling, attention.
#include "frontend/impl.hpp"
#include "frontend/ops.hpp"

namespace rlx {

namespace {

using detail::cast_to;
using Ids = std::span<const ir::NodeId>;

/// Operands with the optional ones appended when present; returns the index of each optional
/// (or -1).
std::vector<Tensor> operands(std::initializer_list<Tensor> fixed,
                             std::initializer_list<const std::optional<Tensor>*> optional,
                             std::vector<int>& where) {
  std::vector<Tensor> out(fixed);
  for (const std::optional<Tensor>* o : optional) {
    where.push_back(o->has_value() ? int(out.size()) : -1);
    if (o->has_value()) out.push_back(**o);
  }
  return out;
}

std::optional<ir::NodeId> pick(Ids in, int i) {
  return i < 0 ? std::nullopt : std::optional<ir::NodeId>(in[std::size_t(i)]);
}

/// A [n] zero vector of dtype (the beta of norms called without one).
ir::NodeId zeros_vec(ir::Graph& g, int64_t n, DType dtype, const Loc& loc) {
  return g.expand(g.reshape_(g.constant(0, dtype, loc), {1}, loc), {n}, loc);
}

/// Size of the last axis of x (static), for per-channel operands.
int64_t last_size(ir::Graph& g, ir::NodeId x, std::string_view what, const Loc& loc) {
  const Shape& s = g.shape(x);
  if (s.rank() == 0 || s.dims().back().is_dynamic())
    fail(ErrorKind::Shape, what, ": needs a static last axis, got ", ir::short_str(s),
         detail::at_loc(loc));
  return s.dims().back().size();
}

/// x + bias reshaped to [1, C, 1, ...] (channel-first bias of a convolution).
ir::NodeId add_channel_bias(ir::Graph& g, ir::NodeId x, ir::NodeId bias, const Loc& loc) {
  std::vector<int64_t> sizes(g.shape(x).rank(), 1);
  sizes[1] = -1;
  return g.add(x, g.reshape_(bias, sizes, loc), loc);
}

int64_t kernel_dim(const Tensor& w, int64_t axis, std::string_view what, const Loc& loc) {
  if (w.ndim() <= axis)
    fail(ErrorKind::Shape, what, ": weight ", ir::short_str(w.shape()), " has rank ", w.ndim(),
         ", needs ", axis + 1, detail::at_loc(loc));
  return w.size(axis, loc);
}

} // namespace

Tensor matmul(const Tensor& a, const Tensor& b, Loc loc) {
  return apply(
      {a, b},
      [&](ir::Graph& g, Ids in) {
        DType t = ir::promote(a.dtype(), b.dtype());
        return g.mm(cast_to(g, in[0], t, loc), cast_to(g, in[1], t, loc), loc);
      },
      loc);
}
Tensor Tensor::matmul(const Tensor& rhs, Loc loc) const { return rlx::matmul(*this, rhs, loc); }

Tensor linear(const Tensor& x, const Tensor& w, std::optional<Tensor> bias,
              std::optional<ir::Activation> act, bool fused, Loc loc) {
  std::vector<int> at;
  auto ops = operands({x, w}, {&bias}, at);
  return apply(
      ops,
      [&](ir::Graph& g, Ids in) {
        std::optional<ir::NodeId> b = pick(in, at[0]);
        if (!fused) return g.linear_bias_act(in[0], in[1], b, act, loc);
        ir::NodeId bb =
            b ? *b : zeros_vec(g, last_size(g, in[1], "linear", loc), g.shape(in[0]).dtype(), loc);
        ir::NodeId probe = g.mm(in[0], in[1], loc); // the product's shape, checked
        ir::Shape out = g.shape(probe);
        return g.fused_matmul_bias_act(in[0], in[1], bb, act, out, loc);
      },
      loc);
}

Tensor swiglu_ffn(const Tensor& x, const Tensor& up, const Tensor& gate, const Tensor& down,
                  bool fused, Loc loc) {
  return apply(
      {x, up, gate, down},
      [&](ir::Graph& g, Ids in) {
        if (!fused) return g.swiglu_ffn(in[0], in[1], in[2], in[3], loc);
        // The output shape is the unfused form's; the fused builder checks it.
        ir::NodeId ref = g.swiglu_ffn(in[0], in[1], in[2], in[3], loc);
        return g.fused_swiglu_ffn(in[0], in[1], in[2], in[3], g.shape(ref), loc);
      },
      loc);
}

Tensor layer_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, double eps,
                  int64_t axis, Loc loc) {
  return apply(
      {x, gamma, beta},
      [&](ir::Graph& g, Ids in) {
        return g.layer_norm(in[0], in[1], in[2], axis, float(eps), g.shape(in[0]), loc);
      },
      loc);
}

Tensor rms_norm(const Tensor& x, const Tensor& gamma, std::optional<Tensor> beta, double eps,
                Loc loc) {
  std::vector<int> at;
  auto ops = operands({x, gamma}, {&beta}, at);
  return apply(
      ops,
      [&](ir::Graph& g, Ids in) {
        std::optional<ir::NodeId> b = pick(in, at[0]);
        ir::NodeId bb =
            b ? *b
              : zeros_vec(g, last_size(g, in[0], "rms_norm", loc), g.shape(in[1]).dtype(), loc);
        return g.rms_norm(in[0], in[1], bb, float(eps), loc);
      },
      loc);
}

Tensor residual_layer_norm(const Tensor& x, const Tensor& residual, const Tensor& gamma,
                           const Tensor& beta, std::optional<Tensor> bias, double eps, Loc loc) {
  std::vector<int> at;
  auto ops = operands({x, residual, gamma, beta}, {&bias}, at);
  return apply(
      ops,
      [&](ir::Graph& g, Ids in) {
        return g.fused_residual_ln(in[0], in[1], pick(in, at[0]), in[2], in[3], float(eps),
                                   g.shape(in[0]), loc);
      },
      loc);
}

Tensor residual_rms_norm(const Tensor& x, const Tensor& residual, const Tensor& gamma,
                         std::optional<Tensor> beta, std::optional<Tensor> bias, double eps,
                         Loc loc) {
  std::vector<int> at;
  auto ops = operands({x, residual, gamma}, {&beta, &bias}, at);
  return apply(
      ops,
      [&](ir::Graph& g, Ids in) {
        std::optional<ir::NodeId> b = pick(in, at[0]);
        ir::NodeId bb = b ? *b
                          : zeros_vec(g, last_size(g, in[0], "residual_rms_norm", loc),
                                      g.shape(in[2]).dtype(), loc);
        return g.fused_residual_rms_norm(in[0], in[1], pick(in, at[1]), in[2], bb, float(eps),
                                         g.shape(in[0]), loc);
      },
      loc);
}

Tensor group_norm(const Tensor& x, int64_t num_groups, const Tensor& gamma, const Tensor& beta,
                  double eps, Loc loc) {
  return apply(
      {x, gamma, beta},
      [&](ir::Graph& g, Ids in) {
        return g.group_norm(in[0], in[1], in[2], num_groups, float(eps), loc);
      },
      loc);
}

Tensor layer_norm2d(const Tensor& x, const Tensor& gamma, const Tensor& beta, double eps, Loc loc) {
  return apply(
      {x, gamma, beta},
      [&](ir::Graph& g, Ids in) { return g.layer_norm2d(in[0], in[1], in[2], float(eps), loc); },
      loc);
}

Tensor batch_norm(const Tensor& x, const Tensor& running_mean, const Tensor& running_var,
                  const Tensor& gamma, const Tensor& beta, double eps, Loc loc) {
  return apply(
      {x, gamma, beta, running_mean, running_var},
      [&](ir::Graph& g, Ids in) {
        return g.batch_norm_inference(in[0], in[1], in[2], in[3], in[4], float(eps), loc);
      },
      loc);
}

Tensor conv2d(const Tensor& x, const Tensor& w, std::optional<Tensor> bias, Conv2dOptions o,
              Loc loc) {
  ir::Ints2 k{kernel_dim(w, 2, "conv2d", loc), kernel_dim(w, 3, "conv2d", loc)};
  std::vector<int> at;
  auto ops = operands({x, w}, {&bias}, at);
  return apply(
      ops,
      [&](ir::Graph& g, Ids in) {
        ir::NodeId y = g.conv2d(in[0], in[1], k, o.stride, o.padding, o.dilation, o.groups, loc);
        return at[0] < 0 ? y : add_channel_bias(g, y, in[std::size_t(at[0])], loc);
      },
      loc);
}

Tensor conv_transpose2d(const Tensor& x, const Tensor& w, std::optional<Tensor> bias,
                        ConvTranspose2dOptions o, Loc loc) {
  ir::Ints2 k{kernel_dim(w, 2, "conv_transpose2d", loc), kernel_dim(w, 3, "conv_transpose2d", loc)};
  std::vector<int> at;
  auto ops = operands({x, w}, {&bias}, at);
  return apply(
      ops,
      [&](ir::Graph& g, Ids in) {
        ir::NodeId y = g.conv_transpose2d(in[0], in[1], k, o.stride, o.padding, o.dilation,
                                          o.output_padding, o.groups, loc);
        return at[0] < 0 ? y : add_channel_bias(g, y, in[std::size_t(at[0])], loc);
      },
      loc);
}

Tensor conv3d(const Tensor& x, const Tensor& w, Conv3dOptions o, Loc loc) {
  return apply(
      {x, w},
      [&](ir::Graph& g, Ids in) {
        return g.conv3d(in[0], in[1], o.stride, o.padding, o.dilation, o.groups, loc);
      },
      loc);
}

Tensor conv_transpose3d(const Tensor& x, const Tensor& w, Conv3dOptions o, Loc loc) {
  return apply(
      {x, w},
      [&](ir::Graph& g, Ids in) {
        return g.conv_transpose3d(in[0], in[1], o.stride, o.padding, o.dilation, o.output_padding,
                                  o.groups, loc);
      },
      loc);
}

Tensor conv_transpose1d(const Tensor& x, const Tensor& w, ConvTranspose1dOptions o, Loc loc) {
  int64_t k = kernel_dim(w, 2, "conv_transpose1d", loc);
  return apply(
      {x, w},
      [&](ir::Graph& g, Ids in) {
        return g.conv_transpose1d(in[0], in[1], k, o.stride, o.padding, o.dilation,
                                  o.output_padding, o.groups, loc);
      },
      loc);
}

Tensor im2col(const Tensor& x, ir::Ints2 kernel_size, Conv2dOptions o, Loc loc) {
  return detail::apply1(
      x,
      [&](ir::Graph& g, ir::NodeId in) {
        return g.im2col(in, kernel_size, o.stride, o.padding, o.dilation, loc);
      },
      loc);
}

Tensor max_pool2d(const Tensor& x, ir::Ints2 kernel_size, std::optional<ir::Ints2> stride,
                  ir::Ints2 padding, Loc loc) {
  return detail::apply1(
      x,
      [&](ir::Graph& g, ir::NodeId in) {
        return g.max_pool2d(in, kernel_size, stride.value_or(kernel_size), padding, loc);
      },
      loc);
}

Tensor avg_pool2d(const Tensor& x, ir::Ints2 kernel_size, std::optional<ir::Ints2> stride,
                  ir::Ints2 padding, Loc loc) {
  return detail::apply1(
      x,
      [&](ir::Graph& g, ir::NodeId in) {
        return g.avg_pool2d(in, kernel_size, stride.value_or(kernel_size), padding, loc);
      },
      loc);
}

Tensor interpolate1d(const Tensor& x, int64_t size, ir::InterpMode mode, Loc loc) {
  return detail::apply1(
      x, [&](ir::Graph& g, ir::NodeId in) { return g.interpolate1d(in, size, mode, loc); }, loc);
}

Tensor interpolate3d(const Tensor& x, ir::Ints3 size, ir::InterpMode mode, bool align_corners,
                     Loc loc) {
  return detail::apply1(
      x,
      [&](ir::Graph& g, ir::NodeId in) {
        return g.interpolate3d(in, size, mode, align_corners, loc);
      },
      loc);
}

namespace {
int64_t head_dim_of(const Tensor& q, int64_t num_heads, std::string_view what, const Loc& loc) {
  detail::check_defined(q, what, loc);
  if (num_heads <= 0)
    fail(ErrorKind::Value, what, ": num_heads must be positive, got ", num_heads,
         detail::at_loc(loc));
  int64_t width = q.ndim() ? q.size(-1, loc) : 0;
  if (width % num_heads != 0 || width == 0)
    fail(ErrorKind::Shape, what, ": the last axis of q ", ir::short_str(q.shape()),
         " does not split into ", num_heads, " heads", detail::at_loc(loc));
  return width / num_heads;
}
} // namespace

Tensor attention(const Tensor& q, const Tensor& k, const Tensor& v, int64_t num_heads,
                 AttentionOptions o, Loc loc) {
  int64_t hd = head_dim_of(q, num_heads, "attention", loc);
  return apply(
      {q, k, v},
      [&](ir::Graph& g, Ids in) {
        return g.attention_kind_opts(in[0], in[1], in[2], num_heads, hd, o.mask, g.shape(in[0]),
                                     o.scale, o.softcap, loc);
      },
      loc);
}

Tensor attention_masked(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask,
                        int64_t num_heads, AttentionOptions o, Loc loc) {
  int64_t hd = head_dim_of(q, num_heads, "attention", loc);
  return apply(
      {q, k, v, mask},
      [&](ir::Graph& g, Ids in) {
        return g.attention_opts(in[0], in[1], in[2], in[3], num_heads, hd, g.shape(in[0]), o.scale,
                                o.softcap, loc);
      },
      loc);
}

Tensor attention_bias(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& bias,
                      int64_t num_heads, AttentionOptions o, Loc loc) {
  int64_t hd = head_dim_of(q, num_heads, "attention", loc);
  return apply(
      {q, k, v, bias},
      [&](ir::Graph& g, Ids in) {
        return g.attention_bias_opts(in[0], in[1], in[2], in[3], num_heads, hd, g.shape(in[0]),
                                     o.scale, o.softcap, loc);
      },
      loc);
}

Tensor rope(const Tensor& x, const Tensor& cos, const Tensor& sin, int64_t head_dim, int64_t n_rot,
            ir::RopeStyle style, Loc loc) {
  return apply(
      {x, cos, sin},
      [&](ir::Graph& g, Ids in) {
        return g.rope_n_styled(in[0], in[1], in[2], head_dim, n_rot, style, loc);
      },
      loc);
}

Tensor axial_rope2d(const Tensor& x, int64_t end_x, int64_t end_y, int64_t head_dim,
                    int64_t num_heads, double theta, int64_t repeat_factor, Loc loc) {
  return detail::apply1(
      x,
      [&](ir::Graph& g, ir::NodeId in) {
        return g.axial_rope2d(in, end_x, end_y, head_dim, num_heads, float(theta), repeat_factor,
                              loc);
      },
      loc);
}

} // namespace rlx
