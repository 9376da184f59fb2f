// tests/test_backends.cpp -- the same graphs on the interpreter and the other backend agree.
#include "support/compare.hpp"
#include "support/fixture_dirs.hpp"
#include "support/random_graph.hpp"

#include <rlx/all.hpp>
#include <rlx/io/npy.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

using namespace rlx;
using namespace rlx::test;
using ir::DType;
using ir::NodeId;
using ir::Op;
using ir::OpKind;
namespace fs = std::filesystem;

namespace {

constexpr DType F32 = DType::F32, F64 = DType::F64, F16 = DType::F16, BF16 = DType::BF16,
                I8 = DType::I8, I16 = DType::I16, I32 = DType::I32, I64 = DType::I64,
                U8 = DType::U8, U32 = DType::U32, Bool = DType::Bool, C64 = DType::C64;
constexpr double kInf = std::numeric_limits<double>::infinity();
using Dims = std::vector<int64_t>;

/// One graph to run on both backends, with data for its leaves.
struct Case {
  std::string name;
  ir::Graph graph;
  std::vector<Buffer> leaves; ///< graph order
  bool expect_error = false;  ///< the interpreter rejects it at run time (both must)
  std::string build_error;    ///< set when the case could not be built (a bug in this file)
};

uint64_t fnv1a(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (char c : s) h = (h ^ uint8_t(c)) * 1099511628211ull;
  return h;
}

/// Builds a case: leaves (alternately inputs and params) with random data, ops through the
/// inferring builders, outputs.
class Builder {
public:
  explicit Builder(const std::string& name) : g(name), rng(fnv1a(name)) {}

  NodeId in(Dims dims, DType t, FillSpec f = {}) {
    ir::Shape s = ir::Shape::of(dims, t);
    leaves.push_back(random_values(s, f, rng));
    return leaf(s);
  }
  NodeId values(Dims dims, DType t, const std::vector<double>& v) {
    ir::Shape s = ir::Shape::of(dims, t);
    leaves.push_back(Buffer::from_f64(s, v));
    return leaf(s);
  }
  NodeId ints(Dims dims, DType t, const std::vector<int64_t>& v) {
    ir::Shape s = ir::Shape::of(dims, t);
    leaves.push_back(Buffer::from_i64(s, v));
    return leaf(s);
  }
  NodeId op(Op o, std::vector<NodeId> ins) { return g.add_inferred(std::move(o), std::move(ins)); }
  NodeId out(NodeId id) {
    outs.push_back(id);
    return id;
  }

  ir::Graph g;
  Rng rng;
  std::vector<Buffer> leaves;
  std::vector<NodeId> outs;

private:
  NodeId leaf(const ir::Shape& s) {
    std::string name = "x" + std::to_string(leaves.size() - 1);
    return leaves.size() % 2 ? g.input(name, s) : g.param(name, s);
  }
};

template <class F>
void add_case(std::vector<Case>& cases, const std::string& name, F&& build,
              bool expect_error = false) {
  Builder b(name);
  Case c;
  c.name = name;
  c.expect_error = expect_error;
  try {
    build(b);
    b.g.set_outputs(b.outs);
    c.graph = std::move(b.g);
    c.leaves = std::move(b.leaves);
  } catch (const Error& e) {
    c.build_error = std::string("building the case failed: ") + e.what();
  }
  cases.push_back(std::move(c));
}

std::string dt(DType t) { return std::string(ir::dtype_name(t)); }

/// The subgraph of the first differing output, its small inputs, and (for several ops) the
/// smallest failing piece minimize_failure finds.
std::string minimal_report(const Case& c, std::size_t output, Backend other) {
  auto [h, leaves] = subgraph(c.graph, c.leaves, {c.graph.outputs[output]});
  std::ostringstream os;
  os << "minimal graph for " << output_str(c.graph, output) << ":\n" << ir::to_text(h);
  std::vector<NodeId> ids = leaf_ids(h);
  for (std::size_t i = 0; i < leaves.size(); ++i)
    os << "  " << h.node(ids[i]).op.attrs<ir::LeafAttrs>().name << " = " << values_str(leaves[i])
       << "\n";
  int computing = 0;
  for (const ir::Node& n : h.nodes()) computing += !n.inputs.empty();
  if (computing > 1)
    os << minimize_failure(h, leaves, backend_runner(other), std::string(enum_name(other)));
  return os.str();
}

/// Runs every case on the interpreter and on other_backend(); each failure names the case, prints
/// its graph and the first mismatching elements, and a minimal graph.
void run_cases(const std::vector<Case>& cases) {
  Backend other = other_backend();
  std::vector<std::string> failed;
  for (const Case& c : cases) {
    std::string text = c.build_error.empty() ? ir::to_text(c.graph) : "";
    INFO("case \"" << c.name << "\"\n" << text);
    if (!c.build_error.empty()) {
      failed.push_back(c.name);
      FAIL_CHECK(c.build_error);
      continue;
    }
    RunResult a = run_on(Backend::Interp, c.graph, c.leaves);
    RunResult b = run_on(other, c.graph, c.leaves, true);
    Comparison cmp = compare_runs(c.graph, a, b, std::string(enum_name(other)));
    std::string problems = cmp.problems;
    if (a.error && !c.expect_error)
      problems = "the interpreter rejected a case meant to run: " + *a.error;
    else if (!a.error && c.expect_error)
      problems = "the interpreter accepted a case meant to fail at run time";
    if (problems.empty()) continue;
    failed.push_back(c.name);
    if (!cmp.bad.empty() && failed.size() <= 20)
      problems += minimal_report(c, cmp.bad.front(), other);
    FAIL_CHECK(problems);
  }
  std::string summary;
  for (const std::string& f : failed) summary += "\n  " + f;
  INFO(failed.size() << " of " << cases.size() << " cases differ on " << enum_name(other) << ":"
                     << summary);
  CHECK(failed.empty());
}

// ---- Fixtures: tests/fixtures/ops[_<family>]/<case>/{graph.rlx, <leaf>.npy, expected_<i>.npy,
// tol.txt}

std::string read_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) fail(ErrorKind::Io, "cannot read ", p.string());
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<Case> fixture_cases() {
  std::vector<fs::path> dirs = rlx::test::op_fixture_case_dirs();
  std::vector<Case> cases;
  for (const fs::path& dir : dirs) {
    Case c;
    c.name = "fixture " + dir.filename().string();
    try {
      c.graph = ir::parse_text(read_text(dir / "graph.rlx"), (dir / "graph.rlx").string());
      for (NodeId id : leaf_ids(c.graph)) {
        const std::string& leaf = c.graph.node(id).op.attrs<ir::LeafAttrs>().name;
        c.leaves.push_back(io::load_npy((dir / (leaf + ".npy")).string()));
      }
    } catch (const Error& e) {
      c.build_error = std::string("reading the fixture failed: ") + e.what();
    }
    cases.push_back(std::move(c));
  }
  return cases;
}

// ---- Element-wise unary

const std::vector<Dims> kShapes = {{}, {1, 1}, {7}, {13, 3}, {3, 1000}, {2, 1, 3}};

/// The values an activation is tested on (its domain: log of positives, tan away from pi/2).
FillSpec unary_domain(OpKind k) {
  switch (k) {
  case OpKind::Log:
  case OpKind::Sqrt:
  case OpKind::Rsqrt:
    return {Fill::Uniform, 0.01, 6};
  case OpKind::Tan:
    return {Fill::Uniform, -1.4, 1.4};
  case OpKind::Round:
    return {Fill::Halves, -5, 5};
  case OpKind::Exp:
    return {Fill::Uniform, -12, 12};
  default:
    return {Fill::Uniform, -5, 5};
  }
}

/// Every activation with default and non-default attributes, plus clamp and stop_gradient.
std::vector<std::pair<std::string, Op>> float_unary_ops() {
  std::vector<std::pair<std::string, Op>> ops;
  for (OpKind k : activation_kinds()) ops.emplace_back(std::string(ir::op_name(k)), Op(k));
  ops.emplace_back("leaky_relu alpha=0.2", Op(OpKind::LeakyRelu, ir::LeakyReluAttrs{0.2f}));
  ops.emplace_back("elu alpha=0.5", Op(OpKind::Elu, ir::EluAttrs{0.5f}));
  ops.emplace_back("stop_gradient", Op(OpKind::StopGradient));
  ops.emplace_back("clamp [-1, 2]", Op(OpKind::Clamp, ir::ClampAttrs{-1, 2}));
  ops.emplace_back("clamp [-inf, 0.5]", Op(OpKind::Clamp, ir::ClampAttrs{-kInf, 0.5}));
  ops.emplace_back("clamp [0.25, inf]", Op(OpKind::Clamp, ir::ClampAttrs{0.25, kInf}));
  ops.emplace_back("clamp [1, 1]", Op(OpKind::Clamp, ir::ClampAttrs{1, 1}));
  return ops;
}

std::vector<Case> unary_cases() {
  std::vector<Case> cases;
  for (const auto& [name, op] : float_unary_ops())
    for (DType t : {F32, F64})
      add_case(cases, "unary " + name + " " + dt(t), [&](Builder& b) {
        for (const Dims& d : kShapes) b.out(b.op(op, {b.in(d, t, unary_domain(op.kind()))}));
        // ties and exact zeros (sign, relu, round, floor, ...) unless outside the domain
        if (op.kind() != OpKind::Log && op.kind() != OpKind::Sqrt && op.kind() != OpKind::Rsqrt)
          b.out(b.op(op, {b.in({12}, t, {Fill::Halves, -3, 3})}));
      });
  return cases;
}

std::vector<Case> unary_edge_cases() {
  std::vector<Case> cases;
  for (const auto& [name, op] : float_unary_ops())
    for (DType t : {F32, F64})
      add_case(cases, "unary " + name + " " + dt(t) + " edge values",
               [&](Builder& b) { b.out(b.op(op, {b.in({6, 5}, t, {Fill::Special, -2, 2})})); });
  return cases;
}

std::vector<Case> int_unary_cases() {
  std::vector<std::pair<std::string, Op>> ops;
  for (OpKind k : activation_kinds())
    if (ir::has_trait(k, ir::kIntegerOk)) ops.emplace_back(std::string(ir::op_name(k)), Op(k));
  ops.emplace_back("stop_gradient", Op(OpKind::StopGradient));
  ops.emplace_back("clamp [-3, 5]", Op(OpKind::Clamp, ir::ClampAttrs{-3, 5}));
  ops.emplace_back("clamp [-2.5, 2.5]", Op(OpKind::Clamp, ir::ClampAttrs{-2.5, 2.5}));
  std::vector<Case> cases;
  for (const auto& [name, op] : ops)
    for (DType t : {I32, I64})
      add_case(cases, "unary " + name + " " + dt(t), [&](Builder& b) {
        for (const Dims& d : kShapes) b.out(b.op(op, {b.in(d, t, {Fill::Integers, -20, 20})}));
        b.out(b.op(op, {b.in({3, 3}, t, {Fill::IntEdge, -5, 5})}));
      });
  return cases;
}

// ---- Element-wise binary and where

const std::vector<std::pair<Dims, Dims>> kPairs = {{{}, {}},
                                                   {{}, {7}},
                                                   {{4, 1}, {1, 5}},
                                                   {{13}, {7, 13}},
                                                   {{3, 1000}, {3, 1000}},
                                                   {{2, 1, 3}, {4, 1}},
                                                   {{1}, {1, 1, 1}},
                                                   {{2, 3, 1, 5}, {3, 4, 1}}};

bool is_compare(OpKind k) { return ir::has_trait(k, ir::kBoolResult); }

