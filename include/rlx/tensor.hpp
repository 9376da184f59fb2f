// include/rlx/tensor.hpp -- the tracing frontend: Tensor, creation, numpy-like ops, eval.
//
// A Tensor is a cheap, copyable, reference-counted handle. Operations on tensors only record
// nodes (shapes and dtypes are checked at once, with the caller's source line); data is computed
// when it is read (to_vector, item, data, printing, save_npy) or when rlx::eval is called. Every
// entry point takes a trailing `Loc` that defaults to the caller's location: errors name the
// user's line, also when they are found later, at materialization.
//
// This header names no Graph: recording ops with Graph builders (rlx::apply) and sub-graphs
// (rlx::custom_fn) are in rlx/apply.hpp, so Tensor code does not parse the IR's internals.
#pragma once

#include "rlx/buffer.hpp"
#include "rlx/error.hpp"
#include "rlx/ir/attr_enums.hpp"
#include "rlx/ir/dtype.hpp"
#include "rlx/ir/op_kind.hpp"
#include "rlx/ir/shape.hpp"

#include <array>
#include <complex>
#include <concepts>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <optional>
#include <ostream>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

namespace rlx {

using ir::DType;
using ir::Shape;

class Tensor;

namespace detail {
struct TensorImpl;

/// The dtype of a C++ element type (float -> f32, double -> f64, int32_t -> i32, bool -> bool,
/// std::complex<float> -> c64, ...).
template <class T> constexpr DType dtype_of() {
  if constexpr (std::is_same_v<T, float>)
    return DType::F32;
  else if constexpr (std::is_same_v<T, double>)
    return DType::F64;
  else if constexpr (std::is_same_v<T, bool>)
    return DType::Bool;
  else if constexpr (std::is_same_v<T, std::complex<float>>)
    return DType::C64;
  else if constexpr (std::is_same_v<T, int8_t>)
    return DType::I8;
  else if constexpr (std::is_same_v<T, int16_t>)
    return DType::I16;
  else if constexpr (std::is_same_v<T, int32_t>)
    return DType::I32;
  else if constexpr (std::is_same_v<T, int64_t> || std::is_same_v<T, long long>)
    return DType::I64;
  else if constexpr (std::is_same_v<T, uint8_t>)
    return DType::U8;
  else if constexpr (std::is_same_v<T, uint32_t>)
    return DType::U32;
  else
    static_assert(sizeof(T) == 0, "rlx: no dtype for this C++ element type");
}

/// Fill `out` with the buffer's values converted to T (numpy astype: floats to ints truncate).
template <class T> void convert_buffer(const Buffer& b, T* out) {
  const int64_t n = b.numel();
  if (b.dtype() == dtype_of<T>()) {
    if (n > 0) std::memcpy(static_cast<void*>(out), b.bytes().data(), std::size_t(n) * sizeof(T));
    return;
  }
  for (int64_t i = 0; i < n; ++i) {
    if constexpr (std::is_same_v<T, std::complex<float>>)
      out[i] = b.get_c64(i);
    else if constexpr (std::is_same_v<T, bool>)
      out[i] = b.get_f64(i) != 0.0;
    else if constexpr (std::is_floating_point_v<T>)
      out[i] = T(b.get_f64(i));
    else
      out[i] = T(b.get_i64(i));
  }
}
} // namespace detail

/// A C++ type a tensor can hold.
template <class T>
concept Element =
    std::is_same_v<T, float> || std::is_same_v<T, double> || std::is_same_v<T, bool> ||
    std::is_same_v<T, std::complex<float>> || std::is_same_v<T, int8_t> ||
    std::is_same_v<T, int16_t> || std::is_same_v<T, int32_t> || std::is_same_v<T, int64_t> ||
    std::is_same_v<T, long long> || std::is_same_v<T, uint8_t> || std::is_same_v<T, uint32_t>;

/// A C++ number usable as a scalar operand (`x * 2`, `0.5f + x`, `x > 0`).
template <class T>
concept Scalar = std::is_arithmetic_v<T>;

/// A C++ scalar operand: its value and whether it was a floating-point number (a float scalar
/// makes integer tensors compute in f32; an integer scalar keeps the tensor's dtype).
struct Number {
  double value;
  bool is_float;
  bool is_bool;
  template <Scalar S>
  Number(S s) // NOLINT: implicit
      : value(double(s)), is_float(std::is_floating_point_v<S>), is_bool(std::is_same_v<S, bool>) {}
};

/// Sizes of a tensor (static; dynamic dims appear only inside rlx::jit traces).
using Dims = std::vector<int64_t>;

/// One index of Tensor::index: an integer (drops the axis), a Slice, or rlx::newaxis.
struct Slice {
  std::optional<int64_t> start{}, stop{};
  int64_t step = 1;
};
struct NewAxis {};
inline constexpr NewAxis newaxis{};
/// `all` selects a whole axis (Python's `:`).
inline constexpr Slice all{};

class TensorIndex {
public:
  TensorIndex(int64_t i) : kind_(Kind::Int), i_(i) {}
  TensorIndex(int i) : kind_(Kind::Int), i_(i) {}
  TensorIndex(Slice s) : kind_(Kind::Slice), s_(s) {}
  TensorIndex(NewAxis) : kind_(Kind::NewAxis) {}
  enum class Kind : uint8_t { Int, Slice, NewAxis };
  Kind kind() const { return kind_; }
  int64_t integer() const { return i_; }
  const Slice& slice() const { return s_; }

private:
  Kind kind_;
  int64_t i_ = 0;
  Slice s_;
};

/// A handle to an n-dimensional array, lazily computed.
class Tensor {
public:
  /// An undefined handle; every operation on it throws rlx::Error.
  Tensor();
  /// A materialized tensor holding `buffer`.
  explicit Tensor(Buffer buffer);

