// src/interp/run_planned.cpp -- run a LIR module exactly as its buffer plan says: one arena,
// every value written to its slot, views read from their root's bytes. Whatever a wrong plan
// overwrites while it is still live shows up in the results.
#include "rlx/interp.hpp"
#include "rlx/ir/lir.hpp"

#include <cstring>

namespace rlx::interp {

std::vector<Buffer> run_planned(const ir::LirModule& lir, std::span<const Buffer* const> leaves) {
  const ir::Graph& g = lir.mir;
  const ir::BufferPlan& plan = lir.buffers;
  std::vector<const Buffer*> fed = feed_leaves(g, leaves);
  // Poisoned (all bits set: NaN for floats) so a read of bytes nothing wrote is visible.
  Storage arena(plan.arena_size, false);
  if (arena.size()) std::memset(arena.data(), 0xFF, arena.size());
  std::map<ir::NodeId, Buffer> own; // constants and outputs without a slot

  auto bytes = [&](ir::NodeId id) -> std::span<const std::byte> {
    uint64_t size = uint64_t(g.shape(id).size_bytes().value_or(0));
    if (fed[id.index]) return fed[id.index]->bytes();
    if (auto it = own.find(id); it != own.end()) return it->second.bytes();
    ir::NodeId root = id;
    uint64_t off = 0;
    if (auto v = plan.view_aliases.find(id); v != plan.view_aliases.end()) {
      root = v->second.root;
      off = v->second.byte_offset;
      if (fed[root.index] || own.count(root)) {
        std::span<const std::byte> r =
            fed[root.index] ? fed[root.index]->bytes() : own.at(root).bytes();
        RLX_CHECK(off + size <= r.size(), "view ", id, " reads past its root ", root);
        return r.subspan(off, size);
      }
    }
    auto slot = plan.assignments.find(root);
    RLX_CHECK(slot != plan.assignments.end(), "node ", id, " has no bytes in the plan");
    off += slot->second.offset;
    RLX_CHECK(off + size <= arena.size(), "node ", id, " reads past the arena");
    return std::span<const std::byte>(arena.data() + off, size);
  };
  auto copy_of = [&](ir::NodeId id) {
    Buffer b = Buffer::uninitialized(g.shape(id));
    std::span<const std::byte> src = bytes(id);
    if (!src.empty()) std::memcpy(b.bytes().data(), src.data(), src.size());
    return b;
  };

  for (ir::NodeId c : plan.io.constants) own[c] = eval_node_of_graph(g.node(c), {});
  std::vector<Buffer> operands;
  std::vector<const Buffer*> ptrs;
  for (ir::NodeId id : plan.schedule) {
    if (plan.view_aliases.count(id)) continue; // its bytes are its root's
    const ir::Node& n = g.node(id);
    operands.clear();
    ptrs.clear();
    for (ir::NodeId in : n.inputs) operands.push_back(copy_of(in));
    for (const Buffer& b : operands) ptrs.push_back(&b);
    Buffer result = eval_node_of_graph(n, ptrs);
    auto slot = plan.assignments.find(id);
    if (slot == plan.assignments.end()) {
      own[id] = std::move(result);
      continue;
    }
    RLX_CHECK(slot->second.offset + result.bytes().size() <= arena.size(), "node ", id,
              " writes past the arena");
    if (!result.bytes().empty())
      std::memcpy(arena.data() + slot->second.offset, result.bytes().data(), result.bytes().size());
  }
  std::vector<Buffer> outs;
  for (ir::NodeId o : g.outputs) outs.push_back(copy_of(o));
  return outs;
}

} // namespace rlx::interp
