// src/builders/hir.cpp -- HirModule: blocks checked as they are added, printed, and lowered to MIR.
#include "rlx/ir/hir.hpp"

#include "rlx/ir/module.hpp"

#include <sstream>

namespace rlx::ir {

std::ostream& operator<<(std::ostream& os, HirNodeId id) { return os << 'h' << id.index; }

namespace {

template <class... Fs> struct Overload : Fs... {
  using Fs::operator()...;
};
template <class... Fs> Overload(Fs...) -> Overload<Fs...>;

/// The residual norms' MIR: fused under Direct, add chain then the norm under Fusable.
NodeId lower_residual_norm(Graph& g, std::span<const NodeId> in, bool has_bias, float eps,
                           OpKind norm, OpKind fused, FusionPolicy policy, const Loc& loc) {
  std::size_t gamma = has_bias ? 3 : 2;
  if (policy == FusionPolicy::Direct)
    return g.add_inferred(Op(fused, FusedResidualNormAttrs{has_bias, eps}), {in.begin(), in.end()},
                          loc);
  NodeId sum = g.add(in[0], in[1], loc);
  if (has_bias) sum = g.add(sum, in[2], loc);
  return g.add_inferred(Op(norm, NormAttrs{-1, eps}), {sum, in[gamma], in[gamma + 1]}, loc);
}

/// The MIR attention op on (q, k, v, [mask]).
NodeId lower_attention(Graph& g, std::vector<NodeId> operands, int64_t num_heads, int64_t head_dim,
                       MaskKind mask, const Loc& loc) {
  AttentionAttrs a;
  a.num_heads = num_heads;
  a.head_dim = head_dim;
  a.mask = mask.type;
  a.window = mask.window;
  return g.add_inferred(Op(OpKind::Attention, a), std::move(operands), loc);
}

/// act(x @ w [+ bias]): fused_matmul_bias_act under Direct when there is a bias.
NodeId lower_linear(Graph& g, NodeId x, NodeId w, std::optional<NodeId> bias,
                    std::optional<Activation> act, FusionPolicy policy, const Loc& loc) {
  if (policy == FusionPolicy::Direct && bias)
    return g.add_inferred(Op(OpKind::FusedMatMulBiasAct, FusedMatMulAttrs{act}), {x, w, *bias},
                          loc);
  return g.linear_bias_act(x, w, bias, act, loc);
}

NodeId lower_attention_block(Graph& g, const hir::AttentionBlock& b, std::span<const NodeId> in,
                             FusionPolicy policy, const Loc& loc) {
  std::size_t next = 3;
  std::optional<NodeId> qkv_b, out_b, cos, sin, mask;
  if (b.has_qkv_bias) qkv_b = in[next++];
  if (b.has_out_bias) out_b = in[next++];
  if (b.has_rope) {
    cos = in[next++];
    sin = in[next++];
  }
  if (next < in.size()) mask = in[next];
  NodeId qkv = lower_linear(g, in[0], in[1], qkv_b, std::nullopt, policy, loc);
  int64_t width = b.num_heads * b.head_dim, axis = int64_t(g.shape(qkv).rank()) - 1;
  NodeId q = g.narrow_(qkv, axis, 0, width, loc), k = g.narrow_(qkv, axis, width, width, loc),
         v = g.narrow_(qkv, axis, 2 * width, width, loc);
  if (b.has_rope) {
    int64_t rot = b.n_rot == 0 ? b.head_dim : b.n_rot;
    q = g.rope_n(q, *cos, *sin, b.head_dim, rot, loc);
    k = g.rope_n(k, *cos, *sin, b.head_dim, rot, loc);
  }
  std::vector<NodeId> qkv_in{q, k, v};
  if (mask) qkv_in.push_back(*mask);
  NodeId ctx = lower_attention(g, std::move(qkv_in), b.num_heads, b.head_dim, b.mask, loc);
  return lower_linear(g, ctx, in[2], out_b, std::nullopt, policy, loc);
}

/// kv [.., KV*hd] -> [.., H*hd] with kv head j repeated for query heads j*g .. j*g+g-1: narrows
/// and one concat, so dynamic batch and sequence dims need no reshape.
NodeId repeat_kv_heads(Graph& g, NodeId kv, int64_t num_heads, int64_t num_kv_heads,
                       int64_t head_dim, const Loc& loc) {
  if (num_kv_heads == num_heads) return kv;
  int64_t axis = int64_t(g.shape(kv).rank()) - 1, group = num_heads / num_kv_heads;
  std::vector<NodeId> heads;
  for (int64_t j = 0; j < num_kv_heads; ++j) {
    NodeId head = g.narrow_(kv, axis, j * head_dim, head_dim, loc);
    for (int64_t r = 0; r < group; ++r) heads.push_back(head);
  }
  return g.concat_(std::move(heads), axis, loc);
}

NodeId lower_llama_block(Graph& g, const hir::LlamaDecoderBlock& b, std::span<const NodeId> in,
                         const Loc& loc) {
  NodeId x = in[0];
  const Shape& xs = g.shape(x);
  if (xs.rank() == 0 || !xs.dims().back().is_static())
    fail(ErrorKind::Shape, "llama_decoder_block: needs a static hidden size, got ", short_str(xs),
         rlx::detail::at_loc(loc));
  int64_t hidden = xs.dims().back().size();
  NodeId zero = g.expand(g.constant(0.0, xs.dtype(), loc), {hidden}, loc); // rms norms' beta
  NodeId h = g.rms_norm(x, in[1], zero, b.eps, loc);
  int64_t rot = b.head_dim;
  NodeId q = g.rope_n(g.mm(h, in[2], loc), in[10], in[11], b.head_dim, rot, loc);
  NodeId k = g.rope_n(g.mm(h, in[3], loc), in[10], in[11], b.head_dim, rot, loc);
  NodeId v = g.mm(h, in[4], loc);
  k = repeat_kv_heads(g, k, b.num_heads, b.num_kv_heads, b.head_dim, loc);
  v = repeat_kv_heads(g, v, b.num_heads, b.num_kv_heads, b.head_dim, loc);
  std::vector<NodeId> qkv{q, k, v};
  if (in.size() > 12) qkv.push_back(in[12]);
  NodeId ctx = lower_attention(g, std::move(qkv), b.num_heads, b.head_dim, b.mask, loc);
  NodeId h1 = g.add(x, g.mm(ctx, in[5], loc), loc);
  NodeId f = g.swiglu_ffn(g.rms_norm(h1, in[6], zero, b.eps, loc), in[7], in[8], in[9], loc);
  return g.add(h1, f, loc);
}

} // namespace

std::string hir_op_name(const HirOp& op) {
  return std::visit(
      Overload{
          [](const hir::Input&) -> std::string { return "input"; },
          [](const hir::Param&) -> std::string { return "param"; },
          [](const hir::Constant&) -> std::string { return "constant"; },
          [](const hir::Linear&) -> std::string { return "linear"; },
          [](const hir::SharedLinearPair&) -> std::string { return "shared_linear_pair"; },
          [](const hir::SwiGLU&) -> std::string { return "swiglu"; },
          [](const hir::LayerNorm&) -> std::string { return "layer_norm"; },
          [](const hir::RmsNorm&) -> std::string { return "rms_norm"; },
          [](const hir::ResidualLayerNorm&) -> std::string { return "residual_layer_norm"; },
          [](const hir::ResidualRmsNorm&) -> std::string { return "residual_rms_norm"; },
          [](const hir::Attention&) -> std::string { return "attention"; },
          [](const hir::Rope&) -> std::string { return "rope"; },
          [](const hir::AttentionBlock&) -> std::string { return "attention_block"; },
          [](const hir::LlamaDecoderBlock&) -> std::string { return "llama_decoder_block"; },
          [](const hir::Mir& m) { return "mir:" + std::string(m.op.name()); },
      },
      op);
}

NodeId lower_hir_node(Graph& g, const HirNode& node, std::span<const NodeId> in,
                      FusionPolicy policy) {
  const Loc& loc = node.loc;
  std::vector<NodeId> operands(in.begin(), in.end());
  return std::visit(
      Overload{
          [&](const hir::Input& x) { return g.input(x.name, x.shape, loc); },
          [&](const hir::Param& x) { return g.param(x.name, x.shape, loc); },
          [&](const hir::Constant& x) { return g.constant(x.value, x.dtype, loc); },
          [&](const hir::Linear& x) {
            std::optional<NodeId> bias;
            if (x.has_bias) bias = in[2];
            return lower_linear(g, in[0], in[1], bias, x.activation, policy, loc);
          },
          [&](const hir::SharedLinearPair& x) { return g.mm(in[0], in[1 + x.slot], loc); },
          [&](const hir::SwiGLU&) { return g.swiglu_ffn(in[0], in[1], in[2], in[3], loc); },
          [&](const hir::LayerNorm& x) {
            return g.add_inferred(Op(OpKind::LayerNorm, NormAttrs{-1, x.eps}), std::move(operands),
                                  loc);
          },
          [&](const hir::RmsNorm& x) { return g.rms_norm(in[0], in[1], in[2], x.eps, loc); },
          [&](const hir::ResidualLayerNorm& x) {
            return lower_residual_norm(g, in, x.has_bias, x.eps, OpKind::LayerNorm,
                                       OpKind::FusedResidualLN, policy, loc);
          },
          [&](const hir::ResidualRmsNorm& x) {
            return lower_residual_norm(g, in, x.has_bias, x.eps, OpKind::RmsNorm,
                                       OpKind::FusedResidualRmsNorm, policy, loc);
          },
          [&](const hir::Attention& x) {
            return lower_attention(g, std::move(operands), x.num_heads, x.head_dim, x.mask, loc);
          },
          [&](const hir::Rope& x) {
            return g.rope_n(in[0], in[1], in[2], x.head_dim, x.n_rot, loc);
          },
          [&](const hir::AttentionBlock& x) {
            return lower_attention_block(g, x, in, policy, loc);
          },
          [&](const hir::LlamaDecoderBlock& x) { return lower_llama_block(g, x, in, loc); },
          [&](const hir::Mir& x) { return g.add_inferred(x.op, std::move(operands), loc); },
      },
      node.op);
}

// ---- HirModule

HirModule::HirModule(std::string n, FusionPolicy policy)
    : name(std::move(n)), fusion_policy(policy), check_(name) {}

const HirNode& HirModule::node(HirNodeId id) const {
  if (id.index >= nodes_.size())
    fail(ErrorKind::Value, "hir: block ", id, " is not in module @", name, " (it has ",
         nodes_.size(), " blocks)");
  return nodes_[id.index];
}

void HirModule::set_outputs(std::vector<HirNodeId> outs) {
  for (HirNodeId o : outs) node(o);
  outputs = std::move(outs);
}

HirNodeId HirModule::add(HirOp op, std::vector<HirNodeId> inputs, const Loc& loc) {
  std::vector<NodeId> operands;
  for (HirNodeId in : inputs) {
    if (in.index >= nodes_.size())
      fail(ErrorKind::Value, "hir ", hir_op_name(op), ": operand ", in, " is not in module @", name,
           " (it has ", nodes_.size(), " blocks)", rlx::detail::at_loc(loc));
    operands.push_back(check_ids_[in.index]);
  }
  HirNode n{HirNodeId(uint32_t(nodes_.size())), std::move(op), std::move(inputs), Shape(), loc};
  NodeId value = lower_hir_node(check_, n, operands, FusionPolicy::Fusable);
  n.shape = check_.shape(value);
  nodes_.push_back(std::move(n));
  check_ids_.push_back(value);
  return nodes_.back().id;
}

HirNodeId HirModule::input(std::string n, Shape shape, Loc loc) {
  return add(hir::Input{std::move(n), std::move(shape)}, {}, loc);
}
HirNodeId HirModule::param(std::string n, Shape shape, Loc loc) {
  return add(hir::Param{std::move(n), std::move(shape)}, {}, loc);
}
HirNodeId HirModule::constant(double value, DType dtype, Loc loc) {
  return add(hir::Constant{value, dtype}, {}, loc);
}
HirNodeId HirModule::linear(HirNodeId x, HirNodeId w, std::optional<HirNodeId> bias,
                            std::optional<Activation> activation, Loc loc) {
  std::vector<HirNodeId> in{x, w};
  if (bias) in.push_back(*bias);
  return add(hir::Linear{activation, bias.has_value()}, std::move(in), loc);
}
std::pair<HirNodeId, HirNodeId> HirModule::shared_linear_pair(HirNodeId x, HirNodeId w_first,
                                                              HirNodeId w_second, Loc loc) {
  HirNodeId first = add(hir::SharedLinearPair{0}, {x, w_first, w_second}, loc);
  return {first, add(hir::SharedLinearPair{1}, {x, w_first, w_second}, loc)};
}
HirNodeId HirModule::swiglu(HirNodeId x, HirNodeId up_w, HirNodeId gate_w, HirNodeId down_w,
                            Loc loc) {
  return add(hir::SwiGLU{}, {x, up_w, gate_w, down_w}, loc);
}
HirNodeId HirModule::layer_norm(HirNodeId x, HirNodeId gamma, HirNodeId beta, float eps, Loc loc) {
  return add(hir::LayerNorm{eps}, {x, gamma, beta}, loc);
}
HirNodeId HirModule::rms_norm(HirNodeId x, HirNodeId gamma, HirNodeId beta, float eps, Loc loc) {
  return add(hir::RmsNorm{eps}, {x, gamma, beta}, loc);
}

namespace {
std::vector<HirNodeId> residual_operands(HirNodeId x, HirNodeId residual,
                                         std::optional<HirNodeId> bias, HirNodeId gamma,
                                         HirNodeId beta) {
  std::vector<HirNodeId> in{x, residual};
  if (bias) in.push_back(*bias);
  in.push_back(gamma);
  in.push_back(beta);
  return in;
}
} // namespace

HirNodeId HirModule::residual_layer_norm(HirNodeId x, HirNodeId residual,
                                         std::optional<HirNodeId> bias, HirNodeId gamma,
                                         HirNodeId beta, float eps, Loc loc) {
  return add(hir::ResidualLayerNorm{eps, bias.has_value()},
             residual_operands(x, residual, bias, gamma, beta), loc);
}
HirNodeId HirModule::residual_rms_norm(HirNodeId x, HirNodeId residual,
                                       std::optional<HirNodeId> bias, HirNodeId gamma,
                                       HirNodeId beta, float eps, Loc loc) {
  return add(hir::ResidualRmsNorm{eps, bias.has_value()},
             residual_operands(x, residual, bias, gamma, beta), loc);
}
HirNodeId HirModule::attention(HirNodeId q, HirNodeId k, HirNodeId v, std::optional<HirNodeId> mask,
                               int64_t num_heads, int64_t head_dim, MaskKind mask_kind, Loc loc) {
  std::vector<HirNodeId> in{q, k, v};
  if (mask) in.push_back(*mask);
  return add(hir::Attention{num_heads, head_dim, mask_kind}, std::move(in), loc);
}
HirNodeId HirModule::rope(HirNodeId x, HirNodeId cos, HirNodeId sin, int64_t head_dim,
                          int64_t n_rot, Loc loc) {
  return add(hir::Rope{head_dim, n_rot}, {x, cos, sin}, loc);
}
namespace {
/// Whether a mask kind reads a mask operand (custom, bias) or synthesizes its mask.
bool mask_is_operand(MaskKind k) { return k.type == MaskType::Custom || k.type == MaskType::Bias; }

void check_mask_operand(const char* block, MaskKind kind, bool has_mask, const Loc& loc) {
  if (mask_is_operand(kind) != has_mask)
    fail(ErrorKind::Value, "hir ", block, ": mask kind ", enum_name(kind.type),
         has_mask ? " makes its own mask, but a mask operand was given"
                  : " needs a mask operand (custom: [batch, key_len] validity; bias: additive)",
         rlx::detail::at_loc(loc));
}
} // namespace

HirNodeId HirModule::attention_block(HirNodeId hidden, HirNodeId qkv_w, HirNodeId out_w,
                                     int64_t num_heads, int64_t head_dim,
                                     const AttentionBlockOptions& o, Loc loc) {
  check_mask_operand("attention_block", o.mask_kind, o.mask.has_value(), loc);
  std::vector<HirNodeId> in{hidden, qkv_w, out_w};
  if (o.qkv_bias) in.push_back(*o.qkv_bias);
  if (o.out_bias) in.push_back(*o.out_bias);
  if (o.rope) {
    in.push_back(o.rope->first);
    in.push_back(o.rope->second);
  }
  if (o.mask) in.push_back(*o.mask);
  return add(hir::AttentionBlock{num_heads, head_dim, o.mask_kind, o.qkv_bias.has_value(),
                                 o.out_bias.has_value(), o.rope.has_value(), o.n_rot},
             std::move(in), loc);
}

HirNodeId HirModule::llama_decoder_block(HirNodeId x, const LlamaWeights& w, int64_t num_heads,
                                         int64_t head_dim, int64_t num_kv_heads, float eps,
                                         MaskKind mask, Loc loc) {
  check_mask_operand("llama_decoder_block", mask, w.mask.has_value(), loc);
  if (num_kv_heads < 1 || num_heads < 1 || num_heads % num_kv_heads)
    fail(ErrorKind::Value, "hir llama_decoder_block: num_heads ", num_heads,
         " must be a positive multiple of num_kv_heads ", num_kv_heads, rlx::detail::at_loc(loc));
  std::vector<HirNodeId> in{x,          w.attn_norm, w.wq,   w.wk,   w.wv,  w.wo,
                            w.ffn_norm, w.up,        w.gate, w.down, w.cos, w.sin};
  if (w.mask) in.push_back(*w.mask);
  return add(hir::LlamaDecoderBlock{num_heads, head_dim, num_kv_heads, eps, mask}, std::move(in),
             loc);
}

HirNodeId HirModule::mir(Op op, std::vector<HirNodeId> inputs, Loc loc) {
  return add(hir::Mir{std::move(op)}, std::move(inputs), loc);
}

namespace {
/// The attributes a block prints after its operands.
std::string hir_attrs(const HirOp& op) {
  std::ostringstream os;
  std::visit(Overload{
                 [&](const hir::Input& x) { os << '"' << x.name << '"'; },
                 [&](const hir::Param& x) { os << '"' << x.name << '"'; },
                 [&](const hir::Constant& x) { os << x.value; },
                 [&](const hir::Linear& x) {
                   if (x.activation) os << "act=" << op_name(to_op_kind(*x.activation));
                 },
                 [&](const hir::SharedLinearPair& x) { os << "slot=" << x.slot; },
                 [&](const hir::SwiGLU&) {},
                 [&](const hir::LayerNorm& x) { os << "eps=" << x.eps; },
                 [&](const hir::RmsNorm& x) { os << "eps=" << x.eps; },
                 [&](const hir::ResidualLayerNorm& x) { os << "eps=" << x.eps; },
                 [&](const hir::ResidualRmsNorm& x) { os << "eps=" << x.eps; },
                 [&](const hir::Attention& x) {
                   os << "h=" << x.num_heads << ", d=" << x.head_dim;
                   if (x.mask.type != MaskType::None) os << ", mask=" << enum_name(x.mask.type);
                   if (x.mask.window) os << ", window=" << x.mask.window;
                 },
                 [&](const hir::Rope& x) { os << "d=" << x.head_dim << ", n_rot=" << x.n_rot; },
                 [&](const hir::AttentionBlock& x) {
                   os << "h=" << x.num_heads << ", d=" << x.head_dim;
                   if (x.mask.type != MaskType::None) os << ", mask=" << enum_name(x.mask.type);
                   if (x.mask.window) os << ", window=" << x.mask.window;
                   if (x.has_rope) os << ", rope";
                 },
                 [&](const hir::LlamaDecoderBlock& x) {
                   os << "h=" << x.num_heads << ", kv=" << x.num_kv_heads << ", d=" << x.head_dim
                      << ", eps=" << x.eps << ", mask=" << enum_name(x.mask.type);
                 },
                 [&](const hir::Mir& x) { os << x.op; },
             },
             op);
  return os.str();
}
} // namespace

std::string HirModule::to_string() const {
  std::ostringstream os;
  os << "hir @" << name << " (" << (fusion_policy == FusionPolicy::Direct ? "direct" : "fusable")
     << ") {\n";
  for (const HirNode& n : nodes_) {
    os << "  " << n.id << " = " << hir_op_name(n.op) << "(";
    std::string sep;
    for (HirNodeId in : n.inputs) {
      os << sep << in;
      sep = ", ";
    }
    std::string attrs = hir_attrs(n.op);
    if (!attrs.empty()) os << sep << attrs;
    os << ") : " << ir::to_string(n.shape) << "\n";
  }
  os << "  return";
  for (std::size_t i = 0; i < outputs.size(); ++i) os << (i ? ", " : " ") << outputs[i];
  os << "\n}\n";
  return os.str();
}

// ---- HIR -> MIR

Graph Graph::from_hir(const HirModule& hir) {
  if (hir.outputs.empty())
    fail(ErrorKind::Value, "from_hir: module @", hir.name,
         " has no outputs (return one from Graph::define's build, or set_outputs)");
  Graph g(hir.name);
  std::vector<NodeId> value;
  value.reserve(hir.len());
  for (const HirNode& n : hir.nodes()) {
    std::vector<NodeId> operands;
    for (HirNodeId in : n.inputs) operands.push_back(value[in.index]);
    value.push_back(lower_hir_node(g, n, operands, hir.fusion_policy));
  }
  std::vector<NodeId> outs;
  for (HirNodeId o : hir.outputs) outs.push_back(value[o.index]);
  g.set_outputs(std::move(outs));
  return g;
}

} // namespace rlx::ir
