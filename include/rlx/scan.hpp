// include/rlx/scan.hpp -- rlx::scan: a loop over time with a C++ lambda as its body, as
// jax.lax.scan.
//
//   // h_t = tanh(h_{t-1} @ u + x_t @ w) over the leading axis of xs ([T, B, I]):
//   Tensor h = rlx::scan([&](Tensor h, Tensor x) { return rlx::tanh(h.matmul(u) + x.matmul(w)); },
//                        h0, {xs});
//   Tensor all = rlx::scan_trajectory(step, h0, {xs});   // [T, B, H]: row t after step t + 1
//   // JAX's form: the body returns (new carry, y); the carry may be a tuple, array or vector.
//   auto [hc, ys] = rlx::scan([&](std::tuple<Tensor, Tensor> c, Tensor x) {
//     auto [h, cell] = c;
//     ...
//     return std::pair{std::tuple{h2, cell2}, h2};      // ys: [T, *h2.shape]
//   }, std::tuple{h0, c0}, {xs}, {.reverse = true});
//
// The body is traced once (like rlx::jit) on placeholders of the carry's shapes and of one row
// of each xs, and recorded as one scan node (ir::Graph::scan_with_bcasts_and_xs): the tensors it
// captures (u, w above, computed or not, traced by an enclosing rlx::jit or rlx::grad or not)
// become the node's broadcast operands, so rlx::grad differentiates through them too. The body
// returns the next carry (of the carry's type, shapes and dtype), or a std::pair / std::tuple
// (next carry, y); the ys are stacked [length, *y]. A carry of several tensors (and a y) is one
// flat carry inside (its parts flattened and concatenated), so its tensors share one dtype.
#pragma once

#include "rlx/grad.hpp"
#include "rlx/tensor.hpp"

#include <array>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

