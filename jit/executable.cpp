// jit/executable.cpp -- the JIT's Executable: the plan's steps, prepared once, run in order.
#include "debug.hpp"
#include "steps.hpp"

#include "rlx/host.hpp"
#include "rlx/ir/text.hpp"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <memory>

namespace rlx::jit {

namespace {

/// Executables are numbered in the process for their dump files.
std::string executable_name() {
  static std::atomic<uint64_t> next{0};
  return "rlx_g" + std::to_string(next.fetch_add(1));
}

/// What one call of a JitExecutable needs besides its leaves: the per-node tables and the
/// arena. Kept between calls (a call takes the executable's spare one and gives it back), so a
/// call allocates only what it returns.
struct CallScratch {
  std::vector<Buffer> owned;         ///< per node: Own values made by the call
  std::vector<const Buffer*> values; ///< per node: its buffer
  std::vector<std::byte*> ptr;       ///< per node: its elements
  std::vector<void*> args;           ///< a step's argument pointers
  std::vector<std::byte*> out_at;    ///< per node: run_into's output bytes, else null
  std::vector<Buffer*> out_values;   ///< per node: run_into's output Buffer, else null
  Storage arena;                     ///< Memory::arena_size bytes, warm from the last call
};

class JitExecutable final : public Executable {
public:
  explicit JitExecutable(ir::LirModule lir) : lir_(std::move(lir)) {
    const ir::Graph& mir = lir_.mir;
    constants_.resize(mir.len());
    for (ir::NodeId c : lir_.memory.io.constants)
      constants_[c.index] = interp::eval_node(mir.node(c), {});
    DebugState debug = debug_state();
    if (debug.dump_graph) write_dump(debug, name_ + ".graph.txt", ir::to_text(mir));
    for (std::size_t k = 0; k < lir_.kernels.size(); ++k) names_.kernels.push_back(kernel_name());
    names_.steps.resize(lir_.steps.size());
    PrepareContext context{lir_, names_, debug};
    // Code, FFTW plans and attention's strides: made now, once.
    for (std::size_t i = 0; i < lir_.steps.size(); ++i)
      steps_.push_back(static_cast<const JitRule*>(lir_.steps[i].rule)->prepare(context, i));
    if (debug.dump_lir) write_dump(debug, name_ + ".lir.txt", describe());
    // What every call starts from, and what it checks, worked out once.
    initial_values_.assign(mir.len(), nullptr);
    initial_ptr_.assign(mir.len(), nullptr);
    for (ir::NodeId c : lir_.memory.io.constants) {
      initial_values_[c.index] = &constants_[c.index];
      initial_ptr_[c.index] = const_cast<std::byte*>(constants_[c.index].bytes().data());
    }
    for (const ir::Node& n : mir.nodes())
      if (ir::has_trait(n.op.kind(), ir::kFed)) fed_.push_back(n.id.index);
    // Values a call may leave in its `owned` table: Own homes and the interpreter's results.
    for (std::size_t i = 0; i < mir.len(); ++i)
      if (lir_.memory.places[i].home == ir::Home::Own) own_.push_back(uint32_t(i));
    for (const ir::LirStep& st : lir_.steps)
      if (st.rule == lir_.policy->runtime && lir_.place(st.node).home != ir::Home::Own)
        own_.push_back(st.node.index);
    // An output returned again later is copied here; its last appearance moves.
    for (std::size_t o = 0; o < mir.outputs.size(); ++o)
      last_out_.push_back(std::find(mir.outputs.begin() + std::ptrdiff_t(o) + 1, mir.outputs.end(),
                                    mir.outputs[o]) == mir.outputs.end());
    for (const ir::LirStep& st : lir_.steps)
      if (st.rule == lir_.policy->runtime) has_runtime_steps_ = true;
  }

  ~JitExecutable() override { delete spare_.load(std::memory_order_acquire); }

  std::vector<Buffer> run(std::span<const Buffer* const> leaves) const override {
    rlx::detail::WorkScope work; // not to be abandoned: a safe point per step comes soon
    const ir::Graph& g = lir_.mir;
    // The leaves: as many as the graph's, each of its node's shape. Anything else is reported
    // by the interpreter's check, which names the leaf and both shapes.
    bool fits = leaves.size() == fed_.size();
    for (std::size_t k = 0; fits && k < fed_.size(); ++k)
      fits = leaves[k] != nullptr && leaves[k]->shape() == g.nodes()[fed_[k]].shape;
    if (!fits) {
      (void)interp::feed_leaves(g, leaves); // throws
      throw InternalError("jit: leaves the interpreter accepts were refused");
    }
    std::vector<Buffer> outs;
    execute(leaves, {}, &outs);
    return outs;
  }

  std::unique_ptr<RawEntry> raw() const;

