// jit/llvm/row_vectors.hpp -- the row kernels' explicit-vector pieces (jit/llvm/lower_rows.cpp):
// softmax's max and exp passes and the f32 norms' rows (F32Row) in vectors of the host's lanes,
// and the branches they emit. LLVM types appear only inside jit/llvm/.
#pragma once

#include "llvm/jv.hpp"

#include <cstddef>
#include <functional>
#include <vector>

namespace rlx::jit {

/// The w elements of a row's x from element i on, as a vector of f32 (a load, or a prologue
/// computed in vectors).
using VectorLoad = std::function<llvm::Value*(llvm::Value*)>;

/// The largest element of x's row at i for i in [0, end) (end a multiple of w), NaN left out: a
/// NaN reaches softmax's result through exp(x - max) and the sum anyway, so the maximum needs
/// no NaN propagation, and x86's max instruction is one operation where llvm.maximum's
/// lowering is six. Four accumulators hide the instruction's latency.
llvm::Value* softmax_max_vectors(llvm::IRBuilder<>& b, unsigned w, const VectorLoad& load,
                                 llvm::Value* end);

/// Softmax's exp pass over elements [0, end) of a row of f32 (end a multiple of w), in
/// vectors of w lanes: y[i] = exp(x[i] - m) stored, and their sum in f64 lanes returned. Left
/// to the loop vectorizer, this loop got 8 lanes on AVX-512 (the f64 sum's width decided) and
/// exp's scalar code, whose scaling by 2^n takes seven integer operations where a 16-lane vector
/// has one instruction (vmath.cpp: exp_core): 1.33 cycles an element against 0.8.
llvm::Value* softmax_exp_vectors(llvm::IRBuilder<>& b, unsigned w, const VectorLoad& load,
                                 llvm::Value* y, llvm::Value* row0, llvm::Value* end,
                                 llvm::Value* m);

/// `then` emitted under `cond`: returns `vals` where cond is false, then's values where true.
std::vector<llvm::Value*>
emit_if(llvm::IRBuilder<>& b, llvm::Value* cond, std::vector<llvm::Value*> vals,
        const std::function<std::vector<llvm::Value*>(std::vector<llvm::Value*>)>& then);

/// The instructions emit() emits, counted in blocks that are then dropped (it may branch: f32
/// sin and cos have a slow path).
std::size_t instructions_of(llvm::IRBuilder<>& b, const std::function<void()>& emit);

/// then() emitted where cond holds, otherwise() where not: the value of the one taken.
llvm::Value* emit_if_else(llvm::IRBuilder<>& b, llvm::Value* cond,
                          const std::function<llvm::Value*()>& then,
                          const std::function<llvm::Value*()>& otherwise);

/// A row of f32 in explicit vectors of w lanes (the f32 layer and rms norms): the full vectors
/// from element 0 on, then the row's last len % w elements as one vector under a mask of its
/// leading lanes (masked loads read nothing past the row; the masked lanes hold zeros).
struct F32Row {
  llvm::IRBuilder<>& b;
  unsigned w;
  llvm::Value* len; ///< i64
  llvm::FixedVectorType* vf = llvm::FixedVectorType::get(b.getFloatTy(), w);

  using Vals = std::vector<llvm::Value*>;
  /// body(i, mask) for the vector at element i; mask is null for a full vector.
  using Body = std::function<Vals(llvm::Value*, llvm::Value*)>;

  llvm::Value* zero() { return llvm::ConstantFP::get(vf, 0.0); }
  llvm::Value* splat(llvm::Value* s) { return b.CreateVectorSplat(w, s); }
  llvm::Value* load(llvm::Value* base, llvm::Value* i, llvm::Value* mask) {
    llvm::Value* p = b.CreateInBoundsGEP(b.getFloatTy(), base, i);
    if (mask) return b.CreateMaskedLoad(vf, p, llvm::Align(4), mask, zero());
    return b.CreateAlignedLoad(vf, p, llvm::Align(4));
  }
  void store(llvm::Value* v, llvm::Value* base, llvm::Value* i, llvm::Value* mask) {
    llvm::Value* p = b.CreateInBoundsGEP(b.getFloatTy(), base, i);
    if (mask)
      b.CreateMaskedStore(v, p, llvm::Align(4), mask);
    else
      b.CreateAlignedStore(v, p, llvm::Align(4));
  }
  /// The end of the full vectors.
  llvm::Value* full() { return b.CreateAnd(len, b.getInt64(~uint64_t(w - 1))); }
  /// body(full(), mask of the last len % w lanes) when the row has such a tail; `vals` carried.
  Vals tail(Vals vals, const std::function<Vals(llvm::Value*, Vals)>& body);
  void each(const std::function<void(llvm::Value*, llvm::Value*)>& body);
  /// The row's sums of the `count` terms body(i, mask) returns for each vector, in f32: four
  /// accumulators per term over the leading multiple of 4w elements (the additions' latency),
  /// one over the remaining full vectors, the masked tail's lanes zeroed, then the lanes in a
  /// tree. Each sum thus adds at most len / (4w) + log2(w) + 4 times in a chain.
  Vals sums(std::size_t count, const Body& body);
};

} // namespace rlx::jit
