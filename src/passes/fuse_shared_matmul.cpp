// src/passes/fuse_shared_matmul.cpp -- matmuls of one input by constant weights become one matmul
// by the weights side by side, and a narrow of its columns per product.
//
// Assumes a verified graph. Groups the matmuls x @ w_i whose left operand is the same node x and
// whose weight w_i is a rank-2 Constant of x's dtype that only this matmul reads, the products
// having x's dtype too; a group of two or more becomes x @ [w_1 | w_2 | ...] and one narrow of
// the last axis per product. The weights are concatenated here, once, when the graph is
// compiled: a concat node of weights would run on every call (the original's flaw, a weight's
// worth of traffic per call), so weights that are still Params (not baked by param_specialize)
// are left alone, as are weights read elsewhere (they would be stored twice). Guarantees the same
// values bit for bit: every element is the same dot product, summed in the same order. Leaves no
// dead nodes (the separate weights go); each narrow takes the label and source line of the
// product it stands for, the wide product and its weight those of the group's first product.
#include "rlx/passes.hpp"

#include "rewriter.hpp"

#include <algorithm>
#include <cstring>
#include <map>
#include <vector>

namespace rlx::passes {
namespace {

/// Whether node n is x @ w with w a rank-2 constant read only by n, all of x's dtype.
bool is_constant_product(const ir::Graph& g, const ir::Node& n,
                         const std::vector<std::size_t>& reads) {
  if (n.op.kind() != ir::OpKind::MatMul) return false;
  const ir::Node& w = g.node(n.inputs[1]);
  ir::DType t = g.shape(n.inputs[0]).dtype();
  return w.op.kind() == ir::OpKind::Constant && reads[w.id.index] == 1 && w.shape.rank() == 2 &&
         w.shape.is_static() && w.shape.dtype() == t && n.shape.dtype() == t && n.shape.rank() > 0;
}

/// The weights of `products` side by side: row k is the rows k of each weight, in order.
ir::Op concatenated_weights(const ir::Graph& g, const std::vector<ir::NodeId>& products) {
  const ir::Shape& first = g.shape(g.node(products.front()).inputs[1]);
  int64_t rows = first.sizes()[0];
  auto elem = int64_t(ir::size_bytes(first.dtype()));
  std::vector<const std::vector<uint8_t>*> data;
  std::vector<int64_t> row_bytes;
  int64_t total = 0;
  for (ir::NodeId p : products) {
    const ir::Node& w = g.node(g.node(p).inputs[1]);
    data.push_back(&w.op.attrs<ir::ConstantAttrs>().data.data);
    row_bytes.push_back(w.shape.sizes()[1] * elem);
    total += row_bytes.back();
  }
  std::vector<uint8_t> out(std::size_t(rows * total));
  uint8_t* dst = out.data();
  for (int64_t k = 0; k < rows; ++k)
    for (std::size_t i = 0; i < data.size(); ++i) {
      std::memcpy(dst, data[i]->data() + k * row_bytes[i], std::size_t(row_bytes[i]));
      dst += row_bytes[i];
    }
  return ir::Op(ir::OpKind::Constant, ir::ConstantAttrs{ir::Bytes{std::move(out)}});
}

} // namespace

bool fuse_shared_matmul(ir::Graph& g, const PassOptions&) {
  std::vector<std::size_t> reads = read_counts(g);
  // The products of each input, in graph order.
  std::map<uint32_t, std::vector<ir::NodeId>> by_input;
  for (const ir::Node& n : g.nodes())
    if (is_constant_product(g, n, reads)) by_input[n.inputs[0].index].push_back(n.id);
  // group_of[i]: the products of node i's group when i is its first product; member[i]: node i
  // is a fused product or weight.
  std::vector<const std::vector<ir::NodeId>*> group_of(g.len(), nullptr);
  std::vector<uint8_t> member(g.len(), 0);
  for (const auto& [x, products] : by_input) {
    if (products.size() < 2) continue;
    group_of[products.front().index] = &products;
    for (ir::NodeId p : products) member[p.index] = member[g.node(p).inputs[1].index] = 1;
  }
  if (std::find(member.begin(), member.end(), uint8_t(1)) == member.end()) return false;
  Rewriter rw(g);
  std::vector<ir::NodeId> wide(g.len());   // each product's wide product
  std::vector<int64_t> column(g.len(), 0); // where its columns start there
  for (const ir::Node& n : g.nodes()) {
    if (!member[n.id.index]) {
      rw.copy(n);
      continue;
    }
    if (n.op.kind() == ir::OpKind::Constant) continue; // a weight: part of the concatenation
    if (const std::vector<ir::NodeId>* products = group_of[n.id.index]) {
      int64_t cols = 0;
      for (ir::NodeId p : *products) {
        column[p.index] = cols;
        cols += g.shape(g.node(p).inputs[1]).sizes()[1];
      }
      const ir::Shape& w0 = g.shape(n.inputs[1]);
      ir::Shape w_shape = w0.with_dim(1, ir::Dim(cols));
      ir::NodeId w = rw.append(n, concatenated_weights(g, *products), {}, w_shape);
      ir::Shape mm_shape = n.shape.with_dim(n.shape.rank() - 1, ir::Dim(cols));
      ir::NodeId mm = rw.append(n, ir::Op(ir::OpKind::MatMul), {rw[n.inputs[0]], w}, mm_shape);
      for (ir::NodeId p : *products) wide[p.index] = mm;
    }
    int64_t axis = int64_t(n.shape.rank()) - 1;
    int64_t len = g.shape(n.inputs[1]).sizes()[1];
    ir::Op narrow(ir::OpKind::Narrow, ir::NarrowAttrs{axis, column[n.id.index], len});
    rw.emit(n, std::move(narrow), {wide[n.id.index]});
  }
  g = rw.finish();
  return true;
}

} // namespace rlx::passes
