// bench/bench_overhead.cpp -- rlx's fixed costs. (1) Cold compile: rlx::compile(g, Backend::Jit)
// of a fresh 20-node element-wise graph (16 ops fused into one kernel, 4 scalar constants; one
// constant changes every iteration so the process cache always misses), and the first call of
// a fresh rlx::jit function (trace + compile + run). (2) Cached call: a jitted a+b on 1 and 4
// f32 elements, per call, next to Executable::run of the same graph, its run_into and its bound
// call (Executable::bind; both into a buffer allocated once) and a plain C++ loop.
// (3) Respecialization: the README's dynamic-batch functions called at a new size of their
// dynamic dim, per call: through rlx::jit, and the two ways an executable for the new size is
// made (compile(graph.bind(size)) as every size was compiled before SymbolicExecutable, and
// SymbolicExecutable::specialize), each followed by a run. Every call gets a size no call had
// before; the kernels' machine code is loaded by then (it is size-generic), so the rows measure
// what a new size costs above finding that code.
// RLX_CACHE_DIR is set to "off" so no on-disk kernel cache can serve a "cold" compile.
#include "bench_util.hpp"
#include "bench_value.hpp"

#include <rlx/all.hpp>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace {

using rlx::Tensor;

constexpr char kCompile[] = "compile";
constexpr char kCall[] = "call overhead";
constexpr char kRespec[] = "new size of a dynamic dim";

/// 16 element-wise ops and 4 scalar constants over f32[n]; `k` is the first constant.
rlx::ir::Graph make_chain(int64_t n, double k) {
  using namespace rlx::ir;
  Graph g("bench_chain");
  NodeId x = g.input("x", Shape({n}, DType::F32));
  NodeId c0 = g.constant(k, DType::F32), c1 = g.constant(0.1, DType::F32);
  NodeId c2 = g.constant(0.5, DType::F32), c3 = g.constant(2.0, DType::F32);
  NodeId t = g.tanh(g.add(g.mul(x, c0), c1));                  // 3 ops
  NodeId s = g.activation(Activation::Sigmoid, x, g.shape(x)); // 4
  NodeId y = g.add(g.mul(t, s), g.mul(x, x));                  // 7
  NodeId r = g.mul(g.relu(g.sub(y, c2)), c3);                  // 10
  NodeId e = g.add(r, g.exp(g.neg(x)));                        // 13
  g.set_outputs({g.add(g.tanh(g.mul(e, y)), x)});              // 16
  return g;
}

int count_ops(const rlx::ir::Graph& g) {
  int ops = 0;
  for (const rlx::ir::Node& node : g.nodes()) {
    rlx::ir::OpKind k = node.op.kind();
    if (k != rlx::ir::OpKind::Input && k != rlx::ir::OpKind::Constant) ++ops;
  }
  return ops;
}

/// Times `fn` once per iteration (each one a cold compile): min/median/p95/max.
template <class F> bench::Stats time_each(int iterations, F&& fn) {
  std::vector<double> t;
  for (int i = 0; i < iterations; ++i) {
    auto t0 = bench::Clock::now();
    fn(i);
    t.push_back(bench::seconds_since(t0));
  }
  return bench::summarize(std::move(t), 1);
}

/// A workload of the respecialization table: a function of one tensor with a dynamic dim.
struct Respec {
  std::string name;
  rlx::Jitted<std::function<Tensor(Tensor)>> fn;
  std::function<std::vector<int64_t>(int64_t)> shape; ///< the input's shape at size n
  std::string symbol;                                 ///< the dynamic dim's name
};

/// One input at size n, made outside the timed calls.
Tensor respec_input(const Respec& w, int64_t n) {
  std::vector<int64_t> shape = w.shape(n);
  int64_t count = 1;
  for (int64_t d : shape) count *= d;
  std::vector<float> v(static_cast<std::size_t>(count));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = float(int64_t(i % 17) - 8) * 0.125f;
  return Tensor::from_vector(v, shape);
}

