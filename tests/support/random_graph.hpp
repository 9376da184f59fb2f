// tests/support/random_graph.hpp -- a seeded generator of random values and random valid graphs.
#pragma once

#include <rlx/all.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace rlx::test {

/// splitmix64: small, seeded, and the same numbers on every machine and standard library (the
/// distributions of <random> are not portable).
class Rng {
public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  /// Uniform in [0, 1).
  double uniform() { return double(next() >> 11) * 0x1.0p-53; }
  /// Uniform in [lo, hi).
  double uniform(double lo, double hi) { return lo + (hi - lo) * uniform(); }
  /// Uniform integer in [lo, hi] (inclusive).
  int64_t range(int64_t lo, int64_t hi) { return lo + int64_t(next() % uint64_t(hi - lo + 1)); }
  bool chance(double p) { return uniform() < p; }
  template <class T> T pick(const std::vector<T>& v) {
    return v[std::size_t(range(0, int64_t(v.size()) - 1))];
  }
  template <class T> T pick(std::initializer_list<T> v) { return pick(std::vector<T>(v)); }
  template <class T> void shuffle(std::vector<T>& v) {
    for (std::size_t i = v.size(); i > 1; --i)
      std::swap(v[i - 1], v[std::size_t(range(0, int64_t(i) - 1))]);
  }

private:
  uint64_t state_;
};

/// How to fill a random buffer.
enum class Fill {
  Uniform,   ///< uniform in [lo, hi) (integer dtypes: truncated toward zero)
  Integers,  ///< integers in [lo, hi] (in a float dtype: exact ties and equalities)
  Halves,    ///< multiples of 0.5 in [lo, hi] (rounding ties)
  Special,   ///< every float edge value (NaN, infinities, signed zeros, huge, tiny, denormal,
             ///< overflow thresholds of exp) once when it fits, the rest uniform; shuffled
  Sprinkled, ///< uniform, with about one element in eight NaN, +inf or -inf (at least one)
  IntEdge,   ///< integer edge values of the dtype (min, min + 1, -1, 0, 1, max - 1, max) once
             ///< when they fit, the rest integers in [lo, hi]; shuffled
  Bool,      ///< false / true
};

struct FillSpec {
  Fill kind = Fill::Uniform;
  double lo = -3, hi = 3;
};

/// The float edge values of Fill::Special.
inline std::vector<double> special_values() {
  constexpr double inf = std::numeric_limits<double>::infinity();
  return {std::nan(""), inf,   -inf,   0.0,    -0.0, 1.0,   -1.0, 0.5,   -0.5,   2.5,
          -1.5,         1e-40, -1e-45, 1e-8,   3e38, -3e38, 1e30, -1e30, 100.0,  -100.0,
          88.5,         89.0,  -87.0,  -104.0, 1e6,  -7.0,  0.1,  1e300, -1e-310};
}

/// A buffer of `shape` filled as `spec` says.
inline Buffer random_values(const ir::Shape& shape, FillSpec spec, Rng& rng) {
  Buffer b(shape);
  int64_t n = b.numel();
  ir::DType t = shape.dtype();
  auto integer = [&] { return double(rng.range(int64_t(spec.lo), int64_t(spec.hi))); };
  switch (spec.kind) {
  case Fill::Uniform:
    for (int64_t i = 0; i < n; ++i) b.set_f64(i, rng.uniform(spec.lo, spec.hi));
    break;
  case Fill::Integers:
    for (int64_t i = 0; i < n; ++i) b.set_f64(i, integer());
    break;
  case Fill::Halves:
    for (int64_t i = 0; i < n; ++i)
      b.set_f64(i, 0.5 * double(rng.range(int64_t(2 * spec.lo), int64_t(2 * spec.hi))));
    break;
  case Fill::Bool:
    for (int64_t i = 0; i < n; ++i) b.set_i64(i, rng.chance(0.5));
    break;
  case Fill::Sprinkled: {
    constexpr double inf = std::numeric_limits<double>::infinity();
    for (int64_t i = 0; i < n; ++i) b.set_f64(i, rng.uniform(spec.lo, spec.hi));
    int64_t count = std::max<int64_t>(1, n / 8);
    for (int64_t j = 0; j < count && n > 0; ++j)
      b.set_f64(rng.range(0, n - 1), rng.pick({std::nan(""), inf, -inf}));
    break;
  }
  case Fill::Special:
  case Fill::IntEdge: {
    std::vector<double> edge;
    std::vector<int64_t> int_edge;
    if (spec.kind == Fill::Special) {
      edge = special_values();
    } else {
      int64_t lo = 0, hi = 0;
      switch (t) {
      case ir::DType::I8:
        lo = INT8_MIN, hi = INT8_MAX;
        break;
      case ir::DType::I16:
        lo = INT16_MIN, hi = INT16_MAX;
        break;
      case ir::DType::I32:
        lo = INT32_MIN, hi = INT32_MAX;
        break;
      case ir::DType::U8:
        hi = UINT8_MAX;
        break;
      case ir::DType::U32:
        hi = UINT32_MAX;
        break;
      case ir::DType::Bool:
        hi = 1;
        break;
      default:
        lo = INT64_MIN, hi = INT64_MAX;
        break;
      }
      for (int64_t v :
           {lo, lo + 1, int64_t(-2), int64_t(-1), int64_t(0), int64_t(1), int64_t(2), hi - 1, hi})
        if (v >= lo && v <= hi && std::find(int_edge.begin(), int_edge.end(), v) == int_edge.end())
          int_edge.push_back(v);
    }
    std::vector<int64_t> pos(static_cast<std::size_t>(n));
    for (int64_t i = 0; i < n; ++i) pos[std::size_t(i)] = i;
    rng.shuffle(pos);
    std::size_t special = spec.kind == Fill::Special ? edge.size() : int_edge.size();
    for (std::size_t j = 0; j < pos.size(); ++j) {
      int64_t i = pos[j];
      if (j < special && spec.kind == Fill::Special)
        b.set_f64(i, edge[j]);
      else if (j < special)
        b.set_i64(i, int_edge[j]);
      else if (spec.kind == Fill::Special)
        b.set_f64(i, rng.uniform(spec.lo, spec.hi));
      else
        b.set_f64(i, integer());
    }
    break;
  }
  }
  return b;
}

