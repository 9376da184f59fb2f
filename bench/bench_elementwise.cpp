// bench/bench_elementwise.cpp -- y = tanh(0.5x+0.1)*sigmoid(x) + x^2 over f32 arrays of 1e3..1e7
// elements on 1 and 2 threads. Peers: rlx (the graph compiled once with rlx::compile(g,
// Backend::Jit) and timed through Executable::run, the public entry with the least work around
// the kernel), Eigen 3.4 array expressions, a hand-written AVX-512 loop (own vector exp, tanh
// and sigmoid) and a plain scalar std:: loop. Before a peer is timed, its output is compared
// with an f64 evaluation of the expression on the same input and with rlx's output; a peer off
// by more than kTolerance fails the run (exit 1), so the bench cannot time wrong code.
#include "bench_util.hpp"

#include <rlx/all.hpp>

#include <Eigen/Core>

#if defined(__AVX512F__)
#include <immintrin.h>
#endif

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

constexpr char kTable[] = "elementwise";
constexpr char kAffineTable[] = "memory-bound elementwise";
constexpr double kTolerance = 1e-4;

/// The input: a Weyl sequence in [-4, 4), the same values bench/peers.py makes.
std::vector<float> make_input(int64_t n) {
  std::vector<float> x(std::size_t(n), 0.0f);
  for (int64_t i = 0; i < n; ++i) {
    uint64_t k = (uint64_t(i) * 2654435761ull) % 4294967296ull;
    x[std::size_t(i)] = float(-4.0 + 8.0 * double(k) / 4294967296.0);
  }
  return x;
}

double reference(float xf) {
  double x = xf;
  return std::tanh(double(0.5f) * x + double(0.1f)) * (1.0 / (1.0 + std::exp(-x))) + x * x;
}

// ---- rlx

rlx::ir::Graph make_graph(int64_t n) {
  using namespace rlx::ir;
  Graph g("bench_elementwise");
  NodeId x = g.input("x", Shape({n}, DType::F32));
  NodeId a = g.add(g.mul(x, g.constant(0.5, DType::F32)), g.constant(0.1, DType::F32));
  NodeId s = g.activation(Activation::Sigmoid, x, g.shape(x));
  g.set_outputs({g.add(g.mul(g.tanh(a), s), g.mul(x, x))});
  return g;
}

/// The memory-bound workload: y = x * 1.5 + 1 (one fma's worth of arithmetic per 8 bytes).
rlx::ir::Graph make_affine_graph(int64_t n) {
  using namespace rlx::ir;
  Graph g("bench_affine");
  NodeId x = g.input("x", Shape({n}, DType::F32));
  g.set_outputs({g.add(g.mul(x, g.constant(1.5, DType::F32)), g.constant(1.0, DType::F32))});
  return g;
}

// ---- Eigen 3.4

void eigen_expr(const float* x, float* y, int64_t begin, int64_t end) {
  Eigen::Map<const Eigen::ArrayXf> xs(x + begin, Eigen::Index(end - begin));
  Eigen::Map<Eigen::ArrayXf> ys(y + begin, Eigen::Index(end - begin));
  ys = (0.5f * xs + 0.1f).tanh() * xs.logistic() + xs.square();
}

// ---- Plain scalar loop (libm's tanhf and expf)

void scalar_expr(const float* x, float* y, int64_t begin, int64_t end) {
  for (int64_t i = begin; i < end; ++i) {
    float v = x[i];
    y[i] = std::tanh(0.5f * v + 0.1f) * (1.0f / (1.0f + std::exp(-v))) + v * v;
  }
}

// ---- Hand-written AVX-512

#if defined(__AVX512F__)

/// e^x for x in [-87, 88] (callers clamp): x = n*ln2 + r with |r| <= ln2/2 (ln2 split in two
/// so n*ln2_hi is exact), e^r by its Taylor polynomial to degree 6 (relative error about
/// 1.2e-7), times 2^n with vscalefps.
inline __m512 exp_ps(__m512 x) {
  __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504f)),
                                  _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693145751953125f), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(1.42860682e-6f), r);
  __m512 p = _mm512_set1_ps(1.0f / 720.0f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 120.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 24.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 6.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.5f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  return _mm512_scalef_ps(p, n);
}

inline __m512 clamp_ps(__m512 x, float lo, float hi) {
  return _mm512_min_ps(_mm512_max_ps(x, _mm512_set1_ps(lo)), _mm512_set1_ps(hi));
}

