// tests/test_dist.cpp -- rlx::dist under mpirun (suite dist: `mpirun -np 2` and `-np 4`; on one
// process too). Every rank builds every rank's data from the same seeds, so each checks its
// collective results against a serial computation of its own: sums, gathers and scatters of
// small integers stored as floats (exact in any summation order, so compared exactly), gradients
// of the collectives against their closed forms, and a data-parallel MLP trained for a few steps
// against the one-process full-batch run (parameters bit-identical across ranks). All on both
// backends. Checks never throw (CHECK, not REQUIRE), so a failing rank keeps calling the same
// collectives as the others; main() fails every rank when one failed.
#define DOCTEST_CONFIG_IMPLEMENT
#include "frontend/impl.hpp"
#include "support/backends.hpp"

#include <rlx/all.hpp>

#include <doctest/doctest.h>

#include <cstring>
#include <set>
#include <stdexcept>
#include <string>
#include <tuple>

using rlx::Tensor;
using rlx::dist::CollectiveOp;
using rlx::ir::DType;
using rlx::ir::OpKind;

namespace {

int R() { return rlx::dist::rank(); }
int P() { return rlx::dist::size(); }

/// Rank r's operand of a case: small integers (exact sums), distinct per rank and seed.
Tensor part(int r, rlx::Dims dims, uint64_t seed, DType t = DType::F32) {
  return rlx::round(rlx::randn(std::move(dims), seed * 97 + uint64_t(r), DType::F64) * 8.0)
      .astype(t);
}

std::vector<double> values(const Tensor& t) { return t.astype(DType::F64).to_vector<double>(); }

/// Bitwise equality of two f32 tensors' elements.
bool same_bits(const Tensor& a, const Tensor& b) {
  std::vector<float> x = a.to_vector<float>(), y = b.to_vector<float>();
  return x.size() == y.size() && std::memcmp(x.data(), y.data(), x.size() * sizeof(float)) == 0;
}

/// The distinct pending nodes of kind k behind any of ts (without materializing them).
std::set<const rlx::detail::TensorImpl*> pending_nodes(const std::vector<Tensor>& ts, OpKind k) {
  std::set<const rlx::detail::TensorImpl*> seen, out;
  std::vector<const rlx::detail::TensorImpl*> stack;
  for (const Tensor& t : ts) stack.push_back(t.impl().get());
  while (!stack.empty()) {
    const auto* impl = stack.back();
    stack.pop_back();
    if (!seen.insert(impl).second) continue;
    if (impl->op && impl->op->kind() == k) out.insert(impl);
    for (const auto& in : impl->inputs) stack.push_back(in.get());
  }
  return out;
}

} // namespace

TEST_CASE("dist: the job's ranks are 0..size-1, each once") {
  CHECK(P() >= 1);
  CHECK(R() >= 0);
  CHECK(R() < P());
  rlx::test::on_both_backends([] {
    Tensor all = rlx::dist::all_gather(rlx::full({1}, double(R()), DType::I64));
    std::vector<int64_t> want(static_cast<std::size_t>(P()));
    for (int r = 0; r < P(); ++r) want[std::size_t(r)] = r;
    CHECK(all.to_vector<int64_t>() == want);
  });
}

TEST_CASE(
    "dist: all_reduce sums, averages, maxes and mins every rank's tensor like a serial loop") {
  rlx::test::on_both_backends([] {
    for (DType t : {DType::F32, DType::F64, DType::I32, DType::I64}) {
      CAPTURE(t);
      Tensor mine = part(R(), {3, 5}, 1, t);
      std::vector<double> sum(15, 0.0), mx(15, -1e300), mn(15, 1e300);
      for (int r = 0; r < P(); ++r) {
        std::vector<double> v = values(part(r, {3, 5}, 1, t));
        for (std::size_t i = 0; i < v.size(); ++i) {
          sum[i] += v[i];
          mx[i] = std::max(mx[i], v[i]);
          mn[i] = std::min(mn[i], v[i]);
        }
      }
      CHECK(values(rlx::dist::all_reduce(mine)) == sum);
      CHECK(values(rlx::dist::all_reduce(mine, CollectiveOp::Max)) == mx);
      CHECK(values(rlx::dist::all_reduce(mine, CollectiveOp::Min)) == mn);
      if (rlx::ir::is_float(t)) {
        std::vector<double> mean = sum;
        for (double& m : mean) m /= P(); // P is 1, 2 or 4: exact
        CHECK(values(rlx::dist::all_reduce(mine, CollectiveOp::Mean)) == mean);
      }
    }
  });
}