/// The machine epsilon of a float dtype (0 for others).
inline double epsilon_of(ir::DType t) {
  switch (t) {
  case ir::DType::F32:
  case ir::DType::C64:
    return 0x1p-23;
  case ir::DType::F64:
    return 0x1p-52;
  case ir::DType::F16:
    return 0x1p-10;
  case ir::DType::BF16:
    return 0x1p-7;
  default:
    return 0;
  }
}

/// The activations (single-input element-wise ops) of ops.def, in table order.
inline std::vector<ir::OpKind> activation_kinds() {
  return {
#define OP(E, N, F, A, T, S)
#define UNARY(E, N, T, S) ir::OpKind::E,
#include <rlx/ir/ops.def>
  };
}

/// The binary element-wise ops of ops.def, in table order.
inline std::vector<ir::OpKind> binary_kinds() {
  return {
#define OP(E, N, F, A, T, S)
#define BINARY(E, N, T) ir::OpKind::E,
#include <rlx/ir/ops.def>
  };
}

/// The reductions over axes of ops.def (reduce_sum ... reduce_prod), in table order.
inline std::vector<ir::OpKind> reduce_kinds() {
  return {
#define OP(E, N, F, A, T, S)
#define REDUCE(E, R, N, T) ir::OpKind::E,
#include <rlx/ir/ops.def>
  };
}

struct RandomGraphOptions {
  int min_ops = 1, max_ops = 14; ///< ops the generator chooses (guards it adds come on top)
  int max_rank = 4;              ///< of the first leaves; later values may grow (expand, matmul)
  int64_t max_dim = 9;           ///< leaf dims are 1..max_dim
  int64_t max_numel = 20000;     ///< no value larger than this
  double float_range = 3;        ///< float leaves are uniform in [-range, range)
  int64_t int_range = 5;         ///< integer leaves are in [-range, range]
  double raw_domain = 0.1;       ///< chance to skip a domain guard (log of negatives, x / 0, ...)
  double sprinkled = 0.05;       ///< chance that a float leaf holds some NaN and infinities
};

/// A random graph and data for its leaves.
struct RandomGraph {
  uint64_t seed = 0;
  ir::Graph graph;
  std::vector<Buffer> leaves; ///< one per Input and Param node, in graph order
};

namespace detail {

/// Builds one random graph. Every op goes through the op's shape rule (ir::infer_shape) before
/// it is appended, so a choice that does not fit is dropped and another one is drawn. Each value
/// carries a bound on its finite magnitude; ops that could blow up (exp, mul, pow, sums, casts to
/// integers, matmul) first clamp or tanh their operands, and log/sqrt/rsqrt/recip/div/mod/pow get
/// positive operands (abs(x) + c) except with probability raw_domain.
class GraphGenerator {
public:
  GraphGenerator(uint64_t seed, RandomGraphOptions opt)
      : seed_(seed), rng_(seed), opt_(opt), g_("random_" + std::to_string(seed)) {}

