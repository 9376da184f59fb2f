// src/dist/shard.hpp -- the sharding annotation (rlx::dist::shard): a registered custom op
// (rlx/custom_op.hpp) that the shard_propagate pass (src/passes/shard_propagate.cpp) finds by
// name. As recorded it is the identity (the program keeps its serial shapes); the pass replaces
// it by its block form, this rank's block along `axis`, and rewrites the shapes after it. It is
// not pure, so constant folding and CSE leave it in place for the pass.
#pragma once

#include "rlx/ir/graph.hpp"

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace rlx::dist::detail {

inline constexpr std::string_view kShardOp = "rlx.dist.shard";

/// The op's attribute bytes.
struct ShardSpec {
  int64_t axis = 0;  ///< >= 0
  int64_t ranks = 1; ///< the number of blocks
  int64_t block = 0; ///< 0: the annotation (the whole value); 1: this rank's block
};

/// n's spec when n is a shard op.
inline std::optional<ShardSpec> shard_spec(const ir::Node& n) {
  if (n.op.kind() != ir::OpKind::Custom) return std::nullopt;
  const auto& a = n.op.attrs<ir::CustomAttrs>();
  if (a.name != kShardOp || a.data.data.size() != sizeof(ShardSpec)) return std::nullopt;
  ShardSpec s;
  std::memcpy(&s, a.data.data.data(), sizeof s);
  return s;
}

inline std::vector<uint8_t> shard_bytes(const ShardSpec& s) {
  std::vector<uint8_t> out(sizeof s);
  std::memcpy(out.data(), &s, sizeof s);
  return out;
}

/// The shard op of spec s.
inline ir::Op shard_op(const ShardSpec& s) {
  return ir::Op(ir::OpKind::Custom,
                ir::CustomAttrs{std::string(kShardOp), ir::Bytes{shard_bytes(s)}, std::nullopt,
                                std::nullopt});
}

/// Registers the annotation's op (src/dist/tensor.cpp). librlx does it when it is loaded, so a
/// graph holding the op parses from text and runs in any program.
void register_shard_op();

} // namespace rlx::dist::detail
