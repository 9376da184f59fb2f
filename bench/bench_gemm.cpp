// bench/bench_gemm.cpp -- f32 C = A B, row-major, at square sizes 16..2048 and the BERT layer's
// projection shapes (60x384 @ 384x1152, 60x384 @ 384x1536), on 1 and 2 threads. Peers: rlx (a
// matmul graph compiled once with rlx::compile(g, Backend::Jit), timed through Executable::run:
// the JIT's Gemm step, asmjit micro-kernels, and the output's allocation from rlx's pool); at
// sizes up to 64 the same executable into a C the caller allocated once, through
// Executable::run_into (checked on every call) and through a bound call (Executable::bind,
// checked once: BoundCall::run); "rlx GEMM call": the GEMM itself (jit/gemm.hpp) on a call
// prepared as the Gemm step prepares it, with the small kernel when the product is small, into
// a preallocated C as the peers),
// OpenBLAS cblas_sgemm (threads set with openblas_set_num_threads), Eigen 3.4 (built without
// OpenMP: one thread) and libxsmm's JIT kernels (sizes up to 64, one thread, row-major through
// C^T = B^T A^T). Every peer's result is compared with rlx's before it is timed; a mismatch fails
// the run (exit 1). The peers of one shape and thread count are timed in turns, one sample of
// each per round, so a change of the machine's load falls on all of them alike.
#include "bench_util.hpp"

#include "../jit/gemm.hpp"

#include <rlx/interp.hpp>
#include <rlx/ir/graph.hpp> // not rlx.hpp: its rlx::jit() would clash with namespace rlx::jit
#include <rlx/runtime.hpp>

#include <Eigen/Core>
#include <cblas.h>
#include <libxsmm.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace {

constexpr char kTable[] = "gemm";
constexpr char kBertTable[] = "gemm: BERT shapes";
constexpr char kRateTable[] = "gemm GFLOP/s";
constexpr char kF64Table[] = "gemm f64";

struct Shape3 {
  int64_t m, n, k;
};

std::vector<float> make_input(int64_t n, uint64_t seed) {
  std::vector<float> x(static_cast<std::size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    uint64_t k = ((uint64_t(i) + seed * 7919) * 2654435761ull) % 4294967296ull;
    x[std::size_t(i)] = float(-1.0 + 2.0 * double(k) / 4294967296.0);
  }
  return x;
}

struct Peer {
  std::string name;
  std::function<void()> call;
  const float* out;
  int max_threads; ///< threads it can use (1: timed on one thread only)
};

/// Times each of `fns` as bench::measure does (a warm-up, batches of calls lasting at least
/// budget.min_sample_s), taking their samples in turns: one of each per round, rounds until every
/// one has min_samples and the rounds took budget.seconds per function (or max_samples).
std::vector<bench::Stats> measure_in_turns(const std::vector<std::function<void()>>& fns,
                                           const bench::Budget& budget) {
  std::vector<int64_t> batch(fns.size(), 1);
  int min_samples = budget.min_samples;
  for (std::size_t f = 0; f < fns.size(); ++f) {
    auto t0 = bench::Clock::now();
    fns[f]();
    double first = bench::seconds_since(t0);
    if (first > budget.seconds / 2) min_samples = std::min(3, min_samples);
    if (first < budget.min_sample_s) {
      int64_t b = std::max<int64_t>(1, int64_t(budget.min_sample_s / std::max(first, 1e-9)));
      t0 = bench::Clock::now();
      for (int64_t i = 0; i < b; ++i) fns[f]();
      double per_call = bench::seconds_since(t0) / double(b);
      batch[f] = std::max<int64_t>(1, int64_t(std::ceil(budget.min_sample_s / per_call)));
    }
  }
  std::vector<std::vector<double>> samples(fns.size());
  auto start = bench::Clock::now();
  for (int round = 0; round < budget.max_samples; ++round) {
    if (round >= min_samples && bench::seconds_since(start) > budget.seconds * double(fns.size()))
      break;
    for (std::size_t f = 0; f < fns.size(); ++f) {
      auto t0 = bench::Clock::now();
      for (int64_t i = 0; i < batch[f]; ++i) fns[f]();
      samples[f].push_back(bench::seconds_since(t0) / double(batch[f]));
    }
  }
  std::vector<bench::Stats> stats;
  for (std::size_t f = 0; f < fns.size(); ++f)
    stats.push_back(bench::summarize(std::move(samples[f]), batch[f]));
  return stats;
}

