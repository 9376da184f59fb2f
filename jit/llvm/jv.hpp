// jit/llvm/jv.hpp -- JV: an LLVM IR value (float, double or i1) with C++ operators, so the
// scalar rules of src/ops/scalar.hpp (written for double) emit IR when instantiated with V = JV.
//
// A rule computes in one floating-point type, the "compute type" the lowering chooses per node
// (EmitContext::fty): f32 when the node and all its operands are f32 or bool, f64 otherwise.
// In vector mode (EmitContext::lanes > 0) every value is a vector of that many lanes and the
// same rules emit vector IR; a math function without a vector implementation is then called
// lane by lane (and EmitContext::scalarized says so, so the lowering can choose scalar code).
// Literals in the rules (V(0.5), V(1)) become constants of that type. The operators carry no
// fast-math flags: + - * / and sqrt round exactly as the interpreter's (which computes in double
// and rounds once; for these operations that gives the same f32 result). exp, log, tanh,
// sigmoid and erf on f32 have vector implementations (jit/llvm/vmath.cpp, accuracy stated
// there); the other math functions call the double libm function the interpreter calls and
// round.
#pragma once

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/Module.h>

namespace rlx::jit {

/// The builder the JV operators emit into (set by the lowering for the current function) and
/// the compute type of literals.
struct EmitContext {
  llvm::IRBuilder<>* b = nullptr;
  llvm::Module* m = nullptr;
  llvm::Type* fty = nullptr;
  unsigned lanes = 0;      ///< 0: scalar values; else vectors of this many lanes
  bool scalarized = false; ///< set when a vector math call had to run lane by lane
};
inline thread_local EmitContext t_emit;

/// The type of a value whose lanes are `scalar` (the scalar itself outside vector mode).
inline llvm::Type* lanes_of(llvm::Type* scalar) {
  return t_emit.lanes ? llvm::FixedVectorType::get(scalar, t_emit.lanes) : scalar;
}

struct JV {
  llvm::Value* v;
  JV(llvm::Value* value) : v(value) {} // NOLINT: implicit
  JV(double d) : v(llvm::ConstantFP::get(t_emit.fty, d)) {}
  JV(float f) : JV(double(f)) {}
  JV(int i) : JV(double(i)) {}
  bool is_f32() const { return v->getType()->getScalarType()->isFloatTy(); }
};

inline llvm::IRBuilder<>& B() { return *t_emit.b; }

inline JV operator+(JV a, JV b) { return B().CreateFAdd(a.v, b.v); }
inline JV operator-(JV a, JV b) { return B().CreateFSub(a.v, b.v); }
inline JV operator*(JV a, JV b) { return B().CreateFMul(a.v, b.v); }
inline JV operator/(JV a, JV b) { return B().CreateFDiv(a.v, b.v); }
inline JV operator-(JV a) { return B().CreateFNeg(a.v); }
// C++ comparisons of doubles: ordered, except != (true when either is NaN).
inline JV operator<(JV a, JV b) { return B().CreateFCmpOLT(a.v, b.v); }
inline JV operator<=(JV a, JV b) { return B().CreateFCmpOLE(a.v, b.v); }
inline JV operator>(JV a, JV b) { return B().CreateFCmpOGT(a.v, b.v); }
inline JV operator>=(JV a, JV b) { return B().CreateFCmpOGE(a.v, b.v); }
inline JV operator==(JV a, JV b) { return B().CreateFCmpOEQ(a.v, b.v); }
inline JV operator!=(JV a, JV b) { return B().CreateFCmpUNE(a.v, b.v); }
// On i1 values (both sides evaluated: the rules have no side effects).
inline JV operator||(JV a, JV b) { return B().CreateOr(a.v, b.v); }
inline JV operator&&(JV a, JV b) { return B().CreateAnd(a.v, b.v); }
inline JV sel(JV c, JV a, JV b) { return B().CreateSelect(c.v, a.v, b.v); }

/// A call of an LLVM intrinsic overloaded on its first argument's type.
inline JV intrinsic(llvm::Intrinsic::ID id, std::initializer_list<JV> args) {
  std::vector<llvm::Value*> vs;
  for (JV a : args) vs.push_back(a.v);
  return B().CreateIntrinsic(id, {vs.front()->getType()}, vs);
}
/// A call of a libm function double(double...); f32 operands are widened and the result
/// rounded, as the interpreter computes them, so results agree bit for bit. Vectors are
/// computed lane by lane.
inline JV libm_each(const char* name, std::initializer_list<JV> args) {
  llvm::IRBuilder<>& b = B();
  llvm::Type* dty = b.getDoubleTy();
  std::vector<llvm::Type*> types(args.size(), dty);
  llvm::FunctionCallee f =
      t_emit.m->getOrInsertFunction(name, llvm::FunctionType::get(dty, types, false));
  llvm::Type* ty = args.begin()->v->getType();
  llvm::Type* sty = ty->getScalarType();
  auto call = [&](unsigned lane, bool vector) {
    std::vector<llvm::Value*> vs;
    for (JV a : args) {
      llvm::Value* x = vector ? b.CreateExtractElement(a.v, uint64_t(lane)) : a.v;
      vs.push_back(sty == dty ? x : b.CreateFPExt(x, dty));
    }
    llvm::Value* r = b.CreateCall(f, vs);
    return sty == dty ? r : b.CreateFPTrunc(r, sty);
  };
  auto* vty = llvm::dyn_cast<llvm::FixedVectorType>(ty);
  if (!vty) return call(0, false);
  llvm::Value* out = llvm::PoisonValue::get(ty);
  for (unsigned lane = 0; lane < vty->getNumElements(); ++lane)
    out = b.CreateInsertElement(out, call(lane, true), uint64_t(lane));
  return out;
}

/// libm_each as the math of a rule: on vectors it marks the emission `scalarized` (the kernel
/// is then better emitted as scalar code).
inline JV libm(const char* name, std::initializer_list<JV> args) {
  if (args.begin()->v->getType()->isVectorTy()) t_emit.scalarized = true;
  return libm_each(name, args);
}

// Vector-friendly f32 implementations (jit/llvm/vmath.cpp): straight-line code of fma,
// selects and integer bit operations that the loop vectorizer widens.
JV exp_f32(JV x);
/// exp_f32 for x <= 0 or NaN (softmax's x - max), the same results with fewer operations.
JV exp_f32_nonpositive(JV x);
JV log_f32(JV x);
JV tanh_f32(JV x);
JV sigmoid_f32(JV x);
JV erf_f32(JV x);
JV sin_f32(JV x);
JV cos_f32(JV x);

/// A product of two quotients of tanh_f32 or sigmoid_f32 (bounded operands, each used once)
/// becomes one division of products: tanh(a) * sigmoid(x) costs one vector division, not two.
/// Run on a kernel's function after emission; results move by at most about one ulp.
void combine_quotients(llvm::Function& f);

inline JV abs(JV x) { return intrinsic(llvm::Intrinsic::fabs, {x}); }
inline JV sqrt(JV x) { return intrinsic(llvm::Intrinsic::sqrt, {x}); }
inline JV floor(JV x) { return intrinsic(llvm::Intrinsic::floor, {x}); }
inline JV ceil(JV x) { return intrinsic(llvm::Intrinsic::ceil, {x}); }
/// Half to even, as std::nearbyint in the default rounding mode.
inline JV nearbyint(JV x) { return intrinsic(llvm::Intrinsic::roundeven, {x}); }
inline JV fmod(JV a, JV b) { return B().CreateFRem(a.v, b.v); }
inline JV exp(JV x) { return x.is_f32() ? exp_f32(x) : libm("exp", {x}); }
inline JV expm1(JV x) { return libm("expm1", {x}); }
inline JV log(JV x) { return x.is_f32() ? log_f32(x) : libm("log", {x}); }
inline JV log1p(JV x) { return libm("log1p", {x}); }
inline JV sin(JV x) { return x.is_f32() ? sin_f32(x) : libm("sin", {x}); }
inline JV cos(JV x) { return x.is_f32() ? cos_f32(x) : libm("cos", {x}); }
inline JV tan(JV x) { return libm("tan", {x}); }
inline JV atan(JV x) { return libm("atan", {x}); }
inline JV tanh(JV x) { return x.is_f32() ? tanh_f32(x) : libm("tanh", {x}); }
/// The rules' sigmoid (src/ops/scalar.hpp); on f32 the vector implementation.
inline JV sigmoid(JV x) {
  if (x.is_f32()) return sigmoid_f32(x);
  JV t = exp(-abs(x));
  JV d = JV(1) + t;
  return sel(x >= JV(0), JV(1) / d, t / d);
}
inline JV erf(JV x) { return x.is_f32() ? erf_f32(x) : libm("erf", {x}); }
inline JV pow(JV a, JV b) { return libm("pow", {a, b}); }

} // namespace rlx::jit
