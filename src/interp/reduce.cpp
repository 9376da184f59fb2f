// src/interp/reduce.cpp -- reduce_scan kernels: reductions over axes, argmax/argmin, cumsum,
// softmax. Floats accumulate in double and round once to the output dtype; integers (and bools)
// accumulate in int64 with wrap-around through uint64 and store with the buffer's saturating
// conversion; c64 sums and products accumulate in complex<double>.
#include "kernels.hpp"

#include <cmath>
#include <complex>
#include <limits>
#include <span>
#include <utility>
#include <vector>

namespace rlx::interp::detail {

using ir::DType;
using ir::OpKind;

namespace {

int64_t wrap_add(int64_t a, int64_t b) { return int64_t(uint64_t(a) + uint64_t(b)); }
int64_t wrap_mul(int64_t a, int64_t b) { return int64_t(uint64_t(a) * uint64_t(b)); }

/// Integer-valued dtypes (read with get_i64): integers and bool.
[[noreturn]] void empty_axis(const ir::Node& n, const Buffer& x) {
  fail(ErrorKind::Value, n.op.name(), ": cannot reduce an empty axis (", ir::short_str(x.shape()),
       ")");
}

[[noreturn]] void no_complex(const ir::Node& n, const Buffer& x) {
  fail(ErrorKind::Unsupported, n.op.name(), ": not defined for complex operands (",
       ir::short_str(x.shape()), ")");
}

/// Row-major walk over `sizes`: f(flat index, offset) where offset advances by strides[a] per
/// step on axis a (an odometer, so no division per element).
template <class F>
void walk(std::span<const int64_t> sizes, std::span<const int64_t> strides, F&& f) {
  int64_t total = 1;
  for (int64_t s : sizes) total *= s;
  std::vector<int64_t> coord(sizes.size(), 0);
  int64_t off = 0;
  for (int64_t i = 0; i < total; ++i) {
    f(i, off);
    for (std::size_t a = sizes.size(); a-- > 0;) {
      if (++coord[a] < sizes[a]) {
        off += strides[a];
        break;
      }
      off -= (sizes[a] - 1) * strides[a];
      coord[a] = 0;
    }
  }
}

/// Sums of a float tensor whose axes, neighbours of one kind merged and size-1 axes left out,
/// are [reduced, kept] (a bias gradient: a sum over the batch), [kept, reduced] (row sums), or
/// one of the two alone: the additions walk() makes, in its order (each output adds its inputs
/// in increasing flat order), on elements read straight from memory instead of one get_f64 and
/// one odometer step per element. False, touching nothing, for other layouts.
template <class T>
bool sum_in_blocks(std::span<const int64_t> sizes, const std::vector<bool>& reduced,
                   const Buffer& x, std::vector<double>& acc) {
  std::vector<std::pair<bool, int64_t>> blocks; // (reduced, elements)
  for (std::size_t a = 0; a < sizes.size(); ++a) {
    if (sizes[a] == 1) continue;
    if (!blocks.empty() && blocks.back().first == reduced[a])
      blocks.back().second *= sizes[a];
    else
      blocks.emplace_back(reduced[a], sizes[a]);
  }
  if (blocks.empty() || blocks.size() > 2) return false;
  const T* p = reinterpret_cast<const T*>(x.bytes().data());
  if (blocks.size() == 1) {
    const int64_t len = blocks[0].second;
    if (blocks[0].first) { // everything reduced into acc[0]
      double a = acc[0];
      for (int64_t i = 0; i < len; ++i) a += double(p[i]);
      acc[0] = a;
    } else { // nothing reduced: each output is its element
      for (int64_t i = 0; i < len; ++i) acc[std::size_t(i)] += double(p[i]);
    }
    return true;
  }
  if (blocks[0].first) { // [R, D]: row r adds into every output
    const int64_t rows = blocks[0].second, cols = blocks[1].second;
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t d = 0; d < cols; ++d) acc[std::size_t(d)] += double(p[r * cols + d]);
  } else { // [D, R]: output d sums its own row
    const int64_t rows = blocks[0].second, len = blocks[1].second;
    for (int64_t d = 0; d < rows; ++d) {
      double a = acc[std::size_t(d)];
      for (int64_t r = 0; r < len; ++r) a += double(p[d * len + r]);
      acc[std::size_t(d)] = a;
    }
  }
  return true;
}

Buffer reduce(const ir::Node& n, const Buffer& x) {
  OpKind k = n.op.kind();
  const auto& attrs = n.op.attrs<ir::ReduceAttrs>();
  std::vector<int64_t> sizes = x.shape().sizes();
  std::vector<bool> reduced(sizes.size(), false);
  for (int64_t a : attrs.axes) reduced[std::size_t(norm_axis(a, sizes.size()))] = true;

  // Offset of each input axis in the output (0 on reduced axes); keep_dim adds only size-1 axes,
  // which do not change flat offsets.
  std::vector<int64_t> out_strides(sizes.size(), 0);
  int64_t stride = 1, count = 1;
  for (std::size_t a = sizes.size(); a-- > 0;) {
    if (reduced[a]) {
      count *= sizes[a];
    } else {
      out_strides[a] = stride;
      stride *= sizes[a];
    }
  }
  bool extremum = k == OpKind::ReduceMax || k == OpKind::ReduceMin;
  if (extremum && count == 0) empty_axis(n, x);

  Buffer out(n.shape);
  std::size_t m = std::size_t(out.numel());
  if (x.dtype() == DType::C64) {
    if (extremum) no_complex(n, x);
    std::complex<double> init = k == OpKind::ReduceProd ? 1.0 : 0.0;
    std::vector<std::complex<double>> acc(m, init);
    walk(sizes, out_strides, [&](int64_t i, int64_t o) {
      std::complex<double> v(x.get_c64(i));
      if (k == OpKind::ReduceProd)
        acc[std::size_t(o)] *= v;
      else
        acc[std::size_t(o)] += v;
    });
    for (std::size_t o = 0; o < m; ++o) {
      std::complex<double> r = acc[o];
      if (k == OpKind::ReduceMean)
        r = count ? r / double(count)
                  : std::complex<double>(std::numeric_limits<double>::quiet_NaN());
      out.set_c64(int64_t(o), std::complex<float>(r));
    }
    return out;
  }
  if (int_domain(x.dtype())) {
    int64_t init = 0;
    if (k == OpKind::ReduceProd) init = 1;
    if (k == OpKind::ReduceMax) init = std::numeric_limits<int64_t>::min();
    if (k == OpKind::ReduceMin) init = std::numeric_limits<int64_t>::max();
    std::vector<int64_t> acc(m, init);
    walk(sizes, out_strides, [&](int64_t i, int64_t o) {
      int64_t v = x.get_i64(i);
      int64_t& a = acc[std::size_t(o)];
      switch (k) {
      case OpKind::ReduceMax:
        a = v > a ? v : a;
        break;
      case OpKind::ReduceMin:
        a = v < a ? v : a;
        break;
      case OpKind::ReduceProd:
        a = wrap_mul(a, v);
        break;
      default:
        a = wrap_add(a, v);
        break;
      }
    });
    for (std::size_t o = 0; o < m; ++o) {
      int64_t r = acc[o];
      if (k == OpKind::ReduceMean) r = count ? r / count : 0; // truncates toward zero
      out.set_i64(int64_t(o), r);
    }
    return out;
  }
  constexpr double kInf = std::numeric_limits<double>::infinity();
  double init = 0.0;
  if (k == OpKind::ReduceProd) init = 1.0;
  if (k == OpKind::ReduceMax) init = -kInf;
  if (k == OpKind::ReduceMin) init = kInf;
  std::vector<double> acc(m, init);
  const bool sum = k == OpKind::ReduceSum || k == OpKind::ReduceMean;
  const bool blocked =
      sum && ((x.dtype() == DType::F32 && sum_in_blocks<float>(sizes, reduced, x, acc)) ||
              (x.dtype() == DType::F64 && sum_in_blocks<double>(sizes, reduced, x, acc)));
  if (!blocked)
    walk(sizes, out_strides, [&](int64_t i, int64_t o) {
      double v = x.get_f64(i);
      double& a = acc[std::size_t(o)];
      switch (k) {
      case OpKind::ReduceMax: // a NaN sticks: once a is NaN, v > a is false
        if (std::isnan(v) || v > a) a = v;
        break;
      case OpKind::ReduceMin:
        if (std::isnan(v) || v < a) a = v;
        break;
      case OpKind::ReduceProd:
        a *= v;
        break;
      default:
        a += v;
        break;
      }
    });
  for (std::size_t o = 0; o < m; ++o) {
    double r = acc[o];
    if (k == OpKind::ReduceMean)
      r = count ? r / double(count) : std::numeric_limits<double>::quiet_NaN();
    out.set_f64(int64_t(o), r);
  }
  return out;
}

Buffer arg_reduce(const ir::Node& n, const Buffer& x) {
  bool is_max = n.op.kind() == OpKind::ArgMax;
  const auto& attrs = n.op.attrs<ir::ArgReduceAttrs>();
  AxisSplit s = split_at(x.shape(), norm_axis(attrs.axis, x.shape().rank()));
  if (x.dtype() == DType::C64) no_complex(n, x);
  if (s.len == 0) empty_axis(n, x);
  Buffer out(n.shape);
  bool ints = int_domain(x.dtype());
  for (int64_t o = 0; o < s.outer; ++o) {
    for (int64_t j = 0; j < s.inner; ++j) {
      int64_t base = o * s.len * s.inner + j, best = 0;
      if (ints) {
        int64_t bv = x.get_i64(base);
        for (int64_t t = 1; t < s.len; ++t) {
          int64_t v = x.get_i64(base + t * s.inner);
          if (is_max ? v > bv : v < bv) bv = v, best = t;
        }
      } else {
        double bv = x.get_f64(base);
        for (int64_t t = 1; t < s.len && !std::isnan(bv); ++t) {
          double v = x.get_f64(base + t * s.inner);
          if (std::isnan(v) || (is_max ? v > bv : v < bv)) bv = v, best = t;
        }
      }
      out.set_i64(o * s.inner + j, best);
    }
  }
  return out;
}

Buffer cumsum(const ir::Node& n, const Buffer& x) {
  const auto& attrs = n.op.attrs<ir::CumsumAttrs>();
  AxisSplit s = split_at(x.shape(), norm_axis(attrs.axis, x.shape().rank()));
  Buffer out(n.shape);
  for (int64_t o = 0; o < s.outer; ++o) {
    for (int64_t j = 0; j < s.inner; ++j) {
      int64_t base = o * s.len * s.inner + j;
      if (x.dtype() == DType::C64) {
        std::complex<double> acc = 0.0;
        for (int64_t t = 0; t < s.len; ++t) {
          int64_t i = base + t * s.inner;
          std::complex<double> v(x.get_c64(i));
          if (!attrs.exclusive) acc += v;
          out.set_c64(i, std::complex<float>(acc));
          if (attrs.exclusive) acc += v;
        }
      } else if (int_domain(x.dtype())) {
        int64_t acc = 0;
        for (int64_t t = 0; t < s.len; ++t) {
          int64_t i = base + t * s.inner, v = x.get_i64(i);
          if (!attrs.exclusive) acc = wrap_add(acc, v);
          out.set_i64(i, acc);
          if (attrs.exclusive) acc = wrap_add(acc, v);
        }
      } else {
        double acc = 0.0;
        for (int64_t t = 0; t < s.len; ++t) {
          int64_t i = base + t * s.inner;
          double v = x.get_f64(i);
          if (!attrs.exclusive) acc += v;
          out.set_f64(i, acc);
          if (attrs.exclusive) acc += v;
        }
      }
    }
  }
  return out;
}

/// exp(x - max) / sum, in double. An all -inf row gives NaN (-inf - -inf), as in PyTorch; a NaN
/// anywhere in a row makes the whole row NaN.
Buffer softmax(const ir::Node& n, const Buffer& x) {
  AxisSplit s = split_at(x.shape(), norm_axis(n.op.attrs<ir::AxisAttrs>().axis, x.shape().rank()));
  Buffer out(n.shape);
  std::vector<double> e(std::size_t(s.len));
  for (int64_t o = 0; o < s.outer; ++o) {
    for (int64_t j = 0; j < s.inner; ++j) {
      int64_t base = o * s.len * s.inner + j;
      double mx = -std::numeric_limits<double>::infinity();
      for (int64_t t = 0; t < s.len; ++t) {
        double v = x.get_f64(base + t * s.inner);
        if (v > mx) mx = v;
      }
      double sum = 0.0;
      for (int64_t t = 0; t < s.len; ++t) {
        e[std::size_t(t)] = std::exp(x.get_f64(base + t * s.inner) - mx);
        sum += e[std::size_t(t)];
      }
      for (int64_t t = 0; t < s.len; ++t) out.set_f64(base + t * s.inner, e[std::size_t(t)] / sum);
    }
  }
  return out;
}

} // namespace

RLX_KERNEL(ReduceSum) { return reduce(n, *in[0]); }
RLX_KERNEL(ReduceMean) { return reduce(n, *in[0]); }
RLX_KERNEL(ReduceMax) { return reduce(n, *in[0]); }
RLX_KERNEL(ReduceMin) { return reduce(n, *in[0]); }
RLX_KERNEL(ReduceProd) { return reduce(n, *in[0]); }
RLX_KERNEL(ArgMax) { return arg_reduce(n, *in[0]); }
RLX_KERNEL(ArgMin) { return arg_reduce(n, *in[0]); }
RLX_KERNEL(Cumsum) { return cumsum(n, *in[0]); }
RLX_KERNEL(Softmax) { return softmax(n, *in[0]); }

} // namespace rlx::interp::detail