TEST_CASE("dist: all_gather concatenates the ranks' tensors in rank order along any axis") {
  rlx::test::on_both_backends([] {
    for (int64_t axis : {0, 1, 2, -1, -3}) {
      CAPTURE(axis);
      std::vector<Tensor> parts;
      for (int r = 0; r < P(); ++r) parts.push_back(part(r, {2, 3, 2}, 2));
      Tensor got = rlx::dist::all_gather(parts[std::size_t(R())], axis);
      CHECK(got.sizes() == rlx::concat(parts, axis).sizes());
      CHECK(values(got) == values(rlx::concat(parts, axis)));
    }
  });
}

TEST_CASE("dist: reduce_scatter gives each rank its block of the sum along any axis") {
  rlx::test::on_both_backends([] {
    for (int64_t axis : {0, 1, -1}) {
      CAPTURE(axis);
      int64_t ax = axis < 0 ? axis + 2 : axis;
      rlx::Dims dims{2, 2};
      dims[std::size_t(ax)] *= P();
      Tensor sum = part(0, dims, 3);
      for (int r = 1; r < P(); ++r) sum = sum + part(r, dims, 3);
      Tensor block = rlx::narrow(sum, ax, 2 * R(), 2);
      Tensor got = rlx::dist::reduce_scatter(part(R(), dims, 3), axis);
      CHECK(got.sizes() == block.sizes());
      CHECK(values(got) == values(block));
    }
  });
}

TEST_CASE("dist: broadcast gives every rank root's tensor; reduce sums onto root only") {
  rlx::test::on_both_backends([] {
    int root = P() - 1;
    CHECK(values(rlx::dist::broadcast(part(R(), {4}, 4), root)) == values(part(root, {4}, 4)));
    Tensor sum = part(0, {4}, 5);
    for (int r = 1; r < P(); ++r) sum = sum + part(r, {4}, 5);
    Tensor got = rlx::dist::reduce(part(R(), {4}, 5), root);
    CHECK(values(got) == (R() == root ? values(sum) : std::vector<double>(4, 0.0)));
  });
}

TEST_CASE("dist: send and recv pass tensors around a ring, and to this rank itself") {
  rlx::test::on_both_backends([] {
    int next = (R() + 1) % P(), prev = (R() + P() - 1) % P();
    Tensor sent = rlx::dist::send(part(R(), {3, 2}, 6), next, 1);
    Tensor got = rlx::dist::recv(rlx::zeros({3, 2}), prev, 1);
    rlx::eval(sent, got); // every rank sends first (small messages do not wait for the recv)
    CHECK(values(sent) == values(part(R(), {3, 2}, 6)));
    CHECK(values(got) == values(part(prev, {3, 2}, 6)));
  });
}

TEST_CASE("dist: collectives run inside rlx::jit, once per call") {
  rlx::test::on_both_backends([] {
    auto f = rlx::jit(
        [](const Tensor& x) { return rlx::dist::all_gather(rlx::dist::all_reduce(x) * 0.5f, 0); });
    for (uint64_t seed : {7, 8}) {
      Tensor sum = part(0, {2}, seed);
      for (int r = 1; r < P(); ++r) sum = sum + part(r, {2}, seed);
      std::vector<double> want;
      for (int r = 0; r < P(); ++r)
        for (double v : values(sum)) want.push_back(v * 0.5);
      CHECK(values(f(part(R(), {2}, seed))) == want);
    }
    CHECK(f.stats().traces == 1);
  });
}

