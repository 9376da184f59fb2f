// jit/executable.cpp -- the JIT's Executable: native kernels and runtime steps in plan order.
#include "debug.hpp"
#include "gemm_step.hpp"
#include "library.hpp"
#include "lower.hpp"
#include "plan.hpp"
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
#include <mutex>

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
    else if (step.kind == Step::Kind::View)
      s += "view " + ir::node_to_text(g, step.node) + " (at byte " +
           std::to_string(*alias_view(g, g.node(step.node))) + ")\n";
    else if (step.kind == Step::Kind::Library)
      s += std::string(step.library->name) + " " + ir::node_to_text(g, step.node) + "\n";
    else
      s += "runtime " + ir::node_to_text(g, step.node) + "\n";
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
    view_offset_.assign(plan_.steps.size(), 0);
    root_.resize(g.len());
    for (std::size_t i = 0; i < g.len(); ++i) root_[i] = uint32_t(i);
    for (std::size_t i = 0; i < plan_.steps.size(); ++i)
      if (plan_.steps[i].kind == Step::Kind::View) {
        const ir::Node& n = g.node(plan_.steps[i].node);
        view_offset_[i] = *alias_view(g, n);
        root_[n.id.index] = root_[n.inputs[0].index];
      }
    library_.resize(plan_.steps.size()); // FFTW plans, attention's strides: made now, once
    for (std::size_t i = 0; i < plan_.steps.size(); ++i)
      if (plan_.steps[i].kind == Step::Kind::Library)
        library_[i] = plan_.steps[i].library->prepare(g, g.node(plan_.steps[i].node));
    description_ = plan_text(g, plan_, names, row_names, exe);
    if (debug.dump_lir) write_dump(debug, exe + ".lir.txt", description_);
    plan_memory();
  }

  std::vector<interp::Buffer> run(std::span<const interp::Buffer* const> leaves) const override {
    const ir::Graph& g = graph_;
    std::vector<interp::Buffer> owned(g.len());
    std::vector<const interp::Buffer*> values = interp::feed_leaves(g, leaves);
    for (const ir::Node& n : g.nodes())
      if (n.op.kind() == ir::OpKind::Constant) values[n.id.index] = &constants_[n.id.index];
    // The arena: the executable's own (warm from the last call) unless another thread is
    // running it, then one for this call from the memory pool.
    std::unique_lock arena_lock(arena_mutex_, std::defer_lock);
    Storage call_arena;
    std::byte* arena = nullptr;
    if (arena_bytes_) {
      if (arena_lock.try_lock()) {
        if (arena_.size() < arena_bytes_) arena_ = Storage(arena_bytes_, false);
        arena = arena_.data();
      } else {
        call_arena = Storage(arena_bytes_, false);
        arena = call_arena.data();
      }
    }
    // Where each value's elements are: leaves, constants and owned buffers, or an arena slot.
    std::vector<std::byte*> ptr(g.len(), nullptr);
    for (std::size_t i = 0; i < g.len(); ++i)
      if (values[i]) ptr[i] = const_cast<std::byte*>(values[i]->bytes().data());
    // The result of node `id` before its step writes it: its arena slot, or a new buffer.
    auto result = [&](ir::NodeId id) {
      if (slot_[id.index] != kNoSlot) return ptr[id.index] = arena + slot_[id.index];
      owned[id.index] = interp::Buffer::uninitialized(g.shape(id));
      values[id.index] = &owned[id.index];
      return ptr[id.index] = owned[id.index].bytes().data();
    };
    std::vector<void*> args;
    for (std::size_t step_index = 0; step_index < plan_.steps.size(); ++step_index) {
      const Step& step = plan_.steps[step_index];
      if (step.kind == Step::Kind::View) { // the operand's bytes from an offset on
        const ir::Node& n = g.node(step.node);
        ptr[n.id.index] = ptr[n.inputs[0].index] + view_offset_[step_index];
        continue;
      }
      if (step.kind == Step::Kind::Runtime) {
        const ir::Node& n = g.node(step.node);
        std::vector<const interp::Buffer*> ops;
        for (ir::NodeId in : n.inputs) ops.push_back(values[in.index]);
        owned[n.id.index] = interp::eval_node_of_graph(n, ops);
        values[n.id.index] = &owned[n.id.index];
        ptr[n.id.index] = owned[n.id.index].bytes().data();
        release(step_index, owned, values);
        continue;
      }
      if (step.kind == Step::Kind::Library) {
        const ir::Node& n = g.node(step.node);
        std::byte* out = result(n.id);
        std::vector<const std::byte*> reads;
        for (ir::NodeId in : row_reads(step)) reads.push_back(ptr[in.index]);
        library_[step_index]->run(reads.data(), out);
        release(step_index, owned, values);
        continue;
      }
      if (step.kind == Step::Kind::Gemm) {
        const ir::Node& n = g.node(step.node);
        std::byte* out = result(n.id);
        args.clear();
        for (ir::NodeId in : gemm_reads(g, n)) args.push_back(ptr[in.index]);
        args.push_back(out);
        gemms_[step_index]->run(args.data());
        release(step_index, owned, values);
        continue;
      }
      if (step.kind == Step::Kind::Row) {
        const ir::Node& n = g.node(step.node);
        std::byte* out = result(n.id);
        args.clear();
        for (ir::NodeId in : row_reads(step)) args.push_back(ptr[in.index]);
        args.push_back(out);
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
      for (ir::NodeId in : kern.buffers) args.push_back(ptr[in.index]);
      for (ir::NodeId out : kern.outputs) args.push_back(result(out));
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
    // Outputs never live in the arena (plan_arena), so nothing returned aliases it.
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
  /// The values each step makes (a kernel's outputs, else its node).
  std::vector<ir::NodeId> made_by(const Step& step) const {
    if (step.kind == Step::Kind::View) return {}; // no bytes of its own
    return step.kind == Step::Kind::Native ? plan_.kernels[step.kernel].outputs
                                           : std::vector<ir::NodeId>{step.node};
  }

  /// Liveness, computed once: the step after which each value computed here is last read, and
  /// from that an arena. Values that only native steps (kernels, GEMMs, library kernels) make
  /// and read, and that are not outputs, get a slot of one arena (64-byte aligned), placed
  /// largest first at the lowest offset no value live at the same time uses; the executable
  /// keeps the arena from call to call, so its pages stay mapped and warm, and nothing is
  /// zeroed (every kernel writes all of its result). The other values (outputs, which move to
  /// the caller, and the operands and results of the interpreter's kernels, which take
  /// interp::Buffers) are buffers of the memory pool, freed after their last reader so the next
  /// step reuses them while they are in cache.
  void plan_memory() {
    const ir::Graph& g = graph_;
    std::size_t steps = plan_.steps.size();
    std::vector<std::size_t> last_use(g.len(), 0), made_at(g.len(), 0);
    std::vector<char> pooled(g.len(), 0);
    for (ir::NodeId o : g.outputs) pooled[o.index] = 1;
    for (std::size_t s = 0; s < steps; ++s) {
      const Step& step = plan_.steps[s];
      std::vector<ir::NodeId> reads =
          step.kind == Step::Kind::Native ? plan_.kernels[step.kernel].buffers : row_reads(step);
      for (ir::NodeId in : reads) { // reading a view reads its root's bytes
        last_use[root_[in.index]] = s + 1;
        if (step.kind == Step::Kind::Runtime) pooled[in.index] = 1;
      }
      for (ir::NodeId id : made_by(step)) {
        made_at[id.index] = s;
        if (step.kind == Step::Kind::Runtime) pooled[id.index] = 1;
      }
    }
    releases_.assign(steps, {});
    slot_.assign(g.len(), kNoSlot);
    struct Value {
      uint32_t index;
      std::size_t first, last, bytes;
    };
    std::vector<Value> arena_values;
    for (std::size_t s = 0; s < steps; ++s)
      for (ir::NodeId id : made_by(plan_.steps[s])) {
        bool output = std::find(g.outputs.begin(), g.outputs.end(), id) != g.outputs.end();
        std::size_t last = last_use[id.index] ? last_use[id.index] - 1 : s; // unread: now
        if (pooled[id.index]) {
          if (!output) releases_[last].push_back(id.index);
          continue;
        }
        std::size_t bytes = std::size_t(g.shape(id).size_bytes().value_or(0));
        arena_values.push_back({id.index, s, std::max(last, s), (bytes + 63) / 64 * 64});
      }
    std::sort(arena_values.begin(), arena_values.end(), [](const Value& a, const Value& b) {
      return a.bytes != b.bytes ? a.bytes > b.bytes : a.index < b.index;
    });
    std::vector<const Value*> placed;
    arena_bytes_ = 0;
    for (const Value& v : arena_values) {
      // Slots of values live at the same time, by offset; take the first gap that fits.
      std::vector<std::pair<std::size_t, std::size_t>> busy;
      for (const Value* p : placed)
        if (p->first <= v.last && v.first <= p->last)
          busy.emplace_back(slot_[p->index], slot_[p->index] + p->bytes);
      std::sort(busy.begin(), busy.end());
      std::size_t at = 0;
      for (auto [lo, hi] : busy) {
        if (at + v.bytes <= lo) break;
        at = std::max(at, hi);
      }
      slot_[v.index] = at;
      arena_bytes_ = std::max(arena_bytes_, at + v.bytes);
      placed.push_back(&v);
    }
  }

  /// The buffers a Row, Gemm, Library, View or Runtime step reads, in its kernel's argument
  /// order: the node's operands, the first one replaced by its prologue's operands when it has one.
  std::vector<ir::NodeId> row_reads(const Step& step) const {
    if (step.kind == Step::Kind::Gemm) return gemm_reads(graph_, graph_.node(step.node));
    if (step.kind == Step::Kind::Library)
      return step.library->reads(graph_, graph_.node(step.node));
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

  static constexpr std::size_t kNoSlot = ~std::size_t(0);
  std::vector<std::vector<uint32_t>> releases_; ///< per step: pooled values last read there
  std::vector<std::size_t> slot_;               ///< per node: arena offset, or kNoSlot
  std::vector<uint32_t> root_;        ///< per node: the node whose bytes it is (views), or itself
  std::vector<uint64_t> view_offset_; ///< per step index, for View steps: bytes into the operand
  std::size_t arena_bytes_ = 0;
  mutable std::mutex arena_mutex_; ///< guards arena_ (a call that finds it taken makes its own)
  mutable Storage arena_;
  std::vector<NativeKernel> row_kernels_;             ///< per step index, for Row steps
  std::vector<std::unique_ptr<GemmStep>> gemms_;      ///< per step index, for Gemm steps
  std::vector<std::unique_ptr<LibraryCall>> library_; ///< per step index, for Library steps
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