std::vector<Case> binary_cases() {
  std::vector<Case> cases;
  for (OpKind k : binary_kinds()) {
    for (DType t : {F32, F64, I32, I64}) {
      add_case(cases, "binary " + std::string(ir::op_name(k)) + " " + dt(t), [&](Builder& b) {
        bool fl = ir::is_float(t);
        for (std::size_t i = 0; i < kPairs.size(); ++i) {
          FillSpec fa{Fill::Uniform, -4, 4}, fb{Fill::Uniform, -4, 4};
          if (!fl) fa = fb = {Fill::Integers, -20, 20};
          if (fl && is_compare(k) && i % 2 == 0) fa = fb = {Fill::Integers, -2, 2};
          if (k == OpKind::Pow) {
            fa = fl ? FillSpec{Fill::Uniform, 0.1, 4} : FillSpec{Fill::Integers, -3, 3};
            fb = fl ? FillSpec{Fill::Uniform, -3, 3} : FillSpec{Fill::Integers, -2, 5};
          }
          if (k == OpKind::Mod && fl) fa = {Fill::Uniform, -10, 10};
          b.out(b.op(Op(k), {b.in(kPairs[i].first, t, fa), b.in(kPairs[i].second, t, fb)}));
        }
        // integers against halves: zero divisors, negative bases with integral exponents
        if (fl)
          b.out(b.op(Op(k), {b.in({7, 1}, t, {Fill::Integers, -3, 3}),
                             b.in({1, 13}, t, {Fill::Halves, -3, 3})}));
      });
    }
    if (is_compare(k))
      add_case(cases, "binary " + std::string(ir::op_name(k)) + " bool", [&](Builder& b) {
        b.out(b.op(Op(k), {b.in({2, 1}, Bool, {Fill::Bool}), b.in({1, 2}, Bool, {Fill::Bool})}));
        b.out(b.op(Op(k), {b.in({3, 1000}, Bool, {Fill::Bool}), b.in({1000}, Bool, {Fill::Bool})}));
        b.out(b.op(Op(k), {b.in({}, Bool, {Fill::Bool}), b.in({7}, Bool, {Fill::Bool})}));
      });
  }
  return cases;
}

std::vector<Case> binary_edge_cases() {
  std::vector<Case> cases;
  for (OpKind k : binary_kinds()) {
    for (DType t : {F32, F64}) // every pair of float edge values
      add_case(cases, "binary " + std::string(ir::op_name(k)) + " " + dt(t) + " edge values",
               [&](Builder& b) {
                 std::vector<double> v = special_values();
                 Dims n{int64_t(v.size())};
                 b.out(b.op(Op(k), {b.values({n[0], 1}, t, v), b.values({1, n[0]}, t, v)}));
               });
    for (DType t : {I32, I64}) // every pair of integer edge values: overflow, x / 0, MIN / -1
      add_case(cases, "binary " + std::string(ir::op_name(k)) + " " + dt(t) + " edge values",
               [&](Builder& b) {
                 int64_t lo = t == I32 ? INT32_MIN : INT64_MIN;
                 int64_t hi = t == I32 ? INT32_MAX : INT64_MAX;
                 std::vector<int64_t> v{lo, lo + 1, -7, -2, -1, 0, 1, 2, 7, hi - 1, hi};
                 int64_t n = int64_t(v.size());
                 ir::NodeId a = b.ints({n, 1}, t, v), c = b.ints({1, n}, t, v);
                 b.out(b.op(Op(k), {a, c}));
               });
  }
  return cases;
}

std::vector<Case> mixed_dtype_cases() {
  struct M {
    OpKind k;
    DType a, b;
  };
  std::vector<M> ms = {{OpKind::Add, I32, F32}, {OpKind::Add, F32, F64}, {OpKind::Mul, I64, F32},
                       {OpKind::Sub, I32, I64}, {OpKind::Div, I32, F64}, {OpKind::Lt, I32, F32},
                       {OpKind::Eq, F32, F64},  {OpKind::Max, I32, F32}, {OpKind::Pow, F32, I32},
                       {OpKind::Mod, I64, F32}, {OpKind::And, F32, I32}, {OpKind::Or, Bool, F32},
                       {OpKind::Div, I64, I32}, {OpKind::Ge, I64, F64},  {OpKind::Min, F64, I64}};
  std::vector<Case> cases;
  for (const M& m : ms)
    add_case(cases, "binary " + std::string(ir::op_name(m.k)) + " " + dt(m.a) + " with " + dt(m.b),
             [&](Builder& b) {
               auto fill = [](DType t) {
                 return ir::is_bool(t)    ? FillSpec{Fill::Bool}
                        : ir::is_float(t) ? FillSpec{Fill::Halves, -4, 4}
                                          : FillSpec{Fill::Integers, -5, 5};
               };
               b.out(b.op(Op(m.k), {b.in({4, 1}, m.a, fill(m.a)), b.in({1, 5}, m.b, fill(m.b))}));
               b.out(b.op(Op(m.k), {b.in({3, 1000}, m.a, fill(m.a)), b.in({}, m.b, fill(m.b))}));
             });
  return cases;
}

std::vector<Case> where_cases() {
  std::vector<Case> cases;
  for (DType t : {F32, F64, I32, I64, Bool})
    add_case(cases, "where " + dt(t), [&](Builder& b) {
      FillSpec f = ir::is_bool(t) ? FillSpec{Fill::Bool} : FillSpec{Fill::Integers, -9, 9};
      if (ir::is_float(t)) f = {Fill::Uniform, -3, 3};
      b.out(b.op(Op(OpKind::Where),
                 {b.in({4, 1}, Bool, {Fill::Bool}), b.in({1, 5}, t, f), b.in({}, t, f)}));
      b.out(b.op(Op(OpKind::Where),
                 {b.in({3, 1000}, Bool, {Fill::Bool}), b.in({3, 1000}, t, f), b.in({1000}, t, f)}));
      b.out(b.op(Op(OpKind::Where),
                 {b.in({}, Bool, {Fill::Bool}), b.in({7}, t, f), b.in({7}, t, f)}));
      b.out(b.op(Op(OpKind::Where),
                 {b.in({2, 1, 3}, Bool, {Fill::Bool}), b.in({4, 1}, t, f), b.in({1}, t, f)}));
    });
  add_case(cases, "where i32 and f32 operands", [&](Builder& b) {
    b.out(
        b.op(Op(OpKind::Where), {b.in({13, 1}, Bool, {Fill::Bool}),
                                 b.in({1, 7}, I32, {Fill::Integers, -9, 9}), b.in({13, 7}, F32)}));
  });
  add_case(cases, "where with an f32 condition (NaN and -0 select on_true)", [&](Builder& b) {
    b.out(b.op(Op(OpKind::Where),
               {b.in({6, 5}, F32, {Fill::Special}), b.in({}, F64), b.in({6, 5}, F64)}));
    b.out(b.op(Op(OpKind::Where),
               {b.in({3, 4}, I32, {Fill::Integers, -1, 1}), b.in({4}, I64), b.in({3, 1}, I64)}));
  });
  return cases;
}

// ---- Casts

std::vector<Case> cast_cases() {
  std::vector<Case> cases;
  const std::vector<DType> targets = {F32, F64, F16, BF16, I8, I16, I32, I64, U8, U32, Bool};
  struct Src {
    DType t;
    std::vector<FillSpec> fills;
  };
  std::vector<Src> srcs = {
      {F32,
       {{Fill::Special, -3, 3},
        {Fill::Uniform, -300, 300},
        {Fill::Halves, -3, 3},
        {Fill::Uniform, -5e9, 5e9}}},
      {F64, {{Fill::Special, -3, 3}, {Fill::Uniform, -300, 300}, {Fill::Uniform, -1e20, 1e20}}},
      {F16, {{Fill::Special, -3, 3}, {Fill::Uniform, -300, 300}}},
      {BF16, {{Fill::Special, -3, 3}, {Fill::Uniform, -300, 300}}},
      {I32, {{Fill::IntEdge, -300, 300}}},
      {I64, {{Fill::IntEdge, -300, 300}, {Fill::Uniform, -1e17, 1e17}}},
      {I8, {{Fill::IntEdge, -100, 100}}},
      {U8, {{Fill::IntEdge, 0, 255}}},
      {U32, {{Fill::IntEdge, 0, 1e6}}},
      {Bool, {{Fill::Bool}}}};
  for (const Src& s : srcs)
    add_case(cases, "cast from " + dt(s.t), [&](Builder& b) {
      for (const FillSpec& f : s.fills) {
        NodeId x = b.in({40}, s.t, f);
        for (DType to : targets) b.out(b.op(Op(OpKind::Cast, ir::CastAttrs{to}), {x}));
      }
    });
  add_case(cases, "cast to and from c64", [&](Builder& b) {
    for (DType from : {F32, F64, I32, Bool}) {
      NodeId x =
          b.in({9}, from, ir::is_bool(from) ? FillSpec{Fill::Bool} : FillSpec{Fill::Halves, -3, 3});
      NodeId c = b.out(b.op(Op(OpKind::Cast, ir::CastAttrs{C64}), {x}));
      b.out(b.op(Op(OpKind::Cast, ir::CastAttrs{from}), {c}));
    }
  });
  return cases;
}

// ---- Reductions and scans

struct Red {
  Dims dims;
  std::vector<int64_t> axes;
  bool keep;
};
const std::vector<Red> kReductions = {{{}, {}, false},
                                      {{7}, {0}, false},
                                      {{7}, {-1}, true},
                                      {{13, 7}, {1}, false},
                                      {{13, 7}, {0}, true},
                                      {{13, 7}, {0, 1}, false},
                                      {{13, 7}, {}, false},
                                      {{3, 1000}, {1}, false},
                                      {{3, 1000}, {0, 1}, true},
                                      {{2, 3, 4}, {0, 2}, true},
                                      {{2, 3, 4}, {-2}, false},
                                      {{2, 1, 5}, {1}, false},
                                      {{1, 1}, {0, 1}, false},
                                      {{2, 3, 4, 5}, {3, 1}, false},
                                      // Rows around the vector width (the JIT's row kernels).
                                      {{5, 16}, {1}, false},
                                      {{3, 17}, {-1}, true},
                                      {{2, 4099}, {1}, false},
                                      {{2, 3, 33}, {1, 2}, false}};

std::vector<Case> reduce_cases() {
  std::vector<Case> cases;
  for (OpKind k : reduce_kinds())
    for (DType t : {F32, F64, I32, I64, Bool})
      add_case(cases, std::string(ir::op_name(k)) + " " + dt(t), [&](Builder& b) {
        FillSpec f = ir::is_bool(t)    ? FillSpec{Fill::Bool}
                     : ir::is_float(t) ? FillSpec{Fill::Uniform, -2, 2}
                                       : FillSpec{Fill::Integers, -3, 3};
        if (k == OpKind::ReduceProd && ir::is_float(t)) f = {Fill::Uniform, -1.6, 1.6};
        for (const Red& r : kReductions)
          b.out(b.op(Op(k, ir::ReduceAttrs{r.axes, r.keep}), {b.in(r.dims, t, f)}));
        if (ir::is_float(t)) { // NaN, infinities and signed zeros along both axes; exact ties
          NodeId s = b.in({6, 5}, t, {Fill::Special, -2, 2});
          b.out(b.op(Op(k, ir::ReduceAttrs{{1}, false}), {s}));
          b.out(b.op(Op(k, ir::ReduceAttrs{{0}, true}), {s}));
          b.out(b.op(Op(k, ir::ReduceAttrs{{1}, false}),
                     {b.in({13, 7}, t, {Fill::Integers, -1, 1})}));
        }
      });
  return cases;
}

