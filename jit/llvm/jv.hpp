// jit/llvm/jv.hpp -- JV: an LLVM IR f64 (or i1) value with C++ operators, so the scalar rules
// of src/ops/scalar.hpp (written for double) emit IR when instantiated with V = JV.
#pragma once

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/Module.h>

namespace rlx::jit {

/// The builder the JV operators emit into (set by the lowering for the current function).
struct EmitContext {
  llvm::IRBuilder<>* b = nullptr;
  llvm::Module* m = nullptr;
};
inline thread_local EmitContext t_emit;

struct JV {
  llvm::Value* v;
  JV(llvm::Value* value) : v(value) {} // NOLINT: implicit
  JV(double d) : v(llvm::ConstantFP::get(t_emit.b->getDoubleTy(), d)) {}
  JV(float f) : JV(double(f)) {}
  JV(int i) : JV(double(i)) {}
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

/// A call of an LLVM intrinsic on doubles.
inline JV intrinsic(llvm::Intrinsic::ID id, std::initializer_list<JV> args) {
  std::vector<llvm::Value*> vs;
  for (JV a : args) vs.push_back(a.v);
  return B().CreateIntrinsic(id, {B().getDoubleTy()}, vs);
}
/// A call of a libm function double(double...) (the interpreter calls the same functions, so
/// results agree bit for bit).
inline JV libm(const char* name, std::initializer_list<JV> args) {
  std::vector<llvm::Type*> types(args.size(), B().getDoubleTy());
  auto* fty = llvm::FunctionType::get(B().getDoubleTy(), types, false);
  llvm::FunctionCallee f = t_emit.m->getOrInsertFunction(name, fty);
  std::vector<llvm::Value*> vs;
  for (JV a : args) vs.push_back(a.v);
  return B().CreateCall(f, vs);
}

inline JV abs(JV x) { return intrinsic(llvm::Intrinsic::fabs, {x}); }
inline JV sqrt(JV x) { return intrinsic(llvm::Intrinsic::sqrt, {x}); }
inline JV floor(JV x) { return intrinsic(llvm::Intrinsic::floor, {x}); }
inline JV ceil(JV x) { return intrinsic(llvm::Intrinsic::ceil, {x}); }
/// Half to even, as std::nearbyint in the default rounding mode.
inline JV nearbyint(JV x) { return intrinsic(llvm::Intrinsic::roundeven, {x}); }
inline JV fmod(JV a, JV b) { return B().CreateFRem(a.v, b.v); }
inline JV exp(JV x) { return libm("exp", {x}); }
inline JV expm1(JV x) { return libm("expm1", {x}); }
inline JV log(JV x) { return libm("log", {x}); }
inline JV log1p(JV x) { return libm("log1p", {x}); }
inline JV sin(JV x) { return libm("sin", {x}); }
inline JV cos(JV x) { return libm("cos", {x}); }
inline JV tan(JV x) { return libm("tan", {x}); }
inline JV atan(JV x) { return libm("atan", {x}); }
inline JV tanh(JV x) { return libm("tanh", {x}); }
inline JV erf(JV x) { return libm("erf", {x}); }
inline JV pow(JV a, JV b) { return libm("pow", {a, b}); }

} // namespace rlx::jit
