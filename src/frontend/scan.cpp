// src/frontend/scan.cpp -- rlx::scan: trace the body once on placeholders (the carry's tensors
// and one row of each xs), extract the values of that trace as the body graph (everything else
// it reaches, the captured tensors, becomes a broadcast Input), and record one scan node. A
// carry of several tensors, or a body returning a y, runs on one flat carry (the parts
// flattened and concatenated, the y's slot last); the results are cut out of it again.
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

int64_t numel(const Shape& s) { return *s.num_elements(); }

/// Where each piece of a flat carry is: offsets and sizes of the carry's tensors, then the y.
struct Layout {
  std::vector<int64_t> offset, size;
  int64_t total = 0;
  void add(const Shape& s) {
    offset.push_back(total);
    size.push_back(numel(s));
    total += size.back();
  }
};

/// The body graph of `outs` over the trace's placeholders (n_carry carry tensors, then one per
/// xs): nodes of trace `trace` are copied, every other value they reach is a captured
/// (broadcast) Input. With a layout, the carry is one flat Input the placeholders are cut from,
/// and the output the outs flattened and concatenated. Caller holds eval_mutex().
Body extract(std::span<const Tensor> outs, std::span<const Tensor> placeholders,
             std::size_t n_carry, uint64_t trace, const Layout* layout, const Loc& loc) {
  // Post-order of the trace's own nodes; captured values in the order first reached.
  std::unordered_map<const TensorImpl*, int> seen;
  for (const Tensor& p : placeholders) seen[p.impl().get()] = 1;
  std::vector<TensorImpl*> order;
  std::vector<std::shared_ptr<TensorImpl>> captured;
  auto visit_leafish = [&](const std::shared_ptr<TensorImpl>& p) {
    if (seen.count(p.get())) return true;
    if (p->trace != trace || p->buffer || !p->op) {
      seen[p.get()] = 1;
      captured.push_back(p);
      return true;
    }
    return false;
  };
  for (const Tensor& out : outs) {
    if (visit_leafish(out.impl())) continue;
    seen[out.impl().get()] = 1;
    std::vector<std::pair<TensorImpl*, std::size_t>> stack{{out.impl().get(), 0}};
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
  }
  Body b;
  ir::Graph& g = b.graph;
  std::unordered_map<const TensorImpl*, ir::NodeId> ids;
  if (layout) {
    ir::NodeId flat = g.input(
        "carry", Shape::of(std::vector<int64_t>{layout->total}, placeholders[0].shape().dtype()));
    for (std::size_t i = 0; i < n_carry; ++i) {
      const TensorImpl* p = placeholders[i].impl().get();
      ids[p] = g.reshape_(g.narrow_(flat, 0, layout->offset[i], layout->size[i], loc),
                          p->shape.sizes(), loc);
    }
  } else {
    ids[placeholders[0].impl().get()] = g.input("carry", placeholders[0].shape());
  }
  for (std::size_t j = 0; j < captured.size(); ++j) {
    ids[captured[j].get()] = g.input("captured" + std::to_string(j), captured[j]->shape);
    b.captured.emplace_back(captured[j]);
  }
  for (std::size_t i = n_carry; i < placeholders.size(); ++i) {
    const TensorImpl* p = placeholders[i].impl().get();
    ids[p] = g.input("x" + std::to_string(i - n_carry), p->shape);
  }
  for (TensorImpl* impl : order) {
    std::vector<ir::NodeId> in;
    for (const auto& x : impl->inputs) in.push_back(ids.at(x.get()));
    ids[impl] = g.append_node(*impl->op, std::move(in), impl->shape, std::nullopt, impl->loc);
  }
  if (!layout) {
    g.set_outputs({ids.at(outs[0].impl().get())});
    return b;
  }
  std::vector<ir::NodeId> pieces;
  for (std::size_t j = 0; j < outs.size(); ++j)
    pieces.push_back(g.reshape_(ids.at(outs[j].impl().get()), {layout->size[j]}, loc));
  g.set_outputs({pieces.size() == 1 ? pieces[0] : g.concat_(pieces, 0, loc)});
  return b;
}

} // namespace