std::vector<Case> arg_reduce_cases() {
  struct A {
    Dims dims;
    int64_t axis;
    bool keep;
  };
  std::vector<A> as = {{{7}, 0, false},         {{13, 7}, 1, true},   {{13, 7}, 0, false},
                       {{3, 1000}, -1, false},  {{2, 3, 4}, 1, true}, {{1, 1}, 0, false},
                       {{2, 3, 4, 5}, 2, false}};
  std::vector<Case> cases;
  for (OpKind k : {OpKind::ArgMax, OpKind::ArgMin})
    for (DType t : {F32, F64, I32, I64, Bool})
      add_case(cases, std::string(ir::op_name(k)) + " " + dt(t), [&](Builder& b) {
        FillSpec f = ir::is_bool(t)    ? FillSpec{Fill::Bool}
                     : ir::is_float(t) ? FillSpec{Fill::Uniform, -2, 2}
                                       : FillSpec{Fill::Integers, -3, 3};
        for (const A& a : as)
          b.out(b.op(Op(k, ir::ArgReduceAttrs{a.axis, a.keep}), {b.in(a.dims, t, f)}));
        if (ir::is_float(t)) { // ties (the first index wins) and NaN (the first NaN wins)
          b.out(b.op(Op(k, ir::ArgReduceAttrs{1, false}),
                     {b.in({13, 7}, t, {Fill::Integers, -1, 1})}));
          NodeId s = b.in({6, 5}, t, {Fill::Special, -2, 2});
          b.out(b.op(Op(k, ir::ArgReduceAttrs{1, false}), {s}));
          b.out(b.op(Op(k, ir::ArgReduceAttrs{0, true}), {s}));
        }
      });
  return cases;
}

std::vector<Case> scan_cases() {
  struct S {
    Dims dims;
    int64_t axis;
    bool exclusive;
  };
  std::vector<S> ss = {{{7}, 0, false},     {{7}, -1, true},           {{13, 7}, 0, true},
                       {{13, 7}, 1, false}, {{3, 1000}, 1, false},     {{2, 3, 4}, 1, true},
                       {{1}, 0, false},     {{2, 3, 4, 5}, -2, false}, {{5, 16}, -1, false},
                       {{3, 17}, 1, false}, {{2, 4099}, -1, false}};
  std::vector<Case> cases;
  for (DType t : {F32, F64, I32, I64})
    add_case(cases, "cumsum " + dt(t), [&](Builder& b) {
      FillSpec f =
          ir::is_float(t) ? FillSpec{Fill::Uniform, -2, 2} : FillSpec{Fill::Integers, -9, 9};
      for (const S& s : ss)
        b.out(b.op(Op(OpKind::Cumsum, ir::CumsumAttrs{s.axis, s.exclusive}), {b.in(s.dims, t, f)}));
      if (ir::is_float(t))
        b.out(b.op(Op(OpKind::Cumsum, ir::CumsumAttrs{1, false}),
                   {b.in({6, 5}, t, {Fill::Special})}));
    });
  for (DType t : {F32, F64}) {
    add_case(cases, "softmax " + dt(t), [&](Builder& b) {
      for (const S& s : ss)
        b.out(b.op(Op(OpKind::Softmax, ir::AxisAttrs{s.axis}),
                   {b.in(s.dims, t, {Fill::Uniform, -5, 5})}));
      b.out(
          b.op(Op(OpKind::Softmax, ir::AxisAttrs{0}), {b.in({13, 7}, t, {Fill::Uniform, -5, 5})}));
    });
    add_case(
        cases, "softmax " + dt(t) + " rows with -inf, +inf, NaN and huge values", [&](Builder& b) {
          double nan = std::nan("");
          b.out(b.op(Op(OpKind::Softmax, ir::AxisAttrs{-1}),
                     {b.values({6, 4}, t, {-kInf, -kInf, -kInf, -kInf, 1,  -kInf, 2,  -kInf,
                                           1,     kInf,  0,     2,     1,  nan,   0,  2,
                                           1e30,  -1e30, 0,     1e30,  80, 100,   90, -100})}));
          b.out(b.op(Op(OpKind::Softmax, ir::AxisAttrs{0}), {b.in({6, 5}, t, {Fill::Special})}));
        });
  }
  return cases;
}

// ---- Data movement and indexing

std::vector<Case> movement_cases() {
  std::vector<Case> cases;
  for (DType t : {F32, F64, I32, I64, Bool}) {
    FillSpec f = ir::is_bool(t)    ? FillSpec{Fill::Bool}
                 : ir::is_float(t) ? FillSpec{Fill::Uniform, -3, 3}
                                   : FillSpec{Fill::Integers, -99, 99};
    std::string s = " " + dt(t);
    add_case(cases, "reshape" + s, [&](Builder& b) {
      std::vector<std::pair<Dims, Dims>> rs = {{{13, 7}, {7, 13}},
                                               {{13, 7}, {-1}},
                                               {{2, 3, 4}, {4, -1, 2}},
                                               {{}, {1, 1}},
                                               {{1}, {}},
                                               {{3, 1000}, {1000, 3}},
                                               {{2, 3, 4}, {24}},
                                               {{6, 1}, {1, 2, 1, 3}}};
      for (const auto& [from, to] : rs)
        b.out(b.op(Op(OpKind::Reshape, ir::ReshapeAttrs{to}), {b.in(from, t, f)}));
    });
    add_case(cases, "transpose" + s, [&](Builder& b) {
      std::vector<std::pair<Dims, Dims>> ps = {{{13, 7}, {1, 0}},
                                               {{2, 3, 4}, {2, 0, 1}},
                                               {{2, 3, 4}, {-1, 0, 1}},
                                               {{2, 3, 4, 5}, {3, 1, 0, 2}},
                                               {{3, 1000}, {1, 0}},
                                               {{1, 1, 7}, {2, 1, 0}},
                                               {{7}, {0}},
                                               {{}, {}}};
      for (const auto& [dims, perm] : ps)
        b.out(b.op(Op(OpKind::Transpose, ir::TransposeAttrs{perm}), {b.in(dims, t, f)}));
    });
    add_case(cases, "narrow and slice" + s, [&](Builder& b) {
      NodeId x = b.in({13, 7}, t, f), big = b.in({3, 1000}, t, f), x3 = b.in({2, 3, 4}, t, f);
      b.out(b.op(Op(OpKind::Narrow, ir::NarrowAttrs{0, 3, 5}), {x}));
      b.out(b.op(Op(OpKind::Narrow, ir::NarrowAttrs{-1, 6, 1}), {x}));
      b.out(b.op(Op(OpKind::Narrow, ir::NarrowAttrs{1, 17, 900}), {big}));
      b.out(b.op(Op(OpKind::Narrow, ir::NarrowAttrs{2, 0, 4}), {x3}));
      b.out(b.op(Op(OpKind::Slice, ir::SliceAttrs{0, 1, 6, 2}), {x}));
      b.out(b.op(Op(OpKind::Slice, ir::SliceAttrs{1, 6, 7, -1}), {x}));
      b.out(b.op(Op(OpKind::Slice, ir::SliceAttrs{0, 12, 5, -3}), {x}));
      b.out(b.op(Op(OpKind::Slice, ir::SliceAttrs{1, 3, 142, 7}), {big}));
      b.out(b.op(Op(OpKind::Slice, ir::SliceAttrs{-1, 3, 2, -2}), {x3}));
    });
    add_case(cases, "concat" + s, [&](Builder& b) {
      b.out(
          b.op(Op(OpKind::Concat, ir::ConcatAttrs{1}), {b.in({13, 7}, t, f), b.in({13, 2}, t, f)}));
      b.out(b.op(Op(OpKind::Concat, ir::ConcatAttrs{0}),
                 {b.in({4, 3}, t, f), b.in({1, 3}, t, f), b.in({2, 3}, t, f)}));
      b.out(b.op(Op(OpKind::Concat, ir::ConcatAttrs{-2}),
                 {b.in({2, 3, 4}, t, f), b.in({2, 1, 4}, t, f)}));
      NodeId v = b.in({7}, t, f);
      b.out(b.op(Op(OpKind::Concat, ir::ConcatAttrs{0}), {v, v}));
      b.out(b.op(Op(OpKind::Concat, ir::ConcatAttrs{1}),
                 {b.in({3, 1000}, t, f), b.in({3, 1}, t, f)}));
    });
    add_case(cases, "expand" + s, [&](Builder& b) {
      std::vector<std::pair<Dims, Dims>> es = {
          {{4, 1}, {4, 5}}, {{}, {3, 2}},           {{1, 5}, {2, 3, 5}}, {{3, 1}, {2, -1, 7}},
          {{1}, {1000}},    {{1, 1, 1}, {2, 3, 4}}, {{13, 7}, {13, 7}}};
      for (const auto& [from, to] : es)
        b.out(b.op(Op(OpKind::Expand, ir::ExpandAttrs{to}), {b.in(from, t, f)}));
    });
    add_case(cases, "reverse" + s, [&](Builder& b) {
      NodeId x = b.in({13, 7}, t, f);
      for (Dims axes : std::vector<Dims>{{0}, {1}, {0, 1}, {0, 0}, {}})
        b.out(b.op(Op(OpKind::Reverse, ir::ReverseAttrs{axes}), {x}));
      b.out(b.op(Op(OpKind::Reverse, ir::ReverseAttrs{{-1, 0}}), {b.in({2, 3, 4}, t, f)}));
      b.out(b.op(Op(OpKind::Reverse, ir::ReverseAttrs{{1}}), {b.in({3, 1000}, t, f)}));
      b.out(b.op(Op(OpKind::Reverse, ir::ReverseAttrs{{}}), {b.in({}, t, f)}));
    });
    add_case(cases, "pad" + s, [&](Builder& b) {
      double value = ir::is_bool(t) ? 1 : (ir::is_float(t) ? 1.5 : 7);
      NodeId x = b.in({13, 7}, t, f);
      b.out(b.op(Op(OpKind::Pad, ir::PadAttrs{{1, 2, 0, 3}, ir::PadMode::Constant, value}), {x}));
      b.out(b.op(Op(OpKind::Pad, ir::PadAttrs{{2, 2, 3, 3}, ir::PadMode::Reflect, 0}), {x}));
      b.out(b.op(Op(OpKind::Pad, ir::PadAttrs{{0, 1, 4, 0}, ir::PadMode::Edge, 0}), {x}));
      b.out(b.op(Op(OpKind::Pad, ir::PadAttrs{{1, 0, 0, 2, 1, 1}, ir::PadMode::Constant, 0}),
                 {b.in({2, 3, 4}, t, f)}));
      b.out(
          b.op(Op(OpKind::Pad, ir::PadAttrs{{6, 6}, ir::PadMode::Reflect, 0}), {b.in({7}, t, f)}));
      b.out(b.op(Op(OpKind::Pad, ir::PadAttrs{{2, 2, 1, 1}, ir::PadMode::Edge, 0}),
                 {b.in({1, 1}, t, f)}));
      b.out(b.op(Op(OpKind::Pad, ir::PadAttrs{{0, 0, 5, 5}, ir::PadMode::Reflect, 0}),
                 {b.in({3, 1000}, t, f)}));
    });
    add_case(cases, "gather" + s, [&](Builder& b) {
      b.out(b.op(Op(OpKind::Gather, ir::GatherAttrs{0}),
                 {b.in({10, 4}, t, f), b.in({3}, I64, {Fill::Integers, -10, 9})}));
      b.out(b.op(Op(OpKind::Gather, ir::GatherAttrs{1}),
                 {b.in({2, 5, 3}, t, f), b.in({2, 2}, I32, {Fill::Integers, -5, 4})}));
      b.out(b.op(Op(OpKind::Gather, ir::GatherAttrs{-1}),
                 {b.in({2, 5, 3}, t, f), b.in({4}, F32, {Fill::Integers, -3, 2})}));
      b.out(
          b.op(Op(OpKind::Gather, ir::GatherAttrs{0}), {b.in({7}, t, f), b.values({}, I64, {-2})}));
      b.out(b.op(Op(OpKind::Gather, ir::GatherAttrs{1}),
                 {b.in({3, 1000}, t, f), b.in({5, 2}, I64, {Fill::Integers, -1000, 999})}));
    });
    add_case(cases, "scatter_add_top_k_argsort" + s, [&](Builder& b) {
      if (!ir::is_bool(t)) { // scatter_add accumulates numbers only
        b.out(b.op(Op(OpKind::ScatterAdd, ir::ScatterAddAttrs{0, 6}),
                   {b.in({9, 4}, t, f), b.in({9}, I64, {Fill::Integers, -6, 5})}));
        b.out(b.op(Op(OpKind::ScatterAdd, ir::ScatterAddAttrs{-1, 3}),
                   {b.in({2, 5}, t, f), b.in({5}, F32, {Fill::Integers, -3, 2})}));
      }
      b.out(b.op(Op(OpKind::TopK, ir::TopKAttrs{3, true}), {b.in({4, 7}, t, f)}));
      b.out(b.op(Op(OpKind::TopK, ir::TopKAttrs{5, false}), {b.in({2, 5}, t, f)}));
      b.out(b.op(Op(OpKind::ArgSort, ir::ArgSortAttrs{false}), {b.in({3, 8}, t, f)}));
      b.out(b.op(Op(OpKind::ArgSort, ir::ArgSortAttrs{true}), {b.in({3, 1000}, t, f)}));
    });
  }
  return cases;
}