TEST_CASE("dist: gradients of all_reduce, all_gather, reduce_scatter and broadcast are their "
          "adjoints summed over ranks") {
  // Each rank's loss is sum(w_r * collective(x_r)); the job's objective is their sum, so
  // d/dx_r = the adjoint collective of the w's.
  rlx::test::on_both_backends([] {
    std::vector<Tensor> ws;
    for (int r = 0; r < P(); ++r) ws.push_back(part(r, {2, 2 * P()}, 9));
    Tensor w = ws[std::size_t(R())];
    Tensor wsum = ws[0];
    for (int r = 1; r < P(); ++r) wsum = wsum + ws[std::size_t(r)];
    Tensor x = part(R(), {2, 2 * P()}, 10);
    auto loss_of = [&](auto collective) {
      return rlx::grad([&](const Tensor& v) { return rlx::sum(w * collective(v)); })(x);
    };
    CHECK(values(loss_of([](const Tensor& v) { return rlx::dist::all_reduce(v); })) ==
          values(wsum));
    Tensor mean =
        loss_of([](const Tensor& v) { return rlx::dist::all_reduce(v, CollectiveOp::Mean); });
    CHECK(values(mean) == values(wsum / float(P())));
    // all_gather along axis 1 of [2, 2P / P] blocks: rank r's block of sum_q w_q.
    Tensor xs = part(R(), {2, 2}, 11);
    Tensor g_gather =
        rlx::grad([&](const Tensor& v) { return rlx::sum(w * rlx::dist::all_gather(v, 1)); })(xs);
    CHECK(values(g_gather) == values(rlx::narrow(wsum, 1, 2 * R(), 2)));
    // reduce_scatter: every w_q's block lands on rank q; d/dx_r = all of them gathered.
    Tensor g_scatter = rlx::grad([&](const Tensor& v) {
      return rlx::sum(rlx::narrow(w, 1, 0, 2) * rlx::dist::reduce_scatter(v, 1));
    })(x);
    std::vector<Tensor> firsts;
    for (int r = 0; r < P(); ++r) firsts.push_back(rlx::narrow(ws[std::size_t(r)], 1, 0, 2));
    CHECK(values(g_scatter) == values(rlx::concat(firsts, 1)));
    // broadcast from root: only root's x matters, and it gets every rank's w.
    int root = P() - 1;
    Tensor g_bcast = loss_of([root](const Tensor& v) { return rlx::dist::broadcast(v, root); });
    CHECK(values(g_bcast) == values(R() == root ? wsum : rlx::zeros_like(wsum)));
    // max: the cotangents of every rank go to the rank holding the max.
    Tensor g_max =
        loss_of([](const Tensor& v) { return rlx::dist::all_reduce(v, CollectiveOp::Max); });
    Tensor mx = rlx::dist::all_reduce(x, CollectiveOp::Max);
    CHECK(values(g_max) == values(rlx::where(rlx::eq(x, mx), wsum, rlx::zeros_like(wsum))));
  });
}

TEST_CASE("dist: the gradient through send and recv flows back from the receiver to the sender") {
  if (P() < 2) return; // needs two ranks
  rlx::test::on_both_backends([] {
    Tensor w = part(1, {3}, 12);
    if (R() == 0) {
      Tensor x = part(0, {3}, 13);
      // Rank 0's own loss ignores what it sends; rank 1's loss is sum(w * received).
      auto [l, g] = rlx::value_and_grad(
          [](const Tensor& v) { return rlx::sum(rlx::dist::send(v * 2.0f, 1, 2) * 0.0f); })(x);
      // One evaluation for both: the forward send runs before the backward recv (evaluated
      // apart, the recv would run first while rank 1 waits for the send).
      rlx::eval(l, g);
      CHECK(values(g) == values(w * 2.0f));
    } else if (R() == 1) {
      auto [l, g] = rlx::value_and_grad([&](const Tensor& like) {
        return rlx::sum(w * rlx::dist::recv(like, 0, 2));
      })(rlx::zeros({3}));
      rlx::eval(l, g);
      CHECK(l.item<float>() == rlx::sum(w * part(0, {3}, 13) * 2.0f).item<float>());
      CHECK(values(g) == std::vector<double>(3, 0.0));
    }
  });
}

TEST_CASE("dist: all_reduce_bucket reduces a list of gradients with one all_reduce") {
  std::vector<Tensor> gs{part(R(), {2, 3}, 14), part(R(), {4}, 15), part(R(), {}, 16)};
  std::vector<Tensor> got = rlx::dist::all_reduce_bucket(gs, CollectiveOp::Sum);
  CHECK(pending_nodes(got, OpKind::AllReduce).size() == 1);
  for (std::size_t i = 0; i < gs.size(); ++i) {
    Tensor want = part(0, gs[i].sizes(), 14 + i);
    for (int r = 1; r < P(); ++r) want = want + part(r, gs[i].sizes(), 14 + i);
    CHECK(got[i].sizes() == gs[i].sizes());
    CHECK(values(got[i]) == values(want));
  }
}

namespace {

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

} // namespace

