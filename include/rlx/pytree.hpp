// include/rlx/pytree.hpp -- pytrees: nested containers of Tensors that the transforms (rlx::grad,
// vjp, jvp, vmap, jit) and rlx::optim take and return as one value.
//
//   struct Mlp { Tensor w1, b1, w2, b2; int64_t hidden; };
//   RLX_PYTREE(Mlp, w1, b1, w2, b2, hidden)      // at namespace scope, in Mlp's namespace
//
//   std::vector<Tensor> ls = rlx::tree_leaves(mlp);            // w1, b1, w2, b2
//   Mlp half = rlx::tree_map([](Tensor t) { return t * 0.5f; }, mlp);
//   Mlp back = rlx::tree_unflatten(mlp, ls);                   // mlp's structure, these leaves
//   bool same = rlx::tree_structure(a) == rlx::tree_structure(b);
//
// A pytree is a Tensor (a leaf), a static value (a number, bool, enum or std::string: part of the
// structure, never traced), or a std::vector, std::array, std::tuple, std::pair, std::optional or
// std::map<std::string, T> of pytrees, or a struct described by RLX_PYTREE, nested arbitrarily.
// Leaves come in a fixed order: containers in their order, maps by key, struct members in the
// order RLX_PYTREE lists them (as JAX's tree_flatten).
#pragma once

#include "rlx/tensor.hpp"

#include <array>
#include <cstdint>
#include <cstdio>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