// ---- Contractions

std::vector<Case> matmul_cases() {
  const std::vector<std::pair<Dims, Dims>> mm = {{{7}, {7}},
                                                 {{7}, {7, 5}},
                                                 {{5, 7}, {7}},
                                                 {{1, 1}, {1, 1}},
                                                 {{13, 7}, {7, 13}},
                                                 {{3, 1000}, {1000, 3}},
                                                 {{2, 3, 4}, {4, 5}},
                                                 {{2, 1, 3, 4}, {5, 4, 6}},
                                                 {{4}, {2, 4, 3}},
                                                 {{1, 13}, {13, 1}},
                                                 {{2, 3, 4}, {2, 4, 1}},
                                                 {{9, 9}, {9, 9}},
                                                 {{64, 33}, {33, 17}}};
  std::vector<Case> cases;
  for (DType t : {F32, F64, I32, I64})
    add_case(cases, "matmul " + dt(t), [&](Builder& b) {
      FillSpec f =
          ir::is_float(t) ? FillSpec{Fill::Uniform, -1, 1} : FillSpec{Fill::Integers, -5, 5};
      for (const auto& [l, r] : mm) b.out(b.op(Op(OpKind::MatMul), {b.in(l, t, f), b.in(r, t, f)}));
      NodeId sq = b.in({7, 7}, t, f);
      b.out(b.op(Op(OpKind::MatMul), {sq, sq})); // the same buffer on both sides
    });
  for (DType t : {F32, F64}) {
    add_case(cases, "fused_matmul_bias_act " + dt(t), [&](Builder& b) {
      std::vector<std::optional<ir::Activation>> acts{std::nullopt};
      for (OpKind k : activation_kinds()) acts.push_back(ir::as_activation(k));
      for (const auto& act : acts) {
        NodeId x = b.in({5, 7}, t, {Fill::Uniform, -1, 1}),
               w = b.in({7, 3}, t, {Fill::Uniform, -1, 1});
        b.out(
            b.op(Op(OpKind::FusedMatMulBiasAct, ir::FusedMatMulAttrs{act}), {x, w, b.in({3}, t)}));
      }
      b.out(b.op(Op(OpKind::FusedMatMulBiasAct, ir::FusedMatMulAttrs{ir::Activation::Gelu}),
                 {b.in({2, 5, 7}, t, {Fill::Uniform, -1, 1}),
                  b.in({7, 3}, t, {Fill::Uniform, -1, 1}), b.in({5, 3}, t)}));
    });
    add_case(cases, "fused_swiglu " + dt(t), [&](Builder& b) {
      for (bool gate_first : {false, true}) {
        b.out(b.op(Op(OpKind::FusedSwiGLU, ir::SwiGluAttrs{gate_first}), {b.in({2, 3, 8}, t)}));
        b.out(b.op(Op(OpKind::FusedSwiGLU, ir::SwiGluAttrs{gate_first}), {b.in({5, 6}, t)}));
      }
      DType other = t == DType::F64 ? DType::F32 : DType::F64;
      b.out(b.op(Op(OpKind::FusedSwiGLU, ir::SwiGluAttrs{true, other}), {b.in({3, 4}, t)}));
    });
  }
  return cases;
}

// ---- Norms, attention, positions, convolutions and pooling

std::vector<Case> nn_cases() {
  std::vector<Case> cases;
  for (DType t : {F32, F64}) {
    std::string s = " " + dt(t);
    FillSpec pos{Fill::Uniform, 0.1, 2};
    add_case(cases, "norms" + s, [&](Builder& b) {
      b.out(b.g.layer_norm(b.in({2, 3, 8}, t), b.in({8}, t), b.in({8}, t), -1, 1e-5f,
                           ir::Shape::of(Dims{2, 3, 8}, t)));
      b.out(b.op(Op(OpKind::LayerNorm, ir::NormAttrs{1, 1e-3f}),
                 {b.in({2, 6, 3}, t), b.in({6}, t), b.in({6}, t)}));
      b.out(b.op(Op(OpKind::RmsNorm, ir::NormAttrs{-1, 1e-6f}),
                 {b.in({4, 13}, t), b.in({13}, t), b.in({13}, t)}));
      // Rows around and well above the vector width (the JIT's row kernels), and values far
      // from zero (mean 100, spread 1: the centering must not lose precision).
      for (int64_t len : {17, 768})
        b.out(b.op(Op(OpKind::LayerNorm, ir::NormAttrs{-1, 1e-5f}),
                   {b.in({3, len}, t, {Fill::Uniform, 99, 101}), b.in({len}, t), b.in({len}, t)}));
      b.out(b.op(Op(OpKind::RmsNorm, ir::NormAttrs{1, 1e-5f}),
                 {b.in({2, 1000}, t), b.in({1000}, t), b.in({1000}, t)}));
      // 768: the JIT keeps each row's sums in stack scratch; 5000: too long, it recomputes them.
      for (int64_t len : {768, 5000})
        for (OpKind fk : {OpKind::FusedResidualLN, OpKind::FusedResidualRmsNorm})
          b.out(b.op(Op(fk, ir::FusedResidualNormAttrs{true, 1e-5f}),
                     {b.in({4, len}, t, {Fill::Uniform, 49, 51}), b.in({4, len}, t), b.in({len}, t),
                      b.in({len}, t), b.in({len}, t)}));
      // x computed by the row kernel's prologue, then kept with the residual in the scratch.
      for (OpKind fk : {OpKind::FusedResidualLN, OpKind::FusedResidualRmsNorm})
        b.out(b.op(Op(fk, ir::FusedResidualNormAttrs{false, 1e-5f}),
                   {b.op(Op(OpKind::Tanh), {b.in({3, 40}, t)}), b.in({3, 40}, t), b.in({40}, t),
                    b.in({40}, t)}));
      b.out(b.g.layer_norm2d(b.in({2, 4, 3, 3}, t), b.in({4}, t), b.in({4}, t), 1e-6f));
      b.out(b.g.group_norm(b.in({2, 6, 2, 3}, t), b.in({6}, t), b.in({6}, t), 3, 1e-5f));
      b.out(b.g.batch_norm_inference(b.in({2, 3, 4}, t), b.in({3}, t), b.in({3}, t), b.in({3}, t),
                                     b.in({3}, t, pos), 1e-5f));
      NodeId x = b.in({2, 3, 8}, t), r = b.in({2, 3, 8}, t);
      b.out(b.op(Op(OpKind::FusedResidualLN, ir::FusedResidualNormAttrs{false, 1e-5f}),
                 {x, r, b.in({8}, t), b.in({8}, t)}));
      b.out(b.op(Op(OpKind::FusedResidualLN, ir::FusedResidualNormAttrs{true, 1e-6f}),
                 {x, b.in({3, 8}, t), b.in({8}, t), b.in({8}, t), b.in({8}, t)}));
      b.out(b.op(Op(OpKind::FusedResidualRmsNorm, ir::FusedResidualNormAttrs{true, 1e-5f}),
                 {x, r, b.in({8}, t), b.in({8}, t), b.in({8}, t)}));
    });
    add_case(cases, "attention" + s, [&](Builder& b) {
      using ir::AttentionAttrs, ir::MaskType;
      auto att = [&](AttentionAttrs a, Dims q, Dims kv, std::vector<NodeId> extra) {
        std::vector<NodeId> ins{b.in(q, t), b.in(kv, t), b.in(kv, t)};
        ins.insert(ins.end(), extra.begin(), extra.end());
        b.out(b.op(Op(OpKind::Attention, a), ins));
      };
      att(AttentionAttrs{2, 4, MaskType::None}, {2, 3, 8}, {2, 5, 8}, {});
      att(AttentionAttrs{2, 4, MaskType::Causal}, {1, 3, 8}, {1, 5, 8}, {});
      att(AttentionAttrs{1, 4, MaskType::SlidingWindow, 2}, {2, 6, 4}, {2, 6, 4}, {});
      att(AttentionAttrs{2, 2, MaskType::Custom}, {2, 3, 4}, {2, 4, 4},
          {b.values({2, 4}, t, {1, 0, 1, 1, 0, 0, 0, 0})}); // the second batch: all keys masked
      att(AttentionAttrs{2, 3, MaskType::Bias, 0, 0.7f, 1.5f}, {1, 3, 6}, {1, 4, 6},
          {b.in({1, 2, 3, 4}, t)});
      att(AttentionAttrs{3, 5, MaskType::None, 0, std::nullopt, 30.0f}, {1, 7, 15}, {1, 9, 15}, {});
    });
    add_case(cases, "rope" + s, [&](Builder& b) {
      b.out(b.g.rope(b.in({2, 5, 8}, t), b.in({5, 2}, t), b.in({5, 2}, t), 4));
      b.out(b.g.rope_n_styled(b.in({1, 4, 12}, t), b.in({4, 2}, t), b.in({4, 2}, t), 6, 4,
                              ir::RopeStyle::GptJ));
      b.out(b.g.rope_n(b.in({1, 3, 12}, t), b.in({3, 1}, t), b.in({3, 1}, t), 6, 2));
      b.out(b.g.axial_rope2d(b.in({2, 6, 16}, t), 3, 2, 8, 2, 10000.0f, 1));
      b.out(b.g.axial_rope2d(b.in({1, 8, 8}, t), 2, 2, 8, 1, 100.0f, 2));
    });
    add_case(cases, "convolutions and pooling" + s, [&](Builder& b) {
      b.out(b.g.conv2d(b.in({1, 3, 7, 9}, t), b.in({4, 3, 3, 3}, t), {3, 3}, {1, 1}, {1, 1}, {1, 1},
                       1));
      b.out(b.g.conv2d(b.in({2, 4, 9, 7}, t), b.in({6, 2, 3, 2}, t), {3, 2}, {2, 1}, {1, 0}, {1, 2},
                       2));
      b.out(b.g.conv2d(b.in({1, 4, 5, 5}, t), b.in({4, 1, 3, 3}, t), {3, 3}, {1, 1}, {1, 1}, {1, 1},
                       4));
      b.out(b.g.im2col(b.in({1, 2, 4, 5}, t), {2, 3}, {1, 2}, {1, 0}, {1, 1}));
      b.out(b.g.conv_transpose2d(b.in({1, 4, 3, 5}, t), b.in({4, 3, 3, 2}, t), {3, 2}, {2, 1},
                                 {1, 0}, {1, 2}, {1, 0}, 2));
      b.out(b.g.conv3d(b.in({1, 2, 4, 3, 3}, t), b.in({4, 1, 2, 2, 2}, t), {1, 2, 1}, {1, 0, 1},
                       {1, 1, 2}, 2));
      b.out(b.g.conv_transpose3d(b.in({1, 2, 2, 3, 2}, t), b.in({2, 2, 2, 2, 2}, t), {2, 1, 1},
                                 {0, 1, 0}, {1, 1, 1}, {1, 0, 0}, 1));
      b.out(b.g.conv_transpose1d(b.in({2, 3, 5}, t), b.in({3, 2, 3}, t), 3, 2, 1, 1, 1, 1));
      b.out(b.g.max_pool2d(b.in({1, 2, 5, 6}, t), {3, 2}, {2, 2}, {1, 1}));
      b.out(b.g.max_pool2d(b.in({2, 1, 7, 7}, t, {Fill::Integers, -2, 2}), {2, 2}, {1, 1}, {0, 0}));
      b.out(b.g.avg_pool2d(b.in({1, 2, 5, 6}, t), {3, 3}, {2, 1}, {1, 1}));
    });
  }
  return cases;
}

