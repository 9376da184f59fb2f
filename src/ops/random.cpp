// src/ops/random.cpp -- shape rules of the Random family: random and sample (semantics in
// include/rlx/ir/ops.def). A key operand is an i64 scalar holding the key's 64 bits.
#include "infer_common.hpp"

#include "rlx/enum.hpp"

#include <cmath>

namespace rlx::ir::detail {

namespace {

void need_key(const Op& op, std::span<const Shape> in, std::size_t i) {
  if (in[i].rank() != 0 || in[i].dtype() != DType::I64)
    fail(ErrorKind::Type, op.name(), ": the key must be an i64 scalar, got ", short_str(in[i]),
         " (operands ", shapes_str(in), ")");
}

template <class... Args> [[noreturn]] void bad_attrs(const Op& op, const Args&... args) {
  fail(ErrorKind::Value, op.name(), ": ", enum_name(op.attrs<RandomAttrs>().dist), " ", args...);
}

Shape random_rule(const Op& op, std::span<const Shape> in) {
  need_key(op, in, 0);
  const auto& a = op.attrs<RandomAttrs>();
  for (int64_t s : a.sizes)
    if (s < 0) bad_attrs(op, "needs non-negative sizes");
  const DType t = a.dtype;
  auto need = [&](bool ok, const char* what) {
    if (!ok)
      fail(ErrorKind::Type, op.name(), ": ", enum_name(a.dist), " needs ", what, ", got ",
           dtype_name(t));
  };
  switch (a.dist) {
  case RandomDist::Uniform:
    need(is_float(t), "a float dtype");
    if (!(std::isfinite(a.lo) && std::isfinite(a.hi) && a.lo <= a.hi))
      bad_attrs(op, "needs finite lo <= hi, got [", a.lo, ", ", a.hi, ")");
    break;
  case RandomDist::Normal:
    need(is_float(t), "a float dtype");
    if (!(std::isfinite(a.lo) && std::isfinite(a.hi) && a.hi >= 0))
      bad_attrs(op, "needs a finite mean and standard deviation >= 0, got (", a.lo, ", ", a.hi,
                ")");
    break;
  case RandomDist::Gumbel:
  case RandomDist::Exponential:
    need(is_float(t), "a float dtype");
    break;
  case RandomDist::Bernoulli:
    need(t == DType::Bool, "bool");
    if (!(a.lo >= 0 && a.lo <= 1)) bad_attrs(op, "needs p (lo) in [0, 1], got ", a.lo);
    break;
  case RandomDist::Randint:
    need(is_int(t), "an integer dtype");
    if (a.ilo >= a.ihi) bad_attrs(op, "needs ilo < ihi, got [", a.ilo, ", ", a.ihi, ")");
    break;
  case RandomDist::Permutation:
    need(t == DType::I64, "i64");
    if (a.sizes.size() != 1 || a.ihi < 0 || a.sizes[0] > a.ihi)
      bad_attrs(op, "needs sizes [k] with k <= n (ihi), got k of ", a.sizes.size(), " axes, n ",
                a.ihi);
    break;
  case RandomDist::Split:
    need(t == DType::I64, "i64");
    if (a.sizes.size() != 1) bad_attrs(op, "needs sizes [n]");
    break;
  case RandomDist::FoldIn:
    need(t == DType::I64, "i64");
    if (!a.sizes.empty()) bad_attrs(op, "gives a scalar key: sizes must be empty");
    break;
  }
  return Shape::of(a.sizes, t);
}

Shape sample_rule(const Op& op, std::span<const Shape> in) {
  if (in.size() > 2) shape_error(op, in, "takes logits and an optional key");
  const Shape& l = in[0];
  if (l.rank() != 2) shape_error(op, in, "needs logits [batch, vocab]");
  if (!is_float(l.dtype()))
    fail(ErrorKind::Type, op.name(), ": needs float logits, got ", shapes_str(in));
  if (in.size() == 2) need_key(op, in, 1);
  const auto& a = op.attrs<SampleAttrs>();
  if (a.top_k < 0) fail(ErrorKind::Value, op.name(), ": top_k must be >= 0, got ", a.top_k);
  if (!(a.top_p > 0 && a.top_p <= 1))
    fail(ErrorKind::Value, op.name(), ": top_p must be in (0, 1], got ", a.top_p);
  if (!(std::isfinite(a.temperature) && a.temperature >= 0))
    fail(ErrorKind::Value, op.name(), ": temperature must be finite and >= 0, got ", a.temperature);
  if (l.dims()[1].is_static() && l.dims()[1].size() == 0)
    shape_error(op, in, "needs at least one token (vocab 0)");
  return Shape(std::vector<Dim>{l.dims()[0]}, DType::F32);
}

} // namespace

std::optional<Shape> infer_random(const Op& op, std::span<const Shape> in) {
  switch (op.kind()) {
  case OpKind::Random:
    return random_rule(op, in);
  case OpKind::Sample:
    return sample_rule(op, in);
  default:
    return std::nullopt;
  }
}

} // namespace rlx::ir::detail
