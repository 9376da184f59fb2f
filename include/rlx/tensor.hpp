// include/rlx/tensor.hpp -- the tracing frontend: Tensor, creation, numpy-like ops, eval.
//
// A Tensor is a cheap, copyable, reference-counted handle. Operations on tensors only record
// nodes (shapes and dtypes are checked at once, with the caller's source line); data is computed
// when it is read (to_vector, item, data, printing, save_npy) or when rlx::eval is called. Every
// entry point takes a trailing `Loc` that defaults to the caller's location: errors name the
// user's line, also when they are found later, at materialization.
// Over 1,000 lines on purpose: the numpy-like API is this one header, one block per area.
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
#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <ostream>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
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
/// `_` selects a whole axis (Python's `:`): x.index({rlx::_, 0}) is x[:, 0]. (`rlx::all` is
/// numpy's reduction.)
inline constexpr Slice _{};

class TensorIndex {
public:
  TensorIndex(int64_t i) : kind_(Kind::Int), i_(i) {}
  TensorIndex(int i) : kind_(Kind::Int), i_(i) {}
  TensorIndex(Slice s) : kind_(Kind::Slice), s_(s) {}
  TensorIndex(NewAxis) : kind_(Kind::NewAxis) {}
  /// numpy advanced indexing: an integer tensor (its values index one axis; several broadcast
  /// together) or a bool mask (it indexes as many axes as it has; materialized on the host).
  TensorIndex(const Tensor& t); // NOLINT: implicit, so x.index({rlx::Slice{}, idx}) reads as numpy
  enum class Kind : uint8_t { Int, Slice, NewAxis, Tensor };
  Kind kind() const { return kind_; }
  int64_t integer() const { return i_; }
  const Slice& slice() const { return s_; }
  /// The index tensor of a Kind::Tensor index.
  Tensor tensor() const;

private:
  Kind kind_;
  int64_t i_ = 0;
  Slice s_;
  std::shared_ptr<detail::TensorImpl> t_;
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
  /// The user's memory as a tensor, without a copy (torch.from_blob, Eigen::Map): `data` holds
  /// the row-major values of `dtype`. With a deleter the tensor owns the memory and calls
  /// deleter(data) when nothing (no tensor, no pending result) uses it any more; without one the
  /// caller keeps the memory alive while any tensor computed from it may still be read. Writes
  /// to the memory show through, as with torch.from_numpy. Memory that is not 64-byte aligned
  /// (the alignment rlx's kernels read with) and bool values (stored as 0/1 bytes) are copied
  /// instead, and the deleter then runs at once; shares_memory(data) tells which happened.
  static Tensor from_blob(void* data, Dims sizes, DType dtype,
                          std::function<void(void*)> deleter = {}, Loc loc = Loc::current());
  template <Element T>
  static Tensor from_blob(T* data, Dims sizes, std::function<void(void*)> deleter = {},
                          Loc loc = Loc::current()) {
    return from_blob(static_cast<void*>(data), std::move(sizes), detail::dtype_of<T>(),
                     std::move(deleter), loc);
  }
  /// Whether the tensor's value is computed in memory that starts at `data` (a from_blob tensor
  /// that was not copied). Never materializes.
  bool shares_memory(const void* data) const;

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