// ---- Other dtypes, leaves and constants as outputs, zero-size tensors, run-time errors

std::vector<Case> half_cases() {
  std::vector<Case> cases;
  for (DType t : {F16, BF16})
    add_case(cases, "arithmetic " + dt(t), [&](Builder& b) {
      NodeId x = b.in({13, 7}, t, {Fill::Uniform, -2, 2}), y = b.in({7}, t, {Fill::Uniform, -2, 2});
      NodeId p = b.in({13, 7}, t, {Fill::Uniform, 0.1, 4});
      for (OpKind k : {OpKind::Add, OpKind::Sub, OpKind::Mul, OpKind::Div, OpKind::Max, OpKind::Lt})
        b.out(b.op(Op(k), {x, y}));
      for (OpKind k : {OpKind::Exp, OpKind::Tanh, OpKind::Sigmoid, OpKind::Gelu, OpKind::Neg})
        b.out(b.op(Op(k), {x}));
      b.out(b.op(Op(OpKind::Sqrt), {p}));
      b.out(b.op(Op(OpKind::Log), {p}));
      b.out(b.op(Op(OpKind::ReduceSum, ir::ReduceAttrs{{1}, false}), {x}));
      b.out(b.op(Op(OpKind::ReduceMean, ir::ReduceAttrs{{0, 1}, false}), {x}));
      b.out(b.op(Op(OpKind::ReduceMax, ir::ReduceAttrs{{0}, true}), {x}));
      b.out(b.op(Op(OpKind::Softmax, ir::AxisAttrs{-1}), {x}));
      b.out(b.op(Op(OpKind::MatMul), {x, b.in({7, 3}, t, {Fill::Uniform, -1, 1})}));
      b.out(b.op(Op(OpKind::Cast, ir::CastAttrs{F32}), {x}));
      b.out(b.op(Op(OpKind::Cast, ir::CastAttrs{t}), {b.in({40}, F32, {Fill::Special})}));
      b.out(b.op(Op(OpKind::Add), {x, b.in({13, 7}, F32)})); // promotes to f32
    });
  return cases;
}

std::vector<Case> narrow_int_cases() {
  std::vector<Case> cases;
  for (DType t : {I8, I16, U8, U32})
    add_case(cases, "saturating arithmetic " + dt(t), [&](Builder& b) {
      NodeId x = b.in({9, 1}, t, {Fill::IntEdge, 0, 9}), y = b.in({1, 9}, t, {Fill::IntEdge, 0, 9});
      for (OpKind k : {OpKind::Add, OpKind::Sub, OpKind::Mul, OpKind::Div, OpKind::Mod, OpKind::Max,
                       OpKind::Lt})
        b.out(b.op(Op(k), {x, y}));
      for (OpKind k : {OpKind::Neg, OpKind::Abs, OpKind::Relu}) b.out(b.op(Op(k), {x}));
      NodeId big = b.in({3, 100}, t, {Fill::IntEdge, 0, 100});
      b.out(b.op(Op(OpKind::ReduceSum, ir::ReduceAttrs{{1}, false}), {big}));
      b.out(b.op(Op(OpKind::Cumsum, ir::CumsumAttrs{1, false}), {big}));
      b.out(b.op(Op(OpKind::MatMul), {big, b.in({100, 2}, t, {Fill::Integers, 0, 3})}));
      b.out(
          b.op(Op(OpKind::Cast, ir::CastAttrs{t}), {b.in({40}, F32, {Fill::Uniform, -1e3, 1e3})}));
    });
  return cases;
}

std::vector<Case> output_cases() {
  std::vector<Case> cases;
  add_case(cases, "leaves, constants and repeated nodes as outputs", [&](Builder& b) {
    NodeId x = b.in({3}, F32), p = b.in({2}, I32, {Fill::Integers, -5, 5});
    NodeId c = b.g.constant(2.5, F32);
    NodeId y = b.op(Op(OpKind::Add), {x, c});
    Buffer vec =
        Buffer::from_f64(ir::Shape::of(Dims{4}, F64), std::vector<double>{1.5, -2, 0, 1e-300});
    ir::Bytes bytes;
    for (std::byte v : vec.bytes()) bytes.data.push_back(std::to_integer<uint8_t>(v));
    NodeId cv = b.g.append_node(Op(OpKind::Constant, ir::ConstantAttrs{bytes}), {}, vec.shape(),
                                std::nullopt);
    for (NodeId id :
         {x, y, c, y, p, b.g.constant(1.5, F16), b.g.constant(-7, I32), b.g.constant(1, Bool), cv,
          b.op(Op(OpKind::Mul), {cv, b.g.constant(3, F64)}), x})
      b.out(id);
  });
  add_case(cases, "a graph that only returns its input",
           [&](Builder& b) { b.out(b.in({2, 3}, F64)); });
  return cases;
}

/// Row ops whose first operand is an element-wise chain read by nothing else: the JIT computes
/// the chain inside the row kernel (the row step's prologue kernel, src/lir/partition.cpp). Rows of
/// many lengths, chain operands broadcast along the rows, across them, or one element.
std::vector<Case> prologue_cases() {
  std::vector<Case> cases;
  // One row op per case: element-wise chains of one shape in one graph would share a kernel
  // (several results), which then runs on its own.
  enum class Row { Softmax, SumExp, MaxSquare, LayerNormTanh };
  for (DType t : {F32, F64})
    for (Dims d : std::vector<Dims>{{3, 1}, {2, 7}, {4, 16}, {3, 33}, {2, 3, 1000}})
      for (Row row : {Row::Softmax, Row::SumExp, Row::MaxSquare, Row::LayerNormTanh}) {
        std::string name = "row op " + std::to_string(int(row)) + " with a prologue " + dt(t) +
                           " over " + std::to_string(d.size()) + "-d rows of " +
                           std::to_string(d.back());
        add_case(cases, name, [&](Builder& b) {
          int64_t len = d.back();
          NodeId x = b.in(d, t, {Fill::Uniform, -3, 3});
          NodeId along = b.in({len}, t, {Fill::Uniform, -1, 1}); // varies along a row
          Dims across_dims = d;
          across_dims.back() = 1;
          NodeId across = b.in(across_dims, t, {Fill::Uniform, -1, 1}); // constant along a row
          switch (row) {
          case Row::Softmax: {
            NodeId half = b.g.constant(0.5, t);
            NodeId scaled = b.op(Op(OpKind::Add), {b.op(Op(OpKind::Mul), {x, half}), along});
            b.out(b.op(Op(OpKind::Softmax, ir::AxisAttrs{-1}), {scaled}));
            break;
          }
          case Row::SumExp:
            b.out(b.op(Op(OpKind::ReduceSum, ir::ReduceAttrs{{-1}, false}),
                       {b.op(Op(OpKind::Exp), {b.op(Op(OpKind::Sub), {x, across})})}));
            break;
          case Row::MaxSquare:
            b.out(b.op(Op(OpKind::ReduceMax, ir::ReduceAttrs{{-1}, true}),
                       {b.op(Op(OpKind::Mul), {x, x})}));
            break;
          case Row::LayerNormTanh: {
            NodeId gamma = b.in({len}, t, {Fill::Uniform, 0.5, 1.5});
            NodeId beta = b.in({len}, t, {Fill::Uniform, -1, 1});
            NodeId moved = b.op(Op(OpKind::Tanh), {b.op(Op(OpKind::Add), {x, along})});
            b.out(b.op(Op(OpKind::LayerNorm, ir::NormAttrs{-1, 1e-5f}), {moved, gamma, beta}));
            break;
          }
          }
        });
      }
  return cases;
}

std::vector<Case> zero_size_cases() {
  std::vector<Case> cases;
  add_case(cases, "zero-size tensors", [&](Builder& b) {
    NodeId x = b.in({0, 3}, F32), y = b.in({3}, F32), xi = b.in({0, 3}, I32);
    b.out(b.op(Op(OpKind::Add), {x, y}));
    b.out(b.op(Op(OpKind::Exp), {x}));
    for (OpKind k : {OpKind::ReduceSum, OpKind::ReduceMean, OpKind::ReduceProd}) {
      b.out(b.op(Op(k, ir::ReduceAttrs{{0}, false}), {x}));
      b.out(b.op(Op(k, ir::ReduceAttrs{{0}, true}), {xi}));
      b.out(b.op(Op(k, ir::ReduceAttrs{{1}, false}), {x}));
    }
    b.out(b.op(Op(OpKind::ReduceMax, ir::ReduceAttrs{{1}, false}), {x}));
    b.out(b.op(Op(OpKind::MatMul), {b.in({2, 0}, F32), b.in({0, 3}, F32)}));
    b.out(b.op(Op(OpKind::MatMul), {b.in({2, 0}, I64), b.in({0, 3}, I64)}));
    b.out(b.op(Op(OpKind::Concat, ir::ConcatAttrs{0}), {x, b.in({2, 3}, F32)}));
    b.out(b.op(Op(OpKind::Reshape, ir::ReshapeAttrs{{3, 0}}), {x}));
    b.out(b.op(Op(OpKind::Transpose, ir::TransposeAttrs{{1, 0}}), {x}));
    b.out(b.op(Op(OpKind::Slice, ir::SliceAttrs{0, 0, 0, 1}), {b.in({7}, F64)}));
    b.out(b.op(Op(OpKind::Cumsum, ir::CumsumAttrs{0, false}), {x}));
    b.out(b.op(Op(OpKind::Softmax, ir::AxisAttrs{1}), {x}));
  });
  return cases;
}

std::vector<Case> runtime_error_cases() {
  std::vector<Case> cases;
  add_case(
      cases, "gather with an index past the end",
      [&](Builder& b) {
        b.out(b.op(Op(OpKind::Gather, ir::GatherAttrs{0}),
                   {b.in({10, 4}, F32), b.values({2}, I64, {3, 10})}));
      },
      true);
  add_case(
      cases, "gather with a NaN float index",
      [&](Builder& b) {
        b.out(b.op(Op(OpKind::Gather, ir::GatherAttrs{0}),
                   {b.in({10, 4}, F32), b.values({2}, F32, {1, std::nan("")})}));
      },
      true);
  add_case(
      cases, "reduce_max over a zero-length axis",
      [&](Builder& b) {
        b.out(b.op(Op(OpKind::ReduceMax, ir::ReduceAttrs{{0}, false}), {b.in({0, 3}, F32)}));
      },
      true);
  add_case(
      cases, "argmin over a zero-length axis",
      [&](Builder& b) {
        b.out(b.op(Op(OpKind::ArgMin, ir::ArgReduceAttrs{0, false}), {b.in({0, 3}, I32)}));
      },
      true);
  return cases;
}

/// Every case of the op table (everything but the fixtures).
// ---- Spectral: fft (FFTW on the JIT, our own double FFT in the interpreter), lfilter,
// conjugate and complex_norm_sq.

