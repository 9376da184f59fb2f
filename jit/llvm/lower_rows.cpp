// jit/llvm/lower_rows.cpp -- row kernels: reductions over trailing axes, softmax, the norms and
// cumsum over the last axis, as one LLVM function over a range of rows whose loops vectorize.
//
// A row is the `len` contiguous elements the op reduces (reduce_sum/mean/max/min whose axes are
// the trailing dimensions), normalizes (softmax, layer and rms norm, also of x + residual, on
// the last axis) or scans (cumsum on the last axis). Sums of f32 accumulate in f64, as the
// interpreter's do, in vector lanes (so the order differs from the interpreter's sequential
// sum: `reassoc` is set on those additions only); f64 sums keep its order, and so does cumsum,
// whose running sum is its result. Max and min use llvm.maximum / llvm.minimum, which
// propagate NaN as the interpreter does. Softmax is three passes over the row, which stays in
// L1 between them: the maximum, exp(x - max) stored and summed, and the scaling by 1 / sum; for
// f32 the first two run in explicit vectors of the host's lanes (softmax_max_vectors,
// softmax_exp_vectors). The f32 layer and rms norms (not the fused residual ones) compute in
// f32 vectors (F32Row): the moments by the shifted, corrected two-pass algorithm, whose error
// docs/jit.md derives, with the f64 passes as the fallback for rows beyond f32's range; the
// f64 norms and the fused residual ones compute in f64 like the interpreter. An f32 softmax's
// or norm's element-wise prologue runs in vectors too (prologue_vectors), kept on the stack
// between the passes when it is costly (kCheapPrologue).
//
// The row length is an argument of the call (the slot after the output in `bufs`). A
// size-generic kernel reads it, and places a prologue's operands by classes that every size of
// a dynamic dim keeps (RowPlan), so one kernel serves every size: a new size finds it by its
// emission key and compiles nothing. The first length of a region is compiled in (faster code,
// see lower_row), the second gets the generic kernel. Prologues whose operands broadcast
// otherwise, and rlx::ExtentPolicy::Specialize, always compile the length and the shapes in.
#include "lower.hpp"
#include "llvm/jv.hpp"
#include "llvm/kernel_abi.hpp"
#include "llvm/lower_common.hpp"
#include "llvm/row_vectors.hpp"
#include "llvm/session.hpp"

#include "rlx/error.hpp"
#include "rlx/ir/text.hpp"
#include "rlx/settings.hpp"

#include <llvm/IR/Function.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/MDBuilder.h>

#include <algorithm>
#include <functional>
#include <iterator>
#include <limits>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <utility>

