// bench/bench_ssm.cpp -- the state-space scans in f32: Mamba's selective scan at [B=1, S=2048,
// H=768, N=16], Mamba-2's SSD scan at [B=1, S=1024, H=24, P=64, N=64] and Gated DeltaNet at
// [B=1, S=512, H=16, N=128]: rlx (the JIT's ssm kernels through Executable::run) on 1 and 2
// threads against a hand-written C++ loop over each recurrence (-O3 -march=native, std::exp,
// f32, one thread). Every peer is checked against an f64 evaluation of the recurrence before it
// is timed. The numpy loop peers are bench/peers_ssm.py (same inputs, same sampling rule).
#include "bench_util.hpp"

#include <rlx/all.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace {

using rlx::ir::DType;
using rlx::ir::Graph;
using rlx::ir::NodeId;
using rlx::ir::Shape;

Shape f32(std::vector<int64_t> d) { return Shape::of(d, DType::F32); }

/// One table: rlx's rows (1 and 2 threads; the graph compiled for the JIT) and the C++ loop's
/// row (one thread), each checked against `ref` first. `loop(y)` runs the recurrence in f32.
/// `size` is the work per call the report shows (state updates). False if a peer was wrong.
template <class Loop>
bool run_table(const char* table, const Graph& g, const std::vector<const rlx::Buffer*>& leaves,
               const std::vector<double>& ref, Loop loop, int64_t size, const bench::Args& args,
               const bench::Budget& budget) {
  bool ok = true;
  auto exe = rlx::compile(g, rlx::Backend::Jit);
  for (int threads : args.threads) {
    rlx::set_num_threads(threads);
    std::optional<bench::Stats> r = bench::check_and_time_run(
        *exe, leaves, std::string(table) + ": rlx threads=" + std::to_string(threads), ref, budget);
    if (!r) {
      ok = false;
      continue;
    }
    bench::emit_time({table, "rlx", threads, size, true}, *r);
    if (threads != 1) continue;
    std::vector<float> yl(ref.size());
    loop(yl.data());
    if (!bench::check(std::string(table) + ": C++ loop", yl, ref)) {
      ok = false;
      continue;
    }
    bench::Stats s = bench::measure(
        [&] {
          loop(yl.data());
          bench::clobber(yl.data());
        },
        budget);
    bench::emit_time({table, "C++ loop (-O3, std::exp)", 1, size}, s);
  }
  return ok;
}

// ---- selective_scan

