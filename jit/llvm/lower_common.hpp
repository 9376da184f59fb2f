// jit/llvm/lower_common.hpp -- the element-wise lowering's building blocks, shared by the
// element-wise kernels (lower_elementwise.cpp) and the row kernels' prologues (lower_rows.cpp):
// dtypes in LLVM, each node's scalar rule (src/ops/scalar.hpp through JV), broadcast indexing.
#pragma once

#include "lower.hpp"
#include "llvm/jv.hpp"

#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

namespace rlx::jit::ew {

/// f32, f64, bool and i32: the dtypes kernels compute on.
bool native_dtype(ir::DType t);
/// How an element is stored (bool as i8), one lane.
llvm::Type* storage_type(ir::DType t);
/// The loaded element as the value held for dtype t (bool: i1), and back.
llvm::Value* from_storage(llvm::Value* v, ir::DType t);
llvm::Value* to_storage(llvm::Value* v, ir::DType t);
/// Whether the lowering has a rule for the kind.
bool has_rule(ir::OpKind k);
/// Flat index into an operand of shape `in` broadcast to `out` (right-aligned) at flat output
/// index i.
llvm::Value* broadcast_index(llvm::Value* i, const ir::Shape& in, const ir::Shape& out);
/// One-element native constants become immediates (constant_value: as held for the dtype).
bool inline_constant(const ir::Node& n);
llvm::Value* constant_value(const ir::Node& n);

/// How operands are read along a kernel's rows: the output is iterated as rows of `inner`
/// contiguous elements (the longest suffix of dimensions along which every operand is either
/// laid out like the output, stride 1, or broadcast, stride 0), so index arithmetic runs once
/// per row.
struct RowLayout {
  int64_t inner = 1;
  std::vector<bool> contiguous; ///< per operand: stride 1 (else 0) along a row
};
RowLayout row_layout(const std::vector<ir::Shape>& operands, const ir::Shape& out);

/// What a lowering reads of fused kernel k, as exact text, for emission keys (find_lowered in
/// llvm/session.hpp): each operand's dtypes, layout along rows and inline constant, each node's
/// op with its attributes, dtype and operands, the outputs. Shapes as broadcast_index and
/// row_layout read them: with `sized`, every size; otherwise an operand with the kernel's
/// element count or one element says just that (its index is the element's or 0), and the
/// others give their shape and the kernel's.
std::string kernel_key(const ir::Graph& g, const ir::FusedKernel& k, bool sized);
/// The same text with the caller's words for the iteration space (`out`) and for each
/// operand's shape and layout along rows (`operand(j)`): for an emitter that places operands its
/// own way (the row kernels' size-generic prologues).
std::string kernel_key(const ir::Graph& g, const ir::FusedKernel& k, const std::string& out,
                       const std::function<std::string(std::size_t)>& operand);

/// The kernel whose emission key (see find_lowered) is `key`: the loaded one when a lowering
/// with this key loaded code that is still loaded (then `on_reuse` runs, for the counters the
/// lowering would have kept), else lower() and remember it. So a new size of a dynamic dim
/// skips emitting and digesting the modules of its size-generic kernels. Not while RLX_DUMP
/// writes LLVM IR or assembly (each kernel writes its files) or RLX_REUSE_KERNELS=0. Checked builds
/// (ir::plan_checks_enabled: the tests) lower anyway and check that the code they get is the
/// code the key found.
NativeKernel lower_once(const std::string& key, const std::function<NativeKernel()>& lower,
                        const std::function<void()>& on_reuse);

/// The kernel's nodes evaluated in order on `values` (each operand's value as held for its
/// dtype, by node index), in the current emission's lanes: adds every node's value.
void eval_nodes(const ir::Graph& g, const ir::FusedKernel& k,
                std::unordered_map<uint32_t, llvm::Value*>& values);

} // namespace rlx::jit::ew
