// bench/bench_dist.cpp -- rlx's all_reduce against a raw MPI_Allreduce on the same bytes, per
// message size (osu_allreduce style: a barrier, then `iters` back-to-back calls, the slowest
// rank's mean time), and a data-parallel training step of an MLP (its time per step on the
// job's ranks: run it at -np 1, 2, 4 to see it scale). Run under mpirun:
//
//   mpirun -np 2 build-bench/bench/bench_dist        # rank 0 prints markdown tables
//   mpirun -np 2 build-bench/bench/bench_dist --clock cpu --rounds 11
//
// --clock cpu times each rank's CPU time (CLOCK_PROCESS_CPUTIME_ID) instead of the wall clock: on
// a loaded machine the time a rank is descheduled then counts for neither side (a rank that
// busy-polls for a descheduled peer still counts its polls).
//
// rlx's side is a compiled graph holding one all_reduce (sum, f32) run on a Buffer: what a jitted
// step pays per collective with nothing to overlap (one plan step calling MPI_Allreduce from the
// operand into the result). MPI's side calls MPI_Allreduce in place in a std::vector and from one
// vector into another (what rlx's op does: its operand stays intact), and MPI_Iallreduce +
// MPI_Wait (the call of a start and a wait step, to tell the non-blocking algorithm's cost).
#define OMPI_SKIP_MPICXX 1
#include <mpi.h>
#include <rlx/all.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <tuple>
#include <vector>

