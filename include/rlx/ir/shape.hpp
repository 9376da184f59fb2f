// include/rlx/ir/shape.hpp -- Dim (static size or dynamic symbol), Shape (dims + dtype),
// DimBinding.
#pragma once

#include "rlx/ir/dtype.hpp"

#include <cstdint>
#include <initializer_list>
#include <map>
#include <optional>
#include <ostream>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace rlx::ir {

/// Well-known dynamic symbols (their names are "batch", "seq", "rows", "past_seq").
namespace sym {
inline constexpr uint32_t kBatch = 0;
inline constexpr uint32_t kSeq = 1;
inline constexpr uint32_t kRows = 2; ///< product of leading axes, e.g. batch*seq
inline constexpr uint32_t kPastSeq = 3;
} // namespace sym

/// Largest size a single dimension may have (keeps byte counts far from int64 overflow).
inline constexpr int64_t kMaxDimSize = int64_t(1) << 48;
/// Most bytes one tensor may have (256 TiB: more than any machine holds). A static shape over it
/// is an ErrorKind::Limit error where it is made, so element counts, byte counts and strides of
/// every Shape fit in int64. Empty shapes count too: the product of their nonzero dims times
/// the dtype's size must stay within it, as numpy requires of empty arrays.
inline constexpr int64_t kMaxTensorBytes = int64_t(1) << 48;

/// The id of a named dynamic symbol; the same name always gives the same id in a process.
uint32_t symbol_id(std::string_view name);
/// The name of a symbol, or "" when the id was never named (printed then as ?<id>).
std::string symbol_name(uint32_t id);

/// One dimension: a static size, or a dynamic symbol. The same symbol in two shapes means
/// "the same unknown size".
class Dim {
public:
  /// A static dimension; implicit so that Shape({4, 15, 384}, DType::F32) reads naturally.
  Dim(int64_t size = 0);
  Dim(int size) : Dim(int64_t(size)) {}
  Dim(std::size_t size) : Dim(int64_t(size)) {}
  static Dim fixed(int64_t size) { return Dim(size); }
  static Dim dynamic(uint32_t symbol);
  static Dim dynamic(std::string_view name) { return dynamic(symbol_id(name)); }

  bool is_static() const { return symbol_ < 0; }
  bool is_dynamic() const { return symbol_ >= 0; }
  /// The static size; an InternalError when dynamic (check is_static first).
  int64_t size() const;
  /// The symbol id; an InternalError when static.
  uint32_t symbol() const;

  friend bool operator==(const Dim&, const Dim&) = default;

private:
  int64_t size_ = 0;
  int64_t symbol_ = -1;
};

/// "384" or "?seq" (or "?7" for an unnamed symbol).
std::string to_string(const Dim& d);
std::ostream& operator<<(std::ostream& os, const Dim& d);

class DimBinding;

/// Dims plus a dtype (the dtype lives on the shape, as in the original). Its static dims hold at
/// most kMaxTensorBytes: every constructor checks (ErrorKind::Limit).
class Shape {
public:
  Shape() = default;
  Shape(std::vector<Dim> dims, DType dtype) : dims_(std::move(dims)), dtype_(dtype) {
    check_size();
  }
  Shape(std::initializer_list<Dim> dims, DType dtype) : dims_(dims), dtype_(dtype) { check_size(); }
  static Shape of(std::span<const int64_t> dims, DType dtype);
  static Shape scalar(DType dtype) { return Shape(std::vector<Dim>{}, dtype); }

  std::size_t rank() const { return dims_.size(); }
  const std::vector<Dim>& dims() const { return dims_; }
  /// Dim i; negative i counts from the end. InternalError when out of range.
  const Dim& dim(int64_t i) const;
  DType dtype() const { return dtype_; }

  bool is_static() const;
  /// Product of the dims; nullopt when any dim is dynamic.
  std::optional<int64_t> num_elements() const;
  /// num_elements() times the dtype's size (at most kMaxTensorBytes).
  std::optional<int64_t> size_bytes() const;
  /// The static sizes; InternalError when any dim is dynamic.
  std::vector<int64_t> sizes() const;

  Shape with_dim(std::size_t i, Dim d) const;
  Shape with_dtype(DType t) const { return Shape(dims_, t); }
  /// Sorted, deduplicated symbols used by this shape.
  std::vector<uint32_t> dynamic_symbols() const;
  /// Replace bound symbols by their sizes; unbound symbols stay dynamic.
  Shape bind(const DimBinding& b) const;

  friend bool operator==(const Shape&, const Shape&) = default;

private:
  /// ErrorKind::Limit when the static dims (dynamic ones are skipped) exceed kMaxTensorBytes.
  void check_size() const;

  std::vector<Dim> dims_;
  DType dtype_ = DType::F32;
};

/// The IR form, "[4, 15, 384] f32".
std::string to_string(const Shape& s);
/// The error-message form, "f32[4,15,384]".
std::string short_str(const Shape& s);
std::ostream& operator<<(std::ostream& os, const Shape& s);

/// Symbol -> size.
class DimBinding {
public:
  DimBinding() = default;
  DimBinding(std::initializer_list<std::pair<uint32_t, int64_t>> pairs);
  static DimBinding from_pairs(std::span<const std::pair<uint32_t, int64_t>> pairs);
  /// batch and seq, plus rows = batch * seq.
  static DimBinding batch_seq(int64_t batch, int64_t seq);

  DimBinding& set(uint32_t symbol, int64_t size);
  DimBinding& set(std::string_view name, int64_t size) { return set(symbol_id(name), size); }
  std::optional<int64_t> get(uint32_t symbol) const;
  std::size_t len() const { return map_.size(); }
  bool is_empty() const { return map_.empty(); }
  const std::map<uint32_t, int64_t>& entries() const { return map_; }

  friend bool operator==(const DimBinding&, const DimBinding&) = default;

private:
  std::map<uint32_t, int64_t> map_;
};

} // namespace rlx::ir
