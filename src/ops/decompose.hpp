// src/ops/decompose.hpp -- decomposition rules of the composite ops (used by passes/decompose).
#pragma once

#include "emitter.hpp"
#include "rlx/interp.hpp"

#include <optional>
#include <span>

namespace rlx::ops {

/// Append the primitive form of node n (operands already mapped to `in`) and return the node
/// that replaces it; nullopt when n's kind is not marked kComposite in ops.def.
std::optional<ir::NodeId> decompose_node(Emitter& e, const ir::Node& n,
                                         std::span<const ir::NodeId> in);

/// The state-space scans as one scan each (src/ops/ssm_decompose.cpp).
ir::NodeId decompose_selective_scan(Emitter& e, const ir::Node& n, std::span<const ir::NodeId> in);
ir::NodeId decompose_mamba2(Emitter& e, const ir::Node& n, std::span<const ir::NodeId> in);
ir::NodeId decompose_gated_delta_net(Emitter& e, const ir::Node& n, std::span<const ir::NodeId> in);

} // namespace rlx::ops
