// src/frontend/scan.cpp -- rlx::scan: trace the body once on placeholders (the carry and one row
// of each xs), extract the values of that trace as the body graph (everything else it reaches,
// the captured tensors, becomes a broadcast Input), and record one scan node.
#include "frontend/impl.hpp"

#include "rlx/apply.hpp"
#include "rlx/scan.hpp"

#include <unordered_map>

namespace rlx::detail {

namespace {

/// A placeholder of trace `trace`: Input `name` of `shape`.
Tensor placeholder(const Shape& shape, uint64_t trace, int32_t arg, const Loc& loc) {
  auto p = std::make_shared<TensorImpl>();
  p->shape = shape;
  p->op = ir::Op(ir::OpKind::Input, ir::LeafAttrs{"arg" + std::to_string(arg)});
  p->trace = trace;
  p->arg = arg;
  p->loc = loc;
  return Tensor(std::move(p));
}

struct Body {
  ir::Graph graph{"scan_body"};
  std::vector<Tensor> captured; ///< the broadcast operands, in the body's Input order
};

/// The body graph of `out` over the trace's placeholders: nodes of trace `trace` are copied,
/// every other value it reaches is a captured (broadcast) Input. Caller holds eval_mutex().
Body extract(const std::shared_ptr<TensorImpl>& out, std::span<const Tensor> placeholders,
             uint64_t trace) {
  // Post-order of the trace's own nodes; captured values in the order first reached.
  std::unordered_map<const TensorImpl*, int> seen;
  for (const Tensor& p : placeholders) seen[p.impl().get()] = 1;
  std::vector<TensorImpl*> order;
  std::vector<std::shared_ptr<TensorImpl>> captured;
  std::vector<std::pair<TensorImpl*, std::size_t>> stack{{out.get(), 0}};
  auto visit_leafish = [&](const std::shared_ptr<TensorImpl>& p) {
    if (seen.count(p.get())) return true;
    if (p->trace != trace || p->buffer || !p->op) {
      seen[p.get()] = 1;
      captured.push_back(p);
      return true;
    }
    return false;
  };
  if (visit_leafish(out)) stack.clear();
  while (!stack.empty()) {
    auto& [impl, next] = stack.back();
    if (next < impl->inputs.size()) {
      const std::shared_ptr<TensorImpl>& in = impl->inputs[next++];
      if (!visit_leafish(in)) {
        seen[in.get()] = 1;
        stack.emplace_back(in.get(), 0);
      }
      continue;
    }
    order.push_back(impl);
    stack.pop_back();
  }
  Body b;
  std::unordered_map<const TensorImpl*, ir::NodeId> ids;
  const TensorImpl* carry = placeholders[0].impl().get();
  ids[carry] = b.graph.input("carry", carry->shape);
  for (std::size_t j = 0; j < captured.size(); ++j) {
    ids[captured[j].get()] = b.graph.input("captured" + std::to_string(j), captured[j]->shape);
    b.captured.emplace_back(captured[j]);
  }
  for (std::size_t i = 1; i < placeholders.size(); ++i) {
    const TensorImpl* p = placeholders[i].impl().get();
    ids[p] = b.graph.input("x" + std::to_string(i - 1), p->shape);
  }
  for (TensorImpl* impl : order) {
    std::vector<ir::NodeId> in;
    for (const auto& x : impl->inputs) in.push_back(ids.at(x.get()));
    ids[impl] = b.graph.append_node(*impl->op, std::move(in), impl->shape, std::nullopt, impl->loc);
  }
  b.graph.set_outputs({ids.at(out.get())});
  return b;
}

} // namespace

Tensor scan_call(const Tensor& init, std::span<const Tensor> xs, const TraceBody& body,
                 const ScanOptions& opts, const Loc& loc) {
  check_defined(init, "scan init", loc);
  for (std::size_t i = 0; i < xs.size(); ++i) {
    check_defined(xs[i], "scan xs[" + std::to_string(i) + "]", loc);
    if (xs[i].shape().rank() == 0 || !xs[i].shape().dims()[0].is_static())
      fail(ErrorKind::Shape, "scan: xs[", i, "] is ", ir::short_str(xs[i].shape()),
           "; each xs needs a static leading axis (the steps)", at_loc(loc));
  }
  int64_t length = opts.length;
  if (length < 0) {
    if (xs.empty())
      fail(ErrorKind::Value, "scan: without xs the number of steps must be given (length)",
           at_loc(loc));
    length = xs[0].shape().dims()[0].size();
  }
  if (opts.trajectory && opts.checkpoints > 0)
    fail(ErrorKind::Value,
         "scan: a trajectory keeps every carry; checkpoints apply to scans returning the final "
         "carry",
         at_loc(loc));
  Body b;
  {
    TraceScope scope;
    std::vector<Tensor> ph{placeholder(init.shape(), scope.id(), 0, loc)};
    for (std::size_t i = 0; i < xs.size(); ++i) {
      const auto& d = xs[i].shape().dims();
      ph.push_back(
          placeholder(Shape(std::vector<ir::Dim>(d.begin() + 1, d.end()), xs[i].shape().dtype()),
                      scope.id(), int32_t(1 + i), loc));
    }
    std::vector<Tensor> outs = body(ph);
    if (outs.size() != 1)
      fail(ErrorKind::Value, "scan: the body returns ", outs.size(),
           " tensors; it returns the next carry", at_loc(loc));
    check_defined(outs[0], "scan body result", loc);
    std::lock_guard lock(eval_mutex());
    b = extract(outs[0].impl(), ph, scope.id());
  }
  std::vector<Tensor> operands{init};
  operands.insert(operands.end(), b.captured.begin(), b.captured.end());
  operands.insert(operands.end(), xs.begin(), xs.end());
  const int64_t nb = int64_t(b.captured.size()), nx = int64_t(xs.size());
  ir::ScanAttrs a;
  a.body = ir::SubGraph(std::move(b.graph));
  a.length = length;
  a.save_trajectory = opts.trajectory;
  a.num_bcast = nb;
  a.num_xs = nx;
  a.num_checkpoints = opts.checkpoints;
  return apply(
      operands,
      [&](ir::Graph& g, std::span<const ir::NodeId> ids) {
        return g.add_inferred(ir::Op(ir::OpKind::Scan, a), {ids.begin(), ids.end()}, loc);
      },
      loc);
}

} // namespace rlx::detail