TEST_CASE("dist: data-parallel training equals the full-batch run, parameters identical on every "
          "rank") {
  rlx::test::on_both_backends([] {
    const int64_t batch = 16, shard = batch / P();
    Tensor x = rlx::rand({batch, 3}, 21) * 2.0f - 1.0f;
    Tensor y = rlx::sin(rlx::sum(x, {1}, true) * 2.0f);
    Mlp init{rlx::randn({3, 8}, 22) * 0.5f, rlx::zeros({8}), rlx::randn({8, 1}, 23) * 0.3f,
             rlx::zeros({1})};
    auto opt = rlx::optim::sgd(0.1);
    auto serial_step = rlx::jit([&](const Mlp& p, const Tensor& xb, const Tensor& yb) {
      auto [l, g] = rlx::value_and_grad([&](const Mlp& q) { return mse(predict(q, xb), yb); })(p);
      return std::tuple{l, opt.update(g, opt.init(p), p).first};
    });
    auto dp_step = rlx::jit([&](const Mlp& p, const Tensor& xb, const Tensor& yb) {
      auto [l, g] = rlx::value_and_grad([&](const Mlp& q) { return mse(predict(q, xb), yb); })(p);
      Mlp mean = rlx::tree_unflatten(g, rlx::dist::all_reduce_bucket(rlx::tree_leaves(g)));
      return std::tuple{rlx::dist::all_reduce(l, CollectiveOp::Mean),
                        opt.update(mean, opt.init(p), p).first};
    });
    Mlp serial = init, dp = init;
    Tensor xs = x.slice(0, R() * shard, (R() + 1) * shard),
           ys = y.slice(0, R() * shard, (R() + 1) * shard);
    for (int step = 0; step < 6; ++step) {
      CAPTURE(step);
      auto [ls, ps] = serial_step(serial, x, y);
      auto [ld, pd] = dp_step(dp, xs, ys);
      serial = ps;
      dp = pd;
      CHECK(ld.item<float>() == doctest::Approx(ls.item<float>()).epsilon(1e-5));
    }
    std::vector<Tensor> a = rlx::tree_leaves(serial), b = rlx::tree_leaves(dp);
    for (std::size_t i = 0; i < a.size(); ++i) {
      CAPTURE(i);
      CHECK(rlx::allclose(b[i], a[i], 1e-5, 1e-6));
      // Bit-identical across ranks: the max and the min over ranks are this rank's own bits.
      CHECK(same_bits(rlx::dist::all_reduce(b[i], CollectiveOp::Max), b[i]));
      CHECK(same_bits(rlx::dist::all_reduce(b[i], CollectiveOp::Min), b[i]));
    }
  });
}

TEST_CASE("dist: a tensor-parallel MLP block (column- then row-split linear) equals the serial "
          "block") {
  // Megatron's split: W1's columns and b1 over ranks (each rank a slice of the hidden units), W2's
  // rows over ranks; the partial outputs are summed by one all_reduce. Gradients follow the job's
  // objective, the sum of the ranks' (identical) losses: P times the serial gradient of the
  // rank's weight slice.
  rlx::test::on_both_backends([] {
    const int64_t in = 6, hidden = 4 * P(), out = 3, per = hidden / P();
    Tensor x = rlx::randn({5, in}, 31), w1 = rlx::randn({in, hidden}, 32) * 0.4f;
    Tensor b1 = rlx::randn({hidden}, 33) * 0.1f, w2 = rlx::randn({hidden, out}, 34) * 0.4f;
    Tensor b2 = rlx::randn({out}, 35) * 0.1f;
    auto serial = [&](const Tensor& a) {
      return rlx::matmul(rlx::gelu(rlx::matmul(x, a) + b1), w2) + b2;
    };
    Tensor b1_r = rlx::narrow(b1, 0, R() * per, per), w2_r = rlx::narrow(w2, 0, R() * per, per);
    auto parallel = [&](const Tensor& a_r) {
      Tensor h = rlx::gelu(rlx::matmul(x, a_r) + b1_r);
      return rlx::dist::all_reduce(rlx::matmul(h, w2_r)) + b2;
    };
    Tensor w1_r = rlx::narrow(w1, 1, R() * per, per);
    CHECK(rlx::allclose(parallel(w1_r), serial(w1), 1e-5, 1e-6));
    Tensor g_serial = rlx::grad([&](const Tensor& a) { return rlx::sum(rlx::sin(serial(a))); })(w1);
    Tensor g_r = rlx::grad([&](const Tensor& a) { return rlx::sum(rlx::sin(parallel(a))); })(w1_r);
    CHECK(rlx::allclose(g_r, rlx::narrow(g_serial, 1, R() * per, per) * float(P()), 1e-5, 1e-6));
  });
}

