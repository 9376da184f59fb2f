// src/interp/conv.cpp -- convolution, im2col and pooling kernels, all built on one window walk.
// Every op here slides a window over the spatial axes of an NC... tensor. Window::taps lists, for
// one position on the "low" side (a conv's output, a transposed conv's input, a pool's output),
// the kernel offsets and in-range positions on the "high" side that it touches:
//   high = low * stride - padding + k * dilation   (per axis; out-of-range positions are padding).
// conv_direct and conv_transposed are the only two convolution loops (spatial rank 1..3).
// Float dtypes accumulate in double and round once; integer and bool dtypes accumulate in int64
// with wrap-around and saturate to the output dtype when stored (like element-wise integer math);
// integer avg pooling divides exactly and truncates toward zero. Complex operands are rejected,
// except by im2col, which copies raw element bytes.
#include "kernels.hpp"

#include "rlx/ir/infer.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <optional>
#include <span>
#include <type_traits>
#include <vector>

namespace rlx::interp::detail {

using ir::DType;
using ir::OpKind;

namespace {

constexpr std::size_t kMaxSpatial = 3;

struct Tap {
  int64_t k = 0;    ///< flat kernel offset
  int64_t high = 0; ///< flat spatial position on the high side
};

/// The geometry of a sliding window over `rank` spatial axes.
struct Window {
  std::size_t rank = 0;
  std::array<int64_t, kMaxSpatial> low{}, high{}, kernel{}, stride{}, pad{}, dil{};

  int64_t low_count() const { return product(low); }
  int64_t high_count() const { return product(high); }
  int64_t kernel_count() const { return product(kernel); }