std::vector<Case> spectral_cases() {
  std::vector<Case> cases;
  const std::vector<Dims> shapes = {{2, 2}, {3, 14}, {2, 3, 34}, {1, 256}, {4, 2 * 45}};
  for (DType t : {F32, F64})
    add_case(cases, "fft " + dt(t) + " in every norm, forward and inverse", [&](Builder& b) {
      for (const Dims& d : shapes)
        for (ir::FftNorm norm : {ir::FftNorm::Backward, ir::FftNorm::Forward, ir::FftNorm::Ortho})
          for (bool inv : {false, true})
            b.out(b.op(Op(OpKind::Fft, ir::FftAttrs{inv, norm}),
                       {b.in(d, t, {Fill::Uniform, -1, 1})}));
    });
  add_case(cases, "fft, conjugate and complex_norm_sq of c64", [&](Builder& b) {
    for (const Dims& d : shapes) {
      NodeId re = b.in(d, F32, {Fill::Uniform, -1, 1});
      NodeId z = b.op(Op(OpKind::Cast, ir::CastAttrs{C64}), {re});
      NodeId zz = b.op(Op(OpKind::Fft, ir::FftAttrs{false, ir::FftNorm::Backward}), {z});
      b.out(zz);
      b.out(b.op(Op(OpKind::Fft, ir::FftAttrs{true, ir::FftNorm::Ortho}), {zz}));
      b.out(b.op(Op(OpKind::Conjugate), {zz}));
      b.out(b.op(Op(OpKind::ComplexNormSq), {zz}));
    }
  });
  for (DType t : {F32, F64})
    add_case(cases, "lfilter " + dt(t) + " with and without an initial state", [&](Builder& b) {
      NodeId x = b.in({2, 3, 50}, t, {Fill::Uniform, -1, 1});
      NodeId bb = b.values({3}, t, {0.2, 0.3, -0.1});
      NodeId a = b.values({3}, t, {1.0, -0.5, 0.25});
      b.out(b.op(Op(OpKind::Lfilter), {x, bb, a}));
      b.out(b.op(Op(OpKind::Lfilter), {x, bb, a, b.in({3, 2}, t, {Fill::Uniform, -1, 1})}));
      b.out(b.op(Op(OpKind::Lfilter), {b.in({7}, t, {Fill::Uniform, -1, 1}),
                                       b.values({1}, t, {2.0}), b.values({1}, t, {4.0})}));
    });
  return cases;
}

// ---- State-space scans: selective_scan (the JIT's own kernel in f32, the interpreter's in f64),
// mamba2 and gated_delta_net (the interpreter's kernels on the JIT).
std::vector<Case> ssm_cases() {
  std::vector<Case> cases;
  for (DType t : {F32, F64})
    add_case(cases, "selective_scan, mamba2 and gated_delta_net " + dt(t), [&](Builder& b) {
      auto in = [&](Dims d, double lo, double hi) { return b.in(d, t, {Fill::Uniform, lo, hi}); };
      for (Dims d : {Dims{2, 9, 11, 4}, Dims{1, 1, 8, 16}, Dims{1, 40, 3, 2}}) {
        NodeId x = in({d[0], d[1], d[2]}, -2, 2), dl = in({d[0], d[1], d[2]}, 0.01, 1.5);
        NodeId a = in({d[2], d[3]}, -3, -0.05);
        NodeId bb = in({d[0], d[1], d[3]}, -1, 1), c = in({d[0], d[1], d[3]}, -1, 1);
        b.out(b.op(Op(OpKind::SelectiveScan, ir::SelectiveScanAttrs{d[3]}), {x, dl, a, bb, c}));
      }
      NodeId x = in({2, 5, 4, 3}, -2, 2), dt4 = in({2, 5, 4}, 0.01, 1), a4 = in({4}, -2, -0.1);
      NodeId bg = in({2, 5, 2, 6}, -1, 1), cg = in({2, 5, 2, 6}, -1, 1);
      b.out(b.op(Op(OpKind::Mamba2, ir::Mamba2Attrs{3, 6}), {x, dt4, a4, bg, cg}));
      NodeId bs = in({2, 5, 6}, -1, 1), cs = in({2, 5, 6}, -1, 1);
      b.out(b.op(Op(OpKind::Mamba2, ir::Mamba2Attrs{3, 6}), {x, dt4, a4, bs, cs}));
      NodeId q = in({2, 6, 3, 4}, -0.5, 0.5), k = in({2, 6, 3, 4}, -0.5, 0.5);
      NodeId v = in({2, 6, 3, 4}, -1, 1), g = in({2, 6, 3}, -1, 0), beta = in({2, 6, 3}, 0, 1);
      b.out(b.op(Op(OpKind::GatedDeltaNet, ir::GatedDeltaNetAttrs{4, false}), {q, k, v, g, beta}));
      b.out(b.op(Op(OpKind::GatedDeltaNet, ir::GatedDeltaNetAttrs{4, true}),
                 {q, k, v, g, beta, in({2, 3, 4, 4}, -1, 1)}));
    });
  return cases;
}

// ---- Recurrent cells: lstm, gru, rnn (the JIT's step: one GEMM for the input projections,
// per step a GEMM with W_hh^T and a fused gate loop), random weights in the packed layout.
std::vector<Case> recurrent_cases() {
  std::vector<Case> cases;
  struct Spec {
    OpKind kind;
    int64_t hidden, layers;
    bool bidir, batch_first, relu, init, carry;
    int64_t batch, seq, input;
  };
  const Spec specs[] = {
      {OpKind::Lstm, 32, 1, false, true, false, false, false, 3, 7, 16},
      {OpKind::Lstm, 5, 2, true, true, false, true, true, 2, 4, 3},
      {OpKind::Lstm, 9, 1, false, false, false, true, true, 4, 3, 6},
      {OpKind::Gru, 17, 2, true, true, false, true, true, 3, 5, 4},
      {OpKind::Gru, 8, 1, false, false, false, false, false, 1, 6, 8},
      {OpKind::Rnn, 12, 2, false, true, false, false, true, 2, 5, 3},
      {OpKind::Rnn, 6, 1, true, false, true, true, false, 3, 4, 5},
  };
  for (DType t : {F32, F64})
    for (const Spec& p : specs) {
      std::string name = std::string(ir::op_name(p.kind)) + " " + dt(t) + " hidden " +
                         std::to_string(p.hidden) + " layers " + std::to_string(p.layers) +
                         (p.bidir ? " bidirectional" : "") + (p.batch_first ? "" : " seq first") +
                         (p.relu ? " relu" : "") + (p.init ? " initial state" : "") +
                         (p.carry ? " final states" : "");
      add_case(cases, name, [&](Builder& b) {
        const int64_t d = p.bidir ? 2 : 1, g = p.kind == OpKind::Lstm  ? 4
                                               : p.kind == OpKind::Gru ? 3
                                                                       : 1;
        const int64_t gh = g * p.hidden;
        int64_t n_ih = 0;
        for (int64_t l = 0; l < p.layers; ++l) n_ih += d * gh * (l == 0 ? p.input : d * p.hidden);
        const ir::RecurrentAttrs a{p.hidden, p.layers, p.bidir, p.batch_first, p.relu, p.carry};
        FillSpec w{Fill::Uniform, -0.4, 0.4};
        std::vector<NodeId> ins{
            b.in(p.batch_first ? Dims{p.batch, p.seq, p.input} : Dims{p.seq, p.batch, p.input}, t,
                 {Fill::Uniform, -1, 1}),
            b.in({n_ih}, t, w), b.in({p.layers * d * gh * p.hidden}, t, w),
            b.in({p.layers * d * gh}, t, w)};
        if (p.kind == OpKind::Gru) ins.push_back(b.in({p.layers * d * gh}, t, w));
        for (int64_t k = 0; p.init && k < (p.kind == OpKind::Lstm ? 2 : 1); ++k)
          ins.push_back(b.in({p.layers * d, p.batch, p.hidden}, t, {Fill::Uniform, -1, 1}));
        b.out(b.op(Op(p.kind, a), ins));
      });
    }
  return cases;
}

// ---- Sub-graphs: custom_fn (inlined by the pipeline on both backends; a runtime step through
// the interpreter's kernel where the JIT sees it un-inlined).
std::vector<Case> control_cases() {
  std::vector<Case> cases;
  for (DType t : {F32, F64})
    add_case(cases, "custom_fn " + dt(t) + ", nested, on matrices and scalars", [&](Builder& b) {
      auto body = [&](const Dims& d) {
        ir::Graph f("f");
        NodeId x = f.input("x", ir::Shape::of(d, t));
        NodeId y = f.input("y", ir::Shape::of(d, t));
        f.set_outputs({f.add(f.mul(f.tanh(x), y), f.exp(f.neg(f.mul(x, x))))});
        return f;
      };
      for (const Dims& d : {Dims{3, 17}, Dims{}, Dims{2, 1, 40}}) {
        NodeId x = b.in(d, t, {Fill::Uniform, -2, 2}), y = b.in(d, t, {Fill::Uniform, -2, 2});
        NodeId v = b.out(b.g.custom_fn({x, y}, body(d)));
        // A body calling a custom_fn.
        ir::Graph outer("outer");
        NodeId p = outer.input("p", ir::Shape::of(d, t));
        outer.set_outputs(
            {outer.add_inferred(Op(OpKind::Sin), {outer.custom_fn({p, p}, body(d))})});
        b.out(b.g.custom_fn({v}, outer));
      }
    });
  // A registered custom op: the JIT runs its kernel as a step between fused kernels.
  add_case(cases, "custom op (registered x*|x|) between element-wise ops", [&](Builder& b) {
    CustomOp op;
    op.infer_shape = [](std::span<const ir::Shape> in, AttrBytes) { return in[0]; };
    op.kernel = [](std::span<const Buffer* const> in, Buffer& out, AttrBytes) {
      for (int64_t i = 0; i < out.numel(); ++i)
        out.set_f64(i, in[0]->get_f64(i) * std::fabs(in[0]->get_f64(i)));
    };
    register_op("backends.signed_square", op, true);
    for (DType t : {F32, F64}) {
      NodeId x = b.in({3, 17}, t, {Fill::Uniform, -2, 2});
      NodeId y = b.g.custom_op("backends.signed_square", {}, {b.g.tanh(x)});
      b.out(b.g.exp(b.g.neg(y)));
    }
  });
  // scan: a loop over time whose body the JIT compiles once (ScanStep); its backward companions
  // with a hand-written body_vjp, from the full trajectory and from checkpoints.
  for (DType t : {F32, F64})
    add_case(cases, "scan " + dt(t) + " with broadcast and per-step operands", [&](Builder& b) {
      const int64_t len = 7;
      ir::Shape c = ir::Shape::of(Dims{2, 3}, t), row = ir::Shape::of(Dims{3}, t);
      ir::Graph body("step");
      NodeId h = body.input("h", c), w = body.input("w", ir::Shape::of(Dims{3, 3}, t));
      NodeId x = body.input("x", row);
      body.set_outputs({body.tanh(body.add(body.mm(h, w), x))});
      NodeId h0 = b.in({2, 3}, t, {Fill::Uniform, -1, 1});
      NodeId wv = b.in({3, 3}, t, {Fill::Uniform, -0.8, 0.8});
      NodeId xs = b.in({len, 3}, t, {Fill::Uniform, -1, 1});
      b.out(b.g.scan_with_bcasts_and_xs(h0, {wv}, {xs}, body, len));
      ir::ScanAttrs a;
      a.body = ir::SubGraph(body);
      a.length = len;
      a.save_trajectory = true;
      a.num_bcast = 1;
      a.num_xs = 1;
      b.out(b.op(Op(OpKind::Scan, a), {h0, wv, xs}));
      a.num_checkpoints = 3;
      b.out(b.op(Op(OpKind::Scan, a), {h0, wv, xs}));
    });
  for (DType t : {F32, F64})
    add_case(cases, "scan_backward and scan_backward_xs " + dt(t), [&](Builder& b) {
      const int64_t len = 6;
      ir::Shape c = ir::Shape::of(Dims{4}, t);
      ir::Graph fwd("mul_step");
      fwd.set_outputs({fwd.mul(fwd.input("c", c), fwd.input("a", c))});
      ir::Graph vjp("mul_step_vjp");
      NodeId vc = vjp.input("c", c), va = vjp.input("a", c), d = vjp.input("d_output", c);
      vjp.set_outputs({vjp.mul(d, va), vjp.mul(d, vc)});
      NodeId c0 = b.in({4}, t, {Fill::Uniform, -1, 1});
      NodeId traj = b.in({len, 4}, t, {Fill::Uniform, -1, 1});
      NodeId cps = b.in({2, 4}, t, {Fill::Uniform, -1, 1});
      NodeId up = b.in({4}, t, {Fill::Uniform, -1, 1});
      NodeId ups = b.in({len, 4}, t, {Fill::Uniform, -1, 1});
      NodeId as = b.in({len, 4}, t, {Fill::Uniform, -1.2, 1.2});
      ir::Shape xs_shape = ir::Shape::of(Dims{len, 4}, t);
      b.out(b.g.scan_backward(c0, traj, up, {as}, vjp, len, false, c));
      b.out(b.g.scan_backward_xs(c0, traj, ups, {as}, vjp, len, true, 0, xs_shape));
      b.out(b.g.scan_backward_with_checkpoints(c0, cps, up, {as}, vjp, len, false, 2, fwd, c));
      b.out(b.g.scan_backward_xs_with_checkpoints(c0, cps, ups, {as}, vjp, len, true, 0, 2, fwd,
                                                  xs_shape));
    });
  return cases;
}

