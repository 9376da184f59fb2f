// jit/executable.cpp -- the JIT's Executable: native kernels and runtime steps in plan order.
#include "debug.hpp"
#include "gemm_step.hpp"
#include "lower.hpp"
#include "plan.hpp"
#include "runtime/fftw_kernels.hpp"
#include "runtime/jit_backend.hpp"
#include "runtime/thread_pool.hpp"
#include "llvm/session.hpp"

#include "rlx/ir/text.hpp"
#include "rlx/ir/verify.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <memory>

namespace rlx::jit {

namespace {

/// Element-wise kernels split across threads in chunks of at least this many elements (smaller
/// ones are not worth waking a thread for).
constexpr int64_t kParallelGrain = 1 << 15;

/// Kernel modules are named uniquely in the process (logs and dump files use the name; the
/// session renames the code after its content).
std::string kernel_name() {
  static std::atomic<uint64_t> next{0};
  return "rlx_k" + std::to_string(next.fetch_add(1));
}

/// Executables are numbered in the process for their dump files.
std::string executable_name() {
  static std::atomic<uint64_t> next{0};
  return "rlx_g" + std::to_string(next.fetch_add(1));
}

std::string id_list(const std::vector<ir::NodeId>& ids) {
  std::string s;
  for (ir::NodeId id : ids) s += (s.empty() ? "%" : " %") + std::to_string(id.index);
  return s;
}

/// RLX_DUMP=lir: the kernels (nodes, iteration space, operands, results) and the steps.
/// `names` are the element-wise kernels' names, `row_names` the row kernels' by step index.
std::string plan_text(const ir::Graph& g, const Plan& plan, const std::vector<std::string>& names,
                      const std::vector<std::string>& row_names, const std::string& exe) {
  std::string s = "# " + exe + ": the plan of graph @" + g.name + ", " +
                  std::to_string(plan.kernels.size()) + " kernels, " +
                  std::to_string(plan.steps.size()) + " steps\n";
  for (std::size_t k = 0; k < plan.kernels.size(); ++k) {
    const EwKernel& kern = plan.kernels[k];
    s += "kernel " + names[k] + " over " + ir::short_str(kern.shape) +
         (kern.row_prologue ? " (a row kernel's prologue)" : "") + "\n";
    s += "  inputs: " + id_list(kern.inputs) + " (buffers " + id_list(kern.buffers) + ")\n";
    for (ir::NodeId id : kern.nodes) s += "    " + ir::node_to_text(g, id) + "\n";
    s += "  outputs: " + id_list(kern.outputs) + "\n";
  }
  s += "steps:\n";
  for (std::size_t i = 0; i < plan.steps.size(); ++i) {
    const Step& step = plan.steps[i];
    s += "  " + std::to_string(i) + ": ";
    if (step.kind == Step::Kind::Native)
      s += "kernel " + names[step.kernel] + "\n";
    else if (step.kind == Step::Kind::Gemm)
      s += "gemm " + ir::node_to_text(g, step.node) + "\n";
    else if (step.kind == Step::Kind::Row)
      s += "row kernel " + row_names[i] + ": " + ir::node_to_text(g, step.node) +
           (step.prologue ? " (operand 0 computed by " + names[step.kernel] + ")" : "") + "\n";
    else
      s += std::string(runtime::fftw_handles(g.node(step.node)) ? "fftw " : "runtime ") +
           ir::node_to_text(g, step.node) + "\n";
  }
  return s;
}

/// RLX_LOG=compile: one line per kernel.
void log_compile(const ir::Graph& g, const EwKernel& kern, const std::string& name, double ms) {
  std::string ops;
  for (ir::NodeId id : kern.nodes) {
    if (!ops.empty()) ops += ',';
    ops += g.node(id).op.name();
  }
  CompileRecord rec = last_compile();
  char time[32];
  std::snprintf(time, sizeof time, "%.3f", ms);
  log_line("rlx: compile " + name + " ops=" + ops + " shape=" + ir::short_str(kern.shape) +
           " from=" + origin_name(rec.origin) + " ms=" + time + " symbol=" + rec.symbol);
}

class JitExecutable final : public Executable {
public:
  explicit JitExecutable(const ir::Graph& g) : graph_(g), plan_(make_plan(g)) {
    constants_.resize(g.len());
    for (const ir::Node& n : g.nodes())
      if (n.op.kind() == ir::OpKind::Constant) constants_[n.id.index] = interp::eval_node(n, {});
    DebugState debug = debug_state();
    std::string exe = executable_name();
    if (debug.dump_graph) write_dump(debug, exe + ".graph.txt", ir::to_text(g));
    std::vector<std::string> names;
    for (std::size_t k = 0; k < plan_.kernels.size(); ++k) {
      names.push_back(kernel_name());
      if (plan_.kernels[k].row_prologue) { // compiled into its row kernel
        kernels_.emplace_back();
        continue;
      }
      auto t0 = std::chrono::steady_clock::now();
      kernels_.push_back(lower_elementwise(g, plan_.kernels[k], names.back()));
      std::chrono::duration<double, std::milli> ms = std::chrono::steady_clock::now() - t0;
      if (debug.log_compile) log_compile(g, plan_.kernels[k], names.back(), ms.count());
    }
    row_kernels_.resize(plan_.steps.size());
    gemms_.resize(plan_.steps.size());
    std::vector<std::string> row_names(plan_.steps.size());
    for (std::size_t i = 0; i < plan_.steps.size(); ++i) {
      const Step& step = plan_.steps[i];
      if (step.kind == Step::Kind::Gemm)
        gemms_[i] = std::make_unique<GemmStep>(lower_gemm(g, g.node(step.node), kernel_name()));
      if (step.kind != Step::Kind::Row) continue;
      std::string& name = row_names[i] = kernel_name();
      auto t0 = std::chrono::steady_clock::now();
      const EwKernel* prologue = step.prologue ? &plan_.kernels[step.kernel] : nullptr;
      row_kernels_[i] = lower_row(g, g.node(step.node), name, prologue);
      std::chrono::duration<double, std::milli> ms = std::chrono::steady_clock::now() - t0;
      const ir::Node& n = g.node(step.node);
      if (debug.log_compile) {
        EwKernel logged{{n.id}, n.inputs, {n.id}, n.shape};
        if (prologue)
          logged.nodes.insert(logged.nodes.begin(), prologue->nodes.begin(), prologue->nodes.end());
        log_compile(g, logged, name, ms.count());
      }
    }
    for (const Step& step : plan_.steps) // FFTW plans are made now, once per shape
      if (step.kind == Step::Kind::Runtime && runtime::fftw_handles(g.node(step.node)))
        runtime::fftw_prepare(g.node(step.node));
    description_ = plan_text(g, plan_, names, row_names, exe);
    if (debug.dump_lir) write_dump(debug, exe + ".lir.txt", description_);
    plan_releases();
  }

