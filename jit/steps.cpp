// jit/steps.cpp -- the JIT's step policy and its rules for fused element-wise kernels, row
// kernels, views and interpreter steps (GEMM: jit/gemm_step.cpp; library kernels:
// jit/library.cpp).
#include "steps.hpp"

#include "lower.hpp"
#include "thread_pool.hpp"
#include "llvm/session.hpp"

#include "interp/scan_loop.hpp"
#include "rlx/ir/text.hpp"
#include "rlx/runtime.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string_view>

namespace rlx::jit {

namespace {

/// Kernels split across threads in chunks of at least this many elements (smaller ones are not
/// worth waking a thread for).
constexpr int64_t kParallelGrain = 1 << 15;

/// RLX_LOG=compile: one line per kernel.
void log_compile(const ir::Graph& g, const std::vector<ir::NodeId>& nodes, const ir::Shape& shape,
                 const std::string& name, std::chrono::steady_clock::time_point t0) {
  std::chrono::duration<double, std::milli> ms = std::chrono::steady_clock::now() - t0;
  std::string ops;
  for (ir::NodeId id : nodes) {
    if (!ops.empty()) ops += ',';
    ops += g.node(id).op.name();
  }
  CompileRecord rec = last_compile();
  char time[32];
  std::snprintf(time, sizeof time, "%.3f", ms.count());
  log_line("rlx: compile " + name + " ops=" + ops + " shape=" + ir::short_str(shape) +
           " from=" + origin_name(rec.origin) + " ms=" + time + " symbol=" + rec.symbol);
}

/// RLX_TIERS=0 keeps every kernel's first code (see ElementwiseStep::count_work).
bool tiers_enabled() {
  static const bool on = [] {
    const char* env = std::getenv("RLX_TIERS");
    return env == nullptr || std::string_view(env) != "0";
  }();
  return on;
}

/// Elements a first-tier kernel computes before it is compiled again by the full code generator:
/// about 6 ms of the 16-op chain of bench/bench_elementwise, which the recompile (4 ms) makes
/// 1.4x faster on a Zen 4 (see jit.md, "Tiers").
constexpr int64_t kHotElements = int64_t(1) << 23;

class ElementwiseStep final : public PreparedStep {
public:
  ElementwiseStep(NativeKernel code, int64_t n, const ir::LirStep& step, const ir::Graph& g,
                  const ir::FusedKernel& k, std::string name)
      : code_(std::move(code)), n_(n), step_(step), g_(g), k_(k), name_(std::move(name)),
        fn_(code_.fn), tiered_(code_.code && code_.code->fast_codegen() && tiers_enabled()) {}
  void run(RunState& s) const override {
    s.gather_reads(step_);
    for (ir::NodeId out : step_.writes) s.args.push_back(s.result(out));
    run_on(s.args.data());
  }
  std::unique_ptr<BoundStep> bind(RunState& s, const ir::LirStep&) const override {
    s.gather_reads(step_);
    for (ir::NodeId out : step_.writes) s.args.push_back(s.result(out));
    // One chunk is one call of the kernel on this thread (run_on): nothing held.
    return std::make_unique<BoundArgs<ElementwiseStep>>(*this, s.args, n_ <= kParallelGrain);
  }
  /// bufs: the reads' elements, then the writes'.
  void run_on(void* const* bufs) const {
    KernelFn fn = fn_.load(std::memory_order_acquire);
    int64_t n = n_;
    if (n <= kParallelGrain) { // one chunk: called here, not through the pool's std::function
      if (n > 0) fn(bufs, 0, n);
      return;
    }
    // Threads take whole 16-element blocks, so each range starts 64-byte aligned (f32) and
    // its vector stores do not split cache lines (and may stream, see lower_elementwise).
    constexpr int64_t kBlock = 16;
    threads::parallel_for(
        (n + kBlock - 1) / kBlock, kParallelGrain / kBlock,
        [&](int64_t b, int64_t e) { fn(bufs, b * kBlock, std::min(e * kBlock, n)); });
    if (tiered_) count_work(n);
  }

private:
  /// The tiers: a large kernel's first code comes from the fast code generator (a cold compile
  /// of half the time), and once the kernel has computed kHotElements, the thread that crosses
  /// the mark compiles it again with the full one and swaps it in; calls running meanwhile keep
  /// the first code, which stays loaded with the step. A failed recompile keeps the first code.
  void count_work(int64_t n) const {
    if (claimed_.load(std::memory_order_relaxed) ||
        work_.fetch_add(n, std::memory_order_relaxed) + n < kHotElements || claimed_.exchange(true))
      return;
    try {
      auto t0 = std::chrono::steady_clock::now();
      full_ = lower_elementwise(g_, k_, name_, Tier::Full);
      fn_.store(full_.fn, std::memory_order_release);
      count_recompiled();
      if (debug_state().log_compile) log_compile(g_, k_.nodes, k_.shape, name_ + " (hot)", t0);
    } catch (const std::exception&) { // the first tier's code is correct: keep it
    }
  }