bool close(const std::vector<float>& want, const float* got, int64_t k) {
  for (std::size_t i = 0; i < want.size(); ++i)
    if (!(std::fabs(want[i] - got[i]) <= 1e-5 * double(k) + 1e-5 * std::fabs(want[i])))
      return false;
  return true;
}

bool run_shape(const char* table, Shape3 s, int64_t size_key, const bench::Args& args,
               const bench::Budget& budget) {
  using namespace rlx::ir;
  std::vector<float> a = make_input(s.m * s.k, 1), b = make_input(s.k * s.n, 2);
  Graph g("bench_gemm");
  NodeId x = g.input("a", Shape({s.m, s.k}, DType::F32));
  NodeId w = g.input("b", Shape({s.k, s.n}, DType::F32));
  g.set_outputs({g.matmul(x, w, Shape({s.m, s.n}, DType::F32))});
  auto exe = rlx::compile(g, rlx::Backend::Jit);
  rlx::Buffer ba = rlx::Buffer::f32({s.m, s.k}, a);
  rlx::Buffer bb = rlx::Buffer::f32({s.k, s.n}, b);
  std::vector<const rlx::Buffer*> leaves = {&ba, &bb};
  std::vector<float> want = exe->run(leaves)[0].to_f32();

  std::vector<float> c_blas(want.size()), c_eigen(want.size()), c_xsmm(want.size()),
      c_call(want.size());
  rlx::Buffer c_into = rlx::Buffer::uninitialized(rlx::ir::Shape({s.m, s.n}, DType::F32));
  rlx::Buffer c_bound = rlx::Buffer::uninitialized(rlx::ir::Shape({s.m, s.n}, DType::F32));
  std::vector<rlx::Buffer*> into = {&c_into}, bound_out = {&c_bound};
  std::unique_ptr<rlx::BoundCall> bound = exe->bind(leaves, bound_out);
  rlx::jit::GemmCall call;
  call.m = s.m;
  call.n = s.n;
  call.k = s.k;
  call.a = {a.data(), s.k, 1};
  call.b = {b.data(), s.n, 1};
  call.c = c_call.data();
  call.small = rlx::jit::gemm_small_kernel(call, false, false);
  using RowMajor = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  Eigen::Map<const RowMajor> ea(a.data(), s.m, s.k), eb(b.data(), s.k, s.n);
  Eigen::Map<RowMajor> ec(c_eigen.data(), s.m, s.n);
  std::vector<Peer> peers;
  peers.push_back({"rlx", [&] { bench::clobber(exe->run(leaves)[0].bytes().data()); }, nullptr, 2});
  const bool small = s.m <= 64 && s.n <= 64 && s.k <= 64;
  if (small) {
    peers.push_back({"rlx run_into", [&] { exe->run_into(leaves, into); },
                     reinterpret_cast<const float*>(c_into.bytes().data()), 2});
    peers.push_back({"rlx bound call", [&] { bound->run(); },
                     reinterpret_cast<const float*>(c_bound.bytes().data()), 2});
  }
  peers.push_back({"rlx GEMM call", [&] { rlx::jit::sgemm(call); }, c_call.data(), 2});
  peers.push_back({"OpenBLAS cblas_sgemm",
                   [&] {
                     cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, int(s.m), int(s.n),
                                 int(s.k), 1.0f, a.data(), int(s.k), b.data(), int(s.n), 0.0f,
                                 c_blas.data(), int(s.n));
                   },
                   c_blas.data(), 2});
  peers.push_back({"Eigen 3.4", [&] { ec.noalias() = ea * eb; }, c_eigen.data(), 1});
  if (small) {
    // Column-major C^T (n x m) = B^T (n x k) A^T (k x m): B row-major is B^T column-major.
    float alpha = 1, beta = 0;
    libxsmm_blasint m = libxsmm_blasint(s.n), n = libxsmm_blasint(s.m), k = libxsmm_blasint(s.k);
    libxsmm_smmfunction fn =
        libxsmm_smmdispatch(m, n, k, &m, &k, &m, &alpha, &beta, nullptr, nullptr);
    if (fn)
      peers.push_back(
          {"libxsmm", [&, fn] { fn(b.data(), a.data(), c_xsmm.data()); }, c_xsmm.data(), 1});
    else
      bench::emit_note(table, "libxsmm: no kernel for " + std::to_string(s.m));
  }
  bool ok = true;
  double gflop = 2.0 * double(s.m) * double(s.n) * double(s.k) * 1e-9;
  for (int threads : args.threads) {
    rlx::set_num_threads(threads);
    openblas_set_num_threads(threads);
    std::vector<const Peer*> timed;
    std::vector<std::function<void()>> calls;
    for (const Peer& p : peers) {
      if (threads > p.max_threads) continue;
      p.call();
      if (p.out && !close(want, p.out, s.k)) {
        std::fprintf(stderr, "bench_gemm: %s differs from rlx at %lldx%lldx%lld\n", p.name.c_str(),
                     (long long)s.m, (long long)s.n, (long long)s.k);
        ok = false;
        continue;
      }
      timed.push_back(&p);
      calls.push_back(p.call);
    }
    std::vector<bench::Stats> stats = measure_in_turns(calls, budget);
    for (std::size_t i = 0; i < timed.size(); ++i) {
      const Peer& p = *timed[i];
      bench::emit_time({table, p.name, threads, size_key, p.name == "rlx"}, stats[i]);
      bench::emit_rate({kRateTable, p.name + (table == std::string(kTable) ? "" : " (BERT)"),
                        threads, size_key, false, "GFLOP/s"},
                       stats[i], gflop);
    }
  }
  return ok;
}