TEST_CASE("dist: the JIT starts an all_reduce as soon as its operand is made and waits for it "
          "after the independent steps, with the blocking interpreter's result") {
  // The product chain does not depend on the collective: the JIT's plan starts the all_reduce
  // (MPI_Iallreduce) before the two products and waits just before the kernel reading it.
  Tensor x = part(R(), {16, 16}, 41), y = part(0, {16, 16}, 42) * 0.05f;
  Tensor sum = part(0, {16, 16}, 41);
  for (int r = 1; r < P(); ++r) sum = sum + part(r, {16, 16}, 41);
  std::vector<std::vector<double>> outs;
  rlx::test::on_both_backends([&] {
    auto f = rlx::jit([](const Tensor& a, const Tensor& b) {
      Tensor h = rlx::tanh(rlx::matmul(rlx::matmul(b, b), b));
      Tensor r = rlx::dist::all_reduce(a);
      return std::tuple{r, r + h};
    });
    rlx::dist::reset_stats();
    auto [r, out] = f(x, y);
    CHECK(values(r) == values(sum));
    outs.push_back(values(out));
    rlx::dist::Stats st = rlx::dist::stats();
    if (rlx::default_backend() == rlx::Backend::Jit) {
      CHECK(st.overlapped == 1);
      CHECK(st.steps_overlapped >= 2); // at least the two products ran while it travelled
    } else {
      CHECK(st.overlapped == 0); // the interpreter's collectives block
    }
  });
  REQUIRE(outs.size() == 2);
  CHECK(rlx::allclose(Tensor::from_vector(outs[1], {16, 16}),
                      Tensor::from_vector(outs[0], {16, 16}), 1e-6, 1e-6));
}

TEST_CASE("dist: the JIT overlaps send, recv and reduce_to_root with independent products, with "
          "the blocking interpreter's results") {
  // Each starts (MPI_Isend, MPI_Irecv, MPI_Ireduce) before the products and is waited for after
  // them: just before the sum reading the received tensor, or at the end.
  Tensor x = part(R(), {8, 8}, 43), y = part(0, {8, 8}, 44) * 0.05f;
  const int next = (R() + 1) % P(), prev = (R() + P() - 1) % P();
  std::vector<double> sum = values(part(0, {8, 8}, 43));
  for (int r = 1; r < P(); ++r) {
    std::vector<double> v = values(part(r, {8, 8}, 43));
    for (std::size_t i = 0; i < sum.size(); ++i) sum[i] += v[i];
  }
  std::vector<std::vector<double>> outs;
  rlx::test::on_both_backends([&] {
    auto f = rlx::jit([next, prev](const Tensor& a, const Tensor& b) {
      Tensor s = rlx::dist::send(a, next, 5);
      Tensor r = rlx::dist::recv(rlx::zeros({8, 8}), prev, 5);
      Tensor t = rlx::dist::reduce(a, 0);
      Tensor h = rlx::tanh(rlx::matmul(rlx::matmul(b, b), b));
      return std::tuple{s, r + h, t};
    });
    rlx::dist::reset_stats();
    auto [s, rh, t] = f(x, y);
    CHECK(values(s) == values(x));
    CHECK(values(t) == (R() == 0 ? sum : std::vector<double>(64, 0.0)));
    outs.push_back(values(rh));
    Tensor h = rlx::tanh(rlx::matmul(rlx::matmul(y, y), y));
    CHECK(rlx::allclose(rh - h, part(prev, {8, 8}, 43), 1e-5, 1e-5));
    rlx::dist::Stats st = rlx::dist::stats();
    if (rlx::default_backend() == rlx::Backend::Jit) {
      CHECK(st.overlapped == 3);
      CHECK(st.steps_overlapped >= 6); // each of the three waited after at least the products
    } else {
      CHECK(st.overlapped == 0);
    }
  });
  REQUIRE(outs.size() == 2);
  CHECK(rlx::allclose(Tensor::from_vector(outs[1], {8, 8}), Tensor::from_vector(outs[0], {8, 8}),
                      1e-6, 1e-6));
}

TEST_CASE("dist: the JIT runs a collective with nothing to overlap as one blocking step, with the "
          "interpreter's result") {
  // all_reduce is the only step: the plan has no wait step, and no overlap is counted.
  Tensor x = part(R(), {4, 5}, 45);
  std::vector<double> mean = values(part(0, {4, 5}, 45));
  for (int r = 1; r < P(); ++r) {
    std::vector<double> v = values(part(r, {4, 5}, 45));
    for (std::size_t i = 0; i < mean.size(); ++i) mean[i] += v[i];
  }
  for (double& m : mean) m = double(float(m) / float(P()));
  rlx::test::on_both_backends([&] {
    auto f = rlx::jit([](const Tensor& a) { return rlx::dist::all_reduce(a, CollectiveOp::Mean); });
    rlx::dist::reset_stats();
    Tensor got = f(x);
    CHECK(values(got) == mean);
    CHECK(values(x) == values(part(R(), {4, 5}, 45))); // the operand is intact
    CHECK(rlx::dist::stats().overlapped == 0);
  });
}

