// jit/gemm_step.cpp -- matmul / fused_matmul_bias_act of f32 or f64 as calls of the generated
// GEMM, optionally with a residual added in the store (add(product, r), the product read by
// nothing else). A small product gets a kernel specialized for its shape when it is lowered.
// NumPy's matmul rules: batch dims broadcast (each batch's operand offset is computed once, when
// the step is built), a rank-1 lhs is one row, a rank-1 rhs one column. A transpose of an
// operand's last two axes is read through strides (the GEMM's packing), so it needs no step.
// The activation of a fused node is relu in the micro-kernel, or an element-wise kernel of the
// LLVM lowering run over each block of rows right after the block's last depth step.
// A constant B (a weight the executable holds) is packed once per ISA, on the first run, and
// kept with the step (PackedB), so calls do not pack it again.
#include "gemm_step.hpp"

#include "steps.hpp"

#include "rlx/error.hpp"
#include "rlx/memory.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <mutex>
#include <new>
#include <optional>

namespace rlx::jit {

namespace {

bool is_contraction(const ir::Node& n) {
  ir::OpKind k = n.op.kind();
  return k == ir::OpKind::MatMul || k == ir::OpKind::FusedMatMulBiasAct;
}

std::optional<ir::Activation> activation_of(const ir::Node& n) {
  if (n.op.kind() != ir::OpKind::FusedMatMulBiasAct) return std::nullopt;
  return n.op.attrs<ir::FusedMatMulAttrs>().activation;
}

bool is_relu(ir::Activation a) { return ir::to_op_kind(a) == ir::OpKind::Relu; }

bool gemm_dtype(ir::DType d) { return d == ir::DType::F32 || d == ir::DType::F64; }

/// The activation alone over [n] of the type, as a graph for the element-wise lowering.
ir::Graph activation_graph(ir::Activation act, int64_t n, ir::DType dtype) {
  ir::Graph g("gemm_epilogue");
  ir::Shape s({n}, dtype);
  ir::NodeId x = g.input("x", s);
  g.set_outputs({g.activation(act, x, s)});
  return g;
}

bool is_view_op(ir::OpKind k) {
  return k == ir::OpKind::Transpose || k == ir::OpKind::Reshape || k == ir::OpKind::Slice ||
         k == ir::OpKind::Narrow;
}

/// The strides of `sizes` (no size 0) as a reshape of a view with sizes `from` and strides
/// `by`, when the view's elements in the new shape are still one stride per axis: each group
/// of axes whose sizes multiply to the same number on both sides must be evenly spaced in the
/// view (numpy's no-copy reshape). Else nullopt.
std::optional<std::vector<int64_t>> reshape_strides(const std::vector<int64_t>& from,
                                                    const std::vector<int64_t>& by,
                                                    const std::vector<int64_t>& sizes) {
  std::vector<int64_t> os, ost; // the view without its size-1 axes
  for (std::size_t a = 0; a < from.size(); ++a)
    if (from[a] != 1) os.push_back(from[a]), ost.push_back(by[a]);
  std::vector<int64_t> out(sizes.size(), 0);
  std::size_t i = 0, j = 0;
  auto next_j = [&] {
    while (j < sizes.size() && sizes[j] == 1) ++j;
  };
  next_j();
  while (i < os.size() && j < sizes.size()) {
    std::size_t i0 = i, j0 = j;
    int64_t po = os[i++], pn = sizes[j++];
    while (po != pn) {
      if (po < pn) {
        if (i == os.size()) return std::nullopt;
        po *= os[i++];
      } else {
        next_j();
        if (j == sizes.size()) return std::nullopt;
        pn *= sizes[j++];
      }
    }
    for (std::size_t a = i0; a + 1 < i; ++a)
      if (ost[a] != ost[a + 1] * os[a + 1]) return std::nullopt;
    int64_t stride = ost[i - 1];
    for (std::size_t a = j; a-- > j0;) {
      if (sizes[a] == 1) continue;
      out[a] = stride;
      stride *= sizes[a];
    }
    next_j();
  }
  if (i != os.size() || j != sizes.size()) return std::nullopt;
  return out;
}

} // namespace

namespace {

/// The elements of `id`'s own buffer: row-major.
GemmView row_major(ir::NodeId id, const std::vector<int64_t>& sizes) {
  GemmView v{id, 0, std::vector<int64_t>(sizes.size())};
  int64_t stride = 1;
  for (std::size_t a = sizes.size(); a-- > 0;) {
    v.strides[a] = stride;
    stride *= sizes[a];
  }
  return v;
}

bool static_nonempty(const ir::Shape& s) {
  if (!s.is_static()) return false;
  std::vector<int64_t> sizes = s.sizes();
  return std::none_of(sizes.begin(), sizes.end(), [](int64_t d) { return d == 0; });
}

/// View op n over `in`, the view of its operand; nullopt when n's elements are not one stride
/// per axis of it (a reshape across axes that are not evenly spaced).
std::optional<GemmView> apply_view(const ir::Graph& g, const ir::Node& n, GemmView in) {
  std::vector<int64_t> from = g.shape(n.inputs[0]).sizes();
  const int64_t r = int64_t(from.size());
  auto axis_of = [&](int64_t a) { return std::size_t(a < 0 ? a + r : a); };
  switch (n.op.kind()) {
  case ir::OpKind::Transpose: {
    const ir::Ints& perm = n.op.attrs<ir::TransposeAttrs>().perm;
    std::vector<int64_t> st(perm.size());
    for (std::size_t a = 0; a < perm.size(); ++a) st[a] = in.strides[axis_of(perm[a])];
    in.strides = std::move(st);
    return in;
  }
  case ir::OpKind::Reshape: {
    std::optional<std::vector<int64_t>> st = reshape_strides(from, in.strides, n.shape.sizes());
    if (!st) return std::nullopt;
    in.strides = std::move(*st);
    return in;
  }
  case ir::OpKind::Slice: {
    const auto& a = n.op.attrs<ir::SliceAttrs>();
    std::size_t ax = axis_of(a.axis);
    in.offset += a.start * in.strides[ax];
    in.strides[ax] *= a.step;
    return in;
  }
  case ir::OpKind::Narrow: {
    const auto& a = n.op.attrs<ir::NarrowAttrs>();
    in.offset += a.start * in.strides[axis_of(a.axis)];
    return in;
  }
  default:
    return std::nullopt;
  }
}

} // namespace

std::optional<GemmView> gemm_view(const ir::Graph& g, ir::NodeId id) {
  const ir::Node& n = g.node(id);
  if (!static_nonempty(n.shape)) return std::nullopt;
  if (!is_view_op(n.op.kind())) return row_major(id, n.shape.sizes());
  const ir::NodeId operand = n.inputs[0];
  std::optional<GemmView> in = gemm_view(g, operand);
  if (in)
    if (std::optional<GemmView> v = apply_view(g, n, *in)) return v;
  // The views below cannot be read through (the heads of an attention output, transposed
  // back and merged): the operand is a buffer of its own, which a step makes.
  if ((in && in->buffer == operand) || !static_nonempty(g.shape(operand))) return std::nullopt;
  return apply_view(g, n, row_major(operand, g.shape(operand).sizes()));
}

bool gemm_folds_transpose(const ir::Graph& g, ir::NodeId id) {
  return is_view_op(g.node(id).op.kind()) && gemm_view(g, id).has_value();
}

namespace {

/// Which buffer a Gemm step reads in place of `id`: the buffer under a folded view.
ir::NodeId read_buffer(const ir::Graph& g, ir::NodeId id) {
  std::optional<GemmView> v = gemm_view(g, id);
  return v ? v->buffer : id;
}

/// Operand `id` as the step reads it: through its view, else its own row-major buffer.
GemmView operand_view(const ir::Graph& g, ir::NodeId id) {
  if (std::optional<GemmView> v = gemm_view(g, id)) return *v;
  return row_major(id, g.shape(id).sizes());
}

} // namespace

bool lowers_as_gemm(const ir::Graph& g, const ir::Node& n) {
  if (!is_contraction(n) || !gemm_supported() || !n.shape.is_static() ||
      !gemm_dtype(n.shape.dtype()))
    return false;
  for (ir::NodeId in : n.inputs)
    if (!g.shape(in).is_static() || g.shape(in).dtype() != n.shape.dtype() ||
        g.shape(in).rank() == 0)
      return false;
  if (n.shape.rank() == 0) return false; // vector . vector: leave to the runtime kernel
  if (n.op.kind() == ir::OpKind::FusedMatMulBiasAct) {
    std::vector<int64_t> bs = g.shape(n.inputs[2]).sizes();
    int64_t cols = n.shape.sizes().back();
    // One value per output column: f32[N] with leading 1s (a rank-1 rhs has no N axis).
    if (g.shape(n.inputs[1]).rank() < 2 || bs.empty() || bs.back() != cols ||
        bs.size() > n.shape.rank() ||
        std::any_of(bs.begin(), bs.end() - 1, [](int64_t d) { return d != 1; }))
      return false;
    if (std::optional<ir::Activation> act = activation_of(n); act && !is_relu(*act)) {
      ir::Graph eg = activation_graph(*act, cols, n.shape.dtype());
      if (!lowers_natively(eg, eg.node(eg.outputs[0]))) return false;
    }
  }
  return true;
}

namespace {

/// The contraction operand of an add (its first operand that is a matmul or
/// fused_matmul_bias_act) and the other one. Cheap: the executable asks on every run.
std::optional<std::pair<ir::NodeId, ir::NodeId>> split_residual(const ir::Graph& g,
                                                                const ir::Node& n) {
  if (n.op.kind() != ir::OpKind::Add || n.inputs.size() != 2) return {};
  for (std::size_t i = 0; i < 2; ++i)
    if (is_contraction(g.node(n.inputs[i]))) return std::pair(n.inputs[i], n.inputs[1 - i]);
  return {};
}

} // namespace

std::optional<ir::NodeId> gemm_residual_product(const ir::Graph& g, const ir::Node& n,
                                                std::span<const int> uses) {
  auto split = split_residual(g, n);
  if (!split) return std::nullopt;
  auto [x, r] = *split;
  const ir::Node& xn = g.node(x);
  if (x == r || uses[x.index] != 1 || !n.shape.is_static() || g.shape(x) != n.shape ||
      g.shape(r) != n.shape || lowers_natively(g, xn) || !lowers_as_gemm(g, xn))
    return std::nullopt;
  return x;
}

std::vector<ir::NodeId> gemm_reads(const ir::Graph& g, const ir::Node& add) {
  auto split = split_residual(g, add);
  const ir::Node& n = split ? g.node(split->first) : add;
  std::vector<ir::NodeId> reads = {read_buffer(g, n.inputs[0]), read_buffer(g, n.inputs[1])};
  if (n.op.kind() == ir::OpKind::FusedMatMulBiasAct) reads.push_back(n.inputs[2]);
  if (split) reads.push_back(split->second);
  return reads;
}

namespace {
std::atomic<int64_t> constant_b_packs{0};
} // namespace

/// One packed copy of B per ISA, made by the first run on that ISA. std::call_once makes a
/// second thread wait for the first one's packing instead of packing again. The copy is an
/// optimization: when the memory limit (or the allocator) refuses it, B stays unpacked and is
/// packed per call as a fed B is, rather than failing the run. A run whose B is at another
/// address than the one packed (never for a constant; a guard) reads B as it is.
class PackedB {
public:
  template <class T> const T* get(const GemmCallT<T>& call, GemmIsa isa) {
    Slot& slot = slots_[std::size_t(isa)];
    std::call_once(slot.once, [&] {
      int64_t elements = gemm_packed_b_elements(call, isa);
      if (elements == 0) return;
      Storage bytes;
      try {
        bytes = Storage(std::size_t(elements) * sizeof(T), false);
      } catch (const Error&) {
        return;
      } catch (const std::bad_alloc&) {
        return;
      }
      gemm_pack_b(call, isa, reinterpret_cast<T*>(bytes.data()));
      slot.bytes = std::move(bytes);
      slot.source = call.b.p;
      constant_b_packs.fetch_add(1, std::memory_order_relaxed);
    });
    return slot.source == call.b.p && slot.bytes.data()
               ? reinterpret_cast<const T*>(slot.bytes.data())
               : nullptr;
  }

private:
  struct Slot {
    std::once_flag once;
    Storage bytes;
    const void* source = nullptr;
  };
  std::array<Slot, 3> slots_; ///< by GemmIsa
};

int64_t gemm_constant_b_packs() { return constant_b_packs.load(std::memory_order_relaxed); }

namespace {

template <class T>
void fill_call(GemmCallT<T>& c, const GemmCall& shape, bool has_bias, bool has_residual) {
  c.batches = shape.batches;
  c.m = shape.m;
  c.n = shape.n;
  c.k = shape.k;
  c.a = {nullptr, shape.a.rs, shape.a.cs};
  c.b = {nullptr, shape.b.rs, shape.b.cs};
  c.relu = shape.relu;
  c.epilogue = shape.epilogue;
  c.small = gemm_small_kernel(c, has_bias, has_residual);
}

template <class T> void run_call(GemmCallT<T> c, const GemmStep& s, void* const* bufs) {
  c.a.p = static_cast<const T*>(bufs[0]);
  c.b.p = static_cast<const T*>(bufs[1]);
  c.a_off = s.a_off.data();
  c.b_off = s.b_off.data();
  if (s.packed_b && !c.small) {
    c.packed_isa = gemm_isa();
    c.packed_b = s.packed_b->get(c, c.packed_isa);
  }
  std::size_t i = 2;
  c.bias = s.has_bias ? static_cast<const T*>(bufs[i++]) : nullptr;
  c.residual = s.has_residual ? static_cast<const T*>(bufs[i++]) : nullptr;
  c.c = static_cast<T*>(bufs[i]);
  if constexpr (sizeof(T) == 8)
    dgemm(c);
  else
    sgemm(c);
}

} // namespace

GemmStep lower_gemm(const ir::Graph& g, const ir::Node& add, const std::string& name,
                    bool constant_b) {
  GemmStep s;
  auto split = split_residual(g, add);
  const ir::Node& n = split ? g.node(split->first) : add;
  s.has_residual = split.has_value();
  s.f64 = n.shape.dtype() == ir::DType::F64;
  std::vector<int64_t> as = g.shape(n.inputs[0]).sizes(), bs = g.shape(n.inputs[1]).sizes();
  // Each operand as strides over the buffer the step reads (its own, row-major, or the one
  // under a folded view: a transpose, the heads of a fused QKV projection).
  GemmView av = operand_view(g, n.inputs[0]), bv = operand_view(g, n.inputs[1]);
  GemmCall& c = s.call;
  c.k = as.back();
  c.m = as.size() >= 2 ? as[as.size() - 2] : 1;
  c.n = bs.size() >= 2 ? bs.back() : 1;
  // Element (i, q) of A; a rank-1 A is one row, a rank-1 B one column.
  c.a = {nullptr, as.size() >= 2 ? av.strides[as.size() - 2] : c.k, av.strides.back()};
  c.b = bs.size() == 1 ? GemmMatrix{nullptr, bv.strides[0], 1}
                       : GemmMatrix{nullptr, bv.strides[bs.size() - 2], bv.strides.back()};
  // Batch offsets: the output's batch index broadcast back onto each operand's batch dims.
  std::vector<int64_t> os = n.shape.sizes();
  std::size_t out_batch_rank = os.size() - (as.size() >= 2) - (bs.size() >= 2);
  std::vector<int64_t> ob(os.begin(), os.begin() + std::ptrdiff_t(out_batch_rank));
  auto batch_dims = [](const std::vector<int64_t>& s) {
    return std::vector<int64_t>(s.begin(), s.end() - std::min<std::ptrdiff_t>(2, std::ssize(s)));
  };
  std::vector<int64_t> ab = batch_dims(as), bb = batch_dims(bs);
  c.batches = 1;
  for (int64_t d : ob) c.batches *= d;
  auto offsets = [&](const std::vector<int64_t>& opb, const GemmView& v) {
    std::vector<int64_t> off(std::size_t(c.batches));
    for (int64_t t = 0; t < c.batches; ++t) {
      int64_t rest = t, index = v.offset;
      for (std::size_t d = ob.size(); d-- > 0;) {
        int64_t i = rest % ob[d];
        rest /= ob[d];
        std::size_t back = ob.size() - d; // 1 = last batch dim
        if (back <= opb.size() && opb[opb.size() - back] != 1)
          index += i * v.strides[opb.size() - back];
      }
      off[std::size_t(t)] = index;
    }
    return off;
  };
  s.a_off = offsets(ab, av);
  s.b_off = offsets(bb, bv);
  s.has_bias = n.op.kind() == ir::OpKind::FusedMatMulBiasAct;
  if (std::optional<ir::Activation> act = activation_of(n)) {
    if (is_relu(*act)) {
      c.relu = true;
    } else {
      ir::Graph eg = activation_graph(*act, c.n, n.shape.dtype());
      ir::LirModule plan = ir::plan_lir(eg, plan_options());
      if (plan.kernels.size() != 1)
        throw InternalError("gemm: an activation epilogue did not plan as one kernel");
      s.epilogue = lower_elementwise(plan.mir, plan.kernels[0], name);
      c.epilogue = s.epilogue.fn;
    }
  }
  // Batches that share B, with A's rows one after the other ([batches, m, k] row-major, as a
  // linear layer's [B, S, D] input), are one product of batches * m rows: each element is the
  // same dot product, and B is read (or packed) once instead of once per batch. Not when a
  // batch is small enough for its own kernel, which packs nothing anyway.
  auto shares_b = [&] {
    return std::all_of(s.b_off.begin(), s.b_off.end(), [&](int64_t o) { return o == s.b_off[0]; });
  };
  auto rows_follow = [&] {
    for (int64_t t = 0; t < c.batches; ++t)
      if (s.a_off[std::size_t(t)] != s.a_off[0] + t * c.m * c.k) return false;
    return c.a.rs == c.k && c.a.cs == 1;
  };
  auto fill = [&] {
    if (s.f64)
      fill_call(s.dcall, c, s.has_bias, s.has_residual);
    else
      fill_call(s.call, c, s.has_bias, s.has_residual);
  };
  fill();
  bool small = s.f64 ? s.dcall.small != nullptr : s.call.small != nullptr;
  if (c.batches > 1 && !small && shares_b() && rows_follow()) {
    c.m *= c.batches;
    c.batches = 1;
    s.a_off.resize(1);
    s.b_off.resize(1);
    fill();
  }
  if (constant_b && (s.f64 ? s.dcall.small : s.call.small) == nullptr)
    s.packed_b = std::make_shared<PackedB>();
  return s;
}

void GemmStep::run(void* const* bufs) const {
  if (f64)
    run_call(dcall, *this, bufs);
  else
    run_call(call, *this, bufs);
}

namespace {

/// What a call's small kernel reads for its one batch (run_small's arguments).
template <class T> SmallArgs small_args(const GemmStep& s, void* const* bufs) {
  SmallArgs a;
  a.a = static_cast<const T*>(bufs[0]) + (s.a_off.empty() ? 0 : s.a_off[0]);
  a.b = static_cast<const T*>(bufs[1]) + (s.b_off.empty() ? 0 : s.b_off[0]);
  std::size_t i = 2;
  a.bias = s.has_bias ? bufs[i++] : nullptr;
  a.r = s.has_residual ? bufs[i++] : nullptr;
  a.c = bufs[i];
  return a;
}

/// A bound product of one batch that its small kernel computes whole (relu and bias inside, no
/// epilogue kernel): the call is the kernel's, on arguments made once.
class BoundSmall final : public BoundStep {
public:
  BoundSmall(SmallKernel fn, SmallArgs args) : fn_(fn), args_(args) {}
  void run() override { fn_(&args_); }
  bool holds_nothing() const override { return true; }

private:
  SmallKernel fn_;
  SmallArgs args_;
};

class PreparedGemm final : public PreparedStep {
public:
  PreparedGemm(GemmStep gemm, const ir::LirStep& step) : gemm_(std::move(gemm)), step_(step) {
    // One batch that its small kernel computes whole (relu and bias inside, no epilogue
    // kernel): what sgemm would do is that one call, so the step makes it without sgemm's
    // dispatch (threads, ISA, the call's copy).
    const bool f64 = gemm_.f64;
    small_ = f64 ? gemm_.dcall.small : gemm_.call.small;
    int64_t batches = f64 ? gemm_.dcall.batches : gemm_.call.batches;
    int64_t m = f64 ? gemm_.dcall.m : gemm_.call.m, n = f64 ? gemm_.dcall.n : gemm_.call.n;
    bool epilogue = (f64 ? gemm_.dcall.epilogue : gemm_.call.epilogue) != nullptr;
    if (batches != 1 || m <= 0 || n <= 0 || epilogue) small_ = nullptr;
  }
  void run(RunState& s) const override {
    s.gather_reads(step_);
    s.args.push_back(s.result(step_.node));
    run_on(s.args.data());
  }
  /// A small product straight into its kernel on arguments made now; any other through the
  /// GEMM on the bound addresses.
  std::unique_ptr<BoundStep> bind(RunState& s, const ir::LirStep&) const override {
    s.gather_reads(step_);
    s.args.push_back(s.result(step_.node));
    if (small_) return std::make_unique<BoundSmall>(small_, args_of(s.args.data()));
    return std::make_unique<BoundArgs<PreparedGemm>>(*this, s.args);
  }
  /// bufs: the step's reads, then its output.
  void run_on(void* const* bufs) const {
    if (small_) {
      SmallArgs args = args_of(bufs);
      small_(&args);
    } else {
      gemm_.run(bufs);
    }
  }

private:
  SmallArgs args_of(void* const* bufs) const {
    return gemm_.f64 ? small_args<double>(gemm_, bufs) : small_args<float>(gemm_, bufs);
  }

