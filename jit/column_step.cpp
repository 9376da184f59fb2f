// jit/column_step.cpp -- sums and means over leading axes as a JIT step: reduce_sum/mean of a
// static f32 or f64 [R, D] block layout (every reduced axis before every kept one, size-1 axes
// aside) into its D columns. Such reductions are the gradients of biases and of layer norms'
// gains (a sum over the batch and sequence of [B, S, D]); the row kernels reduce trailing axes
// only, so these ran on the interpreter's kernel. Each column accumulates in double and adds
// its rows in increasing order, as the interpreter does (src/interp/reduce.cpp,
// sum_in_blocks): the results are the interpreter's bit for bit. Threads split the columns.
#include "steps.hpp"
#include "thread_pool.hpp"

#include <algorithm>
#include <optional>

namespace rlx::jit {

namespace {

/// Elements a thread's share should hold at least (as for the element-wise kernels).
constexpr int64_t kParallelGrain = 1 << 15;
/// Columns summed in one pass over the rows: 4 KiB of double accumulators, kept in L1.
constexpr int64_t kBlock = 512;

struct Columns {
  int64_t rows = 0, cols = 0;
};

/// The [rows, cols] blocks of n when a column step takes it.
std::optional<Columns> columns_of(const ir::Graph& g, const ir::Node& n) {
  ir::OpKind k = n.op.kind();
  if (k != ir::OpKind::ReduceSum && k != ir::OpKind::ReduceMean) return std::nullopt;
  const ir::Shape& in = g.shape(n.inputs[0]);
  ir::DType t = in.dtype();
  if ((t != ir::DType::F32 && t != ir::DType::F64) || n.shape.dtype() != t || !in.is_static() ||
      !n.shape.is_static())
    return std::nullopt;
  std::vector<int64_t> sizes = in.sizes();
  std::vector<bool> reduced(sizes.size(), false);
  const int64_t rank = int64_t(sizes.size());
  for (int64_t a : n.op.attrs<ir::ReduceAttrs>().axes)
    reduced[std::size_t(a < 0 ? a + rank : a)] = true;
  Columns c{1, 1};
  bool kept_seen = false;
  for (std::size_t a = 0; a < sizes.size(); ++a) {
    if (sizes[a] == 1) continue;
    if (reduced[a] && kept_seen) return std::nullopt; // a reduced axis after a kept one
    kept_seen = kept_seen || !reduced[a];
    (reduced[a] ? c.rows : c.cols) *= sizes[a];
  }
  if (c.rows < 2 || c.cols < 2) return std::nullopt; // nothing to add, or one sum: a row kernel's
  return c;
}

/// out[c] = the sum (or mean) of x[r * cols + c] over r, for columns [c0, c1).
template <class T>
void column_sums(const T* x, T* out, int64_t rows, int64_t cols, int64_t c0, int64_t c1,
                 bool mean) {
  double acc[kBlock];
  for (int64_t b = c0; b < c1; b += kBlock) {
    const int64_t w = std::min(kBlock, c1 - b);
    std::fill(acc, acc + w, 0.0);
    for (int64_t r = 0; r < rows; ++r) {
      const T* row = x + r * cols + b;
      for (int64_t j = 0; j < w; ++j) acc[j] += double(row[j]);
    }
    for (int64_t j = 0; j < w; ++j) out[b + j] = T(mean ? acc[j] / double(rows) : acc[j]);
  }
}

class ColumnStep final : public PreparedStep {
public:
  ColumnStep(Columns c, bool mean, bool f64, const ir::LirStep& step)
      : c_(c), mean_(mean), f64_(f64), step_(step) {}
  void run(RunState& s) const override {
    s.gather_reads(step_);
    const void* x = s.args[0];
    void* out = s.result(step_.node);
    // Whole blocks of 16 columns (64-byte lines of f32) per thread.
    const int64_t groups = (c_.cols + 15) / 16;
    const int64_t grain = std::max<int64_t>(1, kParallelGrain / (16 * c_.rows));
    threads::parallel_for(groups, grain, [&](int64_t b, int64_t e) {
      const int64_t c0 = b * 16, c1 = std::min(e * 16, c_.cols);
      if (f64_)
        column_sums(static_cast<const double*>(x), static_cast<double*>(out), c_.rows, c_.cols, c0,
                    c1, mean_);
      else
        column_sums(static_cast<const float*>(x), static_cast<float*>(out), c_.rows, c_.cols, c0,
                    c1, mean_);
    });
  }

private:
  Columns c_;
  bool mean_, f64_;
  const ir::LirStep& step_;
};

class ColumnRule final : public JitRule {
public:
  using JitRule::JitRule;
  bool takes(const ir::Graph& g, const ir::Node& n) const override {
    return columns_of(g, n).has_value();
  }
  std::unique_ptr<PreparedStep> prepare(PrepareContext& c, std::size_t i) const override {
    const ir::LirStep& step = c.lir.steps[i];
    const ir::Node& n = c.lir.mir.node(step.node);
    return std::make_unique<ColumnStep>(*columns_of(c.lir.mir, n),
                                        n.op.kind() == ir::OpKind::ReduceMean,
                                        n.shape.dtype() == ir::DType::F64, step);
  }
};

} // namespace

const JitRule& column_rule() {
  static const ColumnRule rule("column");
  return rule;
}

} // namespace rlx::jit