TEST_CASE("dist: the JIT's non-blocking all_gather, reduce_scatter, broadcast and mean equal the "
          "serial computation") {
  rlx::test::on_both_backends([] {
    auto f = rlx::jit([](const Tensor& a) {
      return std::tuple{rlx::dist::all_gather(a, 0), rlx::dist::reduce_scatter(a, 0),
                        rlx::dist::broadcast(a, P() - 1),
                        rlx::dist::all_reduce(a, CollectiveOp::Mean)};
    });
    Tensor mine = part(R(), {2 * P(), 3}, 43);
    auto [g, rs, b, m] = f(mine);
    std::vector<double> gathered, sum(std::size_t(6 * P()), 0.0);
    for (int r = 0; r < P(); ++r) {
      std::vector<double> v = values(part(r, {2 * P(), 3}, 43));
      gathered.insert(gathered.end(), v.begin(), v.end());
      for (std::size_t i = 0; i < v.size(); ++i) sum[i] += v[i];
    }
    CHECK(values(g) == gathered);
    CHECK(values(rs) == std::vector<double>(sum.begin() + 6 * R(), sum.begin() + 6 * (R() + 1)));
    CHECK(values(b) == values(part(P() - 1, {2 * P(), 3}, 43)));
    std::vector<double> mean = sum;
    for (double& v : mean) v /= P();
    CHECK(values(m) == mean);
  });
}

TEST_CASE("dist: a serial MLP with shard() on its weights equals the serial MLP (Megatron's "
          "split, the all_reduce placed by the pass)") {
  rlx::test::on_both_backends([] {
    const int64_t in = 6, hidden = 4 * P(), out = 3;
    Tensor x = rlx::randn({5, in}, 51), w1 = rlx::randn({in, hidden}, 52) * 0.4f;
    Tensor b1 = rlx::randn({hidden}, 53) * 0.1f, w2 = rlx::randn({hidden, out}, 54) * 0.4f;
    Tensor b2 = rlx::randn({out}, 55) * 0.1f;
    auto mlp = [&](const Tensor& a1, const Tensor& c1, const Tensor& a2) {
      return rlx::matmul(rlx::gelu(rlx::matmul(x, a1) + c1), a2) + b2;
    };
    Tensor serial = mlp(w1, b1, w2);
    Tensor sharded = mlp(rlx::dist::shard(w1, 1), rlx::dist::shard(b1, 0), rlx::dist::shard(w2, 0));
    CHECK(pending_nodes({sharded}, OpKind::AllReduce).empty()); // the program has none
    CHECK(sharded.sizes() == serial.sizes());                   // nor other shapes
    CHECK(rlx::allclose(sharded, serial, 1e-5, 1e-6));
    // b1 left whole: the pass cuts this rank's block of it for the add.
    auto jitted = rlx::jit([&](const Tensor& a1, const Tensor& c1, const Tensor& a2) {
      return mlp(rlx::dist::shard(a1, 1), c1, rlx::dist::shard(a2, 0));
    });
    CHECK(rlx::allclose(jitted(w1, b1, w2), serial, 1e-5, 1e-6));
  });
}

