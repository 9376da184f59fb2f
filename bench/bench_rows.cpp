// bench/bench_rows.cpp -- row workloads: softmax over the rows of f32[4096, 1024] and layer norm
// over the rows of f32[512, 768] (gamma, beta, eps 1e-5): rlx (the JIT's row kernels, through
// Executable::run), Eigen 3.4 row expressions and a plain C++ loop (-O3 -march=native), on one
// thread (the peers) and one and two threads (rlx). Every peer is checked against an f64
// reference before it is timed. The Python peers (numpy, PyTorch) are bench/peers_rows.py.
#include "bench_util.hpp"

#include <rlx/all.hpp>

#include <Eigen/Core>

#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace {

constexpr const char* kSoftmax = "softmax rows";
constexpr const char* kNorm = "layer norm";

struct Problem {
  int64_t rows, cols;
  std::vector<float> x, gamma, beta;
  std::vector<double> ref;
};

std::vector<double> softmax_ref(const Problem& p) {
  std::vector<double> y(p.x.size());
  for (int64_t r = 0; r < p.rows; ++r) {
    const float* x = p.x.data() + r * p.cols;
    double m = -INFINITY, s = 0;
    for (int64_t j = 0; j < p.cols; ++j) m = std::max(m, double(x[j]));
    for (int64_t j = 0; j < p.cols; ++j) s += std::exp(double(x[j]) - m);
    for (int64_t j = 0; j < p.cols; ++j)
      y[std::size_t(r * p.cols + j)] = std::exp(double(x[j]) - m) / s;
  }
  return y;
}

std::vector<double> norm_ref(const Problem& p) {
  std::vector<double> y(p.x.size());
  for (int64_t r = 0; r < p.rows; ++r) {
    const float* x = p.x.data() + r * p.cols;
    double mean = 0, var = 0;
    for (int64_t j = 0; j < p.cols; ++j) mean += x[j];
    mean /= double(p.cols);
    for (int64_t j = 0; j < p.cols; ++j) var += (x[j] - mean) * (x[j] - mean);
    var /= double(p.cols);
    for (int64_t j = 0; j < p.cols; ++j)
      y[std::size_t(r * p.cols + j)] =
          (x[j] - mean) / std::sqrt(var + 1e-5) * p.gamma[std::size_t(j)] + p.beta[std::size_t(j)];
  }
  return y;
}

// ---- Peers writing into y (one thread)

void eigen_softmax(const Problem& p, float* y) {
  using Mat = Eigen::Array<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  Eigen::Map<const Mat> x(p.x.data(), p.rows, p.cols);
  Eigen::Map<Mat> out(y, p.rows, p.cols);
  out = (x.colwise() - x.rowwise().maxCoeff()).exp();
  out.colwise() /= out.rowwise().sum();
}

void eigen_norm(const Problem& p, float* y) {
  using Mat = Eigen::Array<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  Eigen::Map<const Mat> x(p.x.data(), p.rows, p.cols);
  Eigen::Map<Mat> out(y, p.rows, p.cols);
  Eigen::Map<const Eigen::Array<float, 1, Eigen::Dynamic>> g(p.gamma.data(), p.cols),
      b(p.beta.data(), p.cols);
  out = x.colwise() - x.rowwise().mean();
  Eigen::ArrayXf inv = ((out.square().rowwise().sum() / float(p.cols)) + 1e-5f).rsqrt();
  out.colwise() *= inv;
  out.rowwise() *= g;
  out.rowwise() += b;
}

void loop_softmax(const Problem& p, float* y) {
  for (int64_t r = 0; r < p.rows; ++r) {
    const float* x = p.x.data() + r * p.cols;
    float* o = y + r * p.cols;
    float m = -INFINITY, s = 0;
    for (int64_t j = 0; j < p.cols; ++j) m = std::max(m, x[j]);
    for (int64_t j = 0; j < p.cols; ++j) s += (o[j] = std::exp(x[j] - m));
    float inv = 1.0f / s;
    for (int64_t j = 0; j < p.cols; ++j) o[j] *= inv;
  }
}

void loop_norm(const Problem& p, float* y) {
  for (int64_t r = 0; r < p.rows; ++r) {
    const float* x = p.x.data() + r * p.cols;
    float* o = y + r * p.cols;
    float mean = 0, var = 0;
    for (int64_t j = 0; j < p.cols; ++j) mean += x[j];
    mean /= float(p.cols);
    for (int64_t j = 0; j < p.cols; ++j) var += (x[j] - mean) * (x[j] - mean);
    float inv = 1.0f / std::sqrt(var / float(p.cols) + 1e-5f);
    for (int64_t j = 0; j < p.cols; ++j)
      o[j] = (x[j] - mean) * inv * p.gamma[std::size_t(j)] + p.beta[std::size_t(j)];
  }
}

