// include/rlx/ir/op_kind.hpp -- OpKind, families, traits and the op-info table, all generated
// from ops.def; plus the Activation / BinaryOp / ReduceOp API enums generated from its categories.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <ostream>
#include <string_view>

namespace rlx::ir {

enum class OpKind : uint16_t {
#define OP(E, N, F, A, T, S) E,
#include "rlx/ir/ops.def"
};

inline constexpr std::size_t kNumOps = 0
#define OP(E, N, F, A, T, S) +1
#include "rlx/ir/ops.def"
    ;

/// Op families: each consumer (shape rules, interpreter, JIT lowering) has one handler per family.
enum class Family : uint8_t {
  Leaf,
  EwUnary,
  EwBinary,
  EwTernary,
  Reduce,
  Scan,
  Movement,
  Index,
  Contract,
  Norm,
  Attention,
  Conv,
  Pool,
  Spectral,
  Linalg,
  Quant,
  Packed,
  Random,
  Recurrent,
  Ssm,
  Splat,
  Control,
  Custom, ///< ops registered at run time (rlx::register_op)
  Collective,
};
std::string_view family_name(Family f);

/// Trait bits (a table lookup, never a switch).
using Traits = uint32_t;
inline constexpr Traits kNone = 0;
inline constexpr Traits kPure = 1u << 0;              ///< no side effects: CSE/DCE may touch it
inline constexpr Traits kCommutative = 1u << 1;       ///< f(a, b) == f(b, a)
inline constexpr Traits kBoolResult = 1u << 2;        ///< output dtype is bool
inline constexpr Traits kNonDifferentiable = 1u << 3; ///< no gradient flows through
inline constexpr Traits kLeaf = 1u << 4;              ///< no inputs; a root of the graph
inline constexpr Traits kView = 1u << 5;              ///< its value is its input's bytes
inline constexpr Traits kSideEffect = 1u << 6;        ///< must not be removed or merged
inline constexpr Traits kIntegerOk = 1u << 7;         ///< an activation defined on integers too
inline constexpr Traits kFed = 1u << 8;               ///< its value is given by the caller (leaf)
/// Has a decomposition into primitives (src/ops/decompose.cpp; passes::decompose applies it);
/// autodiff differentiates through it unless the op has a closed-form rule.
inline constexpr Traits kComposite = 1u << 9;
/// Linear in its floating-point operands: forward mode applies the op to their tangents.
inline constexpr Traits kLinear = 1u << 10;
/// No derivative flows through it: piecewise constant (round, floor, ceil, sign), or zero by
/// definition (stop_gradient).
inline constexpr Traits kZeroGrad = 1u << 11;

struct OpInfo {
  std::string_view name;
  Family family;
  int arity; ///< -1 = variadic (at least one input)
  Traits traits;
};

inline constexpr OpInfo kOpInfo[] = {
#define OP(E, N, F, A, T, S) {N, Family::F, A, T},
#include "rlx/ir/ops.def"
};
static_assert(std::size(kOpInfo) == kNumOps);

constexpr const OpInfo& op_info(OpKind k) { return kOpInfo[static_cast<std::size_t>(k)]; }
constexpr std::string_view op_name(OpKind k) { return op_info(k).name; }
constexpr Family op_family(OpKind k) { return op_info(k).family; }
constexpr bool has_trait(OpKind k, Traits t) { return (op_info(k).traits & t) == t; }
std::optional<OpKind> parse_op_kind(std::string_view name);
std::ostream& operator<<(std::ostream& os, OpKind k);

// ---- The API enums of RLX, generated from ops.def categories (one list, no drift).

/// Single-input element-wise activations (Graph::activation).
enum class Activation : uint8_t {
#define OP(E, N, F, A, T, S)
#define UNARY(E, N, T, S) E,
#include "rlx/ir/ops.def"
};
/// Binary element-wise ops, comparisons and logical and/or (Graph::binary).
enum class BinaryOp : uint8_t {
#define OP(E, N, F, A, T, S)
#define BINARY(E, N, T) E,
#include "rlx/ir/ops.def"
};
/// Reductions (Graph::reduce).
enum class ReduceOp : uint8_t {
#define OP(E, N, F, A, T, S)
#define REDUCE(E, R, N, T) R,
#include "rlx/ir/ops.def"
};

inline constexpr auto rlx_enum_names(Activation) {
  return std::array{
#define OP(E, N, F, A, T, S)
#define UNARY(E, N, T, S) std::string_view(#E),
#include "rlx/ir/ops.def"
  };
}
inline constexpr auto rlx_enum_names(BinaryOp) {
  return std::array{
#define OP(E, N, F, A, T, S)
#define BINARY(E, N, T) std::string_view(#E),
#include "rlx/ir/ops.def"
  };
}
inline constexpr auto rlx_enum_names(ReduceOp) {
  return std::array{
#define OP(E, N, F, A, T, S)
#define REDUCE(E, R, N, T) std::string_view(#R),
#include "rlx/ir/ops.def"
  };
}

/// The op kind of each API enum value.
OpKind to_op_kind(Activation a);
OpKind to_op_kind(BinaryOp b);
OpKind to_op_kind(ReduceOp r);
/// The reverse, when the kind belongs to that category.
std::optional<Activation> as_activation(OpKind k);
std::optional<BinaryOp> as_binary_op(OpKind k);
std::optional<ReduceOp> as_reduce_op(OpKind k);

} // namespace rlx::ir