/// With E = e^2a and F = e^-x: tanh(a) = (E-1)/(E+1) and sigmoid(x) = 1/(1+F), so their product
/// takes one division: (E-1) / ((E+1)(1+F)). 2a is clamped to +-18 (tanh is +-1 in f32 well
/// before) and -x to [-87, 60], so the denominator stays below 1e34; at x < -60 the product is
/// below 1e-26 in magnitude either way.
inline __m512 expr_ps(__m512 x) {
  __m512 one = _mm512_set1_ps(1.0f);
  __m512 a = _mm512_fmadd_ps(x, _mm512_set1_ps(0.5f), _mm512_set1_ps(0.1f));
  __m512 e = exp_ps(clamp_ps(_mm512_add_ps(a, a), -18.0f, 18.0f));
  __m512 f = exp_ps(clamp_ps(_mm512_sub_ps(_mm512_setzero_ps(), x), -87.0f, 60.0f));
  __m512 den = _mm512_mul_ps(_mm512_add_ps(e, one), _mm512_add_ps(one, f));
  return _mm512_fmadd_ps(x, x, _mm512_div_ps(_mm512_sub_ps(e, one), den));
}

void avx512_expr(const float* x, float* y, int64_t begin, int64_t end) {
  int64_t i = begin;
  for (; i + 16 <= end; i += 16) _mm512_storeu_ps(y + i, expr_ps(_mm512_loadu_ps(x + i)));
  if (i < end) {
    auto mask = __mmask16((1u << unsigned(end - i)) - 1u);
    _mm512_mask_storeu_ps(y + i, mask, expr_ps(_mm512_maskz_loadu_ps(mask, x + i)));
  }
}

#endif

// ---- The memory-bound workload's peers (plain stores: the compilers' choice)

double affine_reference(float x) { return double(x) * double(1.5f) + 1.0; }

void eigen_affine(const float* x, float* y, int64_t begin, int64_t end) {
  Eigen::Map<const Eigen::ArrayXf> xs(x + begin, Eigen::Index(end - begin));
  Eigen::Map<Eigen::ArrayXf> ys(y + begin, Eigen::Index(end - begin));
  ys = xs * 1.5f + 1.0f;
}

void scalar_affine(const float* x, float* y, int64_t begin, int64_t end) {
  for (int64_t i = begin; i < end; ++i) y[i] = x[i] * 1.5f + 1.0f;
}

#if defined(__AVX512F__)
void avx512_affine(const float* x, float* y, int64_t begin, int64_t end) {
  __m512 a = _mm512_set1_ps(1.5f), c = _mm512_set1_ps(1.0f);
  int64_t i = begin;
  for (; i + 16 <= end; i += 16)
    _mm512_storeu_ps(y + i, _mm512_add_ps(_mm512_mul_ps(_mm512_loadu_ps(x + i), a), c));
  for (; i < end; ++i) y[i] = x[i] * 1.5f + 1.0f;
}
#endif

using Kernel = void (*)(const float*, float*, int64_t, int64_t);

struct Peer {
  std::string name;
  Kernel kernel; // null: rlx
};

struct Diffs {
  double vs_reference = 0, vs_rlx = 0;
};

Diffs compare(const std::vector<float>& x, const float* y, const float* rlx_y,
              double (*ref)(float)) {
  Diffs d;
  for (std::size_t i = 0; i < x.size(); ++i) {
    d.vs_reference = std::max(d.vs_reference, std::abs(double(y[i]) - ref(x[i])));
    d.vs_rlx = std::max(d.vs_rlx, std::abs(double(y[i]) - double(rlx_y[i])));
  }
  return d;
}

} // namespace

struct Workload {
  const char* table;
  rlx::ir::Graph (*make_graph)(int64_t);
  double (*reference)(float);
  std::vector<Peer> peers;
  int64_t min_size = 0;
};