  RandomGraph run() {
    int leaves = int(rng_.range(1, 3));
    for (int i = 0; i < leaves; ++i) {
      ir::DType t = random_dtype();
      new_leaf(random_shape(t));
    }
    int target = int(rng_.range(opt_.min_ops, opt_.max_ops)), made = 0;
    for (int attempt = 0; made < target && attempt < 20 * target; ++attempt) {
      try {
        if (step()) ++made;
      } catch (const SkipStep&) {
      } catch (const Error&) {
      }
    }
    if (made == 0) { // always at least one op (abs is defined for every leaf dtype)
      Val x = pool_.front();
      pool_.push_back(Val{g_.add_inferred(ir::Op(ir::OpKind::Abs), {x.id}), x.bound});
    }
    choose_outputs();
    RandomGraph r;
    r.seed = seed_;
    r.graph = std::move(g_);
    Rng data(seed_ ^ 0x5eed5eed5eed5eedull);
    for (std::size_t i = 0; i < leaf_shapes_.size(); ++i)
      r.leaves.push_back(random_values(leaf_shapes_[i], leaf_fills_[i], data));
    return r;
  }

private:
  struct Val {
    ir::NodeId id;
    double bound; ///< bound on the magnitude of finite values (inf: unknown)
  };
  struct SkipStep {};
  static constexpr double kInf = std::numeric_limits<double>::infinity();

  const ir::Shape& shape(Val v) const { return g_.shape(v.id); }
  ir::DType x_dtype(Val v) const { return shape(v).dtype(); }
  bool is_f(Val v) const { return ir::is_float(x_dtype(v)); }

  ir::DType random_dtype() {
    double u = rng_.uniform();
    return u < 0.6 ? ir::DType::F32 : (u < 0.8 ? ir::DType::F64 : ir::DType::I32);
  }

  ir::Shape random_shape(ir::DType t) {
    int rank = int(rng_.pick({0, 1, 1, 2, 2, 2, 3, 3, 4}));
    rank = std::min(rank, opt_.max_rank);
    std::vector<int64_t> dims;
    for (int i = 0; i < rank; ++i) dims.push_back(rng_.range(1, opt_.max_dim));
    return ir::Shape::of(dims, t);
  }

  /// A new Input (or Param) leaf; float leaves are uniform (sometimes with NaN and infinities),
  /// integer leaves small integers, bool leaves random.
  Val new_leaf(const ir::Shape& s, std::optional<FillSpec> fill = std::nullopt) {
    if (*s.num_elements() > opt_.max_numel) throw SkipStep{};
    FillSpec f;
    double bound;
    ir::DType t = s.dtype();
    if (fill) {
      f = *fill;
      bound = std::max(std::fabs(f.lo), std::fabs(f.hi));
    } else if (ir::is_float(t)) {
      bool odd = rng_.chance(opt_.sprinkled);
      f = {odd ? Fill::Sprinkled : Fill::Uniform, -opt_.float_range, opt_.float_range};
      bound = odd ? kInf : opt_.float_range;
    } else if (ir::is_bool(t)) {
      f = {Fill::Bool, 0, 1};
      bound = 1;
    } else {
      f = {Fill::Integers, double(-opt_.int_range), double(opt_.int_range)};
      bound = double(opt_.int_range);
    }
    std::string name = std::to_string(leaf_shapes_.size());
    ir::NodeId id = rng_.chance(0.25) ? g_.param("p" + name, s) : g_.input("x" + name, s);
    leaf_shapes_.push_back(s);
    leaf_fills_.push_back(f);
    Val v{id, bound};
    pool_.push_back(v);
    return v;
  }

  /// Recent values are more likely, so chains grow deep.
  Val pick() {
    std::size_t n = pool_.size();
    if (rng_.chance(0.5))
      return pool_[n - 1 - std::size_t(rng_.range(0, std::min<int64_t>(2, int64_t(n) - 1)))];
    return pool_[std::size_t(rng_.range(0, int64_t(n) - 1))];
  }

  /// Append op(inputs) when its shape rule accepts the operands and the result is not too
  /// large; nullopt otherwise (nothing appended).
  std::optional<Val> try_op(ir::Op op, const std::vector<Val>& ins, double bound) {
    std::vector<ir::Shape> shapes;
    std::vector<ir::NodeId> ids;
    for (Val v : ins) {
      shapes.push_back(shape(v));
      ids.push_back(v.id);
    }
    std::optional<ir::Shape> out;
    try {
      out = ir::infer_shape(op, shapes);
    } catch (const Error&) {
      return std::nullopt;
    }
    if (!out || !out->num_elements() || *out->num_elements() > opt_.max_numel) return std::nullopt;
    if (!ir::is_float(out->dtype())) bound = std::ceil(bound);
    return Val{g_.add_inferred(std::move(op), ids), bound};
  }

  /// Like try_op, for the guards the generator inserts itself: abandons the step on failure.
  Val must(ir::Op op, const std::vector<Val>& ins, double bound) {
    std::optional<Val> v = try_op(std::move(op), ins, bound);
    if (!v) throw SkipStep{};
    return *v;
  }

  Val constant(double value, ir::DType t) {
    std::optional<ir::NodeId> id = g_.try_constant(value, t);
    if (!id) throw SkipStep{};
    return Val{*id, std::fabs(value)};
  }

  Val cast(Val x, ir::DType to) {
    if (x_dtype(x) == to) return x;
    if (!ir::is_float(to) && ir::is_float(x_dtype(x))) x = tame(x, 1e6);
    return must(ir::Op(ir::OpKind::Cast, ir::CastAttrs{to}), {x}, ir::is_bool(to) ? 1 : x.bound);
  }

