// tests/backend_cases_graphs.cpp -- the backends suite's cases about graphs more than ops: f16,
// bf16 and narrow integers through many ops, leaves and constants as outputs, row ops with
// element-wise prologues, zero-size tensors, run-time errors, and sub-graphs (custom_fn,
// registered custom ops, scan).
#include "support/backend_cases.hpp"

#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace rlx::test::backend_cases {

// ---- Other dtypes, leaves and constants as outputs, zero-size tensors, run-time errors

std::vector<Case> half_cases() {
  std::vector<Case> cases;
  for (DType t : {F16, BF16})
    add_case(cases, "arithmetic " + dt(t), [&](Builder& b) {
      NodeId x = b.in({13, 7}, t, {Fill::Uniform, -2, 2}), y = b.in({7}, t, {Fill::Uniform, -2, 2});
      NodeId p = b.in({13, 7}, t, {Fill::Uniform, 0.1, 4});
      for (OpKind k : {OpKind::Add, OpKind::Sub, OpKind::Mul, OpKind::Div, OpKind::Max, OpKind::Lt})
        b.out(b.op(Op(k), {x, y}));
      for (OpKind k : {OpKind::Exp, OpKind::Tanh, OpKind::Sigmoid, OpKind::Gelu, OpKind::Neg})
        b.out(b.op(Op(k), {x}));
      b.out(b.op(Op(OpKind::Sqrt), {p}));
      b.out(b.op(Op(OpKind::Log), {p}));
      b.out(b.op(Op(OpKind::ReduceSum, ir::ReduceAttrs{{1}, false}), {x}));
      b.out(b.op(Op(OpKind::ReduceMean, ir::ReduceAttrs{{0, 1}, false}), {x}));
      b.out(b.op(Op(OpKind::ReduceMax, ir::ReduceAttrs{{0}, true}), {x}));
      b.out(b.op(Op(OpKind::Softmax, ir::AxisAttrs{-1}), {x}));
      b.out(b.op(Op(OpKind::MatMul), {x, b.in({7, 3}, t, {Fill::Uniform, -1, 1})}));
      b.out(b.op(Op(OpKind::Cast, ir::CastAttrs{F32}), {x}));
      b.out(b.op(Op(OpKind::Cast, ir::CastAttrs{t}), {b.in({40}, F32, {Fill::Special})}));
      b.out(b.op(Op(OpKind::Add), {x, b.in({13, 7}, F32)})); // promotes to f32
    });
  return cases;
}

std::vector<Case> narrow_int_cases() {
  std::vector<Case> cases;
  for (DType t : {I8, I16, U8, U32})
    add_case(cases, "saturating arithmetic " + dt(t), [&](Builder& b) {
      NodeId x = b.in({9, 1}, t, {Fill::IntEdge, 0, 9}), y = b.in({1, 9}, t, {Fill::IntEdge, 0, 9});
      for (OpKind k : {OpKind::Add, OpKind::Sub, OpKind::Mul, OpKind::Div, OpKind::Mod, OpKind::Max,
                       OpKind::Lt})
        b.out(b.op(Op(k), {x, y}));
      for (OpKind k : {OpKind::Neg, OpKind::Abs, OpKind::Relu}) b.out(b.op(Op(k), {x}));
      NodeId big = b.in({3, 100}, t, {Fill::IntEdge, 0, 100});
      b.out(b.op(Op(OpKind::ReduceSum, ir::ReduceAttrs{{1}, false}), {big}));
      b.out(b.op(Op(OpKind::Cumsum, ir::CumsumAttrs{1, false}), {big}));
      b.out(b.op(Op(OpKind::MatMul), {big, b.in({100, 2}, t, {Fill::Integers, 0, 3})}));
      b.out(
          b.op(Op(OpKind::Cast, ir::CastAttrs{t}), {b.in({40}, F32, {Fill::Uniform, -1e3, 1e3})}));
    });
  return cases;
}