namespace rlx {

/// Names a type for ADL (RLX_PYTREE's function takes one).
template <class T> struct PyTreeTag {};

/// How a type is flattened into Tensor leaves and rebuilt from them. Specialized below; a type
/// with no specialization is not a pytree (`known` is false).
template <class T> struct PyTree {
  static constexpr bool known = false;
};

/// Whether T is a pytree.
template <class T>
concept IsPyTree = PyTree<std::remove_cvref_t<T>>::known;
/// Whether T is a static leaf (no Tensors anywhere: a number, enum, string).
template <class T>
concept IsStaticLeaf = IsPyTree<T> && PyTree<std::remove_cvref_t<T>>::is_static;

/// A pytree's structure: its containers, sizes, keys and static values, without its Tensors.
/// Equal structures flatten into the same number of leaves and rebuild alike.
class TreeDef {
public:
  TreeDef(std::string repr, std::size_t num_leaves)
      : repr_(std::move(repr)), num_leaves_(num_leaves) {}
  std::size_t num_leaves() const { return num_leaves_; }
  /// A compact text of the structure ("T" a Tensor leaf, "[...]" a sequence, ...).
  const std::string& str() const { return repr_; }
  bool operator==(const TreeDef&) const = default;

private:
  std::string repr_;
  std::size_t num_leaves_;
};

namespace detail {

/// Never called: makes rlx_pytree_fields a name that ADL then extends with RLX_PYTREE's.
void rlx_pytree_fields() = delete;

template <class T>
concept HasPyTreeFields = requires { rlx_pytree_fields(PyTreeTag<T>{}); };

/// The members RLX_PYTREE lists: a type name and pointers to members.
template <class... P> struct PyTreeFields {
  const char* type_name;
  std::tuple<P...> members;
};
template <class... P> PyTreeFields<P...> make_pytree_fields(const char* name, P... members) {
  return {name, std::tuple<P...>(members...)};
}

template <class T>
concept StaticScalar = std::is_arithmetic_v<T> || std::is_enum_v<T>;

inline void describe_number(std::string& out, char tag, double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%c%a;", tag, v); // exact: a new value is a new structure
  out += buf;
}

} // namespace detail

/// A Tensor: one leaf.
template <> struct PyTree<Tensor> {
  static constexpr bool known = true, is_static = false;
  static void flatten(const Tensor& t, std::vector<Tensor>& out) { out.push_back(t); }
  static Tensor unflatten(const Tensor&, const Tensor*& it) { return *it++; }
  static void describe(const Tensor&, std::string& out) { out += 'T'; }
};

/// Numbers, bools and enums: static (part of the structure).
template <detail::StaticScalar T> struct PyTree<T> {
  static constexpr bool known = true, is_static = true;
  static void flatten(const T&, std::vector<Tensor>&) {}
  static T unflatten(const T& like, const Tensor*&) { return like; }
  static void describe(const T& v, std::string& out) {
    if constexpr (std::is_enum_v<T>)
      detail::describe_number(out, 'e', double(std::underlying_type_t<T>(v)));
    else if constexpr (std::is_same_v<T, bool>)
      out += v ? "b1;" : "b0;";
    else if constexpr (std::is_integral_v<T>)
      out += "i" + std::to_string(v) + ";";
    else
      detail::describe_number(out, 'f', double(v));
  }
};

template <> struct PyTree<std::string> {
  static constexpr bool known = true, is_static = true;
  static void flatten(const std::string&, std::vector<Tensor>&) {}
  static std::string unflatten(const std::string& like, const Tensor*&) { return like; }
  static void describe(const std::string& v, std::string& out) {
    out += "s" + std::to_string(v.size()) + ":" + v;
  }
};

namespace detail {
/// Sequences (vector, array): their elements in order.
template <class Seq, class T> struct PyTreeSeq {
  static constexpr bool known = true, is_static = PyTree<T>::is_static;
  static void flatten(const Seq& s, std::vector<Tensor>& out) {
    for (const T& x : s) PyTree<T>::flatten(x, out);
  }
  static void describe(const Seq& s, std::string& out) {
    out += "[" + std::to_string(s.size()) + ":";
    for (const T& x : s) PyTree<T>::describe(x, out);
    out += "]";
  }
};
} // namespace detail

template <IsPyTree T> struct PyTree<std::vector<T>> : detail::PyTreeSeq<std::vector<T>, T> {
  static std::vector<T> unflatten(const std::vector<T>& like, const Tensor*& it) {
    std::vector<T> r;
    r.reserve(like.size());
    for (const T& x : like) r.push_back(PyTree<T>::unflatten(x, it));
    return r;
  }
};

template <IsPyTree T, std::size_t N>
struct PyTree<std::array<T, N>> : detail::PyTreeSeq<std::array<T, N>, T> {
  static std::array<T, N> unflatten(const std::array<T, N>& like, const Tensor*& it) {
    return [&]<std::size_t... I>(std::index_sequence<I...>) {
      // A braced list evaluates its elements in order, so the leaves are consumed in order.
      return std::array<T, N>{PyTree<T>::unflatten(like[I], it)...};
    }(std::make_index_sequence<N>{});
  }
};

template <IsPyTree T> struct PyTree<std::optional<T>> {
  static constexpr bool known = true, is_static = PyTree<T>::is_static;
  static void flatten(const std::optional<T>& o, std::vector<Tensor>& out) {
    if (o) PyTree<T>::flatten(*o, out);
  }
  static std::optional<T> unflatten(const std::optional<T>& like, const Tensor*& it) {
    if (!like) return std::nullopt;
    return PyTree<T>::unflatten(*like, it);
  }
  static void describe(const std::optional<T>& o, std::string& out) {
    if (!o) {
      out += "N";
      return;
    }
    out += "?";
    PyTree<T>::describe(*o, out);
  }
};

template <IsPyTree T> struct PyTree<std::map<std::string, T>> {
  using Map = std::map<std::string, T>;
  static constexpr bool known = true, is_static = PyTree<T>::is_static;
  static void flatten(const Map& m, std::vector<Tensor>& out) {
    for (const auto& [k, v] : m) PyTree<T>::flatten(v, out);
  }
  static Map unflatten(const Map& like, const Tensor*& it) {
    Map r;
    for (const auto& [k, v] : like) r.emplace(k, PyTree<T>::unflatten(v, it));
    return r;
  }
  static void describe(const Map& m, std::string& out) {
    out += "{";
    for (const auto& [k, v] : m) {
      PyTree<std::string>::describe(k, out);
      out += "=";
      PyTree<T>::describe(v, out);
    }
    out += "}";
  }
};

template <IsPyTree... Ts> struct PyTree<std::tuple<Ts...>> {
  using Tup = std::tuple<Ts...>;
  static constexpr bool known = true, is_static = (PyTree<Ts>::is_static && ...);
  static void flatten(const Tup& t, std::vector<Tensor>& out) {
    std::apply([&](const Ts&... x) { (PyTree<Ts>::flatten(x, out), ...); }, t);
  }
  static Tup unflatten(const Tup& like, const Tensor*& it) {
    return std::apply([&](const Ts&... x) { return Tup{PyTree<Ts>::unflatten(x, it)...}; }, like);
  }
  static void describe(const Tup& t, std::string& out) {
    out += "(";
    std::apply([&](const Ts&... x) { (PyTree<Ts>::describe(x, out), ...); }, t);
    out += ")";
  }
};

template <IsPyTree A, IsPyTree B> struct PyTree<std::pair<A, B>> {
  using Pair = std::pair<A, B>;
  static constexpr bool known = true, is_static = PyTree<A>::is_static && PyTree<B>::is_static;
  static void flatten(const Pair& p, std::vector<Tensor>& out) {
    PyTree<A>::flatten(p.first, out);
    PyTree<B>::flatten(p.second, out);
  }
  static Pair unflatten(const Pair& like, const Tensor*& it) {
    A a = PyTree<A>::unflatten(like.first, it); // first's leaves come first
    B b = PyTree<B>::unflatten(like.second, it);
    return Pair(std::move(a), std::move(b));
  }
  static void describe(const Pair& p, std::string& out) {
    out += "(";
    PyTree<A>::describe(p.first, out);
    PyTree<B>::describe(p.second, out);
    out += ")";
  }
};

namespace detail {
template <class S, class P>
using MemberOf = std::remove_cvref_t<decltype(std::declval<S&>().*std::declval<P>())>;
template <class S, class... P> constexpr bool members_known(const PyTreeFields<P...>*) {
  return (IsPyTree<MemberOf<S, P>> && ...);
}
template <class S, class... P> constexpr bool members_static(const PyTreeFields<P...>*) {
  return (PyTree<MemberOf<S, P>>::is_static && ...);
}
template <class> using TensorArg = const Tensor&;
} // namespace detail

/// A struct described by RLX_PYTREE: its listed members in order (a copy of the prototype with
/// those members replaced, so members RLX_PYTREE does not list keep the prototype's values).
template <detail::HasPyTreeFields S> struct PyTree<S> {
  using Fields = decltype(rlx_pytree_fields(PyTreeTag<S>{}));
  static_assert(detail::members_known<S>(static_cast<const Fields*>(nullptr)),
                "RLX_PYTREE: every listed member must be a pytree (a Tensor, a number, enum or "
                "std::string, a std::vector / std::array / std::tuple / std::pair / std::optional "
                "/ std::map<std::string, T> of them, or another RLX_PYTREE struct)");
  static constexpr bool known = true;
  static constexpr bool is_static = detail::members_static<S>(static_cast<const Fields*>(nullptr));
  template <class P> using Member = detail::MemberOf<S, P>;

  static void flatten(const S& s, std::vector<Tensor>& out) {
    std::apply([&](auto... m) { (PyTree<Member<decltype(m)>>::flatten(s.*m, out), ...); },
               rlx_pytree_fields(PyTreeTag<S>{}).members);
  }
  static S unflatten(const S& like, const Tensor*& it) {
    S r = like;
    std::apply(
        [&](auto... m) { ((r.*m = PyTree<Member<decltype(m)>>::unflatten(like.*m, it)), ...); },
        rlx_pytree_fields(PyTreeTag<S>{}).members);
    return r;
  }
  static void describe(const S& s, std::string& out) {
    auto f = rlx_pytree_fields(PyTreeTag<S>{});
    out += "<";
    out += f.type_name;
    out += ":";
    std::apply([&](auto... m) { (PyTree<Member<decltype(m)>>::describe(s.*m, out), ...); },
               f.members);
    out += ">";
  }
};

/// The Tensor leaves of a pytree, in order.
template <IsPyTree T> std::vector<Tensor> tree_leaves(const T& tree) {
  std::vector<Tensor> out;
  PyTree<T>::flatten(tree, out);
  return out;
}

/// The structure of a pytree (equal for trees that differ only in their Tensors).
template <IsPyTree T> TreeDef tree_structure(const T& tree) {
  std::string repr;
  PyTree<T>::describe(tree, repr);
  std::vector<Tensor> leaves;
  PyTree<T>::flatten(tree, leaves);
  return TreeDef(std::move(repr), leaves.size());
}

namespace detail {
[[noreturn]] void fail_tree_leaves(std::string_view what, std::size_t want, std::size_t got,
                                   const Loc& loc);
[[noreturn]] void fail_tree_structure(std::string_view what, std::size_t index, const TreeDef& want,
                                      const TreeDef& got);
} // namespace detail

/// A tree of `like`'s structure (and static values) holding `leaves` (as many as like has).
template <IsPyTree T>
T tree_unflatten(const T& like, std::span<const Tensor> leaves, Loc loc = Loc::current()) {
  std::vector<Tensor> old;
  PyTree<T>::flatten(like, old);
  if (old.size() != leaves.size())
    detail::fail_tree_leaves("tree_unflatten", old.size(), leaves.size(), loc);
  const Tensor* it = leaves.data();
  return PyTree<T>::unflatten(like, it);
}

/// f applied to the leaves of `tree` (and the corresponding leaves of `rest`, which must have
/// tree's structure): a tree of tree's structure. f returns a Tensor.
template <class F, IsPyTree T, IsPyTree... Rest>
T tree_map(F&& f, const T& tree, const Rest&... rest) {
  static_assert(std::is_invocable_v<F&, const Tensor&, detail::TensorArg<Rest>...>,
                "rlx::tree_map: the function must take one Tensor per tree");
  static_assert(
      std::is_convertible_v<std::invoke_result_t<F&, const Tensor&, detail::TensorArg<Rest>...>,
                            Tensor>,
      "rlx::tree_map: the function must return a Tensor (the new leaf)");
  std::vector<Tensor> a = tree_leaves(tree);
  std::array<std::vector<Tensor>, sizeof...(Rest)> others{tree_leaves(rest)...};
  if constexpr (sizeof...(Rest) > 0) {
    TreeDef want = tree_structure(tree);
    std::size_t k = 0;
    (
        [&](const auto& r) {
          TreeDef got = tree_structure(r);
          if (!(got == want)) detail::fail_tree_structure("tree_map", k + 1, want, got);
          ++k;
        }(rest),
        ...);
  }
  std::vector<Tensor> out;
  out.reserve(a.size());
  for (std::size_t i = 0; i < a.size(); ++i)
    out.push_back([&]<std::size_t... I>(std::index_sequence<I...>) {
      return Tensor(f(a[i], others[I][i]...));
    }(std::index_sequence_for<Rest...>{}));
  const Tensor* it = out.data();
  return PyTree<T>::unflatten(tree, it);
}

} // namespace rlx

