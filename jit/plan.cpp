// jit/plan.cpp -- greedy fusion of element-wise nodes into kernels, in topological order.
#include "plan.hpp"

#include "gemm_step.hpp"
#include "library.hpp"

#include "rlx/ir/lir.hpp"

#include <algorithm>
#include <limits>
#include <optional>

namespace rlx::jit {

namespace {

bool is_reshape(const ir::Node& n) {
  return n.op.kind() == ir::OpKind::Reshape && n.shape.is_static();
}
bool is_expand(const ir::Node& n) {
  return n.op.kind() == ir::OpKind::Expand && n.shape.is_static();
}
/// A transpose that Gemm steps may read through strides (jit/gemm_step.hpp).
bool is_gemm_transpose(const ir::Graph& g, const ir::Node& n) {
  return gemm_folds_transpose(g, n.id);
}

/// Where a kernel reads the value of node `id` from: reshapes are the same bytes in another
/// shape (followed through chains of reshapes), expands are broadcasts the kernel's indexing
/// does itself (right-aligned, as numpy's broadcast_to, so broadcasting composes).
struct Source {
  ir::NodeId buffer;
  ir::Shape shape;
};
Source resolve(const ir::Graph& g, ir::NodeId id) {
  const ir::Node& n = g.node(id);
  if (is_reshape(n)) {
    ir::NodeId b = n.inputs[0];
    while (is_reshape(g.node(b))) b = g.node(b).inputs[0];
    if (!g.shape(b).is_static()) return {id, n.shape};
    return {b, n.shape};
  }
  if (is_expand(n)) {
    Source s = resolve(g, n.inputs[0]);
    if (!s.shape.is_static()) return {id, n.shape};
    return s;
  }
  return {id, n.shape};
}

/// Row steps whose first operand is the single result of a kernel that nothing else reads take
/// that kernel as their prologue; its own step goes.
void fuse_row_prologues(const ir::Graph& g, Plan& plan, const std::vector<std::size_t>& region) {
  constexpr std::size_t kNone = std::numeric_limits<std::size_t>::max();
  std::vector<int> uses(g.len(), 0);
  for (const ir::Node& n : g.nodes())
    for (ir::NodeId in : n.inputs) ++uses[in.index];
  for (ir::NodeId o : g.outputs) ++uses[o.index];
  for (Step& step : plan.steps) {
    if (step.kind != Step::Kind::Row) continue;
    const ir::Node& n = g.node(step.node);
    ir::NodeId x = n.inputs[0];
    std::size_t r = region[x.index];
    if (r == kNone || uses[x.index] != 1) continue;
    EwKernel& k = plan.kernels[r];
    if (k.row_prologue || k.outputs.size() != 1 || k.outputs[0] != x) continue;
    if (!fits_row_prologue(g, n, k)) continue;
    k.row_prologue = true;
    step.prologue = true;
    step.kernel = r;
  }
  std::vector<Step> kept;
  for (const Step& step : plan.steps)
    if (step.kind != Step::Kind::Native || !plan.kernels[step.kernel].row_prologue)
      kept.push_back(step);
  plan.steps = std::move(kept);
}

} // namespace

std::optional<uint64_t> alias_view(const ir::Graph& g, const ir::Node& n) {
  ir::OpKind k = n.op.kind();
  if (k != ir::OpKind::Narrow && k != ir::OpKind::Slice) return std::nullopt;
  std::optional<uint64_t> off = ir::view_offset(g, n);
  if (!off || *off % 64 != 0) return std::nullopt;
  return off;
}

Plan make_plan(const ir::Graph& g) {
  Plan plan;
  constexpr std::size_t kNone = std::numeric_limits<std::size_t>::max();
  // Which values must exist as buffers: graph outputs, operands of Row and Runtime steps, and
  // the buffers kernels read. Reshapes and expands not needed fold into the kernels reading
  // them.
  std::vector<char> needed(g.len(), 0);
  for (ir::NodeId o : g.outputs) needed[o.index] = 1;
  // Values an interpreter kernel reads (it takes interp::Buffers) or the caller receives: a
  // view of them must be a buffer of its own. The others become View steps (`view`).
  std::vector<char> buffer_read(g.len(), 0), view(g.len(), 0);
  for (ir::NodeId o : g.outputs) buffer_read[o.index] = 1;
  // add(product, r): one Gemm step at the add, the product (read by nothing else) has none.
  std::vector<int> uses(g.len(), 0);
  for (const ir::Node& n : g.nodes())
    for (ir::NodeId in : n.inputs) ++uses[in.index];
  for (ir::NodeId o : g.outputs) ++uses[o.index];
  std::vector<char> residual_gemm(g.len(), 0), absorbed(g.len(), 0);
  // Consumers come after their operands: walking backwards, a reshape or expand knows whether
  // it is needed before its operands are marked.
  for (std::size_t i = g.len(); i-- > 0;) {
    const ir::Node& n = g.nodes()[i];
    if ((is_reshape(n) || is_expand(n) || is_gemm_transpose(g, n) || library_view(g, n.id)) &&
        !needed[i])
      continue;
    if (absorbed[i]) continue;
    if (std::optional<ir::NodeId> x = gemm_residual_product(g, n, uses)) {
      residual_gemm[i] = absorbed[x->index] = 1;
      for (ir::NodeId in : gemm_reads(g, n)) needed[in.index] = 1;
      continue;
    }
    if (!lowers_natively(g, n) && lowers_as_gemm(g, n)) {
      for (ir::NodeId in : gemm_reads(g, n)) needed[in.index] = 1;
      continue;
    }
    if (const LibraryKernel* lib =
            lowers_natively(g, n) || lowers_as_row(g, n) || lowers_as_gemm(g, n)
                ? nullptr
                : find_library_kernel(g, n)) {
      for (ir::NodeId in : lib->reads(g, n)) needed[in.index] = 1;
      continue;
    }
    // Every reader of n has been seen (readers come later in graph order).
    if (!buffer_read[i] && alias_view(g, n)) {
      view[i] = 1;
      needed[n.inputs[0].index] = 1;
      continue;
    }
    bool native = lowers_natively(g, n);
    for (ir::NodeId in : n.inputs) needed[(native ? resolve(g, in).buffer : in).index] = 1;
    if (!native && !lowers_as_row(g, n))
      for (ir::NodeId in : n.inputs) buffer_read[in.index] = 1;
  }
  // A transpose only Gemm steps read folds into their packing, a narrow only library kernels
  // read into their row strides; both read their operand.
  auto folded = [&](const ir::Node& n) {
    return (is_reshape(n) || is_expand(n) || is_gemm_transpose(g, n) || library_view(g, n.id)) &&
           !needed[n.id.index];
  };
  // region[i]: kernel index of node i, or kNone; step_of[i]: step that produces node i (for a
  // folded node, the step producing the buffer it reads).
  std::vector<std::size_t> region(g.len(), kNone), step_of(g.len(), 0);
  std::vector<std::size_t> kernel_step; // the step index of each kernel
  for (const ir::Node& n : g.nodes()) {
    ir::OpKind k = n.op.kind();
    // Fed, or computed when the executable is built: available before every step.
    if (k == ir::OpKind::Input || k == ir::OpKind::Param || k == ir::OpKind::Constant) continue;
    if (folded(n)) {
      ir::NodeId from =
          is_gemm_transpose(g, n) || library_view(g, n.id) ? n.inputs[0] : resolve(g, n.id).buffer;
      step_of[n.id.index] = step_of[from.index];
      continue;
    }
    if (view[n.id.index]) {
      step_of[n.id.index] = plan.steps.size() + 1;
      plan.steps.push_back({Step::Kind::View, 0, n.id});
      continue;
    }
    if (absorbed[n.id.index]) continue;
    if (residual_gemm[n.id.index] || !lowers_natively(g, n)) {
      step_of[n.id.index] = plan.steps.size() + 1;
      const LibraryKernel* lib = nullptr;
      Step::Kind kind = residual_gemm[n.id.index]                      ? Step::Kind::Gemm
                        : lowers_as_row(g, n)                          ? Step::Kind::Row
                        : lowers_as_gemm(g, n)                         ? Step::Kind::Gemm
                        : (lib = find_library_kernel(g, n)) != nullptr ? Step::Kind::Library
                                                                       : Step::Kind::Runtime;
      plan.steps.push_back({kind, 0, n.id, false, lib});
      continue;
    }
    // Join a region when every operand not in it is ready before that region runs (so no
    // cycle through other steps can form): first an operand's region, else the latest region
    // of the same shape (independent chains over the same elements share one pass, e.g.
    // tanh(x) * sigmoid(x) + x * x is one loop).
    auto can_join = [&](std::size_t r) {
      if (plan.kernels[r].shape.dims() != n.shape.dims() ||
          plan.kernels[r].nodes.size() >= kMaxKernelNodes)
        return false;
      for (ir::NodeId other : n.inputs) {
        if (region[other.index] == r) continue;
        if (step_of[other.index] > kernel_step[r]) return false;
        // A folded operand reading a buffer this very kernel writes: not within one loop.
        if (region[resolve(g, other).buffer.index] == r) return false;
      }
      return true;
    };
    std::size_t join = kNone;
    for (ir::NodeId in : n.inputs)
      if (region[in.index] != kNone && can_join(region[in.index])) {
        join = region[in.index];
        break;
      }
    for (std::size_t r = plan.kernels.size(); join == kNone && r-- > 0;)
      if (can_join(r)) join = r;
    if (join == kNone) {
      join = plan.kernels.size();
      plan.kernels.push_back(EwKernel{{}, {}, {}, n.shape});
      kernel_step.push_back(plan.steps.size() + 1);
      plan.steps.push_back({Step::Kind::Native, join, n.id});
    }
    plan.kernels[join].nodes.push_back(n.id);
    region[n.id.index] = join;
    step_of[n.id.index] = kernel_step[join];
  }
  // Operands from outside and values needed outside each region.
  std::vector<char> is_output(g.len(), 0);
  for (ir::NodeId o : g.outputs) is_output[o.index] = 1;
  for (const ir::Node& n : g.nodes())
    for (ir::NodeId in : n.inputs)
      if (region[in.index] != kNone && region[in.index] != region[n.id.index])
        is_output[in.index] = 1;
  for (std::size_t r = 0; r < plan.kernels.size(); ++r) {
    EwKernel& kern = plan.kernels[r];
    for (ir::NodeId id : kern.nodes) {
      for (ir::NodeId in : g.node(id).inputs)
        if (region[in.index] != r &&
            std::find(kern.inputs.begin(), kern.inputs.end(), in) == kern.inputs.end()) {
          Source src = resolve(g, in);
          kern.inputs.push_back(in);
          kern.buffers.push_back(src.buffer);
          kern.read_shapes.push_back(src.shape);
        }
      if (is_output[id.index]) kern.outputs.push_back(id);
    }
  }
  fuse_row_prologues(g, plan, region);
  return plan;
}

} // namespace rlx::jit