  /// Values in row-major order with the given sizes (numel must match).
  template <Element T>
  static Tensor from_vector(std::span<const T> values, Dims sizes, Loc loc = Loc::current()) {
    return from_bytes(detail::dtype_of<T>(), std::move(sizes),
                      std::as_bytes(std::span<const T>(values)), loc);
  }
  template <Element T>
  static Tensor from_vector(const std::vector<T>& values, Dims sizes, Loc loc = Loc::current()) {
    if constexpr (std::is_same_v<T, bool>) {
      std::vector<uint8_t> bytes(values.begin(), values.end());
      return from_bytes(DType::Bool, std::move(sizes), std::as_bytes(std::span(bytes)), loc);
    } else {
      return from_vector(std::span<const T>(values), std::move(sizes), loc);
    }
  }
  /// Raw little-endian element bytes of `dtype`.
  static Tensor from_bytes(DType dtype, Dims sizes, std::span<const std::byte> bytes,
                           Loc loc = Loc::current());

  // ---- Queries (no materialization)
  bool defined() const { return impl_ != nullptr; }
  const Shape& shape() const;
  DType dtype() const;
  int64_t ndim() const;
  /// Element count; an rlx::Error for a dynamic dim (inside a jit trace).
  int64_t numel(Loc loc = Loc::current()) const;
  /// Static sizes; an rlx::Error for a dynamic dim.
  Dims sizes(Loc loc = Loc::current()) const;
  /// Size of one axis (negative counts from the end).
  int64_t size(int64_t axis, Loc loc = Loc::current()) const;
  /// Whether the value is computed (reading it costs nothing).
  bool is_materialized() const;
  /// Whether this tensor is a value inside an rlx::jit trace (its data is unknown until run).
  bool is_traced() const;

  // ---- Reading data (materializes)
  /// The computed buffer.
  const Buffer& buffer(Loc loc = Loc::current()) const;
  /// Pointer to the elements; T must be the tensor's dtype exactly.
  template <Element T> const T* data(Loc loc = Loc::current()) const {
    const Buffer& b = buffer(loc);
    check_dtype(detail::dtype_of<T>(), "data", loc);
    return reinterpret_cast<const T*>(b.bytes().data());
  }
  /// The values converted to T (as numpy's astype).
  template <Element T> std::vector<T> to_vector(Loc loc = Loc::current()) const {
    const Buffer& b = buffer(loc);
    if constexpr (std::is_same_v<T, bool>) {
      std::vector<uint8_t> tmp(std::size_t(b.numel()));
      detail::convert_buffer(b, tmp.data());
      return std::vector<bool>(tmp.begin(), tmp.end());
    } else {
      std::vector<T> out(std::size_t(b.numel()));
      detail::convert_buffer(b, out.data());
      return out;
    }
  }
  /// The single element of a one-element tensor, converted to T.
  template <Element T> T item(Loc loc = Loc::current()) const {
    check_single("item", loc);
    return to_vector<T>(loc)[0];
  }
  /// numpy-style text: `tensor([[1.0000, 2.0000], [3.0000, 4.0000]], f32[2,2])`, summarized
  /// with `...` when large. Materializes (a traced tensor prints as `tensor(<traced>, f32[?n])`).
  std::string str(Loc loc = Loc::current()) const;

