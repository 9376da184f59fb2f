// src/support/buffer.cpp -- Buffer storage and dtype conversions.
#include "rlx/buffer.hpp"

#include "rlx/error.hpp"
#include "support/half.hpp"

#include <cmath>
#include <cstring>
#include <limits>

namespace rlx {

using ir::DType;

namespace {

template <class T> T load(const std::byte* p, int64_t i) {
  T v;
  std::memcpy(&v, p + i * int64_t(sizeof(T)), sizeof(T));
  return v;
}
template <class T> void store(std::byte* p, int64_t i, T v) {
  std::memcpy(p + i * int64_t(sizeof(T)), &v, sizeof(T));
}

/// Saturating float -> integer conversion (NaN -> 0), defined for every input.
template <class T> T saturate(double v) {
  if (std::isnan(v)) return 0;
  constexpr double lo = double(std::numeric_limits<T>::min());
  constexpr double hi = double(std::numeric_limits<T>::max());
  if (v <= lo) return std::numeric_limits<T>::min();
  if (v >= hi) return std::numeric_limits<T>::max();
  return static_cast<T>(v);
}

template <class T> T clamp_int(int64_t v) {
  if constexpr (std::is_same_v<T, int64_t>) {
    return v;
  } else {
    if (v < int64_t(std::numeric_limits<T>::min())) return std::numeric_limits<T>::min();
    if (v > int64_t(std::numeric_limits<T>::max())) return std::numeric_limits<T>::max();
    return static_cast<T>(v);
  }
}

} // namespace

Buffer::Buffer(ir::Shape shape) : Buffer(uninitialized(std::move(shape))) {
  if (!bytes_.size()) return;
  std::memset(bytes_.data(), 0, bytes_.size());
}

Buffer Buffer::external(ir::Shape shape, std::byte* data, std::shared_ptr<void> owner) {
  auto n = shape.num_elements();
  if (!n) fail(ErrorKind::Runtime, "buffer: shape ", ir::short_str(shape), " is not static");
  Buffer b;
  b.shape_ = std::move(shape);
  b.numel_ = *n;
  b.bytes_ = Storage::external(data, std::size_t(b.numel_) * ir::size_bytes(b.shape_.dtype()),
                               std::move(owner));
  return b;
}

Buffer Buffer::uninitialized(ir::Shape shape) {
  auto n = shape.num_elements();
  if (!n) fail(ErrorKind::Runtime, "buffer: shape ", ir::short_str(shape), " is not static");
  Buffer b;
  b.shape_ = std::move(shape);
  b.numel_ = *n;
  b.bytes_ = Storage(std::size_t(b.numel_) * ir::size_bytes(b.shape_.dtype()), /*zero=*/false);
  return b;
}

Buffer Buffer::from_f64(ir::Shape shape, std::span<const double> values) {
  Buffer b(std::move(shape));
  if (int64_t(values.size()) != b.numel_)
    fail(ErrorKind::Value, "buffer: ", values.size(), " values for shape ",
         ir::short_str(b.shape_));
  for (int64_t i = 0; i < b.numel_; ++i) b.set_f64(i, values[std::size_t(i)]);
  return b;
}

Buffer Buffer::from_i64(ir::Shape shape, std::span<const int64_t> values) {
  Buffer b(std::move(shape));
  if (int64_t(values.size()) != b.numel_)
    fail(ErrorKind::Value, "buffer: ", values.size(), " values for shape ",
         ir::short_str(b.shape_));
  for (int64_t i = 0; i < b.numel_; ++i) b.set_i64(i, values[std::size_t(i)]);
  return b;
}

Buffer Buffer::f32(std::vector<int64_t> dims, std::span<const float> values) {
  std::vector<double> v(values.begin(), values.end());
  return from_f64(ir::Shape::of(dims, DType::F32), v);
}

Buffer Buffer::i64(std::vector<int64_t> dims, std::span<const int64_t> values) {
  return from_i64(ir::Shape::of(dims, DType::I64), values);
}

/// Calls f(T{}) with the C++ storage type of an integer dtype (Bool is stored as uint8_t but
/// handled by callers, since it normalizes to 0/1); returns false for the other dtypes.
template <class F> bool with_int_storage(DType t, F&& f) {
  switch (t) {
  case DType::I8:
    f(int8_t{});
    return true;
  case DType::I16:
    f(int16_t{});
    return true;
  case DType::I32:
    f(int32_t{});
    return true;
  case DType::I64:
    f(int64_t{});
    return true;
  case DType::U8:
    f(uint8_t{});
    return true;
  case DType::U32:
    f(uint32_t{});
    return true;
  default:
    return false;
  }
}

double Buffer::get_f64(int64_t i) const {
  const std::byte* p = bytes_.data();
  switch (dtype()) {
  case DType::F32:
    return load<float>(p, i);
  case DType::F64:
    return load<double>(p, i);
  case DType::F16:
    return detail::f16_to_f32(load<uint16_t>(p, i));
  case DType::BF16:
    return detail::bf16_to_f32(load<uint16_t>(p, i));
  case DType::C64:
    return load<float>(p, 2 * i);
  default:
    return double(get_i64(i));
  }
}

int64_t Buffer::get_i64(int64_t i) const {
  const std::byte* p = bytes_.data();
  if (dtype() == DType::Bool) return load<uint8_t>(p, i) ? 1 : 0;
  int64_t out = 0;
  if (with_int_storage(dtype(), [&](auto t) { out = int64_t(load<decltype(t)>(p, i)); }))
    return out;
  return saturate<int64_t>(get_f64(i));
}

void Buffer::set_f64(int64_t i, double v) {
  std::byte* p = bytes_.data();
  switch (dtype()) {
  case DType::F32:
    store<float>(p, i, static_cast<float>(v));
    return;
  case DType::F64:
    store<double>(p, i, v);
    return;
  case DType::F16:
    store<uint16_t>(p, i, detail::f32_to_f16(static_cast<float>(v)));
    return;
  case DType::BF16:
    store<uint16_t>(p, i, detail::f32_to_bf16(static_cast<float>(v)));
    return;
  case DType::C64:
    set_c64(i, {static_cast<float>(v), 0.0f});
    return;
  case DType::Bool:
    store<uint8_t>(p, i, v != 0.0 ? 1 : 0);
    return;
  default:
    with_int_storage(dtype(), [&](auto t) {
      using T = decltype(t);
      store<T>(p, i, saturate<T>(v));
    });
  }
}

void Buffer::set_i64(int64_t i, int64_t v) {
  std::byte* p = bytes_.data();
  if (dtype() == DType::Bool) return store<uint8_t>(p, i, v != 0 ? 1 : 0);
  bool is_int = with_int_storage(dtype(), [&](auto t) {
    using T = decltype(t);
    store<T>(p, i, clamp_int<T>(v));
  });
  if (!is_int) set_f64(i, double(v));
}

std::complex<float> Buffer::get_c64(int64_t i) const {
  if (dtype() != DType::C64) return {static_cast<float>(get_f64(i)), 0.0f};
  return {load<float>(bytes_.data(), 2 * i), load<float>(bytes_.data(), 2 * i + 1)};
}

void Buffer::set_c64(int64_t i, std::complex<float> v) {
  if (dtype() != DType::C64) return set_f64(i, v.real());
  store<float>(bytes_.data(), 2 * i, v.real());
  store<float>(bytes_.data(), 2 * i + 1, v.imag());
}

std::vector<double> Buffer::to_f64() const {
  std::vector<double> out(static_cast<std::size_t>(numel_));
  for (int64_t i = 0; i < numel_; ++i) out[std::size_t(i)] = get_f64(i);
  return out;
}

std::vector<int64_t> Buffer::to_i64() const {
  std::vector<int64_t> out(static_cast<std::size_t>(numel_));
  for (int64_t i = 0; i < numel_; ++i) out[std::size_t(i)] = get_i64(i);
  return out;
}

std::vector<float> Buffer::to_f32() const {
  std::vector<float> out(static_cast<std::size_t>(numel_));
  for (int64_t i = 0; i < numel_; ++i) out[std::size_t(i)] = static_cast<float>(get_f64(i));
  return out;
}

} // namespace rlx
