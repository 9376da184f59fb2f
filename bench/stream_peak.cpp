// bench/stream_peak.cpp -- the machine's limits, the roofline the other benchmarks are read
// against: memory bandwidth (a STREAM-style triad a = b + s*c over f64 arrays far larger than
// the caches, counted as STREAM counts it, 24 bytes per element) and compute (a loop of
// independent f32 FMAs: 16 zmm accumulators when built with AVX-512, and 16 ymm ones), on 1
// and 2 threads; and the cost of fresh memory (first touch of a newly allocated 40 MB block, which
// a per-call result buffer pays). Also prints the CPU model and whether it has AVX-512.
#include "bench_util.hpp"

#include <immintrin.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>

namespace {

constexpr char kMachine[] = "machine";
constexpr char kStream[] = "memory";
constexpr char kPeak[] = "compute: peak FMA";

/// 16 independent FMA chains of `iters` steps; returns a value that depends on all of them.
template <class V, V (*Fma)(V, V, V), V (*Set1)(float), V (*Add)(V, V)>
float fma_chains(int64_t iters) {
  V acc[16];
  for (int j = 0; j < 16; ++j) acc[j] = Set1(float(j) * 1e-3f);
  V m = Set1(0.999999f), a = Set1(1e-7f);
  for (int64_t i = 0; i < iters; ++i)
    for (int j = 0; j < 16; ++j) acc[j] = Fma(acc[j], m, a);
  V sum = acc[0];
  for (int j = 1; j < 16; ++j) sum = Add(sum, acc[j]);
  float out[sizeof(V) / sizeof(float)];
  std::memcpy(out, &sum, sizeof out);
  return out[0];
}

__m256 fma256(__m256 a, __m256 b, __m256 c) { return _mm256_fmadd_ps(a, b, c); }
__m256 set256(float v) { return _mm256_set1_ps(v); }
__m256 add256(__m256 a, __m256 b) { return _mm256_add_ps(a, b); }
#if defined(__AVX512F__)
__m512 fma512(__m512 a, __m512 b, __m512 c) { return _mm512_fmadd_ps(a, b, c); }
__m512 set512(float v) { return _mm512_set1_ps(v); }
__m512 add512(__m512 a, __m512 b) { return _mm512_add_ps(a, b); }
#endif

} // namespace

int main(int argc, char** argv) {
  // Sizes: the triad's array length (elements of f64 per array).
  bench::Args args = bench::parse_args(argc, argv, {int64_t(1) << 24});
  const bench::Budget budget = bench::budget_of(args);

  std::string model = bench::cpuinfo_field("model name");
  unsigned logical = std::thread::hardware_concurrency();
  bench::emit_note(kMachine, "CPU: " + model + ", " + std::to_string(logical) + " logical CPUs");
  bench::emit_note(
      kMachine, std::string("AVX-512F: ") + (bench::cpu_has("avx512f") ? "yes" : "no") +
                    ", AVX2: " + (bench::cpu_has("avx2") ? "yes" : "no") +
                    ", FMA: " + (bench::cpu_has("fma") ? "yes" : "no") +
                    "; benchmarks built with AVX-512: " + (bench::kBuiltWithAvx512 ? "yes" : "no"));

  // ---- STREAM triad
  for (int64_t n : args.sizes) {
    std::unique_ptr<double[]> a(new double[std::size_t(n)]);
    std::unique_ptr<double[]> b(new double[std::size_t(n)]);
    std::unique_ptr<double[]> c(new double[std::size_t(n)]);
    const double scalar = 3.0;
    bench::emit_note(kStream, "a[i] = b[i] + 3*c[i] over 3 f64 arrays of " + std::to_string(n) +
                                  " elements (" + std::to_string(n * 8 >> 20) +
                                  " MiB each); 24 bytes per element, as STREAM counts");
    for (int threads : args.threads) {
      bench::Splitter split(threads);
      // First touch on the threads that use the pages.
      split.run(n, bench::kGrain, [&](int64_t lo, int64_t hi) {
        for (int64_t i = lo; i < hi; ++i) a[i] = 0.0, b[i] = 1.0, c[i] = 2.0;
      });
      std::function<void(int64_t, int64_t)> triad = [&](int64_t lo, int64_t hi) {
        double* __restrict pa = a.get();
        const double* __restrict pb = b.get();
        const double* __restrict pc = c.get();
        for (int64_t i = lo; i < hi; ++i) pa[i] = pb[i] + scalar * pc[i];
      };
      bench::Stats s = bench::measure(
          [&] {
            split.run(n, bench::kGrain, triad);
            bench::clobber(a.get());
          },
          budget);
      if (a[std::size_t(n) - 1] != 7.0) std::printf("FAILED: triad computed wrong values\n");
      bench::emit_rate({kStream, "STREAM triad", threads, n, false, "GB/s"}, s,
                       24.0 * double(n) / 1e9);
    }
  }

  // ---- Fresh memory: what a result buffer that is allocated per call costs before any work.
  {
    constexpr std::size_t kBytes = 40'000'000; // 1e7 f32
    bench::emit_note(kStream, "fresh: malloc + memset + free of 40 MB (an f32[1e7] result "
                              "allocated per call), counted as 40 MB written; glibc returns "
                              "blocks this large to the OS, so every call page-faults");
    bench::Stats s = bench::measure(
        [&] {
          void* p = std::malloc(kBytes);
          std::memset(p, 1, kBytes);
          bench::clobber(p);
          std::free(p);
        },
        budget);
    bench::emit_rate({kStream, "fresh pages (first touch)", 1, int64_t(kBytes), false, "GB/s"}, s,
                     double(kBytes) / 1e9);
  }

  // ---- Peak FMA
  constexpr int64_t kIters = 1 << 18;
  bench::emit_note(kPeak, "16 independent f32 FMA chains per thread, " + std::to_string(kIters) +
                              " steps; 2 flops per lane per FMA");
  struct Variant {
    std::string name;
    float (*fn)(int64_t);
    int lanes;
  };
  std::vector<Variant> variants;
#if defined(__AVX512F__)
  variants.push_back({"zmm (AVX-512) FMA", fma_chains<__m512, fma512, set512, add512>, 16});
#else
  bench::emit_note(kPeak, "zmm (AVX-512): n/a (not built with AVX-512)");
#endif
  variants.push_back({"ymm (AVX2) FMA", fma_chains<__m256, fma256, set256, add256>, 8});
  for (const Variant& v : variants) {
    for (int threads : args.threads) {
      bench::Splitter split(threads);
      std::vector<float> sink(std::size_t(threads), 0.0f);
      std::function<void(int64_t, int64_t)> body = [&](int64_t lo, int64_t hi) {
        for (int64_t t = lo; t < hi; ++t) sink[std::size_t(t)] = v.fn(kIters);
      };
      bench::Stats s = bench::measure(
          [&] {
            split.run(threads, 1, body);
            bench::clobber(sink.data());
          },
          budget);
      double flops = 2.0 * v.lanes * 16.0 * double(kIters) * threads;
      bench::emit_rate({kPeak, v.name, threads, 0, false, "GFLOP/s"}, s, flops / 1e9);
    }
  }
  return 0;
}
