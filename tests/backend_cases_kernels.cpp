// tests/backend_cases_kernels.cpp -- the backends suite's families whose kernels both backends
// share or call out to: spectral (FFTW on the JIT), linalg (LAPACK), quant, packed, collectives,
// random and splatting.
#include "support/backend_cases.hpp"

#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace rlx::test::backend_cases {

// ---- Spectral: fft (FFTW on the JIT, our own double FFT in the interpreter), lfilter,
// conjugate and complex_norm_sq.

std::vector<Case> spectral_cases() {
  std::vector<Case> cases;
  const std::vector<Dims> shapes = {{2, 2}, {3, 14}, {2, 3, 34}, {1, 256}, {4, 2 * 45}};
  for (DType t : {F32, F64})
    add_case(cases, "fft " + dt(t) + " in every norm, forward and inverse", [&](Builder& b) {
      for (const Dims& d : shapes)
        for (ir::FftNorm norm : {ir::FftNorm::Backward, ir::FftNorm::Forward, ir::FftNorm::Ortho})
          for (bool inv : {false, true})
            b.out(b.op(Op(OpKind::Fft, ir::FftAttrs{inv, norm}),
                       {b.in(d, t, {Fill::Uniform, -1, 1})}));
    });
  add_case(cases, "fft, conjugate and complex_norm_sq of c64", [&](Builder& b) {
    for (const Dims& d : shapes) {
      NodeId re = b.in(d, F32, {Fill::Uniform, -1, 1});
      NodeId z = b.op(Op(OpKind::Cast, ir::CastAttrs{C64}), {re});
      NodeId zz = b.op(Op(OpKind::Fft, ir::FftAttrs{false, ir::FftNorm::Backward}), {z});
      b.out(zz);
      b.out(b.op(Op(OpKind::Fft, ir::FftAttrs{true, ir::FftNorm::Ortho}), {zz}));
      b.out(b.op(Op(OpKind::Conjugate), {zz}));
      b.out(b.op(Op(OpKind::ComplexNormSq), {zz}));
    }
  });
  for (DType t : {F32, F64})
    add_case(cases, "lfilter " + dt(t) + " with and without an initial state", [&](Builder& b) {
      NodeId x = b.in({2, 3, 50}, t, {Fill::Uniform, -1, 1});
      NodeId bb = b.values({3}, t, {0.2, 0.3, -0.1});
      NodeId a = b.values({3}, t, {1.0, -0.5, 0.25});
      b.out(b.op(Op(OpKind::Lfilter), {x, bb, a}));
      b.out(b.op(Op(OpKind::Lfilter), {x, bb, a, b.in({3, 2}, t, {Fill::Uniform, -1, 1})}));
      b.out(b.op(Op(OpKind::Lfilter), {b.in({7}, t, {Fill::Uniform, -1, 1}),
                                       b.values({1}, t, {2.0}), b.values({1}, t, {4.0})}));
    });
  return cases;
}

/// The Linalg kinds run the same LAPACK kernels on both backends (the JIT's interpreter steps):
/// batched f32 and f64, matrix and vector right-hand sides, full and reduced SVDs.
std::vector<Case> linalg_cases() {
  std::vector<Case> cases;
  for (DType t : {F32, F64})
    add_case(cases, "solve, slogdet, cholesky, qr, svd and eigh " + dt(t), [&](Builder& b) {
      NodeId a = b.in({2, 3, 3}, t, {Fill::Uniform, -1, 1});
      b.out(b.op(Op(OpKind::Solve), {a, b.in({2, 3, 2}, t, {Fill::Uniform, -1, 1})}));
      b.out(b.op(Op(OpKind::Solve), {a, b.in({2, 3}, t, {Fill::Uniform, -1, 1})}));
      b.out(b.op(Op(OpKind::Slogdet), {a}));
      NodeId at = b.op(Op(OpKind::Transpose, ir::TransposeAttrs{{0, 2, 1}}), {a});
      NodeId spd = b.op(Op(OpKind::Add), {b.op(Op(OpKind::MatMul), {a, at}),
                                          b.values({3, 3}, t, {3, 0, 0, 0, 3, 0, 0, 0, 3})});
      b.out(b.op(Op(OpKind::Cholesky), {spd}));
      b.out(b.op(Op(OpKind::Eigh), {spd}));
      NodeId m = b.in({2, 4, 3}, t, {Fill::Uniform, -1, 1});
      b.out(b.op(Op(OpKind::Qr), {m}));
      b.out(b.op(Op(OpKind::Svd, ir::SvdAttrs{false}), {m}));
      b.out(b.op(Op(OpKind::Svd, ir::SvdAttrs{true}), {b.in({3, 5}, t, {Fill::Uniform, -1, 1})}));
    });
  return cases;
}

