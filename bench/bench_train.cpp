// bench/bench_train.cpp -- one training step (forward, backward, SGD update of every parameter)
// through rlx::jit of rlx::value_and_grad, one thread, fed back into the next step as a training
// loop does: the MLP of examples/train_mlp.cpp (2 -> 32 tanh -> 1, minibatch 64, mean squared
// error) and a post-LN BERT encoder layer at [8,128,768] (12 heads, FFN 3072, erf GELU, no mask;
// the layer of bench_bert.cpp written with Tensor ops), loss = mean((layer(x) - target)^2). The
// PyTorch eager peers (autograd + torch.optim.SGD, the same models) are bench/peers_train.py;
// both print rows of the table "training step" (size = the rows of a minibatch: 64 for the MLP,
// batch x sequence = 1024 for the BERT layer). Before timing, the loss must fall over a few steps
// (a gradient of the wrong sign or size would not make it fall).
#include "bench_util.hpp"

#include <rlx/rlx.hpp>

#include <cmath>
#include <cstdio>
#include <string>
#include <tuple>
#include <vector>

namespace {

using rlx::Tensor;

constexpr char kTable[] = "training step";

struct Mlp {
  Tensor w1, b1, w2, b2;
};

struct Bert {
  Tensor qkv_w, qkv_b, out_w, out_b, ln1_g, ln1_b, ff1_w, ff1_b, ff2_w, ff2_b, ln2_g, ln2_b;
};

RLX_PYTREE(Mlp, w1, b1, w2, b2)
RLX_PYTREE(Bert, qkv_w, qkv_b, out_w, out_b, ln1_g, ln1_b, ff1_w, ff1_b, ff2_w, ff2_b, ln2_g, ln2_b)

Tensor mse(const Tensor& a, const Tensor& b) {
  Tensor d = a - b;
  return rlx::mean(d * d);
}

Tensor mlp_forward(const Mlp& p, const Tensor& x) {
  return rlx::matmul(rlx::tanh(rlx::matmul(x, p.w1) + p.b1), p.w2) + p.b2;
}

/// Post-LN encoder layer, as torch.nn.TransformerEncoderLayer(norm_first=False) computes it.
Tensor bert_forward(const Bert& p, const Tensor& x, int64_t d, int64_t heads) {
  Tensor qkv = rlx::linear(x, p.qkv_w, p.qkv_b);
  Tensor q = qkv.slice(2, 0, d), k = qkv.slice(2, d, 2 * d), v = qkv.slice(2, 2 * d, 3 * d);
  Tensor attn = rlx::linear(rlx::attention(q, k, v, heads), p.out_w, p.out_b);
  Tensor x1 = rlx::layer_norm(x + attn, p.ln1_g, p.ln1_b, 1e-5);
  Tensor f = rlx::linear(rlx::gelu(rlx::linear(x1, p.ff1_w, p.ff1_b)), p.ff2_w, p.ff2_b);
  return rlx::layer_norm(x1 + f, p.ln2_g, p.ln2_b, 1e-5);
}

/// p - lr * g for every leaf.
template <class P> P sgd(const P& p, const P& g, float lr) {
  return rlx::tree_map([lr](const Tensor& w, const Tensor& dw) { return w - dw * lr; }, p, g);
}

/// What the check steps found: the first and the last loss, the parameters after them, and the
/// time of each step after the first (which traces and compiles).
template <class P> struct Trained {
  float first = 0, last = 0;
  P params;
  std::vector<double> step_seconds;
};

/// Runs `step` (params -> (loss, params)) `steps` times from `params`, timing each step.
template <class P, class Step> Trained<P> run_steps(Step& step, P params, int steps) {
  Trained<P> out;
  for (int i = 0; i < steps; ++i) {
    auto t0 = bench::Clock::now();
    auto [loss, next] = step(params);
    rlx::eval(rlx::tree_leaves(next));
    float l = loss.template item<float>();
    if (i > 0) out.step_seconds.push_back(bench::seconds_since(t0));
    if (i == 0) out.first = l;
    out.last = l;
    params = next;
  }
  out.params = params;
  return out;
}

/// Checks that the loss falls over `check_steps` steps, then times one step per call (the
/// parameters fed back). A step longer than half the budget is not sampled again: the check
/// steps after the first are the samples (a BERT layer's step takes seconds).
template <class P, class Step>
bool check_and_time(const std::string& what, Step& step, P params, int check_steps, int64_t size,
                    const bench::Budget& budget) {
  Trained<P> t = run_steps(step, params, check_steps);
  std::printf("check %s: loss %.6g -> %.6g over %d steps\n", what.c_str(), double(t.first),
              double(t.last), check_steps);
  if (!(std::isfinite(t.last) && t.last < t.first)) {
    std::printf("FAILED: %s: the loss does not fall\n", what.c_str());
    return false;
  }
  bench::Stats s;
  if (!t.step_seconds.empty() && t.step_seconds.back() > budget.seconds / 2) {
    s = bench::summarize(t.step_seconds, 1);
  } else {
    P current = t.params;
    s = bench::measure(
        [&] {
          auto [loss, next] = step(current);
          rlx::eval(loss);
          rlx::eval(rlx::tree_leaves(next));
          current = next;
        },
        budget);
  }
  bench::emit_time({kTable, "rlx (jit of value_and_grad, SGD)", 1, size, true}, s);
  return true;
}

bool mlp(const bench::Budget& budget) {
  const int64_t hidden = 32, batch = 64;
  Tensor x = rlx::rand({batch, 2}, 1) * 2.0f - 1.0f;
  Tensor x0 = x.slice(1, 0, 1), x1 = x.slice(1, 1, 2);
  Tensor y = rlx::sin(x0 * 2.0f) * 0.8f + x1 * x1 * 0.6f - 0.2f;
  rlx::eval(x, y);
  Mlp params{rlx::randn({2, hidden}, 2) * 0.5f, rlx::zeros({hidden}),
             rlx::randn({hidden, 1}, 3) * 0.05f, rlx::zeros({1})};
  rlx::eval(rlx::tree_leaves(params));
  auto jitted = rlx::jit([](const Mlp& p, const Tensor& xb, const Tensor& yb) {
    auto [l, g] = rlx::value_and_grad([&](const Mlp& q) { return mse(mlp_forward(q, xb), yb); })(p);
    return std::tuple{l, sgd(p, g, 0.05f)};
  });
  auto step = [&](const Mlp& p) { return jitted(p, x, y); };
  return check_and_time("MLP 2-32-1, batch 64", step, params, 20, batch, budget);
}

bool bert(const bench::Budget& budget) {
  const int64_t b = 8, s = 128, d = 768, f = 3072, heads = 12;
  auto w = [](rlx::Dims dims, uint64_t seed) { return rlx::randn(dims, seed) * 0.02f; };
  Bert p{w({d, 3 * d}, 11), rlx::zeros({3 * d}), w({d, d}, 12),  rlx::zeros({d}),
         rlx::ones({d}),    rlx::zeros({d}),     w({d, f}, 13),  rlx::zeros({f}),
         w({f, d}, 14),     rlx::zeros({d}),     rlx::ones({d}), rlx::zeros({d})};
  Tensor x = rlx::randn({b, s, d}, 15), target = rlx::randn({b, s, d}, 16);
  rlx::eval(x, target);
  rlx::eval(rlx::tree_leaves(p));
  auto jitted = rlx::jit([&](const Bert& q, const Tensor& xb, const Tensor& tb) {
    auto [l, g] = rlx::value_and_grad(
        [&](const Bert& r) { return mse(bert_forward(r, xb, d, heads), tb); })(q);
    return std::tuple{l, sgd(q, g, 0.05f)};
  });
  auto step = [&](const Bert& q) { return jitted(q, x, target); };
  return check_and_time("BERT layer [8,128,768]", step, p, 3, b * s, budget);
}

} // namespace

int main(int argc, char** argv) {
  bench::Args args = bench::parse_args(argc, argv, {});
  const bench::Budget budget = bench::budget_of(args);
  rlx::set_default_backend(rlx::Backend::Jit);
  rlx::set_num_threads(1);
  bench::emit_note(kTable, "one step: forward, backward and an SGD update (lr 0.05) of every "
                           "parameter, fed back into the next step; 1 thread; size 64 = the MLP "
                           "of examples/train_mlp.cpp (2-32-1 tanh, minibatch 64, MSE), size "
                           "1024 = a post-LN BERT layer [8,128,768] (12 heads, FFN 3072, erf "
                           "GELU, no mask), loss = MSE against a fixed target");
  bench::emit_note(kTable, "rlx: rlx::jit of rlx::value_and_grad and the update (one compiled "
                           "step), the parameters a pytree; timed per step, outputs evaluated; a "
                           "step longer than half the budget is timed on the check steps after "
                           "the first (which traces and compiles)");
  bool ok = mlp(budget);
  ok = bert(budget) && ok;
  return ok ? 0 : 1;
}
