// include/rlx/gguf.hpp -- a reader of GGUF files (llama.cpp's model format, version 3; version 2
// has the same layout and is read too): the header, the metadata key/values, the tensor infos and
// the tensor data, mapped read-only. Each tensor comes out as an rlx Tensor over the mapping:
// f32/f16/bf16/f64/integer tensors in their dtype, the quantized ones as packed bytes
// u8 [rows, row_bytes] with the QuantScheme rlx::quant::dequant_matmul takes. A malformed file
// (truncated, bad magic, counts or sizes past the file, offsets out of range or misaligned) is an
// rlx::Error (ErrorKind::Io) naming the file and what is wrong; the reader never reads past the
// mapping and allocates at most in proportion to the file's size.
#pragma once

#include "rlx/ir/quant_scheme.hpp"
#include "rlx/tensor.hpp"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace rlx::gguf {

/// GGUF's metadata value types, with the file's numbering.
enum class ValueType : uint32_t {
  U8 = 0,
  I8 = 1,
  U16 = 2,
  I16 = 3,
  U32 = 4,
  I32 = 5,
  F32 = 6,
  Bool = 7,
  String = 8,
  Array = 9,
  U64 = 10,
  I64 = 11,
  F64 = 12,
};

/// One metadata value: the field its type uses (u for unsigned, i for signed integers, f for
/// floats, b, s, and array with array_type for arrays).
struct Value {
  ValueType type = ValueType::U8;
  uint64_t u = 0;
  int64_t i = 0;
  double f = 0;
  bool b = false;
  std::string s;
  ValueType array_type = ValueType::U8;
  /// An array's elements (empty for any other type).
  std::span<const Value> array() const;
  /// Where array() looks. Held through a pointer because a vector of the type being defined
  /// breaks the REPL's precompiled prelude, which instantiates every template eagerly.
  std::shared_ptr<const std::vector<Value>> elements;
};

/// One tensor's info. dims are GGUF's ne: dims[0] is the fastest-varying (a linear layer's
/// weight [n, k] is stored with dims = {k, n}).
struct TensorInfo {
  std::string name;
  std::vector<int64_t> dims;
  uint32_t type = 0;   ///< ggml's type id (0 f32, 1 f16, 2 Q4_0, 8 Q8_0, 12 Q4_K, ...)
  uint64_t offset = 0; ///< from the start of the data section
  uint64_t bytes = 0;  ///< the tensor's size in the file
  /// The packed scheme of a quantized type rlx decodes (Q4_0 .. Q8_K), else nullopt.
  std::optional<ir::QuantScheme> scheme;
};

class File {
public:
  uint32_t version = 0;
  uint64_t alignment = 32;  ///< general.alignment, or GGUF's default 32
  uint64_t data_offset = 0; ///< where the data section starts in the file
  std::vector<std::pair<std::string, Value>> metadata;
  std::vector<TensorInfo> tensors;

  /// The value of a metadata key, or null.
  const Value* find(std::string_view key) const;
  /// The info of a tensor, or an rlx::Error naming it.
  const TensorInfo& info(std::string_view name, Loc loc = Loc::current()) const;
  /// The tensor's bytes in the mapping.
  std::span<const std::byte> bytes(const TensorInfo& t) const;
  /// The tensor over the mapping (no copy when its data is 64-byte aligned in the file, as with
  /// general.alignment 64; copied otherwise, see Tensor::from_blob): numpy's order of dims (the
  /// reverse of ne) for plain types; u8 [ne1 * ne2 * ne3, row_bytes(ne0)] for quantized ones. A
  /// type rlx does not decode (Q8_1, the IQ and TQ types) is an rlx::Error.
  Tensor tensor(std::string_view name, Loc loc = Loc::current()) const;

  /// The mapping's owner (kept alive by every Tensor made from it).
  std::shared_ptr<const void> mapping;
  std::span<const std::byte> file_bytes;
  std::string path;
};

/// Read a GGUF file's header, metadata and tensor infos and map its data read-only.
File load(const std::string& path, Loc loc = Loc::current());
/// The same from bytes in memory (kept alive by `owner`), for tests and fuzzing.
File parse(std::span<const std::byte> bytes, std::shared_ptr<const void> owner,
           std::string name = "<memory>", Loc loc = Loc::current());

} // namespace rlx::gguf
