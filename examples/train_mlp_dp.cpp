// examples/train_mlp_dp.cpp -- data-parallel training of a small MLP with rlx::dist. Run it alone
// or under MPI:
//
//   build/examples/train_mlp_dp                    # one process, the whole batch
//   mpirun -np 2 build/examples/train_mlp_dp       # two processes, half the batch each
//
// Each process takes its shard of the batch, computes the gradient of its shard's mean loss and
// all-reduces the gradients (their mean, one bucket for all four tensors) inside the jitted step,
// so every process applies the same update and the parameters stay identical. With equal shards
// the mean of the shards' gradients is the full batch's gradient, so the loss curve rank 0 prints
// is the one-process curve (up to rounding; tests/check_train_mlp_dp.sh compares them). Exits
// non-zero unless the loss falls at least 5x and the parameters are bit-identical on every rank.
#include <rlx/rlx.hpp>

#include <cstdio>
#include <cstring>
#include <tuple>

using rlx::Tensor;
using rlx::dist::CollectiveOp;

struct Mlp {
  Tensor w1, b1, w2, b2;
};
RLX_PYTREE(Mlp, w1, b1, w2, b2)

Tensor predict(const Mlp& p, const Tensor& x) {
  return rlx::matmul(rlx::tanh(rlx::matmul(x, p.w1) + p.b1), p.w2) + p.b2;
}

Tensor mse(const Tensor& a, const Tensor& b) {
  Tensor d = a - b;
  return rlx::mean(d * d);
}

int main() {
  rlx::dist::init();
  const int rank = rlx::dist::rank(), ranks = rlx::dist::size();
  const int64_t batch = 128, hidden = 32;
  if (batch % ranks != 0) rlx::dist::abort("the batch of 128 must split evenly over the ranks");
  const int64_t shard = batch / ranks;

  // The same data and initial parameters on every rank (fixed seeds); each keeps its shard.
  Tensor x = rlx::rand({batch, 2}, /*seed=*/1) * 2.0f - 1.0f;
  Tensor x0 = x.slice(1, 0, 1), x1 = x.slice(1, 1, 2);
  Tensor y = rlx::sin(x0 * 2.0f) * 0.8f + x1 * x1 * 0.6f - 0.2f;
  Tensor xs = x.slice(0, rank * shard, (rank + 1) * shard);
  Tensor ys = y.slice(0, rank * shard, (rank + 1) * shard);
  Mlp params{rlx::randn({2, hidden}, 2) * 0.5f, rlx::zeros({hidden}),
             rlx::randn({hidden, 1}, 3) * 0.05f, rlx::zeros({1})};
  auto opt = rlx::optim::adam(0.02);
  rlx::optim::State state = opt.init(params);

  // One step: the shard's loss and gradient, the gradients' mean over ranks as one all_reduce,
  // the update; the loss returned is the mean over ranks, the full batch's loss.
  auto step =
      rlx::jit([&](const Mlp& p, const rlx::optim::State& s, const Tensor& xb, const Tensor& yb) {
        auto [l, g] = rlx::value_and_grad([&](const Mlp& q) { return mse(predict(q, xb), yb); })(p);
        Mlp mean = rlx::tree_unflatten(g, rlx::dist::all_reduce_bucket(rlx::tree_leaves(g)));
        auto [p2, s2] = opt.update(mean, s, p);
        return std::tuple{rlx::dist::all_reduce(l, CollectiveOp::Mean), p2, s2};
      });

  float first = 0, last = 0;
  for (int i = 0; i < 200; ++i) {
    Tensor l;
    std::tie(l, params, state) = step(params, state, xs, ys);
    last = l.item<float>();
    if (i == 0) first = last;
    if (rank == 0 && i % 20 == 0) std::printf("step %3d  loss %.5f\n", i, double(last));
  }
  // Identical parameters: the max over ranks of each tensor is this rank's own.
  bool same = true;
  for (const Tensor& t : rlx::tree_leaves(params)) {
    std::vector<float> mine = t.to_vector<float>();
    std::vector<float> top = rlx::dist::all_reduce(t, CollectiveOp::Max).to_vector<float>();
    same = same && std::memcmp(mine.data(), top.data(), mine.size() * sizeof(float)) == 0;
  }
  if (rank == 0)
    std::printf("%d rank%s: loss fell %.1fx; parameters %s on every rank\n", ranks,
                ranks == 1 ? "" : "s", double(first / last), same ? "identical" : "DIFFER");
  rlx::dist::finalize();
  return first / last >= 5.0f && same ? 0 : 1;
}