namespace rlx::jit {

namespace {

using ir::DType;
using ir::OpKind;

/// The number of elements per row, or 0 when the node is not a row op the lowering handles.
int64_t row_len(const ir::Graph& g, const ir::Node& n) {
  if (n.inputs.empty() || !n.shape.is_static()) return 0;
  const ir::Shape& in = g.shape(n.inputs[0]);
  DType t = in.dtype();
  if (!in.is_static() || (t != DType::F32 && t != DType::F64) || n.shape.dtype() != t) return 0;
  std::vector<int64_t> sizes = in.sizes();
  auto rank = int64_t(sizes.size());
  auto norm = [&](int64_t a) { return a < 0 ? a + rank : a; };
  std::vector<int64_t> axes;
  switch (n.op.kind()) {
  case OpKind::Softmax:
    if (n.inputs.size() != 1) return 0;
    axes = {norm(n.op.attrs<ir::AxisAttrs>().axis)};
    break;
  case OpKind::FusedResidualLN:
  case OpKind::FusedResidualRmsNorm: {
    // norm(x + residual [+ bias]) over the last axis: the residual of x's shape, the bias,
    // gamma and beta vectors of the row's length, all of x's dtype.
    const auto& a = n.op.attrs<ir::FusedResidualNormAttrs>();
    std::size_t count = a.has_bias ? 5 : 4;
    if (rank == 0 || n.inputs.size() != count || n.shape.dims() != in.dims()) return 0;
    const ir::Shape& r = g.shape(n.inputs[1]);
    if (r.dims() != in.dims() || r.dtype() != t) return 0;
    for (std::size_t j = 2; j < count; ++j) {
      const ir::Shape& v = g.shape(n.inputs[j]);
      if (!v.is_static() || v.dtype() != t || v.sizes().empty() ||
          *v.num_elements() != sizes.back() || v.sizes().back() != sizes.back())
        return 0;
    }
    axes = {rank - 1};
    break;
  }
  case OpKind::LayerNorm:
  case OpKind::RmsNorm: {
    // gamma and beta of the row's length and x's dtype; otherwise the runtime kernel runs (and
    // reports a mismatch).
    int64_t axis = n.op.attrs<ir::NormAttrs>().axis;
    if (rank == 0 || n.inputs.size() != 3 || axis < -rank || axis >= rank) return 0;
    axes = {norm(axis)};
    for (std::size_t j = 1; j < 3; ++j) {
      const ir::Shape& v = g.shape(n.inputs[j]);
      auto count = v.num_elements();
      if (!count || *count != sizes[std::size_t(axes[0])] || v.dtype() != t) return 0;
    }
    break;
  }
  case OpKind::ReduceSum:
  case OpKind::ReduceMean:
  case OpKind::ReduceMax:
  case OpKind::ReduceMin:
    if (n.inputs.size() != 1) return 0;
    for (int64_t a : n.op.attrs<ir::ReduceAttrs>().axes) axes.push_back(norm(a));
    break;
  case OpKind::Cumsum:
    if (n.inputs.size() != 1 || n.shape.dims() != in.dims()) return 0;
    axes = {norm(n.op.attrs<ir::CumsumAttrs>().axis)};
    break;
  default:
    return 0;
  }
  std::sort(axes.begin(), axes.end());
  axes.erase(std::unique(axes.begin(), axes.end()), axes.end());
  if (axes.empty()) return 0;
  // The axes must be the trailing dimensions.
  for (std::size_t i = 0; i < axes.size(); ++i)
    if (axes[i] != rank - int64_t(axes.size()) + int64_t(i)) return 0;
  int64_t len = 1;
  for (int64_t a : axes) len *= sizes[std::size_t(a)];
  return len;
}

/// The longest row whose f64 sums a fused residual norm keeps on the stack (32 KiB).
constexpr int64_t kMaxScratchRow = 4096;

llvm::Value* reassoc_add(llvm::Value* a, llvm::Value* b) {
  llvm::IRBuilder<>& bld = B();
  llvm::IRBuilderBase::FastMathFlagGuard keep(bld);
  llvm::FastMathFlags fmf;
  fmf.setAllowReassoc();
  bld.setFastMathFlags(fmf);
  return bld.CreateFAdd(a, b);
}

/// The most instructions a vector of prologue takes for it to be computed in each pass of a
/// softmax or norm rather than kept on the stack from the first: a cheap prologue from memory
/// (softmax(x * 0.125 + r), six instructions) ran up to 1.3x slower kept, depending on where
/// the stack row fell against the operands' addresses; a costly one (tanh(x) * 4, 23) ran 2x
/// faster.
constexpr std::size_t kCheapPrologue = 12;

} // namespace

bool lowers_as_row(const ir::Graph& g, const ir::Node& n) { return row_len(g, n) > 0; }

bool fits_row_prologue(const ir::Graph& g, const ir::Node& n, const ir::FusedKernel& k) {
  int64_t len = row_len(g, n);
  const ir::Shape& x = g.shape(n.inputs[0]);
  return len > 0 && k.shape.dims() == x.dims() && k.shape.dtype() == x.dtype() &&
         ew::row_layout(k.read_shapes, k.shape).inner % len == 0;
}

int64_t row_count(const ir::Graph& g, const ir::Node& n) {
  int64_t len = row_len(g, n);
  if (len <= 0) throw InternalError("jit: row count of a node that is not a row op");
  return *g.shape(n.inputs[0]).num_elements() / len;
}

namespace {

/// Where a size-generic row kernel finds a prologue operand's elements for row r (whose first
/// element is row0 = r * len): classes that do not depend on the sizes, so the code holds none.
enum class Along : uint8_t {
  All,    ///< the kernel's shape: from row0 on, contiguous along the row
  One,    ///< one element (or an immediate) for every row
  Row,    ///< the row's shape, broadcast along the leading dims: from 0 on, contiguous
  PerRow, ///< one element per row, broadcast along it: element r
};

const char* along_name(Along a) {
  constexpr const char* names[] = {"all", "one", "row", "per_row"};
  return names[std::size_t(a)];
}

/// Each prologue operand's class for rows of `len` elements of k's iteration space, or nothing
/// when one fits none (it broadcasts within the leading or the row's dims).
std::optional<std::vector<Along>> prologue_classes(const ir::FusedKernel& k, int64_t len) {
  std::vector<int64_t> os = k.shape.sizes();
  // The row's dims: the fewest trailing dims whose sizes multiply to len; `lead` dims lead.
  std::size_t lead = os.size();
  int64_t p = 1;
  while (p < len && lead > 0) p *= os[--lead];
  if (p != len) return std::nullopt;
  int64_t numel = *k.shape.num_elements();
  std::vector<Along> out;
  for (const ir::Shape& s : k.read_shapes) {
    int64_t n = *s.num_elements();
    if (n == numel) {
      out.push_back(Along::All);
      continue;
    }
    if (n == 1) {
      out.push_back(Along::One);
      continue;
    }
    std::vector<int64_t> is = s.sizes();
    std::size_t off = os.size() - is.size();
    bool row = true, per_row = true;
    for (std::size_t d = 0; d < os.size(); ++d) {
      if (os[d] == 1) continue;
      int64_t in = d >= off ? is[d - off] : 1;
      bool full = in == os[d], one = in == 1;
      row = row && (d < lead ? one : full);
      per_row = per_row && (d < lead ? full : one);
    }
    if (!row && !per_row) return std::nullopt;
    out.push_back(row ? Along::Row : Along::PerRow);
  }
  return out;
}

/// What a row kernel's code depends on besides the op and its dtypes: with `generic`, the row
/// length is read from the call and the prologue's operands are placed by `along`; otherwise
/// both are constants of the code (`len`, the shapes).
struct RowPlan {
  int64_t len = 0;
  bool generic = false;
  std::vector<Along> along; ///< per prologue operand, when generic
  bool scratch = false;     ///< a fused residual norm keeps its row's sums on the stack
  bool wide_params = false; ///< an f32 norm widens gamma and beta once per call, on the stack
};

RowPlan plan_row(const ir::Graph& g, const ir::Node& n, const ir::FusedKernel* prologue) {
  RowPlan p;
  p.len = row_len(g, n);
  if (p.len <= 0) throw InternalError("jit: lower_row on a node that is not a row op");
  p.generic = extent_policy() == ExtentPolicy::Generic;
  if (p.generic && prologue) {
    std::optional<std::vector<Along>> along = prologue_classes(*prologue, p.len);
    if (along)
      p.along = std::move(*along);
    else
      p.generic = false;
  }
  OpKind k = n.op.kind();
  bool residual = k == OpKind::FusedResidualLN || k == OpKind::FusedResidualRmsNorm;
  p.scratch = residual && p.len <= kMaxScratchRow;
  p.wide_params = (residual || k == OpKind::LayerNorm || k == OpKind::RmsNorm) &&
                  n.shape.dtype() == DType::F32 && p.len <= kMaxScratchRow;
  return p;
}

/// Emits the loops of one row kernel: x is the row op's first operand, y its output; f32 data
/// widen to f64 for sums and for the norms' arithmetic.
struct RowEmitter {
  llvm::IRBuilder<>& b;
  DType t;
  llvm::Type* ety; ///< element type
  llvm::Type* dty; ///< f64
  llvm::Value* L;  ///< the row length
  llvm::Value* y;
  /// Element i of the current row of the op's first operand (a load, or its prologue computed).
  std::function<llvm::Value*(llvm::Value*)> xv;

