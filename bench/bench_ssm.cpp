// bench/bench_ssm.cpp -- Mamba's selective scan at [B=1, S=2048, H=768, N=16] (f32): rlx (the
// JIT's ssm kernel through Executable::run) on 1 and 2 threads against a hand-written C++ loop
// over the recurrence (-O3 -march=native, std::exp, one thread). Every peer is checked against
// an f64 evaluation of the recurrence before it is timed. The numpy loop peer is
// bench/peers_ssm.py (same inputs, same sampling rule).
#include "bench_util.hpp"

#include <rlx/all.hpp>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

namespace {

constexpr const char* kTable = "selective scan";
constexpr int64_t kB = 1, kS = 2048, kH = 768, kN = 16;

struct Problem {
  std::vector<float> x, delta, a, b, c;
};

Problem make_problem() {
  Problem p{bench::weyl(kB * kS * kH, 1, -2, 2), bench::weyl(kB * kS * kH, 2, 0.01, 0.5),
            std::vector<float>(std::size_t(kH * kN)), bench::weyl(kB * kS * kN, 3, -1, 1),
            bench::weyl(kB * kS * kN, 4, -1, 1)};
  for (int64_t h = 0; h < kH; ++h) // Mamba's S4D-real initialization: A[h, n] = -(n + 1)
    for (int64_t n = 0; n < kN; ++n) p.a[std::size_t(h * kN + n)] = -float(n + 1);
  return p;
}

/// The recurrence as written in include/rlx/ir/graph.hpp, in T.
template <class T> void loop_scan(const Problem& p, T* y) {
  T st[kN];
  for (int64_t b = 0; b < kB; ++b)
    for (int64_t h = 0; h < kH; ++h) {
      for (T& s : st) s = 0;
      for (int64_t t = 0; t < kS; ++t) {
        const int64_t i = (b * kS + t) * kH + h;
        const T d = p.delta[std::size_t(i)], u = p.x[std::size_t(i)];
        const float* bt = p.b.data() + (b * kS + t) * kN;
        const float* ct = p.c.data() + (b * kS + t) * kN;
        T acc = 0;
        for (int64_t n = 0; n < kN; ++n) {
          st[n] = std::exp(d * T(p.a[std::size_t(h * kN + n)])) * st[n] + d * T(bt[n]) * u;
          acc += T(ct[n]) * st[n];
        }
        y[i] = acc;
      }
    }
}

} // namespace

int main(int argc, char** argv) {
  bench::Args args = bench::parse_args(argc, argv, {});
  bench::Budget budget;
  budget.seconds = args.budget;
  using namespace rlx::ir;
  const Problem p = make_problem();
  std::vector<double> ref(std::size_t(kB * kS * kH));
  loop_scan<double>(p, ref.data());

  Graph g("selective_scan");
  auto f32 = [](std::vector<int64_t> d) { return Shape::of(d, DType::F32); };
  NodeId x = g.input("x", f32({kB, kS, kH})), d = g.input("delta", f32({kB, kS, kH}));
  NodeId a = g.input("a", f32({kH, kN}));
  NodeId b = g.input("b", f32({kB, kS, kN})), c = g.input("c", f32({kB, kS, kN}));
  g.set_outputs({g.selective_scan(x, d, a, b, c, kN, f32({kB, kS, kH}))});
  rlx::Buffer bx = rlx::Buffer::f32({kB, kS, kH}, p.x),
              bd = rlx::Buffer::f32({kB, kS, kH}, p.delta);
  rlx::Buffer ba = rlx::Buffer::f32({kH, kN}, p.a);
  rlx::Buffer bb = rlx::Buffer::f32({kB, kS, kN}, p.b), bc = rlx::Buffer::f32({kB, kS, kN}, p.c);
  std::vector<const rlx::Buffer*> leaves{&bx, &bd, &ba, &bb, &bc};

  bench::emit_note(kTable, "selective_scan of f32 x, delta [1, 2048, 768], A [768, 16] = -(n+1), "
                           "B, C [1, 2048, 16]; delta in [0.01, 0.5)");
  bench::emit_note(kTable, "rlx: rlx::compile(graph, Backend::Jit), timed Executable::run "
                           "(allocates and returns y); 1 and 2 threads");
  bench::emit_note(kTable, "C++ loop: the recurrence per channel with std::exp in f32, one "
                           "thread, -O3 -march=native, writing into a preallocated array");
  bool ok = true;
  auto exe = rlx::compile(g, rlx::Backend::Jit);
  const int64_t size = kB * kS * kH * kN;
  for (int threads : args.threads) {
    rlx::set_num_threads(threads);
    std::optional<bench::Stats> r = bench::check_and_time_run(
        *exe, leaves, "rlx threads=" + std::to_string(threads), ref, budget);
    if (!r) {
      ok = false;
      continue;
    }
    bench::emit_time({kTable, "rlx", threads, size, true}, *r);
    if (threads != 1) continue;
    std::vector<float> yl(ref.size());
    loop_scan<float>(p, yl.data());
    if (!bench::check("C++ loop", yl, ref)) {
      ok = false;
      continue;
    }
    bench::Stats s = bench::measure(
        [&] {
          loop_scan<float>(p, yl.data());
          bench::clobber(yl.data());
        },
        budget);
    bench::emit_time({kTable, "C++ loop (-O3, std::exp)", 1, size}, s);
  }
  if (!ok) std::printf("FAILED: a peer computed wrong values (see the check lines)\n");
  return ok ? 0 : 1;
}
