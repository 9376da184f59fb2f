// include/rlx/ir/node.hpp -- NodeId and Node.
#pragma once

#include "rlx/ir/op.hpp"
#include "rlx/ir/shape.hpp"

#include <cstdint>
#include <functional>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace rlx::ir {

/// Index of a node in its graph; never reused. Printed %N.
struct NodeId {
  uint32_t index = 0;
  constexpr NodeId() = default;
  constexpr explicit NodeId(uint32_t i) : index(i) {}
  friend constexpr bool operator==(NodeId, NodeId) = default;
  friend constexpr auto operator<=>(NodeId, NodeId) = default;
};
std::ostream& operator<<(std::ostream& os, NodeId id);

/// Index of a block in its HirModule (rlx/ir/hir.hpp); never reused. Printed hN.
struct HirNodeId {
  uint32_t index = 0;
  constexpr HirNodeId() = default;
  constexpr explicit HirNodeId(uint32_t i) : index(i) {}
  friend constexpr bool operator==(HirNodeId, HirNodeId) = default;
  friend constexpr auto operator<=>(HirNodeId, HirNodeId) = default;
};
std::ostream& operator<<(std::ostream& os, HirNodeId id);

/// Where a node was built from (file:line of the user's call); not part of node equality.
struct SourceLoc {
  std::string file;
  uint32_t line = 0;
  bool known() const { return line != 0; }
};

struct Node {
  NodeId id;
  Op op;
  std::vector<NodeId> inputs;
  Shape shape;
  std::optional<std::string> name; ///< optional label, printed as #"label"
  SourceLoc loc;                   ///< provenance for error messages

  /// Structural equality: id, op, inputs, shape and name (loc is ignored).
  friend bool operator==(const Node& a, const Node& b) {
    return a.id == b.id && a.op == b.op && a.inputs == b.inputs && a.shape == b.shape &&
           a.name == b.name;
  }
};

} // namespace rlx::ir

template <> struct std::hash<rlx::ir::NodeId> {
  std::size_t operator()(rlx::ir::NodeId id) const noexcept { return id.index; }
};
