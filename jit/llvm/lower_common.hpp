// jit/llvm/lower_common.hpp -- the element-wise lowering's building blocks, shared by the
// element-wise kernels (lower_elementwise.cpp) and the row kernels' prologues (lower_rows.cpp):
// dtypes in LLVM, each node's scalar rule (src/ops/scalar.hpp through JV), broadcast indexing.
#pragma once

#include "lower.hpp"
#include "llvm/jv.hpp"

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

/// The kernel's nodes evaluated in order on `values` (each operand's value as held for its
/// dtype, by node index), in the current emission's lanes: adds every node's value.
void eval_nodes(const ir::Graph& g, const ir::FusedKernel& k,
                std::unordered_map<uint32_t, llvm::Value*>& values);

} // namespace rlx::jit::ew