namespace s6 {

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
template <class T> void loop(const Problem& p, T* y) {
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

bool run(const bench::Args& args, const bench::Budget& budget) {
  const Problem p = make_problem();
  std::vector<double> ref(std::size_t(kB * kS * kH));
  loop<double>(p, ref.data());
  Graph g("selective_scan");
  NodeId x = g.input("x", f32({kB, kS, kH})), d = g.input("delta", f32({kB, kS, kH}));
  NodeId a = g.input("a", f32({kH, kN}));
  NodeId b = g.input("b", f32({kB, kS, kN})), c = g.input("c", f32({kB, kS, kN}));
  g.set_outputs({g.selective_scan(x, d, a, b, c, kN, f32({kB, kS, kH}))});
  rlx::Buffer bx = rlx::Buffer::f32({kB, kS, kH}, p.x),
              bd = rlx::Buffer::f32({kB, kS, kH}, p.delta);
  rlx::Buffer ba = rlx::Buffer::f32({kH, kN}, p.a);
  rlx::Buffer bb = rlx::Buffer::f32({kB, kS, kN}, p.b), bc = rlx::Buffer::f32({kB, kS, kN}, p.c);
  bench::emit_note(kTable, "selective_scan of f32 x, delta [1, 2048, 768], A [768, 16] = -(n+1), "
                           "B, C [1, 2048, 16]; delta in [0.01, 0.5)");
  bench::emit_note(kTable, "rlx: rlx::compile(graph, Backend::Jit), timed Executable::run "
                           "(allocates and returns y); 1 and 2 threads");
  bench::emit_note(kTable, "C++ loop: the recurrence per channel with std::exp in f32, one "
                           "thread, -O3 -march=native, writing into a preallocated array");
  return run_table(
      kTable, g, {&bx, &bd, &ba, &bb, &bc}, ref, [&](float* y) { loop<float>(p, y); },
      kB * kS * kH * kN, args, budget);
}

} // namespace s6

// ---- mamba2

namespace ssd {

constexpr const char* kTable = "mamba2";
constexpr int64_t kB = 1, kS = 1024, kH = 24, kP = 64, kN = 64;

struct Problem {
  std::vector<float> x, dt, a, b, c;
};

Problem make_problem() {
  Problem p{bench::weyl(kB * kS * kH * kP, 5, -1, 1), bench::weyl(kB * kS * kH, 6, 0.01, 0.2),
            std::vector<float>(std::size_t(kH)), bench::weyl(kB * kS * kN, 7, -0.5, 0.5),
            bench::weyl(kB * kS * kN, 8, -0.5, 0.5)};
  for (int64_t h = 0; h < kH; ++h) p.a[std::size_t(h)] = -float(h + 1) / 4; // A_log's range
  return p;
}

/// The recurrence as written in include/rlx/ir/graph.hpp (one group), in T: per head a state
/// [P, N].
template <class T> void loop(const Problem& p, T* y) {
  std::vector<T> st(std::size_t(kP * kN));
  for (int64_t bi = 0; bi < kB; ++bi)
    for (int64_t h = 0; h < kH; ++h) {
      std::fill(st.begin(), st.end(), T(0));
      for (int64_t t = 0; t < kS; ++t) {
        const T d = p.dt[std::size_t((bi * kS + t) * kH + h)];
        const T decay = std::exp(d * T(p.a[std::size_t(h)]));
        const float* bt = p.b.data() + (bi * kS + t) * kN;
        const float* ct = p.c.data() + (bi * kS + t) * kN;
        const int64_t xo = ((bi * kS + t) * kH + h) * kP;
        for (int64_t q = 0; q < kP; ++q) {
          const T u = d * T(p.x[std::size_t(xo + q)]);
          T* row = st.data() + q * kN;
          T acc = 0;
          for (int64_t n = 0; n < kN; ++n) {
            row[n] = decay * row[n] + u * T(bt[n]);
            acc += row[n] * T(ct[n]);
          }
          y[xo + q] = acc;
        }
      }
    }
}

bool run(const bench::Args& args, const bench::Budget& budget) {
  const Problem p = make_problem();
  std::vector<double> ref(std::size_t(kB * kS * kH * kP));
  loop<double>(p, ref.data());
  Graph g("mamba2");
  NodeId x = g.input("x", f32({kB, kS, kH, kP})), dt = g.input("dt", f32({kB, kS, kH}));
  NodeId a = g.input("a", f32({kH}));
  NodeId b = g.input("b", f32({kB, kS, kN})), c = g.input("c", f32({kB, kS, kN}));
  g.set_outputs({g.mamba2(x, dt, a, b, c, kP, kN, f32({kB, kS, kH, kP}))});
  rlx::Buffer bx = rlx::Buffer::f32({kB, kS, kH, kP}, p.x),
              bdt = rlx::Buffer::f32({kB, kS, kH}, p.dt);
  rlx::Buffer ba = rlx::Buffer::f32({kH}, p.a);
  rlx::Buffer bb = rlx::Buffer::f32({kB, kS, kN}, p.b), bc = rlx::Buffer::f32({kB, kS, kN}, p.c);
  bench::emit_note(kTable, "mamba2 (SSD, one group) of f32 x [1, 1024, 24, 64], dt [1, 1024, 24] "
                           "in [0.01, 0.2), a [24] = -(h+1)/4, B, C [1, 1024, 64]: a state "
                           "[64, 64] per head");
  bench::emit_note(kTable, "rlx: the JIT's ssm kernel (state in double, 8 lanes), timed "
                           "Executable::run; C++ loop: the recurrence in f32, one thread");
  return run_table(
      kTable, g, {&bx, &bdt, &ba, &bb, &bc}, ref, [&](float* y) { loop<float>(p, y); },
      kB * kS * kH * kP * kN, args, budget);
}

} // namespace ssd

// ---- gated_delta_net

namespace gdn {

constexpr const char* kTable = "gated delta net";
constexpr int64_t kB = 1, kS = 512, kH = 16, kN = 128;

struct Problem {
  std::vector<float> q, k, v, g, beta;
};

/// q and k l2-normalized per (t, head), as the caller of the op does.
Problem make_problem() {
  const int64_t rows = kB * kS * kH;
  Problem p{bench::weyl(rows * kN, 9, -1, 1), bench::weyl(rows * kN, 10, -1, 1),
            bench::weyl(rows * kN, 11, -1, 1), bench::weyl(rows, 12, -0.2, 0.0),
            bench::weyl(rows, 13, 0.1, 0.9)};
  for (std::vector<float>* w : {&p.q, &p.k})
    for (int64_t r = 0; r < rows; ++r) {
      float* v = w->data() + r * kN;
      double s = 0;
      for (int64_t i = 0; i < kN; ++i) s += double(v[i]) * v[i];
      const float inv = float(1 / std::sqrt(s));
      for (int64_t i = 0; i < kN; ++i) v[i] *= inv;
    }
  return p;
}

/// The recurrence as written in include/rlx/ir/graph.hpp, in T: per head S [N, N] key-major.
template <class T> void loop(const Problem& p, T* o) {
  std::vector<T> st(std::size_t(kN * kN)), u(static_cast<std::size_t>(kN));
  for (int64_t bi = 0; bi < kB; ++bi)
    for (int64_t h = 0; h < kH; ++h) {
      std::fill(st.begin(), st.end(), T(0));
      for (int64_t t = 0; t < kS; ++t) {
        const int64_t si = (bi * kS + t) * kH + h, vo = si * kN;
        const T decay = std::exp(T(p.g[std::size_t(si)])), bt = p.beta[std::size_t(si)];
        const float *q = p.q.data() + vo, *k = p.k.data() + vo, *v = p.v.data() + vo;
        std::fill(u.begin(), u.end(), T(0));
        for (int64_t i = 0; i < kN; ++i) { // u = S^T k after the decay
          T* row = st.data() + i * kN;
          for (int64_t j = 0; j < kN; ++j) {
            row[j] *= decay;
            u[std::size_t(j)] += row[j] * T(k[i]);
          }
        }
        for (int64_t j = 0; j < kN; ++j) u[std::size_t(j)] = bt * (T(v[j]) - u[std::size_t(j)]);
        T* out = o + vo;
        for (int64_t j = 0; j < kN; ++j) out[j] = 0;
        for (int64_t i = 0; i < kN; ++i) { // S += k u^T, o = S^T q
          T* row = st.data() + i * kN;
          for (int64_t j = 0; j < kN; ++j) {
            row[j] += T(k[i]) * u[std::size_t(j)];
            out[j] += row[j] * T(q[i]);
          }
        }
      }
    }
}

bool run(const bench::Args& args, const bench::Budget& budget) {
  const Problem p = make_problem();
  std::vector<double> ref(std::size_t(kB * kS * kH * kN));
  loop<double>(p, ref.data());
  Graph g("gated_delta_net");
  const Shape s4 = f32({kB, kS, kH, kN}), s3 = f32({kB, kS, kH});
  NodeId q = g.input("q", s4), k = g.input("k", s4), v = g.input("v", s4);
  NodeId gg = g.input("g", s3), beta = g.input("beta", s3);
  g.set_outputs({g.gated_delta_net(q, k, v, gg, beta, kN, s4)});
  rlx::Buffer bq = rlx::Buffer::f32({kB, kS, kH, kN}, p.q),
              bk = rlx::Buffer::f32({kB, kS, kH, kN}, p.k),
              bv = rlx::Buffer::f32({kB, kS, kH, kN}, p.v);
  rlx::Buffer bg = rlx::Buffer::f32({kB, kS, kH}, p.g),
              bbeta = rlx::Buffer::f32({kB, kS, kH}, p.beta);
  bench::emit_note(kTable, "gated_delta_net of f32 q, k (l2-normalized), v [1, 512, 16, 128], "
                           "g [1, 512, 16] in [-0.2, 0), beta in [0.1, 0.9): a state [128, 128] "
                           "per head");
  bench::emit_note(kTable, "rlx: the JIT's ssm kernel (state in double, 8 lanes), timed "
                           "Executable::run; C++ loop: the recurrence in f32, one thread");
  return run_table(
      kTable, g, {&bq, &bk, &bv, &bg, &bbeta}, ref, [&](float* y) { loop<float>(p, y); },
      kB * kS * kH * kN * kN, args, budget);
}

} // namespace gdn

} // namespace

int main(int argc, char** argv) {
  bench::Args args = bench::parse_args(argc, argv, {});
  const bench::Budget budget = bench::budget_of(args);
  bool ok = s6::run(args, budget);
  ok = ssd::run(args, budget) && ok;
  ok = gdn::run(args, budget) && ok;
  if (!ok) std::printf("FAILED: a peer computed wrong values (see the check lines)\n");
  return ok ? 0 : 1;
}