  Val as_float(Val x) {
    return is_f(x) ? x : cast(x, rng_.chance(0.7) ? ir::DType::F32 : ir::DType::F64);
  }
  Val as_numeric(Val x) {
    return ir::is_bool(x_dtype(x)) ? cast(x, rng_.pick({ir::DType::F32, ir::DType::I32})) : x;
  }

  /// x itself when its bound is within `limit`; else x squashed into [-limit, limit] by clamp or
  /// (floats) limit * tanh(x).
  Val tame(Val x, double limit) {
    if (x.bound <= limit) return x;
    if (is_f(x) && rng_.chance(0.4)) {
      Val t = must(ir::Op(ir::OpKind::Tanh), {x}, 1);
      if (limit == 1) return t;
      return must(ir::Op(ir::OpKind::Mul), {t, constant(limit, x_dtype(x))}, limit);
    }
    return must(ir::Op(ir::OpKind::Clamp, ir::ClampAttrs{-limit, limit}), {x}, limit);
  }

  /// abs(x) + c, c > 0 (returned in `c`), for ops whose domain is the positive numbers.
  Val positive(Val x, double& c) {
    c = rng_.pick({0.25, 0.5, 1.0});
    Val a = must(ir::Op(ir::OpKind::Abs), {tame(x, 1e6)}, std::min(x.bound, 1e6));
    return must(ir::Op(ir::OpKind::Add), {a, constant(c, x_dtype(x))}, a.bound + c);
  }

  /// A second operand for a binary op with `a`: another value, a new leaf whose shape
  /// broadcasts with a's (fewer or more axes, size-1 axes), a scalar constant, or a itself.
  Val operand_for(Val a) {
    double u = rng_.uniform();
    const ir::Shape s = shape(a);
    if (u < 0.3) return pick();
    if (u < 0.4) return a;
    if (u < 0.55) {
      ir::DType t = rng_.chance(0.8) ? s.dtype() : random_dtype();
      double v = ir::is_float(t) ? rng_.pick({0.5, -1.5, 2.0, 3.0, 0.1})
                                 : double(rng_.pick({2, -3, 1, 0}));
      return constant(v, ir::is_bool(t) ? ir::DType::F32 : t);
    }
    std::vector<int64_t> dims = s.sizes();
    if (u < 0.65) {
      // same shape
    } else if (rng_.chance(0.5)) { // fewer axes and size-1 axes: `a` stretches the leaf
      dims.erase(dims.begin(), dims.begin() + rng_.range(0, int64_t(dims.size())));
      for (int64_t& d : dims)
        if (rng_.chance(0.3)) d = 1;
    } else { // more axes: the leaf stretches `a` (its size-1 axes too)
      for (int64_t& d : dims)
        if (d == 1 && rng_.chance(0.5)) d = rng_.range(1, opt_.max_dim);
      int extra = int(rng_.range(0, 2));
      for (int i = 0; i < extra; ++i) dims.insert(dims.begin(), rng_.range(1, 4));
    }
    ir::DType t = rng_.chance(0.85) ? s.dtype() : random_dtype();
    if (ir::is_bool(t)) t = ir::DType::F32;
    return new_leaf(ir::Shape::of(dims, t));
  }

  bool push(std::optional<Val> v) {
    if (!v) return false;
    pool_.push_back(*v);
    return true;
  }

  bool step() {
    int r = int(rng_.range(0, 99));
    if (r < 22) return push(unary());
    if (r < 46) return push(binary());
    if (r < 51) return push(where());
    if (r < 57) return push(cast_step());
    if (r < 66) return push(reduce());
    if (r < 69) return push(arg_reduce());
    if (r < 72) return push(cumsum());
    if (r < 77) return push(softmax());
    if (r < 92) return push(movement());
    return push(matmul());
  }