  using Vals = std::vector<llvm::Value*>;

  llvm::Value* load(llvm::Value* base, llvm::Value* idx) {
    return b.CreateLoad(ety, b.CreateInBoundsGEP(ety, base, idx));
  }
  void store(llvm::Value* v, llvm::Value* base, llvm::Value* idx) {
    b.CreateStore(v, b.CreateInBoundsGEP(ety, base, idx));
  }
  llvm::Value* widen(llvm::Value* v) { return t == DType::F32 ? b.CreateFPExt(v, dty) : v; }
  llvm::Value* narrow(llvm::Value* v) { return t == DType::F32 ? b.CreateFPTrunc(v, ety) : v; }
  llvm::Value* f64(double v) { return llvm::ConstantFP::get(dty, v); }

  /// max or min of the row (NaN propagates).
  llvm::Value* extremum(llvm::Intrinsic::ID id, double init) {
    return emit_loop(b.getInt64(0), L, {llvm::ConstantFP::get(ety, init)},
                     [&](llvm::Value* i, Vals acc) {
                       llvm::Value* v = xv(i);
                       return Vals{b.CreateIntrinsic(id, {ety}, {acc[0], v})};
                     })[0];
  }
  /// The f64 sum over the row of term(element index). For f32 data in vector lanes (any order
  /// of f64 additions is far below f32's rounding); f64 data are summed in the interpreter's
  /// order, so f64 results match it to the last bits even where centering cancels.
  llvm::Value* sum(const std::function<llvm::Value*(llvm::Value*)>& term) {
    return emit_loop(b.getInt64(0), L, {f64(0.0)}, [&](llvm::Value* i, Vals acc) {
      return Vals{t == DType::F32 ? reassoc_add(acc[0], term(i)) : b.CreateFAdd(acc[0], term(i))};
    })[0];
  }
  void each(const std::function<void(llvm::Value*)>& body) {
    emit_loop(b.getInt64(0), L, {}, [&](llvm::Value* i, Vals) {
      body(i);
      return Vals{};
    });
  }
};

/// Where row r's prologue finds its operands: `base[j]`, operand j's first element of the row,
/// for operands along the row (read element by element or a vector at a time); `row_values`,
/// by node, for the others, read once per row (constants as immediates), splat to vectors of
/// w lanes when w > 0. Generic plans place operands by class, sized ones by their shapes.
struct PrologueOperands {
  std::vector<llvm::Value*> base;
  std::unordered_map<uint32_t, llvm::Value*> row_values;
};
PrologueOperands place_prologue_operands(const ir::Graph& g, const ir::FusedKernel& k,
                                         const RowPlan& plan, llvm::Function* body, llvm::Value* r,
                                         llvm::Value* row0, unsigned w) {
  llvm::IRBuilder<>& b = B();
  auto once = [&](llvm::Value* v) { return w ? b.CreateVectorSplat(w, v) : v; };
  ew::RowLayout layout = ew::row_layout(k.read_shapes, k.shape);
  PrologueOperands o;
  o.base.assign(k.inputs.size(), nullptr);
  for (std::size_t j = 0; j < k.inputs.size(); ++j) {
    const ir::Node& src = g.node(k.buffers[j]);
    if (ew::inline_constant(src)) {
      o.row_values.emplace(k.inputs[j].index, once(ew::constant_value(src)));
      continue;
    }
    DType t = k.read_shapes[j].dtype();
    llvm::Value* offset = nullptr;
    bool contiguous = false;
    if (plan.generic) {
      Along a = plan.along[j];
      offset = a == Along::All ? row0 : a == Along::PerRow ? r : b.getInt64(0);
      contiguous = a == Along::All || a == Along::Row;
    } else {
      offset = ew::broadcast_index(row0, k.read_shapes[j], k.shape);
      contiguous = layout.contiguous[j];
    }
    llvm::Value* p = b.CreateInBoundsGEP(ew::storage_type(t), body->getArg(unsigned(j)), offset);
    if (contiguous)
      o.base[j] = p;
    else
      o.row_values.emplace(k.inputs[j].index,
                           once(ew::from_storage(b.CreateLoad(ew::storage_type(t), p), t)));
  }
  return o;
}

/// The element function of row r's prologue: operands constant along the row are read once
/// here (or are immediates), the others from their row's start on; the kernel's nodes then
/// compute x, as held for its dtype. bufs: the prologue's operands are the body's first
/// arguments. Generic plans place operands by class, sized ones by their shapes.
std::function<llvm::Value*(llvm::Value*)> prologue_row(const ir::Graph& g, const ir::FusedKernel& k,
                                                       const RowPlan& plan, ir::NodeId x,
                                                       llvm::Function* body, llvm::Value* r,
                                                       llvm::Value* row0, llvm::Type* ety) {
  PrologueOperands o = place_prologue_operands(g, k, plan, body, r, row0, 0);
  std::vector<llvm::Value*> base = std::move(o.base);
  std::unordered_map<uint32_t, llvm::Value*> row_values = std::move(o.row_values);
  return [&g, &k, x, ety, base, row_values](llvm::Value* i) {
    llvm::IRBuilder<>& bld = B();
    std::unordered_map<uint32_t, llvm::Value*> values = row_values;
    for (std::size_t j = 0; j < k.inputs.size(); ++j) {
      if (!base[j]) continue;
      DType t = k.read_shapes[j].dtype();
      llvm::Value* p = bld.CreateInBoundsGEP(ew::storage_type(t), base[j], i);
      values.emplace(k.inputs[j].index,
                     ew::from_storage(bld.CreateLoad(ew::storage_type(t), p), t));
    }
    ew::eval_nodes(g, k, values);
    t_emit.fty = ety;
    return values.at(x.index);
  };
}

/// prologue_row's element function in vectors of w lanes: the w values of x from row element
/// i on (full vectors only; the caller finishes a row's tail with prologue_row's). Operands
/// along the row are vector loads, the others read once per row and splat. A node whose math
/// has no vector form sets t_emit.scalarized (emit_row then emits the kernel again without).
VectorLoad prologue_vectors(const ir::Graph& g, const ir::FusedKernel& k, const RowPlan& plan,
                            ir::NodeId x, llvm::Function* body, llvm::Value* r, llvm::Value* row0,
                            llvm::Type* ety, unsigned w) {
  const llvm::DataLayout& dl = body->getParent()->getDataLayout();
  PrologueOperands o = place_prologue_operands(g, k, plan, body, r, row0, w);
  std::vector<llvm::Value*> base = std::move(o.base);
  std::unordered_map<uint32_t, llvm::Value*> row_values = std::move(o.row_values);
  return [&g, &k, &dl, x, ety, w, base, row_values](llvm::Value* i) {
    llvm::IRBuilder<>& bld = B();
    std::unordered_map<uint32_t, llvm::Value*> values = row_values;
    for (std::size_t j = 0; j < k.inputs.size(); ++j) {
      if (!base[j]) continue;
      DType t = k.read_shapes[j].dtype();
      llvm::Type* st = ew::storage_type(t);
      llvm::Value* v =
          bld.CreateAlignedLoad(llvm::FixedVectorType::get(st, w),
                                bld.CreateInBoundsGEP(st, base[j], i), dl.getABITypeAlign(st));
      values.emplace(k.inputs[j].index, ew::from_storage(v, t));
    }
    unsigned lanes = t_emit.lanes;
    t_emit.lanes = w;
    ew::eval_nodes(g, k, values);
    t_emit.lanes = lanes;
    t_emit.fty = ety;
    return values.at(x.index);
  };
}

/// The row kernel's code; with `vector_prologue`, f32 softmax and norms compute a prologue in
/// vectors (prologue_vectors), and when one of its nodes would run lane by lane the kernel is
/// not loaded: `scalarized` is set and the caller emits it again without.
NativeKernel emit_row(const ir::Graph& g, const ir::Node& n, const std::string& name,
                      const ir::FusedKernel* prologue, const RowPlan& plan, bool vector_prologue,
                      bool& scalarized) {
  ModuleBuilder mb = new_module(name);
  llvm::LLVMContext& ctx = *mb.context;
  llvm::IRBuilder<> builder(ctx);
  DType t = n.shape.dtype();
  llvm::Type* ety = t == DType::F32 ? builder.getFloatTy() : builder.getDoubleTy();
  t_emit = EmitContext{&builder, mb.module.get(), ety};
  llvm::IRBuilder<>& b = builder;

  // bufs = {operands..., output, the row length}, or {the prologue's operands..., operands
  // 1..., output, the row length}; [begin, end) counts rows.
  std::size_t n_first = prologue ? prologue->inputs.size() : 1;
  std::size_t n_bufs = n_first + n.inputs.size();
  llvm::Function* body_fn = define_kernel(*mb.module, b, name, n_bufs, 1);
  b.SetInsertPoint(llvm::BasicBlock::Create(ctx, "entry", body_fn));
  llvm::Value* len = plan.generic ? static_cast<llvm::Value*>(body_fn->getArg(unsigned(n_bufs)))
                                  : b.getInt64(uint64_t(plan.len));
  RowEmitter e{b, t, ety, b.getDoubleTy(), len, body_fn->getArg(unsigned(n_bufs - 1)), {}};
  auto arg = [&](std::size_t j) { return body_fn->getArg(unsigned(n_first + j - 1)); }; // j >= 1
  OpKind k = n.op.kind();
  constexpr double kInf = std::numeric_limits<double>::infinity();
  bool fused_residual = k == OpKind::FusedResidualLN || k == OpKind::FusedResidualRmsNorm;
  bool has_bias = fused_residual && n.op.attrs<ir::FusedResidualNormAttrs>().has_bias;
  bool norm = fused_residual || k == OpKind::LayerNorm || k == OpKind::RmsNorm;
  bool rms = k == OpKind::RmsNorm || k == OpKind::FusedResidualRmsNorm;
  // The fused residual norms compute each element's sum once, in f64, into a row of scratch on
  // the stack that the later passes read (recomputing it, three f64 conversions and two f64 adds,
  // in each pass cost twice the time of the unfused add and norm); rows too long for the stack
  // recompute it. Generic kernels keep room for the longest such row.
  llvm::Value* scratch = nullptr;
  if (plan.scratch) {
    auto* a = b.CreateAlloca(
        b.getDoubleTy(), b.getInt64(uint64_t(plan.generic ? kMaxScratchRow : plan.len)), "sum_row");
    a->setAlignment(llvm::Align(64));
    scratch = a;
  }
  llvm::Value* count = b.CreateSIToFP(len, e.dty); // of the mean and the norms
  // The f32 softmax and layer and rms norms compute their prologue in vectors, and the norms
  // compute in f32 vectors (F32Row) but for rows beyond f32's range.
  bool f32_vectors = t == DType::F32 && host_f32_lanes() > 1;
  vector_prologue = vector_prologue && prologue && f32_vectors &&
                    (k == OpKind::Softmax || (norm && !fused_residual));
  bool f32_norm = norm && !fused_residual && f32_vectors && (!prologue || vector_prologue);
  // An f32 norm widens gamma and beta once per call, not in every row, into rows on the stack:
  // two conversions per element fewer in its last pass (layer norm over f32[512, 768]: 7% less
  // time). Keeping the widened x as well (as scratch) made it slower: the rows no longer fit L1.
  llvm::Value *gamma_wide = nullptr, *beta_wide = nullptr;
  if (plan.wide_params && !f32_norm) {
    llvm::Value* room = b.getInt64(uint64_t(plan.generic ? kMaxScratchRow : plan.len));
    auto widened = [&](std::size_t j, const char* name) {
      auto* a = b.CreateAlloca(b.getDoubleTy(), room, name);
      a->setAlignment(llvm::Align(64));
      e.each([&](llvm::Value* i) {
        b.CreateStore(e.widen(e.load(arg(j), i)), b.CreateInBoundsGEP(e.dty, a, i));
      });
      return a;
    };
    gamma_wide = widened(n.inputs.size() - 2, "gamma_row");
    beta_wide = widened(n.inputs.size() - 1, "beta_row");
  }

  // A prologue row's last len % w values, computed one by one, padded to a vector.
  llvm::Value* tail_pad = nullptr;
  if (vector_prologue) {
    auto* a = b.CreateAlloca(b.getFloatTy(), b.getInt64(host_f32_lanes()), "tail_pad");
    a->setAlignment(llvm::Align(64));
    tail_pad = a;
  }
  // A norm's or softmax's prologue values, computed in its first pass, for the later ones
  // (rows up to kMaxScratchRow; a norm keeps longer ones in the output row, softmax computes
  // them again).
  llvm::Value* stage = nullptr;
  if (vector_prologue) {
    auto* a = b.CreateAlloca(b.getFloatTy(), b.getInt64(uint64_t(kMaxScratchRow)), "stage_row");
    a->setAlignment(llvm::Align(64));
    stage = a;
  }
  VectorLoad xvec;     // x's row in vectors (with vector_prologue, its prologue)
  bool costly = false; // the vector prologue is worth keeping (kCheapPrologue)
  auto row = [&](llvm::Value* r, std::vector<llvm::Value*>) {
    llvm::Value* row0 = b.CreateMul(r, e.L, "", true, true);
    auto at = [&](llvm::Value* i) { return b.CreateAdd(row0, i); };
    if (prologue)
      e.xv = prologue_row(g, *prologue, plan, n.inputs[0], body_fn, r, row0, ety);
    else
      e.xv = [&](llvm::Value* i) { return e.load(body_fn->getArg(0), at(i)); };
    if (vector_prologue) {
      xvec = prologue_vectors(g, *prologue, plan, n.inputs[0], body_fn, r, row0, ety,
                              host_f32_lanes());
      costly = instructions_of(b, [&] { xvec(b.getInt64(0)); }) > kCheapPrologue;
    } else if (!prologue && t == DType::F32) {
      xvec = [&, row0](llvm::Value* i) {
        auto* vf = llvm::FixedVectorType::get(b.getFloatTy(), host_f32_lanes());
        return b.CreateAlignedLoad(
            vf, b.CreateInBoundsGEP(b.getFloatTy(), body_fn->getArg(0), b.CreateAdd(row0, i)),
            llvm::Align(4));
      };
    }
    // The normalized value at row element i, in f64 (with the residual and bias added for the
    // fused residual norms, unrounded as in the interpreter).
    auto xd = [&](llvm::Value* i) {
      llvm::Value* v = e.widen(e.xv(i));
      if (fused_residual) {
        v = b.CreateFAdd(v, e.widen(e.load(arg(1), at(i))));
        if (has_bias) v = b.CreateFAdd(v, e.widen(e.load(arg(2), i)));
      }
      return v;
    };
    // xd(i) stored into the scratch row as it is computed, and read back from it.
    auto kept = [&](llvm::Value* i) {
      llvm::Value* v = xd(i);
      b.CreateStore(v, b.CreateInBoundsGEP(e.dty, scratch, i));
      return v;
    };
    auto again = [&](llvm::Value* i) {
      return scratch ? b.CreateLoad(e.dty, b.CreateInBoundsGEP(e.dty, scratch, i)) : xd(i);
    };
    if (k == OpKind::ReduceMax || k == OpKind::ReduceMin) {
      bool mx = k == OpKind::ReduceMax;
      e.store(
          e.extremum(mx ? llvm::Intrinsic::maximum : llvm::Intrinsic::minimum, mx ? -kInf : kInf),
          e.y, r);
    } else if (k == OpKind::ReduceSum || k == OpKind::ReduceMean) {
      llvm::Value* s = e.sum(xd);
      if (k == OpKind::ReduceMean) s = b.CreateFDiv(s, count);
      e.store(e.narrow(s), e.y, r);
    } else if (k == OpKind::Cumsum) {
      // The running sum in f64 in the interpreter's order (so the same bits), each element
      // rounded as it is stored; exclusive stores the sum before the element.
      bool exclusive = n.op.attrs<ir::CumsumAttrs>().exclusive;
      emit_loop(b.getInt64(0), e.L, {e.f64(0.0)}, [&](llvm::Value* i, RowEmitter::Vals acc) {
        llvm::Value* next = b.CreateFAdd(acc[0], e.widen(e.xv(i)));
        e.store(e.narrow(exclusive ? acc[0] : next), e.y, at(i));
        return RowEmitter::Vals{next};
      });
    } else if (norm) {
      double eps = double(fused_residual ? n.op.attrs<ir::FusedResidualNormAttrs>().eps
                                         : n.op.attrs<ir::NormAttrs>().eps);
      llvm::Value* gamma = arg(n.inputs.size() - 2);
      llvm::Value* beta = arg(n.inputs.size() - 1);
      // As the interpreter, in f64: the mean (layer norm), the mean square of x - mean, then
      // y = (x - mean) / sqrt(ms + eps) * gamma + beta, rounded once.
      auto f64_norm = [&] {
        llvm::Value* mean = e.f64(0.0);
        if (!rms) {
          mean =
              b.CreateFDiv(e.sum([&](llvm::Value* i) { return scratch ? kept(i) : xd(i); }), count);
        }
        llvm::Value* ss = e.sum([&](llvm::Value* i) {
          llvm::Value* d = b.CreateFSub(scratch && rms ? kept(i) : again(i), mean);
          return b.CreateFMul(d, d);
        });
        llvm::Value* denom = b.CreateIntrinsic(llvm::Intrinsic::sqrt, {e.dty},
                                               {b.CreateFAdd(b.CreateFDiv(ss, count), e.f64(eps))});
        // f32 rows multiply by 1 / denom: a vector division per 8 elements was the pass's
        // bottleneck, and the two f64 results differ by an ulp of f64, which the rounding to f32
        // keeps unless it falls within that of a rounding boundary. f64 rows keep the division
        // (their results match the interpreter's to the bit).
        llvm::Value* inv = t == DType::F32 ? b.CreateFDiv(e.f64(1.0), denom) : nullptr;
        e.each([&](llvm::Value* i) {
          llvm::Value* d = b.CreateFSub(again(i), mean);
          llvm::Value* v = inv ? b.CreateFMul(d, inv) : b.CreateFDiv(d, denom);
          auto param = [&](llvm::Value* wide, llvm::Value* narrow) {
            return wide ? b.CreateLoad(e.dty, b.CreateInBoundsGEP(e.dty, wide, i))
                        : e.widen(e.load(narrow, i));
          };
          v = b.CreateFAdd(b.CreateFMul(v, param(gamma_wide, gamma)), param(beta_wide, beta));
          e.store(e.narrow(v), e.y, at(i));
        });
      };
      unsigned w = host_f32_lanes();
      if (!f32_norm) {
        f64_norm();
      } else {
        // f32 rows in f32 vectors, two passes for the moments and one for the output (the
        // row stays in L1; in f64, half the lanes and three widenings of x made this pass
        // arithmetic-bound). Accurate where the mean is large against the spread, as the
        // interpreter's f64 is: x is shifted by its first element c (x - c is exact for the
        // elements within a factor of two of c), m is the mean of x - c, and the second pass
        // sums e = (x - c) - m and e^2 together, so their mean m2 corrects m's rounding (the
        // corrected two-pass algorithm: var = mean(e^2) - m2^2); the output is
        // (e - m2) / sqrt(var + eps) * gamma + beta. The error of y is then a few f32
        // roundings of (x - mean) / sigma plus the sums' (see docs/jit.md). Rows whose f32
        // sums overflow (or hold an inf or NaN), or whose var + eps is too small for f32
        // squares (below 2^-100), take the f64 passes instead. rms norm: the sum of x^2, no
        // shift.
        F32Row v{b, w, e.L};
        llvm::Type* f32 = b.getFloatTy();
        llvm::Value* xrow = b.CreateInBoundsGEP(f32, body_fn->getArg(0), row0);
        // x's vector at i: loaded, or its prologue (a tail's values one by one into tail_pad).
        auto xload = [&](llvm::Value* i, llvm::Value* mask) {
          if (!prologue) return v.load(xrow, i, mask);
          if (!mask) return xvec(i);
          emit_loop(i, e.L, {}, [&](llvm::Value* j, RowEmitter::Vals) {
            b.CreateStore(e.xv(j), b.CreateInBoundsGEP(f32, tail_pad, b.CreateSub(j, i)));
            return RowEmitter::Vals{};
          });
          return v.load(tail_pad, b.getInt64(0), mask);
        };
        llvm::Value* yrow = b.CreateInBoundsGEP(f32, e.y, row0);
        // A prologue's values are computed once, in the first pass, and kept in a row on the
        // stack for the later passes (layer_norm(tanh(x + g)) over f32[512, 768]: half the
        // time). Kept in the output row instead, a cheap prologue (x * 0.5 + g) over rows from
        // memory took 1.4x the time of computing it in every pass.
        llvm::Value* kept_row =
            stage && costly
                ? b.CreateSelect(b.CreateICmpSLE(e.L, b.getInt64(uint64_t(kMaxScratchRow))), stage,
                                 yrow)
                : nullptr;
        auto xfirst = [&](llvm::Value* i, llvm::Value* mask) {
          llvm::Value* x = xload(i, mask);
          if (kept_row) v.store(x, kept_row, i, mask);
          return x;
        };
        auto xagain = [&](llvm::Value* i, llvm::Value* mask) {
          return kept_row ? v.load(kept_row, i, mask) : xload(i, mask);
        };
        llvm::Value *cv = nullptr, *mv = nullptr;
        if (!rms) {
          cv = v.splat(prologue ? e.xv(b.getInt64(0)) : b.CreateLoad(f32, xrow));
          llvm::Value* s = v.sums(1, [&](llvm::Value* i, llvm::Value* mask) {
            return F32Row::Vals{b.CreateFSub(xfirst(i, mask), cv)};
          })[0];
          mv = v.splat(b.CreateFDiv(s, b.CreateSIToFP(e.L, f32)));
        }
        auto centered = [&](llvm::Value* x) {
          return rms ? x : b.CreateFSub(b.CreateFSub(x, cv), mv);
        };
        F32Row::Vals s = v.sums(rms ? 1 : 2, [&](llvm::Value* i, llvm::Value* mask) {
          llvm::Value* d = centered(rms ? xfirst(i, mask) : xagain(i, mask));
          llvm::Value* sq = b.CreateFMul(d, d);
          return rms ? F32Row::Vals{sq} : F32Row::Vals{d, sq};
        });
        llvm::Value* m2 = rms ? e.f64(0.0) : b.CreateFDiv(b.CreateFPExt(s[0], e.dty), count);
        llvm::Value* var =
            b.CreateFSub(b.CreateFDiv(b.CreateFPExt(s.back(), e.dty), count), b.CreateFMul(m2, m2));
        // Rounding can leave var just below 0; a NaN stays (maxnum would drop it).
        var = b.CreateSelect(b.CreateFCmpOLT(var, e.f64(0.0)), e.f64(0.0), var);
        llvm::Value* denom2 = b.CreateFAdd(var, e.f64(eps));
        llvm::Value* ok = b.CreateAnd(b.CreateFCmpOGE(denom2, e.f64(0x1p-100)),
                                      b.CreateFCmpOLT(denom2, e.f64(kInf)));
        llvm::Function* fn = b.GetInsertBlock()->getParent();
        auto* fast = llvm::BasicBlock::Create(ctx, "norm_f32", fn);
        auto* slow = llvm::BasicBlock::Create(ctx, "norm_f64", fn);
        auto* join = llvm::BasicBlock::Create(ctx, "norm_done", fn);
        b.CreateCondBr(ok, fast, slow, llvm::MDBuilder(ctx).createBranchWeights(1000, 1));
        b.SetInsertPoint(fast);
        llvm::Value* inv = v.splat(b.CreateFPTrunc(
            b.CreateFDiv(e.f64(1.0), b.CreateIntrinsic(llvm::Intrinsic::sqrt, {e.dty}, {denom2})),
            f32));
        llvm::Value* m2v = v.splat(b.CreateFPTrunc(m2, f32));
        v.each([&](llvm::Value* i, llvm::Value* mask) {
          llvm::Value* d = centered(xagain(i, mask));
          if (!rms) d = b.CreateFSub(d, m2v);
          llvm::Value* y = b.CreateIntrinsic(
              llvm::Intrinsic::fmuladd, {v.vf},
              {b.CreateFMul(d, inv), v.load(gamma, i, mask), v.load(beta, i, mask)});
          v.store(y, yrow, i, mask);
        });
        b.CreateBr(join);
        b.SetInsertPoint(slow);
        f64_norm();
        b.CreateBr(join);
        b.SetInsertPoint(join);
      }
    } else {
      // Softmax: the max, then e = exp(x - max) stored and summed, then y = e * (1 / sum).
      // The row's leading multiple of the host's lanes in explicit vectors (f32), the rest one
      // element at a time. A prologue is computed in both passes: keeping its values in the
      // output row from the max's pass on made softmax(x * 0.125 + r) over f32[4096, 1024]
      // 1.5x slower.
      llvm::Value* m = llvm::ConstantFP::getInfinity(ety, /*Negative=*/true);
      llvm::Value* s = e.f64(0.0);
      llvm::Value* from = b.getInt64(0);
      unsigned w = host_f32_lanes();
      bool vectors = t == DType::F32 && (!prologue || vector_prologue) && w > 1;
      // With a prologue in vectors and a row that fits, the max's pass keeps the prologue's
      // values on the stack for the exp's (a branch on the row length when it is read at run
      // time).
      auto* vf = llvm::FixedVectorType::get(b.getFloatTy(), w);
      auto kept_at = [&](llvm::Value* i) { return b.CreateInBoundsGEP(ety, stage, i); };
      auto softmax_passes = [&](bool keep) {
        llvm::Value* mx = m;
        llvm::Value* sum = s;
        if (vectors) {
          mx = softmax_max_vectors(
              b, w,
              [&](llvm::Value* i) {
                llvm::Value* x = xvec(i);
                if (keep) b.CreateAlignedStore(x, kept_at(i), llvm::Align(4));
                return x;
              },
              from);
        }
        mx = emit_loop(from, e.L, {mx}, [&](llvm::Value* i, RowEmitter::Vals acc) {
          llvm::Value* x = e.xv(i);
          if (keep) b.CreateStore(x, kept_at(i));
          return RowEmitter::Vals{b.CreateIntrinsic(llvm::Intrinsic::maximum, {ety}, {acc[0], x})};
        })[0];
        VectorLoad again = [&](llvm::Value* i) {
          return b.CreateAlignedLoad(vf, kept_at(i), llvm::Align(4));
        };
        if (vectors) sum = softmax_exp_vectors(b, w, keep ? again : xvec, e.y, row0, from, mx);
        sum = emit_loop(from, e.L, {sum}, [&](llvm::Value* i, RowEmitter::Vals acc) {
          JV d = b.CreateFSub(keep ? b.CreateLoad(ety, kept_at(i)) : e.xv(i), mx);
          JV ex = t == DType::F32 ? exp_f32_nonpositive(d) : exp(d);
          e.store(ex.v, e.y, at(i));
          llvm::Value* w = e.widen(ex.v);
          return RowEmitter::Vals{t == DType::F32 ? reassoc_add(acc[0], w)
                                                  : b.CreateFAdd(acc[0], w)};
        })[0];
        return sum;
      };
      if (vectors) from = b.CreateAnd(e.L, b.getInt64(~uint64_t(w - 1)));
      if (stage && costly && vectors)
        s = emit_if_else(
            b, b.CreateICmpSLE(e.L, b.getInt64(uint64_t(kMaxScratchRow))),
            [&] { return softmax_passes(true); }, [&] { return softmax_passes(false); });
      else
        s = softmax_passes(false);
      llvm::Value* inv = e.narrow(b.CreateFDiv(e.f64(1.0), s));
      e.each([&](llvm::Value* i) { e.store(b.CreateFMul(e.load(e.y, at(i)), inv), e.y, at(i)); });
    }
    return std::vector<llvm::Value*>{};
  };
  emit_loop(body_fn->getArg(unsigned(n_bufs + 1)), body_fn->getArg(unsigned(n_bufs + 2)), {}, row);
  b.CreateRetVoid();
  combine_quotients(*body_fn);
  if (vector_prologue && t_emit.scalarized) {
    scalarized = true;
    t_emit = EmitContext{};
    mb.module.reset(); // before its context
    return NativeKernel{};
  }
  return load_kernel(std::move(mb), name);
}

/// Everything emit_row reads, as text (see find_lowered): the op with its attributes, the
/// dtypes, the row's length unless it is read at run time (the row count is the call's range),
/// whether the row's sums are kept, and the prologue (a generic one by its operands' classes).
std::string emission_key(const ir::Graph& g, const ir::Node& n, const ir::FusedKernel* prologue,
                         const RowPlan& plan) {
  std::string key = "row " + ir::op_to_text(n.op) + std::string(ir::dtype_name(n.shape.dtype())) +
                    (plan.generic ? " len=run" : " len=" + std::to_string(plan.len)) +
                    (plan.scratch ? " scratch" : "") + (plan.wide_params ? " wide_params" : "") +
                    " operands=";
  for (ir::NodeId in : n.inputs) key += std::string(ir::dtype_name(g.shape(in).dtype())) + ",";
  if (prologue) {
    auto x = std::find(prologue->nodes.begin(), prologue->nodes.end(), n.inputs[0]);
    key += " prologue x=n" + std::to_string(x - prologue->nodes.begin()) + " ";
    auto dtype = [](const ir::Shape& s) { return std::string(ir::dtype_name(s.dtype())); };
    if (plan.generic)
      key += ew::kernel_key(g, *prologue, dtype(prologue->shape) + "[rows]", [&](std::size_t j) {
        return dtype(prologue->read_shapes[j]) + "[" + along_name(plan.along[j]) + "]";
      });
    else
      key += ew::kernel_key(g, *prologue, /*sized=*/false);
  }
  return key;
}

/// Whether a row kernel with the size-generic emission key `key` was lowered before for a
/// length other than `len` (the first length is recorded).
bool another_length(const std::string& key, int64_t len) {
  static std::mutex mutex;
  static std::unordered_map<std::string, int64_t> first;
  std::lock_guard<std::mutex> lock(mutex);
  auto [at, fresh] = first.emplace(key, len);
  return !fresh && at->second != len;
}

} // namespace

NativeKernel lower_row(const ir::Graph& g, const ir::Node& n, const std::string& name,
                       const ir::FusedKernel* prologue) {
  RowPlan plan = plan_row(g, n, prologue);
  // The first length of a region gets code compiled for it: loops of a known length need no
  // scalar remainder, whose constants otherwise take registers from the vector loops (softmax
  // rows of f32[4096, 1024] ran 3% slower generic). A second length, and every later one, gets
  // the generic kernel: at most two kernels per region, however many sizes come.
  if (plan.generic) {
    std::string key = emission_key(g, n, prologue, plan);
    if (!another_length(key, plan.len) && !find_lowered(key)) {
      plan.generic = false;
      plan.along.clear();
    }
  }
  return ew::lower_once(
      emission_key(g, n, prologue, plan),
      [&] {
        bool scalarized = false;
        NativeKernel k = emit_row(g, n, name, prologue, plan, true, scalarized);
        return scalarized ? emit_row(g, n, name, prologue, plan, false, scalarized) : k;
      },
      [] {});
}

} // namespace rlx::jit
