// jit/llvm/lower_elementwise.cpp -- a fused element-wise region as one LLVM loop.
//
// Values are computed as f64 through the same scalar rules as the interpreter
// (src/ops/scalar.hpp instantiated with JV), and each node's value is rounded to its dtype as
// the interpreter stores it, so results agree with the interpreter bit for bit: f32 + - * / are
// exact when computed in f64 and rounded once, and transcendental functions call the same libm.
// (Vector implementations of the transcendentals, computed in f32, come with stated error
// bounds later.)
#include "lower.hpp"
#include "llvm/jv.hpp"
#include "llvm/session.hpp"

#include "ops/scalar.hpp"
#include "rlx/interp.hpp"

#include <llvm/IR/Function.h>
#include <llvm/IR/LLVMContext.h>

#include <algorithm>

#include <unordered_map>

namespace rlx::jit {

namespace {

using ir::DType;
using ir::OpKind;

bool native_dtype(DType t) {
  return t == DType::F32 || t == DType::F64 || t == DType::Bool || t == DType::I32;
}

llvm::Type* storage_type(DType t) {
  llvm::IRBuilder<>& b = B();
  switch (t) {
  case DType::F32:
    return b.getFloatTy();
  case DType::F64:
    return b.getDoubleTy();
  case DType::Bool:
    return b.getInt8Ty();
  case DType::I32:
    return b.getInt32Ty();
  default:
    throw InternalError("jit: no storage type for a non-native dtype");
  }
}

/// A stored element as the f64 the rules compute on.
JV to_f64(llvm::Value* v, DType t) {
  llvm::IRBuilder<>& b = B();
  switch (t) {
  case DType::F32:
    return b.CreateFPExt(v, b.getDoubleTy());
  case DType::F64:
    return v;
  case DType::Bool:
    return b.CreateUIToFP(b.CreateICmpNE(v, b.getInt8(0)), b.getDoubleTy());
  case DType::I32:
    return b.CreateSIToFP(v, b.getDoubleTy());
  default:
    throw InternalError("jit: cannot load a non-native dtype");
  }
}

/// An f64 value stored as dtype t: floats round to nearest, bool is x != 0 (NaN is true),
/// integers truncate toward zero and saturate, NaN becomes 0 (docs/semantics.md).
llvm::Value* from_f64(JV x, DType t) {
  llvm::IRBuilder<>& b = B();
  switch (t) {
  case DType::F32:
    return b.CreateFPTrunc(x.v, b.getFloatTy());
  case DType::F64:
    return x.v;
  case DType::Bool:
    return b.CreateZExt(b.CreateFCmpUNE(x.v, JV(0.0).v), b.getInt8Ty());
  case DType::I32:
    return b.CreateIntrinsic(llvm::Intrinsic::fptosi_sat, {b.getInt32Ty(), b.getDoubleTy()}, {x.v});
  default:
    throw InternalError("jit: cannot store a non-native dtype");
  }
}

/// The value as the interpreter holds it after storing it as dtype t.
JV round_to(JV x, DType t) { return t == DType::F64 ? x : to_f64(from_f64(x, t), t); }

/// The scalar rule of an element-wise node on f64 operands.
JV apply_rule(const ir::Node& n, const std::vector<JV>& in) {
  switch (n.op.kind()) {
#define UNARY(E, N, T, S)                                                                          \
  case OpKind::E:                                                                                  \
    return ops::Scalar<OpKind::E>::apply(in[0], n.op.attrs<ir::S>());
#define BINARY(E, N, T)                                                                            \
  case OpKind::E:                                                                                  \
    return ops::Scalar<OpKind::E>::apply(in[0], in[1]);
#define OP(E, N, F, A, T, S)
#include "rlx/ir/ops.def"
  case OpKind::Clamp:
    return ops::Scalar<OpKind::Clamp>::apply(in[0], n.op.attrs<ir::ClampAttrs>());
  case OpKind::StopGradient:
  case OpKind::Cast: // the conversion is the rounding to the node's dtype
    return in[0];
  case OpKind::Where:
    return sel(in[0] != JV(0.0), in[1], in[2]);
  default:
    throw InternalError("jit: no element-wise rule for " + std::string(n.op.name()));
  }
}

bool has_rule(OpKind k) {
  switch (k) {
#define UNARY(E, N, T, S) case OpKind::E:
#define BINARY(E, N, T) case OpKind::E:
#define OP(E, N, F, A, T, S)
#include "rlx/ir/ops.def"
  case OpKind::Clamp:
  case OpKind::StopGradient:
  case OpKind::Cast:
  case OpKind::Where:
    return true;
  default:
    return false;
  }
}

/// Flat index into an operand of shape `in` broadcast to `out` (right-aligned) at flat output
/// index i.
llvm::Value* broadcast_index(llvm::Value* i, const ir::Shape& in, const ir::Shape& out) {
  llvm::IRBuilder<>& b = B();
  std::vector<int64_t> is = in.sizes(), os = out.sizes();
  int64_t in_numel = 1, out_numel = 1;
  for (int64_t s : is) in_numel *= s;
  for (int64_t s : os) out_numel *= s;
  if (in_numel == out_numel) return i; // same elements in the same order
  if (in_numel == 1) return b.getInt64(0);
  std::size_t off = os.size() - is.size();
  llvm::Value* idx = b.getInt64(0);
  int64_t out_stride = 1, in_stride = 1;
  for (std::size_t d = os.size(); d-- > 0;) {
    bool present = d >= off && is[d - off] != 1;
    if (present && os[d] != 1) {
      llvm::Value* coord = b.CreateURem(b.CreateUDiv(i, b.getInt64(uint64_t(out_stride))),
                                        b.getInt64(uint64_t(os[d])));
      idx = b.CreateAdd(idx, b.CreateMul(coord, b.getInt64(uint64_t(in_stride))));
    }
    out_stride *= os[d];
    if (d >= off) in_stride *= is[d - off];
  }
  return idx;
}

/// The value of a one-element constant node.
double constant_value(const ir::Node& n) {
  interp::Buffer b = interp::eval_node(n, {});
  return b.get_f64(0);
}

bool inline_constant(const ir::Node& n) {
  if (n.op.kind() != OpKind::Constant || !n.shape.is_static()) return false;
  for (int64_t s : n.shape.sizes())
    if (s != 1) return false;
  return true;
}

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

NativeKernel lower_elementwise(const ir::Graph& g, const EwKernel& k, const std::string& name) {
  ModuleBuilder mb = new_module(name);
  llvm::LLVMContext& ctx = *mb.context;
  llvm::IRBuilder<> builder(ctx);
  t_emit = EmitContext{&builder, mb.module.get()};
  llvm::IRBuilder<>& b = builder;
  auto* ptr = b.getPtrTy();
  auto* fty = llvm::FunctionType::get(b.getVoidTy(), {ptr, b.getInt64Ty(), b.getInt64Ty()}, false);
  auto* fn = llvm::Function::Create(fty, llvm::Function::ExternalLinkage, name, *mb.module);
  fn->addFnAttr(llvm::Attribute::NoUnwind);
  llvm::Value* bufs = fn->getArg(0);
  llvm::Value* begin = fn->getArg(1);
  llvm::Value* end = fn->getArg(2);

  auto* entry = llvm::BasicBlock::Create(ctx, "entry", fn);
  auto* loop = llvm::BasicBlock::Create(ctx, "loop", fn);
  auto* body = llvm::BasicBlock::Create(ctx, "body", fn);
  auto* exit = llvm::BasicBlock::Create(ctx, "exit", fn);
  b.SetInsertPoint(entry);
  std::vector<llvm::Value*> base;
  std::size_t n_bufs = k.inputs.size() + k.outputs.size();
  for (std::size_t j = 0; j < n_bufs; ++j) {
    llvm::Value* slot = b.CreateConstInBoundsGEP1_64(ptr, bufs, j);
    auto* p = b.CreateLoad(ptr, slot);
    p->setMetadata(llvm::LLVMContext::MD_invariant_load, llvm::MDNode::get(ctx, {}));
    base.push_back(p);
  }
  b.CreateBr(loop);

  b.SetInsertPoint(loop);
  llvm::PHINode* i = b.CreatePHI(b.getInt64Ty(), 2, "i");
  i->addIncoming(begin, entry);
  b.CreateCondBr(b.CreateICmpSLT(i, end), body, exit);

  b.SetInsertPoint(body);
  std::unordered_map<uint32_t, JV> values;
  for (std::size_t j = 0; j < k.inputs.size(); ++j) {
    const ir::Node& in = g.node(k.inputs[j]);
    if (inline_constant(in) && native_dtype(in.shape.dtype())) {
      values.emplace(in.id.index, JV(constant_value(in)));
      continue;
    }
    DType t = in.shape.dtype();
    llvm::Value* idx = broadcast_index(i, in.shape, k.shape);
    llvm::Value* p = b.CreateInBoundsGEP(storage_type(t), base[j], idx);
    values.emplace(in.id.index, to_f64(b.CreateLoad(storage_type(t), p), t));
  }
  std::size_t out_slot = k.inputs.size();
  for (ir::NodeId id : k.nodes) {
    const ir::Node& n = g.node(id);
    std::vector<JV> ins;
    for (ir::NodeId in : n.inputs) ins.push_back(values.at(in.index));
    JV v = round_to(apply_rule(n, ins), n.shape.dtype());
    values.emplace(id.index, v);
    if (std::find(k.outputs.begin(), k.outputs.end(), id) != k.outputs.end()) {
      DType t = n.shape.dtype();
      llvm::Value* p = b.CreateInBoundsGEP(storage_type(t), base[out_slot++], i);
      b.CreateStore(from_f64(v, t), p);
    }
  }
  llvm::Value* next = b.CreateAdd(i, b.getInt64(1), "", /*HasNUW=*/true, /*HasNSW=*/true);
  i->addIncoming(next, body);
  b.CreateBr(loop);

  b.SetInsertPoint(exit);
  b.CreateRetVoid();
  t_emit = EmitContext{};

  NativeKernel out;
  out.code = add_module(std::move(mb));
  out.fn = reinterpret_cast<KernelFn>(out.code->symbol(name));
  return out;
}

} // namespace rlx::jit
