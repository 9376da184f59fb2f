// include/rlx/ir/op.hpp -- Op: an op kind plus its attribute struct.
#pragma once

#include "rlx/error.hpp"
#include "rlx/ir/attrs.hpp"
#include "rlx/ir/op_kind.hpp"

#include <cstddef>
#include <type_traits>

namespace rlx::ir {

/// The attribute struct of op kind K (the last column of ops.def).
template <OpKind K> struct AttrsOfT;
#define OP(E, N, F, A, T, S)                                                                       \
  template <> struct AttrsOfT<OpKind::E> {                                                         \
    using type = S;                                                                                \
  };
#include "rlx/ir/ops.def"
template <OpKind K> using AttrsOf = typename AttrsOfT<K>::type;

namespace detail {
template <class T, class V> struct VariantIndex;
template <class T, class... Ts> struct VariantIndex<T, std::variant<Ts...>> {
  static constexpr std::size_t value = [] {
    constexpr bool match[] = {std::is_same_v<T, Ts>...};
    for (std::size_t i = 0; i < sizeof...(Ts); ++i)
      if (match[i]) return i;
    return sizeof...(Ts);
  }();
};
/// Index into AnyAttrs of each op kind's attribute struct.
inline constexpr std::size_t kAttrIndex[] = {
#define OP(E, N, F, A, T, S) VariantIndex<S, AnyAttrs>::value,
#include "rlx/ir/ops.def"
};
} // namespace detail

/// An operation: kind + attributes. The attribute alternative always matches the kind.
class Op {
public:
  /// The kind with default attributes.
  explicit Op(OpKind kind);
  /// The kind with the given attributes; an InternalError when A is not the kind's struct.
  template <class A> Op(OpKind kind, A attrs) : kind_(kind), attrs_(std::move(attrs)) { check(); }
  Op(OpKind kind, AnyAttrs attrs) : kind_(kind), attrs_(std::move(attrs)) { check(); }

  OpKind kind() const { return kind_; }
  std::string_view name() const { return op_name(kind_); }
  Family family() const { return op_family(kind_); }
  const AnyAttrs& any_attrs() const { return attrs_; }
  AnyAttrs& any_attrs() { return attrs_; }
  template <class A> const A& attrs() const;
  template <class A> A& attrs();

  friend bool operator==(const Op&, const Op&) = default;

private:
  void check() const;
  OpKind kind_;
  AnyAttrs attrs_;
};

std::ostream& operator<<(std::ostream& os, const Op& op);

template <class A> const A& Op::attrs() const {
  const A* a = std::get_if<A>(&attrs_);
  RLX_CHECK(a != nullptr, "op ", name(), " does not hold the requested attribute struct");
  return *a;
}
template <class A> A& Op::attrs() {
  return const_cast<A&>(static_cast<const Op*>(this)->attrs<A>());
}

} // namespace rlx::ir
