// jit/plan.hpp -- how the JIT splits a graph: fused element-wise kernels and single-node steps.
#pragma once

#include "rlx/ir/graph.hpp"

#include <cstdint>
#include <vector>

namespace rlx::jit {

/// A fused element-wise region: nodes of one static output shape (the iteration space), in
/// topological order. Operands from outside are read with broadcasting; `outputs` are the nodes
/// whose values leave the region (stored to buffers).
struct EwKernel {
  std::vector<ir::NodeId> nodes;
  std::vector<ir::NodeId> inputs;
  std::vector<ir::NodeId> outputs;
  ir::Shape shape;
};

/// One step of an executable, in order: a native kernel, or one node run by the runtime
/// kernels (the interpreter's), so the JIT runs every graph the interpreter runs.
struct Step {
  enum class Kind : uint8_t { Native, Runtime };
  Kind kind;
  std::size_t kernel = 0; ///< index into Plan::kernels (Native)
  ir::NodeId node;        ///< the node (Runtime)
};

struct Plan {
  std::vector<EwKernel> kernels;
  std::vector<Step> steps;
};

/// Regions stop growing at this many nodes: LLVM's optimizer is superlinear in the size of one
/// loop body, and longer chains gain nothing from more fusion.
inline constexpr std::size_t kMaxKernelNodes = 96;

/// Whether the element-wise lowering handles this node (jit/llvm/lower_elementwise.cpp).
bool lowers_natively(const ir::Graph& g, const ir::Node& n);

/// Partition a static-shaped graph: non-lowered nodes become Runtime steps; Input and Param
/// (fed) and Constant (computed once when the executable is built) need no step.
Plan make_plan(const ir::Graph& g);

} // namespace rlx::jit
