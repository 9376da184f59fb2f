// jit/executable.cpp -- the JIT's Executable: native kernels and runtime steps in plan order.
#include "lower.hpp"
#include "plan.hpp"
#include "runtime/jit_backend.hpp"
#include "runtime/thread_pool.hpp"

#include "rlx/ir/verify.hpp"

#include <atomic>

namespace rlx::jit {

namespace {

/// Element-wise kernels split across threads in chunks of at least this many elements (smaller
/// ones are not worth waking a thread for).
constexpr int64_t kParallelGrain = 1 << 15;

/// Kernel symbols are unique in the process (all modules share one JITDylib).
std::string kernel_name() {
  static std::atomic<uint64_t> next{0};
  return "rlx_k" + std::to_string(next.fetch_add(1));
}

class JitExecutable final : public Executable {
public:
  explicit JitExecutable(const ir::Graph& g) : graph_(g), plan_(make_plan(g)) {
    constants_.resize(g.len());
    for (const ir::Node& n : g.nodes())
      if (n.op.kind() == ir::OpKind::Constant) constants_[n.id.index] = interp::eval_node(n, {});
    for (std::size_t k = 0; k < plan_.kernels.size(); ++k)
      kernels_.push_back(lower_elementwise(g, plan_.kernels[k], kernel_name()));
  }

  std::vector<interp::Buffer> run(std::span<const interp::Buffer* const> leaves) const override {
    const ir::Graph& g = graph_;
    std::vector<interp::Buffer> owned(g.len());
    std::vector<const interp::Buffer*> values = interp::feed_leaves(g, leaves);
    for (const ir::Node& n : g.nodes())
      if (n.op.kind() == ir::OpKind::Constant) values[n.id.index] = &constants_[n.id.index];
    std::vector<void*> args;
    for (const Step& step : plan_.steps) {
      if (step.kind == Step::Kind::Runtime) {
        const ir::Node& n = g.node(step.node);
        std::vector<const interp::Buffer*> ops;
        for (ir::NodeId in : n.inputs) ops.push_back(values[in.index]);
        owned[n.id.index] = interp::eval_node_of_graph(n, ops);
        values[n.id.index] = &owned[n.id.index];
        continue;
      }
      const EwKernel& kern = plan_.kernels[step.kernel];
      args.clear();
      for (ir::NodeId in : kern.inputs)
        args.push_back(const_cast<std::byte*>(values[in.index]->bytes().data()));
      for (ir::NodeId out : kern.outputs) {
        owned[out.index] = interp::Buffer(g.shape(out));
        values[out.index] = &owned[out.index];
        args.push_back(owned[out.index].bytes().data());
      }
      int64_t n = 1;
      for (int64_t s : kern.shape.sizes()) n *= s;
      KernelFn fn = kernels_[step.kernel].fn;
      void* const* bufs = args.data();
      runtime::parallel_for(n, kParallelGrain, [&](int64_t b, int64_t e) { fn(bufs, b, e); });
    }
    std::vector<interp::Buffer> outs;
    for (ir::NodeId id : g.outputs) outs.push_back(*values[id.index]);
    return outs;
  }

  const ir::Graph& graph() const override { return graph_; }
  Backend backend() const override { return Backend::Jit; }

private:
  ir::Graph graph_;
  Plan plan_;
  std::vector<interp::Buffer> constants_;
  std::vector<NativeKernel> kernels_;
};

} // namespace

std::shared_ptr<const Executable> compile_graph(const ir::Graph& g) {
  ir::verify(g);
  return std::make_shared<JitExecutable>(g);
}

} // namespace rlx::jit