  NativeKernel code_;
  int64_t n_;
  const ir::LirStep& step_;
  const ir::Graph& g_;
  const ir::FusedKernel& k_;
  std::string name_;
  mutable std::atomic<KernelFn> fn_;
  bool tiered_;
  mutable std::atomic<int64_t> work_{0};
  mutable std::atomic<bool> claimed_{false};
  mutable NativeKernel full_; ///< written by the thread that claimed the recompile, before fn_
};

class ElementwiseRule final : public JitRule {
public:
  using JitRule::JitRule;
  bool takes(const ir::Graph& g, const ir::Node& n) const override { return lowers_natively(g, n); }
  std::unique_ptr<PreparedStep> prepare(PrepareContext& c, std::size_t i) const override {
    const ir::LirStep& step = c.lir.steps[i];
    const ir::FusedKernel& k = c.lir.kernels[step.kernel];
    const std::string& name = c.names.kernels[step.kernel];
    auto t0 = std::chrono::steady_clock::now();
    NativeKernel code = lower_elementwise(c.lir.mir, k, name);
    if (c.debug.log_compile) log_compile(c.lir.mir, k.nodes, k.shape, name, t0);
    return std::make_unique<ElementwiseStep>(std::move(code), *k.shape.num_elements(), step,
                                             c.lir.mir, k, name);
  }
};

class RowStep final : public PreparedStep {
public:
  RowStep(NativeKernel code, int64_t rows, int64_t len, const ir::LirStep& step)
      : code_(std::move(code)), rows_(rows), len_(len), step_(step) {}
  void run(RunState& s) const override {
    s.gather_reads(step_);
    s.args.push_back(s.result(step_.node));
    // The row length follows the buffers (lower_row): one kernel serves every length.
    s.args.push_back(reinterpret_cast<void*>(static_cast<intptr_t>(len_)));
    run_on(s.args.data());
  }
  std::unique_ptr<BoundStep> bind(RunState& s, const ir::LirStep&) const override {
    s.gather_reads(step_);
    s.args.push_back(s.result(step_.node));
    s.args.push_back(reinterpret_cast<void*>(static_cast<intptr_t>(len_)));
    return std::make_unique<BoundArgs<RowStep>>(*this, s.args);
  }
  /// bufs: the reads' elements, the result's, then the row length.
  void run_on(void* const* bufs) const {
    KernelFn fn = code_.fn;
    threads::parallel_for(rows_, std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(len_, 1)),
                          [&](int64_t b, int64_t e) { fn(bufs, b, e); });
  }

private:
  NativeKernel code_;
  int64_t rows_, len_;
  const ir::LirStep& step_;
};

class RowRule final : public JitRule {
public:
  using JitRule::JitRule;
  bool takes(const ir::Graph& g, const ir::Node& n) const override { return lowers_as_row(g, n); }
  bool takes_prologue(const ir::Graph& g, const ir::Node& n,
                      const ir::FusedKernel& k) const override {
    return fits_row_prologue(g, n, k);
  }
  std::unique_ptr<PreparedStep> prepare(PrepareContext& c, std::size_t i) const override {
    const ir::LirStep& step = c.lir.steps[i];
    const ir::Graph& g = c.lir.mir;
    const ir::Node& n = g.node(step.node);
    std::string& name = c.names.steps[i] = kernel_name();
    const ir::FusedKernel* prologue =
        step.kernel == ir::kNoKernel ? nullptr : &c.lir.kernels[step.kernel];
    auto t0 = std::chrono::steady_clock::now();
    NativeKernel code = lower_row(g, n, name, prologue);
    if (c.debug.log_compile) log_compile(g, step.nodes, n.shape, name, t0);
    int64_t rows = row_count(g, n);
    int64_t len = rows ? *g.shape(n.inputs[0]).num_elements() / rows : 1;
    return std::make_unique<RowStep>(std::move(code), rows, len, step);
  }
};

/// The operand's bytes from an offset on: a pointer addition.
class ViewStep final : public PreparedStep {
public:
  ViewStep(uint64_t offset, const ir::Node& n) : offset_(offset), node_(n.id), of_(n.inputs[0]) {}
  void run(RunState& s) const override { s.ptr[node_.index] = s.ptr[of_.index] + offset_; }
  std::unique_ptr<BoundStep> bind(RunState& s, const ir::LirStep&) const override {
    run(s); // the operand's address is fixed, so is the view's: nothing to do per call
    return nullptr;
  }

private:
  uint64_t offset_;
  ir::NodeId node_, of_;
};

class ViewRule final : public JitRule {
public:
  using JitRule::JitRule;
  bool takes(const ir::Graph& g, const ir::Node& n) const override {
    return ir::view_offset(g, n).has_value();
  }
  std::unique_ptr<PreparedStep> prepare(PrepareContext& c, std::size_t i) const override {
    const ir::Node& n = c.lir.mir.node(c.lir.steps[i].node);
    return std::make_unique<ViewStep>(*ir::view_offset(c.lir.mir, n), n);
  }
};

/// One node on the interpreter's kernel (it takes and makes Buffers).
class InterpStep final : public PreparedStep {
public:
  explicit InterpStep(const ir::Node& n) : node_(n) {}
  void run(RunState& s) const override {
    std::vector<const Buffer*> ops;
    for (ir::NodeId in : node_.inputs) ops.push_back(s.values[in.index]);
    uint32_t i = node_.id.index;
    s.owned[i] = interp::eval_node_of_graph(node_, ops);
    s.values[i] = &s.owned[i];
    s.ptr[i] = s.owned[i].bytes().data();
  }

private:
  const ir::Node& node_;
};

/// A scan (or its backward) as a runtime step whose loop over time calls its bodies compiled by
/// the JIT, once per executable (not the interpreter node by node at every step), through their
/// raw-pointer entries: a step reads the carry and x_t where they are and writes where the loop
/// wants (a trajectory row, one of a pair of carries), allocating nothing.
class ScanStep final : public PreparedStep {
public:
  explicit ScanStep(const ir::Node& n) : node_(n) {
    const ir::AnyAttrs& a = n.op.any_attrs();
    if (const auto* s = std::get_if<ir::ScanAttrs>(&a)) {
      add(s->body);
    } else if (const auto* b = std::get_if<ir::ScanBackwardAttrs>(&a)) {
      add(b->body_vjp);
      if (b->forward_body) add(*b->forward_body);
    }
  }
  /// Whether n is of the scan family (its attributes say so).
  static bool of(const ir::Node& n) {
    const ir::AnyAttrs& a = n.op.any_attrs();
    return std::holds_alternative<ir::ScanAttrs>(a) ||
           std::holds_alternative<ir::ScanBackwardAttrs>(a);
  }
  void run(RunState& s) const override {
    std::vector<const Buffer*> ops;
    for (ir::NodeId in : node_.inputs) ops.push_back(s.values[in.index]);
    // Each body's raw-pointer entry, made once for this run (one call per step after that).
    interp::detail::BodyRunner runner = [this](const ir::Graph& body) -> interp::detail::RawBody {
      for (const auto& [g, exe] : bodies_) {
        if (g != &body) continue;
        if (std::shared_ptr<RawEntry> e = raw_entry(*exe))
          return
              [e](const std::byte* const* leaves, std::byte* const* outs) { e->run(leaves, outs); };
        return interp::detail::buffered(
            body, [exe](const ir::Graph&, std::span<const Buffer* const> leaves) {
              return exe->run(leaves);
            });
      }
      return interp::detail::buffered(body, interp::run_leaves);
    };
    const ir::AnyAttrs& a = node_.op.any_attrs();
    uint32_t i = node_.id.index;
    if (std::holds_alternative<ir::ScanAttrs>(a))
      s.owned[i] = interp::detail::run_scan(node_, ops, runner);
    else
      s.owned[i] = interp::detail::run_scan_backward(
          node_, ops, node_.op.kind() == ir::OpKind::ScanBackwardXs, runner);
    s.values[i] = &s.owned[i];
    s.ptr[i] = s.owned[i].bytes().data();
  }

private:
  void add(const ir::SubGraph& body) {
    if (!body.get().has_dynamic_dims())
      bodies_.emplace_back(&body.get(), compile(body.get(), Backend::Jit));
  }
  const ir::Node& node_;
  std::vector<std::pair<const ir::Graph*, std::shared_ptr<const Executable>>> bodies_;
};

class InterpRule final : public JitRule {
public:
  using JitRule::JitRule;
  bool takes(const ir::Graph&, const ir::Node&) const override { return true; }
  std::unique_ptr<PreparedStep> prepare(PrepareContext& c, std::size_t i) const override {
    const ir::Node& n = c.lir.mir.node(c.lir.steps[i].node);
    if (ScanStep::of(n)) return std::make_unique<ScanStep>(n);
    return std::make_unique<InterpStep>(n);
  }
};

ir::StepPolicy make_policy(bool runtime_extents) {
  static const ElementwiseRule elementwise("kernel");
  static const RowRule row("row");
  static const ViewRule view("view");
  static const InterpRule interp("interp");
  ir::StepPolicy p;
  p.elementwise = &elementwise;
  p.row = &row;
  p.view = &view;
  p.runtime = &interp;
  p.native.push_back(&gemm_rule());
  p.native.push_back(&column_rule());
  for (const JitRule* r : library_rules()) p.native.push_back(r);
  p.start = &collective_start_rule();
  p.wait = &collective_wait_rule();
  p.runtime_extents = runtime_extents;
  p.view_alignment = 64; // as aligned as any buffer: every kernel may read a view
  p.runtime_in_arena = false;
  return p;
}

/// A bound step that runs its prepared step on the bound call's state.
class RunBound final : public BoundStep {
public:
  RunBound(const PreparedStep& step, RunState& s) : step_(step), s_(s) {}
  void run() override { step_.run(s_); }

private:
  const PreparedStep& step_;
  RunState& s_;
};

} // namespace

std::unique_ptr<BoundStep> PreparedStep::bind(RunState& s, const ir::LirStep& step) const {
  for (ir::NodeId id : step.writes) s.result(id);
  return std::make_unique<RunBound>(*this, s);
}

std::string kernel_name() {
  static std::atomic<uint64_t> next{0};
  return "rlx_k" + std::to_string(next.fetch_add(1));
}

const ir::StepPolicy& step_policy() {
  static const ir::StepPolicy generic = make_policy(true), specialized = make_policy(false);
  return extent_policy() == ExtentPolicy::Generic ? generic : specialized;
}

ir::PlanOptions plan_options() {
  return {.alignment = 64, .outputs_in_arena = false, .policy = &step_policy()};
}

} // namespace rlx::jit