// RLX_PYTREE(Type, member...): describe a struct's members once; use it at namespace scope in the
// struct's namespace. The helpers expand a list of up to 64 members into pointers to members.
#define RLX_PP_PARENS ()
#define RLX_PP_EXPAND(...)                                                                         \
  RLX_PP_EXPAND3(RLX_PP_EXPAND3(RLX_PP_EXPAND3(RLX_PP_EXPAND3(__VA_ARGS__))))
#define RLX_PP_EXPAND3(...)                                                                        \
  RLX_PP_EXPAND2(RLX_PP_EXPAND2(RLX_PP_EXPAND2(RLX_PP_EXPAND2(__VA_ARGS__))))
#define RLX_PP_EXPAND2(...)                                                                        \
  RLX_PP_EXPAND1(RLX_PP_EXPAND1(RLX_PP_EXPAND1(RLX_PP_EXPAND1(__VA_ARGS__))))
#define RLX_PP_EXPAND1(...) __VA_ARGS__
#define RLX_PP_MEMBER_PTRS(Type, ...)                                                              \
  __VA_OPT__(RLX_PP_EXPAND(RLX_PP_MEMBER_PTRS_STEP(Type, __VA_ARGS__)))
#define RLX_PP_MEMBER_PTRS_STEP(Type, m, ...)                                                      \
  &Type::m __VA_OPT__(, RLX_PP_MEMBER_PTRS_AGAIN RLX_PP_PARENS(Type, __VA_ARGS__))
#define RLX_PP_MEMBER_PTRS_AGAIN() RLX_PP_MEMBER_PTRS_STEP

#define RLX_PYTREE(Type, ...)                                                                      \
  [[maybe_unused]] inline auto rlx_pytree_fields(::rlx::PyTreeTag<Type>) {                         \
    return ::rlx::detail::make_pytree_fields(#Type, RLX_PP_MEMBER_PTRS(Type, __VA_ARGS__));        \
  }
