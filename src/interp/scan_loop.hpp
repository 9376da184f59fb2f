// src/interp/scan_loop.hpp -- the loops over time of scan and its backward companions, with the
// body run by the caller's BodyRunner: the interpreter's kernels pass run_leaves, the JIT its
// compiled bodies (jit/steps.cpp).
#pragma once

#include "rlx/interp.hpp"

#include <functional>
#include <span>
#include <vector>

namespace rlx::interp::detail {

/// Runs a body graph (one of the node's SubGraph attributes) on its leaves (its Inputs in id
/// order) and returns its outputs.
using BodyRunner =
    std::function<std::vector<Buffer>(const ir::Graph& body, std::span<const Buffer* const>)>;

/// What scan node n computes from its operands [init, bcast..., xs...].
Buffer run_scan(const ir::Node& n, std::span<const Buffer* const> in, const BodyRunner& run);

/// What scan_backward (want_xs false: d init) or scan_backward_xs (the stacked d xs[xs_idx])
/// node n computes from [init, trajectory, upstream, xs...]: one sweep from the last step to the
/// first, recomputing each checkpoint segment's carries with forward_body when checkpointed.
Buffer run_scan_backward(const ir::Node& n, std::span<const Buffer* const> in, bool want_xs,
                         const BodyRunner& run);

} // namespace rlx::interp::detail