  // ---- Methods (also available as free functions). Reductions take one axis, a list of axes
  // ({} = every axis) or none (every axis).
  template <std::integral I>
  Tensor sum(I axis, bool keepdims = false, Loc loc = Loc::current()) const {
    return sum(Dims{int64_t(axis)}, keepdims, loc);
  }
  Tensor sum(Dims axes = {}, bool keepdims = false, Loc loc = Loc::current()) const;
  template <std::integral I>
  Tensor mean(I axis, bool keepdims = false, Loc loc = Loc::current()) const {
    return mean(Dims{int64_t(axis)}, keepdims, loc);
  }
  Tensor mean(Dims axes = {}, bool keepdims = false, Loc loc = Loc::current()) const;
  template <std::integral I>
  Tensor max(I axis, bool keepdims = false, Loc loc = Loc::current()) const {
    return max(Dims{int64_t(axis)}, keepdims, loc);
  }
  Tensor max(Dims axes = {}, bool keepdims = false, Loc loc = Loc::current()) const;
  template <std::integral I>
  Tensor min(I axis, bool keepdims = false, Loc loc = Loc::current()) const {
    return min(Dims{int64_t(axis)}, keepdims, loc);
  }
  Tensor min(Dims axes = {}, bool keepdims = false, Loc loc = Loc::current()) const;
  template <std::integral I>
  Tensor prod(I axis, bool keepdims = false, Loc loc = Loc::current()) const {
    return prod(Dims{int64_t(axis)}, keepdims, loc);
  }
  Tensor prod(Dims axes = {}, bool keepdims = false, Loc loc = Loc::current()) const;
  /// Index of the maximum over the flattened tensor (i64 scalar), or along an axis.
  Tensor argmax(Loc loc = Loc::current()) const;
  Tensor argmax(int64_t axis, bool keepdims = false, Loc loc = Loc::current()) const;
  Tensor argmin(Loc loc = Loc::current()) const;
  Tensor argmin(int64_t axis, bool keepdims = false, Loc loc = Loc::current()) const;

  /// Same elements, new sizes (one -1 is inferred).
  Tensor reshape(Dims sizes, Loc loc = Loc::current()) const;
  /// Reverse the axes (numpy's .T).
  Tensor transpose(Loc loc = Loc::current()) const;
  /// Swap two axes (torch.transpose).
  Tensor transpose(int64_t axis0, int64_t axis1, Loc loc = Loc::current()) const;
  /// Output axis i is input axis perm[i].
  Tensor permute(Dims perm, Loc loc = Loc::current()) const;
  /// Drop every size-1 axis, or the given one (which must have size 1).
  Tensor squeeze(Loc loc = Loc::current()) const;
  Tensor squeeze(int64_t axis, Loc loc = Loc::current()) const;
  /// Insert a size-1 axis at `axis` (in the output's numbering; -1 appends).
  Tensor unsqueeze(int64_t axis, Loc loc = Loc::current()) const;
  /// Merge axes start..end (inclusive) into one.
  Tensor flatten(int64_t start = 0, int64_t end = -1, Loc loc = Loc::current()) const;
  /// Python slicing of one axis: start/stop may be negative or out of range (clipped), step != 0.
  Tensor slice(int64_t axis, std::optional<int64_t> start, std::optional<int64_t> stop,
               int64_t step = 1, Loc loc = Loc::current()) const;
  /// numpy basic indexing: x.index({1, rlx::Slice{0, 4, 2}, rlx::newaxis}).
  Tensor index(std::vector<TensorIndex> indices, Loc loc = Loc::current()) const;
  /// x[i]: the sub-tensor at index i of axis 0 (negative counts from the end). operator[] takes
  /// one argument, so the index carries the caller's line (captured where it converts).
  struct AxisIndex {
    int64_t i;
    Loc loc;
    template <std::integral I>
    AxisIndex(I index, Loc l = Loc::current()) // NOLINT: implicit
        : i(int64_t(index)), loc(l) {}
  };
  Tensor operator[](AxisIndex i) const;
  /// Broadcast to sizes (numpy.broadcast_to; -1 keeps an axis).
  Tensor expand(Dims sizes, Loc loc = Loc::current()) const;
  /// Convert to another dtype (numpy's astype).
  Tensor cast(DType dtype, Loc loc = Loc::current()) const;
  Tensor astype(DType dtype, Loc loc = Loc::current()) const { return cast(dtype, loc); }
  Tensor exp(Loc loc = Loc::current()) const;
  Tensor log(Loc loc = Loc::current()) const;
  Tensor sqrt(Loc loc = Loc::current()) const;
  Tensor abs(Loc loc = Loc::current()) const;
  Tensor relu(Loc loc = Loc::current()) const;
  Tensor tanh(Loc loc = Loc::current()) const;
  Tensor sigmoid(Loc loc = Loc::current()) const;
  Tensor softmax(int64_t axis = -1, Loc loc = Loc::current()) const;
  Tensor log_softmax(int64_t axis = -1, Loc loc = Loc::current()) const;
  Tensor matmul(const Tensor& rhs, Loc loc = Loc::current()) const;
  Tensor clamp(std::optional<double> lo, std::optional<double> hi, Loc loc = Loc::current()) const;
  Tensor pow(double exponent, Loc loc = Loc::current()) const;

