// src/onnx/ops_control.cpp -- ONNX Scan (opsets 8 to 16) and Loop with a trip count known at
// load time, on rlx's scan op. The ONNX body is imported as a graph of its own (Ctx::body); the
// scan body wraps it: its one carry packs the states and the step's scan outputs (each flattened,
// of one dtype, concatenated), the outer values the body reads become bcast operands and the
// per-step slices xs (Loop's iteration counter an iota). The trajectory's rows give the scan
// outputs, its last row the final states. Scan's input and output axes and directions are
// transposes and reverses around the scan; opset 8's batch axis runs one scan per batch row.
// A Loop's condition must be provably true at every iteration (absent, or the body's condition
// output known true whenever its input is); otherwise the node is refused. A Loop whose body
// needs the counter at load time (a Slice bound, say) or whose condition depends on it is
// unrolled instead, each iteration imported with the counter known.
#include "importer.hpp"

#include "ops/control.hpp"

#include <numeric>

namespace rlx::onnx::detail {

using ir::DType;
using ir::NodeId;
using ir::Op;
using ir::OpKind;
using ir::Shape;

namespace {

/// Steps of one scan at most (rlx's length is 32-bit).
constexpr int64_t kMaxLength = int64_t(1) << 30;
/// Iterations an unrolled Loop builds at most.
constexpr int64_t kMaxUnrolled = 4096;
/// Batch rows of an opset-8 Scan at most (one scan each).
constexpr int64_t kMaxBatch = 1024;

Shape drop_leading(const Shape& s) {
  return Shape(std::vector<ir::Dim>(s.dims().begin() + 1, s.dims().end()), s.dtype());
}

std::vector<int64_t> with_lead(std::vector<int64_t> lead, const std::vector<int64_t>& rest) {
  lead.insert(lead.end(), rest.begin(), rest.end());
  return lead;
}

/// The nodes of `body` its outputs need, copied into g with its Inputs bound by `bind` (Input
/// index in body -> id in g). Returns the outputs' ids in g.
std::vector<NodeId> inline_body(ir::Graph& g, const ir::Graph& body,
                                const std::map<uint32_t, NodeId>& bind) {
  auto bound = [&](const ir::Node& n) {
    auto it = bind.find(n.id.index);
    RLX_CHECK(it != bind.end(), "inline_body: an unbound Input");
    return it->second;
  };
  auto append = [&](const Op& op, std::vector<NodeId> ins, Shape shape) {
    return g.append_node(op, std::move(ins), std::move(shape), std::nullopt);
  };
  return ir::detail::inline_graph(body, bound, {}, append);
}

/// Whether anything in `body` reads Input `id`.
bool reads(const ir::Graph& body, NodeId id) {
  for (NodeId o : body.outputs)
    if (o == id) return true;
  for (const ir::Node& n : body.nodes())
    for (NodeId in : n.inputs)
      if (in == id) return true;
  return false;
}

/// Whether every value of `dt` is exact in f64 (so tensors of mixed dtypes can share an f64 carry).
bool exact_in_f64(DType dt) {
  switch (dt) {
  case DType::F64:
  case DType::F32:
  case DType::F16:
  case DType::BF16:
  case DType::I32:
  case DType::I16:
  case DType::I8:
  case DType::U8:
  case DType::U32:
  case DType::Bool:
    return true;
  default:
    return false;
  }
}

/// Static tensors packed into one flat carry of one dtype: part i at [offsets[i], + numel).
struct Packing {
  DType dtype = DType::F32;
  std::vector<Shape> parts;
  std::vector<int64_t> offsets;
  int64_t total = 0;

  explicit Packing(Ctx& c, std::vector<Shape> shapes) : parts(std::move(shapes)) {
    bool same = std::all_of(parts.begin(), parts.end(),
                            [&](const Shape& s) { return s.dtype() == parts[0].dtype(); });
    bool exact = std::all_of(parts.begin(), parts.end(),
                             [](const Shape& s) { return exact_in_f64(s.dtype()); });
    if (!same && !exact) {
      std::string list;
      for (const Shape& s : parts) list += (list.empty() ? "" : ", ") + ir::short_str(s);
      c.unsupported(rlx::detail::cat(
          "the states and scan outputs (", list,
          ") have dtypes no single carry holds exactly; rlx's scan carries one tensor"));
    }
    dtype = same ? parts[0].dtype() : DType::F64;
    for (const Shape& s : parts) {
      int64_t n = *s.num_elements();
      if (n == 0) c.unsupported("a state or scan output with no elements");
      offsets.push_back(total);
      total += n;
    }
  }

