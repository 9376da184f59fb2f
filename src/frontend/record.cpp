// src/frontend/record.cpp -- recording Tensor ops: rlx::apply and the Recorder sink it hands to
// Graph builders, and the iterative release of a TensorImpl's inputs.
//
// A builder called through rlx::apply appends to a Graph made over a Recorder: the operands are
// its first node ids, each appended node (its shape already checked by the op's rule) becomes one
// pending TensorImpl, and the result is the TensorImpl of the id the builder returns. A builder
// that throws leaves nothing behind; nodes the result does not depend on die with the Recorder.
#include "frontend/impl.hpp"

#include <algorithm>
#include <atomic>

namespace rlx {

namespace detail {

TensorImpl::~TensorImpl() {
  // Adopt the inputs this node holds the last handle to, before they die, and theirs, and so on:
  // each node is then destroyed with no inputs left, so freeing a chain never recurses.
  if (inputs.empty()) return;
  std::vector<std::shared_ptr<TensorImpl>> stack = std::move(inputs);
  while (!stack.empty()) {
    std::shared_ptr<TensorImpl> p = std::move(stack.back());
    stack.pop_back();
    if (p.use_count() != 1) continue; // someone else holds it: only our reference goes
    // The last handle: no other thread can reach p any more; see the writes of those that had it.
    std::atomic_thread_fence(std::memory_order_acquire);
    for (std::shared_ptr<TensorImpl>& in : p->inputs) stack.push_back(std::move(in));
    p->inputs.clear();
  }
}

Recorder::Recorder(std::span<const Tensor> operands, const Loc& loc)
    : operands_(operands), loc_(loc) {
  for (const Tensor& t : operands) {
    check_defined(t, "operand", loc);
    uint64_t tr = t.impl()->trace;
    if (tr == 0) continue;
    if (!trace_active(tr))
      fail(ErrorKind::Trace,
           "a tensor traced inside rlx::jit was used after its trace ended (it escaped the "
           "jitted function, e.g. through a captured variable)",
           at_loc(loc));
    trace_ = std::max(trace_, tr); // inner traces have larger ids
  }
}

ir::NodeId Recorder::append(ir::Op op, std::vector<ir::NodeId> inputs, ir::Shape shape,
                            const Loc&) {
  if (ir::has_trait(op.kind(), ir::kFed))
    fail(ErrorKind::Value, "apply: the builder appended ", op.name(), " \"",
         op.attrs<ir::LeafAttrs>().name, "\"; a recorded op's only leaves are its operands",
         at_loc(loc_));
  auto impl = std::make_shared<TensorImpl>();
  impl->shape = std::move(shape);
  impl->op = std::move(op);
  impl->loc = loc_; // the user's line, whichever builder appended the node
  impl->trace = trace_;
  impl->inputs.reserve(inputs.size());
  uint64_t pending = 1;
  for (ir::NodeId in : inputs) {
    const std::shared_ptr<TensorImpl>& src = impl_at(in);
    impl->inputs.push_back(src);
    pending += src->pending;
  }
  impl->pending = std::min<uint64_t>(pending, uint64_t(1) << 40);
  made_.push_back(std::move(impl));
  return ir::NodeId(uint32_t(len() - 1));
}

void Recorder::truncate(std::size_t len) {
  RLX_CHECK(len >= operands_.size(), "a builder rolled back past the operands of a recorded op");
  made_.truncate(len - operands_.size());
}

std::vector<Tensor> Recorder::results(std::span<const ir::NodeId> ids) {
  std::vector<Tensor> outs;
  outs.reserve(ids.size());
  std::vector<std::shared_ptr<TensorImpl>> big;
  for (ir::NodeId id : ids) {
    RLX_CHECK(id.index < len(), "a recorded result ", id, " is not a node of the record");
    outs.emplace_back(impl_at(id));
    if (trace_ == 0 && impl_at(id)->pending > kAutoEvalNodes) big.push_back(impl_at(id));
  }
  if (!big.empty()) materialize(big, loc_);
  return outs;
}

Tensor Recorder::result(ir::NodeId id) {
  RLX_CHECK(id.index < len(), "a recorded result ", id, " is not a node of the record");
  Tensor t(impl_at(id));
  if (trace_ == 0 && t.impl()->pending > kAutoEvalNodes) materialize(std::span(&t.impl(), 1), loc_);
  return t;
}

} // namespace detail

Tensor apply(std::span<const Tensor> operands, const BuildFn& build, Loc loc) {
  detail::Recorder rec(operands, loc);
  ir::Graph g(rec, "apply");
  detail::SmallVec<ir::NodeId, 8> ids;
  for (std::size_t i = 0; i < operands.size(); ++i) ids.push_back(ir::NodeId(uint32_t(i)));
  ir::NodeId r = build(g, ids.span());
  if (r.index >= rec.len())
    fail(ErrorKind::Value, "apply: the builder returned node ", r, ", which is not in graph @",
         g.name, " (it has ", rec.len(), " nodes)", detail::at_loc(loc));
  return rec.result(r);
}

Tensor apply(std::initializer_list<Tensor> operands, const BuildFn& build, Loc loc) {
  return apply(std::span<const Tensor>(operands.begin(), operands.size()), build, loc);
}

} // namespace rlx