  const ir::Graph& graph() const override { return lir_.mir; }
  Backend backend() const override { return Backend::Jit; }
  /// The plan as text (also RLX_DUMP=lir), printed when asked: not a cost of every compile.
  std::string describe() const override {
    return "# " + name_ + ": the plan of graph @" + lir_.mir.name + "\n" + lir_.to_string(names_);
  }

protected:
  void run_into_checked(std::span<const Buffer* const> leaves,
                        std::span<Buffer* const> outputs) const override {
    rlx::detail::WorkScope work;
    execute(leaves, outputs, nullptr);
  }
  std::unique_ptr<BoundCall> bind_checked(std::span<const Buffer* const> leaves,
                                          std::span<Buffer* const> outputs) const override;

private:
  friend class Frame;
  friend class Bound;

  /// One call on checked leaves: the results moved into `outs`, or (outs null) written into
  /// `outputs`, computed there in place where a step writes an output.
  void execute(std::span<const Buffer* const> leaves, std::span<Buffer* const> outputs,
               std::vector<Buffer>* outs) const {
    const ir::Graph& g = lir_.mir;
    std::unique_ptr<CallScratch> scratch = take_scratch();
    CallScratch& f = *scratch;
    // Leaves and constants in place; every other entry is written by its step before it is
    // read. Nothing in the arena is zeroed (every step writes all of its result).
    std::copy(initial_values_.begin(), initial_values_.end(), f.values.begin());
    std::copy(initial_ptr_.begin(), initial_ptr_.end(), f.ptr.begin());
    for (std::size_t k = 0; k < fed_.size(); ++k) {
      f.values[fed_[k]] = leaves[k];
      f.ptr[fed_[k]] = const_cast<std::byte*>(leaves[k]->bytes().data());
    }
    const bool into = outs == nullptr;
    if (into) // an output given twice is computed into its first buffer, copied to the other
      for (std::size_t o = 0; o < g.outputs.size(); ++o)
        if (uint32_t i = g.outputs[o].index; !f.out_at[i]) {
          f.out_at[i] = outputs[o]->bytes().data();
          f.out_values[i] = outputs[o];
        }
    RunState state{lir_,
                   f.arena.data(),
                   f.ptr,
                   f.values,
                   f.owned,
                   f.args,
                   into ? f.out_at.data() : nullptr,
                   into ? f.out_values.data() : nullptr};
    // Values of their own (outputs, the interpreter's operands and results) are buffers of the
    // memory pool, freed after their last reader so the next step reuses them while in cache.
    for (std::size_t i = 0; i < steps_.size(); ++i) {
      // A safe point for a host's interrupt (rlx::request_interrupt): between the steps.
      if (interrupt_requested())
        rlx::detail::check_interrupt(rlx::detail::cat("graph @", g.name, " before step ", i));
      steps_[i]->run(state);
      for (ir::NodeId id : lir_.memory.releases[i]) {
        f.owned[id.index] = Buffer();
        f.values[id.index] = nullptr;
      }
    }
    if (into) {
      // Outputs not computed in place (a leaf, a constant, an interpreter step's result, one
      // given twice) are copied.
      for (std::size_t o = 0; o < g.outputs.size(); ++o) {
        uint32_t i = g.outputs[o].index;
        std::span<std::byte> to = outputs[o]->bytes();
        if (f.ptr[i] != to.data() && !to.empty()) std::memcpy(to.data(), f.ptr[i], to.size());
      }
      for (ir::NodeId o : g.outputs) {
        f.out_at[o.index] = nullptr;
        f.out_values[o.index] = nullptr;
      }
    } else {
      // Results computed here move out (the last time an output appears); the others copy.
      // Outputs never live in the arena (plan_options), so nothing returned aliases it.
      outs->reserve(g.outputs.size());
      for (std::size_t o = 0; o < g.outputs.size(); ++o) {
        uint32_t i = g.outputs[o].index;
        if (last_out_[o] && f.values[i] == &f.owned[i])
          outs->push_back(std::move(f.owned[i]));
        else
          outs->push_back(*f.values[i]);
      }
    }
    for (uint32_t i : own_) // normally moved out or released already
      if (f.owned[i].bytes().data() || f.owned[i].shape().rank()) f.owned[i] = Buffer();
    give_back(std::move(scratch));
  }

