// jit/llvm/vmath.cpp -- f32 exp, log, tanh, sigmoid, erf, sin and cos as straight-line IR (fma,
// selects, integer bit operations), so a loop calling them vectorizes to the host's widest
// registers.
//
// Each is a range reduction plus a short polynomial, the classic scheme (Cody & Waite reduction;
// exp's polynomial is fitted by tools/fit/fit_exp.py, log's coefficients are the well-known
// minimax fit of the Cephes single-precision library). Special values are handled by selects: NaN
// propagates, infinities and zeros give the IEEE results, subnormal inputs and results are exact to
// the same bound. The values are scalars or vectors (jv.hpp's vector mode); with 16 lanes (AVX-512)
// 2^n scaling is vscalefps. Quotients are plain correctly rounded divisions: one vector division
// per function costs less than the reciprocal estimate's four instructions (measured in bench/) and
// rounds once.
//
// Accuracy against the correctly rounded result (measured by tests/test_vmath.cpp over a dense
// sweep of every binade, and asserted there):
//   exp <= 1 ulp    log <= 1 ulp    tanh <= 2 ulp    sigmoid <= 2 ulp    erf <= 2 ulp
//   sin <= 1 ulp    cos <= 1 ulp   (computed in f64, see sincos_f32)
// erf's polynomials are fitted by tools/fit/fit_erf.py (numpy/scipy), which also simulates the
// f32 evaluation.
#include "llvm/jv.hpp"

#include <llvm/IR/IntrinsicsX86.h>
#include <llvm/IR/MDBuilder.h>

#include <limits>