  std::vector<interp::Buffer> run(std::span<const interp::Buffer* const> leaves) const override {
    const ir::Graph& g = graph_;
    std::vector<interp::Buffer> owned(g.len());
    std::vector<const interp::Buffer*> values = interp::feed_leaves(g, leaves);
    for (const ir::Node& n : g.nodes())
      if (n.op.kind() == ir::OpKind::Constant) values[n.id.index] = &constants_[n.id.index];
    std::vector<void*> args;
    for (std::size_t step_index = 0; step_index < plan_.steps.size(); ++step_index) {
      const Step& step = plan_.steps[step_index];
      if (step.kind == Step::Kind::Runtime) {
        const ir::Node& n = g.node(step.node);
        std::vector<const interp::Buffer*> ops;
        for (ir::NodeId in : n.inputs) ops.push_back(values[in.index]);
        owned[n.id.index] = runtime::fftw_handles(n) ? runtime::fftw_run(n, *ops[0])
                                                     : interp::eval_node_of_graph(n, ops);
        values[n.id.index] = &owned[n.id.index];
        release(step_index, owned, values);
        continue;
      }
      if (step.kind == Step::Kind::Gemm) {
        const ir::Node& n = g.node(step.node);
        owned[n.id.index] = interp::Buffer::uninitialized(n.shape);
        values[n.id.index] = &owned[n.id.index];
        args.clear();
        for (ir::NodeId in : gemm_reads(g, n))
          args.push_back(const_cast<std::byte*>(values[in.index]->bytes().data()));
        args.push_back(owned[n.id.index].bytes().data());
        gemms_[step_index]->run(args.data());
        release(step_index, owned, values);
        continue;
      }
      if (step.kind == Step::Kind::Row) {
        const ir::Node& n = g.node(step.node);
        owned[n.id.index] = interp::Buffer::uninitialized(n.shape);
        values[n.id.index] = &owned[n.id.index];
        args.clear();
        for (ir::NodeId in : row_reads(step))
          args.push_back(const_cast<std::byte*>(values[in.index]->bytes().data()));
        args.push_back(owned[n.id.index].bytes().data());
        void* const* bufs = args.data();
        int64_t rows = row_count(g, n);
        int64_t len = rows ? *g.shape(n.inputs[0]).num_elements() / rows : 1;
        KernelFn fn = row_kernels_[step_index].fn;
        runtime::parallel_for(rows,
                              std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(len, 1)),
                              [&](int64_t b, int64_t e) { fn(bufs, b, e); });
        release(step_index, owned, values);
        continue;
      }
      const EwKernel& kern = plan_.kernels[step.kernel];
      args.clear();
      for (ir::NodeId in : kern.buffers)
        args.push_back(const_cast<std::byte*>(values[in.index]->bytes().data()));
      for (ir::NodeId out : kern.outputs) {
        owned[out.index] = interp::Buffer::uninitialized(g.shape(out));
        values[out.index] = &owned[out.index];
        args.push_back(owned[out.index].bytes().data());
      }
      int64_t n = 1;
      for (int64_t s : kern.shape.sizes()) n *= s;
      KernelFn fn = kernels_[step.kernel].fn;
      void* const* bufs = args.data();
      // Threads take whole 16-element blocks, so each range starts 64-byte aligned (f32) and
      // its vector stores do not split cache lines (and may stream, see lower_elementwise).
      constexpr int64_t kBlock = 16;
      runtime::parallel_for(
          (n + kBlock - 1) / kBlock, kParallelGrain / kBlock,
          [&](int64_t b, int64_t e) { fn(bufs, b * kBlock, std::min(e * kBlock, n)); });
      release(step_index, owned, values);
    }
    // Results computed here move out (the last time an output appears); the others copy.
    std::vector<interp::Buffer> outs;
    for (std::size_t o = 0; o < g.outputs.size(); ++o) {
      uint32_t i = g.outputs[o].index;
      bool last = std::find_if(g.outputs.begin() + std::ptrdiff_t(o) + 1, g.outputs.end(),
                               [&](ir::NodeId id) { return id.index == i; }) == g.outputs.end();
      if (last && values[i] == &owned[i])
        outs.push_back(std::move(owned[i]));
      else
        outs.push_back(*values[i]);
    }
    return outs;
  }