  std::optional<Val> unary() {
    Val x = as_numeric(pick());
    using K = ir::OpKind;
    if (!is_f(x) && rng_.chance(0.6)) {
      K k = rng_.pick({K::Relu, K::Neg, K::Abs, K::Sign, K::StopGradient, K::Clamp});
      if (k == K::Clamp) {
        double lo = double(rng_.range(-4, 1)), hi = lo + double(rng_.range(0, 5));
        return try_op(ir::Op(k, ir::ClampAttrs{lo, hi}), {x},
                      std::max(std::fabs(lo), std::fabs(hi)));
      }
      return try_op(ir::Op(k), {x}, k == K::Sign ? 1 : x.bound);
    }
    x = as_float(x);
    std::vector<K> kinds = activation_kinds();
    kinds.push_back(K::Clamp);
    kinds.push_back(K::StopGradient);
    K k = rng_.pick(kinds);
    double b = x.bound, c = 0;
    bool raw = rng_.chance(opt_.raw_domain);
    switch (k) {
    case K::Sigmoid:
    case K::Tanh:
    case K::Erf:
    case K::Softsign:
    case K::HardSigmoid:
    case K::Sign:
      return try_op(ir::Op(k), {x}, 1);
    case K::Atan:
      return try_op(ir::Op(k), {x}, 1.6);
    case K::Sin:
    case K::Cos:
      return try_op(ir::Op(k), {tame(x, 10)}, 1);
    case K::Tan:
      return try_op(ir::Op(k), {tame(x, 1.3)}, 3.7);
    case K::Exp: {
      Val t = tame(x, 5);
      return try_op(ir::Op(k), {t}, std::exp(t.bound));
    }
    case K::Softplus:
    case K::LogSigmoid:
      return try_op(ir::Op(k), {x}, b + 0.7);
    case K::Round:
    case K::Floor:
    case K::Ceil:
      return try_op(ir::Op(k), {x}, b + 1);
    case K::LeakyRelu:
      return try_op(ir::Op(k, ir::LeakyReluAttrs{float(rng_.pick({0.01, 0.1, 0.3}))}), {x}, b);
    case K::Elu: {
      float alpha = float(rng_.pick({0.5, 1.0, 1.5}));
      return try_op(ir::Op(k, ir::EluAttrs{alpha}), {x}, std::max(b, double(alpha)));
    }
    case K::Log: {
      if (raw) return try_op(ir::Op(k), {x}, kInf);
      Val p = positive(x, c);
      return try_op(ir::Op(k), {p}, std::max(std::fabs(std::log(c)), std::log(p.bound)));
    }
    case K::Sqrt: {
      if (raw) return try_op(ir::Op(k), {x}, std::sqrt(b));
      Val a = must(ir::Op(K::Abs), {x}, b);
      return try_op(ir::Op(k), {a}, std::sqrt(b));
    }
    case K::Rsqrt:
    case K::Recip: {
      if (raw) return try_op(ir::Op(k), {x}, kInf);
      Val p = positive(x, c);
      if (rng_.chance(0.5)) p = must(ir::Op(K::Neg), {p}, p.bound);
      return try_op(ir::Op(k), {p}, k == K::Recip ? 1 / c : 1 / std::sqrt(c));
    }
    case K::Clamp: {
      double lo = rng_.uniform(-3, 1), hi = lo + rng_.uniform(0, 3);
      if (rng_.chance(0.2))
        lo = -kInf;
      else if (rng_.chance(0.2))
        hi = kInf;
      double cb = std::max(std::fabs(lo), std::fabs(hi));
      return try_op(ir::Op(k, ir::ClampAttrs{lo, hi}), {x}, std::min(b, cb));
    }
    default: // relu, gelu, gelu_approx, silu, mish, hard_swish, neg, abs, stop_gradient
      return try_op(ir::Op(k), {x}, b);
    }
  }

  std::optional<Val> binary() {
    using K = ir::OpKind;
    K k = rng_.pick(binary_kinds());
    Val a = pick();
    Val b = operand_for(a);
    bool logical = k == K::And || k == K::Or;
    bool compare = ir::has_trait(k, ir::kBoolResult) && !logical;
    if (!logical && ir::is_bool(x_dtype(a)) != ir::is_bool(x_dtype(b))) {
      a = as_numeric(a);
      b = as_numeric(b);
    }
    if (!logical && !compare) {
      a = as_numeric(a);
      b = as_numeric(b);
    }
    if (logical || compare) return try_op(ir::Op(k), {a, b}, 1);
    bool fl = ir::is_float(ir::promote(x_dtype(a), x_dtype(b)));
    bool raw = rng_.chance(opt_.raw_domain);
    double c = 0;
    switch (k) {
    case K::Add:
    case K::Sub:
      a = tame(a, 1e6), b = tame(b, 1e6);
      return try_op(ir::Op(k), {a, b}, a.bound + b.bound);
    case K::Mul:
      a = tame(a, 1e3), b = tame(b, 1e3);
      return try_op(ir::Op(k), {a, b}, a.bound * b.bound);
    case K::Div:
    case K::Mod: {
      a = tame(a, 1e6);
      if (!fl || raw) return try_op(ir::Op(k), {a, b}, fl && k == K::Div ? kInf : a.bound);
      Val d = positive(as_float(b), c);
      if (rng_.chance(0.5)) d = must(ir::Op(K::Neg), {d}, d.bound);
      return try_op(ir::Op(k), {a, d}, k == K::Div ? a.bound / c : a.bound);
    }
    case K::Pow: {
      if (!fl) {
        Val base = must(ir::Op(K::Clamp, ir::ClampAttrs{-3, 3}), {a}, 3);
        Val e = must(ir::Op(K::Clamp, ir::ClampAttrs{-1, 4}), {b}, 4);
        return try_op(ir::Op(k), {base, e}, 81);
      }
      Val e = must(ir::Op(K::Clamp, ir::ClampAttrs{-2, 2}), {b}, 2);
      if (raw) return try_op(ir::Op(k), {tame(a, 10), e}, kInf);
      Val base = positive(tame(as_float(a), 10), c);
      return try_op(ir::Op(k), {base, e}, std::max(base.bound * base.bound, 1 / (c * c)));
    }
    default: // max, min
      return try_op(ir::Op(k), {a, b}, std::max(a.bound, b.bound));
    }
  }