  /// The in-range taps of flat low position `pos`, in row-major kernel order.
  void taps(int64_t pos, std::vector<Tap>& out, std::vector<Tap>& scratch) const {
    std::array<int64_t, kMaxSpatial> idx{};
    for (std::size_t d = rank; d-- > 0;) {
      idx[d] = pos % low[d];
      pos /= low[d];
    }
    out.assign(1, Tap{});
    for (std::size_t d = 0; d < rank; ++d) {
      scratch.clear();
      for (const Tap& t : out) {
        for (int64_t kk = 0; kk < kernel[d]; ++kk) {
          int64_t h = idx[d] * stride[d] - pad[d] + kk * dil[d];
          if (h >= 0 && h < high[d])
            scratch.push_back({t.k * kernel[d] + kk, t.high * high[d] + h});
        }
      }
      out.swap(scratch);
    }
  }

private:
  int64_t product(const std::array<int64_t, kMaxSpatial>& a) const {
    int64_t p = 1;
    for (std::size_t d = 0; d < rank; ++d) p *= a[d];
    return p;
  }
};

/// Spatial sizes of an NC... shape (axes 2..).
std::array<int64_t, kMaxSpatial> spatial(const ir::Shape& s) {
  std::array<int64_t, kMaxSpatial> a{};
  for (std::size_t d = 2; d < s.rank(); ++d) a[d - 2] = s.dims()[d].size();
  return a;
}

/// The window of a convolution-like op: kernel sizes from the weight (validated by the shape
/// rule), low/high sides from the node and its input.
Window make_window(const ir::Shape& low, const ir::Shape& high, const ir::Shape& weight,
                   std::span<const int64_t> stride, std::span<const int64_t> pad,
                   std::span<const int64_t> dil) {
  Window w;
  w.rank = stride.size();
  w.low = spatial(low);
  w.high = spatial(high);
  w.kernel = spatial(weight);
  for (std::size_t d = 0; d < w.rank; ++d) {
    w.stride[d] = stride[d];
    w.pad[d] = pad[d];
    w.dil[d] = dil[d];
  }
  return w;
}

/// The accumulation domain of a dtype: double for floats, wrapping uint64 for integers and bool.
template <class T> std::vector<T> load(const Buffer& b) {
  if constexpr (std::is_same_v<T, double>) {
    return b.to_f64();
  } else {
    std::vector<int64_t> v = b.to_i64();
    return std::vector<T>(v.begin(), v.end());
  }
}

template <class T> Buffer store(const ir::Shape& shape, const std::vector<T>& v) {
  Buffer out(shape);
  for (int64_t i = 0; i < out.numel(); ++i) {
    if constexpr (std::is_same_v<T, double>)
      out.set_f64(i, v[std::size_t(i)]);
    else
      out.set_i64(i, int64_t(v[std::size_t(i)]));
  }
  return out;
}

struct Channels {
  int64_t batch = 0, c_in = 0, c_out = 0, groups = 1;
};

/// out[n, oc, lo] = sum of x[n, g*Cig+ic, hi] * w[oc, ic, k] over the channels ic of oc's group g
/// and the taps (k, hi) of lo. Padding is zeros, as in PyTorch: a tap over padding adds 0 * w,
/// which is NaN where w is infinite or NaN (only such weights need the padded taps visited).
template <class T>
std::vector<T> conv_direct(const Window& win, const Channels& ch, const std::vector<T>& x,
                           const std::vector<T>& w) {
  const int64_t cig = ch.c_in / ch.groups, cog = ch.c_out / ch.groups;
  const int64_t lows = win.low_count(), highs = win.high_count(), ks = win.kernel_count();
  bool nonfinite_w = false;
  if constexpr (std::is_floating_point_v<T>)
    nonfinite_w = std::any_of(w.begin(), w.end(), [](T v) { return !std::isfinite(v); });
  std::vector<T> out(std::size_t(ch.batch * ch.c_out * lows), T{});
  std::vector<Tap> taps, scratch;
  std::vector<int64_t> padded; // kernel offsets of lo's taps over padding
  std::vector<char> in_range(static_cast<std::size_t>(ks));
  for (int64_t lo = 0; lo < lows; ++lo) {
    win.taps(lo, taps, scratch);
    padded.clear();
    if (nonfinite_w && int64_t(taps.size()) < ks) {
      std::fill(in_range.begin(), in_range.end(), 0);
      for (const Tap& t : taps) in_range[std::size_t(t.k)] = 1;
      for (int64_t k = 0; k < ks; ++k)
        if (!in_range[std::size_t(k)]) padded.push_back(k);
    }
    for (int64_t n = 0; n < ch.batch; ++n) {
      for (int64_t oc = 0; oc < ch.c_out; ++oc) {
        const int64_t g = oc / cog;
        T acc{};
        for (int64_t ic = 0; ic < cig; ++ic) {
          const int64_t xb = (n * ch.c_in + g * cig + ic) * highs, wb = (oc * cig + ic) * ks;
          for (const Tap& t : taps) acc += x[std::size_t(xb + t.high)] * w[std::size_t(wb + t.k)];
          for (int64_t k : padded) acc += T{} * w[std::size_t(wb + k)];
        }
        out[std::size_t((n * ch.c_out + oc) * lows + lo)] = acc;
      }
    }
  }
  return out;
}

/// The adjoint of conv_direct: out[n, g*Cog+oc, hi] += x[n, ic, lo] * w[ic, oc, k] for every tap
/// (k, hi) of lo, where g = ic / Cig.
template <class T>
std::vector<T> conv_transposed(const Window& win, const Channels& ch, const std::vector<T>& x,
                               const std::vector<T>& w) {
  const int64_t cig = ch.c_in / ch.groups, cog = ch.c_out / ch.groups;
  const int64_t lows = win.low_count(), highs = win.high_count(), ks = win.kernel_count();
  std::vector<T> out(std::size_t(ch.batch * ch.c_out * highs), T{});
  std::vector<Tap> taps, scratch;
  for (int64_t lo = 0; lo < lows; ++lo) {
    win.taps(lo, taps, scratch);
    for (int64_t n = 0; n < ch.batch; ++n) {
      for (int64_t ic = 0; ic < ch.c_in; ++ic) {
        const int64_t g = ic / cig;
        const T v = x[std::size_t((n * ch.c_in + ic) * lows + lo)];
        for (int64_t oc = 0; oc < cog; ++oc) {
          const int64_t ob = (n * ch.c_out + g * cog + oc) * highs, wb = (ic * cog + oc) * ks;
          for (const Tap& t : taps) out[std::size_t(ob + t.high)] += v * w[std::size_t(wb + t.k)];
        }
      }
    }
  }
  return out;
}

/// Runs conv_direct or conv_transposed in the dtype's accumulation domain.
Buffer eval_conv(const ir::Node& n, const Buffer& x, const Buffer& w, std::span<const int64_t> s,
                 std::span<const int64_t> p, std::span<const int64_t> d, int64_t groups,
                 bool transpose) {
  Channels ch{x.shape().dims()[0].size(), x.shape().dims()[1].size(), n.shape.dims()[1].size(),
              groups};
  // The low side is the conv's output, or the transposed conv's input.
  Window win = transpose ? make_window(x.shape(), n.shape, w.shape(), s, p, d)
                         : make_window(n.shape, x.shape(), w.shape(), s, p, d);
  if (int_domain(x.dtype())) {
    auto xv = load<uint64_t>(x), wv = load<uint64_t>(w);
    return store(n.shape,
                 transpose ? conv_transposed(win, ch, xv, wv) : conv_direct(win, ch, xv, wv));
  }
  auto xv = load<double>(x), wv = load<double>(w);
  return store(n.shape,
               transpose ? conv_transposed(win, ch, xv, wv) : conv_direct(win, ch, xv, wv));
}

/// Rows (n, ho, wo), columns (c, ki, kj); padded taps stay zero. Copies raw element bytes.
Buffer eval_im2col(const ir::Node& n, const Buffer& x) {
  const auto& a = n.op.attrs<ir::Im2ColAttrs>();
  const int64_t batch = x.shape().dims()[0].size(), c = x.shape().dims()[1].size();
  Window win;
  win.rank = 2;
  win.high = spatial(x.shape());
  for (std::size_t d = 0; d < 2; ++d) {
    win.kernel[d] = a.kernel_size[d];
    win.stride[d] = a.stride[d];
    win.pad[d] = a.padding[d];
    win.dil[d] = a.dilation[d];
    // The grid of window positions, as a conv's output axis (the shape rule checked it fits).
    win.low[d] =
        (win.high[d] + 2 * win.pad[d] - win.dil[d] * (win.kernel[d] - 1) - 1) / win.stride[d] + 1;
  }
  const int64_t lows = win.low_count(), highs = win.high_count(), ks = win.kernel_count();
  const int64_t cols = c * ks;
  const std::size_t elem = ir::size_bytes(x.dtype());
  Buffer out(n.shape);
  std::span<const std::byte> src = x.bytes();
  std::span<std::byte> dst = out.bytes();
  std::vector<Tap> taps, scratch;
  for (int64_t lo = 0; lo < lows; ++lo) {
    win.taps(lo, taps, scratch);
    for (int64_t b = 0; b < batch; ++b) {
      const int64_t row = b * lows + lo;
      for (int64_t ch = 0; ch < c; ++ch) {
        for (const Tap& t : taps) {
          const int64_t from = (b * c + ch) * highs + t.high, to = row * cols + ch * ks + t.k;
          std::copy_n(src.begin() + std::ptrdiff_t(std::size_t(from) * elem), elem,
                      dst.begin() + std::ptrdiff_t(std::size_t(to) * elem));
        }
      }
    }
  }
  return out;
}

/// Max pooling ignores padded taps (NaN wins); average pooling divides by the full kernel size.
template <class T> Buffer pool(const ir::Node& n, const Buffer& x, bool is_max) {
  const auto& a = n.op.attrs<ir::Pool2dAttrs>();
  const std::array<int64_t, 2> one{1, 1};
  ir::Shape weight({1, 1, a.kernel_size[0], a.kernel_size[1]}, x.dtype());
  Window win = make_window(n.shape, x.shape(), weight, a.stride, a.padding, one);
  const int64_t planes = n.shape.dims()[0].size() * n.shape.dims()[1].size();
  const int64_t lows = win.low_count(), highs = win.high_count(), ks = win.kernel_count();
  std::vector<T> xv;
  if constexpr (std::is_same_v<T, double>)
    xv = x.to_f64();
  else
    xv = x.to_i64();
  Buffer out(n.shape);
  std::vector<Tap> taps, scratch;
  for (int64_t lo = 0; lo < lows; ++lo) {
    win.taps(lo, taps, scratch);
    for (int64_t pl = 0; pl < planes; ++pl) {
      const std::size_t xb = std::size_t(pl * highs);
      const int64_t o = pl * lows + lo;
      if constexpr (std::is_same_v<T, double>) {
        if (is_max) {
          double m = -std::numeric_limits<double>::infinity();
          for (const Tap& t : taps) {
            double v = xv[xb + std::size_t(t.high)];
            if (std::isnan(v) || v > m) m = v;
            if (std::isnan(m)) break;
          }
          out.set_f64(o, m);
        } else {
          double sum = 0;
          for (const Tap& t : taps) sum += xv[xb + std::size_t(t.high)];
          out.set_f64(o, sum / double(ks));
        }
      } else {
        if (is_max) {
          int64_t m = std::numeric_limits<int64_t>::min();
          for (const Tap& t : taps) m = std::max(m, xv[xb + std::size_t(t.high)]);
          out.set_i64(o, m);
        } else {
          __extension__ __int128 sum = 0; // exact: at most 2^48 terms of at most 2^63
          for (const Tap& t : taps) sum += xv[xb + std::size_t(t.high)];
          out.set_i64(o, int64_t(sum / ks));
        }
      }
    }
  }
  return out;
}

/// The operand the kernels read, after checking the operands give the node's shape (eval_node
/// may be called directly with others) and are not complex (im2col only moves values).
const Buffer& checked_input(const ir::Node& n, Operands in) {
  std::vector<ir::Shape> shapes;
  for (const Buffer* b : in) shapes.push_back(b->shape());
  if (std::optional<ir::Shape> s = ir::infer_shape(n.op, shapes); !s || *s != n.shape)
    fail(ErrorKind::Runtime, n.op.name(), ": operands do not give the node's shape ",
         ir::short_str(n.shape));
  const Buffer& x = *in[0];
  if (ir::is_complex(x.dtype()) && n.op.kind() != OpKind::Im2Col)
    fail(ErrorKind::Unsupported, n.op.name(), ": not defined for complex operands (",
         ir::short_str(x.shape()), ")");
  return x;
}

template <class A> Buffer conv(const ir::Node& n, Operands in, bool transposed) {
  const Buffer& x = checked_input(n, in);
  const auto& a = n.op.attrs<A>();
  return eval_conv(n, x, *in[1], a.stride, a.padding, a.dilation, a.groups, transposed);
}

Buffer pool_kernel(const ir::Node& n, Operands in, bool is_max) {
  const Buffer& x = checked_input(n, in);
  return int_domain(x.dtype()) ? pool<int64_t>(n, x, is_max) : pool<double>(n, x, is_max);
}

} // namespace

RLX_KERNEL(Conv2d) { return conv<ir::Conv2dAttrs>(n, in, false); }
RLX_KERNEL(Conv3d) { return conv<ir::Conv3dAttrs>(n, in, false); }
RLX_KERNEL(ConvTranspose2d) { return conv<ir::ConvTranspose2dAttrs>(n, in, true); }
RLX_KERNEL(ConvTranspose3d) { return conv<ir::ConvTranspose3dAttrs>(n, in, true); }
RLX_KERNEL(ConvTranspose1d) {
  const Buffer& x = checked_input(n, in);
  const auto& a = n.op.attrs<ir::ConvTranspose1dAttrs>();
  return eval_conv(n, x, *in[1], {&a.stride, 1}, {&a.padding, 1}, {&a.dilation, 1}, a.groups, true);
}
RLX_KERNEL(Im2Col) { return eval_im2col(n, checked_input(n, in)); }
RLX_KERNEL(MaxPool2d) { return pool_kernel(n, in, true); }
RLX_KERNEL(AvgPool2d) { return pool_kernel(n, in, false); }

} // namespace rlx::interp::detail
