// jit/llvm/kernel_abi.hpp -- the calling convention every native kernel has (jit/lower.hpp's
// KernelFn): `void name(void** bufs, i64 begin, i64 end)`, a thin entry point calling an
// always-inlined `name.body(ptr noalias b0, ..., [i64 s0, ...,] i64 begin, i64 end)`. Scalars a
// kernel reads at run time (a row kernel's row length) follow the buffers in `bufs`, each slot
// holding the value itself.
#pragma once

#include "lower.hpp"
#include "llvm/jv.hpp"
#include "llvm/session.hpp"

#include <llvm/IR/Function.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Module.h>

#include <functional>
#include <string>
#include <vector>

namespace rlx::jit {

/// Define the entry point `name` and declare its body with `n_bufs` buffer parameters, then
/// `n_scalars` i64 ones (read from bufs[n_bufs], ...); returns the body (empty: the caller emits
/// it; its last two arguments are begin and end). No buffer aliases another (the executables
/// allocate every output), and once the body is inlined the noalias facts become scoped alias
/// metadata the vectorizer relies on.
inline llvm::Function* define_kernel(llvm::Module& m, llvm::IRBuilder<>& b, const std::string& name,
                                     std::size_t n_bufs, std::size_t n_scalars = 0) {
  llvm::LLVMContext& ctx = m.getContext();
  auto* ptr = b.getPtrTy();
  auto* i64 = b.getInt64Ty();
  std::vector<llvm::Type*> params(n_bufs, ptr);
  params.insert(params.end(), n_scalars, i64);
  params.push_back(i64);
  params.push_back(i64);
  auto* body_ty = llvm::FunctionType::get(b.getVoidTy(), params, false);
  auto* body = llvm::Function::Create(body_ty, llvm::Function::InternalLinkage, name + ".body", m);
  body->addFnAttr(llvm::Attribute::AlwaysInline);
  body->addFnAttr(llvm::Attribute::NoUnwind);
  for (std::size_t j = 0; j < n_bufs; ++j)
    body->addParamAttr(unsigned(j), llvm::Attribute::NoAlias);

  auto* fty = llvm::FunctionType::get(b.getVoidTy(), {ptr, i64, i64}, false);
  auto* fn = llvm::Function::Create(fty, llvm::Function::ExternalLinkage, name, m);
  fn->addFnAttr(llvm::Attribute::NoUnwind);
  b.SetInsertPoint(llvm::BasicBlock::Create(ctx, "entry", fn));
  std::vector<llvm::Value*> args;
  for (std::size_t j = 0; j < n_bufs; ++j) {
    auto* p = b.CreateLoad(ptr, b.CreateConstInBoundsGEP1_64(ptr, fn->getArg(0), j));
    p->setMetadata(llvm::LLVMContext::MD_invariant_load, llvm::MDNode::get(ctx, {}));
    args.push_back(p);
  }
  for (std::size_t j = n_bufs; j < n_bufs + n_scalars; ++j) {
    auto* v = b.CreateLoad(i64, b.CreateConstInBoundsGEP1_64(ptr, fn->getArg(0), j));
    v->setMetadata(llvm::LLVMContext::MD_invariant_load, llvm::MDNode::get(ctx, {}));
    args.push_back(v);
  }
  args.push_back(fn->getArg(1));
  args.push_back(fn->getArg(2));
  b.CreateCall(body, args);
  b.CreateRetVoid();
  b.ClearInsertionPoint();
  return body;
}

/// A counted loop over i = from, from + step, ... while i < to, in the current function:
/// body(i) emits into the loop body; the loop carries `init` values (phis) updated by what body
/// returns. Returns their final values.
inline std::vector<llvm::Value*> emit_loop(
    llvm::Value* from, llvm::Value* to, std::vector<llvm::Value*> init,
    const std::function<std::vector<llvm::Value*>(llvm::Value*, std::vector<llvm::Value*>)>& body,
    int64_t step = 1) {
  llvm::IRBuilder<>& b = B();
  llvm::Function* fn = b.GetInsertBlock()->getParent();
  llvm::LLVMContext& ctx = b.getContext();
  llvm::BasicBlock* pre = b.GetInsertBlock();
  auto* head = llvm::BasicBlock::Create(ctx, "head", fn);
  auto* loop = llvm::BasicBlock::Create(ctx, "loop", fn);
  auto* done = llvm::BasicBlock::Create(ctx, "done", fn);
  b.CreateBr(head);
  b.SetInsertPoint(head);
  llvm::PHINode* i = b.CreatePHI(b.getInt64Ty(), 2, "i");
  i->addIncoming(from, pre);
  std::vector<llvm::PHINode*> carried;
  std::vector<llvm::Value*> cur;
  for (llvm::Value* v : init) {
    llvm::PHINode* p = b.CreatePHI(v->getType(), 2);
    p->addIncoming(v, pre);
    carried.push_back(p);
    cur.push_back(p);
  }
  b.CreateCondBr(b.CreateICmpSLT(i, to), loop, done);
  b.SetInsertPoint(loop);
  std::vector<llvm::Value*> next = body(i, cur);
  llvm::BasicBlock* latch = b.GetInsertBlock();
  i->addIncoming(b.CreateAdd(i, b.getInt64(uint64_t(step)), "", true, true), latch);
  for (std::size_t k = 0; k < carried.size(); ++k) carried[k]->addIncoming(next[k], latch);
  b.CreateBr(head);
  b.SetInsertPoint(done);
  return cur;
}

/// Compile a finished kernel module and look its entry point up (ends the emission: clears the
/// JV emit context).
inline NativeKernel load_kernel(ModuleBuilder mb, const std::string& name) {
  t_emit = EmitContext{};
  NativeKernel out;
  out.code = add_module(std::move(mb));
  out.fn = reinterpret_cast<KernelFn>(out.code->symbol(name));
  return out;
}

} // namespace rlx::jit