  std::optional<Val> where() {
    std::vector<Val> bools;
    for (Val v : pool_)
      if (ir::is_bool(x_dtype(v))) bools.push_back(v);
    Val cond;
    if (!bools.empty() && rng_.chance(0.7)) {
      cond = rng_.pick(bools);
    } else if (rng_.chance(0.85)) {
      Val x = as_numeric(pick());
      Val y = rng_.chance(0.5) ? constant(0, x_dtype(x)) : operand_for(x);
      if (ir::is_bool(x_dtype(y))) y = as_numeric(y);
      cond = must(ir::Op(rng_.pick({ir::OpKind::Lt, ir::OpKind::Ge, ir::OpKind::Ne})), {x, y}, 1);
    } else {
      cond = pick(); // a non-bool condition: nonzero (and NaN) selects on_true
    }
    Val t = rng_.chance(0.5) ? pick() : operand_for(cond);
    Val f = rng_.chance(0.3) ? pick() : operand_for(t);
    return try_op(ir::Op(ir::OpKind::Where), {cond, t, f}, std::max(t.bound, f.bound));
  }

  std::optional<Val> cast_step() {
    Val x = pick();
    ir::DType to = rng_.chance(0.1) ? ir::DType::Bool
                                    : rng_.pick({ir::DType::F32, ir::DType::F64, ir::DType::I32});
    if (to == x_dtype(x)) return std::nullopt;
    return cast(x, to);
  }

  /// Random distinct axes of a rank-r value (some given negative); empty for rank 0.
  std::vector<int64_t> random_axes(int64_t r) {
    std::vector<int64_t> axes;
    for (int64_t i = 0; i < r; ++i)
      if (rng_.chance(0.5)) axes.push_back(rng_.chance(0.3) ? i - r : i);
    if (axes.empty() && r > 0 && rng_.chance(0.9)) axes.push_back(rng_.range(-r, r - 1));
    rng_.shuffle(axes);
    return axes;
  }

  std::optional<Val> reduce() {
    using K = ir::OpKind;
    Val x = pick();
    K k = rng_.pick(reduce_kinds());
    int64_t r = int64_t(shape(x).rank());
    std::vector<int64_t> axes = random_axes(r);
    double count = 1;
    std::vector<int64_t> sizes = shape(x).sizes();
    for (int64_t a : axes) count *= double(sizes[std::size_t(a < 0 ? a + r : a)]);
    double b = x.bound;
    if (k == K::ReduceSum) {
      x = tame(x, 1e4);
      b = x.bound * count;
    } else if (k == K::ReduceProd) {
      if (ir::is_bool(x_dtype(x))) {
        b = 1;
      } else if (is_f(x) && count > 12) {
        x = tame(x, 1);
        b = 1;
      } else {
        double lim = count > 10 ? 1 : (is_f(x) ? 1.5 : 3);
        x = must(ir::Op(K::Clamp, ir::ClampAttrs{-lim, lim}), {x}, lim);
        b = std::pow(lim, count);
      }
    } else if (ir::is_bool(x_dtype(x))) {
      b = 1;
    }
    return try_op(ir::Op(k, ir::ReduceAttrs{axes, rng_.chance(0.5)}), {x}, b);
  }

  std::optional<Val> arg_reduce() {
    Val x = pick();
    int64_t r = int64_t(shape(x).rank());
    if (r == 0) return std::nullopt;
    ir::OpKind k = rng_.chance(0.5) ? ir::OpKind::ArgMax : ir::OpKind::ArgMin;
    return try_op(ir::Op(k, ir::ArgReduceAttrs{rng_.range(-r, r - 1), rng_.chance(0.5)}), {x},
                  double(opt_.max_dim));
  }

  std::optional<Val> cumsum() {
    Val x = pick();
    int64_t r = int64_t(shape(x).rank());
    if (r == 0) return std::nullopt;
    x = tame(x, 1e4);
    int64_t axis = rng_.range(-r, r - 1);
    double len = double(shape(x).sizes()[std::size_t(axis < 0 ? axis + r : axis)]);
    return try_op(ir::Op(ir::OpKind::Cumsum, ir::CumsumAttrs{axis, rng_.chance(0.4)}), {x},
                  x.bound * len);
  }

  std::optional<Val> softmax() {
    Val x = pick();
    int64_t r = int64_t(shape(x).rank());
    if (r == 0) return std::nullopt;
    x = as_float(x);
    return try_op(ir::Op(ir::OpKind::Softmax, ir::AxisAttrs{rng_.range(-r, r - 1)}), {x}, 1);
  }

