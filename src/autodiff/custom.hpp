// src/autodiff/custom.hpp -- the VJP, JVP and batching rules of custom ops
// (src/autodiff/custom.cpp): the registered hooks, traced and inlined, or an rlx::Error naming the
// op and the user's line.
#pragma once

#include "rules.hpp"

#include <optional>
#include <span>
#include <vector>

namespace rlx::autodiff {

std::vector<Grad> vjp_custom_op(Builder& b, const Node& n, NodeId dy, std::span<const char> want);
Grad jvp_custom_op(Builder& b, const Node& n, std::span<const Grad> t);
/// The custom op n on `ins` (ids in b's graph; batched[i]: ins[i] has a leading batch axis of
/// size `batch`) through its vmap hook, or nullopt when it has none (vmap then loops).
std::optional<NodeId> vmap_custom_op(Builder& b, const Node& n, std::span<const NodeId> ins,
                                     const std::vector<bool>& batched, int64_t batch);

} // namespace rlx::autodiff
