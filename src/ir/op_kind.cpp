// src/ir/op_kind.cpp -- name lookups and API-enum <-> OpKind maps generated from ops.def.
#include "rlx/ir/op.hpp"

#include <unordered_map>

namespace rlx::ir {

std::string_view family_name(Family f) {
  constexpr std::string_view names[] = {
      "leaf",      "ew_unary", "ew_binary", "ew_ternary", "reduce",    "scan",
      "movement",  "index",    "contract",  "norm",       "attention", "conv",
      "pool",      "spectral", "linalg",    "quant",      "packed",    "random",
      "recurrent", "ssm",      "splat",     "control",    "custom",    "collective"};
  static_assert(std::size(names) == std::size_t(Family::Collective) + 1);
  return names[static_cast<std::size_t>(f)];
}

std::optional<OpKind> parse_op_kind(std::string_view name) {
  static const auto* table = [] {
    auto* m = new std::unordered_map<std::string_view, OpKind>();
    for (std::size_t i = 0; i < kNumOps; ++i) (*m)[kOpInfo[i].name] = static_cast<OpKind>(i);
    return m;
  }();
  auto it = table->find(name);
  if (it == table->end()) return std::nullopt;
  return it->second;
}

std::ostream& operator<<(std::ostream& os, OpKind k) { return os << op_name(k); }

namespace {
constexpr OpKind kActivationKinds[] = {
#define OP(E, N, F, A, T, S)
#define UNARY(E, N, T, S) OpKind::E,
#include "rlx/ir/ops.def"
};
constexpr OpKind kBinaryKinds[] = {
#define OP(E, N, F, A, T, S)
#define BINARY(E, N, T) OpKind::E,
#include "rlx/ir/ops.def"
};
constexpr OpKind kReduceKinds[] = {
#define OP(E, N, F, A, T, S)
#define REDUCE(E, R, N, T) OpKind::E,
#include "rlx/ir/ops.def"
};

template <class E, std::size_t N> std::optional<E> find_kind(const OpKind (&kinds)[N], OpKind k) {
  for (std::size_t i = 0; i < N; ++i)
    if (kinds[i] == k) return static_cast<E>(i);
  return std::nullopt;
}
} // namespace

OpKind to_op_kind(Activation a) { return kActivationKinds[static_cast<std::size_t>(a)]; }
OpKind to_op_kind(BinaryOp b) { return kBinaryKinds[static_cast<std::size_t>(b)]; }
OpKind to_op_kind(ReduceOp r) { return kReduceKinds[static_cast<std::size_t>(r)]; }
std::optional<Activation> as_activation(OpKind k) {
  return find_kind<Activation>(kActivationKinds, k);
}
std::optional<BinaryOp> as_binary_op(OpKind k) { return find_kind<BinaryOp>(kBinaryKinds, k); }
std::optional<ReduceOp> as_reduce_op(OpKind k) { return find_kind<ReduceOp>(kReduceKinds, k); }

// ---- Op

namespace {
const AnyAttrs kDefaultAttrs[] = {
#define OP(E, N, F, A, T, S) AnyAttrs(std::in_place_type<S>),
#include "rlx/ir/ops.def"
};
} // namespace

Op::Op(OpKind kind) : kind_(kind), attrs_(kDefaultAttrs[static_cast<std::size_t>(kind)]) {}

void Op::check() const {
  std::size_t k = static_cast<std::size_t>(kind_);
  RLX_CHECK(k < kNumOps, "op kind ", k, " out of range");
  RLX_CHECK(attrs_.index() == detail::kAttrIndex[k], "op ", op_name(kind_),
            " built with the wrong attribute struct (alternative ", attrs_.index(), ", expected ",
            detail::kAttrIndex[k], ")");
}

} // namespace rlx::ir

static_assert(
    [] {
      for (std::size_t i : rlx::ir::detail::kAttrIndex)
        if (i + 1 >= std::variant_size_v<rlx::ir::AnyAttrs>) return false;
      return true;
    }(),
    "an ops.def row names an attribute struct that attrs.def does not define");
