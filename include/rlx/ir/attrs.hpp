// include/rlx/ir/attrs.hpp -- the attribute structs of every op (generated from attrs.def) and
// AnyAttrs, the variant an Op stores; the small enums they use are in rlx/ir/attr_enums.hpp.
#pragma once

#include "rlx/enum.hpp"
#include "rlx/ir/attr_enums.hpp"
#include "rlx/ir/dtype.hpp"
#include "rlx/ir/op_kind.hpp"
#include "rlx/ir/quant_scheme.hpp"

#include <array>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace rlx::ir {

inline constexpr double kInf = std::numeric_limits<double>::infinity();

/// Raw bytes (constant payloads); printed as hex so text round-trips exactly.
struct Bytes {
  std::vector<uint8_t> data;
  friend bool operator==(const Bytes&, const Bytes&) = default;
};

class Graph; // rlx/ir/graph.hpp

/// A graph-valued attribute (custom_fn's bodies): an immutable graph shared by copies of the op,
/// compared deeply (two custom_fns with different bodies are different ops). The default is the
/// empty graph. Printed as a nested `graph @name { ... }` in the text IR and as a nested graph
/// object in JSON.
class SubGraph {
public:
  SubGraph() = default;
  explicit SubGraph(Graph g);
  /// The graph (an empty one for a default SubGraph).
  const Graph& get() const;
  friend bool operator==(const SubGraph& a, const SubGraph& b);

private:
  std::shared_ptr<const Graph> graph_;
};

#define F(type, name, def) type name = def;
#define ATTRS(Name, FIELDS)                                                                        \
  struct Name {                                                                                    \
    FIELDS                                                                                         \
    friend bool operator==(const Name&, const Name&) = default;                                    \
  };
#include "rlx/ir/attrs.def"
#undef F

/// Every attribute struct, in attrs.def order.
#define ATTRS(Name, FIELDS) Name,
using AnyAttrs = std::variant<
#include "rlx/ir/attrs.def"
    std::monostate>;

} // namespace rlx::ir
