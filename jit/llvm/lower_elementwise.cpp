// jit/llvm/lower_elementwise.cpp -- a fused element-wise region as one LLVM loop.
//
// Values are computed through the same scalar rules as the interpreter (src/ops/scalar.hpp
// instantiated with JV), each node in its compute type (f32 for f32 nodes, else f64; see
// jit/llvm/jv.hpp) and held rounded to its dtype as the interpreter stores it. Results agree
// with the interpreter bit for bit except where a rule uses exp, log or tanh on f32 (vector
// implementations with the error bounds of jit/llvm/vmath.cpp) or several operations in one
// rule round in f32 where the interpreter rounds once (a few ulps).
#include "lower.hpp"
#include "llvm/jv.hpp"
#include "llvm/kernel_abi.hpp"
#include "llvm/lower_common.hpp"
#include "llvm/session.hpp"

#include "ops/scalar.hpp"
#include "rlx/interp.hpp"
#include "rlx/runtime.hpp"

#include <llvm/IR/Function.h>
#include <llvm/IR/IntrinsicsX86.h>
#include <llvm/IR/LLVMContext.h>

#include <algorithm>

#include <cstdlib>
#include <string_view>
#include <unordered_map>

namespace rlx::jit {

using namespace ew;

namespace {

using ir::DType;

/// Kernels whose outputs take at least this many bytes store them with non-temporal stores:
/// larger than this machine's last-level cache share (a heuristic: 16 MiB).
constexpr int64_t kStreamBytes = int64_t(16) << 20;
using ir::OpKind;

} // namespace

bool lowers_natively(const ir::Graph& g, const ir::Node& n) {
  ir::Family f = n.op.family();
  if (f != ir::Family::EwUnary && f != ir::Family::EwBinary && f != ir::Family::EwTernary)
    return false;
  if (!has_rule(n.op.kind()) || !n.shape.is_static() || !native_dtype(n.shape.dtype()))
    return false;
  bool integer = n.shape.dtype() == DType::I32;
  for (ir::NodeId in : n.inputs) {
    const ir::Shape& s = g.shape(in);
    if (!s.is_static() || !native_dtype(s.dtype())) return false;
    integer = integer || s.dtype() == DType::I32;
  }
  // Integer division and powers have their own semantics in the interpreter (x / 0 = 0, ...).
  if (integer && (n.op.kind() == OpKind::Div || n.op.kind() == OpKind::Pow)) return false;
  return true;
}

namespace {

/// Streaming (non-temporal) stores can pay when the outputs exceed the caches (normal stores
/// evict the inputs and cost a read for ownership each) and the kernel is memory-bound. On the
/// machine this was measured on (docs/performance.md, "memory-bound elementwise") they did not:
/// x * 1.5 + 1 over f32[1e7] was as fast or 5% faster on one thread and 15-25% slower on two,
/// and a compute-bound kernel got 30% slower. So they are off unless RLX_STREAM_STORES=1 (read
/// at each lowering). Candidates: vector
/// kernels on x86 (8 or 16 lanes) with 16 MiB of outputs or more whose rows are whole
/// 16-element blocks, so with threads taking 16-element blocks (jit/executable.cpp) every
/// vector store is aligned and none is shifted (such a kernel is compiled for its size).
bool streaming_enabled() {
  const char* env = std::getenv("RLX_STREAM_STORES");
  return env != nullptr && std::string_view(env) == "1";
}

bool may_stream(const ir::Graph& g, const ir::FusedKernel& k, unsigned lanes) {
  int64_t numel = 1;
  for (int64_t sz : k.shape.sizes()) numel *= sz;
  int64_t out_bytes = 0;
  for (ir::NodeId o : k.outputs) out_bytes += numel * int64_t(ir::size_bytes(g.shape(o).dtype()));
  return lanes >= 8 && out_bytes >= kStreamBytes &&
         row_layout(k.read_shapes, k.shape).inner % 16 == 0;
}

/// A small kernel (memory-bound): the element loop's body (the largest loop block) has at most
/// this many IR instructions (x + y: 14, exp(x): 28, the tanh*sigmoid kernel: 67).
constexpr std::size_t kSmallBody = 40;

std::size_t loop_body_size(const llvm::Module& m) {
  std::size_t size = 0;
  for (const llvm::Function& f : m)
    for (const llvm::BasicBlock& bb : f)
      if (bb.getName().starts_with("loop")) size = std::max(size, bb.size());
  return size;
}

/// The kernel's module with values of `lanes` lanes (0: scalar code the loop vectorizer may
/// widen).
ModuleBuilder emit_elementwise(const ir::Graph& g, const ir::FusedKernel& k,
                               const std::string& name, unsigned lanes, bool stream,
                               bool& generic_out) {
  ModuleBuilder mb = new_module(name);
  llvm::LLVMContext& ctx = *mb.context;
  llvm::IRBuilder<> builder(ctx);
  t_emit = EmitContext{&builder, mb.module.get(), builder.getDoubleTy(), lanes, false};
  llvm::IRBuilder<>& b = builder;
  auto* i64 = b.getInt64Ty();
  std::size_t n_bufs = k.inputs.size() + k.outputs.size();

  llvm::Function* body_fn = define_kernel(*mb.module, b, name, n_bufs);

  std::vector<ir::Shape> operand_shapes = k.read_shapes; // how each operand's buffer is laid out
  RowLayout layout = row_layout(operand_shapes, k.shape);
  llvm::Value* begin = body_fn->getArg(unsigned(n_bufs));
  llvm::Value* end = body_fn->getArg(unsigned(n_bufs + 1));
  // Size-generic kernels (the plan's FusedKernel::runtime_extent: every operand has the
  // output's shape or one element, and the extent policy is Generic): the loop bound is the
  // call's `end` and no extent appears in the code, so the same machine code serves every size
  // of a dynamic dimension (the session caches code by content). A streaming kernel (`stream`:
  // see may_stream) is compiled for its size.
  int64_t numel = 1;
  for (int64_t sz : k.shape.sizes()) numel *= sz;
  bool generic = k.runtime_extent && !stream;
  if (generic && layout.inner != numel)
    throw InternalError("jit: a kernel of runtime extent whose operands do not run one row");
  llvm::Value* inner = generic ? end : b.getInt64(uint64_t(layout.inner));

  // Rows [begin / inner, ceil(end / inner)), each clipped to [begin, end).
  b.SetInsertPoint(llvm::BasicBlock::Create(ctx, "entry", body_fn));
  llvm::Value* r_begin = nullptr;
  llvm::Value* r_end = nullptr;
  if (generic) { // one row: [0, 1) when the range is not empty
    r_begin = b.getInt64(0);
    r_end = b.CreateZExt(b.CreateICmpSLT(begin, end), i64);
  } else {
    r_begin = b.CreateUDiv(begin, inner);
    r_end = b.CreateUDiv(b.CreateAdd(end, b.getInt64(uint64_t(layout.inner - 1))), inner);
  }
  auto element_ptr = [&](unsigned arg, DType t, llvm::Value* idx) {
    return b.CreateInBoundsGEP(storage_type(t), body_fn->getArg(arg), idx);
  };
  auto align = [&](DType t) {
    return llvm::Align(mb.module->getDataLayout().getTypeStoreSize(storage_type(t)));
  };
  using Vals = std::vector<llvm::Value*>;
  // A store; when streaming, a non-temporal one (aligned: see `stream`).
  auto store = [&](llvm::Value* v, llvm::Value* p, llvm::Align a) {
    if (!stream) {
      b.CreateAlignedStore(v, p, a);
      return;
    }
    uint64_t bytes = mb.module->getDataLayout().getTypeStoreSize(v->getType());
    llvm::StoreInst* st = b.CreateAlignedStore(v, p, llvm::Align(std::min<uint64_t>(bytes, 64)));
    st->setMetadata(llvm::LLVMContext::MD_nontemporal,
                    llvm::MDNode::get(ctx, llvm::ConstantAsMetadata::get(b.getInt32(1))));
  };
  // Vector kernels run a row in full vectors; the last one is shifted back to end at the row's
  // end (recomputing a few elements: outputs never alias inputs). A row shorter than a vector
  // runs in stack copies padded to a vector. So every access is a plain vector load or store
  // and the body exists once (compile time grows with code size).
  const unsigned width = lanes ? lanes : 1;
  std::vector<llvm::Value*> pad_in(k.inputs.size(), nullptr), pad_out(k.outputs.size(), nullptr);
  if (lanes) {
    auto vec_bytes = [&](DType t) {
      return llvm::ArrayType::get(b.getInt8Ty(), lanes * align(t).value());
    };
    for (std::size_t j = 0; j < k.inputs.size(); ++j)
      if (layout.contiguous[j] && !inline_constant(g.node(k.buffers[j])))
        pad_in[j] = b.CreateAlloca(vec_bytes(k.read_shapes[j].dtype()));
    for (std::size_t o = 0; o < k.outputs.size(); ++o)
      pad_out[o] = b.CreateAlloca(vec_bytes(g.shape(k.outputs[o]).dtype()));
    for (llvm::Value* p : pad_in)
      if (p) llvm::cast<llvm::AllocaInst>(p)->setAlignment(llvm::Align(64));
    for (llvm::Value* p : pad_out) llvm::cast<llvm::AllocaInst>(p)->setAlignment(llvm::Align(64));
  }
  emit_loop(r_begin, r_end, {}, [&](llvm::Value* r, Vals) {
    llvm::Value* row_start = b.CreateMul(r, inner, "", true, true);
    llvm::Value* c_begin = b.CreateIntrinsic(llvm::Intrinsic::smax, {i64},
                                             {b.CreateSub(begin, row_start), b.getInt64(0)});
    llvm::Value* c_end =
        b.CreateIntrinsic(llvm::Intrinsic::smin, {i64}, {b.CreateSub(end, row_start), inner});
    llvm::Value* len = b.CreateSub(c_end, c_begin);
    // Operands constant along the row: inline constants, or one element read per row; the
    // others are read from `in_base[j]` on, the outputs written from `out_base[o]` on.
    std::unordered_map<uint32_t, llvm::Value*> row_values;
    std::vector<llvm::Value*> in_base(k.inputs.size(), nullptr), out_base;
    for (std::size_t j = 0; j < k.inputs.size(); ++j) {
      uint32_t id = k.inputs[j].index;
      const ir::Node& src = g.node(k.buffers[j]);
      if (inline_constant(src)) {
        row_values.emplace(id, constant_value(src));
        continue;
      }
      DType t = k.read_shapes[j].dtype();
      llvm::Value* offset = broadcast_index(row_start, operand_shapes[j], k.shape);
      if (layout.contiguous[j]) {
        in_base[j] = element_ptr(unsigned(j), t, b.CreateAdd(offset, c_begin));
        continue;
      }
      llvm::Value* x = b.CreateLoad(storage_type(t), element_ptr(unsigned(j), t, offset));
      if (lanes) x = b.CreateVectorSplat(lanes, x);
      row_values.emplace(id, from_storage(x, t));
    }
    for (std::size_t o = 0; o < k.outputs.size(); ++o)
      out_base.push_back(element_ptr(unsigned(k.inputs.size() + o), g.shape(k.outputs[o]).dtype(),
                                     b.CreateAdd(row_start, c_begin)));
    llvm::Value* n_steps = len; // elements the loop covers
    std::vector<llvm::Value*> out_real;
    llvm::Value* is_short = nullptr;
    if (lanes) { // a short row: copy into the padded stack copies and run one vector there
      is_short = b.CreateICmpSLT(len, b.getInt64(lanes));
      llvm::BasicBlock* pre = b.GetInsertBlock();
      llvm::Function* fn = pre->getParent();
      auto* copy_in = llvm::BasicBlock::Create(ctx, "copy_in", fn);
      auto* go = llvm::BasicBlock::Create(ctx, "go", fn);
      b.CreateCondBr(is_short, copy_in, go);
      b.SetInsertPoint(copy_in);
      for (std::size_t j = 0; j < k.inputs.size(); ++j)
        if (in_base[j]) {
          DType t = k.read_shapes[j].dtype();
          b.CreateMemCpy(pad_in[j], llvm::Align(64), in_base[j], align(t),
                         b.CreateMul(len, b.getInt64(align(t).value())));
        }
      b.CreateBr(go);
      b.SetInsertPoint(go);
      auto pick = [&](llvm::Value* padded, llvm::Value* real) {
        llvm::PHINode* phi = b.CreatePHI(real->getType(), 2);
        phi->addIncoming(padded, copy_in);
        phi->addIncoming(real, pre);
        return phi;
      };
      for (std::size_t j = 0; j < k.inputs.size(); ++j)
        if (in_base[j]) in_base[j] = pick(pad_in[j], in_base[j]);
      std::vector<llvm::Value*> real_out = out_base;
      for (std::size_t o = 0; o < k.outputs.size(); ++o)
        out_base[o] = pick(pad_out[o], out_base[o]);
      n_steps = pick(b.getInt64(lanes), len);
      out_real = real_out; // copy_out writes a short row's results there
    }
    emit_loop(
        b.getInt64(0), n_steps, {},
        [&](llvm::Value* c, Vals) {
          if (lanes) // the last vector ends at the row's end
            c = b.CreateIntrinsic(llvm::Intrinsic::smin, {i64},
                                  {c, b.CreateSub(n_steps, b.getInt64(lanes))});
          std::unordered_map<uint32_t, llvm::Value*> values = row_values;
          for (std::size_t j = 0; j < k.inputs.size(); ++j) {
            if (!in_base[j]) continue;
            DType t = k.read_shapes[j].dtype();
            llvm::Value* p = b.CreateInBoundsGEP(storage_type(t), in_base[j], c);
            values.emplace(
                k.inputs[j].index,
                from_storage(b.CreateAlignedLoad(lanes_of(storage_type(t)), p, align(t)), t));
          }
          eval_nodes(g, k, values);
          for (std::size_t o = 0; o < k.outputs.size(); ++o) {
            DType t = g.shape(k.outputs[o]).dtype();
            llvm::Value* p = b.CreateInBoundsGEP(storage_type(t), out_base[o], c);
            store(to_storage(values.at(k.outputs[o].index), t), p, align(t));
          }
          return Vals{};
        },
        width);
    if (lanes) {
      llvm::Function* fn = b.GetInsertBlock()->getParent();
      auto* copy_out = llvm::BasicBlock::Create(ctx, "copy_out", fn);
      auto* next = llvm::BasicBlock::Create(ctx, "next", fn);
      b.CreateCondBr(is_short, copy_out, next);
      b.SetInsertPoint(copy_out);
      for (std::size_t o = 0; o < k.outputs.size(); ++o) {
        DType t = g.shape(k.outputs[o]).dtype();
        b.CreateMemCpy(out_real[o], align(t), pad_out[o], llvm::Align(64),
                       b.CreateMul(len, b.getInt64(align(t).value())));
      }
      b.CreateBr(next);
      b.SetInsertPoint(next);
    }
    return Vals{};
  });
  if (stream) // streaming stores are weakly ordered: drain them before the caller goes on
    b.CreateIntrinsic(llvm::Intrinsic::x86_sse_sfence, {}, {});
  b.CreateRetVoid();
  combine_quotients(*body_fn);
  mb.passes = lanes ? Passes::Straight : Passes::Loops;
  generic_out = generic;
  return mb;
}

/// Everything emit_elementwise reads of a kernel, as text (see find_lowered). A size-generic
/// kernel (runtime_extent) reads of each operand only whether it has the output's elements or
/// one, so one key serves every size of a dynamic dim; a kernel compiled for its sizes holds
/// them all.
std::string emission_key(const ir::Graph& g, const ir::FusedKernel& k, unsigned lanes) {
  return "elementwise lanes=" + std::to_string(lanes) +
         (k.runtime_extent ? " generic " : " sized ") + kernel_key(g, k, !k.runtime_extent);
}

NativeKernel emit_and_load(const ir::Graph& g, const ir::FusedKernel& k, const std::string& name,
                           unsigned lanes, Tier tier) {
  bool generic = false;
  ModuleBuilder mb = emit_elementwise(g, k, name, lanes, false, generic);
  if (t_emit.scalarized) {
    mb.module.reset(); // before its context
    mb = emit_elementwise(g, k, name, 0, false, generic);
  } else if (streaming_enabled() && may_stream(g, k, lanes) &&
             loop_body_size(*mb.module) <= kSmallBody) {
    mb.module.reset();
    mb = emit_elementwise(g, k, name, lanes, true, generic);
  }
  // Large vector bodies compile with the fast code generator first (session.cpp:
  // codegen_level), with the full one when they turn out hot (Tier::Full).
  mb.fast_codegen = tier == Tier::First && mb.passes == Passes::Straight &&
                    loop_body_size(*mb.module) > kSmallBody;
  if (tier == Tier::First) count_extents(generic); // a recompile is not a new kernel
  return load_kernel(std::move(mb), name);
}

} // namespace

NativeKernel lower_elementwise(const ir::Graph& g, const ir::FusedKernel& k,
                               const std::string& name, Tier tier) {
  // Explicit vectors of the host's width, unless a node needs a math function that has no
  // vector implementation (f64 transcendentals, sin, pow, ...): that kernel is emitted as scalar
  // code, which the loop vectorizer widens where it can.
  unsigned lanes = host_f32_lanes();
  // A kernel lowered before with the same emission key has the same code (lower_once): not
  // with streaming stores, whose choice reads the size.
  if (streaming_enabled()) return emit_and_load(g, k, name, lanes, tier);
  const std::string key = emission_key(g, k, lanes), full = "full " + key;
  // A kernel that was hot before starts with its full code.
  if (tier == Tier::First)
    if (std::optional<LoweredKernel> seen = find_lowered(full)) {
      count_extents(k.runtime_extent);
      note_reused(seen->record);
      return NativeKernel{std::move(seen->code), reinterpret_cast<KernelFn>(seen->fn)};
    }
  return lower_once(
      tier == Tier::Full ? full : key, [&] { return emit_and_load(g, k, name, lanes, tier); },
      [&] {
        if (tier == Tier::First) count_extents(k.runtime_extent);
      });
}

} // namespace rlx::jit
