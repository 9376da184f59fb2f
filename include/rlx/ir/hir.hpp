// include/rlx/ir/hir.hpp -- HIR: a model written in blocks (linear, SwiGLU, residual norms,
// attention ...) that lower into the MIR graph (ir::Graph), either as the primitive chains the
// fusion passes recognise or straight as fused ops.
#pragma once

#include "rlx/error.hpp"
#include "rlx/ir/attrs.hpp"
#include "rlx/ir/graph.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace rlx::ir {

/// How HIR blocks become MIR. Fusable (the default, and what autodiff needs): primitive chains
/// (matmul, add, activation ...) that the fusion passes recognise, so the optimizer decides.
/// Direct: blocks with a fused MIR op that costs nothing per call lower straight to it (linear
/// with a bias -> fused_matmul_bias_act, residual norms -> fused_residual_ln / _rms_norm); the
/// others lower as under Fusable (SwiGLU's fused op reads the two weights concatenated, which
/// Direct would redo on every call: the fusion passes concatenate constant weights once).
enum class FusionPolicy : uint8_t { Fusable, Direct };

/// The HIR ops: one struct per block, holding its attributes. Operands are listed per block.
namespace hir {
struct Input {
  std::string name;
  Shape shape;
};
struct Param {
  std::string name;
  Shape shape;
};
/// A scalar constant.
struct Constant {
  double value = 0;
  DType dtype = DType::F32;
};
/// (x, w, [bias]) -> act(x @ w + bias).
struct Linear {
  std::optional<Activation> activation;
  bool has_bias = false;
};
/// (x, w_first, w_second) -> x @ w_slot: two projections of one input. Each slot lowers to its
/// own matmul under both policies; fuse_shared_matmul merges them when the weights are known.
struct SharedLinearPair {
  uint32_t slot = 0;
};
/// (x, up_w, gate_w, down_w) -> (silu(x @ gate_w) * (x @ up_w)) @ down_w.
struct SwiGLU {};
/// (x, gamma, beta) over the last axis.
struct LayerNorm {
  float eps = 1e-5f;
};
struct RmsNorm {
  float eps = 1e-5f;
};
/// (x, residual, [bias], gamma, beta) -> norm(x + residual [+ bias]).
struct ResidualLayerNorm {
  float eps = 1e-5f;
  bool has_bias = false;
};
struct ResidualRmsNorm {
  float eps = 1e-5f;
  bool has_bias = false;
};
/// (q, k, v, [mask]) on [B, S, H*D].
struct Attention {
  int64_t num_heads = 1;
  int64_t head_dim = 1;
  MaskKind mask = MaskKind::none();
};
/// (x, cos, sin): rotary positions on the first n_rot dims of each head.
struct Rope {
  int64_t head_dim = 0;
  int64_t n_rot = 0;
};
/// Self-attention with its projections (BERT, GPT): operands (hidden, qkv_w, out_w, [qkv_b],
/// [out_b], [cos, sin], [mask]). The QKV projection [B, S, 3*H*D] splits into q, k, v; rope
/// (NeoX style, first n_rot dims of each head) rotates q and k when has_rope.
struct AttentionBlock {
  int64_t num_heads = 1;
  int64_t head_dim = 1;
  MaskKind mask = MaskKind::none();
  bool has_qkv_bias = false;
  bool has_out_bias = false;
  bool has_rope = false;
  int64_t n_rot = 0;
};
/// A pre-norm Llama decoder layer: operands (x, attn_norm_w, wq, wk, wv, wo, ffn_norm_w, up_w,
/// gate_w, down_w, cos, sin, [mask]).
///   h   = x + attention(rope(rms(x) @ wq), rope(rms(x) @ wk), rms(x) @ wv) @ wo
///   out = h + swiglu(rms(h); up_w, gate_w, down_w)
/// with grouped-query attention when num_kv_heads < num_heads (kv head j serves query heads
/// j*g .. j*g+g-1, g = num_heads / num_kv_heads) and RMS norms without a bias.
struct LlamaDecoderBlock {
  int64_t num_heads = 1;
  int64_t head_dim = 1;
  int64_t num_kv_heads = 1;
  float eps = 1e-5f;
  MaskKind mask = MaskKind::causal();
};
/// The escape hatch: any MIR op on the operands (its shape is inferred).
struct Mir {
  Op op;
};
} // namespace hir

using HirOp = std::variant<hir::Input, hir::Param, hir::Constant, hir::Linear,
                           hir::SharedLinearPair, hir::SwiGLU, hir::LayerNorm, hir::RmsNorm,
                           hir::ResidualLayerNorm, hir::ResidualRmsNorm, hir::Attention, hir::Rope,
                           hir::AttentionBlock, hir::LlamaDecoderBlock, hir::Mir>;

/// The optional operands and options of HirModule::attention_block.
struct AttentionBlockOptions {
  std::optional<HirNodeId> qkv_bias;
  std::optional<HirNodeId> out_bias;
  std::optional<HirNodeId> mask; ///< needed by MaskKind custom and bias, refused otherwise
  MaskKind mask_kind = MaskKind::none();
  /// Rotary positions on q and k: (cos, sin), each [seq, n_rot/2]; n_rot 0 = head_dim.
  std::optional<std::pair<HirNodeId, HirNodeId>> rope;
  int64_t n_rot = 0;
};

