// include/rlx/ir/lir.hpp -- LIR: an optimized MIR graph split into steps (fused element-wise
// kernels, row ops, library kernels, views, interpreter steps) and its memory (one arena from
// lifetimes, views instead of copies, the I/O manifest). The one plan every backend runs
// (src/lir/): the JIT lowers and runs it, interp::run_planned executes it, it is printed,
// drawn (rlx/ir/dot.hpp) and checked by a verifier.
#pragma once

#include "rlx/ir/graph.hpp"

#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace rlx::ir {

struct FusedKernel;

/// One kind of step a backend runs (an entry of its registry: a fused element-wise kernel, a
/// row kernel, a GEMM, FFTW, a view, an interpreter step): which nodes it takes and what a step
/// of it reads. Backends derive their entries from it (the JIT adds how a step is prepared and
/// run, jit/steps.hpp); the planner only asks these questions.
class StepRule {
public:
  explicit StepRule(std::string_view name) : name_(name) {}
  StepRule(const StepRule&) = delete;
  StepRule& operator=(const StepRule&) = delete;
  virtual ~StepRule() = default;
  /// The name the plan's text gives its steps ("kernel", "row", "gemm", "fftw", ...).
  std::string_view name() const { return name_; }
  /// Whether a step of this rule computes node n.
  virtual bool takes(const Graph& g, const Node& n) const = 0;
  /// The buffers a step of n reads, in its argument order (default: n's operands).
  virtual std::vector<NodeId> reads(const Graph& g, const Node& n) const;
  /// Whether steps of this rule read the value of `id` in place of a buffer of its own (a
  /// transpose through strides, a narrow through row strides: reads() names its operand):
  /// such a node needs no step when only these steps read it.
  virtual bool folds(const Graph& g, NodeId id) const;
  /// A node a step of n computes together with n, which then needs no step (the product of a
  /// GEMM's residual add); `uses`: how often each node is read, graph outputs included.
  virtual std::optional<NodeId> absorbs(const Graph& g, const Node& n,
                                        std::span<const int> uses) const;
  /// Row rules: whether a step of row op n computes its first operand with kernel k as it
  /// reads it (k's only result, read by nothing else).
  virtual bool takes_prologue(const Graph& g, const Node& n, const FusedKernel& k) const;

private:
  std::string_view name_;
};

/// What a backend runs natively, for the planner. Every null rule means "none": the
/// interpreter's policy (interpreter_policy()) has only views and interpreter steps.
struct StepPolicy {
  /// Element-wise nodes it takes fuse into kernels; reshapes and expands read only by kernels
  /// fold into their indexing.
  const StepRule* elementwise = nullptr;
  /// Reductions, softmax and norms over contiguous rows, possibly with a prologue kernel.
  const StepRule* row = nullptr;
  /// Other native steps (GEMM, library kernels), asked in order after the two above.
  std::vector<const StepRule*> native;
  const StepRule* view = nullptr;    ///< a node that is bytes of its operand (must be set)
  const StepRule* runtime = nullptr; ///< one node on the interpreter's kernel (must be set)
  /// Work in two steps (a non-blocking collective): a step of `start` begins its node's work as
  /// soon as the steps making its operands have run (never before an earlier step of the
  /// Collective family, so every rank issues them in the graph's order), and a step of `wait`
  /// (same node, writing nothing, reading the start's reads and its value) finishes it just
  /// before the first step that reads the value. Asked after the row rule, before `native`.
  const StepRule* start = nullptr;
  const StepRule* wait = nullptr;
  /// Kernels stop growing at this many nodes (LLVM's optimizer is superlinear in the size of
  /// one loop body, and longer chains gain nothing from more fusion).
  std::size_t max_kernel_nodes = 96;
  /// Element-wise kernels whose operands all run their iteration space as one flat row take its
  /// length at run time (FusedKernel::runtime_extent), else are compiled for it.
  bool runtime_extents = false;
  /// Views start at a multiple of this many bytes of their root.
  uint64_t view_alignment = 1;
  /// Interpreter steps read and write the arena (copying their operands in and results out).
  /// Off: their operands and results are buffers of their own (the JIT hands the interpreter's
  /// kernels Buffers), and no view is read by them.
  bool runtime_in_arena = true;
};

/// Every node an interpreter step of its own, views where exact.
const StepPolicy& interpreter_policy();

struct PlanOptions {
  uint64_t alignment = 64; ///< every arena offset is a multiple (a power of two)
  /// Outputs get arena slots (live to the end). Off: outputs are buffers of their own (the
  /// caller keeps them) and do not count in arena_size.
  bool outputs_in_arena = true;
  const StepPolicy* policy = nullptr; ///< null: interpreter_policy()
};

/// A fused element-wise kernel: nodes of one static shape (the iteration space), in
/// topological order. Operand j is the value of node `inputs[j]`, read from the buffer of node
/// `buffers[j]` as a row-major tensor of shape `read_shapes[j]` broadcast to the iteration space
/// (they differ when the operand is a folded reshape or expand); `outputs` are the nodes whose
/// values leave the kernel.
struct FusedKernel {
  std::vector<NodeId> nodes;
  std::vector<NodeId> inputs;
  std::vector<NodeId> outputs;
  Shape shape;
  std::vector<NodeId> buffers{};
  std::vector<Shape> read_shapes{};
  /// Computed inside a row step (its prologue) instead of as a step of its own.
  bool row_prologue = false;
  /// Every operand has the iteration space's elements or one element, and the policy asked for
  /// runtime extents: the kernel's code does not depend on its size.
  bool runtime_extent = false;
};