void respecialization() {
  constexpr int kSizes = 60; // per row; each call a size of its own
  bench::emit_note(kRespec, "per call at a size no earlier call had (" + std::to_string(kSizes) +
                                " calls per row, interleaved); 1 rlx thread; the kernels' machine "
                                "code is loaded (size-generic). [RLX_REUSE_KERNELS=0]: each "
                                "kernel is lowered to LLVM IR again and found by its digest");
  using Fn = std::function<Tensor(Tensor)>;
  std::vector<Respec> loads;
  loads.push_back({"softmax(t,-1).sum(-1), t f32[n,16]",
                   rlx::jit(Fn([](Tensor t) { return rlx::softmax(t, -1).sum(-1); }),
                            rlx::JitOptions{.dynamic_dims = {{0, 0, "batch"}}}),
                   [](int64_t n) { return std::vector<int64_t>{n, 16}; }, "batch"});
  loads.push_back(
      {"tanh(0.5x+0.1)*sigmoid(x)+x*x, x f32[4,n]",
       rlx::jit(Fn([](Tensor x) { return rlx::tanh(x * 0.5f + 0.1f) * rlx::sigmoid(x) + x * x; }),
                rlx::JitOptions{.dynamic_dims = {{0, 1, "n"}}}),
       [](int64_t n) { return std::vector<int64_t>{4, n}; }, "n"});
  int64_t next = 3; // sizes are never reused, across rows and workloads
  // With kernels found by their emission keys (the default), then each lowered again.
  for (bool reuse : {true, false}) {
    setenv("RLX_REUSE_KERNELS", reuse ? "1" : "0", 1);
    const std::string suffix = reuse ? "" : " [RLX_REUSE_KERNELS=0]";
    for (Respec& w : loads) {
      auto at = [&](int64_t n) { return rlx::ir::DimBinding{{rlx::ir::symbol_id(w.symbol), n}}; };
      // Trace, compile the first sizes (the second decides the reuse), load the kernels.
      for (int i = 0; i < 3; ++i) {
        Tensor y = w.fn(respec_input(w, next++));
        bench::clobber(&y);
      }
      std::optional<rlx::ir::Graph> graph = w.fn.last_graph();
      if (!graph || !graph->has_dynamic_dims()) {
        std::printf("FAILED: %s traced no dynamic dim\n", w.name.c_str());
        continue;
      }
      auto sym = rlx::compile_symbolic(*graph, rlx::Backend::Jit);
      for (int i = 0; i < 2; ++i) // decide the reuse before the samples
        bench::clobber(sym->specialize(at(next++)).get());
      std::vector<double> t_jit, t_bind, t_spec;
      for (int i = 0; i < kSizes; ++i, next += 3) {
        Tensor a = respec_input(w, next), b = respec_input(w, next + 1),
               c = respec_input(w, next + 2);
        const rlx::Buffer* lb[] = {&b.buffer()};
        const rlx::Buffer* lc[] = {&c.buffer()};
        auto t0 = bench::Clock::now();
        Tensor y = w.fn(a);
        rlx::eval(y);
        t_jit.push_back(bench::seconds_since(t0));
        t0 = bench::Clock::now();
        std::vector<rlx::Buffer> rb =
            rlx::compile(graph->bind(at(next + 1)), rlx::Backend::Jit)->run(lb);
        t_bind.push_back(bench::seconds_since(t0));
        t0 = bench::Clock::now();
        std::vector<rlx::Buffer> rc = sym->specialize(at(next + 2))->run(lc);
        t_spec.push_back(bench::seconds_since(t0));
        bench::clobber(rb[0].bytes().data());
        bench::clobber(rc[0].bytes().data());
        if (i == 0 || i == kSizes - 1) { // the timed executables computed the right values
          std::vector<float> want =
              rlx::compile(graph->bind(at(next + 2)), rlx::Backend::Interp)->run(lc)[0].to_f32();
          std::vector<float> got = rc[0].to_f32();
          bool close = got.size() == want.size();
          for (std::size_t j = 0; close && j < got.size(); ++j)
            close = std::abs(got[j] - want[j]) <= 1e-4f * (1 + std::abs(want[j]));
          if (!close) std::printf("FAILED: %s: specialize computed wrong values\n", w.name.c_str());
        }
      }
      if (!sym->reuses_pipeline())
        std::printf("FAILED: %s: specialize does not reuse the pipeline\n", w.name.c_str());
      bench::emit_time({kRespec, w.name + ": rlx::jit call" + suffix, 1, 0},
                       bench::summarize(t_jit, 1));
      bench::emit_time({kRespec, w.name + ": compile(graph.bind(size)) + run" + suffix, 1, 0},
                       bench::summarize(t_bind, 1));
      bench::emit_time({kRespec, w.name + ": SymbolicExecutable::specialize + run" + suffix, 1, 0},
                       bench::summarize(t_spec, 1));
    }
  }
  unsetenv("RLX_REUSE_KERNELS");
}