  NodeId pack(ir::Graph& g, const std::vector<NodeId>& values) const {
    std::vector<NodeId> flat;
    for (std::size_t i = 0; i < values.size(); ++i) {
      NodeId v = values[i];
      if (g.shape(v).dtype() != dtype) v = g.cast(v, dtype);
      flat.push_back(g.reshape_(v, {*parts[i].num_elements()}));
    }
    return flat.size() == 1 ? flat[0] : g.concat_(flat, 0);
  }

  /// Part i of a carry with leading dims `lead` ([total] or [rows, total]).
  NodeId unpack(ir::Graph& g, NodeId carry, std::size_t i, std::vector<int64_t> lead) const {
    int64_t axis = int64_t(lead.size());
    NodeId v = g.narrow_(carry, axis, offsets[i], *parts[i].num_elements());
    v = g.reshape_(v, with_lead(std::move(lead), parts[i].sizes()));
    return parts[i].dtype() == dtype ? v : g.cast(v, parts[i].dtype());
  }
};

/// What a body formal receives in the scan body: a state, a per-step slice, or true (Loop's
/// condition, proved true at every iteration).
struct Role {
  enum Kind { State, Step, True } kind;
  std::size_t index = 0;
};

/// An ONNX recurrence ready for rlx's scan: the imported body with the roles of its formals,
/// its outputs [skip..., states..., scan outputs...], the outer initial states and xs
/// ([length, ...], forward along axis 0).
struct Recurrence {
  const Body* body = nullptr;
  std::vector<Role> roles;
  std::size_t skip_out = 0;
  std::vector<NodeId> states, xs;
  int64_t length = 0;
};

/// The final states and the scan outputs stacked [length, ...] along axis 0.
struct Results {
  std::vector<NodeId> finals, stacked;
};

Results run_recurrence(Ctx& c, const Recurrence& r) {
  const Body& b = *r.body;
  const std::size_t n = r.states.size();
  if (b.outputs.size() < r.skip_out + n)
    fail(ErrorKind::Parse, "the body has ", b.outputs.size(), " outputs, fewer than the ",
         r.skip_out + n, " it must give");
  const std::size_t k = b.outputs.size() - r.skip_out - n;
  if (r.length < 1 || r.length > kMaxLength)
    c.unsupported(rlx::detail::cat("a scan of ", r.length, " steps (rlx runs 1 to 2^30)"));
  std::vector<Shape> shapes;
  for (std::size_t i = 0; i < n + k; ++i) {
    const Shape& s = b.graph.shape(b.outputs[r.skip_out + i]);
    if (!s.is_static())
      c.unsupported(rlx::detail::cat("the body's output ", r.skip_out + i, " is ", ir::short_str(s),
                                     "; rlx needs static shapes in a scan"));
    if (i < n && s != c.g.shape(r.states[i]))
      fail(ErrorKind::Shape, "the body's state output ", i, " is ", ir::short_str(s),
           " but the state is ", ir::short_str(c.g.shape(r.states[i])),
           "; rlx's scan keeps each state's shape and dtype");
    shapes.push_back(s);
  }
  if (n + k == 0) return {};
  Packing p(c, shapes);

  // The scan body: Inputs [carry, bcasts..., x_t...], the ONNX body inlined, the next carry.
  ir::Graph body(b.graph.name);
  // Input names of their own ("scan:", "outer:"), whatever the ONNX names are.
  NodeId carry = body.input("scan:carry", Shape({p.total}, p.dtype));
  std::map<uint32_t, NodeId> bind;
  for (std::size_t j = 0; j < b.captures.size(); ++j)
    bind[b.capture_inputs[j].index] =
        body.input("outer:" + b.captures[j], b.graph.shape(b.capture_inputs[j]));
  std::vector<NodeId> steps;
  for (std::size_t j = 0; j < r.xs.size(); ++j)
    steps.push_back(body.input(rlx::detail::cat("scan:x", j), drop_leading(c.g.shape(r.xs[j]))));
  for (std::size_t f = 0; f < r.roles.size(); ++f) {
    const Role& role = r.roles[f];
    NodeId id = role.kind == Role::State  ? p.unpack(body, carry, role.index, {})
                : role.kind == Role::Step ? steps[role.index]
                                          : body.constant(1, DType::Bool);
    bind[b.inputs[f].index] = id;
  }
  std::vector<NodeId> outs = inline_body(body, b.graph, bind);
  body.set_outputs(
      {p.pack(body, std::vector<NodeId>(outs.begin() + std::ptrdiff_t(r.skip_out), outs.end()))});

  // The initial carry: the states, then zeros where the scan outputs go.
  std::vector<NodeId> init = r.states;
  for (std::size_t i = n; i < n + k; ++i) init.push_back(c.constant(Buffer(shapes[i])));
  std::vector<NodeId> operands{p.pack(c.g, init)};
  for (const std::string& name : b.captures) operands.push_back(c.named(name));
  operands.insert(operands.end(), r.xs.begin(), r.xs.end());
  ir::ScanAttrs a;
  a.body = ir::SubGraph(std::move(body));
  a.length = r.length;
  a.num_bcast = int64_t(b.captures.size());
  a.num_xs = int64_t(r.xs.size());
  a.save_trajectory = k > 0;
  NodeId y = c.g.add_inferred(Op(OpKind::Scan, std::move(a)), std::move(operands));

  Results out;
  NodeId last = k == 0 ? y : c.g.reshape_(c.g.narrow_(y, 0, r.length - 1, 1), {p.total});
  for (std::size_t i = 0; i < n; ++i) out.finals.push_back(p.unpack(c.g, last, i, {}));
  for (std::size_t i = n; i < n + k; ++i) out.stacked.push_back(p.unpack(c.g, y, i, {r.length}));
  return out;
}

/// x with axis `axis` moved to the front (and reversed there when `reverse`).
NodeId to_front(Ctx& c, NodeId x, int64_t axis, bool reverse) {
  int64_t r = int64_t(c.g.shape(x).rank());
  if (axis != 0) {
    std::vector<int64_t> perm{axis};
    for (int64_t d = 0; d < r; ++d)
      if (d != axis) perm.push_back(d);
    x = c.g.transpose_(x, perm);
  }
  return reverse ? c.g.reverse(x, {0}) : x;
}

/// A stacked [length, ...] scan output reversed when `reverse`, its axis 0 moved to `axis`.
NodeId from_front(Ctx& c, NodeId y, int64_t axis, bool reverse) {
  if (reverse) y = c.g.reverse(y, {0});
  int64_t r = int64_t(c.g.shape(y).rank());
  axis = c.axis(axis, r);
  if (axis == 0) return y;
  std::vector<int64_t> perm;
  for (int64_t d = 1; d <= axis; ++d) perm.push_back(d);
  perm.push_back(0);
  for (int64_t d = axis + 1; d < r; ++d) perm.push_back(d);
  return c.g.transpose_(y, perm);
}

std::vector<int64_t> per_input(Ctx& c, std::string_view name, std::size_t count) {
  std::vector<int64_t> v = c.attr_ints(name, std::vector<int64_t>(count, 0));
  if (v.size() != count)
    fail(ErrorKind::Value, "attribute '", name, "' has ", v.size(), " values for ", count,
         " inputs or outputs");
  for (int64_t d : v)
    if (name.ends_with("directions") && d != 0 && d != 1)
      fail(ErrorKind::Value, "attribute '", name, "' holds ", d, " (0 forward, 1 reverse)");
  return v;
}

/// Opset 8: operand 0 sequence_lens, states [B, ...], scan inputs [B, L, ...]; one scan per
/// batch row, the results stacked again along axis 0.
void scan8(Ctx& c, const GraphDef& gd, int64_t m) {
  if (c.num_inputs() < std::size_t(1 + m))
    fail(ErrorKind::Shape, "num_scan_inputs is ", m, " but the node has ", c.num_inputs(),
         " operands");
  const std::size_t n = c.num_inputs() - 1 - std::size_t(m);
  std::vector<int64_t> dirs = per_input(c, "directions", std::size_t(m));
  int64_t batch = -1, length = -1;
  for (std::size_t i = 1; i < c.num_inputs(); ++i) {
    std::vector<int64_t> d = c.sizes(i);
    bool scanned = i > n;
    if (d.size() < (scanned ? 2u : 1u))
      fail(ErrorKind::Shape, "operand ", i, " is ", ir::short_str(c.shape(i)), "; opset 8 ",
           scanned ? "scan inputs are [batch, sequence, ...]" : "states are [batch, ...]");
    if (batch >= 0 && d[0] != batch)
      fail(ErrorKind::Shape, "operand ", i, " has batch ", d[0], ", others ", batch);
    batch = d[0];
    if (scanned && length >= 0 && d[1] != length)
      fail(ErrorKind::Shape, "scan input ", i, " has ", d[1], " steps, others ", length);
    if (scanned) length = d[1];
  }
  if (batch < 1 || batch > kMaxBatch)
    c.unsupported(rlx::detail::cat("an opset-8 Scan over a batch of ", batch, " (rlx takes 1 to ",
                                   kMaxBatch, ")"));
  if (c.has(0)) {
    std::vector<int64_t> lens = c.need_ints(0, "sequence_lens");
    for (int64_t l : lens)
      if (l != length)
        c.unsupported(rlx::detail::cat("sequence_lens holds ", l, " for a sequence of ", length,
                                       " steps; rlx scans every sequence in full"));
  }
  auto row = [&](std::size_t i, int64_t b) {
    std::vector<int64_t> d = c.sizes(i);
    NodeId x = c.g.narrow_(c.in(i), 0, b, 1);
    return c.g.reshape_(x, std::vector<int64_t>(d.begin() + 1, d.end()));
  };
  std::vector<Formal> formals;
  std::vector<Role> roles;
  for (std::size_t i = 0; i < n; ++i) {
    formals.push_back({drop_leading(c.shape(1 + i)), std::nullopt});
    roles.push_back({Role::State, i});
  }
  for (std::size_t j = 0; j < std::size_t(m); ++j) {
    formals.push_back({drop_leading(drop_leading(c.shape(1 + n + j))), std::nullopt});
    roles.push_back({Role::Step, j});
  }
  Body body = c.body(gd, formals);
  std::vector<std::vector<NodeId>> per_output;
  for (int64_t b = 0; b < batch; ++b) {
    Recurrence r{&body, roles, 0, {}, {}, length};
    for (std::size_t i = 0; i < n; ++i) r.states.push_back(row(1 + i, b));
    for (std::size_t j = 0; j < std::size_t(m); ++j)
      r.xs.push_back(to_front(c, row(1 + n + j, b), 0, dirs[j] == 1));
    Results res = run_recurrence(c, r);
    std::vector<NodeId> all = res.finals;
    all.insert(all.end(), res.stacked.begin(), res.stacked.end());
    per_output.resize(all.size());
    for (std::size_t o = 0; o < all.size(); ++o)
      per_output[o].push_back(c.g.reshape_(all[o], with_lead({1}, c.g.shape(all[o]).sizes())));
  }
  for (std::size_t o = 0; o < per_output.size(); ++o)
    c.out(o, per_output[o].size() == 1 ? per_output[o][0] : c.g.concat_(per_output[o], 0));
}

void scan(Ctx& c) {
  const GraphDef& gd = c.attr_graph("body");
  int64_t m = c.attr_i("num_scan_inputs", -1);
  if (m < 1 || std::size_t(m) > c.num_inputs())
    fail(ErrorKind::Value, "num_scan_inputs is ", m, " for ", c.num_inputs(), " operands");
  if (c.opset < 9) return scan8(c, gd, m);
  const std::size_t n = c.num_inputs() - std::size_t(m);
  std::vector<int64_t> in_axes = per_input(c, "scan_input_axes", std::size_t(m));
  std::vector<int64_t> in_dirs = per_input(c, "scan_input_directions", std::size_t(m));
  std::vector<Formal> formals;
  Recurrence r;
  for (std::size_t i = 0; i < n; ++i) {
    c.sizes(i);
    formals.push_back({c.shape(i), std::nullopt});
    r.roles.push_back({Role::State, i});
    r.states.push_back(c.in(i));
  }
  for (std::size_t j = 0; j < std::size_t(m); ++j) {
    std::vector<int64_t> d = c.sizes(n + j);
    int64_t axis = c.axis(in_axes[j], int64_t(d.size()));
    if (j > 0 && d[std::size_t(axis)] != r.length)
      fail(ErrorKind::Shape, "scan input ", j, " has ", d[std::size_t(axis)],
           " steps along its axis ", axis, ", others ", r.length);
    r.length = d[std::size_t(axis)];
    r.xs.push_back(to_front(c, c.in(n + j), axis, in_dirs[j] == 1));
    formals.push_back({drop_leading(c.g.shape(r.xs.back())), std::nullopt});
    r.roles.push_back({Role::Step, j});
  }
  Body body = c.body(gd, formals);
  r.body = &body;
  std::size_t k = body.outputs.size() >= n ? body.outputs.size() - n : 0;
  std::vector<int64_t> out_axes = per_input(c, "scan_output_axes", k);
  std::vector<int64_t> out_dirs = per_input(c, "scan_output_directions", k);
  Results res = run_recurrence(c, r);
  for (std::size_t i = 0; i < n; ++i) c.out(i, res.finals[i]);
  for (std::size_t j = 0; j < k; ++j)
    c.out(n + j, from_front(c, res.stacked[j], out_axes[j], out_dirs[j] == 1));
}

/// Whether a value known at load time is one true (non-zero) scalar.
bool known_true(const std::optional<Buffer>& v) {
  return v && v->numel() == 1 && v->get_f64(0) != 0;
}

/// The Loop's outputs from an unrolled body: each iteration imported with its counter known.
void unroll_loop(Ctx& c, const GraphDef& gd, int64_t trips, std::vector<NodeId> states) {
  const std::size_t n = states.size();
  std::vector<std::vector<NodeId>> scans;
  for (int64_t t = 0; t < trips; ++t) {
    Buffer counter = Buffer::i64({}, std::vector<int64_t>{t});
    std::vector<Formal> formals{
        {counter.shape(), counter},
        {Shape({}, DType::Bool),
         Buffer::from_i64(Shape({}, DType::Bool), std::vector<int64_t>{1})}};
    for (NodeId s : states) formals.push_back({c.g.shape(s), std::nullopt});
    Body b = c.body(gd, formals);
    if (b.outputs.size() < 1 + n)
      fail(ErrorKind::Parse, "the body has ", b.outputs.size(), " outputs, fewer than the ", 1 + n,
           " it must give");
    if (!known_true(b.values[0]))
      c.unsupported(rlx::detail::cat("the body's condition output may be false at iteration ", t,
                                     "; rlx imports loops that run all their iterations"));
    std::map<uint32_t, NodeId> bind{{b.inputs[0].index, c.constant(counter)},
                                    {b.inputs[1].index, c.g.constant(1, DType::Bool)}};
    for (std::size_t i = 0; i < n; ++i) bind[b.inputs[2 + i].index] = states[i];
    for (std::size_t j = 0; j < b.captures.size(); ++j)
      bind[b.capture_inputs[j].index] = c.named(b.captures[j]);
    std::vector<NodeId> outs = inline_body(c.g, b.graph, bind);
    for (std::size_t i = 0; i < n; ++i) states[i] = outs[1 + i];
    scans.resize(outs.size() - 1 - n);
    for (std::size_t j = 0; j < scans.size(); ++j) {
      NodeId v = outs[1 + n + j];
      if (t > 0 && c.g.shape(v) != drop_leading(c.g.shape(scans[j][0])))
        fail(ErrorKind::Shape, "scan output ", j, " changes shape across iterations (",
             ir::short_str(c.g.shape(v)), " at iteration ", t, ")");
      scans[j].push_back(c.g.reshape_(v, with_lead({1}, c.g.shape(v).sizes())));
    }
  }
  for (std::size_t i = 0; i < n; ++i) c.out(i, states[i]);
  for (std::size_t j = 0; j < scans.size(); ++j)
    c.out(n + j, scans[j].size() == 1 ? scans[j][0] : c.g.concat_(scans[j], 0));
}

void loop(Ctx& c) {
  const GraphDef& gd = c.attr_graph("body");
  if (c.num_inputs() < 2) fail(ErrorKind::Shape, "Loop takes M, cond and the loop-carried values");
  const std::size_t n = c.num_inputs() - 2;
  if (!c.has(0))
    c.unsupported("the trip count M is absent (a loop ended by its condition only); rlx imports "
                  "loops whose trip count is known at load time");
  std::optional<Buffer> mv = c.value(0);
  if (!mv)
    c.unsupported(rlx::detail::cat("the trip count M ('", c.node.inputs[0],
                                   "') is only known at run time; rlx imports loops whose trip "
                                   "count is known at load time"));
  if (mv->numel() != 1)
    fail(ErrorKind::Shape, "the trip count M is ", ir::short_str(mv->shape()), ", not one value");
  int64_t trips = to_ints(*mv)[0];
  if (trips < 0) fail(ErrorKind::Value, "the trip count M is ", trips);
  if (c.has(1)) {
    std::optional<Buffer> cv = c.value(1);
    if (!cv || cv->numel() != 1)
      c.unsupported(rlx::detail::cat("the initial condition ('", c.node.inputs[1],
                                     "') is only known at run time; rlx imports loops that run "
                                     "all M iterations"));
    if (cv->get_f64(0) == 0) trips = 0;
  }
  if (trips > kMaxLength)
    c.unsupported(rlx::detail::cat("a trip count of ", trips, " (rlx runs at most 2^30 steps)"));
  std::vector<NodeId> states;
  std::vector<Formal> formals{
      {Shape({}, DType::I64), std::nullopt},
      {Shape({}, DType::Bool), Buffer::from_i64(Shape({}, DType::Bool), std::vector<int64_t>{1})}};
  for (std::size_t i = 0; i < n; ++i) {
    c.sizes(2 + i);
    states.push_back(c.in(2 + i));
    formals.push_back({c.shape(2 + i), std::nullopt});
  }
  // Unrolled, each iteration imported with its counter known: a body that needs the counter at
  // load time (a Slice bound), or whose condition depends on it. `why` when that fails too.
  auto unroll_or = [&](const Error& why) {
    if (why.kind() != ErrorKind::Unsupported || trips == 0 || trips > kMaxUnrolled) throw why;
    try {
      unroll_loop(c, gd, trips, states);
    } catch (const Error&) {
      throw why;
    }
  };
  std::optional<Body> body;
  try {
    body = c.body(gd, formals);
  } catch (const Error& e) {
    return unroll_or(e);
  }
  if (!known_true(body->values.at(0)))
    return unroll_or(Error(
        ErrorKind::Unsupported,
        rlx::detail::cat("the body's condition output '", gd.outputs.at(0).name,
                         "' is not provably true at every iteration; rlx imports loops that run "
                         "all M iterations")));
  if (body->outputs.size() < 1 + n)
    fail(ErrorKind::Parse, "the body has ", body->outputs.size(), " outputs, fewer than the ",
         1 + n, " it must give");
  if (trips == 0) { // the initial values, and empty scan outputs
    for (std::size_t i = 0; i < n; ++i) c.out(i, states[i]);
    for (std::size_t j = 1 + n; j < body->outputs.size(); ++j) {
      const Shape& s = body->graph.shape(body->outputs[j]);
      if (!s.is_static()) c.unsupported("a scan output of dynamic shape");
      c.out(j - 1, c.constant(Buffer(Shape::of(with_lead({0}, s.sizes()), s.dtype()))));
    }
    return;
  }
  Recurrence r;
  r.body = &*body;
  r.skip_out = 1;
  r.length = trips;
  r.states = states;
  r.roles.push_back({Role::Step, 0});
  r.roles.push_back({Role::True, 0});
  for (std::size_t i = 0; i < n; ++i) r.roles.push_back({Role::State, i});
  if (reads(body->graph, body->inputs[0])) {
    c.check_materialized(trips, "Loop's iteration counter");
    std::vector<int64_t> iota(static_cast<std::size_t>(trips));
    std::iota(iota.begin(), iota.end(), int64_t(0));
    r.xs.push_back(c.constant(Buffer::i64({trips}, iota)));
  } else {
    r.roles[0] = {Role::True, 0}; // unread: never bound
  }
  Results res = run_recurrence(c, r);
  for (std::size_t i = 0; i < n; ++i) c.out(i, res.finals[i]);
  for (std::size_t j = 0; j < res.stacked.size(); ++j) c.out(n + j, res.stacked[j]);
}

} // namespace

void add_control_rules(Rules& r) {
  r["Scan"] = {scan, 8};
  r["Loop"] = {loop, 1, 0b11};
}

} // namespace rlx::onnx::detail