namespace rlx::jit {

namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

// Constants and types with the lanes of the current emission (jv.hpp: lanes_of).
llvm::Type* f32_ty() { return lanes_of(B().getFloatTy()); }
llvm::Type* i32_ty() { return lanes_of(B().getInt32Ty()); }
llvm::Value* c_f32(float v) { return llvm::ConstantFP::get(f32_ty(), double(v)); }
llvm::Value* c_i32(int32_t v) { return llvm::ConstantInt::get(i32_ty(), uint64_t(uint32_t(v))); }
JV fma(JV a, JV b, JV c) { return intrinsic(llvm::Intrinsic::fma, {a, b, c}); }

/// Horner's scheme with fma: c[0] * x^(n-1) + ... + c[n-1].
JV horner(JV x, std::initializer_list<float> c) {
  JV acc = c_f32(*c.begin());
  for (auto it = c.begin() + 1; it != c.end(); ++it) acc = fma(acc, x, c_f32(*it));
  return acc;
}

/// Horner's scheme in x's own type (f64 here) with double coefficients.
JV horner_d(JV x, std::initializer_list<double> c) {
  llvm::Type* ty = x.v->getType();
  JV acc = llvm::ConstantFP::get(ty, *c.begin());
  for (auto it = c.begin() + 1; it != c.end(); ++it)
    acc = fma(acc, x, llvm::ConstantFP::get(ty, *it));
  return acc;
}

llvm::Value* bits_of(JV x) { return B().CreateBitCast(x.v, i32_ty()); }
JV float_of(llvm::Value* bits) { return B().CreateBitCast(bits, f32_ty()); }

/// 2^k for k in [-126, 127] (an i32), by building the exponent field.
JV pow2(llvm::Value* k) {
  llvm::IRBuilder<>& b = B();
  return float_of(b.CreateShl(b.CreateAdd(k, c_i32(127)), c_i32(23)));
}

/// Marks the divisions whose operands are bounded: the denominator in [1, 2^28] (or NaN) and
/// the numerator no larger in magnitude. A product of two such quotients can take one division
/// (combine_quotients) with no risk of overflow or underflow.
constexpr const char* kBoundedQuotient = "rlx.bounded_quotient";

JV bounded_quotient(JV num, JV den) {
  llvm::Value* q = B().CreateFDiv(num.v, den.v);
  if (auto* inst = llvm::dyn_cast<llvm::Instruction>(q))
    inst->setMetadata(kBoundedQuotient, llvm::MDNode::get(B().getContext(), {}));
  return q;
}

/// e^r - 1 for |r| <= ln2 / 2: r + r^2 P(r), P of degree 4 fitted by tools/fit/fit_exp.py
/// (relative error 4e-9 before rounding; e^r = 1 + this within 1 ulp).
JV expm1_poly(JV r) {
  JV p = horner(r, {1.3751150109e-03f, 8.3689875901e-03f, 4.1669543833e-02f, 1.6666518152e-01f,
                    4.9999988079e-01f});
  return fma(p, r * r, r);
}

/// e^x for x in [-104, 89] or NaN (the callers clamp or know the range): x = n ln2 + r with
/// |r| <= ln2 / 2 (ln2 split in two so n * hi is exact), e^r = 1 + r + r^2 P(r), scaled by 2^n.
/// n comes from the "magic number" rounding: x log2e + 1.5 * 2^23 rounds to nearest even with
/// n in its low mantissa bits, so no float-to-int conversion is needed (and a NaN stays a
/// plain NaN, never a poison value). `wide` scales in two exact steps, for results near
/// overflow or subnormal (n in [-150, 128]); otherwise n must be in [-126, 127].
JV exp_core(JV x, bool wide) {
  llvm::IRBuilder<>& b = B();
  const float magic = 12582912.0f; // 1.5 * 2^23
  JV t = fma(x, c_f32(1.44269504088896341f), c_f32(magic));
  JV n = t - JV(c_f32(magic));
  JV r = fma(n, c_f32(-0.693359375f), x);
  r = fma(n, c_f32(2.12194440e-4f), r);
  JV er = expm1_poly(r) + JV(c_f32(1.0f));
  if (t_emit.lanes == 16) // AVX-512 (the only 16-lane host): er * 2^n in one exact instruction
    return b.CreateIntrinsic(llvm::Intrinsic::x86_avx512_mask_scalef_ps_512, {},
                             {er.v, n.v, er.v, b.getInt16(0xffff), b.getInt32(4)});
  llvm::Value* ni = b.CreateSub(bits_of(t), bits_of(c_f32(magic)));
  if (!wide) return er * pow2(ni);
  llvm::Value* n1 = b.CreateAShr(ni, c_i32(1));
  llvm::Value* n2 = b.CreateSub(ni, n1);
  return er * pow2(n1) * pow2(n2);
}

} // namespace

JV exp_f32(JV x) {
  // exp(x) overflows above 88.72284 and rounds to zero below -103.97208 (half the smallest
  // subnormal); clamping keeps the reduction in range, the selects give the IEEE results.
  JV xc = intrinsic(llvm::Intrinsic::minnum,
                    {intrinsic(llvm::Intrinsic::maxnum, {x, c_f32(-104.0f)}), c_f32(89.0f)});
  JV y = exp_core(xc, /*wide=*/true);
  y = sel(x > JV(c_f32(88.72283935546875f)), c_f32(kInf), y);
  y = sel(x < JV(c_f32(-103.972084045410f)), c_f32(0.0f), y);
  return sel(x != x, x, y);
}

JV exp_f32_nonpositive(JV x) {
  // No overflow to select, and a NaN passes the clamp (x < -104 is false for it) and the
  // reduction's arithmetic as a NaN, so only the underflow needs a select.
  JV xc = sel(x < JV(c_f32(-104.0f)), c_f32(-104.0f), x);
  JV y = exp_core(xc, /*wide=*/true);
  return sel(x < JV(c_f32(-103.972084045410f)), c_f32(0.0f), y);
}