  /// Internal: the shared node (frontend implementation files only).
  const std::shared_ptr<detail::TensorImpl>& impl() const { return impl_; }
  explicit Tensor(std::shared_ptr<detail::TensorImpl> impl) : impl_(std::move(impl)) {}

private:
  void check_dtype(DType want, const char* what, const Loc& loc) const;
  void check_single(const char* what, const Loc& loc) const;
  std::shared_ptr<detail::TensorImpl> impl_;
};

/// Prints t.str().
std::ostream& operator<<(std::ostream& os, const Tensor& t);

// ---- Materialization
/// Compute every given tensor in one graph (shared work is done once).
void eval(std::span<const Tensor> tensors, Loc loc = Loc::current());
template <class... Ts>
  requires(std::same_as<std::remove_cvref_t<Ts>, Tensor> && ...)
void eval(const Ts&... ts) {
  std::array<Tensor, sizeof...(Ts)> list{ts...};
  eval(std::span<const Tensor>(list));
}

// ---- Creation
/// A 1-D tensor from values, or any sizes with `sizes`.
template <Element T>
Tensor tensor(std::initializer_list<T> values, Dims sizes = {}, Loc loc = Loc::current()) {
  std::vector<T> v(values);
  if (sizes.empty()) sizes = {int64_t(v.size())};
  return Tensor::from_vector(v, std::move(sizes), loc);
}
/// A 2-D tensor from nested lists: rlx::tensor({{1.f, 2.f}, {3.f, 4.f}}).
template <Element T>
Tensor tensor(std::initializer_list<std::initializer_list<T>> rows, Loc loc = Loc::current()) {
  std::vector<T> v;
  int64_t cols = rows.size() ? int64_t(rows.begin()->size()) : 0;
  for (const auto& r : rows) {
    if (int64_t(r.size()) != cols)
      fail(ErrorKind::Shape, "tensor: ragged nested list (rows of ", cols, " and ", r.size(),
           " elements)", detail::at_loc(loc));
    v.insert(v.end(), r.begin(), r.end());
  }
  return Tensor::from_vector(v, {int64_t(rows.size()), cols}, loc);
}
/// A rank-0 tensor.
template <Element T> Tensor scalar(T value, Loc loc = Loc::current()) {
  return Tensor::from_vector(std::vector<T>{value}, {}, loc);
}
Tensor zeros(Dims sizes, DType dtype = DType::F32, Loc loc = Loc::current());
Tensor ones(Dims sizes, DType dtype = DType::F32, Loc loc = Loc::current());
/// Filled with value; the dtype is the C++ type's (float -> f32, double -> f64, int -> i32...).
Tensor full(Dims sizes, double value, DType dtype, Loc loc = Loc::current());
template <Scalar S> Tensor full(Dims sizes, S value, Loc loc = Loc::current()) {
  return full(std::move(sizes), double(value), detail::dtype_of<S>(), loc);
}
Tensor zeros_like(const Tensor& t, Loc loc = Loc::current());
Tensor ones_like(const Tensor& t, Loc loc = Loc::current());
Tensor full_like(const Tensor& t, double value, Loc loc = Loc::current());
/// [0, stop) or [start, stop) by step (numpy.arange; the count is ceil((stop-start)/step)).
Tensor arange(double stop, DType dtype = DType::I64, Loc loc = Loc::current());
Tensor arange(double start, double stop, double step = 1.0, DType dtype = DType::F32,
              Loc loc = Loc::current());
/// `num` points from start to stop inclusive (numpy.linspace).
Tensor linspace(double start, double stop, int64_t num, DType dtype = DType::F32,
                Loc loc = Loc::current());
/// Identity matrix [n, m] (m = n by default); `k` offsets the diagonal as numpy.eye.
Tensor eye(int64_t n, std::optional<int64_t> m = std::nullopt, int64_t k = 0,
           DType dtype = DType::F32, Loc loc = Loc::current());
/// Uniform [0, 1) and standard normal values from a seeded counter-based generator: the same
/// (sizes, seed) always gives the same values, on every machine.
Tensor rand(Dims sizes, uint64_t seed = 0, DType dtype = DType::F32, Loc loc = Loc::current());
Tensor randn(Dims sizes, uint64_t seed = 0, DType dtype = DType::F32, Loc loc = Loc::current());
/// Read / write a .npy file (see rlx/io/npy.hpp for the formats).
Tensor load_npy(const std::string& path, Loc loc = Loc::current());
void save_npy(const std::string& path, const Tensor& t, Loc loc = Loc::current());

// ---- Operators: numpy broadcasting and dtype promotion. A C++ scalar takes the tensor's dtype
// (a float scalar with an integer or bool tensor gives f32; an int scalar with bool gives i64).
// `/` is true division (integers divide as f32). Comparisons give bool tensors.
namespace detail {
/// A tensor operand that remembers where the operator was written.
struct At {
  const Tensor& t;
  Loc loc;
  At(const Tensor& t, Loc loc = Loc::current()) : t(t), loc(loc) {}
};
} // namespace detail

#define RLX_TENSOR_BINARY_OPERATOR(OP, FN)                                                         \
  Tensor operator OP(detail::At a, detail::At b);                                                  \
  template <Scalar S> Tensor operator OP(detail::At a, S b) { return FN(a.t, Number(b), a.loc); }  \
  template <Scalar S> Tensor operator OP(S a, detail::At b) { return FN(Number(a), b.t, b.loc); }
#define RLX_TENSOR_BINARY_FUNCTION(FN)                                                             \
  Tensor FN(const Tensor& a, const Tensor& b, Loc loc = Loc::current());                           \
  Tensor FN(const Tensor& a, Number b, Loc loc = Loc::current());                                  \
  Tensor FN(Number a, const Tensor& b, Loc loc = Loc::current());

RLX_TENSOR_BINARY_FUNCTION(add)
RLX_TENSOR_BINARY_FUNCTION(sub)
RLX_TENSOR_BINARY_FUNCTION(mul)
RLX_TENSOR_BINARY_FUNCTION(div)
RLX_TENSOR_BINARY_FUNCTION(eq)
RLX_TENSOR_BINARY_FUNCTION(ne)
RLX_TENSOR_BINARY_FUNCTION(lt)
RLX_TENSOR_BINARY_FUNCTION(le)
RLX_TENSOR_BINARY_FUNCTION(gt)
RLX_TENSOR_BINARY_FUNCTION(ge)
/// Element-wise power (float result for integer bases with a float exponent).
RLX_TENSOR_BINARY_FUNCTION(pow)
/// Element-wise max/min, NaN-propagating (numpy.maximum / minimum).
RLX_TENSOR_BINARY_FUNCTION(maximum)
RLX_TENSOR_BINARY_FUNCTION(minimum)
/// C fmod: the result has the dividend's sign (torch.fmod).
RLX_TENSOR_BINARY_FUNCTION(fmod)
/// Logical and/or of truthiness (bool result).
RLX_TENSOR_BINARY_FUNCTION(logical_and)
RLX_TENSOR_BINARY_FUNCTION(logical_or)

RLX_TENSOR_BINARY_OPERATOR(+, add)
RLX_TENSOR_BINARY_OPERATOR(-, sub)
RLX_TENSOR_BINARY_OPERATOR(*, mul)
RLX_TENSOR_BINARY_OPERATOR(/, div)
RLX_TENSOR_BINARY_OPERATOR(==, eq)
RLX_TENSOR_BINARY_OPERATOR(!=, ne)
RLX_TENSOR_BINARY_OPERATOR(<, lt)
RLX_TENSOR_BINARY_OPERATOR(<=, le)
RLX_TENSOR_BINARY_OPERATOR(>, gt)
RLX_TENSOR_BINARY_OPERATOR(>=, ge)
RLX_TENSOR_BINARY_OPERATOR(&&, logical_and)
RLX_TENSOR_BINARY_OPERATOR(||, logical_or)
#undef RLX_TENSOR_BINARY_OPERATOR
#undef RLX_TENSOR_BINARY_FUNCTION

Tensor operator-(detail::At a);
Tensor operator!(detail::At a);
Tensor& operator+=(Tensor& a, const Tensor& b);
Tensor& operator-=(Tensor& a, const Tensor& b);
Tensor& operator*=(Tensor& a, const Tensor& b);
Tensor& operator/=(Tensor& a, const Tensor& b);
template <Scalar S> Tensor& operator+=(Tensor& a, S b) { return a = add(a, Number(b)); }
template <Scalar S> Tensor& operator-=(Tensor& a, S b) { return a = sub(a, Number(b)); }
template <Scalar S> Tensor& operator*=(Tensor& a, S b) { return a = mul(a, Number(b)); }
template <Scalar S> Tensor& operator/=(Tensor& a, S b) { return a = div(a, Number(b)); }

// ---- Element-wise functions. Float-only functions compute integer and bool inputs in f32.
// abs of a c64 tensor is its modulus, f32 (computed in f64, as numpy.abs without overflow).
#define RLX_TENSOR_UNARY(FN) Tensor FN(const Tensor& x, Loc loc = Loc::current());
RLX_TENSOR_UNARY(neg)
RLX_TENSOR_UNARY(abs)
RLX_TENSOR_UNARY(sign)
RLX_TENSOR_UNARY(exp)
RLX_TENSOR_UNARY(log)
RLX_TENSOR_UNARY(sqrt)
RLX_TENSOR_UNARY(rsqrt)
RLX_TENSOR_UNARY(reciprocal)
RLX_TENSOR_UNARY(sin)
RLX_TENSOR_UNARY(cos)
RLX_TENSOR_UNARY(tan)
RLX_TENSOR_UNARY(atan)
RLX_TENSOR_UNARY(tanh)
RLX_TENSOR_UNARY(erf)
RLX_TENSOR_UNARY(round)
RLX_TENSOR_UNARY(floor)
RLX_TENSOR_UNARY(ceil)
RLX_TENSOR_UNARY(sigmoid)
RLX_TENSOR_UNARY(relu)
/// Erf GELU; gelu_approx is the tanh form.
RLX_TENSOR_UNARY(gelu)
RLX_TENSOR_UNARY(gelu_approx)
RLX_TENSOR_UNARY(silu)
RLX_TENSOR_UNARY(softplus)
RLX_TENSOR_UNARY(hard_swish)
RLX_TENSOR_UNARY(hard_sigmoid)
RLX_TENSOR_UNARY(mish)
RLX_TENSOR_UNARY(softsign)
RLX_TENSOR_UNARY(log_sigmoid)
/// log(1 + x) and exp(x) - 1, accurate for small x.
RLX_TENSOR_UNARY(log1p)
RLX_TENSOR_UNARY(expm1)
RLX_TENSOR_UNARY(logical_not)
/// Identity whose gradient is zero (jax.lax.stop_gradient).
RLX_TENSOR_UNARY(stop_gradient)
#undef RLX_TENSOR_UNARY
Tensor leaky_relu(const Tensor& x, double alpha = 0.01, Loc loc = Loc::current());
Tensor elu(const Tensor& x, double alpha = 1.0, Loc loc = Loc::current());
/// Clamp to [lo, hi]; a missing bound is open.
Tensor clamp(const Tensor& x, std::optional<double> lo, std::optional<double> hi,
             Loc loc = Loc::current());
/// cond ? a : b, all three broadcast; a and b promote together (scalars take the other's dtype).
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b, Loc loc = Loc::current());
Tensor where(const Tensor& cond, const Tensor& a, Number b, Loc loc = Loc::current());
Tensor where(const Tensor& cond, Number a, const Tensor& b, Loc loc = Loc::current());
Tensor cast(const Tensor& x, DType dtype, Loc loc = Loc::current());