/// The Quant kinds: q_matmul with an i8 w on the JIT's int8 GEMM (VNNI hosts), the others on
/// the interpreter's kernels; integer results must agree exactly.
std::vector<Case> quant_cases() {
  std::vector<Case> cases;
  add_case(cases, "quantize, dequantize, fake_quantize, q_matmul and q_conv2d", [&](Builder& b) {
    auto quantize = [&](NodeId x, std::optional<int64_t> axis, std::vector<float> scales,
                        ir::Ints zps, DType t) {
      return b.op(Op(OpKind::Quantize, ir::QuantizeAttrs{axis, scales, zps, t}), {x});
    };
    NodeId x = b.in({5, 37}, F32, {Fill::Uniform, -2, 2});
    NodeId w = b.in({37, 9}, F32, {Fill::Uniform, -1, 1});
    NodeId qx = quantize(x, std::nullopt, {0.02f}, {128}, DType::U8);
    NodeId qw = quantize(w, 1, std::vector<float>(9, 0.01f), ir::Ints(9, 0), DType::I8);
    b.out(b.op(Op(OpKind::QMatMul, ir::QMatMulAttrs{128, {0}, 3, {0.004f}, DType::I8}), {qx, qw}));
    b.out(b.op(Op(OpKind::QMatMul, ir::QMatMulAttrs{128, {0}, 0, {1.0f}, DType::I32}), {qx, qw}));
    b.out(b.op(Op(OpKind::Dequantize,
                  ir::DequantizeAttrs{1, std::vector<float>(9, 0.01f), ir::Ints(9, 0)}),
               {qw}));
    b.out(b.op(Op(OpKind::FakeQuantize, ir::QuantizeAttrs{std::nullopt, {0.05f}, {-3}}), {x}));
    NodeId img = quantize(b.in({1, 4, 6, 5}, F32, {Fill::Uniform, -1, 1}), std::nullopt, {0.01f},
                          {0}, DType::I8);
    NodeId k = quantize(b.in({6, 2, 3, 2}, F32, {Fill::Uniform, -1, 1}), std::nullopt, {0.01f}, {0},
                        DType::I8);
    ir::QConv2dAttrs conv{{3, 2}, {1, 1}, {1, 0}, {1, 1}, 2, 0, {0}, 2, {0.003f}, DType::U8};
    b.out(b.op(Op(OpKind::QConv2d, conv), {img, k}));
  });
  return cases;
}

std::vector<Case> packed_cases() {
  std::vector<Case> cases;
  add_case(cases, "dequant_matmul: Q8_0 packed bytes, Int8Block and FP8 E4M3 split forms",
           [&](Builder& b) {
             std::vector<double> q8; // two rows of two Q8_0 blocks: d = 1 (f16 0x3C00), codes
             for (int blk = 0; blk < 4; ++blk) {
               q8.push_back(0x00);
               q8.push_back(0x3C);
               for (int i = 0; i < 32; ++i) q8.push_back(double((blk * 37 + i * 11) % 256));
             }
             NodeId x = b.in({3, 64}, F32, {Fill::Uniform, -1, 1});
             b.out(b.op(Op(OpKind::DequantMatMul,
                           ir::DequantMatMulAttrs{ir::QuantScheme::of(ir::QuantFormat::Q8_0)}),
                        {x, b.values({2, 68}, ir::DType::U8, q8)}));
             b.out(b.op(
                 Op(OpKind::DequantMatMul, ir::DequantMatMulAttrs{ir::QuantScheme::int8_block(32)}),
                 {x, b.in({5, 64}, ir::DType::I8, {Fill::Uniform, -127, 127}),
                  b.in({5, 2}, F32, {Fill::Uniform, 0.01, 0.05}),
                  b.in({5, 2}, F32, {Fill::Uniform, 0, 1})}));
             std::vector<double> codes;
             for (int i = 0; i < 4 * 64; ++i) codes.push_back(double((i * 29) % 0x7F));
             b.out(b.op(Op(OpKind::DequantMatMul,
                           ir::DequantMatMulAttrs{ir::QuantScheme::of(ir::QuantFormat::Fp8E4m3)}),
                        {x, b.values({4, 64}, ir::DType::U8, codes),
                         b.in({4}, F32, {Fill::Uniform, 0.001, 0.01}), b.values({1}, F32, {0})}));
           });
  return cases;
}

/// The Collective kinds on a job of one process (the suite's): every reduction, gather and
/// scatter leaves x as it is and a message to this rank comes back; both backends run the same
/// kernels (the JIT's interpreter steps). Several ranks: tests/test_dist.cpp.
std::vector<Case> collective_cases() {
  std::vector<Case> cases;
  for (DType t : {F32, F64})
    add_case(cases, "collectives of one rank " + dt(t), [&](Builder& b) {
      NodeId x = b.in({3, 4}, t, {Fill::Uniform, -2, 2});
      for (ir::CollectiveOp op : {ir::CollectiveOp::Sum, ir::CollectiveOp::Mean,
                                  ir::CollectiveOp::Max, ir::CollectiveOp::Min})
        b.out(b.op(Op(OpKind::AllReduce, ir::AllReduceAttrs{op}), {x}));
      b.out(b.op(Op(OpKind::AllGather, ir::GatherRanksAttrs{1, 1}), {x}));
      b.out(b.op(Op(OpKind::ReduceScatter, ir::GatherRanksAttrs{0, 1}), {x}));
      b.out(b.op(Op(OpKind::Broadcast, ir::RootAttrs{0}), {x}));
      b.out(b.op(Op(OpKind::ReduceToRoot, ir::RootAttrs{0}), {x}));
      NodeId sent = b.op(Op(OpKind::Send, ir::PeerAttrs{0, 5}), {x});
      b.out(b.op(Op(OpKind::Recv, ir::PeerAttrs{0, 5}), {sent}));
    });
  return cases;
}

