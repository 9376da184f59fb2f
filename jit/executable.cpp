// jit/executable.cpp -- the JIT's Executable: the plan's steps, prepared once, run in order.
#include "debug.hpp"
#include "steps.hpp"

#include "rlx/host.hpp"
#include "rlx/ir/text.hpp"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <memory>
#include <mutex>

namespace rlx::jit {

namespace {

/// Executables are numbered in the process for their dump files.
std::string executable_name() {
  static std::atomic<uint64_t> next{0};
  return "rlx_g" + std::to_string(next.fetch_add(1));
}

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
  }

  std::vector<Buffer> run(std::span<const Buffer* const> leaves) const override {
    rlx::detail::WorkScope work; // not to be abandoned: a safe point per step comes soon
    const ir::Graph& g = lir_.mir;
    std::vector<Buffer> owned(g.len());
    std::vector<const Buffer*> values = interp::feed_leaves(g, leaves);
    for (ir::NodeId c : lir_.memory.io.constants) values[c.index] = &constants_[c.index];
    // The arena: the executable's own (warm from the last call) unless another thread is
    // running it, then one for this call from the memory pool. It keeps its pages mapped from
    // call to call, and nothing is zeroed (every step writes all of its result).
    std::size_t arena_bytes = lir_.memory.arena_size;
    std::unique_lock arena_lock(arena_mutex_, std::defer_lock);
    Storage call_arena;
    std::byte* arena = nullptr;
    if (arena_bytes) {
      if (arena_lock.try_lock()) {
        if (arena_.size() < arena_bytes) arena_ = Storage(arena_bytes, false);
        arena = arena_.data();
      } else {
        call_arena = Storage(arena_bytes, false);
        arena = call_arena.data();
      }
    }
    // Where each value's elements are: leaves, constants and owned buffers, or an arena slot.
    std::vector<std::byte*> ptr(g.len(), nullptr);
    for (std::size_t i = 0; i < g.len(); ++i)
      if (values[i]) ptr[i] = const_cast<std::byte*>(values[i]->bytes().data());
    std::vector<void*> args;
    RunState state{lir_, arena, ptr, values, owned, args};
    // Values of their own (outputs, the interpreter's operands and results) are buffers of the
    // memory pool, freed after their last reader so the next step reuses them while in cache.
    for (std::size_t i = 0; i < steps_.size(); ++i) {
      // A safe point for a host's interrupt (rlx::request_interrupt): between the steps.
      if (interrupt_requested())
        rlx::detail::check_interrupt(rlx::detail::cat("graph @", g.name, " before step ", i));
      steps_[i]->run(state);
      for (ir::NodeId id : lir_.memory.releases[i]) {
        owned[id.index] = Buffer();
        values[id.index] = nullptr;
      }
    }
    // Results computed here move out (the last time an output appears); the others copy.
    // Outputs never live in the arena (plan_options), so nothing returned aliases it.
    std::vector<Buffer> outs;
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

  std::unique_ptr<RawEntry> raw() const;

  const ir::Graph& graph() const override { return lir_.mir; }
  Backend backend() const override { return Backend::Jit; }
  /// The plan as text (also RLX_DUMP=lir), printed when asked: not a cost of every compile.
  std::string describe() const override {
    return "# " + name_ + ": the plan of graph @" + lir_.mir.name + "\n" + lir_.to_string(names_);
  }

private:
  friend class Frame;
  ir::LirModule lir_;
  std::vector<std::unique_ptr<PreparedStep>> steps_; ///< per step of lir_
  mutable std::mutex arena_mutex_; ///< guards arena_ (a call that finds it taken makes its own)
  mutable Storage arena_;
  std::vector<Buffer> constants_;
  std::string name_ = executable_name(); ///< for dump files and describe()
  ir::LirNames names_;                   ///< the kernels' symbols, given as steps are prepared
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