// ---- Reductions and scans. `axes` may be negative; an empty list reduces every axis.
Tensor sum(const Tensor& x, Dims axes = {}, bool keepdims = false, Loc loc = Loc::current());
Tensor mean(const Tensor& x, Dims axes = {}, bool keepdims = false, Loc loc = Loc::current());
Tensor max(const Tensor& x, Dims axes = {}, bool keepdims = false, Loc loc = Loc::current());
Tensor min(const Tensor& x, Dims axes = {}, bool keepdims = false, Loc loc = Loc::current());
Tensor prod(const Tensor& x, Dims axes = {}, bool keepdims = false, Loc loc = Loc::current());
/// Variance and standard deviation (ddof as numpy: 0 is the biased estimate).
Tensor var(const Tensor& x, Dims axes = {}, bool keepdims = false, int64_t ddof = 0,
           Loc loc = Loc::current());
Tensor std(const Tensor& x, Dims axes = {}, bool keepdims = false, int64_t ddof = 0,
           Loc loc = Loc::current());
/// log(sum(exp(x))) over axes, computed stably.
Tensor logsumexp(const Tensor& x, Dims axes = {}, bool keepdims = false, Loc loc = Loc::current());
/// Index of the max/min along axis (i64); without an axis, over the flattened tensor.
Tensor argmax(const Tensor& x, std::optional<int64_t> axis = std::nullopt, bool keepdims = false,
              Loc loc = Loc::current());
