// include/rlx/jit.hpp -- rlx::jit: trace a function of Tensors once per signature, replay it.
//
//   auto f = rlx::jit([](Tensor x, Tensor a) { return rlx::tanh(x * a) + x; });
//   Tensor y = f(x, a);            // first call: trace, compile, run; later calls: run
//
// A signature is the arguments' dtypes, ranks and static sizes; sizes named in
// JitOptions::dynamic_dims are symbols instead, so one trace serves every size: each new binding
// is specialized with Graph::bind and compiled once (a binding seen before is a cache hit).
// Scalars and tensors captured by the function are baked into the trace. Reading a traced value
// on the host (item, to_vector, data) inside the function is an rlx::Error naming the line.
// Traces are per thread; the compiled cache is shared and safe to call from many threads. A
// jitted function that calls itself inside its own trace (with untraced arguments) is an
// rlx::Error naming the line of rlx::jit, not a deadlock.
#pragma once

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
  /// Run `body` through the cache for these arguments; returns the flattened outputs.
  std::vector<Tensor> call(std::span<const Tensor> args, const Body& body);
  JitStats stats() const;
  /// The traced (symbolic) graph of the most recent signature, for inspection.
  std::optional<ir::Graph> last_graph() const;

private:
  struct State;
  std::unique_ptr<State> state_;
};

/// Flatten a traced function's result into tensors and back: Tensor, std::vector<Tensor>,
/// std::pair / std::tuple of Tensors.
template <class R> struct Outputs;
template <> struct Outputs<Tensor> {
  static std::vector<Tensor> flatten(Tensor t) { return {std::move(t)}; }
  static Tensor unflatten(std::vector<Tensor> v) { return std::move(v.at(0)); }
};
template <> struct Outputs<std::vector<Tensor>> {
  static std::vector<Tensor> flatten(std::vector<Tensor> v) { return v; }
  static std::vector<Tensor> unflatten(std::vector<Tensor> v) { return v; }
};
template <class... Ts> struct Outputs<std::tuple<Ts...>> {
  static_assert((std::is_same_v<Ts, Tensor> && ...), "rlx::jit: tuples must hold Tensors");
  static std::vector<Tensor> flatten(std::tuple<Ts...> t) {
    return std::apply([](auto&&... x) { return std::vector<Tensor>{std::move(x)...}; },
                      std::move(t));
  }
  static std::tuple<Ts...> unflatten(std::vector<Tensor> v) {
    return [&]<std::size_t... I>(std::index_sequence<I...>) {
      return std::tuple<Ts...>{std::move(v.at(I))...};
    }(std::index_sequence_for<Ts...>{});
  }
};
template <class A, class B> struct Outputs<std::pair<A, B>> {
  static std::vector<Tensor> flatten(std::pair<A, B> p) {
    return {std::move(p.first), std::move(p.second)};
  }
  static std::pair<A, B> unflatten(std::vector<Tensor> v) {
    return {std::move(v.at(0)), std::move(v.at(1))};
  }
};

template <class> using AsTensor = Tensor;

/// `x`, as an expression whose type depends on T (delays a template's use of incomplete types).
template <class T, class X> const X& dependent_on(const X& x) { return x; }

/// Whether F can be called with one Tensor per argument type A (each convertible to Tensor).
template <class F, class... A>
concept CallableOnTensors =
    (std::convertible_to<const A&, Tensor> && ...) && std::is_invocable_v<const F&, AsTensor<A>...>;
/// What F returns when called so.
template <class F, class... A>
using TensorResult = std::remove_cvref_t<std::invoke_result_t<const F&, AsTensor<A>...>>;

} // namespace detail

/// The callable rlx::jit returns; copies share one cache.
template <class F> class Jitted {
public:
  Jitted(F f, JitOptions options, Loc loc = Loc::current())
      : f_(std::move(f)), core_(std::make_shared<detail::JitCore>(std::move(options), loc)) {}

  template <class... A>
    requires detail::CallableOnTensors<F, A...>
  auto operator()(const A&... args) const {
    using R = detail::TensorResult<F, A...>;
    std::array<Tensor, sizeof...(A)> in{Tensor(args)...};
    auto body = [this](std::span<const Tensor> ph) {
      return [&]<std::size_t... I>(std::index_sequence<I...>) {
        return detail::Outputs<R>::flatten(f_(detail::AsTensor<A>(ph[I])...));
      }(std::index_sequence_for<A...>{});
    };
    return detail::Outputs<R>::unflatten(core_->call(in, body));
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

/// Trace `f` (a function of Tensors returning a Tensor, a vector, pair or tuple of Tensors).
template <class F>
Jitted<std::decay_t<F>> jit(F&& f, JitOptions options = {}, Loc loc = Loc::current()) {
  return Jitted<std::decay_t<F>>(std::forward<F>(f), std::move(options), loc);
}

} // namespace rlx
