// include/rlx/grad.hpp -- function transforms on Tensor code: grad, value_and_grad, jvp, vmap.
//
//   auto loss = [](Tensor w, Tensor x) { return rlx::mean(rlx::square(x.matmul(w))); };
//   Tensor dw = rlx::grad(loss)(w, x);                        // d loss / d w (argument 0)
//   auto [l, g] = rlx::value_and_grad(loss, {0, 1})(w, x);    // loss and both gradients
//   auto [ys, ts] = rlx::jvp(f, {x}, {t});                    // outputs and their tangents
//   Tensor yb = rlx::vmap(f)(xb);                             // f over the leading axis of xb
//
// Each call traces the function once on placeholders (as rlx::jit does), transforms the traced
// graph (rlx/autodiff.hpp) and records the result lazily like any other op, so transforms nest
// (grad of grad) and compose with rlx::jit in either order: jit(grad(f)) compiles the whole
// gradient computation once per signature. Tensors the function captures are constants of the
// trace. A loss for grad must be one floating-point element.
#pragma once

#include "rlx/jit.hpp"
#include "rlx/tensor.hpp"

#include <array>
#include <type_traits>
#include <utility>
#include <vector>

namespace rlx {

namespace detail {

/// [loss, d/d args[argnums[0]], ...] (src/frontend/grad.cpp).
std::vector<Tensor> grad_call(std::span<const Tensor> args, const TraceBody& body,
                              std::span<const int> argnums, const Loc& loc);
/// [outputs..., their tangents...].
std::vector<Tensor> jvp_call(std::span<const Tensor> primals, std::span<const Tensor> tangents,
                             const TraceBody& body, const Loc& loc);
/// The outputs of body over the leading axis of every argument.
std::vector<Tensor> vmap_call(std::span<const Tensor> args, const TraceBody& body, const Loc& loc);

/// Whether f takes K Tensors.
template <class F, std::size_t K> constexpr bool takes_tensors() {
  return []<std::size_t... I>(std::index_sequence<I...>) {
    return std::is_invocable_v<const F&, std::tuple_element_t<I, std::array<Tensor, K>>...>;
  }(std::make_index_sequence<K>{});
}

/// f called with the K tensors of a span, its result flattened.
template <class F, std::size_t K>
std::vector<Tensor> call_k(const F& f, std::span<const Tensor> a) {
  return [&]<std::size_t... I>(std::index_sequence<I...>) {
    using R = std::remove_cvref_t<std::invoke_result_t<const F&, decltype(a[I])...>>;
    return Outputs<R>::flatten(f(a[I]...));
  }(std::make_index_sequence<K>{});
}

/// f called with the tensors of a span (f takes 1 to 6 Tensors).
template <class F> std::vector<Tensor> call_span(const F& f, std::span<const Tensor> a) {
  std::vector<Tensor> out;
  bool called = false;
  auto try_k = [&]<std::size_t K>(std::integral_constant<std::size_t, K>) {
    if constexpr (takes_tensors<F, K>()) {
      if (!called && a.size() == K) {
        out = call_k<F, K>(f, a);
        called = true;
      }
    }
  };
  [&]<std::size_t... K>(std::index_sequence<K...>) {
    (try_k(std::integral_constant<std::size_t, K + 1>{}), ...);
  }(std::make_index_sequence<6>{});
  if (!called)
    fail(ErrorKind::Value, "rlx: the function does not take ", a.size(),
         " Tensor arguments (1 to 6 are supported)");
  return out;
}

template <class F> TraceBody body_of(const F& f) {
  return [&f](std::span<const Tensor> ph) { return call_span(f, ph); };
}

} // namespace detail

/// The callable rlx::grad and rlx::value_and_grad return.
template <class F, bool WithValue, bool Many> class GradFn {
public:
  GradFn(F f, std::vector<int> argnums, Loc loc)
      : f_(std::move(f)), argnums_(std::move(argnums)), loc_(loc) {}

  template <class... A>
    requires detail::CallableOnTensors<F, A...>
  auto operator()(const A&... args) const {
    std::array<Tensor, sizeof...(A)> in{Tensor(args)...};
    std::vector<Tensor> r = detail::grad_call(in, detail::body_of(f_), argnums_, loc_);
    if constexpr (WithValue && Many)
      return std::pair<Tensor, std::vector<Tensor>>(r[0],
                                                    std::vector<Tensor>(r.begin() + 1, r.end()));
    else if constexpr (WithValue)
      return std::pair<Tensor, Tensor>(r[0], r[1]);
    else if constexpr (Many)
      return std::vector<Tensor>(r.begin() + 1, r.end());
    else
      return r[1];
  }

private:
  F f_;
  std::vector<int> argnums_;
  Loc loc_;
};

/// The gradient of f (Tensors -> one-element float Tensor) with respect to its first argument.
template <class F> auto grad(F f, Loc loc = Loc::current()) {
  return GradFn<std::decay_t<F>, false, false>(std::move(f), {0}, loc);
}
/// The gradients with respect to the arguments `argnums` (a vector, in that order).
template <class F> auto grad(F f, std::vector<int> argnums, Loc loc = Loc::current()) {
  return GradFn<std::decay_t<F>, false, true>(std::move(f), std::move(argnums), loc);
}
/// (f(args...), d f / d args[0]).
template <class F> auto value_and_grad(F f, Loc loc = Loc::current()) {
  return GradFn<std::decay_t<F>, true, false>(std::move(f), {0}, loc);
}
/// (f(args...), [d f / d args[argnums[i]]...]).
template <class F> auto value_and_grad(F f, std::vector<int> argnums, Loc loc = Loc::current()) {
  return GradFn<std::decay_t<F>, true, true>(std::move(f), std::move(argnums), loc);
}

/// Forward mode: (f(primals...), the tangents of f's outputs along `tangents`), both flattened.
template <class F>
std::pair<std::vector<Tensor>, std::vector<Tensor>> jvp(const F& f, std::vector<Tensor> primals,
                                                        std::vector<Tensor> tangents,
                                                        Loc loc = Loc::current()) {
  std::vector<Tensor> r = detail::jvp_call(primals, tangents, detail::body_of(f), loc);
  std::size_t n = r.size() / 2;
  return {std::vector<Tensor>(r.begin(), r.begin() + std::ptrdiff_t(n)),
          std::vector<Tensor>(r.begin() + std::ptrdiff_t(n), r.end())};
}

/// The callable rlx::vmap returns.
template <class F> class VmapFn {
public:
  VmapFn(F f, Loc loc) : f_(std::move(f)), loc_(loc) {}
  template <class... A>
    requires detail::CallableOnTensors<F, A...>
  auto operator()(const A&... args) const {
    using R = detail::TensorResult<F, A...>;
    std::array<Tensor, sizeof...(A)> in{Tensor(args)...};
    return detail::Outputs<R>::unflatten(detail::vmap_call(in, detail::body_of(f_), loc_));
  }

private:
  F f_;
  Loc loc_;
};

/// f mapped over the leading axis of every argument (all of one size); outputs gain that axis.
template <class F> auto vmap(F f, Loc loc = Loc::current()) {
  return VmapFn<std::decay_t<F>>(std::move(f), loc);
}

} // namespace rlx