Tensor argmin(const Tensor& x, std::optional<int64_t> axis = std::nullopt, bool keepdims = false,
              Loc loc = Loc::current());
Tensor cumsum(const Tensor& x, int64_t axis, bool exclusive = false, Loc loc = Loc::current());
Tensor softmax(const Tensor& x, int64_t axis = -1, Loc loc = Loc::current());
Tensor log_softmax(const Tensor& x, int64_t axis = -1, Loc loc = Loc::current());

// ---- Shape and data movement
Tensor reshape(const Tensor& x, Dims sizes, Loc loc = Loc::current());
Tensor transpose(const Tensor& x, Loc loc = Loc::current());
Tensor transpose(const Tensor& x, int64_t axis0, int64_t axis1, Loc loc = Loc::current());
Tensor permute(const Tensor& x, Dims perm, Loc loc = Loc::current());
Tensor squeeze(const Tensor& x, std::optional<int64_t> axis = std::nullopt,
               Loc loc = Loc::current());
Tensor unsqueeze(const Tensor& x, int64_t axis, Loc loc = Loc::current());
Tensor flatten(const Tensor& x, int64_t start = 0, int64_t end = -1, Loc loc = Loc::current());
Tensor expand(const Tensor& x, Dims sizes, Loc loc = Loc::current());
Tensor broadcast_to(const Tensor& x, Dims sizes, Loc loc = Loc::current());
Tensor slice(const Tensor& x, int64_t axis, std::optional<int64_t> start,
             std::optional<int64_t> stop, int64_t step = 1, Loc loc = Loc::current());
