// include/rlx/jit.hpp -- rlx::jit: trace a function of Tensors once per signature, replay it.
//
//   auto f = rlx::jit([](Tensor x, Tensor a) { return rlx::tanh(x * a) + x; });
//   Tensor y = f(x, a);            // first call: trace, compile, run; later calls: run
//
// A signature is the arguments' dtypes, ranks and static sizes; sizes named in
// JitOptions::dynamic_dims are symbols instead, so one trace serves every size: each new binding
// is specialized with Graph::bind and compiled once (a binding seen before is a cache hit).
// Arguments are pytrees (rlx/pytree.hpp): their Tensor leaves are traced, in order (a DynamicDim's
// `arg` counts those leaves), and their static values (numbers, strings, enums, sizes) are part of
// the signature, so a new value traces again. Results are pytrees of Tensors. Called inside
// another trace (rlx::jit, grad, vmap...), a jitted function is inlined into it. Scalars and
// tensors captured by the function are baked into the trace. Reading a traced value
// on the host (item, to_vector, data) inside the function is an rlx::Error naming the line.
// Traces are per thread; the compiled cache is shared and safe to call from many threads. A
// jitted function that calls itself inside its own trace (with untraced arguments) is an
// rlx::Error naming the line of rlx::jit, not a deadlock.
#pragma once

#include "rlx/pytree.hpp"
#include "rlx/settings.hpp"
#include "rlx/tensor.hpp"

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace rlx::ir {
class Graph; // rlx/ir/graph.hpp: include it to call last_graph()
}

