// include/rlx/optim.hpp -- rlx::optim: optax-style optimizers over pytrees of parameters.
//
//   auto opt = rlx::optim::adam(1e-3);
//   rlx::optim::State state = opt.init(params);           // params: any pytree (rlx/pytree.hpp)
//   std::tie(params, state) = opt.update(grads, state, params);   // grads: params' structure
//
// An optimizer is a value holding its hyperparameters (baked into a trace as constants); its
// state is a pytree of Tensors (a step counter and per-leaf moment buffers), so a whole training
// step, update included, runs under rlx::jit. The update rules are torch.optim's: SGD with
// momentum (the first step's buffer is the gradient), Nesterov and L2 weight decay added to the
// gradient; Adam with bias correction and eps added after the square root; AdamW with decoupled
// weight decay (p *= 1 - lr * weight_decay before the Adam step). The bias corrections are
// computed in f64 and cast to each parameter's dtype.
#pragma once

#include "rlx/pytree.hpp"
#include "rlx/tensor.hpp"

#include <span>
#include <utility>
#include <vector>

namespace rlx::optim {

/// An optimizer's state: the step count (an i64 scalar) and moment buffers, one per parameter
/// leaf in tree_leaves order (m: SGD's momentum or Adam's first moment; v: Adam's second).
struct State {
  Tensor step;
  std::vector<Tensor> m, v;
};
RLX_PYTREE(State, step, m, v)

enum class Rule : uint8_t { Sgd, Adam, AdamW };

struct Hyper {
  Rule rule = Rule::Sgd;
  double lr = 1e-3, momentum = 0, b1 = 0.9, b2 = 0.999, eps = 1e-8, weight_decay = 0;
  bool nesterov = false;
};

class Optimizer {
public:
  explicit Optimizer(Hyper h) : h_(h) {}
  const Hyper& hyper() const { return h_; }

  /// The initial state for `params` (zero buffers of each leaf's shape and dtype).
  template <IsPyTree P> State init(const P& params, Loc loc = Loc::current()) const {
    return init_leaves(tree_leaves(params), loc);
  }
  /// One step: (the new params, the new state). grads must have params' structure.
  template <IsPyTree P>
  std::pair<P, State> update(const P& grads, const State& state, const P& params,
                             Loc loc = Loc::current()) const {
    if (!(tree_structure(grads) == tree_structure(params)))
      detail::fail_tree_structure("rlx::optim update (grads, params)", 1, tree_structure(params),
                                  tree_structure(grads));
    auto [leaves, next] = update_leaves(tree_leaves(grads), state, tree_leaves(params), loc);
    return {tree_unflatten(params, leaves, loc), std::move(next)};
  }

  State init_leaves(std::span<const Tensor> params, const Loc& loc) const;
  std::pair<std::vector<Tensor>, State> update_leaves(std::span<const Tensor> grads,
                                                      const State& state,
                                                      std::span<const Tensor> params,
                                                      const Loc& loc) const;

private:
  Hyper h_;
};

/// torch.optim.SGD(lr, momentum, nesterov=, weight_decay=) (dampening 0).
Optimizer sgd(double lr, double momentum = 0, bool nesterov = false, double weight_decay = 0,
              Loc loc = Loc::current());
/// torch.optim.Adam / optax.adam (no weight decay).
Optimizer adam(double lr, double b1 = 0.9, double b2 = 0.999, double eps = 1e-8,
               Loc loc = Loc::current());
/// torch.optim.AdamW / optax.adamw: decoupled weight decay.
Optimizer adamw(double lr, double b1 = 0.9, double b2 = 0.999, double eps = 1e-8,
                double weight_decay = 1e-2, Loc loc = Loc::current());

} // namespace rlx::optim