std::vector<Tensor> scan_call(std::span<const Tensor> init, std::span<const Tensor> xs_in,
                              const TraceBody& body, const ScanOptions& opts, const Loc& loc) {
  if (init.empty()) fail(ErrorKind::Value, "scan: the carry holds no tensor", at_loc(loc));
  for (std::size_t i = 0; i < init.size(); ++i)
    check_defined(init[i], "scan init[" + std::to_string(i) + "]", loc);
  for (std::size_t i = 0; i < xs_in.size(); ++i) {
    check_defined(xs_in[i], "scan xs[" + std::to_string(i) + "]", loc);
    if (xs_in[i].shape().rank() == 0 || !xs_in[i].shape().dims()[0].is_static())
      fail(ErrorKind::Shape, "scan: xs[", i, "] is ", ir::short_str(xs_in[i].shape()),
           "; each xs needs a static leading axis (the steps)", at_loc(loc));
  }
  int64_t length = opts.length;
  if (length < 0) {
    if (xs_in.empty())
      fail(ErrorKind::Value, "scan: without xs the number of steps must be given (length)",
           at_loc(loc));
    length = xs_in[0].shape().dims()[0].size();
  }
  if (opts.trajectory && opts.checkpoints > 0)
    fail(ErrorKind::Value,
         "scan: a trajectory keeps every carry; checkpoints apply to scans returning the final "
         "carry",
         at_loc(loc));
  // reverse: the steps take the xs' rows from the last to the first.
  std::vector<Tensor> xs(xs_in.begin(), xs_in.end());
  if (opts.reverse)
    for (Tensor& x : xs) x = flip(x, {0}, loc);
  const std::size_t n_carry = init.size();
  Body b;
  Layout layout;
  bool packed = false, has_y = false;
  Shape y_shape;
  {
    TraceScope scope;
    std::vector<Tensor> ph;
    for (std::size_t i = 0; i < n_carry; ++i)
      ph.push_back(placeholder(init[i].shape(), scope.id(), int32_t(i), loc));
    for (std::size_t i = 0; i < xs.size(); ++i) {
      const auto& d = xs[i].shape().dims();
      ph.push_back(
          placeholder(Shape(std::vector<ir::Dim>(d.begin() + 1, d.end()), xs[i].shape().dtype()),
                      scope.id(), int32_t(n_carry + i), loc));
    }
    std::vector<Tensor> outs = body(ph);
    if (outs.size() != n_carry && outs.size() != n_carry + 1)
      fail(ErrorKind::Value, "scan: the body returns ", outs.size(), " tensors for a carry of ",
           n_carry, "; it returns the next carry, or (next carry, y)", at_loc(loc));
    has_y = outs.size() == n_carry + 1;
    if (has_y) y_shape = outs[n_carry].shape();
    for (std::size_t j = 0; j < outs.size(); ++j)
      check_defined(outs[j], has_y && j == n_carry ? "scan body's y" : "scan body result", loc);
    packed = n_carry > 1 || has_y;
    if (packed) {
      const ir::DType dt = init[0].shape().dtype();
      for (std::size_t j = 0; j < outs.size(); ++j) {
        const Shape& want = j < n_carry ? init[j].shape() : outs[j].shape();
        std::string what = j < n_carry ? "carry[" + std::to_string(j) + "]" : "y";
        if (j < n_carry && init[j].shape().dtype() != dt)
          fail(ErrorKind::Type, "scan: the carry's tensors share one dtype; carry[0] is ",
               ir::short_str(init[0].shape()), ", carry[", j, "] is ",
               ir::short_str(init[j].shape()), at_loc(loc));
        if (j < n_carry && outs[j].shape() != want)
          fail(ErrorKind::Shape, "scan: the body's next ", what, " is ",
               ir::short_str(outs[j].shape()), ", expected ", ir::short_str(want), at_loc(loc));
        if (j == n_carry && outs[j].shape().dtype() != dt)
          fail(ErrorKind::Type, "scan: the body's y is ", ir::short_str(outs[j].shape()),
               "; it shares the carry's dtype (", ir::short_str(init[0].shape()), ")", at_loc(loc));
        if (!want.is_static())
          fail(ErrorKind::Shape, "scan: the body's ", what, " is ", ir::short_str(want),
               "; a carry of several tensors (or a y) needs static shapes", at_loc(loc));
        layout.add(want);
      }
      if (has_y && opts.checkpoints > 0)
        fail(ErrorKind::Value,
             "scan: a body returning a y keeps every step's y; checkpoints apply to scans "
             "returning the final carry",
             at_loc(loc));
    }
    std::lock_guard lock(eval_mutex());
    b = extract(outs, ph, n_carry, scope.id(), packed ? &layout : nullptr, loc);
  }
  Tensor carry0 = init[0];
  if (packed) {
    std::vector<Tensor> parts;
    for (std::size_t i = 0; i < n_carry; ++i)
      parts.push_back(reshape(init[i], {layout.size[i]}, loc));
    if (has_y) parts.push_back(zeros({layout.size.back()}, init[0].shape().dtype(), loc));
    carry0 = parts.size() == 1 ? parts[0] : concat(std::span<const Tensor>(parts), 0, loc);
  }
  std::vector<Tensor> operands{carry0};
  operands.insert(operands.end(), b.captured.begin(), b.captured.end());
  operands.insert(operands.end(), xs.begin(), xs.end());
  const bool trajectory = opts.trajectory || has_y;
  ir::ScanAttrs a;
  a.body = ir::SubGraph(std::move(b.graph));
  a.length = length;
  a.save_trajectory = trajectory;
  a.num_bcast = int64_t(b.captured.size());
  a.num_xs = int64_t(xs.size());
  a.num_checkpoints = opts.checkpoints;
  Tensor res = apply(
      operands,
      [&](ir::Graph& g, std::span<const ir::NodeId> ids) {
        return g.add_inferred(ir::Op(ir::OpKind::Scan, a), {ids.begin(), ids.end()}, loc);
      },
      loc);
  // Rows in the xs' order (the last step's carry is then row 0 of a reversed scan).
  Tensor rows = trajectory && opts.reverse ? flip(res, {0}, loc) : res;
  if (!packed) return {rows};
  auto stacked = [&](std::size_t j, const Shape& s) {
    Dims dims{length};
    for (int64_t d : s.sizes()) dims.push_back(d);
    return reshape(narrow(rows, 1, layout.offset[j], layout.size[j], loc), dims, loc);
  };
  std::vector<Tensor> out;
  Tensor final_flat =
      trajectory ? reshape(narrow(res, 0, length - 1, 1, loc), {layout.total}, loc) : res;
  for (std::size_t i = 0; i < n_carry; ++i)
    out.push_back(opts.trajectory
                      ? stacked(i, init[i].shape())
                      : reshape(narrow(final_flat, 0, layout.offset[i], layout.size[i], loc),
                                init[i].shape().sizes(), loc));
  if (has_y) out.push_back(stacked(n_carry, y_shape));
  return out;
}

} // namespace rlx::detail