// ---- A sweep over 100 sizes of one dynamic dim through row kernels (issue 26: "compiles at
// most 2 LLVM kernels per fused region", "a new binding ... costs <= 0.2 ms"). Each workload is
// a fresh rlx::jit function of x f32[4, n] with n dynamic, called at 100 sizes no other call
// had. The kernels of one binding are counted as the kernel lookups of the first call (compiled,
// found in memory, reused or loaded from disk: one per LLVM kernel); the sweep's compiled
// kernels and the time of each call at a new size (after the first, which traces) come from
// rlx::cache_stats() and the clock. Values are checked against an f64 loop at the first and
// the last size.
constexpr char kSweep[] = "new size: 100-size sweep";

int64_t kernel_lookups(const rlx::CacheStats& s) {
  return s.kernels_compiled + s.kernel_memory_hits + s.kernels_reused + s.disk_hits;
}

struct SweepLoad {
  std::string name;
  std::function<Tensor(Tensor)> fn;
  /// f64 reference of one row of x [4, n] (the output's row: n values, or 1 for a reduction).
  std::function<std::vector<double>(const float*, int64_t)> row_ref;
};

bool close_to(const std::vector<float>& got, const std::vector<double>& want) {
  if (got.size() != want.size()) return false;
  for (std::size_t j = 0; j < got.size(); ++j)
    if (!(std::abs(got[j] - want[j]) <= 1e-4 * (1 + std::abs(want[j])))) return false;
  return true;
}

void size_sweep() {
  constexpr int kSweepSizes = 100;
  auto chain = [](double x) { return std::tanh(0.75 * x + 0.1) / (1 + std::exp(-x)) + x * x; };
  std::vector<SweepLoad> loads;
  loads.push_back(
      {"(tanh(0.75x+0.1)*sigmoid(x)+x*x).sum(-1), x f32[4,n]",
       [](Tensor x) { return (rlx::tanh(x * 0.75f + 0.1f) * rlx::sigmoid(x) + x * x).sum(-1); },
       [chain](const float* x, int64_t n) {
         double s = 0;
         for (int64_t j = 0; j < n; ++j) s += chain(x[j]);
         return std::vector<double>{s};
       }});
  loads.push_back({"softmax(1.25x, -1), x f32[4,n]",
                   [](Tensor x) { return rlx::softmax(x * 1.25f, -1); },
                   [](const float* x, int64_t n) {
                     double m = -INFINITY, s = 0;
                     for (int64_t j = 0; j < n; ++j) m = std::max(m, 1.25 * x[j]);
                     std::vector<double> y(static_cast<std::size_t>(n));
                     for (int64_t j = 0; j < n; ++j)
                       s += y[std::size_t(j)] = std::exp(1.25 * x[j] - m);
                     for (double& v : y) v /= s;
                     return y;
                   }});
  bench::emit_note(kSweep, "a fresh rlx::jit function of x f32[4, n], n dynamic, called at " +
                               std::to_string(kSweepSizes) +
                               " sizes n = 200, 229, ... (each new); 1 rlx thread; kernels "
                               "counted by rlx::cache_stats()");
  for (int w = 0; w < int(loads.size()); ++w) {
    const SweepLoad& load = loads[std::size_t(w)];
    auto f = rlx::jit(load.fn, rlx::JitOptions{.dynamic_dims = {{0, 1, "sweep_n"}}});
    std::vector<double> t_new;
    int64_t lookups = 0, compiled_first = 0;
    rlx::CacheStats start = rlx::cache_stats();
    bool ok = true;
    for (int i = 0; i < kSweepSizes; ++i) {
      const int64_t n = 200 + 29 * i;
      std::vector<float> xs = bench::weyl(4 * n, uint64_t(17 + w), -1.0, 1.0);
      Tensor x = Tensor::from_vector(xs, {4, n});
      rlx::CacheStats before = rlx::cache_stats();
      auto t0 = bench::Clock::now();
      Tensor y = f(x);
      rlx::eval(y);
      double t = bench::seconds_since(t0);
      if (i == 0) {
        rlx::CacheStats after = rlx::cache_stats();
        lookups = kernel_lookups(after) - kernel_lookups(before);
        compiled_first = after.kernels_compiled - before.kernels_compiled;
      } else {
        t_new.push_back(t);
      }
      if (i == 0 || i == kSweepSizes - 1) {
        std::vector<double> want;
        for (int64_t r = 0; r < 4; ++r) {
          std::vector<double> row = load.row_ref(xs.data() + r * n, n);
          want.insert(want.end(), row.begin(), row.end());
        }
        if (!close_to(y.to_vector<float>(), want)) {
          std::printf("FAILED: %s computed wrong values at n = %lld\n", load.name.c_str(),
                      static_cast<long long>(n));
          ok = false;
        }
      }
    }
    if (!ok) continue;
    rlx::CacheStats end = rlx::cache_stats();
    std::printf("%s: %lld LLVM kernels per binding (%lld compiled by the first call), %lld "
                "compiled over %d sizes\n",
                load.name.c_str(), static_cast<long long>(lookups),
                static_cast<long long>(compiled_first),
                static_cast<long long>(end.kernels_compiled - start.kernels_compiled), kSweepSizes);
    bench::emit_value(
        {kSweep, load.name + ": LLVM kernels per binding", 1, kSweepSizes, false, "kernels"},
        double(lookups));
    bench::emit_value({kSweep, load.name + ": LLVM kernels compiled by the sweep", 1, kSweepSizes,
                       false, "kernels"},
                      double(end.kernels_compiled - start.kernels_compiled));
    bench::emit_time({kSweep, load.name + ": rlx::jit call at a new size", 1, kSweepSizes},
                     bench::summarize(t_new, 1));
  }
}

} // namespace