JV log_f32(JV x) {
  llvm::IRBuilder<>& b = B();
  // Subnormals: scale into the normal range first.
  JV tiny = x < JV(c_f32(0x1p-126f));
  JV xs = sel(tiny, x * JV(c_f32(0x1p23f)), x);
  llvm::Value* bits = bits_of(xs);
  // x = 2^e * m with m in [sqrt(1/2), sqrt(2)), f = m - 1.
  llvm::Value* e = b.CreateSub(b.CreateLShr(bits, c_i32(23)), c_i32(126));
  e = b.CreateSub(e, b.CreateSelect(tiny.v, c_i32(23), c_i32(0)));
  JV m = float_of(b.CreateOr(b.CreateAnd(bits, c_i32(0x007fffff)), c_i32(0x3f000000))); // [.5,1)
  JV small = m < JV(c_f32(0.707106781186547524f));
  e = b.CreateSub(e, b.CreateZExt(small.v, i32_ty()));
  JV f = sel(small, m + m, m) - JV(c_f32(1.0f));
  JV ef = b.CreateSIToFP(e, f32_ty());
  // log(1 + f) = f - f^2/2 + f^3 P(f).
  JV z = f * f;
  JV p = horner(f, {7.0376836292e-2f, -1.1514610310e-1f, 1.1676998740e-1f, -1.2420140846e-1f,
                    1.4249322787e-1f, -1.6668057665e-1f, 2.0000714765e-1f, -2.4999993993e-1f,
                    3.3333331174e-1f});
  JV y = f * z * p;
  y = fma(ef, c_f32(-2.12194440e-4f), y);
  y = fma(z, c_f32(-0.5f), y);
  JV r = fma(ef, c_f32(0.693359375f), f + y);
  r = sel(x == JV(c_f32(kInf)), x, r);
  r = sel(x == JV(c_f32(0.0f)), c_f32(-kInf), r);
  return sel(x < JV(c_f32(0.0f)) || x != x, c_f32(kNaN), r);
}

JV tanh_f32(JV x) {
  // tanh|x| = E / (E + 2) with E = e^(2|x|) - 1, the sign of x restored. E comes from exp's
  // reduction without adding the 1: 2|x| = n ln2 + r, m = e^r - 1 = r + r^2 P(r), and
  // E = 2^n m + (2^n - 1) in one fma, so E keeps its relative accuracy at small |x| (n = 0, where
  // E = m) and no branch or second polynomial is needed. tanh rounds to 1 from 9.01 on: |x| is
  // clamped at 9.5 (NaN passes), the quotient at 1.
  llvm::IRBuilder<>& b = B();
  JV a = intrinsic(llvm::Intrinsic::fabs, {x});
  JV one = c_f32(1.0f);
  JV ac = sel(JV(c_f32(9.5f)) < a, c_f32(9.5f), a);
  JV y = ac + ac;
  const float magic = 12582912.0f; // 1.5 * 2^23: see exp_core
  JV t = fma(y, c_f32(1.44269504088896341f), c_f32(magic));
  JV n = t - JV(c_f32(magic));
  JV r = fma(n, c_f32(-0.693359375f), y);
  r = fma(n, c_f32(2.12194440e-4f), r);
  JV m = expm1_poly(r);
  JV s = t_emit.lanes == 16
             ? JV(b.CreateIntrinsic(llvm::Intrinsic::x86_avx512_mask_scalef_ps_512, {},
                                    {one.v, n.v, one.v, b.getInt16(0xffff), b.getInt32(4)}))
             : pow2(b.CreateSub(bits_of(t), bits_of(c_f32(magic))));
  JV e = fma(s, m, s - one);
  // e / (e + 2) never exceeds 1 (e >= 0 and the sum rounds up to at least e) and the sign goes
  // on the numerator, so the quotient is the function's last operation (combine_quotients).
  return bounded_quotient(intrinsic(llvm::Intrinsic::copysign, {e, x}), e + JV(c_f32(2.0f)));
}

