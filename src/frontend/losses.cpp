// src/frontend/losses.cpp -- torch.nn.functional's losses on Tensors (rlx/nn.hpp), composed from
// Tensor ops so that every loss has its gradient by autodiff and runs on both backends.
//
// Class-index targets select their class's log-probability through a one-hot comparison with
// the class ids: it costs what the log_softmax before it costs (O(N C)) and needs no gather.
#include "frontend/impl.hpp"
#include "frontend/ops.hpp"
#include "rlx/nn.hpp"

#include <string>

namespace rlx::nn {

namespace {

using rlx::detail::at_loc;

const char* reduction_name(Reduction r) {
  switch (r) {
  case Reduction::None:
    return "none";
  case Reduction::Mean:
    return "mean";
  case Reduction::Sum:
    return "sum";
  case Reduction::BatchMean:
    return "batchmean";
  }
  return "?";
}

/// An rlx::Error unless x is a float tensor.
void check_float(const Tensor& x, const char* role, std::string_view what, const Loc& loc) {
  rlx::detail::check_defined(x, what, loc);
  if (!ir::is_float(x.dtype()))
    fail(ErrorKind::Type, what, ": ", role, " must be a float tensor, got ",
         ir::short_str(x.shape()), at_loc(loc));
}

/// none, sum or mean of elementwise losses (batchmean is kl_div's alone).
Tensor reduce(const Tensor& elems, Reduction r, std::string_view what, const Loc& loc) {
  switch (r) {
  case Reduction::None:
    return elems;
  case Reduction::Sum:
    return elems.sum({}, false, loc);
  case Reduction::Mean:
    return elems.mean({}, false, loc);
  case Reduction::BatchMean:
    break;
  }
  fail(ErrorKind::Value, what, ": reduction ", reduction_name(r), " is kl_div's only", at_loc(loc));
}

/// The class axis: 1 for [N, C, d...], 0 for an unbatched [C].
int64_t class_axis(const Tensor& input, std::string_view what, const Loc& loc) {
  if (input.ndim() == 0)
    fail(ErrorKind::Shape, what, ": input needs a class axis, got ", ir::short_str(input.shape()),
         at_loc(loc));
  return input.ndim() == 1 ? 0 : 1;
}

/// Sizes [1, .., C, .., 1] that put a per-class vector on the class axis.
Dims class_sizes(int64_t rank, int64_t axis, int64_t classes) {
  Dims s(static_cast<std::size_t>(rank), 1);
  s[std::size_t(axis)] = classes;
  return s;
}

/// Per-class weights [C] placed on the class axis, in dtype.
Tensor class_weights(const Tensor& w, int64_t rank, int64_t axis, int64_t classes, DType dtype,
                     std::string_view what, const Loc& loc) {
  check_float(w, "weight", what, loc);
  if (w.ndim() != 1 || w.size(0, loc) != classes)
    fail(ErrorKind::Shape, what, ": weight must be [", classes, "] (one per class), got ",
         ir::short_str(w.shape()), at_loc(loc));
  return w.cast(dtype, loc).reshape(class_sizes(rank, axis, classes), loc);
}

/// What class-index targets select from log-probabilities: per element, -w[t] logp[t] and w[t]
/// (both 0 where the target is ignore_index), and whether each element counts.
struct Picked {
  Tensor loss, weight, valid;
};

Picked pick(const Tensor& logp, const Tensor& target, const std::optional<Tensor>& weight,
            int64_t ignore_index, int64_t axis, std::string_view what, const Loc& loc) {
  const int64_t classes = logp.size(axis, loc);
  Dims want = logp.sizes(loc);
  want.erase(want.begin() + axis);
  if (!ir::is_int(target.dtype()))
    fail(ErrorKind::Type, what, ": class-index targets must be an integer tensor, got ",
         ir::short_str(target.shape()), " (class probabilities go to cross_entropy as floats)",
         at_loc(loc));
  if (target.sizes(loc) != want)
    fail(ErrorKind::Shape, what, ": target ", ir::short_str(target.shape()),
         " must have the input's sizes without the class axis (input ", ir::short_str(logp.shape()),
         ")", at_loc(loc));
  // Targets outside a trace are data: check them as torch does (a traced target cannot be read;
  // an out-of-range class there selects nothing and adds 0).
  if (!target.is_traced())
    for (int64_t t : target.to_vector<int64_t>(loc))
      if (t != ignore_index && (t < 0 || t >= classes))
        fail(ErrorKind::Value, what, ": target ", t, " is out of range for ", classes, " classes",
             at_loc(loc));
  const DType dt = logp.dtype();
  Tensor t = target.cast(DType::I64, loc);
  Tensor valid = ne(t, Number(ignore_index), loc);
  Tensor ids = arange(0, double(classes), 1, DType::I64, loc)
                   .reshape(class_sizes(logp.ndim(), axis, classes), loc);
  Tensor onehot = eq(where(valid, t, Number(0), loc).unsqueeze(axis, loc), ids, loc).cast(dt, loc);
  Tensor w_t = valid.cast(dt, loc);
  if (weight) {
    Tensor w = class_weights(*weight, logp.ndim(), axis, classes, dt, what, loc);
    w_t = mul(w_t, sum(mul(onehot, w, loc), {axis}, false, loc), loc);
  }
  Tensor loss = mul(neg(sum(mul(onehot, logp, loc), {axis}, false, loc), loc), w_t, loc);
  return {loss, w_t, valid};
}

/// none / sum / mean of class-index losses, the mean weighted by the targets' weights.
Tensor reduce_weighted(const Tensor& elems, const Tensor& w_t, Reduction r, std::string_view what,
                       const Loc& loc) {
  if (r == Reduction::Mean) return div(elems.sum({}, false, loc), w_t.sum({}, false, loc), loc);
  return reduce(elems, r, what, loc);
}

/// input and target broadcast together, both float.
void check_pair(const Tensor& input, const Tensor& target, std::string_view what, const Loc& loc) {
  check_float(input, "input", what, loc);
  check_float(target, "target", what, loc);
}

} // namespace

Tensor nll_loss(const Tensor& log_probs, const Tensor& target, const NllOptions& opts, Loc loc) {
  constexpr std::string_view what = "nll_loss";
  check_float(log_probs, "input", what, loc);
  int64_t axis = class_axis(log_probs, what, loc);
  Picked p = pick(log_probs, target, opts.weight, opts.ignore_index, axis, what, loc);
  return reduce_weighted(p.loss, p.weight, opts.reduction, what, loc);
}

Tensor cross_entropy(const Tensor& input, const Tensor& target, const CrossEntropyOptions& opts,
                     Loc loc) {
  constexpr std::string_view what = "cross_entropy";
  check_float(input, "input", what, loc);
  const double eps = opts.label_smoothing;
  if (!(eps >= 0.0 && eps <= 1.0))
    fail(ErrorKind::Value, what, ": label_smoothing must be in [0, 1], got ", eps, at_loc(loc));
  const int64_t axis = class_axis(input, what, loc);
  const int64_t classes = input.size(axis, loc);
  Tensor logp = log_softmax(input, axis, loc);
  std::optional<Tensor> w;
  if (opts.weight)
    w = class_weights(*opts.weight, input.ndim(), axis, classes, logp.dtype(), what, loc);

  if (ir::is_float(target.dtype())) { // class probabilities
    if (target.sizes(loc) != input.sizes(loc))
      fail(ErrorKind::Shape, what, ": probability targets ", ir::short_str(target.shape()),
           " must have the input's sizes ", ir::short_str(input.shape()), at_loc(loc));
    Tensor t = target.cast(logp.dtype(), loc);
    if (eps > 0) t = add(mul(t, Number(1.0 - eps), loc), Number(eps / double(classes)), loc);
    Tensor terms = mul(logp, t, loc);
    if (w) terms = mul(terms, *w, loc);
    return reduce(neg(sum(terms, {axis}, false, loc), loc), opts.reduction, what, loc);
  }
  Picked p = pick(logp, target, opts.weight, opts.ignore_index, axis, what, loc);
  Tensor nll = reduce_weighted(p.loss, p.weight, opts.reduction, what, loc);
  if (eps == 0) return nll;
  // torch's smoothing term: -sum_c w_c logp_c per element (0 where ignored), reduced like the
  // nll (its mean divides by the targets' weights too), scaled by eps / C.
  Tensor all_classes = w ? mul(logp, *w, loc) : logp;
  Tensor smooth =
      mul(neg(sum(all_classes, {axis}, false, loc), loc), p.valid.cast(logp.dtype()), loc);
  smooth = reduce_weighted(smooth, p.weight, opts.reduction, what, loc);
  return add(mul(nll, Number(1.0 - eps), loc), mul(smooth, Number(eps / double(classes)), loc),
             loc);
}

Tensor mse_loss(const Tensor& input, const Tensor& target, Reduction reduction, Loc loc) {
  check_pair(input, target, "mse_loss", loc);
  Tensor d = sub(input, target, loc);
  return reduce(mul(d, d, loc), reduction, "mse_loss", loc);
}

Tensor l1_loss(const Tensor& input, const Tensor& target, Reduction reduction, Loc loc) {
  check_pair(input, target, "l1_loss", loc);
  return reduce(abs(sub(input, target, loc), loc), reduction, "l1_loss", loc);
}

Tensor huber_loss(const Tensor& input, const Tensor& target, Reduction reduction, double delta,
                  Loc loc) {
  check_pair(input, target, "huber_loss", loc);
  if (!(delta > 0))
    fail(ErrorKind::Value, "huber_loss: delta must be positive, got ", delta, at_loc(loc));
  Tensor d = sub(input, target, loc), a = abs(d, loc);
  Tensor quad = mul(mul(d, d, loc), Number(0.5), loc);
  Tensor lin = mul(sub(a, Number(0.5 * delta), loc), Number(delta), loc);
  return reduce(where(le(a, Number(delta), loc), quad, lin, loc), reduction, "huber_loss", loc);
}

Tensor smooth_l1_loss(const Tensor& input, const Tensor& target, Reduction reduction, double beta,
                      Loc loc) {
  check_pair(input, target, "smooth_l1_loss", loc);
  if (!(beta >= 0))
    fail(ErrorKind::Value, "smooth_l1_loss: beta must be non-negative, got ", beta, at_loc(loc));
  Tensor d = sub(input, target, loc), a = abs(d, loc);
  if (beta == 0) return reduce(a, reduction, "smooth_l1_loss", loc); // torch: l1
  Tensor quad = mul(mul(d, d, loc), Number(0.5 / beta), loc);
  Tensor lin = sub(a, Number(0.5 * beta), loc);
  return reduce(where(lt(a, Number(beta), loc), quad, lin, loc), reduction, "smooth_l1_loss", loc);
}

Tensor binary_cross_entropy_with_logits(const Tensor& input, const Tensor& target,
                                        const BceOptions& opts, Loc loc) {
  constexpr std::string_view what = "binary_cross_entropy_with_logits";
  check_pair(input, target, what, loc);
  // -[t log sigmoid(x) + (1 - t) log(1 - sigmoid(x))] = (1 - t) x + softplus(-x), with the
  // positives' term scaled by pos_weight: (1 - t) x + (1 + (pw - 1) t) softplus(-x).
  Tensor sp = softplus(neg(input, loc), loc);
  Tensor scale = opts.pos_weight
                     ? add(mul(sub(*opts.pos_weight, Number(1), loc), target, loc), Number(1), loc)
                     : Tensor();
  Tensor elems = add(mul(sub(Number(1), target, loc), input, loc),
                     opts.pos_weight ? mul(scale, sp, loc) : sp, loc);
  if (opts.weight) elems = mul(elems, *opts.weight, loc);
  return reduce(elems, opts.reduction, what, loc);
}

Tensor binary_cross_entropy(const Tensor& input, const Tensor& target, std::optional<Tensor> weight,
                            Reduction reduction, Loc loc) {
  constexpr std::string_view what = "binary_cross_entropy";
  check_pair(input, target, what, loc);
  if (!input.is_traced()) // torch checks the range; a traced input cannot be read
    for (double p : input.to_vector<double>(loc))
      if (!(p >= 0 && p <= 1))
        fail(ErrorKind::Value, what, ": input must hold probabilities in [0, 1], found ", p,
             at_loc(loc));
  Tensor lp = clamp(log(input, loc), -100.0, std::nullopt, loc);
  Tensor lq = clamp(log(sub(Number(1), input, loc), loc), -100.0, std::nullopt, loc);
  Tensor elems =
      neg(add(mul(target, lp, loc), mul(sub(Number(1), target, loc), lq, loc), loc), loc);
  if (weight) elems = mul(elems, *weight, loc);
  return reduce(elems, reduction, what, loc);
}

Tensor kl_div(const Tensor& input, const Tensor& target, Reduction reduction, bool log_target,
              Loc loc) {
  constexpr std::string_view what = "kl_div";
  check_pair(input, target, what, loc);
  Tensor elems;
  if (log_target) {
    elems = mul(exp(target, loc), sub(target, input, loc), loc);
  } else {
    // xlogy(t, t) - t input: a zero target contributes 0 (not 0 * -inf).
    Tensor pos = gt(target, Number(0), loc);
    Tensor safe = where(pos, target, Number(1), loc);
    Tensor xlogx = where(pos, mul(target, log(safe, loc), loc), Number(0), loc);
    elems = sub(xlogx, mul(target, input, loc), loc);
  }
  if (reduction != Reduction::BatchMean) return reduce(elems, reduction, what, loc);
  if (input.ndim() == 0) return elems;
  return div(elems.sum({}, false, loc), Number(double(input.size(0, loc))), loc);
}

} // namespace rlx::nn
