// src/frontend/optim.cpp -- rlx::optim: the update rules on the flattened parameter leaves.
#include "rlx/optim.hpp"

#include <cmath>
#include <string>

namespace rlx::optim {

using detail::at_loc;

namespace {

const char* name_of(Rule r) {
  switch (r) {
  case Rule::Sgd:
    return "rlx::optim::sgd";
  case Rule::Adam:
    return "rlx::optim::adam";
  case Rule::AdamW:
    return "rlx::optim::adamw";
  }
  return "rlx::optim";
}

void check_hyper(const Hyper& h, const Loc& loc) {
  const char* what = name_of(h.rule);
  auto need = [&](bool ok, const char* field, double v, const char* rule) {
    if (!ok || !std::isfinite(v))
      fail(ErrorKind::Value, what, ": ", field, " = ", v, " must be ", rule, at_loc(loc));
  };
  need(h.lr >= 0, "lr", h.lr, ">= 0");
  need(h.momentum >= 0, "momentum", h.momentum, ">= 0");
  need(h.weight_decay >= 0, "weight_decay", h.weight_decay, ">= 0");
  need(h.b1 >= 0 && h.b1 < 1, "b1", h.b1, "in [0, 1)");
  need(h.b2 >= 0 && h.b2 < 1, "b2", h.b2, "in [0, 1)");
  need(h.eps >= 0, "eps", h.eps, ">= 0");
  if (h.nesterov && h.momentum <= 0)
    fail(ErrorKind::Value, what, ": nesterov needs momentum > 0", at_loc(loc));
}

bool has_m(const Hyper& h) { return h.rule != Rule::Sgd || h.momentum != 0; }
bool has_v(const Hyper& h) { return h.rule != Rule::Sgd; }

} // namespace

State Optimizer::init_leaves(std::span<const Tensor> params, const Loc& loc) const {
  State s;
  s.step = zeros({}, DType::I64, loc);
  for (std::size_t i = 0; i < params.size(); ++i) {
    if (!params[i].defined() || !ir::is_float(params[i].dtype()))
      fail(ErrorKind::Type, name_of(h_.rule), ".init: parameter leaf ", i, " is ",
           params[i].defined() ? ir::short_str(params[i].shape()) : std::string("undefined"),
           "; parameters must be floating-point tensors", at_loc(loc));
    if (has_m(h_)) s.m.push_back(zeros_like(params[i], loc));
    if (has_v(h_)) s.v.push_back(zeros_like(params[i], loc));
  }
  return s;
}

std::pair<std::vector<Tensor>, State> Optimizer::update_leaves(std::span<const Tensor> grads,
                                                               const State& state,
                                                               std::span<const Tensor> params,
                                                               const Loc& loc) const {
  const char* what = name_of(h_.rule);
  std::size_t n = params.size();
  if (grads.size() != n || (has_m(h_) && state.m.size() != n) ||
      (has_v(h_) && state.v.size() != n) || !state.step.defined())
    fail(ErrorKind::Value, what, ".update: ", n, " parameter leaves, ", grads.size(),
         " gradients and a state for ", has_m(h_) ? state.m.size() : state.v.size(),
         " (the state must come from init or update of these parameters)", at_loc(loc));
  for (std::size_t i = 0; i < n; ++i)
    if (grads[i].shape() != params[i].shape())
      fail(ErrorKind::Shape, what, ".update: gradient ", i, " is ", ir::short_str(grads[i].shape()),
           " but its parameter is ", ir::short_str(params[i].shape()), at_loc(loc));

  State next;
  next.step = state.step + 1;
  Tensor t = next.step.cast(DType::F64, loc);
  // 1 - b^t, computed in f64 (exp(t log b)).
  Tensor bc1, bc2;
  if (has_v(h_)) {
    bc1 = 1.0 - exp(t * std::log(h_.b1), loc);
    bc2 = 1.0 - exp(t * std::log(h_.b2), loc);
  }
  std::vector<Tensor> out;
  out.reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    Tensor p = params[i], g = grads[i];
    DType dt = p.dtype();
    if (h_.rule == Rule::Sgd) {
      if (h_.weight_decay != 0) g = g + p * h_.weight_decay;
      if (h_.momentum != 0) {
        Tensor buf = state.m[i] * h_.momentum + g;
        next.m.push_back(buf);
        g = h_.nesterov ? g + buf * h_.momentum : buf;
      }
      out.push_back(p - g * h_.lr);
      continue;
    }
    if (h_.rule == Rule::AdamW) p = p * (1.0 - h_.lr * h_.weight_decay);
    Tensor m = state.m[i] * h_.b1 + g * (1.0 - h_.b1);
    Tensor v = state.v[i] * h_.b2 + g * g * (1.0 - h_.b2);
    next.m.push_back(m);
    next.v.push_back(v);
    Tensor step_size = (h_.lr / bc1).cast(dt, loc);
    Tensor denom = sqrt(v, loc) / sqrt(bc2, loc).cast(dt, loc) + h_.eps;
    out.push_back(p - step_size * (m / denom));
  }
  return {std::move(out), std::move(next)};
}

Optimizer sgd(double lr, double momentum, bool nesterov, double weight_decay, Loc loc) {
  Hyper h{.rule = Rule::Sgd,
          .lr = lr,
          .momentum = momentum,
          .weight_decay = weight_decay,
          .nesterov = nesterov};
  check_hyper(h, loc);
  return Optimizer(h);
}

Optimizer adam(double lr, double b1, double b2, double eps, Loc loc) {
  Hyper h{.rule = Rule::Adam, .lr = lr, .b1 = b1, .b2 = b2, .eps = eps};
  check_hyper(h, loc);
  return Optimizer(h);
}

Optimizer adamw(double lr, double b1, double b2, double eps, double weight_decay, Loc loc) {
  Hyper h{
      .rule = Rule::AdamW, .lr = lr, .b1 = b1, .b2 = b2, .eps = eps, .weight_decay = weight_decay};
  check_hyper(h, loc);
  return Optimizer(h);
}

} // namespace rlx::optim
