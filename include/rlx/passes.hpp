// include/rlx/passes.hpp -- the optimizer's passes, one line each (the table of contents), and
// the compile pipeline that runs them in order.
#pragma once

#include "rlx/interp.hpp"
#include "rlx/ir/graph.hpp"
#include "rlx/ir/module.hpp"

#include <cstddef>
#include <cstdint>
#include <ostream>
#include <span>
#include <string_view>
#include <vector>

namespace rlx::passes {

/// What some passes need to know; one struct for all, so every pass has the same signature.
struct PassOptions {
  /// constant_fold: the largest result (in elements) it stores as a constant.
  int64_t fold_max_elements = int64_t(1) << 16;
  /// param_specialize: values of parameters to bake into the graph, by parameter name.
  interp::Feed params;
};

// Every pass takes the graph by reference, rewrites it in place (ids are renumbered densely when
// nodes go) and returns whether it changed anything. Each states what it assumes, what it
// guarantees and what it leaves to other passes. All of them assume a verified graph and leave a
// verified graph whose outputs compute the same values (as the interpreter computes them; the
// exceptions are named). Unchanged nodes keep their labels and source locations.

/// Rewrite a program with rlx::dist::shard annotations into this rank's part of it, with the
/// collectives that make every output the whole value on every rank (src/passes/
/// shard_propagate.cpp; docs/distributed.md has the rules). Not an optimization but what the
/// annotation means, so compile_pipeline runs it first, always. On one rank an annotation is
/// dropped. Guarantees: the serial program's outputs, with their shapes, within rounding (sums
/// over ranks add in another order). Does nothing without an annotation.
bool shard_propagate(ir::Graph& g, const PassOptions& opts = {});

/// Replace every custom_fn node by its fwd_body, its Inputs bound to the node's operands (and
/// its symbols to their dims), nested custom_fns too; the override AD bodies are dropped (this
/// runs on graphs about to execute, after autodiff used them). Guarantees: bit-identical values
/// (the interpreter's custom_fn kernel runs the same body). Copies only the body nodes its
/// output needs; operands the body ignores are left for dce.
bool inline_custom_fn(ir::Graph& g, const PassOptions& opts = {});

/// Replace every Param named in `opts.params` by a Constant holding that buffer.
/// Assumes: each buffer has its param's exact shape and dtype (else an rlx::Error naming the
/// param and both shapes); names not in the graph are ignored. Guarantees: those params are no
/// longer leaves, so callers stop feeding them; Inputs are never touched. Does not fold.
bool param_specialize(ir::Graph& g, const PassOptions& opts = {});

/// Rewrite every composite op (softmax, norms, attention, rope, fused matmul/SwiGLU, transposed
/// convolutions) into primitive ops. Guarantees: only primitive ops are left; values agree with
/// the composite kernels within rounding (not bit for bit). Does not remove dead code.
bool decompose(ir::Graph& g, const PassOptions& opts = {});

/// Evaluate each pure node whose operands are all constants with the interpreter (the
/// specification) and replace it by a constant. Guarantees: bit-identical values. Does not fold
/// results of more than `opts.fold_max_elements` elements, or data movement that would only
/// enlarge its operands (an expand of a scalar stays an expand), or a node whose kernel throws
/// (the error stays for run time). Leaves the replaced operands for dce.
bool constant_fold(ir::Graph& g, const PassOptions& opts = {});

/// Apply a table of identities (src/passes/algebraic_simplify.cpp): x + 0, 0 + x, x - 0,
/// x * 1, 1 * x, x / 1, x and true, x or false -> x; neg(neg x) -> x for floats; x * 0 -> zeros
/// for integers only (for floats NaN * 0 and inf * 0 are NaN); cast to the same dtype, reshape
/// and expand to the same shape, transpose by the identity -> x. An identity fires only when the
/// result has the surviving operand's shape and dtype, and its constant holds one value in every
/// element. Guarantees: the same values, NaN and infinities included, except that x + 0 for
/// x = -0.0 returns -0.0 (IEEE: +0.0): the sign of a zero is the one difference accepted.
/// Leaves the bypassed nodes for dce.
bool algebraic_simplify(ir::Graph& g, const PassOptions& opts = {});

/// Common subexpression elimination by hash-consing: two pure nodes with the same op and
/// attributes, the same (already merged) operands and the same shape become one; operands of
/// commutative ops match in either order. Equal constants merge (they are values, not part of
/// the interface); Inputs and Params never do. Guarantees: the same values (max/min of +0 and
/// -0 with operands swapped may return the other zero). The survivor is the first node; it takes
/// the label of a merged node when it has none. Leaves no dead nodes behind (merged nodes go).
bool cse(ir::Graph& g, const PassOptions& opts = {});

/// Dead code elimination: remove pure nodes that no output depends on. Guarantees: every Input
/// and Param stays, in its order, even when unused: they are the graph's interface (a caller
/// feeds one buffer per leaf, in graph order), which optimizing must not change; nodes without
/// the kPure trait are kept too. Does not merge or rewrite anything.
bool dce(ir::Graph& g, const PassOptions& opts = {});

/// Replace matmuls of one input x by rank-2 Constant weights (each read by its matmul only; x's
/// dtype) with one matmul by the weights side by side, concatenated by the pass (once, at compile
/// time; weights that are still Params are left alone: concatenating them would cost a copy per
/// call), and a narrow of the last axis per product. Guarantees: bit-identical values (each
/// element is the same dot product). Leaves no dead nodes; the separate weights go.
bool fuse_shared_matmul(ir::Graph& g, const PassOptions& opts = {});

/// Fuse silu(gate) * up, where up and gate are the halves [0, N) and [N, 2N) (either way round:
/// gate_first) of one value's last axis taken by narrow, into one fused_swiglu node; a cast of
/// the product to another float dtype becomes its cast_to. Assumes floats, no broadcasting in
/// the product, and that nothing else reads the narrows, the silu or the product (the halved
/// value may have other readers); else nothing fuses. Guarantees: the same values within
/// rounding (the fused kernel rounds the product once). Leaves no dead nodes.
bool fuse_swiglu(ir::Graph& g, const PassOptions& opts = {});

/// Fuse x @ w + bias [then an activation] into one fused_matmul_bias_act node. Assumes the
/// product and the sum are floats of one shape and dtype (the bias broadcasts without changing
/// them), the product has no other reader, and the activation (default attributes only) is the
/// sum's only reader; else it fuses less (matmul and add) or nothing. Guarantees: the same values
/// within rounding (the fused kernel adds the bias before rounding the product). Leaves no dead
/// nodes; the fused node takes the label and source line of the last node it replaces.
bool fuse_matmul_bias_act(ir::Graph& g, const PassOptions& opts = {});

/// Fuse layer_norm or rms_norm over the last axis of x + r, (x + r) + bias or (x + bias) + r into
/// one fused_residual_ln / fused_residual_rms_norm node. Assumes x and r of the norm's shape and
/// dtype (floats), bias, gamma and beta vectors along the last axis of that dtype, and that
/// nothing but the pattern reads the sums; else nothing fuses. Guarantees: the same values within
/// rounding (the fused kernel keeps the sum in double). Leaves no dead nodes; the fused node takes
/// the norm's label and source line.
bool fuse_residual_norm(ir::Graph& g, const PassOptions& opts = {});

/// Rewrite conv2d of static f32 operands with groups 1 as im2col, a reshape and a transpose of
/// the columns, and one batched matmul by the weight reshaped to [C_out, C_in*kH*kW], then a
/// reshape to NCHW, so a backend with a fast GEMM runs convolutions on it (the JIT reads the
/// transpose through strides). Assumes a verified graph; other convolutions stay. Guarantees: the
/// same values within rounding (the taps are summed in another order). Leaves no dead nodes; the
/// final reshape takes the convolution's label and source line. Run by compile_pipeline when
/// PipelineOptions::conv_as_matmul is set (the JIT backend sets it).
bool conv_as_matmul(ir::Graph& g, const PassOptions& opts = {});

/// Whether `decompose` has a rule for the kind (every composite op must have one).
bool has_decomposition(ir::OpKind kind);

// ---- The catalogue: every pass, in pipeline order.

using PassFn = bool (*)(ir::Graph& g, const PassOptions& opts);

struct PassInfo {
  std::string_view name;    ///< as in RLX_DEBUG output, tests/passes/<name>/, and find_pass
  std::string_view summary; ///< one line
  PassFn run;
  bool exact; ///< the outputs keep their values bit for bit (else: within rounding)
};

inline constexpr PassInfo kPasses[] = {
    {"shard_propagate", "split a program with dist::shard annotations into this rank's part",
     &shard_propagate, false},
    {"inline_custom_fn", "replace custom_fn nodes by their fwd_body", &inline_custom_fn, true},
    {"param_specialize", "bake the parameters given in PassOptions::params into constants",
     &param_specialize, true},
    {"decompose", "rewrite composite ops (softmax, norms, attention, ...) into primitives",
     &decompose, false},
    {"constant_fold", "evaluate nodes whose operands are all constants (the interpreter)",
     &constant_fold, true},
    {"algebraic_simplify", "apply exact identities: x + 0, x * 1, neg(neg x), x * 0 on integers",
     &algebraic_simplify, true},
    {"cse", "merge pure nodes with the same op, attributes, operands and shape", &cse, true},
    {"conv_as_matmul", "rewrite f32 conv2d (groups 1) as im2col and one batched matmul",
     &conv_as_matmul, false},
    {"fuse_shared_matmul", "one matmul by side-by-side constant weights for products of one input",
     &fuse_shared_matmul, true},
    {"fuse_swiglu", "fuse silu(gate) * up of two halves of one value into fused_swiglu",
     &fuse_swiglu, false},
    {"fuse_matmul_bias_act", "fuse matmul, bias add and activation into fused_matmul_bias_act",
     &fuse_matmul_bias_act, false},
    {"fuse_residual_norm", "fuse residual (and bias) adds into the layer or rms norm after them",
     &fuse_residual_norm, false},
    {"dce", "remove pure nodes that no output depends on (inputs and params stay)", &dce, true},
};

/// The catalogue entry of a pass; nullptr when there is none of that name.
const PassInfo* find_pass(std::string_view name);

// ---- The compile pipeline

/// Which fusion passes compile_pipeline runs. A fusion is on by default when both backends run
/// the fused op at least as fast as the parts it replaces (the measurements are in
/// docs/performance.md, "Fusion defaults").
struct FuseOptions {
  /// Off: both backends run a matmul with the interpreter's loop, whose cost does not change
  /// with the width of the product, so the narrows are extra copies (0-2% slower).
  bool shared_matmul = false;
  /// Off: the JIT runs fused_swiglu with the interpreter's scalar kernel, 2.3-2.8x slower than
  /// the unfused narrows and its vectorized silu-times-up loop (the interpreter: 1.7x faster).
  bool swiglu = false;
  /// Off for the interpreter, whose fused_matmul_bias_act kernel is 16% slower than the matmul,
  /// then the add and activation. rlx::compile turns it on for the JIT where its GEMM runs: the
  /// bias and activation then happen in the GEMM's store instead of another pass over C.
  bool matmul_bias_act = false;
  /// On: one row kernel on the JIT either way (as fast, or up to 25% faster on long rows), and
  /// one pass over the data instead of three in the interpreter (1.5-1.9x faster).
  bool residual_norm = true;

