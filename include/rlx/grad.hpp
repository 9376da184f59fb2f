// include/rlx/grad.hpp -- function transforms on pytree code: grad, value_and_grad, vjp, jvp, vmap.
//
//   struct Mlp { Tensor w, b; };  RLX_PYTREE(Mlp, w, b)       // (rlx/pytree.hpp)
//   auto loss = [](const Mlp& p, Tensor x) { return rlx::mean(rlx::tanh(x.matmul(p.w) + p.b)); };
//   Mlp g = rlx::grad(loss)(params, x);                       // d loss / d params: an Mlp
//   auto [l, gs] = rlx::value_and_grad(loss, rlx::argnums<0, 1>)(params, x); // a tuple of both
//   auto [y, pull] = rlx::vjp(f, std::tuple{params, x});      // outputs and a pullback
//   auto [ys, ts] = rlx::jvp(f, std::tuple{x}, std::tuple{t}); // outputs and their tangents
//   Tensor yb = rlx::vmap(f, {0, std::nullopt})(xb, w);       // f over axis 0 of xb, w shared
//
// Functions take any number of pytree arguments (Tensors, numbers, std containers, RLX_PYTREE
// structs); their Tensor leaves are traced, their static values are passed as they are. Each
// call traces the function once on placeholders (as rlx::jit does), transforms the traced graph
// (rlx/autodiff.hpp) and records the result lazily like any other op, so transforms nest (grad
// of grad) and compose with rlx::jit in either order: jit(grad(f)) compiles the whole gradient
// computation once per signature. Tensors the function captures are constants of the trace, and
// values it captures from an enclosing trace (a jit's minibatch, the primal of an outer grad)
// stay values of that trace, as in JAX. A loss for grad must be one floating-point element.
#pragma once

#include "rlx/jit.hpp"
#include "rlx/pytree.hpp"
#include "rlx/tensor.hpp"

#include <array>
#include <functional>
#include <memory>
#include <optional>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

