// jit/llvm/lower_common.cpp -- see lower_common.hpp.
//
// Values are computed through the same scalar rules as the interpreter (src/ops/scalar.hpp
// instantiated with JV), each node in its compute type (f32 for f32 nodes, else f64; see
// jit/llvm/jv.hpp) and held rounded to its dtype as the interpreter stores it.
#include "llvm/lower_common.hpp"

#include "debug.hpp"
#include "ops/scalar.hpp"
#include "llvm/session.hpp"

#include "rlx/interp.hpp"
#include "rlx/ir/lir.hpp"
#include "rlx/ir/text.hpp"

#include <llvm/IR/Function.h>

#include <cstdlib>
#include <string_view>

namespace rlx::jit::ew {

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

/// The compute type of a node's rule: f32 when the node and all its operands are f32 or bool
/// (f32 arithmetic then rounds exactly as the interpreter's double arithmetic rounded to f32),
/// f64 otherwise (f64 holds every i32 and f32 exactly).
static llvm::Type* compute_type(const ir::Graph& g, const ir::Node& n) {
  auto narrow = [](DType t) { return t == DType::F32 || t == DType::Bool; };
  bool f32 = narrow(n.shape.dtype());
  for (ir::NodeId in : n.inputs) f32 = f32 && narrow(g.shape(in).dtype());
  return lanes_of(f32 ? B().getFloatTy() : B().getDoubleTy());
}

/// A value held as dtype t (f32: float, f64: double, bool: i1, i32: i32) in compute type cty.
static JV to_compute(llvm::Value* v, DType t, llvm::Type* cty) {
  llvm::IRBuilder<>& b = B();
  switch (t) {
  case DType::F32:
  case DType::F64:
    return v->getType() == cty ? v : b.CreateFPExt(v, cty);
  case DType::Bool:
    return b.CreateUIToFP(v, cty);
  case DType::I32:
    return b.CreateSIToFP(v, cty);
  default:
    throw InternalError("jit: cannot compute on a non-native dtype");
  }
}

/// A computed value held as dtype t: floats round to nearest, bool is x != 0 (NaN is true),
/// integers truncate toward zero and saturate, NaN becomes 0 (docs/semantics.md).
static llvm::Value* from_compute(JV x, DType t) {
  llvm::IRBuilder<>& b = B();
  switch (t) {
  case DType::F32:
    return x.is_f32() ? x.v : b.CreateFPTrunc(x.v, lanes_of(b.getFloatTy()));
  case DType::F64:
    return x.v;
  case DType::Bool:
    return b.CreateFCmpUNE(x.v, llvm::ConstantFP::get(x.v->getType(), 0.0));
  case DType::I32:
    return b.CreateIntrinsic(llvm::Intrinsic::fptosi_sat,
                             {lanes_of(b.getInt32Ty()), x.v->getType()}, {x.v});
  default:
    throw InternalError("jit: cannot store a non-native dtype");
  }
}

/// A loaded element (storage type) as the value held for dtype t, and back.
llvm::Value* from_storage(llvm::Value* v, DType t) {
  return t == DType::Bool ? B().CreateICmpNE(v, llvm::ConstantInt::get(v->getType(), 0)) : v;
}
llvm::Value* to_storage(llvm::Value* v, DType t) {
  return t == DType::Bool ? B().CreateZExt(v, lanes_of(B().getInt8Ty())) : v;
}

/// The scalar rule of an element-wise node on f64 operands.
static JV apply_rule(const ir::Node& n, const std::vector<JV>& in) {
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

/// A one-element constant node's value as held for its dtype.
llvm::Value* constant_value(const ir::Node& n) {
  double v = interp::eval_node(n, {}).get_f64(0);
  llvm::IRBuilder<>& b = B();
  switch (n.shape.dtype()) {
  case DType::F32:
    return llvm::ConstantFP::get(lanes_of(b.getFloatTy()), double(float(v)));
  case DType::F64:
    return llvm::ConstantFP::get(lanes_of(b.getDoubleTy()), v);
  case DType::Bool:
    return llvm::ConstantInt::get(lanes_of(b.getInt1Ty()), v != 0);
  case DType::I32:
    return llvm::ConstantInt::get(lanes_of(b.getInt32Ty()), uint64_t(uint32_t(int32_t(v))));
  default:
    throw InternalError("jit: a constant of a non-native dtype");
  }
}

bool inline_constant(const ir::Node& n) {
  if (n.op.kind() != OpKind::Constant || !n.shape.is_static()) return false;
  for (int64_t s : n.shape.sizes())
    if (s != 1) return false;
  return native_dtype(n.shape.dtype());
}

RowLayout row_layout(const std::vector<ir::Shape>& operands, const ir::Shape& out) {
  std::vector<int64_t> os = out.sizes();
  enum class C : uint8_t { Any, Full, Bcast };
  std::vector<C> cls(operands.size(), C::Any);
  RowLayout layout;
  for (std::size_t d = os.size(); d-- > 0;) {
    std::vector<C> next = cls;
    bool ok = true;
    for (std::size_t j = 0; j < operands.size() && ok; ++j) {
      std::vector<int64_t> is = operands[j].sizes();
      std::size_t off = os.size() - is.size();
      int64_t s = d >= off ? is[d - off] : 1;
      if (os[d] == 1) continue;
      C c = s == os[d] ? C::Full : C::Bcast;
      if (next[j] != C::Any && next[j] != c) ok = false;
      next[j] = c;
    }
    if (!ok) break;
    cls = next;
    layout.inner *= os[d];
  }
  for (C c : cls) layout.contiguous.push_back(c == C::Full);
  return layout;
}

std::string kernel_key(const ir::Graph& g, const ir::FusedKernel& k, bool sized) {
  const int64_t numel = *k.shape.num_elements();
  auto dtype = [](const ir::Shape& s) { return std::string(ir::dtype_name(s.dtype())); };
  auto shape_text = [&](const ir::Shape& s) {
    if (sized) return dtype(s) + ir::short_str(s);
    int64_t n = *s.num_elements();
    if (n == 1) return dtype(s) + "[one]";
    if (n == numel) return dtype(s) + "[all]";
    return dtype(s) + ir::short_str(s) + "->" + ir::short_str(k.shape);
  };
  RowLayout layout = row_layout(k.read_shapes, k.shape);
  return kernel_key(g, k, shape_text(k.shape), [&](std::size_t j) {
    return shape_text(k.read_shapes[j]) + (layout.contiguous[j] ? "c" : "b");
  });
}

std::string kernel_key(const ir::Graph& g, const ir::FusedKernel& k, const std::string& out,
                       const std::function<std::string(std::size_t)>& operand) {
  auto dtype = [](const ir::Shape& s) { return std::string(ir::dtype_name(s.dtype())); };
  std::string key = "out=" + out;
  std::unordered_map<uint32_t, std::string> ref; // node index -> "in<j>" or "n<p>"
  for (std::size_t j = 0; j < k.inputs.size(); ++j) {
    std::string r = "in" + std::to_string(j);
    ref.emplace(k.inputs[j].index, r);
    key += " " + r + "=" + operand(j) + dtype(g.shape(k.inputs[j]));
    const ir::Node& src = g.node(k.buffers[j]);
    if (inline_constant(src)) key += ":" + ir::op_to_text(src.op) + dtype(src.shape);
  }
  for (std::size_t p = 0; p < k.nodes.size(); ++p) {
    const ir::Node& n = g.node(k.nodes[p]);
    std::string r = "n" + std::to_string(p);
    key += " " + r + "=" + ir::op_to_text(n.op) + dtype(n.shape) + "(";
    for (ir::NodeId in : n.inputs) key += ref.at(in.index) + ",";
    key += ")";
    ref.emplace(n.id.index, r);
  }
  key += " ->";
  for (ir::NodeId o : k.outputs) key += " " + ref.at(o.index);
  return key;
}

NativeKernel lower_once(const std::string& key, const std::function<NativeKernel()>& lower,
                        const std::function<void()>& on_reuse) {
  DebugState debug = debug_state();
  if (debug.dump_llvm || debug.dump_asm) return lower();
  // RLX_REUSE_KERNELS=0 (read at each lowering) lowers every kernel: to rule a reused one out,
  // and for benchmarks comparing both.
  const char* env = std::getenv("RLX_REUSE_KERNELS");
  if (env != nullptr && std::string_view(env) == "0") return lower();
  std::optional<LoweredKernel> seen = find_lowered(key);
  if (seen && !ir::plan_checks_enabled()) {
    on_reuse();
    note_reused(seen->record);
    return NativeKernel{std::move(seen->code), reinterpret_cast<KernelFn>(seen->fn)};
  }
  NativeKernel out = lower();
  void* fn = reinterpret_cast<void*>(out.fn);
  if (!seen) {
    remember_lowered(key, LoweredKernel{out.code, fn, last_compile()});
    return out;
  }
  if (fn != seen->fn)
    throw InternalError("jit: two kernels with one emission key got different code (the key "
                        "misses something their lowering reads): " +
                        key);
  // The kernel the unchecked path returns, so the tests run what users run.
  note_reused(seen->record);
  return NativeKernel{std::move(seen->code), reinterpret_cast<KernelFn>(seen->fn)};
}

void eval_nodes(const ir::Graph& g, const ir::FusedKernel& k,
                std::unordered_map<uint32_t, llvm::Value*>& values) {
  for (ir::NodeId id : k.nodes) {
    const ir::Node& n = g.node(id);
    llvm::Type* cty = compute_type(g, n);
    t_emit.fty = cty;
    std::vector<JV> ins;
    for (ir::NodeId in : n.inputs)
      ins.push_back(to_compute(values.at(in.index), g.shape(in).dtype(), cty));
    values.emplace(id.index, from_compute(apply_rule(n, ins), n.shape.dtype()));
  }
}

} // namespace rlx::jit::ew
