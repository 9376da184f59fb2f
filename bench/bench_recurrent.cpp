// bench/bench_recurrent.cpp -- LSTM inference, 1 layer, hidden 256, input 256, batch 8, seq 128,
// f32, batch first: rlx (the JIT's recurrent step through Executable::run) on 1 and 2 threads.
// The output is checked against the interpreter's float64 kernel first. The PyTorch peer
// (torch.nn.LSTM on the same inputs) is bench/peers_recurrent.py.
#include "bench_util.hpp"

#include <rlx/all.hpp>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

namespace {

constexpr const char* kTable = "lstm inference";
constexpr int64_t kB = 8, kS = 128, kI = 256, kH = 256;

/// bench::weyl scaled (x in [-1, 1), weights and bias in [-1/16, 1/16)).
std::vector<float> weyl(int64_t n, uint64_t salt, float scale) {
  std::vector<float> x = bench::weyl(n, salt);
  for (float& v : x) v *= scale;
  return x;
}

} // namespace

int main(int argc, char** argv) {
  bench::Args args = bench::parse_args(argc, argv, {});
  const bench::Budget budget = bench::budget_of(args);
  using namespace rlx::ir;
  Graph g("lstm");
  NodeId x = g.input("x", Shape({kB, kS, kI}, DType::F32));
  NodeId wi = g.input("w_ih", Shape({4 * kH, kI}, DType::F32));
  NodeId wh = g.input("w_hh", Shape({4 * kH, kH}, DType::F32));
  NodeId b = g.input("bias", Shape({4 * kH}, DType::F32));
  g.set_outputs({g.lstm(x, wi, wh, b, kH, 1, false, Shape({kB, kS, kH}, DType::F32))});
  rlx::Buffer bx = rlx::Buffer::f32({kB, kS, kI}, weyl(kB * kS * kI, 0, 0.25f));
  rlx::Buffer bwi = rlx::Buffer::f32({4 * kH, kI}, weyl(4 * kH * kI, 1, 1.0f / 64));
  rlx::Buffer bwh = rlx::Buffer::f32({4 * kH, kH}, weyl(4 * kH * kH, 2, 1.0f / 64));
  rlx::Buffer bb = rlx::Buffer::f32({4 * kH}, weyl(4 * kH, 3, 1.0f / 64));
  std::vector<const rlx::Buffer*> leaves{&bx, &bwi, &bwh, &bb};
  std::vector<double> ref =
      rlx::interp::run(g, {{"x", bx}, {"w_ih", bwi}, {"w_hh", bwh}, {"bias", bb}})[0].to_f64();
  bench::emit_note(kTable, "LSTM, 1 layer, hidden 256, input 256, batch 8, seq 128, f32, batch "
                           "first, zero initial state; the output y [8, 128, 256]");
  bench::emit_note(kTable, "rlx: rlx::compile(graph, Backend::Jit), timed Executable::run "
                           "(allocates and returns y); PyTorch: torch.nn.LSTM under no_grad");
  auto exe = rlx::compile(g, rlx::Backend::Jit);
  bool ok = true;
  for (int threads : args.threads) {
    rlx::set_num_threads(threads);
    std::vector<double> y = exe->run(leaves)[0].to_f64();
    double worst = 0;
    for (std::size_t i = 0; i < y.size(); ++i) worst = std::max(worst, std::abs(y[i] - ref[i]));
    std::printf("check %s rlx threads=%d: max|y-f64 ref| = %.3g\n", kTable, threads, worst);
    if (!(worst <= 1e-4)) {
      std::printf("FAILED: rlx is off by more than 1e-4\n");
      ok = false;
      continue;
    }
    bench::Stats s = bench::measure(
        [&] {
          std::vector<rlx::Buffer> r = exe->run(leaves);
          bench::clobber(r[0].bytes().data());
        },
        budget);
    bench::emit_time({kTable, "rlx", threads, kB * kS * kH, true}, s);
  }
  return ok ? 0 : 1;
}