  static constexpr FuseOptions all() { return {true, true, true, true}; }
  static constexpr FuseOptions none() { return {false, false, false, false}; }
};

struct PipelineOptions {
  PassOptions passes;
  /// Run decompose. Off by default: every backend has a kernel for every composite op, and the
  /// JIT's row kernels are faster than the decomposed forms.
  bool decompose = false;
  /// Run conv_as_matmul. Off by default (the interpreter's direct convolution is the reference);
  /// the JIT backend turns it on where its GEMM runs (rlx::compile).
  bool conv_as_matmul = false;
  /// The fusion passes to run (FuseOptions::all() or none() to ask for every one or none). With
  /// decompose on, they fuse the primitives decompose made back into the fused ops they find.
  FuseOptions fuse;
  /// ir::verify before the first pass (an rlx::Error for a bad input graph) and after each one
  /// (an InternalError naming the pass that broke the graph). Tests turn it on.
  bool verify_each = false;
  /// Print the graph's text IR after each pass that changed it (also: RLX_DEBUG=passes).
  bool dump_changed = false;
  /// Print one line per pass with its time and node count (also: RLX_DEBUG=pass-times).
  bool time_passes = false;
  /// Where dumps and times go; nullptr means std::cerr.
  std::ostream* log = nullptr;
};

/// What one pass did in a pipeline run.
struct PassRun {
  std::string_view name;
  bool changed = false;
  double seconds = 0;
  std::size_t nodes = 0; ///< after the pass
};

/// The compile pipeline (src/passes/pipeline.cpp lists the passes in order): inline_custom_fn,
/// param_specialize, [decompose], constant_fold, algebraic_simplify, cse, [conv_as_matmul],
/// [fuse_shared_matmul], [fuse_swiglu], [fuse_matmul_bias_act], [fuse_residual_norm], dce (in
/// brackets: as the options say). Rewrites g in place; returns one entry per pass run. RLX_DEBUG
/// (a comma-separated list) adds `passes` (dump_changed) and `pass-times` (time_passes) to the
/// options; another item is an rlx::Error.
std::vector<PassRun> compile_pipeline(ir::Graph& g, const PipelineOptions& opts = {});

/// Any stage in, LIR out: HIR lowers to MIR (its fusion policy), the compile pipeline optimizes
/// the MIR (a LIR module's graph is optimized again), and its buffers are planned.
ir::LirModule compile_module(ir::GraphModule module, const PipelineOptions& opts = {},
                             const ir::PlanOptions& plan = {});

} // namespace rlx::passes