struct Workload {
  const char* table;
  Problem problem;
  rlx::ir::Graph graph;
  std::vector<std::pair<std::string, std::function<void(const Problem&, float*)>>> peers;
};

bool run(Workload& w, const bench::Args& args, const bench::Budget& budget) {
  const Problem& p = w.problem;
  bool ok = true;
  rlx::Buffer x = rlx::Buffer::f32({p.rows, p.cols}, p.x);
  std::vector<const rlx::Buffer*> leaves{&x};
  rlx::Buffer g, b; // layer norm's gamma and beta
  if (!p.gamma.empty()) {
    g = rlx::Buffer::f32({p.cols}, p.gamma);
    b = rlx::Buffer::f32({p.cols}, p.beta);
    leaves = {&x, &g, &b};
  }
  auto exe = rlx::compile(w.graph, rlx::Backend::Jit);
  for (int threads : args.threads) {
    rlx::set_num_threads(threads);
    std::optional<bench::Stats> r = bench::check_and_time_run(
        *exe, leaves, std::string(w.table) + " rlx threads=" + std::to_string(threads), p.ref,
        budget);
    if (!r) {
      ok = false;
      continue;
    }
    bench::emit_time({w.table, "rlx", threads, p.rows * p.cols, true}, *r);
    if (threads != 1) continue;
    for (auto& [name, fn] : w.peers) {
      std::vector<float> yp(p.x.size());
      fn(p, yp.data());
      if (!bench::check(std::string(w.table) + " " + name, yp, p.ref)) {
        ok = false;
        continue;
      }
      bench::Stats s = bench::measure(
          [&] {
            fn(p, yp.data());
            bench::clobber(yp.data());
          },
          budget);
      bench::emit_time({w.table, name, 1, p.rows * p.cols}, s);
    }
  }
  return ok;
}

} // namespace

int main(int argc, char** argv) {
  bench::Args args = bench::parse_args(argc, argv, {});
  const bench::Budget budget = bench::budget_of(args);
  using namespace rlx::ir;

  Workload sm{
      kSoftmax, {4096, 1024, bench::weyl(4096 * 1024, 0), {}, {}, {}}, Graph("softmax"), {}};
  sm.problem.ref = softmax_ref(sm.problem);
  NodeId xs = sm.graph.input("x", Shape({4096, 1024}, DType::F32));
  sm.graph.set_outputs({sm.graph.sm(xs, -1)});
  sm.peers = {{"Eigen 3.4", eigen_softmax}, {"C++ loop (-O3, std::exp)", loop_softmax}};

  Workload ln{kNorm,
              {512, 768, bench::weyl(512 * 768, 7), bench::weyl(768, 11), bench::weyl(768, 13), {}},
              Graph("layer_norm"),
              {}};
  for (float& v : ln.problem.gamma) v = 1.0f + v / 8.0f;
  ln.problem.ref = norm_ref(ln.problem);
  NodeId xn = ln.graph.input("x", Shape({512, 768}, DType::F32));
  NodeId gn = ln.graph.input("gamma", Shape({768}, DType::F32));
  NodeId bn = ln.graph.input("beta", Shape({768}, DType::F32));
  ln.graph.set_outputs({ln.graph.ln(xn, gn, bn, 1e-5f)});
  ln.peers = {{"Eigen 3.4", eigen_norm}, {"C++ loop (-O3)", loop_norm}};

  for (const char* t : {kSoftmax, kNorm}) {
    bench::emit_note(t, "rlx: rlx::compile(graph, Backend::Jit), timed Executable::run (allocates "
                        "and returns the output); 1 and 2 threads");
    bench::emit_note(t, "Eigen 3.4 row expressions and a plain loop write into a preallocated "
                        "array, one thread; -O3 -march=native");
  }
  bench::emit_note(kSoftmax, "softmax over the last axis of f32[4096, 1024], x in [-4, 4)");
  bench::emit_note(kNorm, "layer norm over the last axis of f32[512, 768] with gamma, beta, "
                          "eps 1e-5");
  bool ok = run(sm, args, budget);
  ok = run(ln, args, budget) && ok;
  if (!ok) std::printf("FAILED: a peer computed wrong values (see the check lines)\n");
  return ok ? 0 : 1;
}
