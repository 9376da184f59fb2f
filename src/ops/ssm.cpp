// src/ops/ssm.cpp -- shape rules of the state-space family: selective_scan (Mamba S6), mamba2
// (SSD) and gated_delta_net (semantics in include/rlx/ir/ops.def; the recurrences, written out,
// in include/rlx/ir/graph.hpp next to the builders and in src/interp/ssm.cpp).
#include "infer_common.hpp"

namespace rlx::ir::detail {

namespace {

/// Two dims that must agree: a shape error when both are static and differ (a symbol is assumed
/// to agree; bind() re-runs the rule with sizes).
void agree(const Op& op, std::span<const Shape> in, const Dim& a, const Dim& b,
           std::string_view what) {
  if (a.is_static() && b.is_static() && a.size() != b.size())
    shape_error(op, in, what, " (", a.size(), " vs ", b.size(), ")");
}

void check_rank(const Op& op, std::span<const Shape> in, std::size_t i, std::size_t rank,
                std::string_view name, std::string_view layout) {
  if (in[i].rank() != rank)
    shape_error(op, in, name, " must be ", layout, " (rank ", rank, "), got rank ", in[i].rank());
}

void check_dtypes(const Op& op, std::span<const Shape> in) {
  DType t = in[0].dtype();
  for (const Shape& s : in)
    if ((t != DType::F32 && t != DType::F64) || s.dtype() != t)
      fail(ErrorKind::Type, op.name(), ": needs f32 or f64 operands of one dtype, got ",
           shapes_str(in));
}

/// state_size (and head_dim) attributes must name the operands' sizes.
void check_attr(const Op& op, std::span<const Shape> in, std::string_view attr, int64_t value,
                const Dim& d) {
  if (value < 1) shape_error(op, in, attr, " must be >= 1, got ", value);
  if (d.is_static() && d.size() != value)
    shape_error(op, in, attr, " = ", value, " does not match the operands' size ", d.size());
}

Shape selective_scan_rule(const Op& op, std::span<const Shape> in) {
  check_dtypes(op, in);
  check_rank(op, in, 0, 3, "x", "[B, S, H]");
  check_rank(op, in, 1, 3, "delta", "[B, S, H]");
  check_rank(op, in, 2, 2, "a", "[H, N]");
  check_rank(op, in, 3, 3, "b", "[B, S, N]");
  check_rank(op, in, 4, 3, "c", "[B, S, N]");
  const auto &x = in[0].dims(), &a = in[2].dims();
  for (std::size_t i = 0; i < 3; ++i) agree(op, in, x[i], in[1].dims()[i], "delta must match x");
  agree(op, in, a[0], x[2], "a's first axis must be x's channels H");
  for (std::size_t i : {3u, 4u}) {
    const auto& bc = in[i].dims();
    std::string_view what = i == 3 ? "b must be [B, S, N]" : "c must be [B, S, N]";
    agree(op, in, bc[0], x[0], what);
    agree(op, in, bc[1], x[1], what);
    agree(op, in, bc[2], a[1], what);
  }
  check_attr(op, in, "state_size", op.attrs<SelectiveScanAttrs>().state_size, a[1]);
  return in[0];
}

Shape mamba2_rule(const Op& op, std::span<const Shape> in) {
  check_dtypes(op, in);
  check_rank(op, in, 0, 4, "x", "[B, S, H, P]");
  check_rank(op, in, 1, 3, "dt", "[B, S, H]");
  check_rank(op, in, 2, 1, "a", "[H]");
  const auto& x = in[0].dims();
  for (std::size_t i = 0; i < 3; ++i) agree(op, in, in[1].dims()[i], x[i], "dt must be [B, S, H]");
  agree(op, in, in[2].dims()[0], x[2], "a must be [H]");
  if (in[3].rank() != in[4].rank() || (in[3].rank() != 3 && in[3].rank() != 4))
    shape_error(op, in, "b and c must both be [B, S, G, N] or both [B, S, N]");
  const auto &b = in[3].dims(), &c = in[4].dims();
  for (std::size_t i = 0; i < b.size(); ++i) agree(op, in, b[i], c[i], "b and c must match");
  agree(op, in, b[0], x[0], "b's batch must be x's");
  agree(op, in, b[1], x[1], "b's sequence length must be x's");
  if (b.size() == 4 && b[2].is_static() && x[2].is_static() &&
      (b[2].size() < 1 || x[2].size() % b[2].size() != 0))
    shape_error(op, in, "the groups G = ", b[2].size(), " must divide the heads H = ", x[2].size());
  const auto& at = op.attrs<Mamba2Attrs>();
  check_attr(op, in, "head_dim", at.head_dim, x[3]);
  check_attr(op, in, "state_size", at.state_size, b.back());
  return in[0];
}

Shape gated_delta_net_rule(const Op& op, std::span<const Shape> in) {
  const auto& at = op.attrs<GatedDeltaNetAttrs>();
  std::size_t want = at.carry_state ? 6 : 5;
  if (in.size() != want)
    shape_error(op, in,
                at.carry_state ? "takes (q, k, v, g, beta, state) with carry_state"
                               : "takes (q, k, v, g, beta) without carry_state");
  check_dtypes(op, in);
  check_rank(op, in, 0, 4, "q", "[B, S, H, N]");
  check_rank(op, in, 1, 4, "k", "[B, S, H, N]");
  check_rank(op, in, 2, 4, "v", "[B, S, H, N]");
  check_rank(op, in, 3, 3, "g", "[B, S, H]");
  check_rank(op, in, 4, 3, "beta", "[B, S, H]");
  const auto& q = in[0].dims();
  for (std::size_t i = 0; i < 4; ++i) {
    agree(op, in, in[1].dims()[i], q[i], "k must match q");
    agree(op, in, in[2].dims()[i], q[i], "v must match q");
  }
  for (std::size_t i = 0; i < 3; ++i) {
    agree(op, in, in[3].dims()[i], q[i], "g must be [B, S, H]");
    agree(op, in, in[4].dims()[i], q[i], "beta must be [B, S, H]");
  }
  check_attr(op, in, "state_size", at.state_size, q[3]);
  if (!at.carry_state) return in[0];
  check_rank(op, in, 5, 4, "state", "[B, H, N, N]");
  const auto& st = in[5].dims();
  agree(op, in, st[0], q[0], "state must be [B, H, N, N]");
  agree(op, in, st[1], q[2], "state must be [B, H, N, N]");
  agree(op, in, st[2], q[3], "state must be [B, H, N, N]");
  agree(op, in, st[3], q[3], "state must be [B, H, N, N]");
  // The output packs y [B, S, H, N] and the final state as [B, N, H, N] along axis 1.
  return Shape({q[0], Dim(static_size(q[1]) + static_size(q[3])), q[2], q[3]}, in[0].dtype());
}

} // namespace

std::optional<Shape> infer_ssm(const Op& op, std::span<const Shape> in) {
  switch (op.kind()) {
  case OpKind::SelectiveScan:
    return selective_scan_rule(op, in);
  case OpKind::Mamba2:
    return mamba2_rule(op, in);
  case OpKind::GatedDeltaNet:
    return gated_delta_net_rule(op, in);
  default:
    return std::nullopt;
  }
}

} // namespace rlx::ir::detail