/// `len` elements of `axis` from `start` (torch.narrow).
Tensor narrow(const Tensor& x, int64_t axis, int64_t start, int64_t len, Loc loc = Loc::current());
/// Reverse the order of elements along each axis (numpy.flip).
Tensor flip(const Tensor& x, Dims axes, Loc loc = Loc::current());
/// pads = [before_0, after_0, before_1, after_1, ...] (one pair per axis, leading axes first).
Tensor pad(const Tensor& x, Dims pads, ir::PadMode mode = ir::PadMode::Constant, double value = 0.0,
           Loc loc = Loc::current());
/// Join along an existing axis / a new axis. Operands promote to a common dtype.
Tensor concat(std::span<const Tensor> xs, int64_t axis = 0, Loc loc = Loc::current());
Tensor concat(std::initializer_list<Tensor> xs, int64_t axis = 0, Loc loc = Loc::current());
Tensor stack(std::span<const Tensor> xs, int64_t axis = 0, Loc loc = Loc::current());
Tensor stack(std::initializer_list<Tensor> xs, int64_t axis = 0, Loc loc = Loc::current());
/// Split into pieces of the given sizes along axis (torch.split with a list).
std::vector<Tensor> split(const Tensor& x, Dims sizes, int64_t axis = 0, Loc loc = Loc::current());
/// Select `indices` (integer tensor, negative from the end) along axis (numpy.take).
Tensor take(const Tensor& x, const Tensor& indices, int64_t axis = 0, Loc loc = Loc::current());

// ---- Linear algebra and neural-network layers (PyTorch layouts)
/// numpy.matmul: rank-1 operands are vectors; batch dims broadcast.
Tensor matmul(const Tensor& a, const Tensor& b, Loc loc = Loc::current());
/// x @ w [+ bias], then an optional activation; `fused` records one FusedMatMulBiasAct node.
Tensor linear(const Tensor& x, const Tensor& w, std::optional<Tensor> bias = std::nullopt,
              std::optional<ir::Activation> act = std::nullopt, bool fused = false,
              Loc loc = Loc::current());
/// (silu(x @ gate) * (x @ up)) @ down; `fused` uses the FusedSwiGLU op.
Tensor swiglu_ffn(const Tensor& x, const Tensor& up, const Tensor& gate, const Tensor& down,
                  bool fused = false, Loc loc = Loc::current());
Tensor layer_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, double eps = 1e-5,
                  int64_t axis = -1, Loc loc = Loc::current());
/// RMS norm over the last axis: x / sqrt(mean(x^2) + eps) * gamma [+ beta].
Tensor rms_norm(const Tensor& x, const Tensor& gamma, std::optional<Tensor> beta = std::nullopt,
                double eps = 1e-5, Loc loc = Loc::current());
/// layer_norm / rms_norm of x + residual [+ bias] over the last axis, as one fused node.
Tensor residual_layer_norm(const Tensor& x, const Tensor& residual, const Tensor& gamma,
                           const Tensor& beta, std::optional<Tensor> bias = std::nullopt,
                           double eps = 1e-5, Loc loc = Loc::current());
Tensor residual_rms_norm(const Tensor& x, const Tensor& residual, const Tensor& gamma,
                         std::optional<Tensor> beta = std::nullopt,
                         std::optional<Tensor> bias = std::nullopt, double eps = 1e-5,
                         Loc loc = Loc::current());
Tensor group_norm(const Tensor& x, int64_t num_groups, const Tensor& gamma, const Tensor& beta,
                  double eps = 1e-5, Loc loc = Loc::current());
/// LayerNorm over the channels of NCHW at each position.
Tensor layer_norm2d(const Tensor& x, const Tensor& gamma, const Tensor& beta, double eps = 1e-6,
                    Loc loc = Loc::current());
Tensor batch_norm(const Tensor& x, const Tensor& running_mean, const Tensor& running_var,
                  const Tensor& gamma, const Tensor& beta, double eps = 1e-5,
                  Loc loc = Loc::current());

struct Conv2dOptions {
  ir::Ints2 stride{1, 1}, padding{0, 0}, dilation{1, 1};
  int64_t groups = 1;
};
/// x [N, C_in, H, W], w [C_out, C_in/groups, kH, kW], optional bias [C_out].
Tensor conv2d(const Tensor& x, const Tensor& w, std::optional<Tensor> bias = std::nullopt,
              Conv2dOptions opts = {}, Loc loc = Loc::current());
struct ConvTranspose2dOptions {
  ir::Ints2 stride{1, 1}, padding{0, 0}, dilation{1, 1}, output_padding{0, 0};
  int64_t groups = 1;
};
/// x [N, C_in, H, W], w [C_in, C_out/groups, kH, kW].
Tensor conv_transpose2d(const Tensor& x, const Tensor& w, std::optional<Tensor> bias = std::nullopt,
                        ConvTranspose2dOptions opts = {}, Loc loc = Loc::current());