TEST_CASE("dist: rlx::grad through a sharded Megatron MLP equals the serial gradient (the "
          "annotation is transparent to autodiff)") {
  // The loss reads the MLP's whole output on every rank, so each rank's gradient of it is the
  // serial one: the pass splits the backward program by the annotations the VJP puts on the
  // cotangents (and the forward values it reads), and gathers the sharded gradients.
  rlx::test::on_both_backends([] {
    const int64_t in = 6, hidden = 4 * P(), out = 3;
    Tensor x = rlx::randn({5, in}, 71), w1 = rlx::randn({in, hidden}, 72) * 0.4f;
    Tensor b1 = rlx::randn({hidden}, 73) * 0.1f, w2 = rlx::randn({hidden, out}, 74) * 0.4f;
    Tensor b2 = rlx::randn({out}, 75) * 0.1f;
    auto loss = [&](bool sharded) {
      return [&, sharded](const Tensor& a1, const Tensor& c1, const Tensor& a2) {
        Tensor s1 = sharded ? rlx::dist::shard(a1, 1) : a1;
        Tensor t1 = sharded ? rlx::dist::shard(c1, 0) : c1;
        Tensor s2 = sharded ? rlx::dist::shard(a2, 0) : a2;
        Tensor y = rlx::matmul(rlx::gelu(rlx::matmul(x, s1) + t1), s2) + b2;
        return rlx::sum(rlx::sin(y));
      };
    };
    auto nums = rlx::argnums<0, 1, 2>;
    auto [l0, g0] = rlx::value_and_grad(loss(false), nums)(w1, b1, w2);
    auto [l1, g1] = rlx::value_and_grad(loss(true), nums)(w1, b1, w2);
    CHECK(rlx::allclose(l1, l0, 1e-5, 1e-6));
    CHECK(std::get<0>(g1).sizes() == w1.sizes());
    CHECK(rlx::allclose(std::get<0>(g1), std::get<0>(g0), 1e-5, 1e-6));
    CHECK(rlx::allclose(std::get<1>(g1), std::get<1>(g0), 1e-5, 1e-6));
    CHECK(rlx::allclose(std::get<2>(g1), std::get<2>(g0), 1e-5, 1e-6));
    // Inside rlx::jit too, and forward mode: the tangent of the sharded MLP is the serial one.
    auto jitted = rlx::jit([&](const Tensor& a1, const Tensor& c1, const Tensor& a2) {
      return rlx::grad(loss(true), nums)(a1, c1, a2);
    });
    auto [j1, j2, j3] = jitted(w1, b1, w2);
    CHECK(rlx::allclose(j1, std::get<0>(g0), 1e-5, 1e-6));
    CHECK(rlx::allclose(j2, std::get<1>(g0), 1e-5, 1e-6));
    CHECK(rlx::allclose(j3, std::get<2>(g0), 1e-5, 1e-6));
    Tensor dw = rlx::randn({in, hidden}, 76);
    auto f_serial = [&](const Tensor& a1) { return loss(false)(a1, b1, w2); };
    auto f_sharded = [&](const Tensor& a1) { return loss(true)(a1, b1, w2); };
    auto [v0, t0] = rlx::jvp(f_serial, std::tuple{w1}, std::tuple{dw});
    auto [v1, t1] = rlx::jvp(f_sharded, std::tuple{w1}, std::tuple{dw});
    CHECK(rlx::allclose(t1, t0, 1e-5, 1e-6));
  });
}

TEST_CASE("dist: sharded values are reduced, gathered and completed as the serial program says") {
  rlx::test::on_both_backends([] {
    Tensor a = rlx::randn({3, 4 * P()}, 61), b = rlx::randn({4 * P(), 5}, 62);
    Tensor sa = rlx::dist::shard(a, 1);
    // An element-wise value sharded along axis 1 comes out whole (all_gather).
    CHECK(rlx::allclose(rlx::exp(sa) * 2.0f, rlx::exp(a) * 2.0f, 1e-6, 1e-6));
    // Reductions over the sharded axis: the local one completed by the same all_reduce.
    CHECK(rlx::allclose(rlx::sum(sa, {1}), rlx::sum(a, {1}), 1e-5, 1e-6));
    CHECK(rlx::allclose(rlx::mean(sa, {1}), rlx::mean(a, {1}), 1e-6, 1e-6));
    CHECK(rlx::allclose(rlx::max(sa, {1}), rlx::max(a, {1}), 0, 0));
    CHECK(rlx::allclose(rlx::sum(sa), rlx::sum(a), 1e-5, 1e-5));
    // Over another axis the result stays sharded, then is gathered as an output.
    CHECK(rlx::allclose(rlx::sum(sa, {0}), rlx::sum(a, {0}), 1e-6, 1e-6));
    // A contraction over the sharded axis: partial sums, one all_reduce.
    CHECK(rlx::allclose(rlx::matmul(sa, rlx::dist::shard(b, 0)), rlx::matmul(a, b), 1e-5, 1e-6));
    // Rows of a sharded left operand: the product's rows, gathered.
    Tensor c = rlx::randn({4 * P(), 3}, 63);
    CHECK(rlx::allclose(rlx::matmul(rlx::dist::shard(c, 0), rlx::randn({3, 2}, 64)),
                        rlx::matmul(c, rlx::randn({3, 2}, 64)), 1e-5, 1e-6));
    // A whole operand spanning the sharded axis is cut to this rank's block.
    Tensor row = rlx::randn({4 * P()}, 65);
    CHECK(rlx::allclose(sa * row + 1.0f, a * row + 1.0f, 1e-6, 1e-6));
    // A contraction over the sharded axis of one operand: the other's rows are cut, partial sums.
    CHECK(rlx::allclose(rlx::matmul(sa, b), rlx::matmul(a, b), 1e-5, 1e-6));
    // An op the pass does not follow (softmax along the sharded axis) reads the gathered value.
    CHECK(rlx::allclose(rlx::softmax(sa, 1), rlx::softmax(a, 1), 1e-6, 1e-6));
  });
}

