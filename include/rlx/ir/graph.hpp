// include/rlx/ir/graph.hpp -- Graph: the append-only DAG at the heart of rlx (RLX's API).
#pragma once

#include "rlx/error.hpp"
#include "rlx/ir/node.hpp"

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <ostream>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace rlx::ir {

class GraphModule; // rlx/ir/module.hpp
struct MultiOutputHandle;
struct RecurrentOutputs;
struct GatedDeltaNetCarry;
class HirModule;  // rlx/ir/hir.hpp
struct LirModule; // rlx/ir/lir.hpp

/// Where Graph builders put the nodes they append. A Graph stores them itself; a Graph made over
/// a NodeSink (Graph(NodeSink&, name)) hands each node to the sink instead, and reads operand
/// shapes back from it: the Tensor frontend's recorder turns every node into a lazy tensor as it
/// is appended (src/frontend/record.cpp). Node ids are positions in the sink, 0 .. len()-1.
class NodeSink {
public:
  /// How many nodes the sink holds.
  virtual std::size_t len() const = 0;
  /// The shape of node `id` (id < len()).
  virtual const Shape& shape(NodeId id) const = 0;
  /// Append a node the Graph has checked (inputs in range, arity, shape rule); its id is the
  /// old len().
  virtual NodeId append(Op op, std::vector<NodeId> inputs, Shape shape, const Loc& loc) = 0;
  /// Drop the nodes from `len` on: a composite builder that failed rolls back.
  virtual void truncate(std::size_t len) = 0;

protected:
  ~NodeSink() = default;
};

/// The seven operands of the gaussian_splat_* ops (docs/splatting.md): means [N,3], log_scales
/// [N,3], rotations [N,4] (w,x,y,z), opacity_logits [N], colors_dc [N,3], sh_rest [N,K-1,3]
/// (K-1 = 0, 3, 8 or 15) and meta [23] (gaussian_splat_render_meta), all f32.
struct GaussianSplatInputs {
  NodeId means, log_scales, rotations, opacity_logits, colors_dc, sh_rest, meta;
};
/// The framebuffer and the renderer's thresholds (the op's GaussianSplatAttrs).
struct GaussianSplatRenderParams {
  int64_t width = 0, height = 0;
  int64_t tile_size = 16;
  double radius_scale = 3.0;             ///< footprint radius in standard deviations
  double alpha_cutoff = 1.0 / 255.0;     ///< smaller alphas are skipped
  int64_t max_splat_steps = 0;           ///< contributions per pixel; 0 = no limit
  double transmittance_threshold = 1e-4; ///< early termination below it
  int64_t max_list_entries = 0;          ///< tile-list capacity; 0 = N * tiles
};
/// The render's parameters plus the backward's: loss_grad_clip (0 = off) clamps d_rgba, sh_band
/// (-1 = all) limits the spherical-harmonics bands that get a gradient, max_anisotropy (0 = off)
/// adds the gradient of sum over Gaussians of max(0, max_scale / min_scale - max_anisotropy).
struct GaussianSplatBackwardParams {
  GaussianSplatRenderParams render;
  double loss_grad_clip = 0.0;
  int64_t sh_band = -1;
  double max_anisotropy = 0.0;
};

/// A computation graph. Insertion order is topological order: every node's inputs have smaller
/// ids. Nodes have one output each. Method names and argument order follow RLX
/// (docs of rlx_ir::Graph); builders take a trailing source location so errors name the user's
/// line.
class Graph {
public:
  std::string name;
  std::vector<NodeId> outputs; ///< the graph's results

  explicit Graph(std::string name = "main") : name(std::move(name)) {}
  /// A graph whose builders append to `sink`: it stores no nodes, so nodes() is empty and
  /// node(id) is an rlx::Error; len(), shape(id) and every builder work.
  Graph(NodeSink& sink, std::string name) : name(std::move(name)), sink_(&sink) {}

  // ---- Core (seed order)
  std::size_t len() const { return sink_ ? sink_->len() : nodes_.size(); }
  bool is_empty() const { return len() == 0; }
  /// The node with this id; an rlx::Error when the id is not in the graph.
  const Node& node(NodeId id) const;
  std::span<const Node> nodes() const { return nodes_; }
  const Shape& shape(NodeId id) const { return sink_ ? sink_shape(id) : node(id).shape; }
  void set_outputs(std::vector<NodeId> outputs);
  /// Rewire a node's inputs in place (no shape re-inference; the caller keeps shapes consistent).
  void set_inputs(NodeId id, std::vector<NodeId> inputs);
  Node& node_mut(NodeId id);
  std::span<Node> nodes_mut() { return nodes_; }
  NodeId append_node(Op op, std::vector<NodeId> inputs, Shape shape,
                     std::optional<std::string> name, Loc loc = Loc::current());
  std::vector<NodeId> users(NodeId id) const;
  std::size_t use_count(NodeId id) const;
  /// First Input or Param node with this name.
  std::optional<NodeId> node_id_by_name(std::string_view name) const;
  std::optional<NodeId> input_id(std::string_view name) const;
  std::optional<NodeId> param_id(std::string_view name) const;
  std::vector<NodeId> topo_order() const;
  std::vector<NodeId> reverse_topo() const;
  /// Annotated text dump: header with counts and bytes, names and output markers.
  std::string inspect() const;
  bool has_dynamic_dims() const;
  /// All symbols used by any node shape, sorted.
  std::vector<uint32_t> dynamic_symbols() const;
  /// Specialize symbolic dims to sizes. An rlx::Error (ErrorKind::Bind) when a symbol used by
  /// the graph is unbound, or when the sizes break a shape rule (e.g. add of ?a and ?b, a != b).
  Graph bind(const DimBinding& bindings) const;

  // ---- Stages (rlx/ir/module.hpp): a Graph is the MIR; HIR blocks lower into it, and LIR is
  // an optimized Graph plus its buffer plan.

  /// A model defined at HIR level: `build` adds blocks and returns the output.
  static GraphModule define(std::string name, const std::function<HirNodeId(HirModule&)>& build);
  /// An empty HIR-stage module.
  static GraphModule hir(std::string name);
  /// This MIR graph wrapped for pipeline operations.
  GraphModule module() &&;
  /// Lower a HIR module to MIR (an rlx::Error if a block does not lower).
  static Graph from_hir(const HirModule& hir);
  /// The MIR view of this graph: MIR is structurally a Graph, so this is the graph itself.
  Graph to_mir() && { return std::move(*this); }
  /// The optimized MIR graph inside a LIR module.
  static Graph from_lir(LirModule lir);

  // ---- Leaves and generic construction
  NodeId input(std::string name, Shape shape, Loc loc = Loc::current());
  NodeId param(std::string name, Shape shape, Loc loc = Loc::current());
  NodeId add_node(Op op, std::vector<NodeId> inputs, Shape shape, Loc loc = Loc::current());
  /// Append a node of any op with the shape its rule infers; an rlx::Error naming the op, the
  /// operand shapes and loc when they do not fit (or a dynamic dim hides the result).
  NodeId add_inferred(Op op, std::vector<NodeId> inputs, Loc loc = Loc::current());

  // ---- Builders with explicit output shapes (RLX's primitive builders). Each checks its
  // operands and the declared shape against the op's shape rule and throws rlx::Error naming
  // the op, the shapes and the caller's line.
  NodeId matmul(NodeId lhs, NodeId rhs, Shape out_shape, Loc loc = Loc::current());
  NodeId binary(BinaryOp op, NodeId lhs, NodeId rhs, Shape out_shape, Loc loc = Loc::current());
  NodeId activation(Activation act, NodeId input, Shape shape, Loc loc = Loc::current());

  // The builders below follow RLX's names and argument order (src/builders/*.cpp,
  // src/builders/graph_ext.cpp). Those without a Shape argument infer it with the op's shape rule
  // (rlx/ir/infer.hpp); those with one check it like matmul. Either way a misfit is an
  // rlx::Error naming the op, the operand shapes and the caller's line, and nothing is appended.
  // Sizes and axes are int64_t; a negative axis counts from the end. Ints2/Ints3 are
  // std::array<int64_t, 2/3>.

  // ---- Element-wise
  /// Convert x to dtype `to` (same shape).
  NodeId cast(NodeId x, DType to, Loc loc = Loc::current());
  /// Rank-0 broadcastable scalar (Op::Constant holding the value's little-endian bytes). F16 and
  /// BF16 are lowered as an f32 constant plus a cast. An rlx::Error when `value` does not fit
  /// `dtype` (see try_constant).
  NodeId constant(double value, DType dtype, Loc loc = Loc::current());
  /// Fallible constant: nullopt (and nothing appended) when the dtype cannot hold `value`:
  /// integers need an integral value in range (no NaN or inf), bool needs 0 or 1, floats (and
  /// c64, imaginary part 0) round to nearest but a finite value beyond the largest finite value
  /// of the dtype is out of range. F16/BF16 values that fit lower as in constant.
  std::optional<NodeId> try_constant(double value, DType dtype, Loc loc = Loc::current());
  /// Identity forward, zero backward (PyTorch's detach, jax.lax.stop_gradient).
  NodeId stop_gradient(NodeId x, Loc loc = Loc::current());
  /// Element-wise select: cond ? on_true : on_false, all three broadcast.
  NodeId where_(NodeId cond, NodeId on_true, NodeId on_false, Loc loc = Loc::current());
  /// Clamp x to [min, max] (an infinite bound is open); an rlx::Error when min > max or NaN.
  NodeId clamp(NodeId x, double min, double max, Loc loc = Loc::current());

  // ---- Reductions and scans (explicit shapes)
  /// Reduce over `axes` (kept as size 1 with keep_dim).
  NodeId reduce(NodeId input, ReduceOp op, std::vector<int64_t> axes, bool keep_dim, Shape shape,
                Loc loc = Loc::current());
  /// Numerically stable softmax along `axis`.
  NodeId softmax(NodeId input, int64_t axis, Shape shape, Loc loc = Loc::current());
  /// Cumulative sum along an axis (output shape == input shape); exclusive shifts by one.
  NodeId cumsum(NodeId input, int64_t axis, bool exclusive, Shape shape, Loc loc = Loc::current());
  /// Index of the max along `axis` (i64 indices).
  NodeId argmax(NodeId input, int64_t axis, bool keep_dim, Shape shape, Loc loc = Loc::current());
  /// Index of the min along `axis` (i64 indices).
  NodeId argmin(NodeId input, int64_t axis, bool keep_dim, Shape shape, Loc loc = Loc::current());

  // ---- Data movement and indexing
  /// Reshape (element order kept; one -1 allowed in new_shape).
  NodeId reshape(NodeId input, std::vector<int64_t> new_shape, Shape out_shape,
                 Loc loc = Loc::current());
  /// Gather (embedding lookup): table.shape[:axis] ++ indices.shape ++ table.shape[axis+1:].
  NodeId gather(NodeId table, NodeId indices, int64_t axis, Shape shape, Loc loc = Loc::current());
  /// Concatenate tensors along an axis.
  NodeId concat(std::vector<NodeId> inputs, int64_t axis, Shape shape, Loc loc = Loc::current());
  /// Reverse (flip) element order along each axis in `axes`; shape unchanged.
  NodeId reverse(NodeId input, std::vector<int64_t> axes, Loc loc = Loc::current());
  /// Broadcast to `target_shape` (NumPy rules; -1 keeps an existing axis).
  NodeId expand(NodeId input, std::vector<int64_t> target_shape, Loc loc = Loc::current());
  /// `len` elements of `axis` from `start`, every `step` (negative steps walk backwards).
  NodeId slice(NodeId input, int64_t axis, int64_t start, int64_t len, int64_t step = 1,
               Loc loc = Loc::current());
  /// Pad with `pads` = [before_0, after_0, before_1, after_1, ...] (one pair per axis).
  NodeId pad(NodeId input, std::vector<int64_t> pads, PadMode mode = PadMode::Constant,
             double value = 0.0, Loc loc = Loc::current());
  /// Gather's adjoint along `axis`: updates with that axis resized to out_dim, zeros plus
  /// updates[.., j, ..] added at row indices[j] (indices 1-D, integer or float-encoded, negative
  /// from the end; duplicates accumulate; one out of range is an rlx::Error at run time).
  NodeId scatter_add(NodeId updates, NodeId indices, int64_t axis, int64_t out_dim,
                     Loc loc = Loc::current());
  /// i64 indices of the k largest (smallest unless `largest`) along the last axis, in order,
  /// ties to the smaller index, NaN above every number; the values are a gather away.
  NodeId top_k(NodeId x, int64_t k, bool largest = true, Loc loc = Loc::current());
  /// The stable i64 sorting permutation of the last axis, NaN above every number.
  NodeId argsort(NodeId x, bool descending = false, Loc loc = Loc::current());

  // ---- Matmul and linear layers
  /// Dense linear layer: matmul(input, weight) [+ bias]; the bias must broadcast to the product
  /// without changing its shape or dtype.
  NodeId linear_bias(NodeId input, NodeId weight, std::optional<NodeId> bias,
                     Loc loc = Loc::current());
  /// Dense linear with optional bias and epilogue activation (matmul, add, activation nodes).
  NodeId linear_bias_act(NodeId input, NodeId weight, std::optional<NodeId> bias,
                         std::optional<Activation> activation, Loc loc = Loc::current());
  /// Emit Op::FusedMatMulBiasAct directly: act(input @ weight + bias).
  NodeId linear_fused(NodeId input, NodeId weight, NodeId bias,
                      std::optional<Activation> activation, Shape out_shape,
                      Loc loc = Loc::current());
  /// Fused matmul + bias + activation (the node optimization passes create).
  NodeId fused_matmul_bias_act(NodeId input, NodeId weight, NodeId bias,
                               std::optional<Activation> activation, Shape shape,
                               Loc loc = Loc::current());
  /// Two matmuls sharing the same input (the gate+up / QKV pattern); (first, second) in order.
  std::pair<NodeId, NodeId> shared_matmul_pair(NodeId input, NodeId w_first, NodeId w_second,
                                               Loc loc = Loc::current());
  /// SwiGLU FFN from primitives: (silu(input @ gate_w) * (input @ up_w)) @ down_w.
  NodeId swiglu_ffn(NodeId input, NodeId up_w, NodeId gate_w, NodeId down_w,
                    Loc loc = Loc::current());
  /// Fully fused SwiGLU FFN: concat [up_w, gate_w] on the last axis, one matmul, fused_swiglu,
  /// then the down projection.
  NodeId fused_swiglu_ffn(NodeId input, NodeId up_w, NodeId gate_w, NodeId down_w, Shape out_shape,
                          Loc loc = Loc::current());

  // ---- Normalisation
  /// Layer normalization over `axis` with gamma and beta.
  NodeId layer_norm(NodeId input, NodeId gamma, NodeId beta, int64_t axis, float eps, Shape shape,
                    Loc loc = Loc::current());
  /// LayerNorm2d on NCHW (normalize across channels at each spatial position).
  NodeId layer_norm2d(NodeId input, NodeId gamma, NodeId beta, float eps, Loc loc = Loc::current());
  /// Group normalization on NCHW, over (C/G)*H*W.
  NodeId group_norm(NodeId input, NodeId gamma, NodeId beta, int64_t num_groups, float eps,
                    Loc loc = Loc::current());
  /// BatchNorm inference (frozen running mean/variance), per channel (axis 1).
  NodeId batch_norm_inference(NodeId input, NodeId gamma, NodeId beta, NodeId running_mean,
                              NodeId running_var, float eps, Loc loc = Loc::current());
  /// RMS normalization over the last axis.
  NodeId rms_norm(NodeId x, NodeId gamma, NodeId beta, float eps, Loc loc = Loc::current());
  /// Fused residual [+ bias] + layer norm over the last axis: ln(x + residual [+ bias]).
  NodeId fused_residual_ln(NodeId x, NodeId residual, std::optional<NodeId> bias, NodeId gamma,
                           NodeId beta, float eps, Shape shape, Loc loc = Loc::current());
  /// Fused residual [+ bias] + RMS norm over the last axis.
  NodeId fused_residual_rms_norm(NodeId x, NodeId residual, std::optional<NodeId> bias,
                                 NodeId gamma, NodeId beta, float eps, Shape shape,
                                 Loc loc = Loc::current());

  // ---- Attention and positions. q, k, v are [batch, seq, num_heads*head_dim].
  /// Scaled dot-product attention with a custom [batch, key_len] validity mask
  /// (= attention_kind with MaskKind::custom()).
  NodeId attention(NodeId q, NodeId k, NodeId v, NodeId mask, int64_t num_heads, int64_t head_dim,
                   Shape shape, Loc loc = Loc::current());
  /// Like attention, with an optional score scale (default 1/sqrt(head_dim)) and logit softcap.
  NodeId attention_opts(NodeId q, NodeId k, NodeId v, NodeId mask, int64_t num_heads,
                        int64_t head_dim, Shape shape, std::optional<float> score_scale,
                        std::optional<float> attn_logit_softcap, Loc loc = Loc::current());
  /// Attention with a kernel-synthesized mask (None / Causal / SlidingWindow): q, k, v only.
  /// Custom and Bias need a mask input: an rlx::Error here (use attention / attention_bias).
  NodeId attention_kind(NodeId q, NodeId k, NodeId v, int64_t num_heads, int64_t head_dim,
                        MaskKind mask_kind, Shape shape, Loc loc = Loc::current());
  /// Like attention_kind, with an optional score scale and logit softcap.
  NodeId attention_kind_opts(NodeId q, NodeId k, NodeId v, int64_t num_heads, int64_t head_dim,
                             MaskKind mask_kind, Shape shape, std::optional<float> score_scale,
                             std::optional<float> attn_logit_softcap, Loc loc = Loc::current());
  /// Attention with an additive bias [batch, num_heads, query_len, key_len] on the scores.
  NodeId attention_bias(NodeId q, NodeId k, NodeId v, NodeId bias, int64_t num_heads,
                        int64_t head_dim, Shape shape, Loc loc = Loc::current());
  /// Like attention_bias, with an optional score scale and logit softcap.
  NodeId attention_bias_opts(NodeId q, NodeId k, NodeId v, NodeId bias, int64_t num_heads,
                             int64_t head_dim, Shape shape, std::optional<float> score_scale,
                             std::optional<float> attn_logit_softcap, Loc loc = Loc::current());
  /// SAM2 2-D axial RoPE: x [batch, seq, num_heads*head_dim] -> same shape.
  NodeId axial_rope2d(NodeId x, int64_t end_x, int64_t end_y, int64_t head_dim, int64_t num_heads,
                      float theta, int64_t repeat_factor, Loc loc = Loc::current());

  // ---- Convolution, pooling and resampling (NCHW / NCDHW, PyTorch weight layouts)
  /// 2-D convolution; weight [C_out, C_in/groups, kH, kW].
  NodeId conv2d(NodeId input, NodeId weight, Ints2 kernel_size, Ints2 stride, Ints2 padding,
                Ints2 dilation, int64_t groups, Loc loc = Loc::current());
  /// NCHW im2col: output [N*H_out*W_out, C*kH*kW].
  NodeId im2col(NodeId input, Ints2 kernel_size, Ints2 stride, Ints2 padding, Ints2 dilation,
                Loc loc = Loc::current());
  /// 2-D transposed convolution; weight [C_in, C_out/groups, kH, kW].
  NodeId conv_transpose2d(NodeId input, NodeId weight, Ints2 kernel_size, Ints2 stride,
                          Ints2 padding, Ints2 dilation, Ints2 output_padding, int64_t groups,
                          Loc loc = Loc::current());
  /// 3-D convolution; weight [C_out, C_in/groups, kD, kH, kW] (kernel size read from it).
  NodeId conv3d(NodeId input, NodeId weight, Ints3 stride, Ints3 padding, Ints3 dilation,
                int64_t groups, Loc loc = Loc::current());
  /// 3-D transposed convolution; weight [C_in, C_out/groups, kD, kH, kW].
  NodeId conv_transpose3d(NodeId input, NodeId weight, Ints3 stride, Ints3 padding, Ints3 dilation,
                          Ints3 output_padding, int64_t groups, Loc loc = Loc::current());
  /// 1-D transposed convolution on [N, C_in, L]; weight [C_in, C_out/groups, K].
  NodeId conv_transpose1d(NodeId input, NodeId weight, int64_t kernel, int64_t stride,
                          int64_t padding, int64_t dilation, int64_t output_padding, int64_t groups,
                          Loc loc = Loc::current());
  /// 2-D max pooling.
  NodeId max_pool2d(NodeId input, Ints2 kernel_size, Ints2 stride, Ints2 padding,
                    Loc loc = Loc::current());
  /// 2-D average pooling.
  NodeId avg_pool2d(NodeId input, Ints2 kernel_size, Ints2 stride, Ints2 padding,
                    Loc loc = Loc::current());
  /// Resample the last axis of x (any rank >= 1, float) from L_in to l_out samples: a matmul
  /// with a constant [L_in, l_out] matrix (leading axes reshaped to rows and back). Linear uses
  /// the align-corners mapping pos = j*(L_in-1)/(l_out-1); Nearest picks floor(j*L_in/l_out)
  /// (torch's 'nearest').
  NodeId interpolate1d(NodeId x, int64_t l_out, InterpMode mode, Loc loc = Loc::current());
  /// Resample D, H, W of [N, C, D, H, W] to out_dhw, separably (transpose, reshape, matmul
  /// with constant matrices; an axis whose size is unchanged is left alone, and x itself is
  /// returned when none changes). Linear maps with
  /// pos = j*(L_in-1)/(L_out-1) when align_corners, else pos = (j+0.5)*L_in/L_out - 0.5
  /// clamped to [0, L_in-1]; Nearest picks floor(j*L_in/L_out) either way.
  NodeId interpolate3d(NodeId x, Ints3 out_dhw, InterpMode mode, bool align_corners,
                       Loc loc = Loc::current());

  // ---- RLX's GraphExt short names: shapes inferred. (layer_norm2d, group_norm, conv2d,
  // conv_transpose2d and rms_norm above serve as both the primitive and the short form.)
  /// Matrix multiply.
  NodeId mm(NodeId lhs, NodeId rhs, Loc loc = Loc::current());
  NodeId add(NodeId lhs, NodeId rhs, Loc loc = Loc::current());
  NodeId sub(NodeId lhs, NodeId rhs, Loc loc = Loc::current());
  NodeId mul(NodeId lhs, NodeId rhs, Loc loc = Loc::current());
  NodeId div(NodeId lhs, NodeId rhs, Loc loc = Loc::current());
  /// Element-wise lhs == rhs (bool).
  NodeId eq(NodeId lhs, NodeId rhs, Loc loc = Loc::current());
  /// Element-wise lhs < rhs (bool).
  NodeId lt(NodeId lhs, NodeId rhs, Loc loc = Loc::current());
  /// Erf GELU.
  NodeId gelu(NodeId x, Loc loc = Loc::current());
  /// Tanh-approximation GELU (PyTorch's tanh form, candle's Tensor::gelu).
  NodeId gelu_approx(NodeId x, Loc loc = Loc::current());
  NodeId silu(NodeId x, Loc loc = Loc::current());
  NodeId relu(NodeId x, Loc loc = Loc::current());
  NodeId exp(NodeId x, Loc loc = Loc::current());
  NodeId sqrt(NodeId x, Loc loc = Loc::current());
  NodeId neg(NodeId x, Loc loc = Loc::current());
  NodeId tanh(NodeId x, Loc loc = Loc::current());
  /// Layer norm over the last axis.
  NodeId ln(NodeId x, NodeId gamma, NodeId beta, float eps, Loc loc = Loc::current());
  /// Sum over axes.
  NodeId sum(NodeId x, std::vector<int64_t> axes, bool keep_dim, Loc loc = Loc::current());
  /// Mean over axes.
  NodeId mean(NodeId x, std::vector<int64_t> axes, bool keep_dim, Loc loc = Loc::current());
  /// Softmax along axis.
  NodeId sm(NodeId x, int64_t axis, Loc loc = Loc::current());
  /// Reshape; one -1 in new_shape is inferred.
  NodeId reshape_(NodeId x, std::vector<int64_t> new_shape, Loc loc = Loc::current());
  /// Permute axes: output axis i is input axis perm[i].
  NodeId transpose_(NodeId x, std::vector<int64_t> perm, Loc loc = Loc::current());
  /// [start, start+len) of one axis.
  NodeId narrow_(NodeId x, int64_t axis, int64_t start, int64_t len, Loc loc = Loc::current());
  NodeId concat_(std::vector<NodeId> inputs, int64_t axis, Loc loc = Loc::current());
  NodeId gather_(NodeId table, NodeId indices, int64_t axis, Loc loc = Loc::current());
  /// Attention with a custom [batch, key_len] mask; output shape = q's.
  NodeId attention_(NodeId q, NodeId k, NodeId v, NodeId mask, int64_t num_heads, int64_t head_dim,
                    Loc loc = Loc::current());
  /// NeoX RoPE over whole heads (n_rot = head_dim); cos and sin hold the angles' cos/sin.
  NodeId rope(NodeId x, NodeId cos, NodeId sin, int64_t head_dim, Loc loc = Loc::current());
  /// Partial RoPE: rotate the first n_rot dims of each head (NeoX offset n_rot/2).
  NodeId rope_n(NodeId x, NodeId cos, NodeId sin, int64_t head_dim, int64_t n_rot,
                Loc loc = Loc::current());
  /// RoPE with an explicit pairing flavor.
  NodeId rope_styled(NodeId x, NodeId cos, NodeId sin, int64_t head_dim, RopeStyle style,
                     Loc loc = Loc::current());
  /// Partial RoPE with an explicit pairing flavor.
  NodeId rope_n_styled(NodeId x, NodeId cos, NodeId sin, int64_t head_dim, int64_t n_rot,
                       RopeStyle style, Loc loc = Loc::current());

  // ---- Packed quantized weights (src/builders/packed.cpp; ops.def's dequant_matmul). W [n, k]
  // is stored packed with rows along k (GGUF's layout); out_shape is [m, n] f32.
  /// x [m, k] times the dequantized W: (x, w_q, scale, zp) for Int8Block, Int8BlockAsym,
  /// Int4Block, Fp8E4m3/E5m2 and Nvfp4Block (codes, block scales, global scale); for a GGUF
  /// scheme only x and w_q (the packed bytes) are read, as dequant_matmul_packed.
  NodeId dequant_matmul(NodeId x, NodeId w_q, NodeId scale, NodeId zp, QuantScheme scheme,
                        Shape out_shape, Loc loc = Loc::current());
  /// x [m, k] times W stored as packed bytes u8 [n, row_bytes] of any scheme.
  NodeId dequant_matmul_packed(NodeId x, NodeId packed_w, QuantScheme scheme, Shape out_shape,
                               Loc loc = Loc::current());
  /// NVFP4: codes u8 [n, k/2], E4M3 block scales u8 [n, k/16], global scale f32 [1].
  NodeId dequant_matmul_nvfp4(NodeId x, NodeId w_q, NodeId block_scales, NodeId global_scale,
                              Shape out_shape, Loc loc = Loc::current());

  // ---- Linear algebra (src/builders/linalg.cpp; the kinds are ops.def's Linalg family, any
  // other through add_inferred).
  /// Dense linear solve x = A^-1 b (LU with partial pivoting): A [N, N], b [N] (one right-hand
  /// side) or [N, K] (K of them); out_shape must be b's shape. A singular A is an rlx::Error when
  /// the graph runs.
  NodeId dense_solve(NodeId a, NodeId b, Shape out_shape, Loc loc = Loc::current());
  /// dense_solve per batch element: A [B, N, N], b [B, N] or [B, N, K]; what vmap makes of
  /// dense_solve.
  NodeId batched_dense_solve(NodeId a, NodeId b, Shape out_shape, Loc loc = Loc::current());

  // ---- Quantization (src/builders/quant.cpp; ops.def's Quant family, RLX's names and argument
  // order; other attribute combinations through add_inferred). Integer values are i8 (the
  // default) or u8; a scale must be positive and finite, a zero point inside the dtype's range.
  /// Per-tensor quantization of a float x: clamp(round_half_even(x / scale) + zero_point).
  NodeId quantize(NodeId x, float scale, int32_t zero_point, DType dtype = DType::I8,
                  Loc loc = Loc::current());
  /// Per-channel quantization: scales and zero_points have x.dim(axis) entries each; index i
  /// along axis uses the i-th pair.
  NodeId quantize_per_channel(NodeId x, int64_t axis, std::vector<float> scales,
                              std::vector<int32_t> zero_points, DType dtype = DType::I8,
                              Loc loc = Loc::current());
  /// Per-tensor dequantization (q - zero_point) * scale of an i8 or u8 x, to f32.
  NodeId dequantize(NodeId x, float scale, int32_t zero_point, Loc loc = Loc::current());
  /// Per-channel dequantization, the inverse of quantize_per_channel.
  NodeId dequantize_per_channel(NodeId x, int64_t axis, std::vector<float> scales,
                                std::vector<int32_t> zero_points, Loc loc = Loc::current());
  /// Integer matmul: x [.., M, K] and w [K, N] (i8 or u8), bias i32 [N]; accumulates
  /// (x - x_zp)(w - w_zp) + bias in i32 and requantizes round_half_even(acc * mult) + out_zp,
  /// saturated to out_shape's dtype (i8 or u8; i32 keeps the accumulator). mult = x_scale *
  /// w_scale / out_scale.
  NodeId q_matmul(NodeId x, NodeId w, NodeId bias, int32_t x_zp, int32_t w_zp, int32_t out_zp,
                  float mult, Shape out_shape, Loc loc = Loc::current());
  /// Integer 2-D convolution, NCHW, weight [C_out, C_in/groups, kH, kW], bias i32 [C_out]; conv2d's
  /// geometry and q_matmul's arithmetic (the padding holds x_zp).
  NodeId q_conv2d(NodeId x, NodeId w, NodeId bias, Ints2 kernel_size, Ints2 stride, Ints2 padding,
                  Ints2 dilation, int64_t groups, int32_t x_zp, int32_t w_zp, int32_t out_zp,
                  float mult, Shape out_shape, Loc loc = Loc::current());
  // ---- Collectives (src/builders/collective.cpp; ops.def's Collective family, rlx::dist). They
  // communicate with the other processes of the job when the graph runs; every rank must run
  // the same collectives in the same order. all_gather and reduce_scatter record the job's size
  // (rlx::dist::size()) as their `ranks`. A root or peer outside [0, size) is an rlx::Error.
  /// op (sum, mean, max, min) over every rank's x; the same result on each rank.
  NodeId all_reduce(NodeId x, CollectiveOp op, Loc loc = Loc::current());
  /// The ranks' x concatenated along axis, in rank order.
  NodeId all_gather(NodeId x, int64_t axis, Loc loc = Loc::current());
  /// The sum over ranks of x, split along axis into size() blocks; this rank's block.
  NodeId reduce_scatter(NodeId x, int64_t axis, Loc loc = Loc::current());
  /// Root's x on every rank.
  NodeId broadcast(NodeId x, int64_t root, Loc loc = Loc::current());
  /// The sum over ranks of x on root, zeros on the other ranks.
  NodeId reduce_to_root(NodeId x, int64_t root, Loc loc = Loc::current());
  /// Sends x to rank peer under tag; its value is x.
  NodeId send(NodeId x, int64_t peer, int64_t tag, Loc loc = Loc::current());
  /// What rank peer sends under tag, of like's shape and dtype.
  NodeId recv(NodeId like, int64_t peer, int64_t tag, Loc loc = Loc::current());
  // ---- Sampling, vector quantization and LoRA (src/builders/random.cpp). sample is ops.def's
  // Random family's sample kind; the others are composites of matmul, argmin/argmax and gather.
  /// Fused sample: logits [B, V] -> one f32-encoded token id per row (output_shape must be f32
  /// [B]): logits / temperature, top_k then top_p filtering as HF transformers' warpers (top_k 0
  /// and top_p 1 switch them off), a categorical draw from the counter RNG keyed by seed;
  /// temperature 0 takes the row's argmax.
  NodeId sample(NodeId logits, int64_t top_k, float top_p, float temperature, uint64_t seed,
                Shape output_shape, Loc loc = Loc::current());
  /// sample with the key an operand (an i64 scalar) instead of the seed attribute, so a traced
  /// key draws afresh without rebuilding the graph.
  NodeId sample_keyed(NodeId logits, NodeId key, int64_t top_k, float top_p, float temperature,
                      Shape output_shape, Loc loc = Loc::current());
  /// Nearest-codebook assignment: x [N, D], codebook [K, D] -> (indices [N], i64 code ids as
  /// the IR's argmin gives them; quantized [N, D], the chosen codes). L2 takes the smallest
  /// Euclidean distance, Cosine the largest cosine similarity; ties go to the smaller id. The
  /// codebook gets its gradient through the gather; the straight-through estimator to x is the
  /// caller's (x + stop_gradient(quantized - x)).
  std::pair<NodeId, NodeId> vector_quantize(NodeId x, NodeId codebook, VqMetric metric,
                                            Loc loc = Loc::current());
  /// Residual VQ: level l quantizes what levels < l left (x minus their codes) against
  /// codebooks[l]; returns the per-level indices and the reconstruction (the sum of the codes).
  std::pair<std::vector<NodeId>, NodeId> residual_vq(NodeId x, std::span<const NodeId> codebooks,
                                                     VqMetric metric, Loc loc = Loc::current());
  /// LoRA: x [m, k], w [k, n], a [k, r], b [r, n] -> x w + scale (x a) b, as three matmuls that
  /// never form a b (shape must be [m, n] of x's dtype).
  NodeId lora_matmul(NodeId x, NodeId w, NodeId a, NodeId b, float scale, Shape shape,
                     Loc loc = Loc::current());

  // ---- Spectral and signal processing (src/builders/spectral.cpp). Primitives: fft (last
  // axis; f32/f64 in the 2N real-block layout [re..., im...], c64 interleaved), lfilter,
  // conjugate, complex_norm_sq; the rest are composites of them and core ops. Real signals are
  // f32 or f64 with a static last axis; spectra come back as (re, im) pairs of that dtype.
  // FftNorm: Backward is unnormalized both ways, Forward scales the inverse by 1/N (numpy's
  // default), Ortho both by 1/sqrt(N).
  /// One second-order section (b, a) = ([b0, b1, b2], [a0, a1, a2]), scipy's sos row.
  using SosSection = std::pair<std::array<float, 3>, std::array<float, 3>>;
  /// 1-D FFT along the last axis, unnormalized (FftNorm::Backward).
  NodeId fft(NodeId x, bool inverse, Loc loc = Loc::current());
  /// 1-D FFT along the last axis with a normalization mode.
  NodeId fft_norm(NodeId x, bool inverse, FftNorm norm, Loc loc = Loc::current());
  /// 1-D FFT along `axis` (transpose, fft, transpose back); f32/f64 only along the last axis.
  NodeId fft_axis(NodeId x, int64_t axis, bool inverse, Loc loc = Loc::current());
  /// FFT along each of `axes` in ascending order (empty: x itself); f32/f64 only the last axis.
  NodeId fftn(NodeId x, std::vector<int64_t> axes, bool inverse, Loc loc = Loc::current());
  /// fftn(x, axes, true).
  NodeId ifftn(NodeId x, std::vector<int64_t> axes, Loc loc = Loc::current());
  /// Zero-pad the last axis to the next power of two (x itself when it already is one).
  NodeId pad_last_axis_to_pow2(NodeId x, Loc loc = Loc::current());
  /// A 2N real-block spectrum [.., 2N] split into (re, im), each [.., N].
  std::pair<NodeId, NodeId> split_spectrum(NodeId spectrum, Loc loc = Loc::current());
  /// Full spectrum (re, im) of a real signal zero-padded to a power of two.
  std::pair<NodeId, NodeId> fft_real(NodeId x, FftNorm norm, Loc loc = Loc::current());
  /// fft_real; leading axes are independent batch rows.
  std::pair<NodeId, NodeId> fft_batch_real(NodeId x, FftNorm norm, Loc loc = Loc::current());
  /// Half spectrum (n_pad/2 + 1 bins) of a real signal zero-padded to n_pad = a power of two.
  std::pair<NodeId, NodeId> rfft(NodeId x, FftNorm norm, Loc loc = Loc::current());
  /// Half spectrum (n/2 + 1 bins) of the n-point real DFT (no padding; x's last axis is n).
  std::pair<NodeId, NodeId> rfft_exact(NodeId x, int64_t n, FftNorm norm, Loc loc = Loc::current());
  /// sqrt(re^2 + im^2) of rfft_exact.
  NodeId rfft_exact_mag(NodeId x, int64_t n, FftNorm norm, Loc loc = Loc::current());
  /// numpy's irfft(re + i im, n): the n-point real inverse from bins 0..n/2 (more bins are
  /// ignored, fewer are zero-padded); the imaginary parts of DC and Nyquist do not matter.
  NodeId irfft(NodeId re_half, NodeId im_half, int64_t n, FftNorm norm, Loc loc = Loc::current());
  /// [.., T] -> [frames, .., 2 * half]: each frame of frame_len samples every hop, rfft'd (padded
  /// to a power of two), re block then im block. frames = 1 + (T - frame_len) / hop.
  NodeId stft(NodeId x, int64_t frame_len, int64_t hop, FftNorm norm, Loc loc = Loc::current());
  /// Full linear convolution [.., len a + len b - 1] through rfft, product, irfft of length
  /// n_fft, or the next power of two >= len a + len b - 1 when n_fft is smaller.
  NodeId fft_conv1d(NodeId a, NodeId b, int64_t n_fft, FftNorm norm, Loc loc = Loc::current());
  /// numpy.fft.fftfreq(n) as an f64 constant [n].
  NodeId fftfreq_tensor(int64_t n, Loc loc = Loc::current());
  /// numpy.fft.rfftfreq(n) as an f64 constant [n/2 + 1].
  NodeId rfftfreq_tensor(int64_t n, Loc loc = Loc::current());
  /// (re^2 + im^2) / N, N = the length of the last axis.
  NodeId psd(NodeId re, NodeId im, Loc loc = Loc::current());
  /// psd of rfft(x, norm).
  NodeId psd_real(NodeId x, FftNorm norm, Loc loc = Loc::current());
  /// Real part of the inverse FFT of re + i im along the last axis.
  NodeId ifft_spectrum(NodeId re, NodeId im, FftNorm norm, Loc loc = Loc::current());
  /// One radix-2 decimation-in-time stage on a 2N real-block state [.., 2 n_fft] (see
  /// docs/spectral.md): stage 0 first permutes the state by `rev`; gate [n_fft/2] turns each
  /// butterfly on (1) or passes its two values through (0); tw_re/tw_im [n_fft/2] are the
  /// twiddles exp(-2 pi i k / n_fft).
  NodeId fft_butterfly_stage(NodeId state, NodeId gate, NodeId rev, NodeId tw_re, NodeId tw_im,
                             uint32_t stage, uint32_t n_fft, Loc loc = Loc::current());
  /// Whisper-style log-mel: log10(max(filters @ |X[0 .. n_fft/2]|^2, 1e-10)) of a block
  /// spectrum [.., 2 n_fft] with filters [n_mels, n_fft/2 + 1]; -> [.., n_mels].
  NodeId log_mel(NodeId spectrum, NodeId filters, Loc loc = Loc::current());
  /// Indices (f32) of the k largest bins of the power |X[0 .. n_fft/2]|^2 averaged over
  /// n_segments consecutive rows: [batch * n_segments, 2 n_fft] -> [batch, k], largest first.
  NodeId welch_peaks(NodeId spectrum, int64_t k, int64_t n_segments, Loc loc = Loc::current());
  /// Windowed short-time spectrum [.., T] -> [frames, .., next_pow2(frame_len)/2 + 1]: |X|^2
  /// (power) or |X|, then log(. + 1e-8) when `log`.
  NodeId spectrogram(NodeId x, int64_t frame_len, int64_t hop, WindowKind window, bool power,
                     bool log, Loc loc = Loc::current());
  /// Unnormalized power |X|^2 of rfft(x) summed over the bins whose frequency k * sample_rate /
  /// n_pad lies in each [lo, hi]: [.., T] -> [.., bands].
  NodeId band_power(NodeId x, float sample_rate, std::span<const std::pair<float, float>> bands,
                    Loc loc = Loc::current());
  /// 0.5 * log(2 pi e * band_power + 1e-8).
  NodeId differential_entropy(NodeId x, float sample_rate,
                              std::span<const std::pair<float, float>> bands,
                              Loc loc = Loc::current());
  /// Analytic signal of the last axis (scipy.signal.hilbert): (x, H(x)).
  std::pair<NodeId, NodeId> hilbert(NodeId x, Loc loc = Loc::current());
  /// |x + i H(x)|.
  NodeId envelope(NodeId x, Loc loc = Loc::current());
  /// atan2(H(x), x) as 2 atan(H / (sqrt(x^2 + H^2) + x)).
  NodeId instantaneous_phase(NodeId x, Loc loc = Loc::current());
  /// scipy.signal.lfilter(b, a, x[, zi]) along the last axis (the primitive).
  NodeId lfilter(NodeId x, NodeId b, NodeId a, std::optional<NodeId> zi = std::nullopt,
                 Loc loc = Loc::current());
  /// scipy.signal.filtfilt(taps, [1], x): odd extension by 3 len(taps) samples, steady-state
  /// initial conditions, forward and backward passes.
  NodeId fir_filtfilt(NodeId x, std::span<const float> taps, Loc loc = Loc::current());
  /// One biquad section along the last axis (lfilter with b, a; normalized by a0).
  NodeId biquad(NodeId x, std::array<float, 3> b, std::array<float, 3> a, Loc loc = Loc::current());
  /// scipy.signal.sosfilt: the sections in series, zero initial state.
  NodeId sosfilt(NodeId x, std::span<const SosSection> sections, Loc loc = Loc::current());
  /// scipy.signal.sosfiltfilt (odd extension, steady-state initial conditions).
  NodeId sosfiltfilt(NodeId x, std::span<const SosSection> sections, Loc loc = Loc::current());
  /// scipy.signal.resample_poly(x, up, down, window=taps) along the last axis:
  /// ceil(T * up / down) samples.
  NodeId resample_poly(NodeId x, int64_t up, int64_t down, std::span<const float> taps,
                       Loc loc = Loc::current());
  /// Complex conjugate of a c64 tensor.
  NodeId conjugate(NodeId z, Loc loc = Loc::current());
  /// |z|^2 of a c64 tensor, as f32.
  NodeId complex_norm_sq(NodeId z, Loc loc = Loc::current());

  // ---- Recurrent cells (src/builders/recurrent.cpp): PyTorch's gates (lstm i, f, g, o; gru
  // r, z, n with n = tanh(W_in x + b_in + r * (W_hn h + b_hn)); rnn tanh or relu). Weights of
  // all layers and directions are packed flat in (layer, direction) order: w_ih holds each
  // weight_ih_l{l}[_reverse] [G*H, in_l] row-major, w_hh each [G*H, H], bias each [G*H]
  // (lstm and rnn: b_ih + b_hh; gru keeps b_ih and b_hh apart); any operand shape with that
  // many elements is accepted. x is [batch, seq, input]; h0/c0 are [L*D, batch, hidden]. `shape`
  // (the output [batch, seq, D*hidden]) is checked against the inferred one. The node has one
  // output, so the carry forms compute y ++ hn [++ cn] flattened into one 1-D node and return
  // narrow views of it (RLX's custom_fn_multi convention).
  /// Multi-layer (optionally bidirectional) LSTM, zero initial state: y.
  NodeId lstm(NodeId x, NodeId w_ih, NodeId w_hh, NodeId bias, int64_t hidden_size,
              int64_t num_layers, bool bidirectional, Shape shape, Loc loc = Loc::current());
  /// LSTM from (h0, c0) for decode: y, a view of the node that also holds hn and cn (use
  /// recurrent_states to reach them).
  NodeId lstm_carry(NodeId x, NodeId w_ih, NodeId w_hh, NodeId bias, NodeId h0, NodeId c0,
                    int64_t hidden_size, int64_t num_layers, bool bidirectional, Shape shape,
                    Loc loc = Loc::current());
  /// Multi-layer (optionally bidirectional) GRU from h0 (zeros when absent): y.
  NodeId gru(NodeId x, NodeId w_ih, NodeId w_hh, NodeId b_ih, NodeId b_hh, std::optional<NodeId> h0,
             int64_t hidden_size, int64_t num_layers, bool bidirectional, Shape shape,
             Loc loc = Loc::current());
  /// Multi-layer (optionally bidirectional) Elman RNN, tanh (or relu) activation: y.
  NodeId rnn(NodeId x, NodeId w_ih, NodeId w_hh, NodeId bias, std::optional<NodeId> h0,
             int64_t hidden_size, int64_t num_layers, bool bidirectional, bool relu, Shape shape,
             Loc loc = Loc::current());
  /// Any recurrent kind (lstm, gru, rnn) with its final states: `operands` are x, the weights
  /// and optionally the initial states (ops.def order); attrs.carry is set here. y is [B, S,
  /// D*H] ([S, B, D*H] when !attrs.batch_first), hn and cn [L*D, B, H] (cn: lstm only).
  RecurrentOutputs recurrent_states(OpKind kind, std::vector<NodeId> operands, RecurrentAttrs attrs,
                                    Loc loc = Loc::current());

  // ---- State-space scans and linear attention (src/builders/ssm.cpp; RLX's names, argument
  // order and explicit shapes, checked like matmul's). f32 or f64, every operand of one dtype;
  // the state starts at zero unless given. No skip term, no softplus of the step size and no
  // normalisation of q/k happen inside: the caller composes them (as Mamba's and Qwen3-Next's
  // reference code does around its scan kernel).
  /// Mamba S6 selective scan. x [B,S,H], delta [B,S,H], a [H,N], b [B,S,N], c [B,S,N]
  /// (state_size = N) -> y [B,S,H]; for each batch, channel h and state n, over t = 0..S-1:
  ///   state[n] = exp(delta[t,h] * a[h,n]) * state[n] + delta[t,h] * b[t,n] * x[t,h]
  ///   y[t,h]   = sum_n c[t,n] * state[n]
  /// (the Mamba paper's zero-order-hold A_bar = exp(delta A) with the Euler B_bar x = delta B x).
  NodeId selective_scan(NodeId x, NodeId delta, NodeId a, NodeId b, NodeId c, int64_t state_size,
                        Shape shape, Loc loc = Loc::current());
  /// Mamba-2 (SSD) scan with a scalar decay per head. x [B,S,H,P] (head_dim = P), dt [B,S,H],
  /// a [H], b and c [B,S,G,N] (G groups shared by H/G consecutive heads each, Mamba-2's
  /// ngroups: head h reads group h / (H/G)) or [B,S,N] (one group), state_size = N ->
  /// y [B,S,H,P]; per batch and head a state [P,N]:
  ///   state = exp(dt[t,h] * a[h]) * state + dt[t,h] * outer(x[t,h,:], b[t,g,:])
  ///   y[t,h,:] = state . c[t,g,:]
  NodeId mamba2(NodeId x, NodeId dt, NodeId a, NodeId b, NodeId c, int64_t head_dim,
                int64_t state_size, Shape shape, Loc loc = Loc::current());
  /// Gated DeltaNet (Yang et al., as in Qwen3-Next and flash-linear-attention's recurrent
  /// form). q, k, v [B,S,H,N] (state_size = N), g [B,S,H] a log-decay (alpha_t = exp(g_t), so
  /// g <= 0 decays), beta [B,S,H] -> o [B,S,H,N]. Per batch and head a state S [N,N] stored
  /// key-major (S[i,j]: key i, value j; fla/Qwen3-Next's [.., K, V] cache layout), zero at the
  /// start:
  ///   S = exp(g_t) * S;  u = beta_t * (v_t - S^T k_t);  S = S + outer(k_t, u);  o_t = S^T q_t
  /// i.e. with M = S^T (values x keys): M_t = exp(g_t) M_{t-1} (I - beta_t k_t k_t^T)
  /// + beta_t v_t k_t^T, o_t = M_t q_t. The caller scales q and l2-normalizes q and k.
  NodeId gated_delta_net(NodeId q, NodeId k, NodeId v, NodeId g, NodeId beta, int64_t state_size,
                         Shape shape, Loc loc = Loc::current());
  /// gated_delta_net from an initial state [B,H,N,N] (layout as above), for decoding: one
  /// gated_delta_net node with carry_state whose output [B, S+N, H, N] packs o (rows 0..S-1)
  /// and the final state transposed to [B,N,H,N] (rows S..S+N-1); the result holds narrow (and
  /// transpose) views of it. `shape` is o's shape [B,S,H,N].
  GatedDeltaNetCarry gated_delta_net_carry(NodeId q, NodeId k, NodeId v, NodeId g, NodeId beta,
                                           NodeId state, int64_t state_size, Shape shape,
                                           Loc loc = Loc::current());

  // ---- 3-D Gaussian splatting (src/builders/splat.cpp; the contract is docs/splatting.md).
  /// The RGBA image [H, W, 4] of the scene (prepare then rasterize in one op).
  NodeId gaussian_splat_render(GaussianSplatInputs inputs, GaussianSplatRenderParams params,
                               Loc loc = Loc::current());
  /// The 23-float meta vector (camera, background, size and derived intrinsics) as a constant.
  NodeId gaussian_splat_render_meta(std::array<float, 3> camera_position,
                                    std::array<float, 3> camera_target,
                                    std::array<float, 3> camera_up, float fov_y_degrees, float near,
                                    float far, std::array<float, 3> background,
                                    GaussianSplatRenderParams params, Loc loc = Loc::current());
  /// Stage 1: projection, culling, tile binning and depth sort, packed in one f32 buffer.
  NodeId gaussian_splat_prepare(GaussianSplatInputs inputs, GaussianSplatRenderParams params,
                                Loc loc = Loc::current());
  /// Stage 2: the image from prepare's buffer and the meta vector.
  NodeId gaussian_splat_rasterize(NodeId prep, NodeId meta, GaussianSplatRenderParams params,
                                  Loc loc = Loc::current());
  /// prepare then rasterize as two nodes (equal to gaussian_splat_render).
  NodeId gaussian_splat_render_decomposed(GaussianSplatInputs inputs,
                                          GaussianSplatRenderParams params,
                                          Loc loc = Loc::current());
  /// The gradient of sum(d_loss_rgba * render) w.r.t. the six scene inputs, packed flat in
  /// operand order (means, log_scales, rotations, opacity_logits, colors_dc, sh_rest).
  NodeId gaussian_splat_render_backward(GaussianSplatInputs inputs, NodeId d_loss_rgba,
                                        GaussianSplatBackwardParams params,
                                        Loc loc = Loc::current());

  // ---- Sub-graphs (src/builders/control.cpp)
  /// User-defined sub-graph with optional override AD rules (jax's custom_vjp / custom_jvp): a
  /// custom_fn node computing fwd_body on `inputs`. fwd_body has one Input per operand (matched
  /// in id order; dtypes and ranks equal, static sizes equal, its symbols unify with the
  /// operands' dims), no Params and one output, whose shape (symbols substituted) is the node's.
  /// vjp_body: Inputs = the primal inputs (id order) plus "primal_output" and "d_output";
  /// outputs = one cotangent per primal input. jvp_body: the primal inputs plus "tangent_0" ..
  /// "tangent_{n-1}" and optionally "primal_output"; one output (the tangent). Without a body,
  /// autodiff differentiates fwd_body inlined. rlx::Error naming custom_fn, the shapes and the
  /// caller's line when a body does not fit.
  NodeId custom_fn(std::vector<NodeId> inputs, Graph fwd_body,
                   std::optional<Graph> vjp_body = std::nullopt,
                   std::optional<Graph> jvp_body = std::nullopt, Loc loc = Loc::current());
  /// Multi-output custom_fn (RLX's concat-with-narrow design): fwd_body's K outputs are
  /// flattened and concatenated into one 1-D output of a custom_fn node; the handle's
  /// output(g, i) narrows and reshapes output i back. All outputs must be f32 with static shapes
  /// (an rlx::Error naming custom_fn_multi, the output and its shape otherwise).
  MultiOutputHandle custom_fn_multi(std::vector<NodeId> inputs, Graph fwd_body,
                                    Loc loc = Loc::current());

  // ---- Registered extension ops (src/ops/custom.cpp; rlx/custom_op.hpp registers them)
  /// A custom node running the op registered as `name` (rlx::register_op) on `inputs`; its
  /// shape is the registered rule's on the operands' shapes and `attrs`, opaque bytes handed
  /// verbatim to the rule, the kernel and the derivative hooks. rlx::Error naming the op and
  /// the caller's line when `name` is not registered, the input count is not the registered
  /// one, or the rule rejects the operands.
  NodeId custom_op(std::string name, std::vector<uint8_t> attrs, std::vector<NodeId> inputs,
                   Loc loc = Loc::current());
  /// custom_op with the caller's static out_shape instead of the registered rule: ops with
  /// several logical outputs packed end to end in one buffer, read back with narrow. The op
  /// must still be registered (its input count is checked, its kernel and hooks are used).
  NodeId custom_op_packed(std::string name, std::vector<uint8_t> attrs, std::vector<NodeId> inputs,
                          Shape out_shape, Loc loc = Loc::current());

  /// Bounded scan (jax.lax.scan): body runs `length` times on the carry, starting from init.
  /// body has one Input (the carry) and one output (the next carry), both of init's shape; the
  /// result is the final carry. rlx::Error naming scan, the shapes and the caller's line when
  /// the body does not fit or length < 1.
  NodeId scan(NodeId init, Graph body, uint32_t length, Loc loc = Loc::current());
  /// scan with per-step inputs: body's Inputs in id order are [carry, x_t_0, ...]; xs[i] is
  /// [length, *per_step_i] and step t sees xs[i][t].
  NodeId scan_with_xs(NodeId init, const std::vector<NodeId>& xs, Graph body, uint32_t length,
                      Loc loc = Loc::current());
  /// scan with broadcast and per-step inputs: body's Inputs are [carry, bcast..., x_t...]; each
  /// bcast is seen whole at every step.
  NodeId scan_with_bcasts_and_xs(NodeId init, const std::vector<NodeId>& bcasts,
                                 const std::vector<NodeId>& xs, Graph body, uint32_t length,
                                 Loc loc = Loc::current());
  /// scan returning the stacked trajectory [length, *init]: row t is the carry after step t + 1.
  NodeId scan_trajectory(NodeId init, Graph body, uint32_t length, Loc loc = Loc::current());
  /// scan whose backward keeps only num_checkpoints carries (1 <= K <= length) and recomputes
  /// the segments between them: the forward value is scan's.
  NodeId scan_checkpointed(NodeId init, Graph body, uint32_t length, uint32_t num_checkpoints,
                           Loc loc = Loc::current());
  /// d(init) of a scan (built by autodiff): trajectory is the forward's [length, *init] stack,
  /// upstream the cotangent of its result ([length, *init] when save_trajectory, else init's
  /// shape), xs its per-step inputs. body_vjp's Inputs are the body's ([carry, x_t...]) plus
  /// one named "d_output" (the carry's cotangent); its outputs [d carry, d x_t...].
  NodeId scan_backward(NodeId init, NodeId trajectory, NodeId upstream,
                       const std::vector<NodeId>& xs, Graph body_vjp, uint32_t length,
                       bool save_trajectory, Shape out_shape, Loc loc = Loc::current());
  /// The stacked d(xs[xs_idx]) ([length, *per_step]) of the same backward sweep.
  NodeId scan_backward_xs(NodeId init, NodeId trajectory, NodeId upstream,
                          const std::vector<NodeId>& xs, Graph body_vjp, uint32_t length,
                          bool save_trajectory, uint32_t xs_idx, Shape out_shape,
                          Loc loc = Loc::current());
  /// scan_backward with K checkpoints: when 0 < K < length, trajectory is [K, *init] (row j the
  /// carry after step floor((j + 1) * length / K)) and forward_body recomputes the rest.
  NodeId scan_backward_with_checkpoints(NodeId init, NodeId trajectory, NodeId upstream,
                                        const std::vector<NodeId>& xs, Graph body_vjp,
                                        uint32_t length, bool save_trajectory,
                                        uint32_t num_checkpoints, std::optional<Graph> forward_body,
                                        Shape out_shape, Loc loc = Loc::current());
  NodeId scan_backward_xs_with_checkpoints(NodeId init, NodeId trajectory, NodeId upstream,
                                           const std::vector<NodeId>& xs, Graph body_vjp,
                                           uint32_t length, bool save_trajectory, uint32_t xs_idx,
                                           uint32_t num_checkpoints,
                                           std::optional<Graph> forward_body, Shape out_shape,
                                           Loc loc = Loc::current());

  /// Deep structural equality: name, nodes (op, attributes, inputs, shape, label) and outputs.
  friend bool operator==(const Graph& a, const Graph& b) {
    return a.name == b.name && a.outputs == b.outputs && a.nodes_ == b.nodes_;
  }

private:
  /// Append a node built by a builder, after checking `declared` against the shape rule.
  NodeId build(Op op, std::vector<NodeId> inputs, const Shape& declared, const Loc& loc);
  /// The operands' shapes (into `shapes`) and the op's inferred output shape (nullopt: no rule
  /// or a dynamic dim it needs); rlx::Error naming the op and the caller's line on bad operands.
  std::optional<Shape> infer_operands(const Op& op, const std::vector<NodeId>& inputs,
                                      std::vector<Shape>& shapes, const Loc& loc) const;
  /// Append a node whose shape the op's rule infers (src/builders/graph_ext.cpp); an rlx::Error
  /// naming the op, the operand shapes and loc when they do not fit, or when a dynamic dim
  /// hides the result (then the caller must use the builder with an explicit shape).
  NodeId build_inferred(Op op, std::vector<NodeId> inputs, const Loc& loc);
  /// A constant of `dtype` with static `dims` holding `values` row-major (F16/BF16: an f32
  /// constant plus a cast). The caller has checked that the values fit.
  NodeId constant_values(DType dtype, std::vector<int64_t> dims, std::span<const double> values,
                         const Loc& loc);
  /// The last axis of x resampled to l_out by a constant matrix (interpolate1d/3d); `what`
  /// names the public builder in errors.
  NodeId resample_last(NodeId x, int64_t l_out, InterpMode mode, bool align_corners,
                       std::string_view what, const Loc& loc);
  /// Run a composite builder: when it throws, drop the nodes it appended, then rethrow.
  template <class F> auto transaction(F&& f) -> decltype(f()) {
    std::size_t mark = len();
    try {
      return f();
    } catch (...) {
      truncate(mark);
      throw;
    }
  }
  /// Drop the nodes from `mark` on (here or in the sink).
  void truncate(std::size_t mark);
  void check_id(NodeId id, std::string_view what) const;
  /// An rlx::Error naming `what` when the nodes live in a sink (they cannot be read as Nodes).
  void check_stored(std::string_view what) const;
  const Shape& sink_shape(NodeId id) const;

  std::vector<Node> nodes_;
  NodeSink* sink_ = nullptr; ///< where appended nodes go, when not to nodes_
};

/// What Graph::recurrent_states returns: the node computing y ++ hn [++ cn] flattened, and
/// views of each part in the graph that holds it.
struct RecurrentOutputs {
  NodeId packed;            ///< the recurrent node (1-D)
  NodeId y;                 ///< [B, S, D*H] (or [S, B, D*H])
  NodeId hn;                ///< [L*D, B, H]
  std::optional<NodeId> cn; ///< [L*D, B, H], lstm only
};

/// What gated_delta_net_carry returns: the outputs [B,S,H,N] and the final state [B,H,N,N],
/// views of `packed`, the one gated_delta_net node.
struct GatedDeltaNetCarry {
  NodeId output;
  NodeId state;
  NodeId packed;
};

/// What custom_fn_multi returns: the custom_fn node computing the outputs flattened and
/// concatenated, and where each output lies in it.
struct MultiOutputHandle {
  NodeId source;                 ///< the custom_fn node (a 1-D f32 value)
  std::vector<Shape> sub_shapes; ///< shape of each output
  std::vector<int64_t> offsets;  ///< where each output starts in source
  std::size_t len() const { return sub_shapes.size(); }
  /// Output i of the body: a narrow of source, reshaped, appended to g (the graph holding
  /// source); rlx::Error when i is out of range.
  NodeId output(Graph& g, std::size_t i, Loc loc = Loc::current()) const;
};

/// Whether CSE may merge, constant folding fold and DCE remove a node of `op`: the kPure trait,
/// or for a custom op its registration's `pure` (false when its name is not registered here).
bool is_pure(const Op& op);

/// The text IR (see docs/text_ir.md); parse(to_string(g)) == g.
std::ostream& operator<<(std::ostream& os, const Graph& g);

} // namespace rlx::ir
