// include/rlx/buffer.hpp -- Buffer: an owned, contiguous tensor of any dtype, the value every
// backend, file format and the Tensor frontend hand around.
#pragma once

#include "rlx/ir/shape.hpp"
#include "rlx/memory.hpp"

#include <complex>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace rlx {

/// An owned, contiguous (row-major) tensor of any dtype; its bytes come from the memory pool
/// (rlx/memory.hpp).
class Buffer {
public:
  Buffer() = default;
  /// Zero-filled; the shape must be static.
  explicit Buffer(ir::Shape shape);
  /// With unspecified contents (for results a kernel overwrites entirely).
  static Buffer uninitialized(ir::Shape shape);

  /// The bytes at data (numel * element size of them, 64-byte aligned), not copied: `owner`
  /// keeps them alive (Tensor::from_blob). The buffer must not outlive them when owner is null.
  static Buffer external(ir::Shape shape, std::byte* data, std::shared_ptr<void> owner);
  /// Whether the bytes are external (see Storage::is_external).
  bool is_external() const { return bytes_.is_external(); }

  /// Values converted to `shape`'s dtype (floats round to nearest, ints saturate, bool = x != 0).
  static Buffer from_f64(ir::Shape shape, std::span<const double> values);
  static Buffer from_i64(ir::Shape shape, std::span<const int64_t> values);
  /// Shorthands for the common cases: f32 and i64 buffers from values.
  static Buffer f32(std::vector<int64_t> dims, std::span<const float> values);
  static Buffer i64(std::vector<int64_t> dims, std::span<const int64_t> values);

  const ir::Shape& shape() const { return shape_; }
  ir::DType dtype() const { return shape_.dtype(); }
  int64_t numel() const { return numel_; }
  std::span<std::byte> bytes() { return bytes_; }
  std::span<const std::byte> bytes() const { return bytes_; }

  /// Element i as a double (C64: the real part) or int64 (floats truncate toward zero).
  double get_f64(int64_t i) const;
  int64_t get_i64(int64_t i) const;
  /// Store v converted to the dtype (see from_f64).
  void set_f64(int64_t i, double v);
  void set_i64(int64_t i, int64_t v);
  std::complex<float> get_c64(int64_t i) const;
  void set_c64(int64_t i, std::complex<float> v);

  std::vector<double> to_f64() const;
  std::vector<int64_t> to_i64() const;
  std::vector<float> to_f32() const;

  friend bool operator==(const Buffer&, const Buffer&) = default;

private:
  ir::Shape shape_;
  int64_t numel_ = 0;
  Storage bytes_; ///< pooled (rlx/memory.hpp)
};

} // namespace rlx