  /// The spare scratch (lock-free: one exchange), or a new one when another call has it.
  std::unique_ptr<CallScratch> take_scratch() const {
    if (CallScratch* f = spare_.exchange(nullptr, std::memory_order_acquire))
      return std::unique_ptr<CallScratch>(f);
    auto f = std::make_unique<CallScratch>();
    std::size_t n = lir_.mir.len();
    f->owned.resize(n);
    f->values.resize(n);
    f->ptr.resize(n);
    f->out_at.resize(n);
    f->out_values.resize(n);
    if (lir_.memory.arena_size) f->arena = Storage(lir_.memory.arena_size, false);
    return f;
  }
  /// Keep it for the next call, unless a concurrent call kept its own first. A call that
  /// throws drops its scratch instead (with whatever buffers it held).
  void give_back(std::unique_ptr<CallScratch> f) const {
    CallScratch* expected = nullptr;
    if (spare_.compare_exchange_strong(expected, f.get(), std::memory_order_release,
                                       std::memory_order_relaxed))
      (void)f.release();
  }

  ir::LirModule lir_;
  std::vector<std::unique_ptr<PreparedStep>> steps_; ///< per step of lir_
  std::vector<Buffer> constants_;
  std::string name_ = executable_name();      ///< for dump files and describe()
  ir::LirNames names_;                        ///< the kernels' symbols, given as steps are prepared
  std::vector<const Buffer*> initial_values_; ///< per node: the constants' buffers, else null
  std::vector<std::byte*> initial_ptr_;       ///< per node: the constants' bytes, else null
  std::vector<uint32_t> fed_;                 ///< the leaves' nodes, in graph order
  std::vector<uint32_t> own_;                 ///< nodes a call may hold a Buffer of its own for
  std::vector<bool> last_out_;                ///< per output: its last appearance in outputs
  bool has_runtime_steps_ = false;            ///< steps on the interpreter's kernels (Buffers)
  mutable std::atomic<CallScratch*> spare_{nullptr};
};

/// JitExecutable::run's state made once: leaves and constants in place, the arena its own.
class Frame final : public RawEntry {
public:
  explicit Frame(const JitExecutable& exe)
      : exe_(exe), ptr_(exe.lir_.mir.len(), nullptr), values_(exe.lir_.mir.len(), nullptr),
        owned_(exe.lir_.mir.len()), out_at_(exe.lir_.mir.len(), nullptr) {
    const ir::Graph& g = exe.lir_.mir;
    for (const ir::Node& n : g.nodes())
      if (ir::has_trait(n.op.kind(), ir::kFed)) fed_.push_back(n.id);
    for (ir::NodeId c : exe.lir_.memory.io.constants) {
      values_[c.index] = &exe.constants_[c.index];
      ptr_[c.index] = const_cast<std::byte*>(exe.constants_[c.index].bytes().data());
    }
    if (exe.lir_.memory.arena_size) arena_ = Storage(exe.lir_.memory.arena_size, false);
    for (ir::NodeId o : g.outputs) out_bytes_.push_back(std::size_t(*g.shape(o).size_bytes()));
  }

  void run(const std::byte* const* leaves, std::byte* const* outputs) override {
    const ir::LirModule& lir = exe_.lir_;
    const ir::Graph& g = lir.mir;
    for (std::size_t k = 0; k < fed_.size(); ++k)
      ptr_[fed_[k].index] = const_cast<std::byte*>(leaves[k]);
    for (std::size_t o = 0; o < g.outputs.size(); ++o)
      if (!out_at_[g.outputs[o].index]) out_at_[g.outputs[o].index] = outputs[o];
    RunState state{lir, arena_.data(), ptr_, values_, owned_, args_, out_at_.data()};
    for (std::size_t i = 0; i < exe_.steps_.size(); ++i) {
      exe_.steps_[i]->run(state);
      for (ir::NodeId id : lir.memory.releases[i]) {
        owned_[id.index] = Buffer();
        values_[id.index] = nullptr;
      }
    }
    // Outputs not computed in place (a leaf, a constant, a view, one given twice) copy.
    for (std::size_t o = 0; o < g.outputs.size(); ++o) {
      uint32_t i = g.outputs[o].index;
      if (ptr_[i] != outputs[o]) std::memcpy(outputs[o], ptr_[i], out_bytes_[o]);
    }
    for (ir::NodeId o : g.outputs) out_at_[o.index] = nullptr;
  }

private:
  const JitExecutable& exe_;
  std::vector<ir::NodeId> fed_;
  std::vector<std::byte*> ptr_;
  std::vector<const Buffer*> values_;
  std::vector<Buffer> owned_;
  std::vector<void*> args_;
  std::vector<std::byte*> out_at_;
  std::vector<std::size_t> out_bytes_;
  Storage arena_;
};

/// A bound call of a plan without interpreter steps: every value has one address for all its
/// calls (the caller's leaves and outputs, the call's own arena, a buffer made now for each
/// other value of its own), so each step's arguments are worked out once, here, and a call runs
/// the bound steps in order and copies the outputs not computed in place.
class Bound final : public BoundCall {
public:
  Bound(const JitExecutable& exe, std::span<const Buffer* const> leaves,
        std::span<Buffer* const> outputs)
      : BoundCall(exe.weak_from_this().lock()), exe_(exe), ptr_(exe.initial_ptr_),
        values_(exe.initial_values_), owned_(exe.lir_.mir.len()),
        out_at_(exe.lir_.mir.len(), nullptr) {
    const ir::LirModule& lir = exe.lir_;
    const ir::Graph& g = lir.mir;
    if (lir.memory.arena_size) arena_ = Storage(lir.memory.arena_size, false);
    for (std::size_t k = 0; k < exe.fed_.size(); ++k) {
      values_[exe.fed_[k]] = leaves[k];
      ptr_[exe.fed_[k]] = const_cast<std::byte*>(leaves[k]->bytes().data());
    }
    for (std::size_t o = 0; o < g.outputs.size(); ++o)
      if (uint32_t i = g.outputs[o].index; !out_at_[i]) out_at_[i] = outputs[o]->bytes().data();
    // Values of their own that the caller does not receive: one buffer each for all calls.
    mine_.reserve(exe.own_.size());
    for (uint32_t i : exe.own_)
      if (!out_at_[i]) {
        mine_.push_back(Buffer::uninitialized(g.nodes()[i].shape));
        out_at_[i] = mine_.back().bytes().data();
      }
    state_ = std::make_unique<RunState>(
        RunState{lir, arena_.data(), ptr_, values_, owned_, args_, out_at_.data(), nullptr});
    for (std::size_t i = 0; i < exe.steps_.size(); ++i)
      if (std::unique_ptr<BoundStep> b = exe.steps_[i]->bind(*state_, lir.steps[i])) {
        bound_.push_back(std::move(b));
        step_of_.push_back(i);
      }
    for (std::size_t o = 0; o < g.outputs.size(); ++o) {
      std::span<std::byte> to = outputs[o]->bytes();
      const std::byte* from = ptr_[g.outputs[o].index];
      if (from != to.data() && !to.empty()) copies_.push_back({to.data(), from, to.size()});
    }
    holds_nothing_ =
        std::all_of(bound_.begin(), bound_.end(), [](const auto& b) { return b->holds_nothing(); });
  }