namespace rlx {

struct ScanOptions {
  bool trajectory = false; ///< each carry tensor stacked [length, *shape] (row t: after step t+1)
  int64_t checkpoints = 0; ///< K > 0: the backward keeps K carries and recomputes the rest
  int64_t length = -1;     ///< steps; -1: the leading dim of the xs (required without xs)
  bool reverse = false;    ///< run from the last row of the xs to the first (ys keep xs' order)
};

namespace detail {

/// What a scan computes, flat: the carry's tensors (final, or [length, *shape] with a
/// trajectory), then the stacked ys when the body returns a y (src/frontend/scan.cpp).
std::vector<Tensor> scan_call(std::span<const Tensor> init, std::span<const Tensor> xs,
                              const TraceBody& body, const ScanOptions& opts, const Loc& loc);

/// The carry types rlx::scan takes: a Tensor, a std::tuple or std::array of Tensors, a
/// std::vector<Tensor>.
template <class C> struct Carry;
template <> struct Carry<Tensor> {
  static std::vector<Tensor> flatten(const Tensor& t) { return {t}; }
  static Tensor unflatten(std::span<const Tensor> v) { return v[0]; }
};
template <class... Ts> struct Carry<std::tuple<Ts...>> {
  static_assert((std::is_same_v<Ts, Tensor> && ...), "rlx::scan: a tuple carry holds Tensors");
  static std::vector<Tensor> flatten(const std::tuple<Ts...>& t) {
    return std::apply([](const auto&... x) { return std::vector<Tensor>{x...}; }, t);
  }
  static std::tuple<Ts...> unflatten(std::span<const Tensor> v) {
    return [&]<std::size_t... I>(std::index_sequence<I...>) {
      return std::tuple<Ts...>{v[I]...};
    }(std::index_sequence_for<Ts...>{});
  }
};
template <std::size_t N> struct Carry<std::array<Tensor, N>> {
  static std::vector<Tensor> flatten(const std::array<Tensor, N>& a) {
    return {a.begin(), a.end()};
  }
  static std::array<Tensor, N> unflatten(std::span<const Tensor> v) {
    return [&]<std::size_t... I>(std::index_sequence<I...>) {
      return std::array<Tensor, N>{v[I]...};
    }(std::make_index_sequence<N>{});
  }
};
template <> struct Carry<std::vector<Tensor>> {
  static std::vector<Tensor> flatten(const std::vector<Tensor>& v) { return v; }
  static std::vector<Tensor> unflatten(std::span<const Tensor> v) { return {v.begin(), v.end()}; }
};

/// What the body returns: the next carry (C), or (next carry, y) as a pair or a tuple.
template <class R, class C> struct BodyReturn {
  static_assert(std::is_same_v<R, C>,
                "rlx::scan: the body returns the carry's type, or a std::pair / std::tuple of it "
                "and a Tensor (the y)");
  static constexpr bool has_y = false;
  static std::vector<Tensor> flatten(const R& r) { return Carry<C>::flatten(r); }
};
template <class C> struct BodyReturn<std::pair<C, Tensor>, C> {
  static constexpr bool has_y = true;
  static std::vector<Tensor> flatten(const std::pair<C, Tensor>& r) {
    std::vector<Tensor> v = Carry<C>::flatten(r.first);
    v.push_back(r.second);
    return v;
  }
};
template <class C>
  requires(!std::is_same_v<std::tuple<C, Tensor>, C>)
struct BodyReturn<std::tuple<C, Tensor>, C> {
  static constexpr bool has_y = true;
  static std::vector<Tensor> flatten(const std::tuple<C, Tensor>& r) {
    std::vector<Tensor> v = Carry<C>::flatten(std::get<0>(r));
    v.push_back(std::get<1>(r));
    return v;
  }
};

/// Whether f takes the carry and K Tensors.
template <class F, class C, std::size_t K> constexpr bool takes_carry_and() {
  return []<std::size_t... I>(std::index_sequence<I...>) {
    return std::is_invocable_v<const F&, const C&,
                               std::tuple_element_t<I, std::array<Tensor, K>>...>;
  }(std::make_index_sequence<K>{});
}

/// The fewest xs (0 to 5) f takes after the carry.
template <class F, class C> constexpr std::size_t body_arity() {
  if constexpr (takes_carry_and<F, C, 0>())
    return 0;
  else if constexpr (takes_carry_and<F, C, 1>())
    return 1;
  else if constexpr (takes_carry_and<F, C, 2>())
    return 2;
  else if constexpr (takes_carry_and<F, C, 3>())
    return 3;
  else if constexpr (takes_carry_and<F, C, 4>())
    return 4;
  else {
    static_assert(takes_carry_and<F, C, 5>(),
                  "rlx::scan: the body takes the carry, then one Tensor per xs (at most 5)");
    return 5;
  }
}

template <class F, class C, class Seq> struct BodyResultOf;
template <class F, class C, std::size_t... I> struct BodyResultOf<F, C, std::index_sequence<I...>> {
  using type = std::remove_cvref_t<std::invoke_result_t<
      const F&, const C&, std::tuple_element_t<I, std::array<Tensor, sizeof...(I)>>...>>;
};
/// What f returns (called with the carry and its number of xs).
template <class F, class C>
using BodyResult = typename BodyResultOf<F, C, std::make_index_sequence<body_arity<F, C>()>>::type;

/// The traced body: placeholders [carry tensors..., x_t...] -> [next carry tensors..., y?].
template <class F, class C> TraceBody scan_body_of(const F& f, std::size_t n_carry) {
  return [&f, n_carry](std::span<const Tensor> ph) {
    C c = Carry<C>::unflatten(ph.first(n_carry));
    std::span<const Tensor> x = ph.subspan(n_carry);
    constexpr std::size_t K = body_arity<F, C>();
    if (x.size() != K)
      fail(ErrorKind::Value, "scan: the body takes ", K, " xs after the carry, given ", x.size());
    return [&]<std::size_t... I>(std::index_sequence<I...>) {
      using R = BodyResult<F, C>;
      return BodyReturn<R, C>::flatten(f(c, x[I]...));
    }(std::make_index_sequence<K>{});
  };
}

template <class F, class C>
using ScanResult =
    std::conditional_t<BodyReturn<BodyResult<F, C>, C>::has_y, std::pair<C, Tensor>, C>;

template <class F, class C>
ScanResult<F, C> scan_typed(const F& f, const C& init, const std::vector<Tensor>& xs,
                            const ScanOptions& opts, const Loc& loc) {
  std::vector<Tensor> parts = Carry<C>::flatten(init);
  std::vector<Tensor> r = scan_call(parts, xs, scan_body_of<F, C>(f, parts.size()), opts, loc);
  C carry = Carry<C>::unflatten(std::span<const Tensor>(r).first(parts.size()));
  if constexpr (BodyReturn<BodyResult<F, C>, C>::has_y)
    return std::pair<C, Tensor>(std::move(carry), r.at(parts.size()));
  else
    return carry;
}

} // namespace detail

/// The final carry of body(carry, x_t...) run over the leading axis of the xs, from init; with a
/// body returning (carry, y), the pair (final carry, ys stacked [length, *y]).
template <class F, class C>
auto scan(F f, const C& init, const std::vector<Tensor>& xs = {}, ScanOptions opts = {},
          Loc loc = Loc::current()) {
  return detail::scan_typed(f, init, xs, opts, loc);
}

/// Every carry: each carry tensor [length, *shape], row t the carry after step t + 1 (with a y,
/// paired with the ys as scan does).
template <class F, class C>
auto scan_trajectory(F f, const C& init, const std::vector<Tensor>& xs = {}, ScanOptions opts = {},
                     Loc loc = Loc::current()) {
  opts.trajectory = true;
  return detail::scan_typed(f, init, xs, opts, loc);
}

} // namespace rlx