std::vector<Case> output_cases() {
  std::vector<Case> cases;
  add_case(cases, "leaves, constants and repeated nodes as outputs", [&](Builder& b) {
    NodeId x = b.in({3}, F32), p = b.in({2}, I32, {Fill::Integers, -5, 5});
    NodeId c = b.g.constant(2.5, F32);
    NodeId y = b.op(Op(OpKind::Add), {x, c});
    Buffer vec =
        Buffer::from_f64(ir::Shape::of(Dims{4}, F64), std::vector<double>{1.5, -2, 0, 1e-300});
    ir::Bytes bytes;
    for (std::byte v : vec.bytes()) bytes.data.push_back(std::to_integer<uint8_t>(v));
    NodeId cv = b.g.append_node(Op(OpKind::Constant, ir::ConstantAttrs{bytes}), {}, vec.shape(),
                                std::nullopt);
    for (NodeId id :
         {x, y, c, y, p, b.g.constant(1.5, F16), b.g.constant(-7, I32), b.g.constant(1, Bool), cv,
          b.op(Op(OpKind::Mul), {cv, b.g.constant(3, F64)}), x})
      b.out(id);
  });
  add_case(cases, "a graph that only returns its input",
           [&](Builder& b) { b.out(b.in({2, 3}, F64)); });
  return cases;
}

/// Row ops whose first operand is an element-wise chain read by nothing else: the JIT computes
/// the chain inside the row kernel (the row step's prologue kernel, src/lir/partition.cpp). Rows of
/// many lengths, chain operands broadcast along the rows, across them, or one element.
std::vector<Case> prologue_cases() {
  std::vector<Case> cases;
  // One row op per case: element-wise chains of one shape in one graph would share a kernel
  // (several results), which then runs on its own.
  enum class Row { Softmax, SumExp, MaxSquare, LayerNormTanh };
  for (DType t : {F32, F64})
    for (Dims d : std::vector<Dims>{{3, 1}, {2, 7}, {4, 16}, {3, 33}, {2, 3, 1000}})
      for (Row row : {Row::Softmax, Row::SumExp, Row::MaxSquare, Row::LayerNormTanh}) {
        std::string name = "row op " + std::to_string(int(row)) + " with a prologue " + dt(t) +
                           " over " + std::to_string(d.size()) + "-d rows of " +
                           std::to_string(d.back());
        add_case(cases, name, [&](Builder& b) {
          int64_t len = d.back();
          NodeId x = b.in(d, t, {Fill::Uniform, -3, 3});
          NodeId along = b.in({len}, t, {Fill::Uniform, -1, 1}); // varies along a row
          Dims across_dims = d;
          across_dims.back() = 1;
          NodeId across = b.in(across_dims, t, {Fill::Uniform, -1, 1}); // constant along a row
          switch (row) {
          case Row::Softmax: {
            NodeId half = b.g.constant(0.5, t);
            NodeId scaled = b.op(Op(OpKind::Add), {b.op(Op(OpKind::Mul), {x, half}), along});
            b.out(b.op(Op(OpKind::Softmax, ir::AxisAttrs{-1}), {scaled}));
            break;
          }
          case Row::SumExp:
            b.out(b.op(Op(OpKind::ReduceSum, ir::ReduceAttrs{{-1}, false}),
                       {b.op(Op(OpKind::Exp), {b.op(Op(OpKind::Sub), {x, across})})}));
            break;
          case Row::MaxSquare:
            b.out(b.op(Op(OpKind::ReduceMax, ir::ReduceAttrs{{-1}, true}),
                       {b.op(Op(OpKind::Mul), {x, x})}));
            break;
          case Row::LayerNormTanh: {
            NodeId gamma = b.in({len}, t, {Fill::Uniform, 0.5, 1.5});
            NodeId beta = b.in({len}, t, {Fill::Uniform, -1, 1});
            NodeId moved = b.op(Op(OpKind::Tanh), {b.op(Op(OpKind::Add), {x, along})});
            b.out(b.op(Op(OpKind::LayerNorm, ir::NormAttrs{-1, 1e-5f}), {moved, gamma, beta}));
            break;
          }
          }
        });
      }
  return cases;
}