  void run() override {
    if (holds_nothing_) { // kernel calls on this thread only: a host may abandon them any time
      run_steps();
    } else {
      rlx::detail::WorkScope work; // not to be abandoned: a safe point per step comes soon
      run_steps();
    }
    for (const Copy& c : copies_) std::memcpy(c.to, c.from, c.bytes);
  }

private:
  void run_steps() {
    for (std::size_t i = 0; i < bound_.size(); ++i) {
      // A safe point for a host's interrupt (rlx::request_interrupt): between the steps.
      if (i > 0 && interrupt_requested())
        rlx::detail::check_interrupt(
            rlx::detail::cat("graph @", exe_.lir_.mir.name, " before step ", step_of_[i]));
      bound_[i]->run();
    }
  }

  struct Copy {
    std::byte* to;
    const std::byte* from;
    std::size_t bytes;
  };
  const JitExecutable& exe_;
  Storage arena_;
  std::vector<std::byte*> ptr_;
  std::vector<const Buffer*> values_;
  std::vector<Buffer> owned_;
  std::vector<void*> args_;
  std::vector<std::byte*> out_at_;
  std::vector<Buffer> mine_; ///< values of their own the caller does not receive
  std::unique_ptr<RunState> state_;
  std::vector<std::unique_ptr<BoundStep>> bound_;
  std::vector<std::size_t> step_of_; ///< per bound step: its step of the plan
  std::vector<Copy> copies_;
  bool holds_nothing_ = false; ///< every bound step holds_nothing
};

std::unique_ptr<BoundCall> JitExecutable::bind_checked(std::span<const Buffer* const> leaves,
                                                       std::span<Buffer* const> outputs) const {
  // Interpreter steps make new Buffers on every call: those plans run as run_into does.
  if (has_runtime_steps_) return Executable::bind_checked(leaves, outputs);
  return std::make_unique<Bound>(*this, leaves, outputs);
}

std::unique_ptr<RawEntry> JitExecutable::raw() const {
  for (const ir::LirStep& st : lir_.steps)
    if (st.rule == lir_.policy->runtime) return nullptr;
  return std::make_unique<Frame>(*this);
}

} // namespace

std::unique_ptr<RawEntry> raw_entry(const Executable& exe) {
  const auto* jit = dynamic_cast<const JitExecutable*>(&exe);
  return jit ? jit->raw() : nullptr;
}

std::shared_ptr<const Executable> compile_lir(ir::LirModule lir) {
  if (lir.policy != &step_policy())
    throw InternalError("jit: a plan made for another backend or extent policy");
  return std::make_shared<JitExecutable>(std::move(lir));
}

} // namespace rlx::jit
