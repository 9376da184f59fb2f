// src/interp/contract.cpp -- contraction kernels: matmul, fused_matmul_bias_act, fused_swiglu.
// matmul follows NumPy: batch dims broadcast, a rank-1 lhs is a row vector (its M axis dropped),
// a rank-1 rhs a column vector (its N axis dropped). Floats accumulate in double and round once;
// integers (and bool) accumulate in int64 with wrap-around and are stored with Buffer::set_i64
// (which saturates to narrower dtypes, as the element-wise kernels do); c64 accumulates in
// complex<double>.
#include "kernels.hpp"

#include <algorithm>
#include <cmath>
#include <complex>
#include <iterator>
#include <optional>

namespace rlx::interp::detail {

using ir::DType;
using ir::OpKind;

namespace {

/// The NumPy broadcast of two static shapes, or nullopt when they do not broadcast.
std::optional<std::vector<int64_t>> broadcast_sizes(const std::vector<int64_t>& a,
                                                    const std::vector<int64_t>& b) {
  std::size_t r = std::max(a.size(), b.size());
  std::vector<int64_t> out(r);
  for (std::size_t i = 0; i < r; ++i) {
    int64_t da = i + a.size() >= r ? a[i + a.size() - r] : 1;
    int64_t db = i + b.size() >= r ? b[i + b.size() - r] : 1;
    if (da != db && da != 1 && db != 1) return std::nullopt;
    out[i] = da == 1 ? db : da;
  }
  return out;
}

/// The index arithmetic of one (possibly batched, possibly vector) matmul, checked against the
/// node's declared shape so that a malformed call cannot read out of bounds.
struct MatMulPlan {
  int64_t batches = 1, m = 1, k = 1, n = 1;
  std::vector<int64_t> a_off, b_off; // element offset of each batch's matrices
};

MatMulPlan plan_matmul(const ir::Node& node, const Buffer& a, const Buffer& b) {
  std::vector<int64_t> as = a.shape().sizes(), bs = b.shape().sizes();
  if (as.empty() || bs.empty())
    fail(ErrorKind::Shape, node.op.name(), ": operands must have rank >= 1, got ",
         ir::short_str(a.shape()), " @ ", ir::short_str(b.shape()));
  MatMulPlan p;
  p.k = as.back();
  p.m = as.size() >= 2 ? as[as.size() - 2] : 1;
  p.n = bs.size() >= 2 ? bs.back() : 1;
  int64_t kb = bs.size() == 1 ? bs[0] : bs[bs.size() - 2];
  std::vector<int64_t> a_batch(as.begin(), as.end() - std::min<std::ptrdiff_t>(2, std::ssize(as)));
  std::vector<int64_t> b_batch(bs.begin(), bs.end() - std::min<std::ptrdiff_t>(2, std::ssize(bs)));
  std::optional<std::vector<int64_t>> batch = broadcast_sizes(a_batch, b_batch);
  std::vector<int64_t> want = batch.value_or(std::vector<int64_t>{});
  if (as.size() >= 2) want.push_back(p.m);
  if (bs.size() >= 2) want.push_back(p.n);
  if (kb != p.k || !batch || want != node.shape.sizes())
    fail(ErrorKind::Shape, node.op.name(), ": ", ir::short_str(a.shape()), " @ ",
         ir::short_str(b.shape()), " does not give ", ir::short_str(node.shape));
  ir::Shape ob = ir::Shape::of(*batch, DType::I64);
  BroadcastIndex ia(ir::Shape::of(a_batch, DType::I64), ob);
  BroadcastIndex ib(ir::Shape::of(b_batch, DType::I64), ob);
  for (int64_t d : *batch) p.batches *= d;
  for (int64_t t = 0; t < p.batches; ++t) {
    p.a_off.push_back(ia(t) * p.m * p.k);
    p.b_off.push_back(ib(t) * p.k * p.n);
  }
  return p;
}

/// Products in the accumulator type T (double, uint64_t with wrap-around, complex<double>), one
/// per output element in row-major order.
template <class T>
std::vector<T> matmul_acc(const MatMulPlan& p, const std::vector<T>& a, const std::vector<T>& b) {
  std::vector<T> out(std::size_t(p.batches * p.m * p.n), T{});
  for (int64_t t = 0; t < p.batches; ++t) {
    int64_t ao = p.a_off[std::size_t(t)], bo = p.b_off[std::size_t(t)];
    for (int64_t i = 0; i < p.m; ++i)
      for (int64_t j = 0; j < p.n; ++j) {
        T acc{};
        for (int64_t q = 0; q < p.k; ++q)
          acc += a[std::size_t(ao + i * p.k + q)] * b[std::size_t(bo + q * p.n + j)];
        out[std::size_t((t * p.m + i) * p.n + j)] = acc;
      }
  }
  return out;
}

std::vector<uint64_t> as_u64(const Buffer& x) {
  std::vector<uint64_t> v(std::size_t(x.numel()));
  for (int64_t i = 0; i < x.numel(); ++i) v[std::size_t(i)] = uint64_t(x.get_i64(i));
  return v;
}

std::vector<std::complex<double>> as_c128(const Buffer& x) {
  std::vector<std::complex<double>> v(std::size_t(x.numel()));
  for (int64_t i = 0; i < x.numel(); ++i) v[std::size_t(i)] = x.get_c64(i);
  return v;
}

/// An activation on an integer value (the kIntegerOk ones, with wrap-around like element-wise
/// neg/abs); the others are a type error.
int64_t int_activation(const ir::Node& n, ir::Activation act, int64_t x) {
  if (std::optional<int64_t> v = integer_activation(ir::to_op_kind(act), x)) return *v;
  fail(ErrorKind::Type, n.op.name(), ": activation ", enum_name(act),
       " needs a floating-point dtype, got ", ir::short_str(n.shape));
}

Buffer matmul_bias_act(const ir::Node& n, Operands in) {
  const Buffer &a = *in[0], &b = *in[1];
  MatMulPlan p = plan_matmul(n, a, b);
  const Buffer* bias = n.op.kind() == OpKind::FusedMatMulBiasAct ? in[2] : nullptr;
  std::optional<ir::Activation> act;
  if (bias) {
    act = n.op.attrs<ir::FusedMatMulAttrs>().activation;
    if (!broadcasts_to(bias->shape().sizes(), n.shape.sizes()))
      fail(ErrorKind::Shape, n.op.name(), ": bias ", ir::short_str(bias->shape()),
           " does not broadcast to ", ir::short_str(n.shape));
  }
  std::optional<BroadcastIndex> bias_index;
  if (bias) bias_index.emplace(bias->shape(), n.shape);
  auto bias_at = [&](int64_t i) { return (*bias_index)(i); };
  Buffer out(n.shape);
  DType t = n.shape.dtype();
  if (t == DType::C64) {
    if (act)
      fail(ErrorKind::Unsupported, n.op.name(), ": activation ", enum_name(*act),
           " is not defined for complex operands");
    std::vector<std::complex<double>> r = matmul_acc(p, as_c128(a), as_c128(b));
    for (int64_t i = 0; i < out.numel(); ++i) {
      std::complex<double> v = r[std::size_t(i)];
      if (bias) v += std::complex<double>(bias->get_c64(bias_at(i)));
      out.set_c64(i, std::complex<float>(v));
    }
  } else if (int_domain(t)) {
    std::vector<uint64_t> r = matmul_acc(p, as_u64(a), as_u64(b));
    for (int64_t i = 0; i < out.numel(); ++i) {
      uint64_t v = r[std::size_t(i)];
      if (bias) v += uint64_t(bias->get_i64(bias_at(i)));
      out.set_i64(i, act ? int_activation(n, *act, int64_t(v)) : int64_t(v));
    }
  } else {
    std::vector<double> r = matmul_acc(p, a.to_f64(), b.to_f64());
    for (int64_t i = 0; i < out.numel(); ++i) {
      double v = r[std::size_t(i)];
      if (bias) v += bias->get_f64(bias_at(i));
      out.set_f64(i, act ? apply_activation(*act, v) : v);
    }
  }
  return out;
}

double silu(double x) {
  double s = x >= 0 ? 1.0 / (1.0 + std::exp(-x)) : std::exp(x) / (1.0 + std::exp(x));
  return x * s;
}

Buffer swiglu(const ir::Node& n, const Buffer& h) {
  if (!ir::is_float(h.dtype()) || !ir::is_float(n.shape.dtype()))
    fail(ErrorKind::Type, n.op.name(), ": needs a floating-point operand, got ",
         ir::short_str(h.shape()));
  std::vector<int64_t> hs = h.shape().sizes(), os = n.shape.sizes();
  if (hs.empty() || hs.size() != os.size() || hs.back() != 2 * os.back() ||
      !std::equal(hs.begin(), hs.end() - 1, os.begin()))
    fail(ErrorKind::Shape, n.op.name(), ": ", ir::short_str(h.shape()), " does not give ",
         ir::short_str(n.shape));
  Buffer out(n.shape);
  int64_t half = os.back();
  if (out.numel() == 0) return out;
  bool gate_first = n.op.attrs<ir::SwiGluAttrs>().gate_first;
  int64_t rows = out.numel() / half;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < half; ++j) {
      double first = h.get_f64(r * 2 * half + j), second = h.get_f64(r * 2 * half + half + j);
      double up = gate_first ? second : first, gate = gate_first ? first : second;
      out.set_f64(r * half + j, silu(gate) * up);
    }
  return out;
}

void check_arity(const ir::Node& n, Operands in) {
  if (std::ssize(in) != ir::op_info(n.op.kind()).arity)
    fail(ErrorKind::Runtime, n.op.name(), ": takes ", ir::op_info(n.op.kind()).arity,
         " operands, got ", in.size());
}

} // namespace

RLX_KERNEL(MatMul) {
  check_arity(n, in);
  return matmul_bias_act(n, in);
}
RLX_KERNEL(FusedMatMulBiasAct) {
  check_arity(n, in);
  return matmul_bias_act(n, in);
}
RLX_KERNEL(FusedSwiGLU) {
  check_arity(n, in);
  return swiglu(n, *in[0]);
}

} // namespace rlx::interp::detail
