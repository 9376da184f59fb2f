// bench/bench_packed.cpp -- decode-shaped dequant_matmul (m = 1, k = n = 4096: one token through
// a 4096x4096 linear layer stored as Q4_0 or Q8_0) and its adjoint (g . W, the product's VJP in x:
// a decode step's backward), the JIT's kernels on 1 and 2 threads. A decode
// step reads every packed byte once and does 2 flops per weight, so it is bound by memory: the
// rows report the packed weights read per second (GB/s) next to a STREAM triad measured in the
// same run, on the same threads (issue 25 asks for at least 70% of it).
#include "bench_util.hpp"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include <rlx/ir/graph.hpp>
#include <rlx/quant_packed.hpp>
#include <rlx/runtime.hpp>
#include <rlx/settings.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace {

constexpr char kTable[] = "decode dequant_matmul (m = 1, k = n = 4096): packed weights read";

/// The STREAM triad a = b + 3 c over f64 arrays of n elements, in GB/s as STREAM counts it.
void triad(int64_t n, int threads, const bench::Budget& budget) {
  std::vector<double> a(static_cast<std::size_t>(n), 0.0), b(static_cast<std::size_t>(n), 1.0),
      c(static_cast<std::size_t>(n), 2.0);
  bench::Splitter split(threads);
  std::function<void(int64_t, int64_t)> fn = [&](int64_t lo, int64_t hi) {
    double* __restrict pa = a.data();
    const double* __restrict pb = b.data();
    const double* __restrict pc = c.data();
    for (int64_t i = lo; i < hi; ++i) pa[i] = pb[i] + 3.0 * pc[i];
  };
  bench::Stats s = bench::measure(
      [&] {
        split.run(n, bench::kGrain, fn);
        bench::clobber(a.data());
      },
      budget);
  bench::emit_rate({kTable, "STREAM triad (24 B per element)", threads, n, false, "GB/s"}, s,
                   24.0 * double(n) / 1e9);
}

#if defined(__x86_64__)
// ---- A measurement, not rlx: Q4_0's decode with the activations quantized to int8 per block of
// 32 (as llama.cpp's Q8_0 activations are) and the products on AVX-512 VNNI (vpdpbusd: the
// unsigned 4-bit codes times the signed int8 x, -8 sum(x) folded into the accumulator), converted
// to f32 once per block. Quantizing x changes y by far more than f32 rounding (a few 1e-4 of its
// scale, against the JIT's 1e-5 check), so rlx does not do it; the row says what it would buy.

/// x as int8 codes and a scale per block of 32, and per group of 4 codes -8 times their sum.
struct Int8Activations {
  std::vector<int8_t> q;
  std::vector<float> d;
  std::vector<int32_t> offset;
};

Int8Activations quantize_activations(const float* x, int64_t k) {
  Int8Activations a;
  a.q.resize(static_cast<std::size_t>(k));
  a.d.resize(static_cast<std::size_t>(k / 32));
  a.offset.resize(static_cast<std::size_t>(k / 4));
  for (int64_t b = 0; b < k / 32; ++b) {
    float amax = 0;
    for (int64_t i = 0; i < 32; ++i) amax = std::max(amax, std::abs(x[32 * b + i]));
    const float d = amax / 127, inv = d > 0 ? 1 / d : 0;
    a.d[std::size_t(b)] = d;
    for (int64_t i = 0; i < 32; ++i)
      a.q[std::size_t(32 * b + i)] = int8_t(std::nearbyint(x[32 * b + i] * inv));
  }
  for (int64_t g = 0; g < k / 4; ++g) {
    int32_t sum = 0;
    for (int64_t i = 0; i < 4; ++i) sum += a.q[std::size_t(4 * g + i)];
    a.offset[std::size_t(g)] = -8 * sum;
  }
  return a;
}