JV sigmoid_f32(JV x) {
  // t = e^-|x| never overflows; sigmoid = 1 / (1 + t) for x >= 0, t / (1 + t) below.
  // e^-|x| below -104 is 0 (clamped with a select, so NaN passes).
  JV m = -intrinsic(llvm::Intrinsic::fabs, {x});
  JV t = exp_core(sel(m < JV(c_f32(-104.0f)), c_f32(-104.0f), m), /*wide=*/true);
  // One correctly rounded division (a vector division costs less here than the reciprocal
  // estimate's four instructions, and rounds once).
  return bounded_quotient(sel(x >= JV(c_f32(0.0f)), c_f32(1.0f), t), t + JV(c_f32(1.0f)));
}

JV erf_f32(JV x) {
  // Coefficients from tools/fit/fit_erf.py (weighted least squares, relative error).
  // |x| < 0.875: erf(x) = x + x P(x^2).
  JV a = intrinsic(llvm::Intrinsic::fabs, {x});
  JV p = horner(
      x * x, {-0.0006235148f, 0.005038736f, -0.026796304f, 0.11282608f, -0.3761257f, 0.12837917f});
  JV small = fma(x, p, x);
  // Beyond: erf(x) = 1 - e^(-x^2) Q(1/|x|), Q ~ erfc(x) e^(x^2); x^2 = hi + lo exactly (fma),
  // e^(-hi - lo) ~ e^-hi (1 - lo). erf rounds to 1 from 3.92 on, so |x| is clamped there.
  JV ac = intrinsic(llvm::Intrinsic::minnum,
                    {intrinsic(llvm::Intrinsic::maxnum, {a, c_f32(0.875f)}), c_f32(3.92f)});
  JV u = JV(c_f32(1.0f)) / ac;
  JV hi = ac * ac;
  JV lo = fma(ac, ac, -hi);
  JV e = exp_core(-hi, /*wide=*/false); // -x^2 in [-15.4, -0.76]
  e = fma(-e, lo, e);
  JV q = horner(u, {0.014955603f, -0.09203119f, 0.22668278f, -0.24687555f, -0.010391985f,
                    0.3685337f, -0.4255056f, 0.03165976f, 0.560358f, 0.00019811938f});
  JV large = intrinsic(llvm::Intrinsic::copysign, {JV(c_f32(1.0f)) - e * q, x});
  JV r = sel(a < JV(c_f32(0.875f)), small, large);
  return sel(x != x, x, r);
}