/// The Linalg kinds run the same LAPACK kernels on both backends (the JIT's interpreter steps):
/// batched f32 and f64, matrix and vector right-hand sides, full and reduced SVDs.
std::vector<Case> linalg_cases() {
  std::vector<Case> cases;
  for (DType t : {F32, F64})
    add_case(cases, "solve, slogdet, cholesky, qr, svd and eigh " + dt(t), [&](Builder& b) {
      NodeId a = b.in({2, 3, 3}, t, {Fill::Uniform, -1, 1});
      b.out(b.op(Op(OpKind::Solve), {a, b.in({2, 3, 2}, t, {Fill::Uniform, -1, 1})}));
      b.out(b.op(Op(OpKind::Solve), {a, b.in({2, 3}, t, {Fill::Uniform, -1, 1})}));
      b.out(b.op(Op(OpKind::Slogdet), {a}));
      NodeId at = b.op(Op(OpKind::Transpose, ir::TransposeAttrs{{0, 2, 1}}), {a});
      NodeId spd = b.op(Op(OpKind::Add), {b.op(Op(OpKind::MatMul), {a, at}),
                                          b.values({3, 3}, t, {3, 0, 0, 0, 3, 0, 0, 0, 3})});
      b.out(b.op(Op(OpKind::Cholesky), {spd}));
      b.out(b.op(Op(OpKind::Eigh), {spd}));
      NodeId m = b.in({2, 4, 3}, t, {Fill::Uniform, -1, 1});
      b.out(b.op(Op(OpKind::Qr), {m}));
      b.out(b.op(Op(OpKind::Svd, ir::SvdAttrs{false}), {m}));
      b.out(b.op(Op(OpKind::Svd, ir::SvdAttrs{true}), {b.in({3, 5}, t, {Fill::Uniform, -1, 1})}));
    });
  return cases;
}

/// The Quant kinds: q_matmul with an i8 w on the JIT's int8 GEMM (VNNI hosts), the others on
/// the interpreter's kernels; integer results must agree exactly.
std::vector<Case> quant_cases() {
  std::vector<Case> cases;
  add_case(cases, "quantize, dequantize, fake_quantize, q_matmul and q_conv2d", [&](Builder& b) {
    auto quantize = [&](NodeId x, std::optional<int64_t> axis, std::vector<float> scales,
                        ir::Ints zps, DType t) {
      return b.op(Op(OpKind::Quantize, ir::QuantizeAttrs{axis, scales, zps, t}), {x});
    };
    NodeId x = b.in({5, 37}, F32, {Fill::Uniform, -2, 2});
    NodeId w = b.in({37, 9}, F32, {Fill::Uniform, -1, 1});
    NodeId qx = quantize(x, std::nullopt, {0.02f}, {128}, DType::U8);
    NodeId qw = quantize(w, 1, std::vector<float>(9, 0.01f), ir::Ints(9, 0), DType::I8);
    b.out(b.op(Op(OpKind::QMatMul, ir::QMatMulAttrs{128, {0}, 3, {0.004f}, DType::I8}), {qx, qw}));
    b.out(b.op(Op(OpKind::QMatMul, ir::QMatMulAttrs{128, {0}, 0, {1.0f}, DType::I32}), {qx, qw}));
    b.out(b.op(Op(OpKind::Dequantize,
                  ir::DequantizeAttrs{1, std::vector<float>(9, 0.01f), ir::Ints(9, 0)}),
               {qw}));
    b.out(b.op(Op(OpKind::FakeQuantize, ir::QuantizeAttrs{std::nullopt, {0.05f}, {-3}}), {x}));
    NodeId img = quantize(b.in({1, 4, 6, 5}, F32, {Fill::Uniform, -1, 1}), std::nullopt, {0.01f},
                          {0}, DType::I8);
    NodeId k = quantize(b.in({6, 2, 3, 2}, F32, {Fill::Uniform, -1, 1}), std::nullopt, {0.01f}, {0},
                        DType::I8);
    ir::QConv2dAttrs conv{{3, 2}, {1, 1}, {1, 0}, {1, 1}, 2, 0, {0}, 2, {0.003f}, DType::U8};
    b.out(b.op(Op(OpKind::QConv2d, conv), {img, k}));
  });
  return cases;
}

std::vector<Case> packed_cases() {
  std::vector<Case> cases;
  add_case(cases, "dequant_matmul: Q8_0 packed bytes, Int8Block and FP8 E4M3 split forms",
           [&](Builder& b) {
             std::vector<double> q8; // two rows of two Q8_0 blocks: d = 1 (f16 0x3C00), codes
             for (int blk = 0; blk < 4; ++blk) {
               q8.push_back(0x00);
               q8.push_back(0x3C);
               for (int i = 0; i < 32; ++i) q8.push_back(double((blk * 37 + i * 11) % 256));
             }
             NodeId x = b.in({3, 64}, F32, {Fill::Uniform, -1, 1});
             b.out(b.op(Op(OpKind::DequantMatMul,
                           ir::DequantMatMulAttrs{ir::QuantScheme::of(ir::QuantFormat::Q8_0)}),
                        {x, b.values({2, 68}, ir::DType::U8, q8)}));
             b.out(b.op(
                 Op(OpKind::DequantMatMul, ir::DequantMatMulAttrs{ir::QuantScheme::int8_block(32)}),
                 {x, b.in({5, 64}, ir::DType::I8, {Fill::Uniform, -127, 127}),
                  b.in({5, 2}, F32, {Fill::Uniform, 0.01, 0.05}),
                  b.in({5, 2}, F32, {Fill::Uniform, 0, 1})}));
             std::vector<double> codes;
             for (int i = 0; i < 4 * 64; ++i) codes.push_back(double((i * 29) % 0x7F));
             b.out(b.op(Op(OpKind::DequantMatMul,
                           ir::DequantMatMulAttrs{ir::QuantScheme::of(ir::QuantFormat::Fp8E4m3)}),
                        {x, b.values({4, 64}, ir::DType::U8, codes),
                         b.in({4}, F32, {Fill::Uniform, 0.001, 0.01}), b.values({1}, F32, {0})}));
           });
  return cases;
}

/// The Collective kinds on a job of one process (the suite's): every reduction, gather and
/// scatter leaves x as it is and a message to this rank comes back; both backends run the same
/// kernels (the JIT's interpreter steps). Several ranks: tests/test_dist.cpp.
std::vector<Case> collective_cases() {
  std::vector<Case> cases;
  for (DType t : {F32, F64})
    add_case(cases, "collectives of one rank " + dt(t), [&](Builder& b) {
      NodeId x = b.in({3, 4}, t, {Fill::Uniform, -2, 2});
      for (ir::CollectiveOp op : {ir::CollectiveOp::Sum, ir::CollectiveOp::Mean,
                                  ir::CollectiveOp::Max, ir::CollectiveOp::Min})
        b.out(b.op(Op(OpKind::AllReduce, ir::AllReduceAttrs{op}), {x}));
      b.out(b.op(Op(OpKind::AllGather, ir::GatherRanksAttrs{1, 1}), {x}));
      b.out(b.op(Op(OpKind::ReduceScatter, ir::GatherRanksAttrs{0, 1}), {x}));
      b.out(b.op(Op(OpKind::Broadcast, ir::RootAttrs{0}), {x}));
      b.out(b.op(Op(OpKind::ReduceToRoot, ir::RootAttrs{0}), {x}));
      NodeId sent = b.op(Op(OpKind::Send, ir::PeerAttrs{0, 5}), {x});
      b.out(b.op(Op(OpKind::Recv, ir::PeerAttrs{0, 5}), {sent}));
    });
  return cases;
}

/// The Random family runs the interpreter's kernels on both backends (the JIT's interpreter
/// steps): every distribution and key operation, and sample with a seed and with a key operand.
std::vector<Case> random_cases() {
  std::vector<Case> cases;
  add_case(cases, "random draws of every kind, and sample", [&](Builder& b) {
    NodeId key = b.values({}, I64, {12345});
    auto draw = [&](ir::RandomDist dist, Dims sizes, DType t, double lo, double hi, int64_t ilo,
                    int64_t ihi) {
      b.out(b.op(Op(OpKind::Random, ir::RandomAttrs{dist, sizes, t, lo, hi, ilo, ihi}), {key}));
    };
    draw(ir::RandomDist::Uniform, {3, 4}, F32, -1, 2, 0, 0);
    draw(ir::RandomDist::Normal, {5}, F64, 0, 1, 0, 0);
    draw(ir::RandomDist::Gumbel, {5}, F32, 0, 1, 0, 0);
    draw(ir::RandomDist::Exponential, {5}, F64, 0, 1, 0, 0);
    draw(ir::RandomDist::Bernoulli, {7}, DType::Bool, 0.4, 1, 0, 0);
    draw(ir::RandomDist::Randint, {6}, I32, 0, 1, -4, 9);
    draw(ir::RandomDist::Permutation, {5}, I64, 0, 1, 0, 8);
    draw(ir::RandomDist::Split, {3}, I64, 0, 1, 0, 0);
    draw(ir::RandomDist::FoldIn, {}, I64, 0, 1, 99, 0);
    NodeId logits = b.in({3, 9}, F32, {Fill::Uniform, -2, 2});
    b.out(b.op(Op(OpKind::Sample, ir::SampleAttrs{3, 0.9f, 0.8f, 7}), {logits}));
    b.out(b.op(Op(OpKind::Sample, ir::SampleAttrs{0, 1.0f, 1.0f, 0}), {logits, key}));
  });
  return cases;
}

