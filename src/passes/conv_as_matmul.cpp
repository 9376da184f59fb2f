// src/passes/conv_as_matmul.cpp -- a 2-D convolution becomes im2col and one batched product by
// the weight, so the JIT runs it on its GEMM (jit/gemm.hpp) instead of the interpreter's loop.
//
// conv2d(x [N, C, H, W], w [O, C, kH, kW]) with groups 1 is, per image n,
//   w as [O, C*kH*kW]  @  (im2col(x) as [N, L, C*kH*kW])[n]^T  =  y[n] as [O, L]
// with L = H_out * W_out: im2col's rows are (n, h_out, w_out) and its columns (c, ki, kj), the
// weight's row-major order. The transpose is of the last two axes, which the GEMM reads through
// strides (no copy), and the product's [N, O, L] is the NCHW result reshaped. Assumes a verified
// graph. Rewrites static f32 convolutions with groups 1 (the GEMM's dtype); others stay.
// Guarantees the same values within rounding (the product sums the taps in another order). The
// replaced conv2d leaves no dead node; the reshape that ends the chain takes its label and line.
#include "rlx/passes.hpp"

#include "rewriter.hpp"

#include <vector>

namespace rlx::passes {
namespace {

bool rewritable(const ir::Graph& g, const ir::Node& n) {
  if (n.op.kind() != ir::OpKind::Conv2d || n.op.attrs<ir::Conv2dAttrs>().groups != 1) return false;
  if (!n.shape.is_static() || n.shape.dtype() != ir::DType::F32) return false;
  for (ir::NodeId in : n.inputs)
    if (!g.shape(in).is_static() || g.shape(in).dtype() != ir::DType::F32) return false;
  return true;
}

} // namespace

bool conv_as_matmul(ir::Graph& g, const PassOptions&) {
  bool any = false;
  for (const ir::Node& n : g.nodes()) any = any || rewritable(g, n);
  if (!any) return false;
  Rewriter rw(g);
  for (const ir::Node& n : g.nodes()) {
    if (!rewritable(g, n)) {
      rw.copy(n);
      continue;
    }
    const auto& a = n.op.attrs<ir::Conv2dAttrs>();
    const std::vector<int64_t> x = g.shape(n.inputs[0]).sizes(), y = n.shape.sizes();
    const int64_t batch = x[0], out_ch = y[1], l = y[2] * y[3];
    const int64_t depth = x[1] * a.kernel_size[0] * a.kernel_size[1];
    auto shape = [](std::vector<int64_t> dims) { return ir::Shape::of(dims, ir::DType::F32); };
    auto reshape = [](std::vector<int64_t> dims) {
      return ir::Op(ir::OpKind::Reshape, ir::ReshapeAttrs{std::move(dims)});
    };
    ir::NodeId cols = rw.append(
        n,
        ir::Op(ir::OpKind::Im2Col, ir::Im2ColAttrs{a.kernel_size, a.stride, a.padding, a.dilation}),
        {rw[n.inputs[0]]}, shape({batch * l, depth}));
    ir::NodeId cols3 = rw.append(n, reshape({batch, l, depth}), {cols}, shape({batch, l, depth}));
    ir::NodeId cols_t = rw.append(n, ir::Op(ir::OpKind::Transpose, ir::TransposeAttrs{{0, 2, 1}}),
                                  {cols3}, shape({batch, depth, l}));
    ir::NodeId w2 =
        rw.append(n, reshape({out_ch, depth}), {rw[n.inputs[1]]}, shape({out_ch, depth}));
    ir::NodeId prod = rw.append(n, ir::Op(ir::OpKind::MatMul, ir::NoAttrs{}), {w2, cols_t},
                                shape({batch, out_ch, l}));
    rw.emit(n, reshape(y), {prod});
  }
  g = rw.finish();
  return true;
}

} // namespace rlx::passes