  // ---- numpy shape and movement (src/frontend/numpy_shape.cpp)
  /// Reverse the axes (numpy's .T) / swap the last two axes (numpy's and torch's .mT).
  Tensor T(Loc loc = Loc::current()) const;
  Tensor mT(Loc loc = Loc::current()) const;
  // ---- numpy reductions and helpers as methods (src/frontend/ops_numpy.cpp); the free
  // functions of the same names are the reference.
  template <std::integral I>
  Tensor var(I axis, bool keepdims = false, int64_t ddof = 0, Loc loc = Loc::current()) const {
    return var(Dims{int64_t(axis)}, keepdims, ddof, loc);
  }
  Tensor var(Dims axes = {}, bool keepdims = false, int64_t ddof = 0,
             Loc loc = Loc::current()) const;
  template <std::integral I>
  Tensor std(I axis, bool keepdims = false, int64_t ddof = 0, Loc loc = Loc::current()) const {
    return std(Dims{int64_t(axis)}, keepdims, ddof, loc);
  }
  Tensor std(Dims axes = {}, bool keepdims = false, int64_t ddof = 0,
             Loc loc = Loc::current()) const;
  template <std::integral I>
  Tensor logsumexp(I axis, bool keepdims = false, Loc loc = Loc::current()) const {
    return logsumexp(Dims{int64_t(axis)}, keepdims, loc);
  }
  Tensor logsumexp(Dims axes = {}, bool keepdims = false, Loc loc = Loc::current()) const;
  template <std::integral I>
  Tensor any(I axis, bool keepdims = false, Loc loc = Loc::current()) const {
    return any(Dims{int64_t(axis)}, keepdims, loc);
  }
  Tensor any(Dims axes = {}, bool keepdims = false, Loc loc = Loc::current()) const;
  template <std::integral I>
  Tensor all(I axis, bool keepdims = false, Loc loc = Loc::current()) const {
    return all(Dims{int64_t(axis)}, keepdims, loc);
  }
  Tensor all(Dims axes = {}, bool keepdims = false, Loc loc = Loc::current()) const;
  template <std::integral I>
  Tensor norm(double ord, I axis, bool keepdims = false, Loc loc = Loc::current()) const {
    return norm(ord, Dims{int64_t(axis)}, keepdims, loc);
  }
  Tensor norm(double ord = 2, Dims axes = {}, bool keepdims = false,
              Loc loc = Loc::current()) const;
  Tensor cumsum(int64_t axis, bool exclusive = false, Loc loc = Loc::current()) const;
  Tensor square(Loc loc = Loc::current()) const;
  Tensor clip(std::optional<double> lo, std::optional<double> hi, Loc loc = Loc::current()) const;
  Tensor clip(const Tensor& lo, const Tensor& hi, Loc loc = Loc::current()) const;
  Tensor isnan(Loc loc = Loc::current()) const;

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

// ---- numpy shape and movement (src/frontend/numpy_shape.cpp)
/// numpy.swapaxes / torch.swapaxes.
Tensor swapaxes(const Tensor& x, int64_t axis0, int64_t axis1, Loc loc = Loc::current());
/// numpy.moveaxis: source axes go to destination positions, the others keep their order.
Tensor moveaxis(const Tensor& x, Dims source, Dims destination, Loc loc = Loc::current());
template <std::integral I, std::integral J>
Tensor moveaxis(const Tensor& x, I source, J destination, Loc loc = Loc::current()) {
  return moveaxis(x, Dims{int64_t(source)}, Dims{int64_t(destination)}, loc);
}
/// numpy.roll: elements shifted along each axis, wrapping around; without axes the flattened
/// tensor is rolled and the shape restored.
Tensor roll(const Tensor& x, Dims shifts, Dims axes = {}, Loc loc = Loc::current());
template <std::integral I>
Tensor roll(const Tensor& x, I shift, std::optional<int64_t> axis = std::nullopt,
            Loc loc = Loc::current()) {
  return roll(x, Dims{int64_t(shift)}, axis ? Dims{*axis} : Dims{}, loc);
}
/// numpy.tile: reps shorter than x's rank are padded with leading 1s, and x with leading axes
/// when reps is longer.
Tensor tile(const Tensor& x, Dims reps, Loc loc = Loc::current());
/// numpy.repeat / torch.repeat_interleave: each element `repeats` times (a count, or one count
/// per element along axis); without an axis the flattened tensor is repeated.
Tensor repeat(const Tensor& x, Dims repeats, std::optional<int64_t> axis = std::nullopt,
              Loc loc = Loc::current());
template <std::integral I>
Tensor repeat(const Tensor& x, I repeats, std::optional<int64_t> axis = std::nullopt,
              Loc loc = Loc::current()) {
  return repeat(x, Dims{int64_t(repeats)}, axis, loc);
}
Tensor repeat_interleave(const Tensor& x, Dims repeats, std::optional<int64_t> axis = std::nullopt,
                         Loc loc = Loc::current());
template <std::integral I>
Tensor repeat_interleave(const Tensor& x, I repeats, std::optional<int64_t> axis = std::nullopt,
                         Loc loc = Loc::current()) {
  return repeat(x, Dims{int64_t(repeats)}, axis, loc);
}
/// The lower / upper triangle of the last two axes (below / above diagonal k kept), batched
/// over the leading axes (numpy.tril / triu).
Tensor tril(const Tensor& x, int64_t k = 0, Loc loc = Loc::current());
Tensor triu(const Tensor& x, int64_t k = 0, Loc loc = Loc::current());
/// numpy.diag: a 1-D tensor becomes a square matrix with it on diagonal k; a 2-D tensor gives
/// its diagonal k.
Tensor diag(const Tensor& x, int64_t k = 0, Loc loc = Loc::current());
/// numpy.diagonal: the diagonal `offset` of the axis pair, as the last axis of the result.
Tensor diagonal(const Tensor& x, int64_t offset = 0, int64_t axis1 = 0, int64_t axis2 = 1,
                Loc loc = Loc::current());
/// numpy.trace: the sum of diagonal(x, offset, axis1, axis2).
Tensor trace(const Tensor& x, int64_t offset = 0, int64_t axis1 = 0, int64_t axis2 = 1,
             Loc loc = Loc::current());
/// numpy.meshgrid's `indexing`: Xy swaps the first two output axes (the default), Ij does not.
enum class Indexing : uint8_t { Xy, Ij };
/// numpy.meshgrid of 1-D tensors (others are flattened, as numpy): one tensor per input.
std::vector<Tensor> meshgrid(std::span<const Tensor> xs, Indexing indexing = Indexing::Xy,
                             Loc loc = Loc::current());
std::vector<Tensor> meshgrid(std::initializer_list<Tensor> xs, Indexing indexing = Indexing::Xy,
                             Loc loc = Loc::current());
/// torch.chunk: pieces of ceil(len / chunks) along axis, the last one shorter (there may be
/// fewer than `chunks` pieces).
std::vector<Tensor> chunk(const Tensor& x, int64_t chunks, int64_t axis = 0,
                          Loc loc = Loc::current());
/// torch.unbind: the slices along axis, each without it.
std::vector<Tensor> unbind(const Tensor& x, int64_t axis = 0, Loc loc = Loc::current());
/// numpy.array_split: `sections` pieces, the first len % sections one element longer.
std::vector<Tensor> array_split(const Tensor& x, int64_t sections, int64_t axis = 0,
                                Loc loc = Loc::current());
namespace detail {
std::vector<Tensor> split_sections(const Tensor& x, int64_t sections, int64_t axis, Loc loc);
}
/// numpy.split with a section count: `sections` equal pieces (an error when they are not).
template <std::integral I>
std::vector<Tensor> split(const Tensor& x, I sections, int64_t axis = 0, Loc loc = Loc::current()) {
  return detail::split_sections(x, int64_t(sections), axis, loc);
}
/// torch.nn.functional.one_hot: a new last axis of num_classes; i64 like torch unless `dtype`
/// is given. An index outside [0, num_classes) gives a row of zeros (not an error: the indices
/// are not read on the host).
Tensor one_hot(const Tensor& indices, int64_t num_classes,
               std::optional<DType> dtype = std::nullopt, Loc loc = Loc::current());
/// numpy.outer: the flattened a times the flattened b, [a.numel(), b.numel()].
Tensor outer(const Tensor& a, const Tensor& b, Loc loc = Loc::current());
/// numpy.tensordot: the last `axes` axes of a against the first `axes` of b, or the listed
/// pairs; the free axes of a, then of b.
Tensor tensordot(const Tensor& a, const Tensor& b, int64_t axes = 2, Loc loc = Loc::current());
Tensor tensordot(const Tensor& a, const Tensor& b, Dims axes_a, Dims axes_b,
                 Loc loc = Loc::current());
/// numpy.einsum ("ij,jk->ik", implicit output, `...`, repeated letters): operands are
/// contracted left to right, each pair as one batched matmul.
Tensor einsum(std::string_view spec, std::span<const Tensor> operands, Loc loc = Loc::current());
Tensor einsum(std::string_view spec, std::initializer_list<Tensor> operands,
              Loc loc = Loc::current());
/// numpy.kron: the Kronecker product (ranks aligned with leading 1s).
Tensor kron(const Tensor& a, const Tensor& b, Loc loc = Loc::current());
/// numpy.atleast_1d / 2d / 3d (a 1-D [n] becomes [1, n] and [1, n, 1]; 2-D [m, n] [m, n, 1]).
Tensor atleast_1d(const Tensor& x, Loc loc = Loc::current());
Tensor atleast_2d(const Tensor& x, Loc loc = Loc::current());
Tensor atleast_3d(const Tensor& x, Loc loc = Loc::current());
/// numpy.expand_dims: size-1 axes at the given positions of the result.
Tensor expand_dims(const Tensor& x, Dims axes, Loc loc = Loc::current());
template <std::integral I> Tensor expand_dims(const Tensor& x, I axis, Loc loc = Loc::current()) {
  return expand_dims(x, Dims{int64_t(axis)}, loc);
}
/// numpy.squeeze with several axes (each must have size 1).
Tensor squeeze(const Tensor& x, Dims axes, Loc loc = Loc::current());
Tensor squeeze(const Tensor& x, std::initializer_list<int64_t> axes, Loc loc = Loc::current());
/// numpy.flipud (axis 0) / fliplr (axis 1).
Tensor flipud(const Tensor& x, Loc loc = Loc::current());
Tensor fliplr(const Tensor& x, Loc loc = Loc::current());
/// numpy.rot90: k quarter turns from the first axis of `axes` towards the second.
Tensor rot90(const Tensor& x, int64_t k = 1, Dims axes = {0, 1}, Loc loc = Loc::current());
/// Cumulative ops along axis, by doubling (log2 n steps of an element-wise op, no division, so
/// gradients flow and cumprod through zeros is exact). `exclusive` shifts in the op's identity
/// (1, the dtype's lowest / highest, -inf); `reverse` scans from the end.
Tensor cumsum(const Tensor& x, int64_t axis, bool exclusive, bool reverse,
              Loc loc = Loc::current());
Tensor cumprod(const Tensor& x, int64_t axis, bool exclusive = false, bool reverse = false,
               Loc loc = Loc::current());
Tensor cummax(const Tensor& x, int64_t axis, bool exclusive = false, bool reverse = false,
              Loc loc = Loc::current());
Tensor cummin(const Tensor& x, int64_t axis, bool exclusive = false, bool reverse = false,
              Loc loc = Loc::current());
/// log(cumsum(exp(x))) computed stably (torch.logcumsumexp).
Tensor logcumsumexp(const Tensor& x, int64_t axis, bool exclusive = false, bool reverse = false,
                    Loc loc = Loc::current());
/// torch.cummax / cummin: the values and the i64 index where each running extreme was taken
/// (the last one among equal values, and the last NaN, as torch).
std::pair<Tensor, Tensor> cummax_with_indices(const Tensor& x, int64_t axis,
                                              Loc loc = Loc::current());
std::pair<Tensor, Tensor> cummin_with_indices(const Tensor& x, int64_t axis,
                                              Loc loc = Loc::current());
// ---- sorting, selection and scattering (src/frontend/sort.cpp)
// NaN orders above every number (numpy's ascending sort; torch's descending sort and topk).
// Indices are i64; index operands may be any integer dtype, negative ones count from the end,
// and one out of range is an rlx::Error when the value is computed. Gradients flow to values
// (sort, topk, take_along_axis, gather, scatter*, index_add, median, quantile), never to indices.
/// numpy.sort along axis (stable; descending keeps equal elements in their order).
Tensor sort(const Tensor& x, int64_t axis = -1, bool descending = false, bool stable = true,
            Loc loc = Loc::current());
/// numpy.argsort: the stable sorting permutation along axis (i64).
Tensor argsort(const Tensor& x, int64_t axis = -1, bool descending = false, bool stable = true,
               Loc loc = Loc::current());
/// torch.topk: (values, i64 indices) of the k largest (smallest unless `largest`) along axis,
/// in that order, ties to the smaller index (always sorted, whatever `sorted` says).
std::pair<Tensor, Tensor> topk(const Tensor& x, int64_t k, int64_t axis = -1, bool largest = true,
                               bool sorted = true, Loc loc = Loc::current());
/// torch.kthvalue: (values, i64 indices) of the k-th smallest (k from 1) along axis.
std::pair<Tensor, Tensor> kthvalue(const Tensor& x, int64_t k, int64_t axis = -1,
                                   bool keepdims = false, Loc loc = Loc::current());
/// torch.mode: (values, i64 indices) of the most frequent value along axis, the smallest of
/// equally frequent ones, and the last index holding it (NaNs count as distinct values).
std::pair<Tensor, Tensor> mode(const Tensor& x, int64_t axis = -1, bool keepdims = false,
                               Loc loc = Loc::current());
/// numpy.take_along_axis: out[.., i, ..] = x[.., indices[.., i, ..], ..] along axis; indices
/// has x's rank and its other axes broadcast against x's.
Tensor take_along_axis(const Tensor& x, const Tensor& indices, int64_t axis,
                       Loc loc = Loc::current());
/// torch.gather(x, axis, index): take_along_axis with index no larger than x off the axis.
Tensor gather(const Tensor& x, int64_t axis, const Tensor& index, Loc loc = Loc::current());
/// torch.scatter_add: x plus src[i] added at index[i] along axis (index's extent of src).
Tensor scatter_add(const Tensor& x, int64_t axis, const Tensor& index, const Tensor& src,
                   Loc loc = Loc::current());
/// torch.scatter: x with src[i] written at index[i] along axis; of duplicate indices the last
/// in row-major order of index wins.
Tensor scatter(const Tensor& x, int64_t axis, const Tensor& index, const Tensor& src,
               Loc loc = Loc::current());
/// numpy.put_along_axis, functional: x with values (broadcast to indices) written at indices
/// along axis; of duplicates the last wins.
Tensor put_along_axis(const Tensor& x, const Tensor& indices, const Tensor& values, int64_t axis,
                      Loc loc = Loc::current());
/// torch.index_add: x plus src[.., i, ..] added at x[.., index[i], ..] (index 1-D) along axis.
Tensor index_add(const Tensor& x, int64_t axis, const Tensor& index, const Tensor& src,
                 Loc loc = Loc::current());
/// numpy.searchsorted on a 1-D ascending `sorted`: i64 insertion points of values, side "left"
/// (first a[i] >= v) or "right" (first a[i] > v); a binary search, O(m log n).
Tensor searchsorted(const Tensor& sorted, const Tensor& values, std::string_view side = "left",
                    Loc loc = Loc::current());
struct UniqueResult {
  Tensor values;  ///< the sorted distinct values (1-D)
  Tensor inverse; ///< i64, x's shape: values[inverse] == x (if asked)
  Tensor counts;  ///< i64, how often each value occurs (if asked)
};
/// numpy.unique over the flattened x. The result's size depends on the values, so x is
/// computed; inside rlx::jit (a trace) this is an ErrorKind::Trace error.
UniqueResult unique(const Tensor& x, bool return_inverse = false, bool return_counts = false,
                    Loc loc = Loc::current());
/// numpy.median / nanmedian along axis (the whole tensor without one): the mean of the two
/// middle values; median is NaN where a slice holds a NaN, nanmedian skips them.
Tensor median(const Tensor& x, std::optional<int64_t> axis = std::nullopt, bool keepdims = false,
              Loc loc = Loc::current());
Tensor nanmedian(const Tensor& x, std::optional<int64_t> axis = std::nullopt, bool keepdims = false,
                 Loc loc = Loc::current());
/// numpy.quantile / percentile with method "linear" (the default), "lower", "higher" or
/// "midpoint"; several q stack as a new first axis, as numpy's do.
Tensor quantile(const Tensor& x, double q, std::optional<int64_t> axis = std::nullopt,
                std::string_view method = "linear", bool keepdims = false,
                Loc loc = Loc::current());
Tensor quantile(const Tensor& x, std::vector<double> q, std::optional<int64_t> axis = std::nullopt,
                std::string_view method = "linear", bool keepdims = false,
                Loc loc = Loc::current());
Tensor percentile(const Tensor& x, double q, std::optional<int64_t> axis = std::nullopt,
                  std::string_view method = "linear", bool keepdims = false,
                  Loc loc = Loc::current());
/// numpy.histogram over the flattened x: (i64 counts [bins], edges [bins + 1]); the range
/// defaults to (min, max) of x (computed in the graph), values outside it are not counted and
/// the last bin includes its right edge.
std::pair<Tensor, Tensor> histogram(const Tensor& x, int64_t bins = 10,
                                    std::optional<std::pair<double, double>> range = std::nullopt,
                                    Loc loc = Loc::current());
/// numpy.bincount of non-negative integers x (1-D), weighted if weights is given (f64 counts
/// then, else i64). The length max(x) + 1 (at least minlength) needs x's values, so x is
/// computed; inside rlx::jit give minlength, which is then the length (a larger value is an
/// out-of-range error when the result is computed).
Tensor bincount(const Tensor& x, std::optional<Tensor> weights = std::nullopt,
                int64_t minlength = 0, Loc loc = Loc::current());

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

// ---- numpy logic, cleaning and math (src/frontend/ops_numpy.cpp)
// Compositions of the element-wise ops, reductions and `where` above: no IR op of their own, so
// both backends and autodiff follow from those ops. Float-only functions compute integer and bool
// inputs in f32; every function rejects c64 operands (an rlx::Error naming it). Where they differ
// from numpy is in docs/semantics.md ("numpy logic, cleaning and math").
/// numpy.any / numpy.all over axes (as sum; {} = every axis): whether any / every element is
/// truthy (nonzero; NaN is truthy); bool. Over no elements any is false and all is true.
Tensor any(const Tensor& x, Dims axes = {}, bool keepdims = false, Loc loc = Loc::current());
Tensor all(const Tensor& x, Dims axes = {}, bool keepdims = false, Loc loc = Loc::current());
/// Bool tests of each element; integers and bools are never NaN or infinite.
Tensor isnan(const Tensor& x, Loc loc = Loc::current());
Tensor isinf(const Tensor& x, Loc loc = Loc::current());
Tensor isfinite(const Tensor& x, Loc loc = Loc::current());
/// NaN -> nan, +inf -> posinf, -inf -> neginf (default: the dtype's max / lowest, as numpy);
/// integer and bool tensors are returned unchanged.
Tensor nan_to_num(const Tensor& x, double nan = 0.0, std::optional<double> posinf = std::nullopt,
                  std::optional<double> neginf = std::nullopt, Loc loc = Loc::current());
/// numpy.clip: clamp with scalar bounds (a missing one is open), or minimum(maximum(x, lo), hi)
/// with tensor bounds that broadcast (the result promotes with them).
Tensor clip(const Tensor& x, std::optional<double> lo, std::optional<double> hi,
            Loc loc = Loc::current());
Tensor clip(const Tensor& x, const Tensor& lo, const Tensor& hi, Loc loc = Loc::current());
/// numpy.concatenate: concat.
Tensor concatenate(std::span<const Tensor> xs, int64_t axis = 0, Loc loc = Loc::current());
Tensor concatenate(std::initializer_list<Tensor> xs, int64_t axis = 0, Loc loc = Loc::current());
#define RLX_NUMPY_BINARY(FN)                                                                       \
  Tensor FN(const Tensor& a, const Tensor& b, Loc loc = Loc::current());                           \
  Tensor FN(const Tensor& a, Number b, Loc loc = Loc::current());                                  \
  Tensor FN(Number a, const Tensor& b, Loc loc = Loc::current());
/// numpy.power and numpy.true_divide: pow and div.
RLX_NUMPY_BINARY(power)
RLX_NUMPY_BINARY(true_divide)
/// sqrt(a^2 + b^2) without overflow or underflow; inf when either is infinite (also with NaN).
RLX_NUMPY_BINARY(hypot)
/// The angle of (b, a) in [-pi, pi], numpy's quadrant rules with signed zeros and infinities.
RLX_NUMPY_BINARY(arctan2)
/// Python's floor division and remainder (the remainder has the divisor's sign; numpy's divmod
/// algorithm for floats; integers divide exactly, and by zero give 0). `mod` is `remainder`;
/// the C-truncating remainder is `fmod`.
RLX_NUMPY_BINARY(floor_divide)
RLX_NUMPY_BINARY(remainder)
RLX_NUMPY_BINARY(mod)
/// |a| with b's sign bit (float result).
RLX_NUMPY_BINARY(copysign)
/// log(exp(a) + exp(b)), computed stably.
RLX_NUMPY_BINARY(logaddexp)
/// Exclusive or of truthiness (bool).
RLX_NUMPY_BINARY(logical_xor)
#undef RLX_NUMPY_BINARY
#define RLX_NUMPY_UNARY(FN) Tensor FN(const Tensor& x, Loc loc = Loc::current());
/// x * x in x's dtype.
RLX_NUMPY_UNARY(square)
RLX_NUMPY_UNARY(log2)
RLX_NUMPY_UNARY(log10)
RLX_NUMPY_UNARY(exp2)
RLX_NUMPY_UNARY(sinh)
RLX_NUMPY_UNARY(cosh)
RLX_NUMPY_UNARY(arcsin)
RLX_NUMPY_UNARY(arccos)
RLX_NUMPY_UNARY(arctan)
RLX_NUMPY_UNARY(arcsinh)
RLX_NUMPY_UNARY(arccosh)
RLX_NUMPY_UNARY(arctanh)
RLX_NUMPY_UNARY(deg2rad)
RLX_NUMPY_UNARY(rad2deg)
/// Whether the sign bit is set (bool): true for -0.0; NaN counts as positive.
RLX_NUMPY_UNARY(signbit)
/// PyTorch activations.
RLX_NUMPY_UNARY(selu)
RLX_NUMPY_UNARY(relu6)
RLX_NUMPY_UNARY(tanhshrink)
/// hard_swish and log_sigmoid under PyTorch's names.
RLX_NUMPY_UNARY(hardswish)
RLX_NUMPY_UNARY(logsigmoid)
#undef RLX_NUMPY_UNARY
/// numpy.isclose: |a - b| <= atol + rtol |b| for finite values, a == b otherwise, and NaN with
/// NaN when equal_nan; computed in the float dtype of the promoted operands; bool.
Tensor isclose(const Tensor& a, const Tensor& b, double rtol = 1e-5, double atol = 1e-8,
               bool equal_nan = false, Loc loc = Loc::current());
/// all(isclose(...)) as a C++ bool: materializes (not usable on traced values inside rlx::jit).
bool allclose(const Tensor& a, const Tensor& b, double rtol = 1e-5, double atol = 1e-8,
              bool equal_nan = false, Loc loc = Loc::current());
/// Vector norm over axes ({} = every axis, as torch.linalg.vector_norm): ord inf / -inf is
/// max / min |x|, 0 counts nonzeros, p > 0 or < 0 is (sum |x|^p)^(1/p); float result.
Tensor norm(const Tensor& x, double ord = 2, Dims axes = {}, bool keepdims = false,
            Loc loc = Loc::current());
/// torch.nn.functional: celu, hardtanh, softshrink, hardshrink, threshold, glu (halves of
/// `axis`: a * sigmoid(b)), prelu (weight: one value, or one per channel, axis 1), softmin,
/// softplus with beta and threshold (x where beta x > threshold).
Tensor celu(const Tensor& x, double alpha = 1.0, Loc loc = Loc::current());
Tensor hardtanh(const Tensor& x, double min_val = -1.0, double max_val = 1.0,
                Loc loc = Loc::current());
Tensor softshrink(const Tensor& x, double lambd = 0.5, Loc loc = Loc::current());
Tensor hardshrink(const Tensor& x, double lambd = 0.5, Loc loc = Loc::current());
Tensor threshold(const Tensor& x, double threshold, double value, Loc loc = Loc::current());
Tensor glu(const Tensor& x, int64_t axis = -1, Loc loc = Loc::current());
Tensor prelu(const Tensor& x, const Tensor& weight, Loc loc = Loc::current());
Tensor softmin(const Tensor& x, int64_t axis = -1, Loc loc = Loc::current());
Tensor softplus(const Tensor& x, double beta, double threshold = 20.0, Loc loc = Loc::current());

} // namespace rlx
