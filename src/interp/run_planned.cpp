// src/interp/run_planned.cpp -- run a LIR module exactly as its plan says, on the reference
// kernels: steps in order, each computing its nodes from the bytes its plan gives their
// operands, its results written to their homes (one arena, buffers of their own freed where
// the plan frees them, views read from their root's bytes). Whatever a wrong plan overwrites,
// frees or reads too early shows up in the results or as an error.
#include "rlx/interp.hpp"
#include "rlx/ir/lir.hpp"

#include <algorithm>
#include <cstring>
#include <optional>
#include <unordered_map>

namespace rlx::interp {

namespace {

class PlannedRun {
public:
  PlannedRun(const ir::LirModule& lir, std::span<const Buffer* const> leaves)
      : lir_(lir), g_(lir.mir), fed_(feed_leaves(g_, leaves)), own_(g_.len()),
        // Poisoned (all bits set: NaN for floats) so a read of bytes nothing wrote is visible.
        arena_(lir.memory.arena_size, false) {
    if (arena_.size()) std::memset(arena_.data(), 0xFF, arena_.size());
    for (ir::NodeId c : lir.memory.io.constants) own_[c.index] = eval_node_of_graph(g_.node(c), {});
  }

  std::vector<Buffer> run() {
    for (std::size_t s = 0; s < lir_.steps.size(); ++s) {
      const ir::LirStep& step = lir_.steps[s];
      if (lir_.place(step.node).home == ir::Home::View) continue; // its root's bytes
      local_.clear();
      reads_ = &step.reads;
      for (ir::NodeId id : step.nodes) {
        const ir::Node& n = g_.node(id);
        std::vector<Buffer> operands;
        for (ir::NodeId in : n.inputs) operands.push_back(value(in));
        std::vector<const Buffer*> ptrs;
        for (const Buffer& b : operands) ptrs.push_back(&b);
        local_[id.index] = eval_node_of_graph(n, ptrs);
      }
      for (ir::NodeId id : step.writes) store(id, local_.at(id.index));
      for (ir::NodeId id : lir_.memory.releases[s]) own_[id.index].reset();
    }
    std::vector<Buffer> outs;
    for (ir::NodeId o : g_.outputs) outs.push_back(copy_of(o));
    return outs;
  }

private:
  /// The value of operand `id` of a node being computed: made earlier in the same step, read
  /// from its bytes, or (a movement folded into its reader) computed from its own operand. A
  /// step reads the buffers its rule names (LirStep::reads): an operand with bytes of its own
  /// that the step does not name is folded into it all the same (a GEMM reads a transpose or the
  /// heads of a QKV projection through strides, from the buffer under them, while another step
  /// made that operand for itself and may have freed it already).
  Buffer value(ir::NodeId id) {
    if (auto it = local_.find(id.index); it != local_.end()) return it->second;
    const ir::Node& n = g_.node(id);
    bool named = std::find(reads_->begin(), reads_->end(), id) != reads_->end();
    if (fed_[id.index] || (lir_.place(id).home != ir::Home::None && (named || n.inputs.empty())))
      return copy_of(id);
    RLX_CHECK(!n.inputs.empty(), "node ", id, " has no bytes in the plan and no operand");
    std::vector<Buffer> operands;
    for (ir::NodeId in : n.inputs) operands.push_back(value(in));
    std::vector<const Buffer*> ptrs;
    for (const Buffer& b : operands) ptrs.push_back(&b);
    return eval_node_of_graph(n, ptrs);
  }

  std::span<const std::byte> bytes(ir::NodeId id) {
    uint64_t size = uint64_t(g_.shape(id).size_bytes().value_or(0));
    const ir::Placement& p = lir_.place(id);
    ir::NodeId root = p.home == ir::Home::View ? p.root : id;
    uint64_t off = p.home == ir::Home::View ? p.offset : 0;
    std::span<const std::byte> r;
    if (fed_[root.index])
      r = fed_[root.index]->bytes();
    else if (own_[root.index])
      r = own_[root.index]->bytes();
    else if (lir_.place(root).home == ir::Home::Arena)
      r = std::span<const std::byte>(arena_.data(), arena_.size()).subspan(lir_.place(root).offset);
    else
      throw InternalError(rlx::detail::cat("node ", id, " is read but has no bytes (freed, or ",
                                           "never written) in the plan of @", g_.name));
    RLX_CHECK(off + size <= r.size(), "node ", id, " reads past the bytes of ", root);
    return r.subspan(off, size);
  }

  Buffer copy_of(ir::NodeId id) {
    Buffer b = Buffer::uninitialized(g_.shape(id));
    std::span<const std::byte> src = bytes(id);
    if (!src.empty()) std::memcpy(b.bytes().data(), src.data(), src.size());
    return b;
  }

  void store(ir::NodeId id, const Buffer& result) {
    const ir::Placement& p = lir_.place(id);
    if (p.home != ir::Home::Arena) {
      own_[id.index] = result;
      return;
    }
    RLX_CHECK(p.offset + result.bytes().size() <= arena_.size(), "node ", id,
              " writes past the arena");
    if (!result.bytes().empty())
      std::memcpy(arena_.data() + p.offset, result.bytes().data(), result.bytes().size());
  }

  const ir::LirModule& lir_;
  const ir::Graph& g_;
  std::vector<const Buffer*> fed_;
  std::vector<std::optional<Buffer>> own_; ///< constants, and values of their own not yet freed
  Storage arena_;
  std::unordered_map<uint32_t, Buffer> local_;     ///< the values of the step being run
  const std::vector<ir::NodeId>* reads_ = nullptr; ///< what the step being run reads
};

} // namespace

std::vector<Buffer> run_planned(const ir::LirModule& lir, std::span<const Buffer* const> leaves) {
  return PlannedRun(lir, leaves).run();
}

} // namespace rlx::interp
