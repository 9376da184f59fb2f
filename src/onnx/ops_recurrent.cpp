// src/onnx/ops_recurrent.cpp -- ONNX LSTM, GRU and RNN. With the default attributes (default
// activations, no clip, no peepholes, GRU linear_before_reset=1, every sequence full length) a
// node maps onto rlx's lstm/gru/rnn op: ONNX's gates (LSTM i, o, f, c; GRU z, r, h) are
// reordered to PyTorch's (i, f, g, o; r, z, n) by slices and a concat of W, R and B, and a
// reverse-only node runs forward on the flipped sequence. Otherwise the recurrence is unrolled
// from primitive nodes (matmuls, the named activations, clip as clamp, peepholes, GRU's
// linear_before_reset=0, LSTM's input_forget (f = 1 - i, as onnxruntime couples the gates),
// sequence_lens as a mask and, for the reverse direction, a
// per-sequence flip). Y is [seq, D, batch, H] (layout=1: [batch, seq, D, H]), Y_h and Y_c
// [D, batch, H] (layout=1: [batch, D, H]).
#include "importer.hpp"

#include <algorithm>
#include <cctype>

namespace rlx::onnx::detail {

using ir::NodeId;
using ir::Op;
using ir::OpKind;

namespace {

enum class Cell { Lstm, Gru, Rnn };

/// Steps (sequence length times directions) the unrolled path builds at most.
constexpr int64_t kMaxUnrolledSteps = 1 << 16;

struct Act {
  std::string name;
  float alpha = 0, beta = 0;
};

struct Spec {
  Cell cell = Cell::Rnn;
  int64_t gates = 1, hidden = 0, dirs = 1, seq = 0, batch = 0, input = 0;
  std::string direction = "forward";
  bool batch_first = false, has_clip = false, linear_before_reset = false;
  bool coupled = false; ///< LSTM's input_forget: f = 1 - i (the forget weights are unused)
  float clip = 0;
  std::vector<Act> acts; ///< per direction, the cell's functions in ONNX order (f, g[, h])
};

std::string lower(std::string s) {
  for (char& ch : s) ch = char(std::tolower(static_cast<unsigned char>(ch)));
  return s;
}

/// The activations per direction with their alpha/beta (consumed in order by the functions that
/// take them; ONNX's operator defaults otherwise).
std::vector<Act> activations(Ctx& c, const Spec& s, const std::vector<std::string>& defaults) {
  std::vector<std::string> names;
  if (const auto it = c.node.attrs.find("activations"); it != c.node.attrs.end()) {
    c.ignore("activations");
    if (it->second.kind != Attr::Kind::Strings)
      fail(ErrorKind::Parse, "attribute 'activations' has the wrong type");
    names = it->second.strings;
  }
  std::vector<float> alphas = c.attr_floats("activation_alpha");
  std::vector<float> betas = c.attr_floats("activation_beta");
  const std::size_t per = defaults.size(), want = per * std::size_t(s.dirs);
  if (names.empty())
    for (int64_t d = 0; d < s.dirs; ++d)
      names.insert(names.end(), defaults.begin(), defaults.end());
  if (names.size() != want)
    fail(ErrorKind::Value, "attribute 'activations' has ", names.size(), " functions; ",
         c.node.op_type, " with direction '", s.direction, "' takes ", want);
  std::size_t ia = 0, ib = 0;
  std::vector<Act> out;
  for (const std::string& raw : names) {
    Act a{lower(raw)};
    float da = 0, db = 0;
    bool takes_a = true, takes_b = false;
    if (a.name == "leakyrelu")
      da = 0.01f;
    else if (a.name == "thresholdedrelu" || a.name == "elu")
      da = 1.0f;
    else if (a.name == "hardsigmoid")
      da = 0.2f, db = 0.5f, takes_b = true;
    else if (a.name == "affine" || a.name == "scaledtanh")
      da = 1.0f, db = 0.0f, takes_b = true;
    else if (a.name == "sigmoid" || a.name == "tanh" || a.name == "relu" || a.name == "softsign" ||
             a.name == "softplus")
      takes_a = false;
    else
      c.unsupported(rlx::detail::cat("attribute 'activations' names '", raw,
                                     "', which rlx does not support for ", c.node.op_type));
    if (a.name == "scaledtanh") db = 1.0f;
    a.alpha = takes_a && ia < alphas.size() ? alphas[ia++] : da;
    a.beta = takes_b && ib < betas.size() ? betas[ib++] : db;
    out.push_back(a);
  }
  return out;
}

NodeId apply(Ctx& c, const Spec& s, const Act& a, NodeId x) {
  if (s.has_clip) x = c.g.clamp(x, -double(s.clip), double(s.clip));
  auto k = [&](double v) { return like(c, x, v); };
  const std::string& n = a.name;
  if (n == "sigmoid") return op1(c, OpKind::Sigmoid, x);
  if (n == "tanh") return op1(c, OpKind::Tanh, x);
  if (n == "relu") return op1(c, OpKind::Relu, x);
  if (n == "softsign") return op1(c, OpKind::Softsign, x);
  if (n == "softplus") return op1(c, OpKind::Softplus, x);
  if (n == "leakyrelu")
    return c.g.add_inferred(Op(OpKind::LeakyRelu, ir::LeakyReluAttrs{a.alpha}), {x});
  if (n == "elu") return c.g.add_inferred(Op(OpKind::Elu, ir::EluAttrs{a.alpha}), {x});
  if (n == "thresholdedrelu") return c.g.where_(op2(c, OpKind::Gt, x, k(a.alpha)), x, k(0));
  if (n == "hardsigmoid") return c.g.clamp(c.g.add(c.g.mul(x, k(a.alpha)), k(a.beta)), 0, 1);
  if (n == "affine") return c.g.add(c.g.mul(x, k(a.alpha)), k(a.beta));
  // scaledtanh
  return c.g.mul(op1(c, OpKind::Tanh, c.g.mul(x, k(a.beta))), k(a.alpha));
}

/// Rows [g*H, (g+1)*H) of a [G*H, ...] tensor, for each g of `order`, concatenated.
NodeId reorder(Ctx& c, NodeId w, int64_t h, std::initializer_list<int64_t> order) {
  std::vector<NodeId> parts;
  for (int64_t g : order) parts.push_back(c.g.narrow_(w, 0, g * h, h));
  return c.g.concat_(parts, 0);
}

/// Direction d's slice of a [D, ...] operand, without the D axis.
NodeId dir_of(Ctx& c, NodeId t, int64_t d) {
  std::vector<int64_t> dims = c.g.shape(t).sizes();
  dims.erase(dims.begin());
  return c.g.reshape_(c.g.narrow_(t, 0, d, 1), dims);
}

struct Inputs {
  NodeId x;                     ///< [S, B, I]
  NodeId w, r;                  ///< [D, G*H, I], [D, G*H, H]
  std::optional<NodeId> b;      ///< [D, 2*G*H]
  std::optional<NodeId> h0, c0; ///< [D, B, H]
  std::optional<NodeId> p;      ///< [D, 3*H]
  std::optional<NodeId> lens;   ///< [B] int: steps past a length masked (unrolled path)
};

/// One direction unrolled; x is [S, B, I] in processing order. Returns y [S, B, H] (in
/// processing order), the final h and c [B, H].
struct DirOut {
  NodeId y, h, c;
};
DirOut unroll(Ctx& c, const Spec& s, const Inputs& in, int64_t d, NodeId x) {
  ir::Graph& g = c.g;
  const int64_t H = s.hidden, G = s.gates, S = s.seq, B = s.batch;
  const Act* act = &s.acts[std::size_t(d) * (s.cell == Cell::Lstm  ? 3
                                             : s.cell == Cell::Gru ? 2
                                                                   : 1)];
  NodeId wt = g.transpose_(dir_of(c, in.w, d), {1, 0}); // [I, G*H]
  NodeId rt = g.transpose_(dir_of(c, in.r, d), {1, 0}); // [H, G*H]
  NodeId xw = g.mm(g.reshape_(x, {S * B, s.input}), wt);
  std::optional<NodeId> rb;
  if (in.b) {
    NodeId bd = dir_of(c, *in.b, d);
    xw = g.add(xw, g.narrow_(bd, 0, 0, G * H));
    rb = g.narrow_(bd, 0, G * H, G * H);
  }
  xw = g.reshape_(xw, {S, B, G * H});
  auto zeros = [&] { return g.expand(like(c, x, 0), {B, H}); };
  NodeId h = in.h0 ? dir_of(c, *in.h0, d) : zeros();
  NodeId cs = in.c0 ? dir_of(c, *in.c0, d) : zeros();
  std::optional<NodeId> pi, po, pf;
  if (in.p) {
    NodeId pd = dir_of(c, *in.p, d);
    pi = g.narrow_(pd, 0, 0, H), po = g.narrow_(pd, 0, H, H), pf = g.narrow_(pd, 0, 2 * H, H);
  }
  auto gate = [&](NodeId t, int64_t k) { return g.narrow_(t, 1, k * H, H); };
  std::vector<NodeId> ys;
  for (int64_t t = 0; t < S; ++t) {
    NodeId xt = g.reshape_(g.narrow_(xw, 0, t, 1), {B, G * H});
    NodeId hn, cn = cs;
    if (s.cell == Cell::Gru && !s.linear_before_reset) {
      NodeId rz = g.mm(h, g.narrow_(rt, 1, 0, 2 * H));
      if (rb) rz = g.add(rz, g.narrow_(*rb, 0, 0, 2 * H));
      NodeId z = apply(c, s, act[0], g.add(gate(xt, 0), gate(rz, 0)));
      NodeId r = apply(c, s, act[0], g.add(gate(xt, 1), gate(rz, 1)));
      NodeId hh = g.mm(g.mul(r, h), g.narrow_(rt, 1, 2 * H, H));
      if (rb) hh = g.add(hh, g.narrow_(*rb, 0, 2 * H, H));
      NodeId n = apply(c, s, act[1], g.add(gate(xt, 2), hh));
      hn = g.add(g.mul(g.sub(like(c, z, 1), z), n), g.mul(z, h));
    } else {
      NodeId hr = g.mm(h, rt);
      if (rb) hr = g.add(hr, *rb);
      if (s.cell == Cell::Rnn) {
        hn = apply(c, s, act[0], g.add(xt, hr));
      } else if (s.cell == Cell::Gru) {
        NodeId z = apply(c, s, act[0], g.add(gate(xt, 0), gate(hr, 0)));
        NodeId r = apply(c, s, act[0], g.add(gate(xt, 1), gate(hr, 1)));
        NodeId n = apply(c, s, act[1], g.add(gate(xt, 2), g.mul(r, gate(hr, 2))));
        hn = g.add(g.mul(g.sub(like(c, z, 1), z), n), g.mul(z, h));
      } else {
        NodeId pre = g.add(xt, hr);
        NodeId ip = gate(pre, 0), op = gate(pre, 1), fp = gate(pre, 2), gp = gate(pre, 3);
        if (pi) ip = g.add(ip, g.mul(*pi, cs));
        if (pf) fp = g.add(fp, g.mul(*pf, cs));
        NodeId i = apply(c, s, act[0], ip);
        NodeId f = s.coupled ? g.sub(like(c, i, 1), i) : apply(c, s, act[0], fp);
        NodeId gg = apply(c, s, act[1], gp);
        cn = g.add(g.mul(f, cs), g.mul(i, gg));
        if (po) op = g.add(op, g.mul(*po, cn));
        NodeId o = apply(c, s, act[0], op);
        hn = g.mul(o, apply(c, s, act[2], cn));
      }
    }
    NodeId yt = hn;
    if (in.lens) { // steps past a sequence's length keep its state and output zeros
      NodeId live =
          g.reshape_(g.lt(g.constant(double(t), g.shape(*in.lens).dtype()), *in.lens), {B, 1});
      yt = g.where_(live, hn, like(c, hn, 0));
      hn = g.where_(live, hn, h);
      cn = g.where_(live, cn, cs);
    }
    h = hn, cs = cn;
    ys.push_back(g.reshape_(yt, {1, B, H}));
  }
  return {g.concat_(ys, 0), h, cs};
}

/// v [S, B, K] reversed along the sequence; with sequence_lens, each sequence b within its
/// length only (step t < len_b reads len_b - 1 - t, later steps stay), as a gather of the
/// [B * S, K] rows. Its own inverse.
NodeId flip(Ctx& c, const Inputs& in, int64_t S, int64_t B, NodeId v) {
  ir::Graph& g = c.g;
  if (!in.lens) return g.reverse(v, {0});
  const int64_t K = g.shape(v).sizes()[2];
  std::vector<double> steps(static_cast<std::size_t>(S)), rows(static_cast<std::size_t>(B));
  for (int64_t t = 0; t < S; ++t) steps[std::size_t(t)] = double(t);
  for (int64_t b = 0; b < B; ++b) rows[std::size_t(b)] = double(b * S);
  NodeId t = c.constant(
      Buffer::from_f64(ir::Shape::of(std::vector<int64_t>{S, 1}, ir::DType::I64), steps));
  NodeId base =
      c.constant(Buffer::from_f64(ir::Shape::of(std::vector<int64_t>{1, B}, ir::DType::I64), rows));
  // A length past S (known only at run time) reads as S, so every index stays in range.
  NodeId len = g.clamp(g.reshape_(g.cast(*in.lens, ir::DType::I64), {1, B}), 0, double(S));
  NodeId back = g.sub(g.sub(len, g.constant(1.0, ir::DType::I64)), t); // [S, B]
  NodeId idx = g.add(base, g.where_(g.lt(t, len), back, t));
  NodeId flat = g.reshape_(g.transpose_(v, {1, 0, 2}), {B * S, K});
  return g.gather_(flat, idx, 0); // [S, B, K]
}

/// Whether the node fits rlx's lstm/gru/rnn op.
bool fits_op(const Spec& s, const Inputs& in, const std::vector<std::string>& defaults) {
  if (s.has_clip || s.coupled || in.p || in.lens) return false;
  if (s.cell == Cell::Gru && !s.linear_before_reset) return false;
  for (std::size_t k = 0; k < s.acts.size(); ++k) {
    const std::string& def = defaults[k % defaults.size()];
    if (s.acts[k].name != def && !(s.cell == Cell::Rnn && s.acts[k].name == "relu")) return false;
  }
  if (s.cell == Cell::Rnn && s.dirs == 2 && s.acts[0].name != s.acts[1].name) return false;
  return true;
}

void recurrent(Ctx& c, Cell cell) {
  ir::Graph& g = c.g;
  Spec s;
  s.cell = cell;
  s.gates = cell == Cell::Lstm ? 4 : cell == Cell::Gru ? 3 : 1;
  s.direction = c.attr_s("direction", "forward");
  if (s.direction != "forward" && s.direction != "reverse" && s.direction != "bidirectional")
    fail(ErrorKind::Value, "attribute 'direction' is '", s.direction,
         "'; ONNX allows forward, reverse or bidirectional");
  s.dirs = s.direction == "bidirectional" ? 2 : 1;
  s.batch_first = c.attr_i("layout", 0) == 1;
  if (c.has_attr("clip")) s.has_clip = true, s.clip = c.attr_f("clip", 0);
  if (cell == Cell::Gru) s.linear_before_reset = c.attr_i("linear_before_reset", 0) != 0;
  if (cell == Cell::Lstm) s.coupled = c.attr_i("input_forget", 0) != 0;
  const std::vector<std::string> defaults =
      cell == Cell::Lstm  ? std::vector<std::string>{"sigmoid", "tanh", "tanh"}
      : cell == Cell::Gru ? std::vector<std::string>{"sigmoid", "tanh"}
                          : std::vector<std::string>{"tanh"};
  s.acts = activations(c, s, defaults);

  Inputs in;
  in.x = c.in(0), in.w = c.in(1), in.r = c.in(2);
  if (c.rank(0) != 3) fail(ErrorKind::Shape, "X must be rank 3, got ", ir::short_str(c.shape(0)));
  std::vector<int64_t> xs = c.sizes(0), ws = c.sizes(1);
  if (s.batch_first) in.x = g.transpose_(in.x, {1, 0, 2});
  s.seq = s.batch_first ? xs[1] : xs[0];
  s.batch = s.batch_first ? xs[0] : xs[1];
  s.input = xs[2];
  if (ws.size() != 3 || ws[0] != s.dirs || ws[1] % s.gates != 0 || ws[2] != s.input)
    fail(ErrorKind::Shape, "W ", ir::short_str(c.shape(1)), " does not fit X ",
         ir::short_str(c.shape(0)), " with ", s.dirs, " direction(s) and ", s.gates, " gate(s)");
  s.hidden = ws[1] / s.gates;
  int64_t attr_hidden = c.attr_i("hidden_size", s.hidden);
  if (attr_hidden != s.hidden)
    fail(ErrorKind::Shape, "attribute 'hidden_size' is ", attr_hidden, " but W ",
         ir::short_str(c.shape(1)), " holds ", s.hidden);
  const int64_t H = s.hidden, D = s.dirs, B = s.batch, S = s.seq;
  auto check = [&](std::size_t i, std::vector<int64_t> want, const char* what) {
    if (c.sizes(i) != want)
      fail(ErrorKind::Shape, what, " is ", ir::short_str(c.shape(i)), "; expected ",
           ir::short_str(ir::Shape::of(want, c.dtype(0))));
  };
  check(2, {D, s.gates * H, H}, "R");
  if (c.has(3)) check(3, {D, 2 * s.gates * H}, "B"), in.b = c.in(3);
  auto state = [&](std::size_t i, const char* what) -> std::optional<NodeId> {
    if (!c.has(i)) return std::nullopt;
    NodeId v = c.in(i);
    if (s.batch_first) {
      check(i, {B, D, H}, what);
      return g.transpose_(v, {1, 0, 2});
    }
    check(i, {D, B, H}, what);
    return v;
  };
  in.h0 = state(5, "initial_h");
  if (cell == Cell::Lstm) {
    in.c0 = state(6, "initial_c");
    if (c.has(7)) check(7, {D, 3 * H}, "P"), in.p = c.in(7);
  }
  if (c.has(4)) {
    std::optional<Buffer> lv = c.value(4);
    bool full = false;
    if (lv) {
      std::vector<int64_t> lens = to_ints(*lv);
      if (int64_t(lens.size()) != B)
        fail(ErrorKind::Shape, "sequence_lens has ", lens.size(), " values for batch ", B);
      full = std::all_of(lens.begin(), lens.end(), [&](int64_t l) { return l == S; });
      for (int64_t l : lens)
        if (l < 0 || l > S)
          fail(ErrorKind::Value, "sequence_lens holds ", l, " outside [0, ", S, "]");
    }
    if (!full) in.lens = c.in(4);
  }

  NodeId y;                 // [S, D, B, H]
  NodeId yh;                // [D, B, H]
  std::optional<NodeId> yc; // lstm
  if (fits_op(s, in, defaults)) {
    // PyTorch's gate order from ONNX's.
    const std::initializer_list<int64_t> order =
        cell == Cell::Lstm  ? std::initializer_list<int64_t>{0, 2, 3, 1}
        : cell == Cell::Gru ? std::initializer_list<int64_t>{1, 0, 2}
                            : std::initializer_list<int64_t>{0};
    std::vector<NodeId> wih, whh, b1, b2;
    for (int64_t d = 0; d < D; ++d) {
      wih.push_back(g.reshape_(reorder(c, dir_of(c, in.w, d), H, order), {-1}));
      whh.push_back(g.reshape_(reorder(c, dir_of(c, in.r, d), H, order), {-1}));
      if (in.b) {
        NodeId bd = dir_of(c, *in.b, d);
        NodeId wb = reorder(c, g.narrow_(bd, 0, 0, s.gates * H), H, order);
        NodeId rb = reorder(c, g.narrow_(bd, 0, s.gates * H, s.gates * H), H, order);
        if (cell == Cell::Gru)
          b1.push_back(wb), b2.push_back(rb);
        else
          b1.push_back(g.add(wb, rb));
      } else {
        NodeId z = g.expand(like(c, in.x, 0), {s.gates * H});
        b1.push_back(z);
        if (cell == Cell::Gru) b2.push_back(z);
      }
    }
    auto cat = [&](std::vector<NodeId> v) { return v.size() == 1 ? v[0] : g.concat_(v, 0); };
    NodeId x = s.direction == "reverse" ? g.reverse(in.x, {0}) : in.x;
    std::vector<NodeId> ops = {x, cat(wih), cat(whh), cat(b1)};
    if (cell == Cell::Gru) ops.push_back(cat(b2));
    if (in.h0 || in.c0) {
      auto zeros = [&] { return g.expand(like(c, in.x, 0), {D, B, H}); };
      ops.push_back(in.h0 ? *in.h0 : zeros());
      if (cell == Cell::Lstm) ops.push_back(in.c0 ? *in.c0 : zeros());
    }
    ir::RecurrentAttrs ra;
    ra.hidden_size = H;
    ra.num_layers = 1;
    ra.bidirectional = D == 2;
    ra.batch_first = false;
    ra.relu = cell == Cell::Rnn && s.acts[0].name == "relu";
    const OpKind kind = cell == Cell::Lstm  ? OpKind::Lstm
                        : cell == Cell::Gru ? OpKind::Gru
                                            : OpKind::Rnn;
    ir::RecurrentOutputs r = g.recurrent_states(kind, ops, ra);
    NodeId ys = r.y;
    if (s.direction == "reverse") ys = g.reverse(ys, {0});
    y = g.transpose_(g.reshape_(ys, {S, B, D, H}), {0, 2, 1, 3});
    yh = r.hn;
    if (r.cn) yc = *r.cn;
  } else {
    // Each step adds ~20 nodes: bound what a file can make the importer build.
    if (S * D > kMaxUnrolledSteps)
      c.unsupported(rlx::detail::cat(
          "sequence length ", S, " with ", D,
          " direction(s) needs the unrolled recurrence (non-default activations, clip, "
          "peepholes, linear_before_reset=0 or sequence_lens), which rlx builds for at most ",
          kMaxUnrolledSteps, " steps"));
    std::vector<NodeId> ydirs, hs, cs;
    for (int64_t d = 0; d < D; ++d) {
      bool rev = s.direction == "reverse" || d == 1;
      NodeId x = rev ? flip(c, in, S, B, in.x) : in.x;
      DirOut o = unroll(c, s, in, d, x);
      NodeId yd = rev ? flip(c, in, S, B, o.y) : o.y;
      ydirs.push_back(g.reshape_(yd, {S, 1, B, H}));
      hs.push_back(g.reshape_(o.h, {1, B, H}));
      cs.push_back(g.reshape_(o.c, {1, B, H}));
    }
    auto cat = [&](std::vector<NodeId> v, int64_t axis) {
      return v.size() == 1 ? v[0] : g.concat_(v, axis);
    };
    y = cat(ydirs, 1), yh = cat(hs, 0);
    if (cell == Cell::Lstm) yc = cat(cs, 0);
  }
  if (s.batch_first) {
    c.out(0, g.transpose_(y, {2, 0, 1, 3}));
    c.out(1, g.transpose_(yh, {1, 0, 2}));
    if (yc) c.out(2, g.transpose_(*yc, {1, 0, 2}));
  } else {
    c.out(0, y);
    c.out(1, yh);
    if (yc) c.out(2, *yc);
  }
}

void lstm(Ctx& c) { recurrent(c, Cell::Lstm); }
void gru(Ctx& c) { recurrent(c, Cell::Gru); }
void rnn(Ctx& c) { recurrent(c, Cell::Rnn); }

} // namespace

void add_recurrent_rules(Rules& r) {
  r["LSTM"] = {lstm, 7};
  r["GRU"] = {gru, 7};
  r["RNN"] = {rnn, 7};
}

} // namespace rlx::onnx::detail