  /// `n` split into `rank` random factors (rank 0 only for n == 1).
  std::vector<int64_t> factorization(int64_t n, int rank) {
    std::vector<int64_t> primes;
    for (int64_t p = 2, m = n; m > 1; ++p)
      while (m % p == 0) primes.push_back(p), m /= p;
    std::vector<int64_t> dims(std::size_t(rank), 1);
    for (int64_t p : primes) dims[std::size_t(rng_.range(0, rank - 1))] *= p;
    return dims;
  }

  std::optional<Val> movement() {
    using K = ir::OpKind;
    Val x = pick();
    const ir::Shape s = shape(x);
    int64_t r = int64_t(s.rank());
    std::vector<int64_t> sizes = s.sizes();
    int64_t numel = *s.num_elements();
    auto axis_of = [&](int64_t a) { return std::size_t(a < 0 ? a + r : a); };
    switch (rng_.range(0, 8)) {
    case 0: { // reshape
      int rank = numel == 1 ? int(rng_.range(0, 3)) : int(rng_.range(1, 4));
      std::vector<int64_t> dims = rank == 0 ? std::vector<int64_t>{} : factorization(numel, rank);
      if (!dims.empty() && rng_.chance(0.3)) dims[std::size_t(rng_.range(0, rank - 1))] = -1;
      return try_op(ir::Op(K::Reshape, ir::ReshapeAttrs{dims}), {x}, x.bound);
    }
    case 1: { // transpose
      std::vector<int64_t> perm;
      for (int64_t i = 0; i < r; ++i) perm.push_back(rng_.chance(0.2) ? i - r : i);
      rng_.shuffle(perm);
      return try_op(ir::Op(K::Transpose, ir::TransposeAttrs{perm}), {x}, x.bound);
    }
    case 2: { // slice, possibly with a negative step
      if (r == 0) return std::nullopt;
      int64_t axis = rng_.range(-r, r - 1), n = sizes[axis_of(axis)];
      int64_t step = rng_.pick({int64_t(1), int64_t(2), int64_t(3), int64_t(-1), int64_t(-2)});
      int64_t start = rng_.range(0, n - 1);
      int64_t room = step > 0 ? (n - 1 - start) / step + 1 : start / (-step) + 1;
      int64_t len = rng_.range(1, room);
      return try_op(ir::Op(K::Slice, ir::SliceAttrs{axis, start, len, step}), {x}, x.bound);
    }
    case 3: { // narrow
      if (r == 0) return std::nullopt;
      int64_t axis = rng_.range(-r, r - 1), n = sizes[axis_of(axis)];
      int64_t start = rng_.range(0, n - 1), len = rng_.range(1, n - start);
      return try_op(ir::Op(K::Narrow, ir::NarrowAttrs{axis, start, len}), {x}, x.bound);
    }
    case 4: { // concat of x with 1-2 parts: x again, a new leaf, or a value of a fitting shape
      if (r == 0) return std::nullopt;
      int64_t axis = rng_.range(-r, r - 1);
      std::vector<Val> parts{x};
      double b = x.bound;
      for (int64_t i = rng_.range(1, 2); i > 0; --i) {
        Val p = x;
        if (rng_.chance(0.6)) {
          std::vector<int64_t> d = sizes;
          d[axis_of(axis)] = rng_.range(1, opt_.max_dim);
          p = new_leaf(ir::Shape::of(d, s.dtype()));
        } else if (rng_.chance(0.5)) {
          p = pick();
        }
        parts.push_back(p);
        b = std::max(b, p.bound);
      }
      rng_.shuffle(parts);
      return try_op(ir::Op(K::Concat, ir::ConcatAttrs{axis}), parts, b);
    }
    case 5: { // expand: new leading axes, size-1 axes stretched, -1 keeps an axis
      std::vector<int64_t> target;
      for (int64_t i = rng_.range(0, 2); i > 0; --i) target.push_back(rng_.range(1, 4));
      for (int64_t d : sizes)
        target.push_back(d == 1 && rng_.chance(0.6) ? rng_.range(1, opt_.max_dim)
                                                    : (rng_.chance(0.3) ? -1 : d));
      return try_op(ir::Op(K::Expand, ir::ExpandAttrs{target}), {x}, x.bound);
    }
    case 6: { // reverse (an axis listed twice flips once)
      std::vector<int64_t> axes = random_axes(r);
      if (!axes.empty() && rng_.chance(0.1)) axes.push_back(axes.front());
      return try_op(ir::Op(K::Reverse, ir::ReverseAttrs{axes}), {x}, x.bound);
    }
    case 7: { // pad
      ir::PadMode mode =
          rng_.pick({ir::PadMode::Constant, ir::PadMode::Reflect, ir::PadMode::Edge});
      std::vector<int64_t> pads;
      for (int64_t d : sizes)
        for (int side = 0; side < 2; ++side) {
          int64_t p = rng_.range(0, 2);
          pads.push_back(mode == ir::PadMode::Reflect ? std::min(p, d - 1) : p);
        }
      double value = ir::is_bool(s.dtype()) ? 1.0 : rng_.pick({0.0, 1.0, -2.0, 1.5});
      if (!ir::is_float(s.dtype())) value = std::trunc(value);
      return try_op(ir::Op(K::Pad, ir::PadAttrs{pads, mode, value}), {x},
                    std::max(x.bound, std::fabs(value)));
    }
    default: { // gather along an axis with integer or float-encoded (possibly negative) indices
      if (r == 0) return std::nullopt;
      int64_t axis = rng_.range(-r, r - 1), n = sizes[axis_of(axis)];
      std::vector<int64_t> idims;
      for (int64_t i = rng_.range(0, 2); i > 0; --i) idims.push_back(rng_.range(1, 5));
      ir::DType it = rng_.pick({ir::DType::I64, ir::DType::I32, ir::DType::F32});
      Val idx =
          new_leaf(ir::Shape::of(idims, it), FillSpec{Fill::Integers, double(-n), double(n - 1)});
      return try_op(ir::Op(K::Gather, ir::GatherAttrs{axis}), {x, idx}, x.bound);
    }
    }
  }

