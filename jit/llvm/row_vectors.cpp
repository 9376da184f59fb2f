// jit/llvm/row_vectors.cpp -- the row kernels' explicit-vector pieces (row_vectors.hpp).
#include "llvm/row_vectors.hpp"

#include "llvm/kernel_abi.hpp"

#include <llvm/IR/Function.h>

#include <iterator>

namespace rlx::jit {

llvm::Value* softmax_max_vectors(llvm::IRBuilder<>& b, unsigned w, const VectorLoad& load,
                                 llvm::Value* end) {
  auto* vf = llvm::FixedVectorType::get(b.getFloatTy(), w);
  auto max = [&](llvm::Value* a, llvm::Value* v) {
    return b.CreateSelect(b.CreateFCmpOGT(v, a), v, a); // a NaN v keeps a
  };
  llvm::Value* lowest = llvm::ConstantFP::getInfinity(vf, /*Negative=*/true);
  constexpr unsigned kAcc = 4;
  llvm::Value* end4 = b.CreateAnd(end, b.getInt64(~uint64_t(kAcc * w - 1)));
  std::vector<llvm::Value*> acc = emit_loop(
      b.getInt64(0), end4, std::vector<llvm::Value*>(kAcc, lowest),
      [&](llvm::Value* i, std::vector<llvm::Value*> a) {
        for (unsigned k = 0; k < kAcc; ++k)
          a[k] = max(a[k], load(b.CreateAdd(i, b.getInt64(k * w))));
        return a;
      },
      int64_t(kAcc * w));
  llvm::Value* m = max(max(acc[0], acc[1]), max(acc[2], acc[3]));
  m = emit_loop(
      end4, end, {m},
      [&](llvm::Value* i, std::vector<llvm::Value*> a) {
        return std::vector<llvm::Value*>{max(a[0], load(i))};
      },
      int64_t(w))[0];
  // The lanes hold no NaN: their maximum in any order.
  for (unsigned half = w / 2; half >= 1; half /= 2) {
    std::vector<int> hi(half), lo(half);
    for (unsigned j = 0; j < half; ++j) lo[j] = int(j), hi[j] = int(j + half);
    m = max(b.CreateShuffleVector(m, lo), b.CreateShuffleVector(m, hi));
  }
  return b.CreateExtractElement(m, uint64_t(0));
}

llvm::Value* softmax_exp_vectors(llvm::IRBuilder<>& b, unsigned w, const VectorLoad& load,
                                 llvm::Value* y, llvm::Value* row0, llvm::Value* end,
                                 llvm::Value* m) {
  llvm::Type* f32 = b.getFloatTy();
  auto* vd = llvm::FixedVectorType::get(b.getDoubleTy(), w);
  llvm::Value* mv = b.CreateVectorSplat(w, m);
  auto ex = [&](llvm::Value* i) {
    llvm::Value* at = b.CreateAdd(row0, i);
    llvm::Value* v = load(i);
    EmitContext saved = t_emit;
    t_emit.lanes = w;
    llvm::Value* r = exp_f32_nonpositive(JV(b.CreateFSub(v, mv))).v;
    t_emit = saved;
    b.CreateAlignedStore(r, b.CreateInBoundsGEP(f32, y, at), llvm::Align(4));
    return r;
  };
  // Four vectors at a time, added in f32 ((e0 + e1) + (e2 + e3): positive terms, within two
  // roundings of f32) and widened once: a widening and an f64 addition per vector were a
  // fifth of the pass's instructions.
  constexpr unsigned kGroup = 4;
  llvm::Value* end4 = b.CreateAnd(end, b.getInt64(~uint64_t(kGroup * w - 1)));
  llvm::Value* acc = emit_loop(
      b.getInt64(0), end4, {llvm::ConstantFP::get(vd, 0.0)},
      [&](llvm::Value* i, std::vector<llvm::Value*> sum) {
        llvm::Value* e[kGroup];
        for (unsigned k = 0; k < kGroup; ++k) e[k] = ex(b.CreateAdd(i, b.getInt64(k * w)));
        llvm::Value* four = b.CreateFAdd(b.CreateFAdd(e[0], e[1]), b.CreateFAdd(e[2], e[3]));
        return std::vector<llvm::Value*>{b.CreateFAdd(sum[0], b.CreateFPExt(four, vd))};
      },
      int64_t(kGroup * w))[0];
  acc = emit_loop(
      end4, end, {acc},
      [&](llvm::Value* i, std::vector<llvm::Value*> sum) {
        return std::vector<llvm::Value*>{b.CreateFAdd(sum[0], b.CreateFPExt(ex(i), vd))};
      },
      int64_t(w))[0];
  // The lanes' sums added in any order (f64 sums of f32 terms: far below f32's rounding).
  llvm::IRBuilderBase::FastMathFlagGuard keep(b);
  llvm::FastMathFlags fmf;
  fmf.setAllowReassoc();
  b.setFastMathFlags(fmf);
  return b.CreateFAddReduce(llvm::ConstantFP::get(b.getDoubleTy(), 0.0), acc);
}

std::vector<llvm::Value*>
emit_if(llvm::IRBuilder<>& b, llvm::Value* cond, std::vector<llvm::Value*> vals,
        const std::function<std::vector<llvm::Value*>(std::vector<llvm::Value*>)>& then) {
  llvm::Function* fn = b.GetInsertBlock()->getParent();
  llvm::BasicBlock* pre = b.GetInsertBlock();
  auto* in = llvm::BasicBlock::Create(b.getContext(), "then", fn);
  auto* join = llvm::BasicBlock::Create(b.getContext(), "join", fn);
  b.CreateCondBr(cond, in, join);
  b.SetInsertPoint(in);
  std::vector<llvm::Value*> got = then(vals);
  llvm::BasicBlock* last = b.GetInsertBlock();
  b.CreateBr(join);
  b.SetInsertPoint(join);
  for (std::size_t k = 0; k < vals.size(); ++k) {
    llvm::PHINode* phi = b.CreatePHI(vals[k]->getType(), 2);
    phi->addIncoming(vals[k], pre);
    phi->addIncoming(got[k], last);
    vals[k] = phi;
  }
  return vals;
}

std::size_t instructions_of(llvm::IRBuilder<>& b, const std::function<void()>& emit) {
  llvm::IRBuilderBase::InsertPointGuard keep(b);
  llvm::Function* fn = b.GetInsertBlock()->getParent();
  std::size_t before = fn->size();
  b.SetInsertPoint(llvm::BasicBlock::Create(b.getContext(), "probe", fn));
  emit();
  // Blocks are appended to the function as they are created.
  std::vector<llvm::BasicBlock*> fresh;
  std::size_t count = 0;
  for (auto it = std::next(fn->begin(), std::ptrdiff_t(before)); it != fn->end(); ++it) {
    fresh.push_back(&*it);
    count += it->size();
  }
  for (llvm::BasicBlock* block : fresh) block->dropAllReferences();
  for (llvm::BasicBlock* block : fresh) block->eraseFromParent();
  return count;
}

llvm::Value* emit_if_else(llvm::IRBuilder<>& b, llvm::Value* cond,
                          const std::function<llvm::Value*()>& then,
                          const std::function<llvm::Value*()>& otherwise) {
  llvm::Function* fn = b.GetInsertBlock()->getParent();
  auto* yes = llvm::BasicBlock::Create(b.getContext(), "yes", fn);
  auto* no = llvm::BasicBlock::Create(b.getContext(), "no", fn);
  auto* join = llvm::BasicBlock::Create(b.getContext(), "join", fn);
  b.CreateCondBr(cond, yes, no);
  b.SetInsertPoint(yes);
  llvm::Value* a = then();
  llvm::BasicBlock* yes_end = b.GetInsertBlock();
  b.CreateBr(join);
  b.SetInsertPoint(no);
  llvm::Value* c = otherwise();
  llvm::BasicBlock* no_end = b.GetInsertBlock();
  b.CreateBr(join);
  b.SetInsertPoint(join);
  llvm::PHINode* phi = b.CreatePHI(a->getType(), 2);
  phi->addIncoming(a, yes_end);
  phi->addIncoming(c, no_end);
  return phi;
}

F32Row::Vals F32Row::tail(Vals vals, const std::function<Vals(llvm::Value*, Vals)>& body) {
  llvm::Value* end = full();
  llvm::Value* rest = b.CreateSub(len, end);
  return emit_if(b, b.CreateICmpNE(rest, b.getInt64(0)), std::move(vals), [&](Vals v) {
    std::vector<llvm::Constant*> lane;
    for (unsigned j = 0; j < w; ++j) lane.push_back(b.getInt64(j));
    llvm::Value* mask = b.CreateICmpULT(llvm::ConstantVector::get(lane), splat(rest));
    return body(mask, std::move(v));
  });
}

void F32Row::each(const std::function<void(llvm::Value*, llvm::Value*)>& body) {
  emit_loop(
      b.getInt64(0), full(), {},
      [&](llvm::Value* i, Vals) {
        body(i, nullptr);
        return Vals{};
      },
      int64_t(w));
  tail({}, [&](llvm::Value* mask, Vals) {
    body(full(), mask);
    return Vals{};
  });
}

F32Row::Vals F32Row::sums(std::size_t count, const Body& body) {
  constexpr unsigned kAcc = 4;
  llvm::Value* end4 = b.CreateAnd(len, b.getInt64(~uint64_t(kAcc * w - 1)));
  Vals acc = emit_loop(
      b.getInt64(0), end4, Vals(kAcc * count, zero()),
      [&](llvm::Value* i, Vals a) {
        for (unsigned k = 0; k < kAcc; ++k) {
          Vals t = body(b.CreateAdd(i, b.getInt64(k * w)), nullptr);
          for (std::size_t j = 0; j < count; ++j)
            a[j * kAcc + k] = b.CreateFAdd(a[j * kAcc + k], t[j]);
        }
        return a;
      },
      int64_t(kAcc * w));
  Vals s(count);
  for (std::size_t j = 0; j < count; ++j) {
    llvm::Value* const* a = &acc[j * kAcc];
    s[j] = b.CreateFAdd(b.CreateFAdd(a[0], a[1]), b.CreateFAdd(a[2], a[3]));
  }
  s = emit_loop(
      end4, full(), s,
      [&](llvm::Value* i, Vals a) {
        Vals t = body(i, nullptr);
        for (std::size_t j = 0; j < count; ++j) a[j] = b.CreateFAdd(a[j], t[j]);
        return a;
      },
      int64_t(w));
  s = tail(s, [&](llvm::Value* mask, Vals a) {
    Vals t = body(full(), mask);
    for (std::size_t j = 0; j < count; ++j)
      a[j] = b.CreateFAdd(a[j], b.CreateSelect(mask, t[j], zero()));
    return a;
  });
  llvm::IRBuilderBase::FastMathFlagGuard keep(b);
  llvm::FastMathFlags fmf;
  fmf.setAllowReassoc(); // the lanes in a tree
  b.setFastMathFlags(fmf);
  for (llvm::Value*& v : s) v = b.CreateFAddReduce(llvm::ConstantFP::get(b.getFloatTy(), 0.0), v);
  return s;
}

} // namespace rlx::jit