  const ir::Graph& graph() const override { return graph_; }
  Backend backend() const override { return Backend::Jit; }
  std::string describe() const override { return description_; }

private:
  /// Liveness: after each step, the values computed here that no later step reads and that
  /// are not outputs; run() frees them then, so their memory returns to the pool
  /// (rlx/memory.hpp) and the next step's results reuse it while it is still in cache.
  void plan_releases() {
    const ir::Graph& g = graph_;
    std::vector<std::size_t> last_use(g.len(), 0);
    std::vector<char> keep(g.len(), 0);
    for (ir::NodeId o : g.outputs) keep[o.index] = 1;
    for (std::size_t s = 0; s < plan_.steps.size(); ++s) {
      const Step& step = plan_.steps[s];
      std::vector<ir::NodeId> reads =
          step.kind == Step::Kind::Native ? plan_.kernels[step.kernel].buffers : row_reads(step);
      for (ir::NodeId in : reads) last_use[in.index] = s + 1;
    }
    releases_.assign(plan_.steps.size(), {});
    for (std::size_t s = 0; s < plan_.steps.size(); ++s) {
      const Step& step = plan_.steps[s];
      std::vector<ir::NodeId> made = step.kind == Step::Kind::Native
                                         ? plan_.kernels[step.kernel].outputs
                                         : std::vector<ir::NodeId>{step.node};
      for (ir::NodeId id : made) {
        if (keep[id.index]) continue;
        std::size_t at = last_use[id.index] ? last_use[id.index] - 1 : s; // unread: free now
        releases_[at].push_back(id.index);
      }
    }
  }

  /// The buffers a Row or Runtime step reads, in its kernel's argument order: the node's
  /// operands, the first one replaced by its prologue's operands when it has one.
  std::vector<ir::NodeId> row_reads(const Step& step) const {
    if (step.kind == Step::Kind::Gemm) return gemm_reads(graph_, graph_.node(step.node));
    const std::vector<ir::NodeId>& in = graph_.node(step.node).inputs;
    if (!step.prologue) return in;
    std::vector<ir::NodeId> reads = plan_.kernels[step.kernel].buffers;
    reads.insert(reads.end(), in.begin() + 1, in.end());
    return reads;
  }

  void release(std::size_t step, std::vector<interp::Buffer>& owned,
               std::vector<const interp::Buffer*>& values) const {
    for (uint32_t i : releases_[step]) {
      owned[i] = interp::Buffer();
      values[i] = nullptr;
    }
  }

  std::vector<std::vector<uint32_t>> releases_;
  std::vector<NativeKernel> row_kernels_;        ///< per step index, for Row steps
  std::vector<std::unique_ptr<GemmStep>> gemms_; ///< per step index, for Gemm steps
  ir::Graph graph_;
  Plan plan_;
  std::vector<interp::Buffer> constants_;
  std::vector<NativeKernel> kernels_;
  std::string description_; ///< the plan as text (describe(), RLX_DUMP=lir)
};

} // namespace

std::shared_ptr<const Executable> compile_graph(const ir::Graph& g) {
  ir::verify(g);
  return std::make_shared<JitExecutable>(g);
}

} // namespace rlx::jit