std::vector<Case> zero_size_cases() {
  std::vector<Case> cases;
  add_case(cases, "zero-size tensors", [&](Builder& b) {
    NodeId x = b.in({0, 3}, F32), y = b.in({3}, F32), xi = b.in({0, 3}, I32);
    b.out(b.op(Op(OpKind::Add), {x, y}));
    b.out(b.op(Op(OpKind::Exp), {x}));
    for (OpKind k : {OpKind::ReduceSum, OpKind::ReduceMean, OpKind::ReduceProd}) {
      b.out(b.op(Op(k, ir::ReduceAttrs{{0}, false}), {x}));
      b.out(b.op(Op(k, ir::ReduceAttrs{{0}, true}), {xi}));
      b.out(b.op(Op(k, ir::ReduceAttrs{{1}, false}), {x}));
    }
    b.out(b.op(Op(OpKind::ReduceMax, ir::ReduceAttrs{{1}, false}), {x}));
    b.out(b.op(Op(OpKind::MatMul), {b.in({2, 0}, F32), b.in({0, 3}, F32)}));
    b.out(b.op(Op(OpKind::MatMul), {b.in({2, 0}, I64), b.in({0, 3}, I64)}));
    b.out(b.op(Op(OpKind::Concat, ir::ConcatAttrs{0}), {x, b.in({2, 3}, F32)}));
    b.out(b.op(Op(OpKind::Reshape, ir::ReshapeAttrs{{3, 0}}), {x}));
    b.out(b.op(Op(OpKind::Transpose, ir::TransposeAttrs{{1, 0}}), {x}));
    b.out(b.op(Op(OpKind::Slice, ir::SliceAttrs{0, 0, 0, 1}), {b.in({7}, F64)}));
    b.out(b.op(Op(OpKind::Cumsum, ir::CumsumAttrs{0, false}), {x}));
    b.out(b.op(Op(OpKind::Softmax, ir::AxisAttrs{1}), {x}));
  });
  return cases;
}

std::vector<Case> runtime_error_cases() {
  std::vector<Case> cases;
  add_case(
      cases, "gather with an index past the end",
      [&](Builder& b) {
        b.out(b.op(Op(OpKind::Gather, ir::GatherAttrs{0}),
                   {b.in({10, 4}, F32), b.values({2}, I64, {3, 10})}));
      },
      true);
  add_case(
      cases, "gather with a NaN float index",
      [&](Builder& b) {
        b.out(b.op(Op(OpKind::Gather, ir::GatherAttrs{0}),
                   {b.in({10, 4}, F32), b.values({2}, F32, {1, std::nan("")})}));
      },
      true);
  add_case(
      cases, "reduce_max over a zero-length axis",
      [&](Builder& b) {
        b.out(b.op(Op(OpKind::ReduceMax, ir::ReduceAttrs{{0}, false}), {b.in({0, 3}, F32)}));
      },
      true);
  add_case(
      cases, "argmin over a zero-length axis",
      [&](Builder& b) {
        b.out(b.op(Op(OpKind::ArgMin, ir::ArgReduceAttrs{0, false}), {b.in({0, 3}, I32)}));
      },
      true);
  return cases;
}