/// The weights of HirModule::llama_decoder_block (x @ w layout: wq [D, H*hd], wk and wv
/// [D, KV*hd], wo [H*hd, D], up and gate [D, F], down [F, D]; norms [D]; cos, sin [S, hd/2]).
struct LlamaWeights {
  HirNodeId attn_norm, wq, wk, wv, wo, ffn_norm, up, gate, down, cos, sin;
  std::optional<HirNodeId> mask; ///< for MaskKind custom and bias
};

/// The block's name as printed: "linear", "swiglu", "residual_rms_norm", "mir:add" ...
std::string hir_op_name(const HirOp& op);

struct HirNode {
  HirNodeId id;
  HirOp op;
  std::vector<HirNodeId> inputs;
  Shape shape; ///< the block's output shape (checked when the block is added)
  Loc loc;     ///< the caller's line; the MIR nodes of the block get it too
};

/// A model at HIR stage. Each builder checks its block at once by lowering it (Fusable) into a
/// shadow graph, so a shape error names the block and the caller's line, as MIR builders do.
class HirModule {
public:
  explicit HirModule(std::string name = "main", FusionPolicy policy = FusionPolicy::Fusable);

  std::string name;
  FusionPolicy fusion_policy;
  std::vector<HirNodeId> outputs;

  std::size_t len() const { return nodes_.size(); }
  const HirNode& node(HirNodeId id) const;
  const std::vector<HirNode>& nodes() const { return nodes_; }
  void set_outputs(std::vector<HirNodeId> outs);

  HirNodeId input(std::string name, Shape shape, Loc loc = Loc::current());
  HirNodeId param(std::string name, Shape shape, Loc loc = Loc::current());
  HirNodeId constant(double value, DType dtype, Loc loc = Loc::current());
  HirNodeId linear(HirNodeId x, HirNodeId w, std::optional<HirNodeId> bias,
                   std::optional<Activation> activation, Loc loc = Loc::current());
  std::pair<HirNodeId, HirNodeId> shared_linear_pair(HirNodeId x, HirNodeId w_first,
                                                     HirNodeId w_second, Loc loc = Loc::current());
  HirNodeId swiglu(HirNodeId x, HirNodeId up_w, HirNodeId gate_w, HirNodeId down_w,
                   Loc loc = Loc::current());
  HirNodeId layer_norm(HirNodeId x, HirNodeId gamma, HirNodeId beta, float eps,
                       Loc loc = Loc::current());
  HirNodeId rms_norm(HirNodeId x, HirNodeId gamma, HirNodeId beta, float eps,
                     Loc loc = Loc::current());
  HirNodeId residual_layer_norm(HirNodeId x, HirNodeId residual, std::optional<HirNodeId> bias,
                                HirNodeId gamma, HirNodeId beta, float eps,
                                Loc loc = Loc::current());
  HirNodeId residual_rms_norm(HirNodeId x, HirNodeId residual, std::optional<HirNodeId> bias,
                              HirNodeId gamma, HirNodeId beta, float eps, Loc loc = Loc::current());
  HirNodeId attention(HirNodeId q, HirNodeId k, HirNodeId v, std::optional<HirNodeId> mask,
                      int64_t num_heads, int64_t head_dim, MaskKind mask_kind,
                      Loc loc = Loc::current());
  HirNodeId rope(HirNodeId x, HirNodeId cos, HirNodeId sin, int64_t head_dim, int64_t n_rot,
                 Loc loc = Loc::current());
  /// BERT/GPT self-attention with its projections; see hir::AttentionBlock.
  HirNodeId attention_block(HirNodeId hidden, HirNodeId qkv_w, HirNodeId out_w, int64_t num_heads,
                            int64_t head_dim, const AttentionBlockOptions& options = {},
                            Loc loc = Loc::current());
  /// One pre-norm Llama decoder layer; see hir::LlamaDecoderBlock.
  HirNodeId llama_decoder_block(HirNodeId x, const LlamaWeights& w, int64_t num_heads,
                                int64_t head_dim, int64_t num_kv_heads, float eps,
                                MaskKind mask = MaskKind::causal(), Loc loc = Loc::current());
  /// Any MIR op (e.g. Op(OpKind::Add), Op(OpKind::Softmax, AxisAttrs{-1})) on HIR values.
  HirNodeId mir(Op op, std::vector<HirNodeId> inputs, Loc loc = Loc::current());

  /// The block-level dump: `hir @name (policy) { h0 = input("x") : [2, 8] f32 ... return h5 }`.
  std::string to_string() const;

private:
  HirNodeId add(HirOp op, std::vector<HirNodeId> inputs, const Loc& loc);

  std::vector<HirNode> nodes_;
  Graph check_;                   ///< the blocks lowered as they are added (Fusable)
  std::vector<NodeId> check_ids_; ///< check_'s value of each HIR node
};

/// Append the MIR of one block to g: `operands` are the MIR values of its inputs. Throws
/// rlx::Error (from the MIR builders) naming the op, the shapes and the block's line.
NodeId lower_hir_node(Graph& g, const HirNode& node, std::span<const NodeId> operands,
                      FusionPolicy policy);

} // namespace rlx::ir