struct Conv3dOptions {
  ir::Ints3 stride{1, 1, 1}, padding{0, 0, 0}, dilation{1, 1, 1}, output_padding{0, 0, 0};
  int64_t groups = 1;
};
Tensor conv3d(const Tensor& x, const Tensor& w, Conv3dOptions opts = {}, Loc loc = Loc::current());
Tensor conv_transpose3d(const Tensor& x, const Tensor& w, Conv3dOptions opts = {},
                        Loc loc = Loc::current());
struct ConvTranspose1dOptions {
  int64_t stride = 1, padding = 0, dilation = 1, output_padding = 0, groups = 1;
};
Tensor conv_transpose1d(const Tensor& x, const Tensor& w, ConvTranspose1dOptions opts = {},
                        Loc loc = Loc::current());
/// NCHW patches: [N*H_out*W_out, C*kH*kW].
Tensor im2col(const Tensor& x, ir::Ints2 kernel_size, Conv2dOptions opts = {},
              Loc loc = Loc::current());
Tensor max_pool2d(const Tensor& x, ir::Ints2 kernel_size, std::optional<ir::Ints2> stride = {},
                  ir::Ints2 padding = {0, 0}, Loc loc = Loc::current());
Tensor avg_pool2d(const Tensor& x, ir::Ints2 kernel_size, std::optional<ir::Ints2> stride = {},
                  ir::Ints2 padding = {0, 0}, Loc loc = Loc::current());
/// Resample the last axis to `size` samples / D, H, W of NCDHW to `size`.
Tensor interpolate1d(const Tensor& x, int64_t size, ir::InterpMode mode = ir::InterpMode::Linear,
                     Loc loc = Loc::current());
Tensor interpolate3d(const Tensor& x, ir::Ints3 size, ir::InterpMode mode = ir::InterpMode::Linear,
                     bool align_corners = false, Loc loc = Loc::current());

struct AttentionOptions {
  /// None, Causal or SlidingWindow (kernel-made masks); a custom mask or bias is passed apart.
  ir::MaskKind mask = ir::MaskKind::none();
  std::optional<float> scale{};   ///< default 1/sqrt(head_dim)
  std::optional<float> softcap{}; ///< logit soft cap c*tanh(s/c)
};
/// Multi-head scaled dot-product attention; q, k, v are [batch, seq, num_heads*head_dim].
Tensor attention(const Tensor& q, const Tensor& k, const Tensor& v, int64_t num_heads,
                 AttentionOptions opts = {}, Loc loc = Loc::current());
/// With a custom [batch, key_len] validity mask (values < 0.5 are masked).
Tensor attention_masked(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask,
                        int64_t num_heads, AttentionOptions opts = {}, Loc loc = Loc::current());
/// With an additive [batch, num_heads, query_len, key_len] bias on the scores.
Tensor attention_bias(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& bias,
                      int64_t num_heads, AttentionOptions opts = {}, Loc loc = Loc::current());
/// Rotary embedding of x [batch, seq, num_heads*head_dim] with cos/sin [seq, n_rot/2].
Tensor rope(const Tensor& x, const Tensor& cos, const Tensor& sin, int64_t head_dim,
            int64_t n_rot = 0, ir::RopeStyle style = ir::RopeStyle::NeoX, Loc loc = Loc::current());
Tensor axial_rope2d(const Tensor& x, int64_t end_x, int64_t end_y, int64_t head_dim,
                    int64_t num_heads, double theta = 10000.0, int64_t repeat_factor = 1,
                    Loc loc = Loc::current());

// ---- Spectral and signal processing: numpy.fft and torch.stft/istft are rlx::fft
// (rlx/fft.hpp); the Graph builders of rlx/ir/graph.hpp reach the rest through rlx::apply
// (rlx/apply.hpp).
/// scipy.signal.lfilter(b, a, x) along the last axis (1-D b and a, zero initial state).
Tensor lfilter(const Tensor& x, const Tensor& b, const Tensor& a, Loc loc = Loc::current());
/// Complex conjugate of a c64 tensor.
Tensor conjugate(const Tensor& z, Loc loc = Loc::current());
/// |z|^2 of a c64 tensor, as f32.
Tensor complex_norm_sq(const Tensor& z, Loc loc = Loc::current());
/// numpy.real / numpy.imag: the parts of a c64 tensor as f32 (a real tensor is its own real
/// part, and its imaginary part is zeros of its dtype).
Tensor real(const Tensor& z, Loc loc = Loc::current());
Tensor imag(const Tensor& z, Loc loc = Loc::current());
/// re + i im as c64 from f32 or f64 parts of one shape and dtype (torch.complex); the one-operand
/// form has im = 0.
Tensor complex(const Tensor& re, const Tensor& im, Loc loc = Loc::current());
Tensor complex(const Tensor& re, Loc loc = Loc::current());
/// numpy.angle: the argument of each element in (-pi, pi], as f32 for c64 (0 or pi for real
/// tensors, as f32 or f64). Signed zeros are not told apart: angle(-1 - 0i) is pi.
Tensor angle(const Tensor& z, Loc loc = Loc::current());

} // namespace rlx
