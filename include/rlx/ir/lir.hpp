// include/rlx/ir/lir.hpp -- LIR: an optimized MIR graph plus its buffer plan (one arena, offsets
// from liveness, views instead of copies, a schedule, the I/O manifest), printed, checked by a
// verifier, and run by interp::run_planned exactly as planned.
#pragma once

#include "rlx/ir/graph.hpp"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace rlx::ir {

/// Bytes [offset, offset + size) of the arena.
struct BufferSlot {
  uint64_t offset = 0;
  uint64_t size = 0;
  friend bool operator==(const BufferSlot&, const BufferSlot&) = default;
};

/// A node whose value is bytes of another node's value: reshape, stop_gradient, and narrow or
/// slice with step 1 where the kept part is contiguous. `root` is the node owning the bytes (an
/// arena node or a leaf), never a view itself.
struct ViewAlias {
  NodeId root;
  uint64_t byte_offset = 0;
  friend bool operator==(const ViewAlias&, const ViewAlias&) = default;
};

/// Schedule positions [first, last] during which a buffer's bytes must stay intact: from the step
/// computing it to the last step reading it (directly or through views); outputs live to the end.
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

struct PlanOptions {
  uint64_t alignment = 64; ///< every slot offset is a multiple (a power of two)
  /// Outputs get arena slots (live to the end). Off: outputs get no slot (the runtime hands each
  /// one its own buffer, which the caller keeps) and do not count in arena_size.
  bool outputs_in_arena = true;
};

struct BufferPlan {
  uint64_t alignment = 64;
  uint64_t arena_size = 0;      ///< bytes, a multiple of alignment
  uint64_t naive_size = 0;      ///< bytes if every planned buffer had its own slot
  std::vector<NodeId> schedule; ///< the non-leaf nodes the outputs need, in execution order
  std::map<NodeId, BufferSlot> assignments; ///< arena nodes
  std::map<NodeId, ViewAlias> view_aliases; ///< view nodes (no slot of their own)
  std::map<NodeId, Lifetime> lifetimes;     ///< of each arena node
  std::vector<NodeId> unplaced_outputs;     ///< outputs without a slot (outputs_in_arena off)
  IoManifest io;
  friend bool operator==(const BufferPlan&, const BufferPlan&) = default;
};

/// Plan g's buffers: nodes no output needs are not scheduled; each scheduled node is a view of
/// its operand's bytes where that is exact, else an arena slot placed greedily (largest first)
/// at the lowest aligned offset free during its lifetime. The graph must be static (an
/// rlx::Error naming the dynamic symbols otherwise: bind first).
BufferPlan plan_buffers(const Graph& g, const PlanOptions& opts = {});

/// Whether node n can be a view of its first operand in a plan, and at which byte offset into it.
std::optional<uint64_t> view_offset(const Graph& g, const Node& n);

/// What is wrong with `plan` for g, one line each (empty when nothing): a scheduled node
/// without a slot or view, a slot that is misaligned, too small or outside the arena, a view
/// outside its root, an operand scheduled after its reader, and two buffers whose bytes overlap
/// while both are live (lifetimes recomputed here from the schedule, not taken from the plan).
std::vector<std::string> check_plan(const Graph& g, const BufferPlan& plan);
/// check_plan, throwing rlx::InternalError with every problem when there is one.
void verify_plan(const Graph& g, const BufferPlan& plan);

/// The LIR stage: the optimized MIR and its plan.
struct LirModule {
  Graph mir;
  BufferPlan buffers;

  /// `lir @name (arena 1.2 MiB, naive 3.4 MiB, 12 buffers, 3 views)`, then the leaves, then
  /// one line per scheduled node with its slot or view and its lifetime.
  std::string to_string() const;
};

/// Plan g (see plan_buffers) into a LirModule.
LirModule plan_lir(Graph g, const PlanOptions& opts = {});

/// "1.2 MiB", "384 B": a byte count for people.
std::string human_bytes(uint64_t bytes);

} // namespace rlx::ir