/// f64 C = A B at n x n x n: rlx's GEMM call (the f64 kernels) against cblas_dgemm.
bool run_f64(int64_t n, const bench::Args& args, const bench::Budget& budget) {
  std::vector<float> af = make_input(n * n, 1), bf = make_input(n * n, 2);
  std::vector<double> a(af.begin(), af.end()), b(bf.begin(), bf.end());
  std::vector<double> c_call(std::size_t(n * n)), c_blas(std::size_t(n * n));
  rlx::jit::DGemmCall call;
  call.m = call.n = call.k = n;
  call.a = {a.data(), n, 1};
  call.b = {b.data(), n, 1};
  call.c = c_call.data();
  call.small = rlx::jit::gemm_small_kernel(call, false, false);
  auto blas = [&] {
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, int(n), int(n), int(n), 1.0, a.data(),
                int(n), b.data(), int(n), 0.0, c_blas.data(), int(n));
  };
  bool ok = true;
  for (int threads : args.threads) {
    rlx::set_num_threads(threads);
    openblas_set_num_threads(threads);
    rlx::jit::dgemm(call);
    blas();
    for (std::size_t i = 0; i < c_call.size(); ++i)
      if (!(std::fabs(c_call[i] - c_blas[i]) <= 1e-12 * double(n) + 1e-12 * std::fabs(c_blas[i])))
        ok = false;
    if (!ok) {
      std::fprintf(stderr, "bench_gemm: cblas_dgemm differs from rlx at %lld\n", (long long)n);
      return false;
    }
    bench::emit_time({kF64Table, "rlx GEMM call", threads, n, true},
                     bench::measure([&] { rlx::jit::dgemm(call); }, budget));
    bench::emit_time({kF64Table, "OpenBLAS cblas_dgemm", threads, n, false},
                     bench::measure(blas, budget));
  }
  return ok;
}

} // namespace

int main(int argc, char** argv) {
  bench::Args args = bench::parse_args(argc, argv, {16, 32, 64, 128, 256, 512, 1024, 2048});
  const bench::Budget budget = bench::budget_of(args);
  libxsmm_init();
  bench::emit_note(kTable, "f32 C = A B, row-major, square n x n; time per call");
  bench::emit_note(kTable, std::string("OpenBLAS ") + openblas_get_config() + " (core " +
                               openblas_get_corename() +
                               "), threads set with openblas_set_num_threads");
  bench::emit_note(kTable, "Eigen 3.4 and libxsmm 1.17 on one thread only (Eigen is built "
                           "without OpenMP; libxsmm's small kernels are single calls), "
                           "libxsmm at sizes up to 64");
  bench::emit_note(kTable, "rlx run_into / rlx bound call (sizes up to 64): the rlx executable "
                           "into a C allocated once, checked on every call (run_into) or once "
                           "(bind; a call is BoundCall::run)");
  bench::emit_note(kBertTable, "60x384 @ 384xN (size = N): the BERT layer's QKV (N = 1152) and "
                               "FFN (N = 1536) projections at [4,15,384]");
  bool ok = true;
  for (int64_t n : args.sizes) ok &= run_shape(kTable, {n, n, n}, n, args, budget);
  for (int64_t n : {int64_t(1152), int64_t(1536)})
    ok &= run_shape(kBertTable, {60, n, 384}, n, args, budget);
  bench::emit_note(kF64Table, "f64 C = A B, square n x n, n <= 1024: rlx's GEMM call against "
                              "OpenBLAS cblas_dgemm");
  for (int64_t n : args.sizes)
    if (n <= 1024) ok &= run_f64(n, args, budget);
  libxsmm_finalize();
  return ok ? 0 : 1;
}