namespace {

bool cpu_clock = false;

double now() {
  if (cpu_clock) {
    timespec t{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return double(t.tv_sec) + double(t.tv_nsec) * 1e-9;
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

/// The slowest rank's mean seconds per call of f.
template <class F> double time_calls(int iters, F&& f) {
  for (int i = 0; i < 3; ++i) f(); // warm up (connections, pages)
  MPI_Barrier(MPI_COMM_WORLD);
  double t0 = now();
  for (int i = 0; i < iters; ++i) f();
  double mine = (now() - t0) / iters, worst = 0;
  MPI_Allreduce(&mine, &worst, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return worst;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

struct Mlp {
  rlx::Tensor w1, b1, w2, b2;
};
RLX_PYTREE(Mlp, w1, b1, w2, b2)

/// One data-parallel training step, as examples/train_mlp_dp.cpp makes it but larger (64 -> 512
/// tanh -> 1, a global batch of 4096, SGD): each rank the loss and gradient of its shard, one
/// all_reduce of the gradient bucket (mean), the update. Prints the slowest rank's median step.
void data_parallel_step(int rank, int ranks, int rounds) {
  using rlx::Tensor;
  const int64_t batch = 4096, in = 64, hidden = 512, shard = batch / ranks;
  Tensor x = rlx::rand({batch, in}, /*seed=*/1) * 2.0f - 1.0f;
  Tensor y = rlx::sin(x.slice(1, 0, 1) * 2.0f);
  Tensor xs = x.slice(0, rank * shard, (rank + 1) * shard);
  Tensor ys = y.slice(0, rank * shard, (rank + 1) * shard);
  Mlp p{rlx::randn({in, hidden}, 2) * 0.1f, rlx::zeros({hidden}),
        rlx::randn({hidden, 1}, 3) * 0.05f, rlx::zeros({1})};
  auto step = rlx::jit([](const Mlp& q, const Tensor& xb, const Tensor& yb) {
    auto [l, g] = rlx::value_and_grad([&](const Mlp& m) {
      Tensor d = rlx::matmul(rlx::tanh(rlx::matmul(xb, m.w1) + m.b1), m.w2) + m.b2 - yb;
      return rlx::mean(d * d);
    })(q);
    Mlp mean = rlx::tree_unflatten(g, rlx::dist::all_reduce_bucket(rlx::tree_leaves(g)));
    Mlp next =
        rlx::tree_map([](const Tensor& w, const Tensor& dw) { return w - dw * 0.01f; }, q, mean);
    return std::tuple{rlx::dist::all_reduce(l, rlx::dist::CollectiveOp::Mean), next};
  });
  std::vector<double> t;
  for (int round = 0; round < rounds; ++round)
    t.push_back(time_calls(10, [&] {
      Tensor l;
      std::tie(l, p) = step(p, xs, ys);
      (void)l.item<float>();
    }));
  const int64_t grad_bytes = (in * hidden + hidden + hidden + 1) * 4;
  if (rank == 0)
    std::printf("\ndata-parallel step (MLP %lld -> %lld tanh -> 1, global batch %lld, SGD) on %d "
                "rank%s, median of %d rounds, %s time\n\n| ranks | rows per rank | gradient "
                "bucket bytes | step ms |\n|---|---|---|---|\n| %d | %lld | %lld | %.3f |\n",
                static_cast<long long>(in), static_cast<long long>(hidden),
                static_cast<long long>(batch), ranks, ranks == 1 ? "" : "s", rounds,
                cpu_clock ? "CPU" : "wall", ranks, static_cast<long long>(shard),
                static_cast<long long>(grad_bytes), median(t) * 1e3);
}

} // namespace

int main(int argc, char** argv) {
  int rounds = 7;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--clock") == 0) cpu_clock = std::string(argv[i + 1]) == "cpu";
    if (std::strcmp(argv[i], "--rounds") == 0) rounds = std::max(1, std::atoi(argv[i + 1]));
  }
  rlx::dist::init();
  const int rank = rlx::dist::rank(), ranks = rlx::dist::size();
  // Rounds alternate the three sides, so that load on a shared machine falls on all of them;
  // the table gives each side's median and the median of the per-round ratios.
  if (rank == 0) {
    std::printf("all_reduce (sum, f32) on %d ranks: rlx's op vs MPI_Allreduce in place and out of "
                "place, and MPI_Iallreduce + MPI_Wait (medians of %d alternating rounds, %s "
                "time)\n\n",
                ranks, rounds, cpu_clock ? "CPU" : "wall");
    std::printf("| bytes | MPI in place us | MPI out of place us | MPI_Iallreduce us | rlx us | "
                "rlx / MPI in place | rlx / MPI out of place | MPI GB/s (bus) |\n"
                "|---|---|---|---|---|---|---|---|\n");
  }
  for (int64_t bytes = 8; bytes <= (int64_t(1) << 26); bytes *= 4) {
    const int64_t n = bytes / 4;
    const int iters = bytes <= 65536 ? 300 : bytes <= (1 << 22) ? 20 : 4;
    std::vector<float> raw(std::size_t(n), 1.0f), sent(std::size_t(n), 1.0f);
    rlx::ir::Graph g("all_reduce");
    rlx::ir::NodeId x = g.input("x", rlx::ir::Shape({n}, rlx::ir::DType::F32));
    g.set_outputs({g.all_reduce(x, rlx::ir::CollectiveOp::Sum)});
    auto exe = rlx::compile(g, rlx::Backend::Jit);
    rlx::Buffer in(rlx::ir::Shape({n}, rlx::ir::DType::F32));
    std::vector<const rlx::Buffer*> leaves{&in};
    std::vector<double> t_mpi, t_out, t_nb, t_rlx, r_mpi, r_out;
    for (int round = 0; round < rounds; ++round) {
      t_mpi.push_back(time_calls(iters, [&] {
        MPI_Allreduce(MPI_IN_PLACE, raw.data(), int(n), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      }));
      t_rlx.push_back(time_calls(iters, [&] { (void)exe->run(leaves); }));
      t_out.push_back(time_calls(iters, [&] {
        MPI_Allreduce(sent.data(), raw.data(), int(n), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      }));
      t_nb.push_back(time_calls(iters, [&] {
        MPI_Request req;
        MPI_Iallreduce(MPI_IN_PLACE, raw.data(), int(n), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &req);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
      }));
      r_mpi.push_back(t_rlx.back() / t_mpi.back());
      r_out.push_back(t_rlx.back() / t_out.back());
    }
    double mpi = median(t_mpi);
    // Bus bandwidth as osu and nccl-tests report it: 2 (P-1)/P of the bytes cross each link.
    double bus = ranks > 1 ? double(bytes) * 2.0 * (ranks - 1) / ranks / mpi / 1e9 : 0.0;
    if (rank == 0)
      std::printf("| %lld | %.2f | %.2f | %.2f | %.2f | %.3f | %.3f | %.2f |\n",
                  static_cast<long long>(bytes), mpi * 1e6, median(t_out) * 1e6, median(t_nb) * 1e6,
                  median(t_rlx) * 1e6, median(r_mpi), median(r_out), bus);
  }
  data_parallel_step(rank, ranks, rounds);
  rlx::dist::finalize();
  return 0;
}