/// Rows [j0, j1) of y = x . W^T for Q4_0 rows of `row_bytes` bytes.
[[gnu::target("avx512f,avx512vl,avx512vnni,avx2,fma,f16c")]] void
q4_0_int8_rows(const uint8_t* w, int64_t row_bytes, int64_t k, const Int8Activations& a, float* y,
               int64_t j0, int64_t j1) {
  const __m256i low4 = _mm256_set1_epi8(0x0F);
  const int64_t blocks = k / 32;
  for (int64_t j = j0; j < j1; ++j) {
    const uint8_t* p = w + j * row_bytes;
    __m256 acc[2] = {_mm256_setzero_ps(), _mm256_setzero_ps()};
    for (int64_t b = 0; b < blocks; ++b, p += 18) {
      const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 2));
      // Bytes 0-15: the low nibbles (values 0-15), 16-31: the high ones (values 16-31).
      const __m256i codes = _mm256_and_si256(
          _mm256_inserti128_si256(_mm256_castsi128_si256(v), _mm_srli_epi16(v, 4), 1), low4);
      const __m256i dot = _mm256_dpbusd_epi32(
          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a.offset.data() + 8 * b)), codes,
          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a.q.data() + 32 * b)));
      uint16_t h;
      std::memcpy(&h, p, 2);
      const __m256 s = _mm256_set1_ps(_cvtsh_ss(h) * a.d[std::size_t(b)]);
      acc[b & 1] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot), s, acc[b & 1]);
    }
    const __m256 t = _mm256_add_ps(acc[0], acc[1]);
    const __m128 u = _mm_add_ps(_mm256_castps256_ps128(t), _mm256_extractf128_ps(t, 1));
    const __m128 v2 = _mm_add_ps(u, _mm_movehl_ps(u, u));
    y[j] = _mm_cvtss_f32(_mm_add_ss(v2, _mm_shuffle_ps(v2, v2, 1)));
  }
}

/// Times the hand kernel on the cycled layers' copies and prints its distance from `ref`.
void int8_activations_row(const std::vector<float>& x, const std::vector<rlx::Buffer>& wbs,
                          int64_t n, int64_t k, int64_t rb, const std::vector<double>& ref,
                          const bench::Args& args, const bench::Budget& budget) {
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("avx512vnni") || !__builtin_cpu_supports("avx512vl")) return;
  std::vector<float> y(static_cast<std::size_t>(n));
  for (int threads : args.threads) {
    bench::Splitter split(threads);
    std::size_t next = 0;
    auto call = [&] {
      const Int8Activations a = quantize_activations(x.data(), k);
      const auto* w = reinterpret_cast<const uint8_t*>(wbs[next].bytes().data());
      std::function<void(int64_t, int64_t)> fn = [&](int64_t j0, int64_t j1) {
        q4_0_int8_rows(w, rb, k, a, y.data(), j0, j1);
      };
      split.run(n, 16, fn);
      next = (next + 1) % wbs.size();
    };
    next = 0;
    call();
    double worst = 0, scale = 1;
    for (int64_t i = 0; i < n; ++i) {
      worst = std::max(worst, std::abs(double(y[std::size_t(i)]) - ref[std::size_t(i)]));
      scale = std::max(scale, std::abs(ref[std::size_t(i)]));
    }
    std::printf("check hand Q4_0 int8-activation kernel threads=%d: max|y - interpreter| = %.3g "
                "(outputs up to %.3g; not rlx, shown for its error)\n",
                threads, worst, scale);
    auto s = bench::measure(
        [&] {
          call();
          bench::clobber(y.data());
        },
        budget);
    bench::emit_rate(
        {kTable, "hand Q4_0, int8 activations (VNNI; not rlx)", threads, k, false, "GB/s"}, s,
        double(n * rb) / 1e9);
  }
}
#endif