// ---- Sub-graphs: custom_fn (inlined by the pipeline on both backends; a runtime step through
// the interpreter's kernel where the JIT sees it un-inlined).
std::vector<Case> control_cases() {
  std::vector<Case> cases;
  for (DType t : {F32, F64})
    add_case(cases, "custom_fn " + dt(t) + ", nested, on matrices and scalars", [&](Builder& b) {
      auto body = [&](const Dims& d) {
        ir::Graph f("f");
        NodeId x = f.input("x", ir::Shape::of(d, t));
        NodeId y = f.input("y", ir::Shape::of(d, t));
        f.set_outputs({f.add(f.mul(f.tanh(x), y), f.exp(f.neg(f.mul(x, x))))});
        return f;
      };
      for (const Dims& d : {Dims{3, 17}, Dims{}, Dims{2, 1, 40}}) {
        NodeId x = b.in(d, t, {Fill::Uniform, -2, 2}), y = b.in(d, t, {Fill::Uniform, -2, 2});
        NodeId v = b.out(b.g.custom_fn({x, y}, body(d)));
        // A body calling a custom_fn.
        ir::Graph outer("outer");
        NodeId p = outer.input("p", ir::Shape::of(d, t));
        outer.set_outputs(
            {outer.add_inferred(Op(OpKind::Sin), {outer.custom_fn({p, p}, body(d))})});
        b.out(b.g.custom_fn({v}, outer));
      }
    });
  // A registered custom op: the JIT runs its kernel as a step between fused kernels.
  add_case(cases, "custom op (registered x*|x|) between element-wise ops", [&](Builder& b) {
    CustomOp op;
    op.infer_shape = [](std::span<const ir::Shape> in, AttrBytes) { return in[0]; };
    op.kernel = [](std::span<const Buffer* const> in, Buffer& out, AttrBytes) {
      for (int64_t i = 0; i < out.numel(); ++i)
        out.set_f64(i, in[0]->get_f64(i) * std::fabs(in[0]->get_f64(i)));
    };
    register_op("backends.signed_square", op, true);
    for (DType t : {F32, F64}) {
      NodeId x = b.in({3, 17}, t, {Fill::Uniform, -2, 2});
      NodeId y = b.g.custom_op("backends.signed_square", {}, {b.g.tanh(x)});
      b.out(b.g.exp(b.g.neg(y)));
    }
  });
  // scan: a loop over time whose body the JIT compiles once (ScanStep); its backward companions
  // with a hand-written body_vjp, from the full trajectory and from checkpoints.
  for (DType t : {F32, F64})
    add_case(cases, "scan " + dt(t) + " with broadcast and per-step operands", [&](Builder& b) {
      const int64_t len = 7;
      ir::Shape c = ir::Shape::of(Dims{2, 3}, t), row = ir::Shape::of(Dims{3}, t);
      ir::Graph body("step");
      NodeId h = body.input("h", c), w = body.input("w", ir::Shape::of(Dims{3, 3}, t));
      NodeId x = body.input("x", row);
      body.set_outputs({body.tanh(body.add(body.mm(h, w), x))});
      NodeId h0 = b.in({2, 3}, t, {Fill::Uniform, -1, 1});
      NodeId wv = b.in({3, 3}, t, {Fill::Uniform, -0.8, 0.8});
      NodeId xs = b.in({len, 3}, t, {Fill::Uniform, -1, 1});
      b.out(b.g.scan_with_bcasts_and_xs(h0, {wv}, {xs}, body, len));
      ir::ScanAttrs a;
      a.body = ir::SubGraph(body);
      a.length = len;
      a.save_trajectory = true;
      a.num_bcast = 1;
      a.num_xs = 1;
      b.out(b.op(Op(OpKind::Scan, a), {h0, wv, xs}));
      a.num_checkpoints = 3;
      b.out(b.op(Op(OpKind::Scan, a), {h0, wv, xs}));
    });
  for (DType t : {F32, F64})
    add_case(cases, "scan_backward and scan_backward_xs " + dt(t), [&](Builder& b) {
      const int64_t len = 6;
      ir::Shape c = ir::Shape::of(Dims{4}, t);
      ir::Graph fwd("mul_step");
      fwd.set_outputs({fwd.mul(fwd.input("c", c), fwd.input("a", c))});
      ir::Graph vjp("mul_step_vjp");
      NodeId vc = vjp.input("c", c), va = vjp.input("a", c), d = vjp.input("d_output", c);
      vjp.set_outputs({vjp.mul(d, va), vjp.mul(d, vc)});
      NodeId c0 = b.in({4}, t, {Fill::Uniform, -1, 1});
      NodeId traj = b.in({len, 4}, t, {Fill::Uniform, -1, 1});
      NodeId cps = b.in({2, 4}, t, {Fill::Uniform, -1, 1});
      NodeId up = b.in({4}, t, {Fill::Uniform, -1, 1});
      NodeId ups = b.in({len, 4}, t, {Fill::Uniform, -1, 1});
      NodeId as = b.in({len, 4}, t, {Fill::Uniform, -1.2, 1.2});
      ir::Shape xs_shape = ir::Shape::of(Dims{len, 4}, t);
      b.out(b.g.scan_backward(c0, traj, up, {as}, vjp, len, false, c));
      b.out(b.g.scan_backward_xs(c0, traj, ups, {as}, vjp, len, true, 0, xs_shape));
      b.out(b.g.scan_backward_with_checkpoints(c0, cps, up, {as}, vjp, len, false, 2, fwd, c));
      b.out(b.g.scan_backward_xs_with_checkpoints(c0, cps, ups, {as}, vjp, len, true, 0, 2, fwd,
                                                  xs_shape));
    });
  return cases;
}

} // namespace rlx::test::backend_cases