TEST_CASE("dist: shard() of an axis that does not split into equal blocks, or out of range, is "
          "an rlx::Error naming dist::shard and the user's line") {
  try {
    (void)rlx::dist::shard(rlx::zeros({3, 4}), 2);
    CHECK_MESSAGE(false, "shard accepted axis 2 of a rank-2 tensor");
  } catch (const rlx::Error& e) {
    CHECK(std::string(e.what()).find("dist::shard: axis 2") != std::string::npos);
    CHECK(std::string(e.what()).find("test_dist.cpp") != std::string::npos);
  }
  if (P() == 1) return; // one block always splits
  try {
    (void)rlx::dist::shard(rlx::zeros({3, 4 * P() + 1}), 1);
    CHECK_MESSAGE(false, "shard accepted an axis that does not split");
  } catch (const rlx::Error& e) {
    CHECK(e.kind() == rlx::ErrorKind::Shape);
    CHECK(std::string(e.what()).find("equal blocks") != std::string::npos);
    CHECK(std::string(e.what()).find("test_dist.cpp") != std::string::npos);
  }
}

TEST_CASE("dist: wrong ranks and sizes are rlx::Errors naming the function and the job") {
  try {
    rlx::dist::init(P() + 1);
    CHECK_MESSAGE(false, "init accepted a size the job does not have");
  } catch (const rlx::Error& e) {
    CHECK(std::string(e.what()).find("mpirun -np " + std::to_string(P() + 1)) != std::string::npos);
    CHECK(std::string(e.what()).find("test_dist.cpp") != std::string::npos);
  }
  try {
    (void)rlx::dist::broadcast(rlx::zeros({2}), P());
    CHECK_MESSAGE(false, "broadcast accepted a root outside the job");
  } catch (const rlx::Error& e) {
    CHECK(e.kind() == rlx::ErrorKind::Value);
    CHECK(std::string(e.what()).find("broadcast: root") != std::string::npos);
  }
  try {
    (void)rlx::dist::all_reduce(rlx::zeros({2}, DType::Bool));
    CHECK_MESSAGE(false, "all_reduce accepted bools");
  } catch (const rlx::Error& e) {
    CHECK(e.kind() == rlx::ErrorKind::Type);
  }
  try {
    (void)rlx::dist::reduce_scatter(rlx::zeros({2 * P() + 1}));
    if (P() > 1) CHECK_MESSAGE(false, "reduce_scatter accepted an axis that does not split");
  } catch (const rlx::Error& e) {
    CHECK(e.kind() == rlx::ErrorKind::Shape);
  }
}

int main(int argc, char** argv) {
  rlx::dist::init();
  // --throw-on-rank R: rank R throws while the others wait in an all_reduce; the job must end
  // (the terminate handler's MPI_Abort) with the message, not hang (tests/meson.build).
  if (argc == 3 && std::string(argv[1]) == "--throw-on-rank") {
    if (R() == std::stoi(argv[2])) throw std::runtime_error("this rank failed on purpose");
    (void)rlx::dist::all_reduce(rlx::ones({1})).item<float>();
    return 0;
  }
  // --skip-collective-on-rank R: rank R leaves without the all_reduce the others wait in; their
  // wait must time out (RLX_DIST_TIMEOUT) and end the job with the message (tests/meson.build).
  if (argc == 3 && std::string(argv[1]) == "--skip-collective-on-rank") {
    if (R() != std::stoi(argv[2])) (void)rlx::dist::all_reduce(rlx::ones({1})).item<float>();
    return 0;
  }
  doctest::Context context(argc, argv);
  int failed = context.run() != 0 ? 1 : 0;
  // A rank whose checks failed fails every rank (mpirun reports the first non-zero exit).
  int any = int(rlx::dist::all_reduce(rlx::full({1}, double(failed), DType::I32), CollectiveOp::Max)
                    .item<int32_t>());
  rlx::dist::finalize();
  return any;
}
