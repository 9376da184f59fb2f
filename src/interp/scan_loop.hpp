// src/interp/scan_loop.hpp -- the loops over time of scan and its backward companions, on raw
// pointers: each step's body reads the carry, the bcasts and a row of each xs where they are
// (the trajectory, the operands) and writes its outputs where they go (a trajectory row, one of
// a pair of carries), with no copy and no allocation of the loop's own. The caller's BodyRunner
// says how a body runs: the interpreter's kernels wrap run_leaves (buffered), the JIT passes its
// compiled bodies' raw-pointer entries (jit/steps.cpp).
#pragma once

#include "rlx/interp.hpp"

#include <cstddef>
#include <functional>
#include <span>
#include <vector>

namespace rlx::interp::detail {

/// A body run on raw pointers: leaves[i] holds the elements of its i-th Input (id order), its
/// j-th output is written to outs[j] (which never alias a leaf).
using RawBody = std::function<void(const std::byte* const* leaves, std::byte* const* outs)>;

/// The RawBody of a body graph (one of the node's SubGraph attributes), made once per loop.
using BodyRunner = std::function<RawBody(const ir::Graph& body)>;

/// Runs a body graph on Buffers (its leaves in id order) and returns its outputs.
using BufferRunner =
    std::function<std::vector<Buffer>(const ir::Graph& body, std::span<const Buffer* const>)>;

/// The RawBody of `run` on `body`: copies the leaves into Buffers and the outputs out.
RawBody buffered(const ir::Graph& body, BufferRunner run);

/// What scan node n computes from its operands [init, bcast..., xs...].
Buffer run_scan(const ir::Node& n, std::span<const Buffer* const> in, const BodyRunner& run);

/// What scan_backward (want_xs false: d init) or scan_backward_xs (the cotangent of operand
/// 3 + xs_idx) node n computes from [init, trajectory, upstream, bcast..., xs...]: one sweep from
/// the last step to the first, recomputing each checkpoint segment's carries with forward_body
/// when checkpointed. A bcast's cotangent is accumulated over the steps (in double).
Buffer run_scan_backward(const ir::Node& n, std::span<const Buffer* const> in, bool want_xs,
                         const BodyRunner& run);

} // namespace rlx::interp::detail