namespace {

/// sin or cos of f32 x, computed in f64 and rounded once: j = nearest integer to x 2/pi,
/// r = x - j pi/2 (pi/2 in two doubles, fma: exact enough for |x| < 2^22), then the Taylor
/// series of sin r and cos r on |r| <= pi/4 (truncation below 1e-12) and the quadrant j mod 4
/// picks and signs one of them. The f64 result is within ~1e-15 relative of the true value, so
/// the f32 result is the correctly rounded one except within that distance of a tie (<= 1 ulp).
/// Lanes with |x| >= 2^22 (and inf) take the libm function on a rarely taken branch.
JV sincos_f32(JV x, bool cosine) {
  llvm::IRBuilder<>& b = B();
  llvm::Type* dty = lanes_of(b.getDoubleTy());
  auto cd = [&](double v) { return JV(llvm::ConstantFP::get(dty, v)); };
  JV xd = b.CreateFPExt(x.v, dty);
  const double magic = 6755399441055744.0; // 1.5 * 2^52: rounds to an integer in the low bits
  JV t = fma(xd, cd(0.63661977236758134), cd(magic));
  JV j = t - cd(magic);
  JV r = fma(-j, cd(1.5707963267948966), xd);
  r = fma(-j, cd(6.123233995736766e-17), r);
  JV z = r * r;
  JV sin_r = r * horner_d(z, {1.0 / 6227020800.0, -1.0 / 39916800.0, 1.0 / 362880.0, -1.0 / 5040.0,
                              1.0 / 120.0, -1.0 / 6.0, 1.0});
  JV cos_r = horner_d(
      z, {1.0 / 479001600.0, -1.0 / 3628800.0, 1.0 / 40320.0, -1.0 / 720.0, 1.0 / 24.0, -0.5, 1.0});
  llvm::Type* i64 = lanes_of(b.getInt64Ty());
  llvm::Value* q = b.CreateBitCast(t.v, i64); // j mod 4 in the low bits (two's complement)
  if (cosine) q = b.CreateAdd(q, llvm::ConstantInt::get(i64, 1));
  llvm::Value* zero = llvm::ConstantInt::get(i64, 0);
  JV odd = b.CreateICmpNE(b.CreateAnd(q, llvm::ConstantInt::get(i64, 1)), zero);
  JV negative = b.CreateICmpNE(b.CreateAnd(q, llvm::ConstantInt::get(i64, 2)), zero);
  JV v = sel(odd, cos_r, sin_r);
  v = sel(negative, -v, v);
  JV fast = b.CreateFPTrunc(v.v, f32_ty());

  // |x| >= 2^22 or inf: libm (NaN stays on the fast path and propagates).
  JV big = intrinsic(llvm::Intrinsic::fabs, {x}) >= JV(c_f32(0x1p22f));
  llvm::Value* any = t_emit.lanes ? b.CreateOrReduce(big.v) : big.v;
  llvm::BasicBlock* from = b.GetInsertBlock();
  llvm::Function* fn = from->getParent();
  llvm::LLVMContext& ctx = b.getContext();
  auto* slow = llvm::BasicBlock::Create(ctx, "trig_libm", fn);
  auto* join = llvm::BasicBlock::Create(ctx, "trig_join", fn);
  b.CreateCondBr(any, slow, join, llvm::MDBuilder(ctx).createBranchWeights(1, 1000));
  b.SetInsertPoint(slow);
  JV mixed = sel(big, libm_each(cosine ? "cos" : "sin", {x}), fast);
  llvm::BasicBlock* slow_end = b.GetInsertBlock();
  b.CreateBr(join);
  b.SetInsertPoint(join);
  llvm::PHINode* out = b.CreatePHI(fast.v->getType(), 2);
  out->addIncoming(fast.v, from);
  out->addIncoming(mixed.v, slow_end);
  return out;
}

} // namespace

void combine_quotients(llvm::Function& f) {
  auto bounded = [](llvm::Value* v) {
    auto* div = llvm::dyn_cast<llvm::BinaryOperator>(v);
    return div && div->getOpcode() == llvm::Instruction::FDiv && div->hasOneUse() &&
                   div->getMetadata(kBoundedQuotient)
               ? div
               : nullptr;
  };
  std::vector<llvm::BinaryOperator*> products;
  for (llvm::BasicBlock& bb : f)
    for (llvm::Instruction& inst : bb)
      if (auto* mul = llvm::dyn_cast<llvm::BinaryOperator>(&inst))
        if (mul->getOpcode() == llvm::Instruction::FMul && bounded(mul->getOperand(0)) &&
            bounded(mul->getOperand(1)) && mul->getOperand(0) != mul->getOperand(1))
          products.push_back(mul);
  for (llvm::BinaryOperator* mul : products) {
    auto* a = llvm::cast<llvm::BinaryOperator>(mul->getOperand(0));
    auto* c = llvm::cast<llvm::BinaryOperator>(mul->getOperand(1));
    llvm::IRBuilder<> b(mul);
    // (a0 / a1) (c0 / c1) = (a0 c0) / (a1 c1): denominators below 2^56, numerators no larger.
    llvm::Value* num = b.CreateFMul(a->getOperand(0), c->getOperand(0));
    llvm::Value* den = b.CreateFMul(a->getOperand(1), c->getOperand(1));
    mul->replaceAllUsesWith(b.CreateFDiv(num, den));
    mul->eraseFromParent();
    a->eraseFromParent();
    c->eraseFromParent();
  }
}

JV sin_f32(JV x) { return sincos_f32(x, false); }
JV cos_f32(JV x) { return sincos_f32(x, true); }

} // namespace rlx::jit