namespace rlx {

/// Compile-time argument numbers: rlx::grad(f, rlx::argnums<0, 2>) returns a tuple of gradients.
template <int... I> struct ArgNums {};
template <int... I> inline constexpr ArgNums<I...> argnums{};

namespace detail {

/// [loss, d/d args[wrt[0]], ...]: args are the Tensor leaves of the call, offsets where each
/// argument's leaves start (for messages), wrt leaf indices (src/frontend/grad.cpp).
std::vector<Tensor> grad_call(std::span<const Tensor> args, const TraceBody& body,
                              std::span<const int> wrt, std::span<const std::size_t> offsets,
                              const Loc& loc);
void check_argnums(std::span<const int> argnums, std::size_t n_args, const Loc& loc);
/// [outputs..., their tangents...].
std::vector<Tensor> jvp_call(std::span<const Tensor> primals, std::span<const Tensor> tangents,
                             const TraceBody& body, const Loc& loc);
/// The outputs of body over the leading axis of every argument.
std::vector<Tensor> vmap_call(std::span<const Tensor> args, const TraceBody& body, const Loc& loc);
/// t with axis `axis` moved to the front (vmap's in_axes).
Tensor move_axis_to_front(const Tensor& t, int64_t axis, const Loc& loc);
/// The traced vjp graph with its leaves; the pullback applies it to cotangents.
struct VjpCore;
std::pair<std::vector<Tensor>, std::shared_ptr<const VjpCore>>
vjp_call(std::span<const Tensor> args, const TraceBody& body, const Loc& loc);
/// d/d every leaf (zeros for integer leaves).
std::vector<Tensor> vjp_pull(const VjpCore& core, std::span<const Tensor> cotangents,
                             const Loc& loc);

/// Whether f takes K Tensors.
template <class F, std::size_t K> constexpr bool takes_tensors() {
  return []<std::size_t... I>(std::index_sequence<I...>) {
    return std::is_invocable_v<const F&, std::tuple_element_t<I, std::array<Tensor, K>>...>;
  }(std::make_index_sequence<K>{});
}

/// f called with the tensors of a span (the vector form of jvp: f takes 1 to 6 Tensors).
template <class F> std::vector<Tensor> call_span(const F& f, std::span<const Tensor> a) {
  std::vector<Tensor> out;
  bool called = false;
  auto try_k = [&]<std::size_t K>(std::integral_constant<std::size_t, K>) {
    if constexpr (takes_tensors<F, K>()) {
      if (!called && a.size() == K) {
        [&]<std::size_t... I>(std::index_sequence<I...>) {
          out = tree_leaves(f(a[I]...));
        }(std::make_index_sequence<K>{});
        called = true;
      }
    }
  };
  [&]<std::size_t... K>(std::index_sequence<K...>) {
    (try_k(std::integral_constant<std::size_t, K + 1>{}), ...);
  }(std::make_index_sequence<6>{});
  if (!called)
    fail(ErrorKind::Value, "rlx::jvp: the function does not take ", a.size(),
         " Tensor arguments (the vector form takes 1 to 6; pass std::tuples for more)");
  return out;
}

template <class R> constexpr bool check_loss_result() {
  static_assert(std::is_same_v<R, Tensor>,
                "rlx::grad / value_and_grad: the function must return a Tensor (the loss, one "
                "floating-point element); for other results use rlx::vjp");
  return std::is_same_v<R, Tensor>;
}

} // namespace detail

/// The callable rlx::grad and rlx::value_and_grad return. Nums: ArgNums<I...> (a tuple of
/// gradients; with one number and !Tuple, that gradient alone) or std::vector<int> (at run time:
/// the gradients' leaves, flattened in order).
template <class F, bool WithValue, class Nums, bool Tuple> class GradFn {
public:
  GradFn(F f, Nums nums, Loc loc) : f_(std::move(f)), nums_(std::move(nums)), loc_(loc) {}

  template <class... A> auto operator()(const A&... args) const {
    if constexpr (!detail::check_call<F, A...>()) {
      return;
    } else if constexpr (!detail::check_loss_result<detail::ResultOf<F, A...>>()) {
      return;
    } else {
      detail::ArgTrees<A...> t = detail::flatten_args(detail::all_traced<A...>(), args...);
      std::vector<int> nums = numbers<sizeof...(A)>();
      std::vector<int> wrt;
      for (int k : nums)
        for (std::size_t j = t.offset[std::size_t(k)]; j < t.offset[std::size_t(k) + 1]; ++j)
          wrt.push_back(int(j));
      detail::TraceBody body = [&](std::span<const Tensor> ph) {
        return std::vector<Tensor>{detail::call_on(f_, t, ph)};
      };
      std::vector<Tensor> r = detail::grad_call(t.leaves, body, wrt, t.offset, loc_);
      Tensor value = r[0];
      std::span<const Tensor> g = std::span<const Tensor>(r).subspan(1);
      auto grads = [&] {
        if constexpr (std::is_same_v<Nums, std::vector<int>>) {
          return std::vector<Tensor>(g.begin(), g.end());
        } else {
          auto all = gradients(t, g, Nums{});
          if constexpr (Tuple)
            return all;
          else
            return std::get<0>(std::move(all));
        }
      }();
      if constexpr (WithValue)
        return std::pair(value, std::move(grads));
      else
        return grads;
    }
  }

private:
  template <std::size_t NArgs> std::vector<int> numbers() const {
    if constexpr (std::is_same_v<Nums, std::vector<int>>) {
      detail::check_argnums(nums_, NArgs, loc_);
      return nums_;
    } else {
      return numbers_of<NArgs>(Nums{});
    }
  }
  template <std::size_t NArgs, int... I> static std::vector<int> numbers_of(ArgNums<I...>) {
    static_assert(((I >= 0 && std::size_t(I) < NArgs) && ...),
                  "rlx::grad: an argnum is out of range for the function's arguments");
    return {I...};
  }
  template <class... A, int... I>
  static auto gradients(const detail::ArgTrees<A...>& t, std::span<const Tensor> g, ArgNums<I...>) {
    // The selected arguments' trees, in argnums order: g holds their leaves in that order.
    std::size_t pos = 0;
    auto one = [&]<int K>(std::integral_constant<int, K>) {
      using Arg = std::tuple_element_t<std::size_t(K), std::tuple<A...>>;
      static_assert(!IsStaticLeaf<Arg>,
                    "rlx::grad: an argnum names a static (non-Tensor) argument; gradients are "
                    "taken with respect to Tensors");
      std::size_t n = t.offset[std::size_t(K) + 1] - t.offset[std::size_t(K)];
      Arg tree = tree_unflatten(std::get<std::size_t(K)>(t.args), g.subspan(pos, n));
      pos += n;
      return tree;
    };
    return std::tuple<std::tuple_element_t<std::size_t(I), std::tuple<A...>>...>{
        one(std::integral_constant<int, I>{})...};
  }

  F f_;
  Nums nums_;
  Loc loc_;
};

/// The gradient of f (pytrees -> one-element float Tensor) with respect to its first argument:
/// a tree of that argument's structure.
template <class F> auto grad(F f, Loc loc = Loc::current()) {
  return GradFn<std::decay_t<F>, false, ArgNums<0>, false>(std::move(f), {}, loc);
}
/// The gradients with respect to arguments I...: a std::tuple of trees.
template <class F, int... I> auto grad(F f, ArgNums<I...> nums, Loc loc = Loc::current()) {
  return GradFn<std::decay_t<F>, false, ArgNums<I...>, true>(std::move(f), nums, loc);
}
/// The gradients with respect to the arguments `argnums` (at run time): their leaves, flattened
/// in order (one Tensor per argument when the arguments are Tensors).
template <class F> auto grad(F f, std::vector<int> argnums, Loc loc = Loc::current()) {
  return GradFn<std::decay_t<F>, false, std::vector<int>, true>(std::move(f), std::move(argnums),
                                                                loc);
}
/// (f(args...), d f / d args[0]).
template <class F> auto value_and_grad(F f, Loc loc = Loc::current()) {
  return GradFn<std::decay_t<F>, true, ArgNums<0>, false>(std::move(f), {}, loc);
}
template <class F, int... I>
auto value_and_grad(F f, ArgNums<I...> nums, Loc loc = Loc::current()) {
  return GradFn<std::decay_t<F>, true, ArgNums<I...>, true>(std::move(f), nums, loc);
}
/// (f(args...), [the flattened gradients of args[argnums[i]]...]).
template <class F> auto value_and_grad(F f, std::vector<int> argnums, Loc loc = Loc::current()) {
  return GradFn<std::decay_t<F>, true, std::vector<int>, true>(std::move(f), std::move(argnums),
                                                               loc);
}

/// The pullback rlx::vjp returns: cotangents of f's outputs (a tree of the outputs' structure)
/// -> the gradients of every argument, a std::tuple of trees (zeros for integer Tensors; static
/// values as given).
template <class R, class... A> class Pullback {
public:
  Pullback(std::shared_ptr<const detail::VjpCore> core, R out, std::tuple<A...> args, Loc loc)
      : core_(std::move(core)), out_(std::move(out)), args_(std::move(args)), loc_(loc) {}
  std::tuple<A...> operator()(const R& cotangent, Loc loc = Loc::current()) const {
    std::vector<Tensor> cot = tree_leaves(cotangent);
    if (!(tree_structure(cotangent) == tree_structure(out_)))
      detail::fail_tree_structure("vjp pullback", 0, tree_structure(out_),
                                  tree_structure(cotangent));
    std::vector<Tensor> g = detail::vjp_pull(*core_, cot, loc);
    const Tensor* it = g.data();
    return std::apply(
        [&](const A&... a) { return std::tuple<A...>{PyTree<A>::unflatten(a, it)...}; }, args_);
  }

private:
  std::shared_ptr<const detail::VjpCore> core_;
  R out_;
  std::tuple<A...> args_;
  Loc loc_;
};

/// Reverse mode: (f(primals...), the pullback). primals: a std::tuple of f's arguments.
template <class F, class... A>
auto vjp(const F& f, const std::tuple<A...>& primals, Loc loc = Loc::current()) {
  if constexpr (!detail::check_call<F, A...>()) {
    return;
  } else if constexpr (!detail::check_tensor_result<detail::ResultOf<F, A...>>()) {
    return;
  } else {
    using R = detail::ResultOf<F, A...>;
    return std::apply(
        [&](const A&... args) {
          detail::ArgTrees<A...> t = detail::flatten_args(detail::all_traced<A...>(), args...);
          std::shared_ptr<const R> structure;
          detail::TraceBody body = [&](std::span<const Tensor> ph) {
            R r = detail::call_on(f, t, ph);
            structure = std::make_shared<const R>(detail::blank_tree(r));
            return tree_leaves(r);
          };
          auto [outs, core] = detail::vjp_call(t.leaves, body, loc);
          R out = tree_unflatten(*structure, outs);
          return std::pair(out,
                           Pullback<R, A...>(std::move(core), *structure,
                                             std::tuple<A...>(detail::blank_tree(args)...), loc));
        },
        primals);
  }
}

/// Forward mode: (f(primals...), the tangent of f's outputs along `tangents`, a tree of the
/// outputs' structure). primals and tangents: std::tuples of f's arguments, of one structure.
template <class F, class... A>
auto jvp(const F& f, const std::tuple<A...>& primals, const std::tuple<A...>& tangents,
         Loc loc = Loc::current()) {
  if constexpr (!detail::check_call<F, A...>()) {
    return;
  } else if constexpr (!detail::check_tensor_result<detail::ResultOf<F, A...>>()) {
    return;
  } else {
    using R = detail::ResultOf<F, A...>;
    std::vector<Tensor> tan = tree_leaves(tangents);
    if (!(tree_structure(tangents) == tree_structure(primals)))
      detail::fail_tree_structure("jvp tangents", 0, tree_structure(primals),
                                  tree_structure(tangents));
    return std::apply(
        [&](const A&... args) {
          detail::ArgTrees<A...> t = detail::flatten_args(detail::all_traced<A...>(), args...);
          std::shared_ptr<const R> structure;
          detail::TraceBody body = [&](std::span<const Tensor> ph) {
            R r = detail::call_on(f, t, ph);
            structure = std::make_shared<const R>(detail::blank_tree(r));
            return tree_leaves(r);
          };
          std::vector<Tensor> r = detail::jvp_call(t.leaves, tan, body, loc);
          std::size_t n = r.size() / 2;
          std::span<const Tensor> all(r);
          return std::pair<R, R>(tree_unflatten(*structure, all.subspan(0, n)),
                                 tree_unflatten(*structure, all.subspan(n)));
        },
        primals);
  }
}

/// The vector form: f takes 1 to 6 Tensors; outputs and tangents flattened.
template <class F>
std::pair<std::vector<Tensor>, std::vector<Tensor>> jvp(const F& f, std::vector<Tensor> primals,
                                                        std::vector<Tensor> tangents,
                                                        Loc loc = Loc::current()) {
  detail::TraceBody body = [&f](std::span<const Tensor> ph) { return detail::call_span(f, ph); };
  std::vector<Tensor> r = detail::jvp_call(primals, tangents, body, loc);
  std::size_t n = r.size() / 2;
  return {std::vector<Tensor>(r.begin(), r.begin() + std::ptrdiff_t(n)),
          std::vector<Tensor>(r.begin() + std::ptrdiff_t(n), r.end())};
}

/// Which axis of each argument vmap maps over (std::nullopt: not mapped, passed as it is).
using InAxes = std::vector<std::optional<int64_t>>;

/// The callable rlx::vmap returns.
template <class F> class VmapFn {
public:
  VmapFn(F f, InAxes in_axes, Loc loc)
      : f_(std::move(f)), in_axes_(std::move(in_axes)), loc_(loc) {}
  template <class... A> auto operator()(const A&... args) const {
    if constexpr (!detail::check_call<F, A...>()) {
      return;
    } else if constexpr (!detail::check_tensor_result<detail::ResultOf<F, A...>>()) {
      return;
    } else {
      using R = detail::ResultOf<F, A...>;
      if (!in_axes_.empty() && in_axes_.size() != sizeof...(A))
        fail(ErrorKind::Value, "vmap: in_axes has ", in_axes_.size(), " entries for ", sizeof...(A),
             " arguments", detail::at_loc(loc_));
      std::array<bool, sizeof...(A)> mapped{};
      for (std::size_t i = 0; i < sizeof...(A); ++i)
        mapped[i] = in_axes_.empty() || in_axes_[i].has_value();
      detail::ArgTrees<A...> t = detail::flatten_args(mapped, args...);
      for (std::size_t i = 0; i < sizeof...(A); ++i) {
        int64_t axis = in_axes_.empty() ? 0 : in_axes_[i].value_or(0);
        for (std::size_t j = t.offset[i]; j < t.offset[i + 1]; ++j)
          t.leaves[j] = detail::move_axis_to_front(t.leaves[j], axis, loc_);
      }
      std::shared_ptr<const R> structure;
      detail::TraceBody body = [&](std::span<const Tensor> ph) {
        R r = detail::call_on(f_, t, ph);
        structure = std::make_shared<const R>(detail::blank_tree(r));
        return tree_leaves(r);
      };
      std::vector<Tensor> r = detail::vmap_call(t.leaves, body, loc_);
      return tree_unflatten(*structure, r);
    }
  }

private:
  F f_;
  InAxes in_axes_;
  Loc loc_;
};

/// f mapped over axis in_axes[i] of argument i (axis 0 of every argument when in_axes is
/// empty; every Tensor of a mapped argument's tree is mapped, all with one size); outputs gain a
/// leading axis of that size.
template <class F> auto vmap(F f, InAxes in_axes = {}, Loc loc = Loc::current()) {
  return VmapFn<std::decay_t<F>>(std::move(f), std::move(in_axes), loc);
}

} // namespace rlx