  std::optional<Val> matmul() {
    Val x = as_numeric(pick());
    const ir::Shape s = shape(x);
    int64_t r = int64_t(s.rank());
    if (r == 0) return std::nullopt;
    x = tame(x, ir::is_float(s.dtype()) ? 100 : 30);
    std::vector<int64_t> sizes = s.sizes();
    int64_t k = sizes.back();
    if (r >= 2 && rng_.chance(0.2)) { // x @ x^T: the same value on both sides
      std::vector<int64_t> perm;
      for (int64_t i = 0; i < r; ++i) perm.push_back(i);
      std::swap(perm[std::size_t(r - 1)], perm[std::size_t(r - 2)]);
      Val xt = must(ir::Op(ir::OpKind::Transpose, ir::TransposeAttrs{perm}), {x}, x.bound);
      return try_op(ir::Op(ir::OpKind::MatMul), {x, xt}, x.bound * x.bound * double(k));
    }
    std::vector<int64_t> wd;
    double u = rng_.uniform();
    if (u < 0.25) {
      wd = {k}; // matrix-vector (or a dot product)
    } else {
      if (u > 0.7 && r >= 3) { // batched: some of x's batch axes, some of them 1
        for (int64_t i = rng_.range(0, r - 2); i < r - 2; ++i)
          wd.push_back(rng_.chance(0.3) ? 1 : sizes[std::size_t(i)]);
      } else if (u > 0.85) {
        wd.push_back(rng_.range(1, 3)); // a batch axis x lacks
      }
      wd.push_back(k);
      wd.push_back(rng_.range(1, opt_.max_dim));
    }
    Val w = new_leaf(ir::Shape::of(wd, s.dtype()));
    w = tame(w, 100);
    bool left = r >= 2 && rng_.chance(0.2); // w' @ x with w' = [m, x's rows]
    if (left) {
      Val w2 = new_leaf(ir::Shape::of(
          std::vector<int64_t>{rng_.range(1, opt_.max_dim), sizes[std::size_t(r - 2)]}, s.dtype()));
      w2 = tame(w2, 100);
      return try_op(ir::Op(ir::OpKind::MatMul), {w2, x},
                    w2.bound * x.bound * double(sizes[std::size_t(r - 2)]));
    }
    return try_op(ir::Op(ir::OpKind::MatMul), {x, w}, x.bound * w.bound * double(k));
  }

  /// The last value, plus up to two others (rarely a leaf; a value may appear twice).
  void choose_outputs() {
    std::vector<ir::NodeId> outs{pool_.back().id};
    for (int64_t i = rng_.range(0, 2); i > 0; --i) {
      Val v = pick();
      bool is_leaf = g_.node(v.id).op.family() == ir::Family::Leaf;
      if (is_leaf && !rng_.chance(0.1)) continue;
      outs.push_back(v.id);
    }
    rng_.shuffle(outs);
    g_.set_outputs(outs);
  }

  uint64_t seed_;
  Rng rng_;
  RandomGraphOptions opt_;
  ir::Graph g_;
  std::vector<Val> pool_;
  std::vector<ir::Shape> leaf_shapes_;
  std::vector<FillSpec> leaf_fills_;
};

} // namespace detail

/// A random valid graph of core ops (element-wise unary and binary incl. comparisons and where,
/// casts between f32/f64/i32/bool, broadcasting operands of different ranks, reductions with
/// keep_dim, arg-reductions, cumsum, softmax, reshape/transpose/slice/narrow/concat/expand/
/// reverse/pad/gather, matmul) on leaves of random static shapes (rank 0..4, dims 1..9), with
/// data for its leaves. The same seed gives the same graph and data on every machine.
inline RandomGraph random_graph(uint64_t seed, const RandomGraphOptions& opt = {}) {
  return detail::GraphGenerator(seed, opt).run();
}

} // namespace rlx::test
