// tests/backend_cases_elementwise.cpp -- the backends suite's element-wise cases: unary ops on
// every shape and edge value, binary ops with broadcasting and mixed dtypes, where, and casts
// between every pair of dtypes.
#include "support/backend_cases.hpp"

#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace rlx::test::backend_cases {

namespace {

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

} // namespace

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

namespace {

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

} // namespace

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

} // namespace rlx::test::backend_cases
