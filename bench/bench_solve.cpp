// bench/bench_solve.cpp -- dense_solve (x = A^-1 b, LU with partial pivoting) at N = 512 with one
// right-hand side, f32: rlx (a dense_solve graph compiled with rlx::compile(g, Backend::Jit),
// timed through Executable::run: the step copies A and b, factors the row-major A as LAPACK's
// column-major A^T with getrf and solves with getrs trans = 'T')
// against LAPACKE_sgesv called directly (column-major, LAPACK's own layout, on a copy of A and b
// made inside each timed call, since sgesv overwrites both), on 1 and 2 threads (both run the
// LAPACK that liblapack.so.3 points at, OpenBLAS's where installed, threads set with
// openblas_set_num_threads). A is diagonally dominant (Weyl entries in [-1, 1) plus N on the
// diagonal), so both must agree to 1e-4 relative before they are timed.
#include "bench_util.hpp"

#include <rlx/ir/graph.hpp>
#include <rlx/runtime.hpp>
#include <rlx/settings.hpp>

#include <lapacke.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

// OpenBLAS's thread count (libopenblas; its cblas.h is not needed for this one call).
extern "C" void openblas_set_num_threads(int num_threads);

namespace {

constexpr char kTable[] = "dense_solve";

} // namespace

int main(int argc, char** argv) {
  bench::Args args = bench::parse_args(argc, argv, {512});
  const bench::Budget budget = bench::budget_of(args);
  bench::emit_note(kTable,
                   "x = A^-1 b, f32, A [N, N] (size = N), one right-hand side b [N]; "
                   "rlx: dense_solve through Executable::run (copies, then LAPACK getrf "
                   "of A^T + getrs 'T'); LAPACKE_sgesv: column-major, A and b copied per call "
                   "(sgesv overwrites them)");
  bool ok = true;
  for (int64_t n : args.sizes) {
    std::vector<float> a = bench::weyl(n * n, 3, -1.0, 1.0), b = bench::weyl(n, 5, -1.0, 1.0);
    for (int64_t i = 0; i < n; ++i) a[std::size_t(i * n + i)] += float(n);
    // LAPACK's layout: column-major A is row-major A^T.
    std::vector<float> a_col(a.size());
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < n; ++j) a_col[std::size_t(j * n + i)] = a[std::size_t(i * n + j)];

    using namespace rlx::ir;
    Graph g("dense_solve");
    NodeId ai = g.input("a", Shape({n, n}, DType::F32));
    NodeId bi = g.input("b", Shape({n}, DType::F32));
    g.set_outputs({g.dense_solve(ai, bi, Shape({n}, DType::F32))});
    auto exe = rlx::compile(g, rlx::Backend::Jit);
    rlx::Buffer ba = rlx::Buffer::f32({n, n}, a), bb = rlx::Buffer::f32({n}, b);
    std::vector<const rlx::Buffer*> leaves{&ba, &bb};

    std::vector<float> lu(a.size()), x(b.size());
    std::vector<lapack_int> piv(static_cast<std::size_t>(n));
    auto sgesv = [&] {
      std::memcpy(lu.data(), a_col.data(), a_col.size() * sizeof(float));
      std::memcpy(x.data(), b.data(), b.size() * sizeof(float));
      return LAPACKE_sgesv(LAPACK_COL_MAJOR, lapack_int(n), 1, lu.data(), lapack_int(n), piv.data(),
                           x.data(), lapack_int(n));
    };
    for (int threads : args.threads) {
      rlx::set_num_threads(threads);
      openblas_set_num_threads(threads);
      std::vector<float> got = exe->run(leaves)[0].to_f32();
      if (sgesv() != 0) {
        std::printf("FAILED: LAPACKE_sgesv reported an error at N = %lld\n", (long long)n);
        ok = false;
        continue;
      }
      double worst = 0;
      for (std::size_t i = 0; i < x.size(); ++i)
        worst = std::max(worst, double(std::abs(got[i] - x[i])) / (1e-3 + std::abs(x[i])));
      std::printf("check dense_solve N=%lld threads=%d: max relative |rlx - sgesv| = %.3g\n",
                  (long long)n, threads, worst);
      if (!(worst <= 1e-4)) {
        std::printf("FAILED: dense_solve differs from LAPACKE_sgesv\n");
        ok = false;
        continue;
      }
      bench::emit_time({kTable, "rlx dense_solve", threads, n, true},
                       bench::measure(
                           [&] {
                             auto r = exe->run(leaves);
                             bench::clobber(r[0].bytes().data());
                           },
                           budget));
      bench::emit_time({kTable, "LAPACKE_sgesv (copies included)", threads, n},
                       bench::measure(
                           [&] {
                             sgesv();
                             bench::clobber(x.data());
                           },
                           budget));
    }
  }
  return ok ? 0 : 1;
}
