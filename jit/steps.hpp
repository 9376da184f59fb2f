// jit/steps.hpp -- the JIT's steps as objects: each rule of its step policy (fused element-wise
// kernels, row kernels, GEMM, library kernels, views, interpreter steps) prepares a step of a
// plan once, when the executable is built, and the prepared step runs on every call.
#pragma once

#include "debug.hpp"

#include "rlx/interp.hpp"
#include "rlx/ir/lir.hpp"
#include "rlx/runtime.hpp"

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

namespace rlx::jit {

/// Where the values of one call are while its steps run.
struct RunState {
  const ir::LirModule& lir;
  std::byte* arena;                   ///< the call's arena (Memory::arena_size bytes)
  std::vector<std::byte*>& ptr;       ///< per node: its elements (once made)
  std::vector<const Buffer*>& values; ///< per node: its buffer (leaves, Own values)
  std::vector<Buffer>& owned;         ///< per node: Own values made by this call
  std::vector<void*>& args;           ///< scratch for a step's argument pointers
  /// Per node, where the caller wants it written (a RawEntry's outputs, run_into's), or null.
  std::byte* const* out_at = nullptr;
  /// Per node given out_at, the caller's Buffer there (run_into: interpreter steps read it), or
  /// null for the whole table (a RawEntry has no Buffers).
  Buffer* const* out_values = nullptr;

  /// The bytes a step writes node `id` to: where the caller wants it, its arena slot, or a new
  /// buffer of its own.
  std::byte* result(ir::NodeId id) {
    if (out_at && out_at[id.index]) {
      if (out_values) values[id.index] = out_values[id.index];
      return ptr[id.index] = out_at[id.index];
    }
    const ir::Placement& p = lir.memory.places[id.index];
    if (p.home == ir::Home::Arena) return ptr[id.index] = arena + p.offset;
    owned[id.index] = Buffer::uninitialized(lir.mir.shape(id));
    values[id.index] = &owned[id.index];
    return ptr[id.index] = owned[id.index].bytes().data();
  }
  /// args = the elements of the step's reads, in order.
  void gather_reads(const ir::LirStep& step) {
    args.clear();
    for (ir::NodeId in : step.reads) args.push_back(ptr[in.index]);
  }
};

/// What a step of a bound call (rlx::Executable::bind) does per call, with its arguments
/// worked out once.
class BoundStep {
public:
  virtual ~BoundStep() = default;
  virtual void run() = 0;
  /// Whether a call of it is one kernel call on this thread: no lock, no allocation, no wait
  /// for the pool, so a host may abandon it at any time. A bound call of such steps only takes
  /// no detail::WorkScope (with the safe point before its first step, 8 ns of a 16^3 product's
  /// 80: the scope's thread-local counter lives in the shared librlx).
  virtual bool holds_nothing() const { return false; }
};

/// A step ready to run: its code, plans and constants made; run() is const and may be called
/// from several threads at once (each with its own RunState).
class PreparedStep {
public:
  virtual ~PreparedStep() = default;
  virtual void run(RunState& s) const = 0;
  /// For a bound call, where every value has one address for all its calls (leaves, outputs,
  /// the arena and the values of their own are fixed; the plan has no interpreter step): puts
  /// the addresses of what `step` (this step's LirStep) writes in `s` as run would, and returns
  /// what a call does then, or null when that is nothing (a view). The default runs run(s) on
  /// the bound call's state; steps on the hot path return their kernel with its arguments.
  virtual std::unique_ptr<BoundStep> bind(RunState& s, const ir::LirStep& step) const;
};

/// A bound step that calls its prepared step's run_on(args) with the arguments it had at bind
/// time (the addresses of its reads, then of its writes, as its run gathers them).
template <class Step> class BoundArgs final : public BoundStep {
public:
  BoundArgs(const Step& step, std::vector<void*> args, bool holds_nothing = false)
      : step_(step), args_(std::move(args)), holds_nothing_(holds_nothing) {}
  void run() override { step_.run_on(args_.data()); }
  bool holds_nothing() const override { return holds_nothing_; }

private:
  const Step& step_;
  std::vector<void*> args_;
  bool holds_nothing_;
};

/// What preparing a step may use and report: the plan, the names of its code (kernel symbols
/// appear in dumps and logs) and the debug options of this compile.
struct PrepareContext {
  const ir::LirModule& lir;
  ir::LirNames& names;
  const DebugState& debug;
};

/// A rule of the JIT's step policy: the planner's questions (ir::StepRule) and how a step of it
/// is prepared.
class JitRule : public ir::StepRule {
public:
  using StepRule::StepRule;
  virtual std::unique_ptr<PreparedStep> prepare(PrepareContext& c, std::size_t step) const = 0;
};

/// The JIT's step policy (for the current rlx::extent_policy()): kernels of what the LLVM
/// lowering compiles, GEMM steps and library kernels where this host runs them, views at
/// 64-byte offsets, and the interpreter's kernels for the rest.
const ir::StepPolicy& step_policy();
/// How the JIT plans: its policy, outputs in buffers of their own (they move to the caller).
ir::PlanOptions plan_options();

/// The executable of a plan made with plan_options() (jit/executable.cpp): its steps prepared,
/// run in order on every call.
std::shared_ptr<const Executable> compile_lir(ir::LirModule lir);

/// A JIT executable run on raw pointers, for callers that run it many times in a row (a scan's
/// body at every step): what a call needs (the arena, the pointer tables) is made once with the
/// entry, so a call allocates nothing and copies nothing but outputs that are not computed in
/// place (a leaf or a constant returned as it is). Not thread-safe: one entry per thread.
class RawEntry {
public:
  virtual ~RawEntry() = default;
  /// leaves[i]: the elements of the i-th leaf (Input or Param, in graph order); outputs[j]: where
  /// output j is written (never aliasing a leaf).
  virtual void run(const std::byte* const* leaves, std::byte* const* outputs) = 0;
};

/// The RawEntry of `exe`, or null when it is not the JIT's or its plan has steps that run on the
/// interpreter's kernels (they need Buffers).
std::unique_ptr<RawEntry> raw_entry(const Executable& exe);

/// A new kernel symbol, unique in the process ("rlx_k12").
std::string kernel_name();

/// The registered rules (jit/gemm_step.cpp, jit/column_step.cpp, jit/library.cpp).
const JitRule& gemm_rule();
const JitRule& column_rule();
std::vector<const JitRule*> library_rules();
/// Collectives as a non-blocking start and a later wait (jit/collective_step.cpp).
const JitRule& collective_start_rule();
const JitRule& collective_wait_rule();

} // namespace rlx::jit
