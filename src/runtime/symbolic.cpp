// src/runtime/symbolic.cpp -- SymbolicExecutable: a graph with dynamic dims verified and
// optimized once, then bound, planned and prepared per binding.
#include "rlx/runtime.hpp"

#include "runtime/backend.hpp"

#include "rlx/ir/text.hpp"

#include <mutex>
#include <optional>

namespace rlx {

namespace {

/// What specialize knows of the compile pipeline on this graph.
enum class Reuse {
  Undecided, ///< at most one binding compiled (the first, kept to compare)
  Yes,       ///< the optimized symbolic graph serves every binding
  No,        ///< the pipeline's result depends on sizes: compile each binding
};

} // namespace

struct SymbolicExecutable::State {
  ir::Graph graph;
  Backend backend;
  mutable std::mutex mu;
  Reuse reuse = Reuse::Undecided;
  std::optional<ir::Graph> optimized; // symbolic; set when reuse is Yes
  // The first binding and its executable, until the second decides.
  std::optional<ir::DimBinding> first_binding;
  std::shared_ptr<const Executable> first;
};

SymbolicExecutable::SymbolicExecutable(const ir::Graph& graph, Backend backend)
    : state_(std::make_unique<State>()) {
  runtime::check_available(backend, "compile_symbolic");
  state_->graph = graph;
  state_->backend = backend;
}

SymbolicExecutable::~SymbolicExecutable() = default;

const ir::Graph& SymbolicExecutable::graph() const { return state_->graph; }
Backend SymbolicExecutable::backend() const { return state_->backend; }

bool SymbolicExecutable::reuses_pipeline() const {
  std::lock_guard lock(state_->mu);
  return state_->reuse == Reuse::Yes;
}

std::shared_ptr<const Executable>
SymbolicExecutable::specialize(const ir::DimBinding& binding) const {
  State& st = *state_;
  std::lock_guard lock(st.mu);
  if (st.reuse == Reuse::Undecided && st.first) {
    // The second binding: optimize the symbolic graph once and compare it, bound to the first
    // binding, with what the pipeline made of the first bound graph. Passes that need static
    // sizes leave a symbolic graph alone, so equal texts mean no decision used a size.
    st.reuse = Reuse::No;
    try {
      ir::Graph opt = runtime::optimize(st.graph, st.backend);
      if (ir::to_text(opt.bind(*st.first_binding)) == ir::to_text(st.first->graph())) {
        st.optimized = std::move(opt);
        st.reuse = Reuse::Yes;
      }
    } catch (const Error&) {
      // A pass or bind that cannot take the symbolic graph: compile each binding.
    }
    st.first.reset();
    st.first_binding.reset();
  }
  if (st.reuse == Reuse::Yes) {
    std::shared_ptr<const Executable> exe =
        runtime::build_optimized(st.optimized->bind(binding), st.backend);
    runtime::count_respecialized();
    return exe;
  }
  std::shared_ptr<const Executable> exe = compile(st.graph.bind(binding), st.backend);
  if (st.reuse == Reuse::Undecided) {
    st.first_binding = binding;
    st.first = exe;
  }
  return exe;
}

std::shared_ptr<const SymbolicExecutable> compile_symbolic(const ir::Graph& graph,
                                                           Backend backend) {
  return std::make_shared<const SymbolicExecutable>(graph, backend);
}

} // namespace rlx