/// The Splat kinds (one kernel, run with tiles on the JIT's thread pool): render, prepare then
/// rasterize, and the backward, on four Gaussians in front of a 16x16 camera in 8-pixel tiles.
std::vector<Case> splat_cases() {
  std::vector<Case> cases;
  add_case(cases, "gaussian_splat render, prepare, rasterize and backward", [&](Builder& b) {
    const double tan_y = std::tan(25.0 * 3.14159265358979323846 / 180.0), fy = 16 / (2 * tan_y);
    NodeId means = b.op(Op(OpKind::Add), {b.in({4, 3}, F32, {Fill::Uniform, -0.5, 0.5}),
                                          b.values({1, 3}, F32, {0, 0, 3})});
    std::vector<NodeId> scene{
        means,
        b.in({4, 3}, F32, {Fill::Uniform, -2, -1}),
        b.in({4, 4}, F32, {Fill::Uniform, -1, 1}),
        b.in({4}, F32, {Fill::Uniform, -1, 2}),
        b.in({4, 3}, F32, {Fill::Uniform, -1, 1}),
        b.in({4, 3, 3}, F32, {Fill::Uniform, -0.3, 0.3}),
        b.values({23}, F32, {0,   0,   0,   0,  0,  1,  0,  1, 0, 50,    0.2,  100,
                             0.1, 0.2, 0.3, 16, 16, fy, fy, 8, 8, tan_y, tan_y})};
    ir::GaussianSplatAttrs a;
    a.width = 16;
    a.height = 16;
    a.tile_size = 8;
    b.out(b.op(Op(OpKind::GaussianSplatRender, a), scene));
    NodeId prep = b.op(Op(OpKind::GaussianSplatPrepare, a), scene);
    b.out(b.op(Op(OpKind::GaussianSplatRasterize, a), {prep, scene[6]}));
    ir::GaussianSplatBackwardAttrs ba;
    ba.width = 16;
    ba.height = 16;
    ba.tile_size = 8;
    std::vector<NodeId> with_d = scene;
    with_d.push_back(b.in({16, 16, 4}, F32, {Fill::Uniform, -1, 1}));
    b.out(b.op(Op(OpKind::GaussianSplatRenderBackward, ba), with_d));
  });
  return cases;
}

std::vector<Case> all_table_cases() {
  std::vector<Case> all;
  for (auto f : {unary_cases,       unary_edge_cases,  int_unary_cases,     binary_cases,
                 binary_edge_cases, mixed_dtype_cases, where_cases,         cast_cases,
                 reduce_cases,      arg_reduce_cases,  scan_cases,          movement_cases,
                 matmul_cases,      nn_cases,          half_cases,          narrow_int_cases,
                 output_cases,      zero_size_cases,   runtime_error_cases, spectral_cases,
                 ssm_cases,         control_cases,     recurrent_cases,     linalg_cases,
                 quant_cases,       packed_cases,      collective_cases,    random_cases,
                 splat_cases})
    for (Case& c : f()) all.push_back(std::move(c));
  return all;
}

} // namespace

TEST_CASE(
    "backends: every op fixture in tests/fixtures/ops gives the same outputs on both backends") {
  std::vector<Case> cases = fixture_cases();
  REQUIRE(cases.size() >= 50);
  run_cases(cases);
}

TEST_CASE("backends: custom_fn and scans agree, nested and on every shape") {
  run_cases(control_cases());
}

TEST_CASE("backends: selective_scan (the JIT's kernel), mamba2 and gated_delta_net agree") {
  run_cases(ssm_cases());
}

TEST_CASE(
    "backends: lstm, gru and rnn agree: layers, directions, layouts, initial and final states") {
  run_cases(recurrent_cases());
}

TEST_CASE("backends: fft (FFTW on the JIT), lfilter and the complex helpers agree") {
  run_cases(spectral_cases());
}

TEST_CASE("backends: element-wise unary ops agree on scalars, size-1 dims, odd and large shapes") {
  run_cases(unary_cases());
}

TEST_CASE("backends: unary ops agree on NaN, infinities, signed zeros and other edge values") {
  run_cases(unary_edge_cases());
}

TEST_CASE("backends: integer unary ops agree, the most negative integers included") {
  run_cases(int_unary_cases());
}

TEST_CASE("backends: binary ops agree with broadcasting in f32, f64, i32, i64 and bool") {
  run_cases(binary_cases());
}

TEST_CASE(
    "backends: binary ops agree on every pair of edge values (NaN, zero divisors, extremes)") {
  run_cases(binary_edge_cases());
}

TEST_CASE("backends: binary ops on operands of different dtypes promote alike") {
  run_cases(mixed_dtype_cases());
}

TEST_CASE("backends: where agrees with broadcast, mixed and non-bool operands") {
  run_cases(where_cases());
}

TEST_CASE("backends: casts between every pair of dtypes agree, NaN and out-of-range values too") {
  run_cases(cast_cases());
}

TEST_CASE("backends: reductions agree over every choice of axes, with and without keep_dim") {
  run_cases(reduce_cases());
}

TEST_CASE("backends: argmax and argmin agree, ties and NaN included") {
  run_cases(arg_reduce_cases());
}

TEST_CASE("backends: cumsum and softmax agree along every axis") { run_cases(scan_cases()); }

TEST_CASE("backends: data movement and gather agree for every dtype") {
  run_cases(movement_cases());
}

TEST_CASE("backends: matmul agrees on vectors, batches, broadcast batches and odd sizes") {
  run_cases(matmul_cases());
}

TEST_CASE("backends: norms, attention, rope, convolutions and pooling agree") {
  run_cases(nn_cases());
}

TEST_CASE("backends: f16 and bf16 results agree within one ulp of the type") {
  run_cases(half_cases());
}

TEST_CASE("backends: narrow integer dtypes saturate alike") { run_cases(narrow_int_cases()); }

TEST_CASE("backends: outputs that are leaves, constants or repeated nodes agree") {
  run_cases(output_cases());
}

TEST_CASE("backends: zero-size tensors agree") { run_cases(zero_size_cases()); }

TEST_CASE("backends: row ops computing an element-wise operand on the fly agree") {
  run_cases(prologue_cases());
}

TEST_CASE("backends: what the interpreter rejects at run time the other backend rejects too") {
  run_cases(runtime_error_cases());
}

TEST_CASE(
    "backends: missing, extra, null or mis-shaped leaves are an rlx::Error on both backends") {
  Backend other = other_backend();
  ir::Graph g("leaves");
  NodeId x = g.input("x", ir::Shape::of(Dims{2, 3}, F32));
  NodeId p = g.param("p", ir::Shape::of(Dims{3}, I32));
  g.set_outputs({g.add(g.exp(x), p)});
  Buffer bx(ir::Shape::of(Dims{2, 3}, F32)), bp(ir::Shape::of(Dims{3}, I32));
  Buffer wrong_shape(ir::Shape::of(Dims{3, 2}, F32)), wrong_dtype(ir::Shape::of(Dims{2, 3}, F64));
  Buffer small(ir::Shape::of(Dims{2}, I32));
  struct Feed {
    std::string what;
    std::vector<const Buffer*> leaves;
  };
  std::vector<Feed> feeds = {{"one leaf missing", {&bx}},
                             {"no leaves", {}},
                             {"an extra leaf", {&bx, &bp, &bp}},
                             {"a null leaf", {&bx, nullptr}},
                             {"x of the wrong shape", {&wrong_shape, &bp}},
                             {"x of the wrong dtype", {&wrong_dtype, &bp}},
                             {"p too small", {&bx, &small}}};
  for (Backend backend : {Backend::Interp, other}) {
    std::shared_ptr<const Executable> exe = compile(g, backend);
    CHECK(exe->run(std::vector<const Buffer*>{&bx, &bp}).size() == 1);
    for (const Feed& f : feeds) {
      INFO(enum_name(backend) << " with " << f.what);
      std::string outcome = "no error";
      try {
        exe->run(f.leaves);
      } catch (const Error& e) {
        outcome = "";
        CHECK_MESSAGE(e.kind() == ErrorKind::Runtime, e.what());
      } catch (const std::exception& e) {
        outcome = std::string("not an rlx::Error: ") + e.what();
      }
      CHECK_MESSAGE(outcome.empty(), outcome);
    }
  }
}

TEST_CASE(
    "backends: one executable run from four threads at once gives the interpreter's results") {
  Backend other = other_backend();
  std::vector<RandomGraph> graphs;
  std::vector<std::shared_ptr<const Executable>> exes;
  std::vector<std::vector<Buffer>> want;
  for (uint64_t seed = 1; seed <= 12; ++seed) {
    graphs.push_back(random_graph(seed));
    exes.push_back(compile(graphs.back().graph, other));
    want.push_back(run_on(Backend::Interp, graphs.back().graph, graphs.back().leaves).outputs);
  }
  constexpr int kThreads = 4;
  std::vector<std::string> problems(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      try {
        for (int round = 0; round < 5; ++round)
          for (std::size_t i = 0; i < graphs.size(); ++i) {
            std::size_t j = (i + std::size_t(t) * 5) % graphs.size(); // threads overlap
            std::vector<const Buffer*> ptrs;
            for (const Buffer& b : graphs[j].leaves) ptrs.push_back(&b);
            std::vector<Buffer> got = exes[j]->run(ptrs);
            for (std::size_t k = 0; k < got.size() && problems[std::size_t(t)].empty(); ++k) {
              std::string d =
                  mismatch_report(want[j][k], got[k],
                                  output_tolerance(graphs[j].graph, graphs[j].graph.outputs[k]));
              if (!d.empty())
                problems[std::size_t(t)] = "seed " + std::to_string(graphs[j].seed) + ", " +
                                           output_str(graphs[j].graph, k) + ": " + d;
            }
          }
      } catch (const std::exception& e) {
        problems[std::size_t(t)] = std::string("threw: ") + e.what();
      }
    });
  for (std::thread& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) {
    INFO("thread " << t);
    CHECK_MESSAGE(problems[std::size_t(t)].empty(), problems[std::size_t(t)]);
  }
}

TEST_CASE("backends: the op table builds every case and covers every op kind of ops.def") {
  std::vector<Case> cases = all_table_cases();
  std::set<OpKind> seen;
  for (const Case& c : cases) {
    INFO("case " << c.name);
    CHECK(c.build_error.empty());
    for (const ir::Node& n : c.graph.nodes()) seen.insert(n.op.kind());
  }
  std::string missing;
  for (std::size_t k = 0; k < ir::kNumOps; ++k)
    if (!seen.count(OpKind(k))) missing += " " + std::string(ir::op_name(OpKind(k)));
  INFO("op kinds no case uses:" << missing);
  CHECK(missing.empty());
  MESSAGE(cases.size() << " op-table graphs");
}

TEST_CASE("backends: close() equates NaNs and same-sign infinities and compares integers exactly") {
  Tolerance t = backend_tolerance(DType::F32);
  CHECK(t == Tolerance{2e-5, 1e-6});
  CHECK(backend_tolerance(DType::I32) == Tolerance{0, 0});
  CHECK(close(std::nan(""), -std::nan(""), t));
  CHECK_FALSE(close(std::nan(""), 1.0, t));
  CHECK_FALSE(close(1.0, std::nan(""), t));
  CHECK(close(kInf, kInf, t));
  CHECK_FALSE(close(-kInf, kInf, t));
  CHECK_FALSE(close(3e38, kInf, t));
  CHECK(close(1.0 + 1e-5, 1.0, t));
  CHECK_FALSE(close(1.0 + 1e-4, 1.0, t));
  CHECK(close(5e-7, 0.0, t));
  Buffer want =
      Buffer::from_f64(ir::Shape::of(Dims{2, 2}, DType::I64), std::vector<double>{1, 2, 3, 4});
  Buffer got = want;
  got.set_i64(3, 5);
  std::string r = mismatch_report(want, got, t);
  CHECK(r.find("1 of 4 elements differ") != std::string::npos);
  CHECK(r.find("at [1, 1]: want 4, got 5") != std::string::npos);
  Buffer bools(ir::Shape::of(Dims{2}, DType::Bool)), odd = bools;
  odd.bytes()[1] = std::byte{2}; // a non-canonical true
  CHECK_FALSE(mismatch_report(bools, odd, t).empty());
  CHECK(check_buffers_close(want, want, t, "a buffer matches itself"));
  ir::Graph g("tol");
  NodeId x = g.input("x", ir::Shape::of(Dims{3}, DType::F32));
  NodeId y = g.cast(g.exp(g.exp(x)), DType::F64);
  NodeId z = g.reshape_(y, {3, 1});
  CHECK(output_tolerance(g, y) == backend_tolerance(DType::F32) * 3);
  CHECK(output_tolerance(g, z) == backend_tolerance(DType::F32) * 3);
}
