// bench/bench_packed.cpp -- decode-shaped dequant_matmul (m = 1, k = n = 4096: one token through
// a 4096x4096 linear layer stored as Q4_0 or Q8_0) and its adjoint (g . W, the product's VJP in x:
// a decode step's backward; also at m = 8, a short batch's backward), the JIT's kernels on 1 and
// 2 threads. A decode step reads every
// packed byte once and does 2 flops per weight, so it is bound by memory: the rows report the
// packed weights read per second (GB/s) next to a STREAM triad measured in the same run, on the
// same threads (issue 25 asks for at least 70% of it).
#include "bench_util.hpp"

#include <rlx/ir/graph.hpp>
#include <rlx/quant_packed.hpp>
#include <rlx/runtime.hpp>
#include <rlx/settings.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <utility>
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
  for (auto [adjoint, m] : {std::pair{false, 1}, {true, 1}, {true, 8}}) {
    Form& f = forms.emplace_back();
    f.label = std::string("rlx ") + name +
              (adjoint ? m == 1 ? " adjoint (g . W)" : " adjoint, m = 8 (G . W)" : "");
    const int64_t in_len = adjoint ? n : k;
    auto xi = f.g.input("x", rlx::ir::Shape({m, in_len}, rlx::ir::DType::F32));
    auto wi = f.g.input("w", rlx::ir::Shape({n, rb}, rlx::ir::DType::U8));
    f.g.set_outputs({f.g.add_inferred(
        rlx::ir::Op(rlx::ir::OpKind::DequantMatMul, rlx::ir::DequantMatMulAttrs{scheme, adjoint}),
        {xi, wi})});
    f.in = rlx::Buffer::uninitialized(f.g.shape(xi));
    for (int64_t i = 0; i < m; ++i) // row i: x rotated by i values
      for (int64_t c = 0; c < in_len; ++c)
        std::memcpy(f.in.bytes().data() + (i * in_len + c) * 4, &x[std::size_t((c + i) % k)], 4);
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
  for (Form& f : forms) {
    std::vector<std::vector<const rlx::Buffer*>> layer_leaves;
    for (const rlx::Buffer& wb : wbs) layer_leaves.push_back({&f.in, &wb});
    const std::vector<const rlx::Buffer*>& leaves = layer_leaves[0];
    // The reference: the interpreter's kernel (the specification, accumulating in double).
    auto spec = rlx::compile(f.g, rlx::Backend::Interp)->run(leaves);
    const int64_t out_len = spec[0].numel();
    std::vector<double> ref(static_cast<std::size_t>(out_len));
    for (int64_t i = 0; i < out_len; ++i) ref[std::size_t(i)] = spec[0].get_f64(i);
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