namespace rlx {

/// Axis `axis` of argument `arg` is the dynamic dimension `name` (one name may appear on several
/// axes: they must then have equal sizes at every call).
struct DynamicDim {
  int arg = 0;
  int axis = 0;
  std::string name{};
};

struct JitOptions {
  std::vector<DynamicDim> dynamic_dims{};
  /// Backend of the compiled executables (default: rlx::default_backend()).
  std::optional<Backend> backend{};
  /// Name of the traced graph (printed by dumps and errors).
  std::string name = "jit";
};

struct JitStats {
  int64_t calls = 0;      ///< calls of the jitted function
  int64_t traces = 0;     ///< times the Python-like body ran to record a graph
  int64_t compiles = 0;   ///< executables built (a new signature or binding)
  int64_t cache_hits = 0; ///< calls served by an executable built before
  double trace_ms = 0, compile_ms = 0;
};

namespace detail {

/// A traced function's body: placeholders in, flattened outputs out.
using TraceBody = std::function<std::vector<Tensor>(std::span<const Tensor>)>;

/// The type-erased machinery behind Jitted (src/frontend/jit.cpp).
class JitCore {
public:
  /// `loc`: where rlx::jit was called (named by errors about the function itself).
  JitCore(JitOptions options, Loc loc);
  ~JitCore();
  using Body = TraceBody;
  /// Run `body` through the cache for these arguments (the Tensor leaves of the call) and
  /// `static_key` (the rest of the call's structure: a new key traces again); returns the
  /// flattened outputs. `structure` is the body's: set by the body when it runs, kept with the
  /// trace and handed back on the calls that replay it.
  std::vector<Tensor> call(std::span<const Tensor> args, const Body& body,
                           std::string_view static_key, std::shared_ptr<const void>& structure);
  JitStats stats() const;
  /// The traced (symbolic) graph of the most recent signature, for inspection.
  std::optional<ir::Graph> last_graph() const;

private:
  struct State;
  std::unique_ptr<State> state_;
};

template <class...> inline constexpr bool always_false = false;

/// The arguments of one call of a transformed function: the Tensor leaves of the traced ones.
template <class... A> struct ArgTrees {
  std::tuple<const A&...> args;
  std::array<bool, sizeof...(A)> traced{};
  std::vector<Tensor> leaves{};
  /// Argument i's leaves are leaves[offset[i], offset[i + 1]).
  std::array<std::size_t, sizeof...(A) + 1> offset{};
};

template <class... A>
ArgTrees<A...> flatten_args(const std::array<bool, sizeof...(A)>& traced, const A&... args) {
  ArgTrees<A...> t{std::tuple<const A&...>(args...), traced};
  std::size_t i = 0;
  (
      [&](const auto& a) {
        t.offset[i] = t.leaves.size();
        if (traced[i]) PyTree<std::remove_cvref_t<decltype(a)>>::flatten(a, t.leaves);
        ++i;
      }(args),
      ...);
  t.offset[sizeof...(A)] = t.leaves.size();
  return t;
}

template <class... A> std::array<bool, sizeof...(A)> all_traced() {
  std::array<bool, sizeof...(A)> t{};
  t.fill(true);
  return t;
}

/// The structure of every argument (the part of a call that is not Tensor data).
template <class... A> std::string describe_args(const A&... args) {
  std::string key;
  (PyTree<A>::describe(args, key), ...);
  return key;
}

template <class A> A rebuild_arg(const A& like, bool traced, const Tensor*& it) {
  return traced ? PyTree<A>::unflatten(like, it) : like;
}

/// What F returns for these arguments.
template <class F, class... A>
using ResultOf = std::remove_cvref_t<std::invoke_result_t<const F&, A&...>>;

/// f called with the traced arguments rebuilt around the placeholders `ph` (in leaf order) and
/// the others as given.
template <class F, class... A>
ResultOf<F, A...> call_on(const F& f, const ArgTrees<A...>& a, std::span<const Tensor> ph) {
  const Tensor* it = ph.data();
  return [&]<std::size_t... I>(std::index_sequence<I...>) {
    // A braced list evaluates in order: the arguments take their leaves in order.
    std::tuple<A...> rebuilt{rebuild_arg<A>(std::get<I>(a.args), a.traced[I], it)...};
    return std::apply(f, rebuilt);
  }(std::index_sequence_for<A...>{});
}

/// `tree` with undefined Tensors: its structure, holding no data.
template <class R> R blank_tree(const R& tree) {
  std::vector<Tensor> blanks(tree_leaves(tree).size());
  const Tensor* it = blanks.data();
  return PyTree<R>::unflatten(tree, it);
}

/// Compile-time checks shared by the transforms: messages name the transform.
template <class F, class... A> constexpr bool check_call() {
  static_assert((IsPyTree<A> && ...),
                "rlx transforms: every argument must be a pytree: a Tensor, a static value (a "
                "number, bool, enum or std::string), a std::vector / std::array / std::tuple / "
                "std::pair / std::optional / std::map<std::string, T> of pytrees, or a struct "
                "described with RLX_PYTREE");
  static_assert(std::is_invocable_v<const F&, A&...>,
                "rlx transforms: the function cannot be called with these arguments");
  return (IsPyTree<A> && ...) && std::is_invocable_v<const F&, A&...>;
}
template <class R> constexpr bool check_tensor_result() {
  static_assert(IsPyTree<R> && !IsStaticLeaf<R>,
                "rlx::jit / vmap / jvp / vjp: the function must return Tensors (a Tensor or a "
                "pytree holding Tensors), not a number or another non-Tensor value; compute the "
                "result as a Tensor");
  return IsPyTree<R> && !IsStaticLeaf<R>;
}

/// `x`, as an expression whose type depends on T (delays a template's use of incomplete types).
template <class T, class X> const X& dependent_on(const X& x) { return x; }

} // namespace detail

/// The callable rlx::jit returns; copies share one cache.
template <class F> class Jitted {
public:
  Jitted(F f, JitOptions options, Loc loc = Loc::current())
      : f_(std::move(f)), core_(std::make_shared<detail::JitCore>(std::move(options), loc)) {}

  /// Any pytree arguments: their Tensors are traced, their static values (numbers, strings,
  /// enums, container sizes) are part of the cache key, so a new value traces again.
  template <class... A> auto operator()(const A&... args) const {
    if constexpr (!detail::check_call<F, A...>()) {
      return;
    } else {
      using R = detail::ResultOf<F, A...>;
      if constexpr (!detail::check_tensor_result<R>()) {
        return;
      } else {
        detail::ArgTrees<A...> trees = detail::flatten_args(detail::all_traced<A...>(), args...);
        std::string key;
        if constexpr (!(std::is_same_v<A, Tensor> && ...)) key = detail::describe_args(args...);
        std::shared_ptr<const void> structure;
        detail::TraceBody body = [&](std::span<const Tensor> ph) {
          R r = detail::call_on(f_, trees, ph);
          std::vector<Tensor> flat = tree_leaves(r);
          structure = std::make_shared<const R>(detail::blank_tree(r));
          return flat;
        };
        std::vector<Tensor> out = core_->call(trees.leaves, body, key, structure);
        return tree_unflatten(*static_cast<const R*>(structure.get()), out);
      }
    }
  }

  JitStats stats() const { return core_->stats(); }
  /// The symbolic graph traced for the most recent signature (include rlx/ir/graph.hpp to call
  /// it; the template parameter keeps ir::Graph incomplete for code that does not).
  template <class G = ir::Graph> std::optional<G> last_graph() const {
    return detail::dependent_on<G>(*core_).last_graph();
  }

private:
  F f_;
  std::shared_ptr<detail::JitCore> core_;
};

/// Trace `f` (a function of pytrees returning a pytree of Tensors).
template <class F>
Jitted<std::decay_t<F>> jit(F&& f, JitOptions options = {}, Loc loc = Loc::current()) {
  return Jitted<std::decay_t<F>>(std::forward<F>(f), std::move(options), loc);
}

} // namespace rlx