/// The Random family runs the interpreter's kernels on both backends (the JIT's interpreter
/// steps): every distribution and key operation, and sample with a seed and with a key operand.
std::vector<Case> random_cases() {
  std::vector<Case> cases;
  add_case(cases, "random draws of every kind, and sample", [&](Builder& b) {
    NodeId key = b.values({}, I64, {12345});
    auto draw = [&](ir::RandomDist dist, Dims sizes, DType t, double lo, double hi, int64_t ilo,
                    int64_t ihi) {
      b.out(b.op(Op(OpKind::Random, ir::RandomAttrs{dist, sizes, t, lo, hi, ilo, ihi}), {key}));
    };
    draw(ir::RandomDist::Uniform, {3, 4}, F32, -1, 2, 0, 0);
    draw(ir::RandomDist::Normal, {5}, F64, 0, 1, 0, 0);
    draw(ir::RandomDist::Gumbel, {5}, F32, 0, 1, 0, 0);
    draw(ir::RandomDist::Exponential, {5}, F64, 0, 1, 0, 0);
    draw(ir::RandomDist::Bernoulli, {7}, DType::Bool, 0.4, 1, 0, 0);
    draw(ir::RandomDist::Randint, {6}, I32, 0, 1, -4, 9);
    draw(ir::RandomDist::Permutation, {5}, I64, 0, 1, 0, 8);
    draw(ir::RandomDist::Split, {3}, I64, 0, 1, 0, 0);
    draw(ir::RandomDist::FoldIn, {}, I64, 0, 1, 99, 0);
    NodeId logits = b.in({3, 9}, F32, {Fill::Uniform, -2, 2});
    b.out(b.op(Op(OpKind::Sample, ir::SampleAttrs{3, 0.9f, 0.8f, 7}), {logits}));
    b.out(b.op(Op(OpKind::Sample, ir::SampleAttrs{0, 1.0f, 1.0f, 0}), {logits, key}));
  });
  return cases;
}

/// The Splat kinds (one kernel, run with tiles on the JIT's thread pool): render, prepare then
/// rasterize, and the backward, on four Gaussians in front of a 16x16 camera in 8-pixel tiles.
std::vector<Case> splat_cases() {
  std::vector<Case> cases;
  add_case(cases, "gaussian_splat render, prepare, rasterize and backward", [&](Builder& b) {
    const double tan_y = std::tan(25.0 * 3.14159265358979323846 / 180.0), fy = 16 / (2 * tan_y);
    NodeId means = b.op(Op(OpKind::Add), {b.in({4, 3}, F32, {Fill::Uniform, -0.5, 0.5}),
                                          b.values({1, 3}, F32, {0, 0, 3})});
    std::vector<NodeId> scene{
        means,
        b.in({4, 3}, F32, {Fill::Uniform, -2, -1}),
        b.in({4, 4}, F32, {Fill::Uniform, -1, 1}),
        b.in({4}, F32, {Fill::Uniform, -1, 2}),
        b.in({4, 3}, F32, {Fill::Uniform, -1, 1}),
        b.in({4, 3, 3}, F32, {Fill::Uniform, -0.3, 0.3}),
        b.values({23}, F32, {0,   0,   0,   0,  0,  1,  0,  1, 0, 50,    0.2,  100,
                             0.1, 0.2, 0.3, 16, 16, fy, fy, 8, 8, tan_y, tan_y})};
    ir::GaussianSplatAttrs a;
    a.width = 16;
    a.height = 16;
    a.tile_size = 8;
    b.out(b.op(Op(OpKind::GaussianSplatRender, a), scene));
    NodeId prep = b.op(Op(OpKind::GaussianSplatPrepare, a), scene);
    b.out(b.op(Op(OpKind::GaussianSplatRasterize, a), {prep, scene[6]}));
    ir::GaussianSplatBackwardAttrs ba;
    ba.width = 16;
    ba.height = 16;
    ba.tile_size = 8;
    std::vector<NodeId> with_d = scene;
    with_d.push_back(b.in({16, 16, 4}, F32, {Fill::Uniform, -1, 1}));
    b.out(b.op(Op(OpKind::GaussianSplatRenderBackward, ba), with_d));
  });
  return cases;
}

} // namespace rlx::test::backend_cases