bool run(rlx::quant::QuantFormat format, const char* name, const bench::Args& args,
         const bench::Budget& budget) {
  const int64_t k = 4096, n = 4096;
  const rlx::quant::QuantScheme scheme = rlx::quant::QuantScheme::of(format);
  std::mt19937 gen(7);
  std::normal_distribution<float> dist;
  std::vector<float> w(static_cast<std::size_t>(n * k)), x(static_cast<std::size_t>(k));
  for (float& v : w) v = dist(gen);
  for (float& v : x) v = dist(gen);
  rlx::Tensor packed = rlx::quant::pack(rlx::Tensor::from_vector(w, {n, k}), scheme);
  const int64_t rb = packed.size(1);
  std::vector<uint8_t> bytes = packed.to_vector<uint8_t>();

  // The forward form x [1, k] -> [1, n], and the adjoint g [1, n] -> [1, k] (its VJP in x,
  // a decode step's backward); both read the same packed bytes.
  struct Form {
    std::string label;
    rlx::ir::Graph g;
    rlx::Buffer in;
  };
  std::vector<Form> forms;
  for (bool adjoint : {false, true}) {
    Form& f = forms.emplace_back();
    f.label = std::string("rlx ") + name + (adjoint ? " adjoint (g . W)" : "");
    const int64_t in_len = adjoint ? n : k;
    auto xi = f.g.input("x", rlx::ir::Shape({1, in_len}, rlx::ir::DType::F32));
    auto wi = f.g.input("w", rlx::ir::Shape({n, rb}, rlx::ir::DType::U8));
    f.g.set_outputs({f.g.add_inferred(
        rlx::ir::Op(rlx::ir::OpKind::DequantMatMul, rlx::ir::DequantMatMulAttrs{scheme, adjoint}),
        {xi, wi})});
    f.in = rlx::Buffer::uninitialized(f.g.shape(xi));
    std::memcpy(f.in.bytes().data(), x.data(), std::size_t(in_len) * 4);
  }
  // A model's layers do not fit in the last-level cache: cycle through copies of the weight
  // totalling at least 256 MiB, so every call reads its weights from memory, as a decode step
  // does.
  const int64_t layers = std::max<int64_t>(2, (int64_t(256) << 20) / (n * rb) + 1);
  std::vector<rlx::Buffer> wbs;
  for (int64_t l = 0; l < layers; ++l) {
    wbs.push_back(rlx::Buffer::uninitialized(rlx::ir::Shape({n, rb}, rlx::ir::DType::U8)));
    std::memcpy(wbs.back().bytes().data(), bytes.data(), bytes.size());
  }
  bench::emit_note(kTable, std::string(name) + ": " + std::to_string(n * rb >> 20) + " MiB of " +
                               name + " blocks per call, " + std::to_string(layers) +
                               " layers' copies cycled");
  bool ok = true;
  std::vector<double> forward_ref;
  for (Form& f : forms) {
    std::vector<std::vector<const rlx::Buffer*>> layer_leaves;
    for (const rlx::Buffer& wb : wbs) layer_leaves.push_back({&f.in, &wb});
    const std::vector<const rlx::Buffer*>& leaves = layer_leaves[0];
    // The reference: the interpreter's kernel (the specification, accumulating in double).
    auto spec = rlx::compile(f.g, rlx::Backend::Interp)->run(leaves);
    const int64_t out_len = spec[0].numel();
    std::vector<double> ref(static_cast<std::size_t>(out_len));
    for (int64_t i = 0; i < out_len; ++i) ref[std::size_t(i)] = spec[0].get_f64(i);
    if (&f == &forms[0]) forward_ref = ref;
    auto exe = rlx::compile(f.g, rlx::Backend::Jit);
    for (int threads : args.threads) {
      rlx::set_num_threads(threads);
      // f32 accumulation of 4096 products: the check is relative to the outputs' scale.
      auto out = exe->run(leaves);
      double worst = 0, scale = 1;
      for (int64_t i = 0; i < out_len; ++i) {
        worst = std::max(worst, std::abs(out[0].get_f64(i) - ref[std::size_t(i)]));
        scale = std::max(scale, std::abs(ref[std::size_t(i)]));
      }
      std::printf("check %s threads=%d: max|y - interpreter| = %.3g (outputs up to %.3g)\n",
                  f.label.c_str(), threads, worst, scale);
      if (worst > 1e-5 * scale) {
        std::printf("FAILED: %s differs from the interpreter\n", f.label.c_str());
        ok = false;
        continue;
      }
      std::size_t next = 0;
      auto s = bench::measure(
          [&] {
            auto r = exe->run(layer_leaves[next]);
            next = (next + 1) % layer_leaves.size();
            bench::clobber(r[0].bytes().data());
          },
          budget);
      bench::emit_rate({kTable, f.label, threads, k, false, "GB/s"}, s, double(n * rb) / 1e9);
    }
  }
#if defined(__x86_64__)
  if (format == rlx::quant::QuantFormat::Q4_0)
    int8_activations_row(x, wbs, n, k, rb, forward_ref, args, budget);
#endif
  return ok;
}

} // namespace

int main(int argc, char** argv) {
  bench::Args args = bench::parse_args(argc, argv, {});
  const bench::Budget budget = bench::budget_of(args);
  for (int threads : args.threads) triad(int64_t(1) << 24, threads, budget);
  bool ok = run(rlx::quant::QuantFormat::Q4_0, "Q4_0", args, budget);
  ok = run(rlx::quant::QuantFormat::Q8_0, "Q8_0", args, budget) && ok;
  if (!ok) std::printf("FAILED: dequant_matmul computed wrong values (see the check lines)\n");
  return ok ? 0 : 1;
}
