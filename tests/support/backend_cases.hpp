// tests/support/backend_cases.hpp -- the op table of the backends suite: one graph per case with
// random data for its leaves, built through the inferring builders, to run on the interpreter and
// on the other backend (tests/test_backends.cpp runs them). The cases live in one file per
// family group, tests/backend_cases_<group>.cpp.
#pragma once

#include "support/random_graph.hpp"

#include <rlx/all.hpp>

#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

namespace rlx::test::backend_cases {

using ir::DType;
using ir::NodeId;
using ir::Op;
using ir::OpKind;

constexpr DType F32 = DType::F32, F64 = DType::F64, F16 = DType::F16, BF16 = DType::BF16,
                I8 = DType::I8, I16 = DType::I16, I32 = DType::I32, I64 = DType::I64,
                U8 = DType::U8, U32 = DType::U32, Bool = DType::Bool, C64 = DType::C64;
constexpr double kInf = std::numeric_limits<double>::infinity();

/// One graph to run on both backends, with data for its leaves.
struct Case {
  std::string name;
  ir::Graph graph;
  std::vector<Buffer> leaves; ///< graph order
  bool expect_error = false;  ///< the interpreter rejects it at run time (both must)
  std::string build_error;    ///< set when the case could not be built (a bug in its table)
};

inline uint64_t fnv1a(const std::string& s) {
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

/// Appends the case `name`: `build` adds its leaves, ops and outputs to a Builder; an rlx::Error
/// it throws is kept as the case's build_error (the case then fails when run).
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

/// "f32" (for case names).
inline std::string dt(DType t) { return std::string(ir::dtype_name(t)); }

// ---- The case tables, by family group (each returns its cases in a fixed order)

// tests/backend_cases_elementwise.cpp
std::vector<Case> unary_cases();       ///< every activation, f32 and f64, on every shape
std::vector<Case> unary_edge_cases();  ///< the same on NaN, infinities, signed zeros
std::vector<Case> int_unary_cases();   ///< the integer activations, extremes included
std::vector<Case> binary_cases();      ///< every binary op with broadcasting
std::vector<Case> binary_edge_cases(); ///< every pair of edge values
std::vector<Case> mixed_dtype_cases(); ///< operands of different dtypes
std::vector<Case> where_cases();
std::vector<Case> cast_cases(); ///< every pair of dtypes

// tests/backend_cases_data.cpp
std::vector<Case> reduce_cases();
std::vector<Case> arg_reduce_cases();
std::vector<Case> scan_cases(); ///< cumsum and softmax
std::vector<Case> movement_cases();

// tests/backend_cases_nn.cpp
std::vector<Case> matmul_cases();
std::vector<Case> nn_cases(); ///< norms, attention, rope, convolutions, pooling
std::vector<Case> ssm_cases();
std::vector<Case> recurrent_cases();

// tests/backend_cases_graphs.cpp
std::vector<Case> half_cases();
std::vector<Case> narrow_int_cases();
std::vector<Case> output_cases();
std::vector<Case> prologue_cases();
std::vector<Case> zero_size_cases();
std::vector<Case> runtime_error_cases();
std::vector<Case> control_cases(); ///< custom_fn, custom ops, scan

// tests/backend_cases_kernels.cpp
std::vector<Case> spectral_cases();
std::vector<Case> linalg_cases();
std::vector<Case> quant_cases();
std::vector<Case> packed_cases();
std::vector<Case> collective_cases();
std::vector<Case> random_cases();
std::vector<Case> splat_cases();

} // namespace rlx::test::backend_cases