/// Times every peer of the workload at each size and thread count; false when a peer computed
/// wrong values.
bool run(const Workload& w, const bench::Args& args, const bench::Budget& budget) {
  bool ok = true;
  for (int64_t n : args.sizes) {
    if (n < w.min_size) continue;
    std::vector<float> x = make_input(n);
    std::vector<float> y(std::size_t(n), 0.0f);
    rlx::Buffer xb = rlx::Buffer::f32({n}, x);
    const rlx::Buffer* leaves[] = {&xb};
    std::shared_ptr<const rlx::Executable> exe = rlx::compile(w.make_graph(n), rlx::Backend::Jit);
    std::vector<float> rlx_y = exe->run(leaves)[0].to_f32();

    for (int threads : args.threads) {
      rlx::set_num_threads(threads);
      bench::Splitter split(threads);
      for (const Peer& peer : w.peers) {
        std::function<void(int64_t, int64_t)> body;
        if (peer.kernel != nullptr)
          body = [&, k = peer.kernel](int64_t b, int64_t e) { k(x.data(), y.data(), b, e); };
        // Check first: run once and compare.
        const float* out = nullptr;
        std::vector<float> rlx_now;
        if (peer.kernel == nullptr) {
          rlx_now = exe->run(leaves)[0].to_f32();
          out = rlx_now.data();
        } else {
          std::fill(y.begin(), y.end(), std::nanf(""));
          split.run(n, bench::kGrain, body);
          out = y.data();
        }
        Diffs d = compare(x, out, rlx_y.data(), w.reference);
        char line[256];
        std::snprintf(line, sizeof line,
                      "check n=%lld threads=%d %s: max|y-f64 ref| = %.3g, "
                      "max|y-rlx| = %.3g",
                      static_cast<long long>(n), threads, peer.name.c_str(), d.vs_reference,
                      d.vs_rlx);
        std::printf("%s\n", line);
        if (!(d.vs_reference <= kTolerance)) {
          std::printf("FAILED: %s is off by more than %g\n", peer.name.c_str(), kTolerance);
          ok = false;
          continue;
        }
        bench::Stats s;
        if (peer.kernel == nullptr) {
          s = bench::measure(
              [&] {
                std::vector<rlx::Buffer> r = exe->run(leaves);
                bench::clobber(r[0].bytes().data());
              },
              budget);
        } else {
          s = bench::measure(
              [&] {
                split.run(n, bench::kGrain, body);
                bench::clobber(y.data());
              },
              budget);
        }
        bench::emit_time({w.table, peer.name, threads, n, peer.kernel == nullptr}, s);
      }
    }
  }
  return ok;
}

int main(int argc, char** argv) {
  bench::Args args = bench::parse_args(argc, argv, {1000, 10000, 100000, 1000000, 10000000});
  const bench::Budget budget = bench::budget_of(args);

  Workload chain{kTable, make_graph, reference, {{"rlx", nullptr}, {"Eigen 3.4", eigen_expr}}};
  Workload affine{kAffineTable,
                  make_affine_graph,
                  affine_reference,
                  {{"rlx", nullptr}, {"Eigen 3.4", eigen_affine}},
                  1000000};
#if defined(__AVX512F__)
  chain.peers.push_back({"AVX-512 by hand", avx512_expr});
  affine.peers.push_back({"AVX-512 by hand", avx512_affine});
#else
  bench::emit_note(kTable, "AVX-512 by hand: n/a (not compiled with AVX-512: the CPU lacks it)");
#endif
  chain.peers.push_back({"scalar std::", scalar_expr});
  affine.peers.push_back({"C++ loop (-O3, vectorized by clang)", scalar_affine});

  bench::emit_note(kTable, "y = tanh(0.5x+0.1)*sigmoid(x) + x^2, f32, x in [-4, 4); time per call");
  bench::emit_note(kTable, "rlx: rlx::compile(graph, Backend::Jit) once per size, timed "
                           "Executable::run (allocates and returns the output buffer)");
  bench::emit_note(kTable, "Eigen, AVX-512 and scalar write into a preallocated array; on 2 "
                           "threads they split the range over a persistent helper thread with "
                           "rlx's grain (ranges of at most 32768 elements stay on one thread)");
  bench::emit_note(kTable, "compiled with -O3 -march=native (AVX-512 by hand: " +
                               std::string(bench::kBuiltWithAvx512 ? "zmm" : "n/a") + ")");
  bench::emit_note(kAffineTable, std::string("y = x*1.5 + 1, f32, sizes from 1e6: memory-bound; "
                                             "the peers store normally, rlx ") +
                                     (std::getenv("RLX_STREAM_STORES") ? "streams (non-temporal "
                                                                         "stores) from 16 MiB"
                                                                       : "too (its default)") +
                                     "; otherwise as the table above");

  bool ok = run(chain, args, budget);
  ok = run(affine, args, budget) && ok;
  if (!ok) std::printf("FAILED: a peer computed wrong values (see the check lines)\n");
  return ok ? 0 : 1;
}