inline constexpr std::size_t kNoKernel = std::numeric_limits<std::size_t>::max();

/// One step, in execution order.
struct LirStep {
  const StepRule* rule = nullptr;
  NodeId node;                    ///< the node whose value it makes (a kernel's first node)
  std::vector<NodeId> nodes;      ///< every node it computes, in order (node among them)
  std::vector<NodeId> reads;      ///< buffers it reads, in its rule's argument order
  std::vector<NodeId> writes;     ///< values it writes (none for a view: its bytes are its root's)
  std::size_t kernel = kNoKernel; ///< FusedKernel of an element-wise step or a row prologue
};

/// Where a value's bytes are.
enum class Home : uint8_t {
  None,     ///< no bytes: not needed, computed inside a step, or folded into its readers
  Fed,      ///< an Input or Param: the caller's buffer
  Constant, ///< data of the graph, evaluated once
  Arena,    ///< bytes [offset, offset + size) of the arena
  View,     ///< bytes of `root` (never a view) from `offset` on
  Own,      ///< a buffer of its own: an output the caller keeps, or an interpreter step's value
};

struct Placement {
  Home home = Home::None;
  NodeId root;         ///< View: whose bytes; else the node itself
  uint64_t offset = 0; ///< Arena: into the arena; View: into the root
  friend bool operator==(const Placement&, const Placement&) = default;
};

/// Step positions [first, last] during which a value's bytes must stay intact: from the step
/// writing it to the last step reading it (directly or through views); arena outputs live to
/// steps.size().
struct Lifetime {
  uint32_t first = 0;
  uint32_t last = 0;
  friend bool operator==(const Lifetime&, const Lifetime&) = default;
};

/// What the caller provides and receives: the leaves in graph order (Inputs and Params are fed;
/// Constants are data of the graph) and the outputs.
struct IoManifest {
  std::vector<NodeId> inputs;
  std::vector<NodeId> params;
  std::vector<NodeId> constants;
  std::vector<NodeId> outputs;
  friend bool operator==(const IoManifest&, const IoManifest&) = default;
};

/// The values' homes and the arena.
struct Memory {
  uint64_t alignment = 64;
  uint64_t arena_size = 0;                   ///< bytes, a multiple of alignment
  uint64_t naive_size = 0;                   ///< bytes if every arena value had its own slot
  std::vector<Placement> places;             ///< per node
  std::vector<Lifetime> lifetimes;           ///< per node (Arena and Own values)
  std::vector<std::vector<NodeId>> releases; ///< per step: Own values (not outputs) last read
  bool outputs_in_arena = true;
  bool runtime_in_arena = true;
  IoManifest io;
};

/// Names a backend gives a plan's code (the JIT's kernel symbols), for its text.
struct LirNames {
  std::vector<std::string> kernels; ///< per FusedKernel
  std::vector<std::string> steps;   ///< per step: the code of a row step ("" for none)
};

/// The LIR stage: the optimized MIR, its steps and its memory.
struct LirModule {
  Graph mir;
  std::vector<FusedKernel> kernels;
  std::vector<LirStep> steps;
  Memory memory;
  const StepPolicy* policy = nullptr; ///< the rules the steps name (plan_lir's)

  const Placement& place(NodeId id) const { return memory.places[id.index]; }
  /// `lir @name (arena 1.2 MiB, naive 3.4 MiB, 3 kernels, 12 steps, align 64) {`, the leaves,
  /// each kernel (its nodes and operands), then one line per step (its rule and node, the home
  /// and lifetime of what it writes), and the outputs.
  std::string to_string() const { return to_string({}); }
  /// With the backend's names for kernels and steps (default: k0, k1, ... for kernels and
  /// nothing for steps).
  std::string to_string(const LirNames& names) const;
};

/// Plan g: nodes no output needs get no step; the policy's rules split the rest into steps
/// (fused element-wise kernels, row ops, native steps, views, interpreter steps); each value
/// is a view of its operand's bytes where the policy allows, else an arena slot placed
/// greedily (largest first) at the lowest aligned offset free during its lifetime, or a buffer
/// of its own. The graph must be static (an rlx::Error naming the dynamic symbols otherwise:
/// bind first).
LirModule plan_lir(Graph g, const PlanOptions& opts = {});

/// Whether node n can be a view of its first operand, and at which byte offset into it.
std::optional<uint64_t> view_offset(const Graph& g, const Node& n);

/// What is wrong with the plan, one line each (empty when nothing): a step reading a value
/// before it is written, a value written twice or never, an output without bytes, a slot
/// misaligned or outside the arena, a view outside its root or at an offset other than its
/// node's, an interpreter step reading a view when that is not allowed, lifetimes other than
/// the steps' reads say, and two arena values whose bytes overlap while both are live.
std::vector<std::string> check_plan(const LirModule& lir);
/// check_plan, throwing rlx::InternalError with every problem when there is one.
void verify_plan(const LirModule& lir);
/// Whether every plan is checked as it is made (plan_lir calls verify_plan): in builds without
/// NDEBUG, and where RLX_CHECK_PLAN=1 is set (the test suites set it).
bool plan_checks_enabled();

/// "1.2 MiB", "384 B": a byte count for people.
std::string human_bytes(uint64_t bytes);

} // namespace rlx::ir
