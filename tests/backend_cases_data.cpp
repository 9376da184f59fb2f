// tests/backend_cases_data.cpp -- the backends suite's reductions (every choice of axes), arg
// reductions, cumsum and softmax along every axis, and data movement and indexing in every dtype.
#include "support/backend_cases.hpp"

#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace rlx::test::backend_cases {

namespace {

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

/// The values reductions are tested on: bools, floats in [-2, 2], small integers (with ties).
FillSpec reduce_fill(DType t) {
  if (ir::is_bool(t)) return {Fill::Bool};
  return ir::is_float(t) ? FillSpec{Fill::Uniform, -2, 2} : FillSpec{Fill::Integers, -3, 3};
}

} // namespace

std::vector<Case> reduce_cases() {
  std::vector<Case> cases;
  for (OpKind k : reduce_kinds())
    for (DType t : {F32, F64, I32, I64, Bool})
      add_case(cases, std::string(ir::op_name(k)) + " " + dt(t), [&](Builder& b) {
        FillSpec f = reduce_fill(t);
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
        FillSpec f = reduce_fill(t);
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

} // namespace rlx::test::backend_cases