  GemmStep gemm_;
  const ir::LirStep& step_;
  SmallKernel small_ = nullptr; ///< set when one call of it is the whole product
};

class GemmRule final : public JitRule {
public:
  using JitRule::JitRule;
  bool takes(const ir::Graph& g, const ir::Node& n) const override { return lowers_as_gemm(g, n); }
  std::vector<ir::NodeId> reads(const ir::Graph& g, const ir::Node& n) const override {
    return gemm_reads(g, n);
  }
  bool folds(const ir::Graph& g, ir::NodeId id) const override {
    return gemm_folds_transpose(g, id);
  }
  std::optional<ir::NodeId> absorbs(const ir::Graph& g, const ir::Node& n,
                                    std::span<const int> uses) const override {
    return gemm_residual_product(g, n, uses);
  }
  std::unique_ptr<PreparedStep> prepare(PrepareContext& c, std::size_t i) const override {
    const ir::LirStep& step = c.lir.steps[i];
    // B (the step's second read) is a constant of the executable: evaluated once when it is
    // built, at the same address on every run (a weight baked by param_specialize).
    bool constant_b = c.lir.memory.places[step.reads[1].index].home == ir::Home::Constant;
    return std::make_unique<PreparedGemm>(
        lower_gemm(c.lir.mir, c.lir.mir.node(step.node), kernel_name(), constant_b), step);
  }
};

} // namespace

const JitRule& gemm_rule() {
  static const GemmRule rule("gemm");
  return rule;
}

} // namespace rlx::jit
