// include/rlx/ir/quant_scheme.hpp -- QuantScheme (RLX's name): how a weight matrix is stored
// packed for dequant_matmul. The attribute prints in the text IR and JSON as the format's name
// (`Q4_0`), or `[Int8Block, 32]` for the formats that carry a block size.
#pragma once

#include "rlx/enum.hpp"

#include <cstdint>

namespace rlx::ir {

/// The packed formats. Int8Block, Int8BlockAsym, Int4Block: blocks of `block_size` integers along
/// k with an f32 scale (and zero point); Fp8E4m3, Fp8E5m2: one OCP FP8 code per value; Q4_0 ..
/// Q8_K: GGUF's (ggml's) block types, byte for byte; Nvfp4Block: E2M1 codes, an E4M3 scale per 16
/// values and an f32 global scale. Byte layouts: src/quant/packed_formats.hpp.
RLX_ENUM(QuantFormat, Int8Block, Int8BlockAsym, Int4Block, Fp8E4m3, Fp8E5m2, Q4_0, Q4_1, Q5_0, Q5_1,
         Q8_0, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, Q8_K, Nvfp4Block)

struct QuantScheme {
  QuantFormat format = QuantFormat::Q8_0;
  /// Values per block of Int8Block, Int8BlockAsym and Int4Block (0 for the other formats, whose
  /// block is fixed).
  int64_t block_size = 0;

  static QuantScheme int8_block(int64_t bs) { return {QuantFormat::Int8Block, bs}; }
  static QuantScheme int8_block_asym(int64_t bs) { return {QuantFormat::Int8BlockAsym, bs}; }
  static QuantScheme int4_block(int64_t bs) { return {QuantFormat::Int4Block, bs}; }
  static QuantScheme of(QuantFormat f) { return {f, 0}; }

  /// The GGUF block types (Q4_0 .. Q8_K): dequant_matmul takes them as [x, packed bytes].
  bool is_gguf() const { return format >= QuantFormat::Q4_0 && format <= QuantFormat::Q8_K; }
  /// Whether the format carries block_size.
  bool has_block_size() const { return format <= QuantFormat::Int4Block; }
  friend bool operator==(const QuantScheme&, const QuantScheme&) = default;
};

} // namespace rlx::ir
