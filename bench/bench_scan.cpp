// bench/bench_scan.cpp -- a scan's loop over time: rlx (one scan node, its body compiled by the
// JIT and called on raw pointers at every step: the carry and x_t where they are, the next
// carry into one of a pair) against a hand-written C++ loop over the same recurrence (-O3
// -march=native, one thread). Three bodies: a linear one (h' = 0.9 h + x_t, carry f32[64], 8192
// steps: a few nanoseconds of work, so rlx's row is its per-step overhead), an element-wise one
// (h' = tanh(0.9 h + x_t)) and an RNN cell (h' = tanh(h @ u + x_t), h [1, 64], u [64, 64], 2048
// steps). Each peer is checked against an f64 loop first.
#include "bench_util.hpp"

#include <rlx/all.hpp>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

namespace {

constexpr const char* kTable = "scan";
constexpr int64_t kH = 64;

template <class T>
void loop_elementwise(const std::vector<float>& xs, int64_t steps, bool tanh, T* h) {
  for (int64_t i = 0; i < kH; ++i) h[i] = 0;
  for (int64_t t = 0; t < steps; ++t)
    for (int64_t i = 0; i < kH; ++i) {
      T v = T(0.9) * h[i] + T(xs[std::size_t(t * kH + i)]);
      h[i] = tanh ? std::tanh(v) : v;
    }
}

template <class T>
void loop_rnn(const std::vector<float>& xs, const std::vector<float>& u, int64_t steps, T* h) {
  T next[kH];
  for (int64_t i = 0; i < kH; ++i) h[i] = 0;
  for (int64_t t = 0; t < steps; ++t) {
    for (int64_t j = 0; j < kH; ++j) next[j] = T(xs[std::size_t(t * kH + j)]);
    for (int64_t i = 0; i < kH; ++i)
      for (int64_t j = 0; j < kH; ++j) next[j] += h[i] * T(u[std::size_t(i * kH + j)]);
    for (int64_t j = 0; j < kH; ++j) h[j] = std::tanh(next[j]);
  }
}

enum class Body { Linear, Tanh, Rnn };
struct Workload {
  std::string name;
  int64_t steps;
  Body body;
};

rlx::ir::Shape f32(std::vector<int64_t> dims) {
  return rlx::ir::Shape::of(dims, rlx::ir::DType::F32);
}

} // namespace

int main(int argc, char** argv) {
  using namespace rlx::ir;
  bench::emit_note(kTable, "rlx: rlx::compile(graph with one scan node, Backend::Jit), timed "
                           "Executable::run (the final carry returned); 1 thread");
  bench::emit_note(kTable, "C++ loop: the recurrence in f32 with std::tanh, one thread, -O3 "
                           "-march=native, into a preallocated carry");
  const bench::Args args = bench::parse_args(argc, argv, {});
  const bench::Budget budget = bench::budget_of(args);
  bool ok = true;
  rlx::set_num_threads(1);
  for (const Workload& w :
       {Workload{"linear 0.9 h + x_t, carry [64], 8192 steps", 8192, Body::Linear},
        Workload{"elementwise tanh(0.9 h + x_t), carry [64], 8192 steps", 8192, Body::Tanh},
        Workload{"rnn tanh(h @ u + x_t), h [1, 64], u [64, 64], 2048 steps", 2048, Body::Rnn}}) {
    const bool rnn = w.body == Body::Rnn, tanh = w.body != Body::Linear;
    const int64_t steps = w.steps;
    std::vector<float> xs = bench::weyl(steps * kH, 1, -1, 1);
    std::vector<float> u = bench::weyl(kH * kH, 2, -0.15, 0.15);
    std::vector<double> ref(kH);
    if (rnn)
      loop_rnn<double>(xs, u, steps, ref.data());
    else
      loop_elementwise<double>(xs, steps, tanh, ref.data());

    Shape carry = rnn ? f32({1, kH}) : f32({kH});
    Graph body("step");
    NodeId h = body.input("h", carry);
    NodeId uu = rnn ? body.input("u", f32({kH, kH})) : NodeId();
    NodeId x = body.input("x", carry);
    NodeId pre = rnn ? body.add(body.mm(h, uu), x)
                     : body.add(body.mul(h, body.constant(0.9, DType::F32)), x);
    body.set_outputs({tanh ? body.tanh(pre) : pre});
    Graph g("scan");
    NodeId h0 = g.input("h0", carry);
    std::vector<int64_t> xs_dims{steps};
    for (int64_t d : carry.sizes()) xs_dims.push_back(d);
    NodeId gx = g.input("xs", f32(xs_dims));
    std::vector<NodeId> bcasts;
    if (rnn) bcasts.push_back(g.input("u", f32({kH, kH})));
    g.set_outputs({g.scan_with_bcasts_and_xs(h0, bcasts, {gx}, body, uint32_t(steps))});
    rlx::Buffer bh(carry), bx = rlx::Buffer::f32(xs_dims, xs), bu = rlx::Buffer::f32({kH, kH}, u);
    std::vector<const rlx::Buffer*> leaves{&bh, &bx, &bu}; // the graph's Inputs in order
    if (!rnn) leaves.pop_back();
    auto exe = rlx::compile(g, rlx::Backend::Jit);
    std::optional<bench::Stats> r =
        bench::check_and_time_run(*exe, leaves, "rlx " + w.name, ref, budget);
    if (!r) {
      ok = false;
      continue;
    }
    bench::emit_time({kTable, "rlx: " + w.name, 1, steps, true}, *r);
    std::vector<float> hl(kH);
    auto run_loop = [&] {
      if (rnn)
        loop_rnn<float>(xs, u, steps, hl.data());
      else
        loop_elementwise<float>(xs, steps, tanh, hl.data());
    };
    run_loop();
    if (!bench::check("C++ loop " + w.name, hl, ref)) {
      ok = false;
      continue;
    }
    bench::Stats s = bench::measure(
        [&] {
          run_loop();
          bench::clobber(hl.data());
        },
        budget);
    bench::emit_time({kTable, "C++ loop: " + w.name, 1, steps}, s);
    std::printf("%s: rlx %.3g s (%.1f ns/step), C++ loop %.3g s (%.1f ns/step), ratio %.2f\n",
                w.name.c_str(), r->median, 1e9 * r->median / double(steps), s.median,
                1e9 * s.median / double(steps), r->median / s.median);
  }
  if (!ok) std::printf("FAILED: a peer computed wrong values (see the check lines)\n");
  return ok ? 0 : 1;
}