int main(int argc, char** argv) {
  bench::Args args = bench::parse_args(argc, argv, {1, 4});
  // Cold compiles must compile: no on-disk kernel cache (harmless where there is none).
  setenv("RLX_CACHE_DIR", "off", 1);
  const bench::Budget budget = bench::budget_of(args);
  rlx::set_num_threads(1);
  constexpr int64_t kN = 1024;
  constexpr int kCompiles = 50;

  // ---- Cold compile
  {
    rlx::ir::Graph probe = make_chain(kN, 0.5);
    bench::emit_note(kCompile, "graph: f32[" + std::to_string(kN) + "], " +
                                   std::to_string(count_ops(probe)) +
                                   " element-wise ops + 4 scalar constants, one fused kernel; "
                                   "one constant differs per compile so the cache misses");
    // Start from a clock-derived constant, so a persistent kernel cache (if any) misses too.
    double k = double(std::chrono::steady_clock::now().time_since_epoch().count() % 4096) + 0.25;
    auto fresh = [&] {
      rlx::clear_cache();
      k += 1.0 / 1024; // exact in f32: every graph's text differs
      bool hit = true;
      auto exe = rlx::compile(make_chain(kN, k), rlx::Backend::Jit, &hit);
      if (hit) std::printf("FAILED: a compile hit the cache\n");
    };
    bench::Stats first = time_each(1, [&](int) { fresh(); });
    bench::emit_time({kCompile, "first compile in the process (LLJIT setup)", 1, kN}, first);
    for (int i = 0; i < 3; ++i) fresh(); // warm-up
    bench::Stats s = time_each(kCompiles, [&](int) { fresh(); });
    bench::emit_time({kCompile, "rlx::compile(g, Jit), graph built outside", 1, kN}, s);

    // Graph construction alone, for reference (not part of the compile time above).
    bench::Stats build = time_each(kCompiles, [&](int) {
      k += 1.0 / 1024;
      rlx::ir::Graph g = make_chain(kN, k);
      bench::clobber(&g);
    });
    bench::emit_time({kCompile, "building the Graph (not in the row above)", 1, kN}, build);

    // rlx::jit: a fresh function per iteration (the captured scalar is baked into the trace).
    std::vector<float> xs(kN, 0.5f);
    Tensor x = Tensor::from_vector(xs, {kN});
    bench::Stats jit_first = time_each(kCompiles, [&](int) {
      rlx::clear_cache();
      k += 1.0 / 1024;
      float c = float(k);
      auto f = rlx::jit([c](Tensor v) {
        Tensor y = rlx::tanh(v * c + 0.1f) * rlx::sigmoid(v) + v * v;
        return rlx::tanh((rlx::relu(y - 0.5f) * 2.0f + rlx::exp(-v)) * y) + v;
      });
      Tensor out = f(x);
      bench::clobber(&out);
    });
    bench::emit_time({kCompile, "rlx::jit first call (trace + compile + run)", 1, kN}, jit_first);
  }

  // ---- Cached calls on tiny inputs
  bench::emit_note(kCall, "per call, after warm-up; 1 rlx thread; the C++ loop is the work "
                          "itself, so a row's time minus it is the overhead");
  for (int64_t n : args.sizes) {
    std::vector<float> av(std::size_t(n), 1.5f), bv(std::size_t(n), 2.25f),
        out(std::size_t(n), 0.0f);
    Tensor a = Tensor::from_vector(av, {n}), b = Tensor::from_vector(bv, {n});

    auto f = rlx::jit([](Tensor p, Tensor q) { return p + q; });
    if (f(a, b).to_vector<float>() != std::vector<float>(std::size_t(n), 3.75f))
      std::printf("FAILED: rlx::jit a+b computed wrong values\n");
    bench::Stats s = bench::measure(
        [&] {
          Tensor y = f(a, b);
          bench::clobber(&y);
        },
        budget);
    bench::emit_time({kCall, "rlx::jit cached call, a+b", 1, n, true}, s);

    auto g =
        rlx::jit([](Tensor v) { return rlx::tanh(v * 0.5f + 0.1f) * rlx::sigmoid(v) + v * v; });
    g(a); // trace and compile outside the samples
    s = bench::measure(
        [&] {
          Tensor y = g(a);
          bench::clobber(&y);
        },
        budget);
    bench::emit_time({kCall, "rlx::jit cached call, tanh(0.5x+0.1)*sigmoid(x)+x^2", 1, n}, s);
    rlx::JitStats st = f.stats();
    if (st.compiles != 1 || st.traces != 1)
      std::printf("FAILED: the cached calls traced or compiled again (%lld traces, %lld "
                  "compiles)\n",
                  static_cast<long long>(st.traces), static_cast<long long>(st.compiles));

    using namespace rlx::ir;
    Graph graph("bench_add");
    NodeId p = graph.input("a", Shape({n}, DType::F32));
    NodeId q = graph.input("b", Shape({n}, DType::F32));
    graph.set_outputs({graph.add(p, q)});
    auto exe = rlx::compile(graph, rlx::Backend::Jit);
    const rlx::Buffer* leaves[] = {&a.buffer(), &b.buffer()};
    s = bench::measure(
        [&] {
          std::vector<rlx::Buffer> r = exe->run(leaves);
          bench::clobber(r[0].bytes().data());
        },
        budget);
    bench::emit_time({kCall, "Executable::run, a+b", 1, n}, s);

    // Into a buffer allocated once: checked on every call, then checked once (a bound call).
    rlx::Buffer c = rlx::Buffer::uninitialized(Shape({n}, DType::F32));
    rlx::Buffer* outs[] = {&c};
    s = bench::measure(
        [&] {
          exe->run_into(leaves, outs);
          bench::clobber(c.bytes().data());
        },
        budget);
    bench::emit_time({kCall, "Executable::run_into, a+b", 1, n}, s);
    std::unique_ptr<rlx::BoundCall> call = exe->bind(leaves, outs);
    s = bench::measure(
        [&] {
          call->run();
          bench::clobber(c.bytes().data());
        },
        budget);
    bench::emit_time({kCall, "bound call (Executable::bind), a+b", 1, n}, s);

    s = bench::measure(
        [&] {
          for (std::size_t i = 0; i < out.size(); ++i) out[i] = av[i] + bv[i];
          bench::clobber(out.data());
        },
        budget);
    bench::emit_time({kCall, "C++ loop, a+b (no allocation)", 1, n}, s);
  }

  // ---- Respecialization
  respecialization();
  size_sweep();
  return 0;
}
