// jit/recurrent_step.cpp -- lstm, gru and rnn for the JIT (semantics: the interpreter's kernel,
// src/interp/recurrent.cpp; layout: src/ops/recurrent.hpp). Per layer and direction one GEMM
// computes the input projections of every step (bias fused), then each step is a GEMM
// h[B, H] x W_hh^T[H, G*H] (the transpose made once per call so the GEMM streams it row by row)
// followed by one loop over the gates. f32 gates use a polynomial exp the compiler vectorizes
// (compiled for AVX2+FMA, which every host running the GEMM has); f64 uses std::exp.
#include "recurrent.hpp"

#include "gemm.hpp"
#include "ops/recurrent.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <vector>

namespace rlx::jit {

namespace {

/// e^x for f32 (relative error about 2e-7 against the correctly rounded result): x = n ln2 + r,
/// |r| <= ln2 / 2, e^r by its Taylor polynomial of degree 7, 2^n by the exponent bits. Inputs
/// are clamped to [-87, 88] (the gates only need e^x up to saturation).
inline float exp_f32(float x) {
  x = std::min(std::max(x, -87.0f), 88.0f);
  const float t = x * 1.44269504088896341f;
  const float n = float(int(t + (t >= 0 ? 0.5f : -0.5f)));
  const float r = (x - n * 0.693145751953125f) - n * 1.428606765330187045e-06f;
  float p = 1.0f / 5040;
  p = p * r + 1.0f / 720;
  p = p * r + 1.0f / 120;
  p = p * r + 1.0f / 24;
  p = p * r + 1.0f / 6;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  return p * std::bit_cast<float>((int(n) + 127) << 23);
}

inline float sigmoid_of(float v) { return 1.0f / (1.0f + exp_f32(-v)); }
inline float tanh_of(float v) { return 2.0f / (1.0f + exp_f32(-2.0f * v)) - 1.0f; }
inline double sigmoid_of(double v) { return 1.0 / (1.0 + std::exp(-v)); }
inline double tanh_of(double v) { return std::tanh(v); }

enum class Cell { Lstm, Gru, RnnTanh, RnnRelu };

/// One step's gates for every batch row: pre [B rows at pre_row(b)] holds W_ih x + bias, rec
/// [B, G*H] holds W_hh h (+ b_hh for gru); h, c [B, H] are updated, y rows written.
template <class T> struct GateArgs {
  Cell cell;
  int64_t batch, hidden;
  const T* pre;
  int64_t pre_ld; ///< elements between consecutive batch rows of pre
  const T* rec;   ///< [B, G*H]
  T* h;           ///< [B, H]
  T* c;           ///< [B, H] (lstm)
  T* y;           ///< batch row b at y + b * y_ld
  int64_t y_ld;
};

template <class T> inline void gates_body(const GateArgs<T>& a) {
  const int64_t H = a.hidden;
  const int64_t G = a.cell == Cell::Lstm ? 4 : a.cell == Cell::Gru ? 3 : 1;
  for (int64_t b = 0; b < a.batch; ++b) {
    const T* p = a.pre + b * a.pre_ld;
    const T* q = a.rec + b * G * H;
    T* h = a.h + b * H;
    T* c = a.c + b * H;
    T* y = a.y + b * a.y_ld;
    switch (a.cell) {
    case Cell::Lstm:
      for (int64_t j = 0; j < H; ++j) {
        T i = sigmoid_of(p[j] + q[j]), f = sigmoid_of(p[H + j] + q[H + j]);
        T g = tanh_of(p[2 * H + j] + q[2 * H + j]), o = sigmoid_of(p[3 * H + j] + q[3 * H + j]);
        T cj = f * c[j] + i * g;
        c[j] = cj;
        T hj = o * tanh_of(cj);
        h[j] = hj;
        y[j] = hj;
      }
      break;
    case Cell::Gru:
      for (int64_t j = 0; j < H; ++j) {
        T r = sigmoid_of(p[j] + q[j]), z = sigmoid_of(p[H + j] + q[H + j]);
        T nv = tanh_of(p[2 * H + j] + r * q[2 * H + j]);
        T hj = nv + z * (h[j] - nv);
        h[j] = hj;
        y[j] = hj;
      }
      break;
    case Cell::RnnTanh:
      for (int64_t j = 0; j < H; ++j) {
        T hj = tanh_of(p[j] + q[j]);
        h[j] = hj;
        y[j] = hj;
      }
      break;
    case Cell::RnnRelu:
      for (int64_t j = 0; j < H; ++j) {
        T hj = std::max(p[j] + q[j], T(0));
        h[j] = hj;
        y[j] = hj;
      }
      break;
    }
  }
}

[[gnu::target("avx2,fma")]] void gates_avx2(const GateArgs<float>& a) { gates_body(a); }
void gates(const GateArgs<float>& a) { gates_avx2(a); }
void gates(const GateArgs<double>& a) { gates_body(a); }

void gemm_call(const GemmCallT<float>& c) { sgemm(c); }
void gemm_call(const GemmCallT<double>& c) { dgemm(c); }

template <class T> class RecurrentCall final : public LibraryCall {
public:
  RecurrentCall(const ir::Node& n, const ops::RecurrentLayout& l, std::size_t operands)
      : kind_(n.op.kind()), attrs_(n.op.attrs<ir::RecurrentAttrs>()), l_(l), operands_(operands) {
    if (kind_ == ir::OpKind::Lstm)
      cell_ = Cell::Lstm;
    else if (kind_ == ir::OpKind::Gru)
      cell_ = Cell::Gru;
    else
      cell_ = attrs_.relu ? Cell::RnnRelu : Cell::RnnTanh;
  }

  void run(const std::byte* const* reads, std::byte* out_bytes) const override {
    const int64_t B = l_.batch, S = l_.seq, H = l_.hidden, D = l_.dirs, GH = l_.gates * H;
    const std::size_t first_state = ops::recurrent_weight_operands(kind_);
    const bool has_init = operands_ > first_state;
    auto in = [&](std::size_t i) { return reinterpret_cast<const T*>(reads[i]); };
    const T *x = in(0), *w_ih = in(1), *w_hh = in(2), *bias = in(3);
    const T* b_hh = kind_ == ir::OpKind::Gru ? in(4) : nullptr;
    const T* h0 = has_init ? in(first_state) : nullptr;
    const T* c0 = has_init && kind_ == ir::OpKind::Lstm ? in(first_state + 1) : nullptr;
    T* out = reinterpret_cast<T*>(out_bytes);
    // Rows of the sequence tensors: (b, t) at b * S + t (batch first) or t * B + b.
    const bool bf = l_.batch_first;
    const int64_t batch_ld = bf ? S : 1, time_ld = bf ? 1 : B;

    std::vector<T> xp(std::size_t(B * S * GH)), rec(std::size_t(B * GH)), u_t(std::size_t(H * GH)),
        h(std::size_t(B * H)), c(std::size_t(B * H));
    std::vector<T> layer_a, layer_b;
    const T* layer_in = x;
    T* hn = out + l_.y_numel();
    T* cn = hn + l_.state_numel();
    for (int64_t l = 0; l < l_.layers; ++l) {
      const int64_t in_l = l_.in_size(l);
      const bool last = l + 1 == l_.layers;
      T* layer_out = out;
      if (!last) {
        std::vector<T>& buf = l % 2 == 0 ? layer_a : layer_b;
        buf.resize(std::size_t(B * S * D * H));
        layer_out = buf.data();
      }
      for (int64_t d = 0; d < D; ++d) {
        const int64_t blk = l_.block(l, d);
        const T* W = w_ih + l_.w_ih_offset(l, d);
        const T* U = w_hh + l_.w_hh_offset(l, d);
        // xp [B*S, G*H] = layer_in [B*S, in_l] W^T + bias, rows in the tensors' order.
        GemmCallT<T> proj;
        proj.m = B * S, proj.n = GH, proj.k = in_l;
        proj.a = {layer_in, in_l, 1};
        proj.b = {W, 1, in_l};
        proj.c = xp.data();
        proj.bias = bias + l_.bias_offset(l, d);
        gemm_call(proj);
        for (int64_t k = 0; k < H; ++k)
          for (int64_t r = 0; r < GH; ++r) u_t[std::size_t(k * GH + r)] = U[r * H + k];
        for (int64_t i = 0; i < B * H; ++i) {
          h[std::size_t(i)] = h0 ? h0[blk * B * H + i] : T(0);
          c[std::size_t(i)] = c0 ? c0[blk * B * H + i] : T(0);
        }
        GemmCallT<T> step;
        step.m = B, step.n = GH, step.k = H;
        step.a = {h.data(), H, 1};
        step.b = {u_t.data(), GH, 1};
        step.c = rec.data();
        step.bias = b_hh ? b_hh + l_.bias_offset(l, d) : nullptr;
        for (int64_t s = 0; s < S; ++s) {
          const int64_t t = d == 0 ? s : S - 1 - s;
          gemm_call(step);
          GateArgs<T> g{cell_,
                        B,
                        H,
                        xp.data() + t * time_ld * GH,
                        batch_ld * GH,
                        rec.data(),
                        h.data(),
                        c.data(),
                        layer_out + t * time_ld * D * H + d * H,
                        batch_ld * D * H};
          gates(g);
        }
        if (attrs_.carry) {
          std::copy(h.begin(), h.end(), hn + blk * B * H);
          if (kind_ == ir::OpKind::Lstm) std::copy(c.begin(), c.end(), cn + blk * B * H);
        }
      }
      layer_in = layer_out;
    }
  }

private:
  ir::OpKind kind_;
  ir::RecurrentAttrs attrs_;
  ops::RecurrentLayout l_;
  std::size_t operands_;
  Cell cell_ = Cell::Lstm;
};

} // namespace

bool recurrent_handles(const ir::Graph& g, const ir::Node& n) {
  if (ir::op_family(n.op.kind()) != ir::Family::Recurrent || !gemm_supported() ||
      !n.shape.is_static())
    return false;
  const ir::DType t = n.shape.dtype();
  if (t != ir::DType::F32 && t != ir::DType::F64) return false;
  std::vector<ir::Shape> shapes;
  for (ir::NodeId in : n.inputs) {
    const ir::Shape& s = g.shape(in);
    if (!s.is_static() || s.dtype() != t) return false;
    shapes.push_back(s);
  }
  try { // the shape rule validates the operands; the node's shape must be the rule's
    std::optional<ir::Shape> want = ir::infer_shape(n.op, shapes);
    return want && *want == n.shape;
  } catch (const Error&) {
    return false;
  }
}

std::unique_ptr<LibraryCall> recurrent_prepare(const ir::Graph& g, const ir::Node& n) {
  ops::RecurrentLayout l = ops::recurrent_layout(n.op, g.shape(n.inputs[0]));
  if (n.shape.dtype() == ir::DType::F64)
    return std::make_unique<RecurrentCall<double>>(n, l, n.inputs.size());
  return std::make_unique<RecurrentCall<float>>(n, l, n.inputs.size());
}

} // namespace rlx::jit
