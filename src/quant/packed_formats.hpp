// src/quant/packed_formats.hpp -- the block codecs of every packed weight format (QuantScheme), in
// one place: the interpreter's and the JIT's dequant_matmul kernels, rlx::quant's pack/unpack and
// the GGUF reader all use them.
//
// A packed weight W [n, k] is n rows along k (GGUF's layout of a linear layer), each row a run of
// blocks. Byte layouts of one block (all little-endian; "f16" is IEEE binary16):
//   Q4_0  (32 values, 18 bytes): f16 d, 16 bytes qs; value j < 16 = d * ((qs[j] & 15) - 8), value
//         j + 16 = d * ((qs[j] >> 4) - 8).
//   Q4_1  (32, 20): f16 d, f16 m, qs[16]; value = d * q + m, nibbles as Q4_0.
//   Q5_0  (32, 22): f16 d, u32 qh, qs[16]; bit j of qh is bit 4 of value j; value = d * (q - 16).
//   Q5_1  (32, 24): f16 d, f16 m, u32 qh, qs[16]; value = d * q + m.
//   Q8_0  (32, 34): f16 d, i8 qs[32]; value = d * q.
//   Q2_K  (256, 84): u8 scales[16] (low nibble scale, high nibble min of each 16 values),
//         qs[64] (2-bit codes: byte l of 32-byte group g holds values of 4 sub-blocks at shifts
//         0, 2, 4, 6), f16 d, f16 dmin; value = d * sc * q - dmin * mn.
//   Q3_K  (256, 110): hmask[32] (the third bit, 0 meaning subtract 4), qs[64] (as Q2_K), scales[12]
//         (16 six-bit scales biased by 32: low 4 bits in bytes 0..7, high 2 bits in bytes 8..11),
//         f16 d; value = d * (sc - 32) * (q - 4 * !h).
//   Q4_K  (256, 144): f16 d, f16 dmin, scales[12] (8 six-bit scales and mins), qs[128] (each
//         32-byte group holds sub-blocks 2i (low nibbles) and 2i + 1 (high)); value =
//         d * sc * q - dmin * mn.
//   Q5_K  (256, 176): as Q4_K plus qh[32] between scales and qs (bit 2i of qh[l] is bit 4 of value
//         l of sub-block 2i, bit 2i + 1 of sub-block 2i + 1).
//   Q6_K  (256, 210): ql[128] (low 4 bits), qh[64] (high 2 bits), i8 scales[16], f16 d; value =
//         d * sc * (q - 32).
//   Q8_K  (256, 292): f32 d, i8 qs[256], i16 bsums[16] (sums of each 16 codes); value = d * q.
//   Int8Block{bs}     (bs, 4 + bs): f32 d, i8 q[bs]; value = d * q.
//   Int8BlockAsym{bs} (bs, 8 + bs): f32 d, f32 zp, u8 q[bs]; value = d * (q - zp).
//   Int4Block{bs}     (bs even, 8 + bs/2): f32 d, f32 zp, bs/2 bytes (value 2i in the low nibble
//                     of byte i, 2i + 1 in the high one); value = d * (q - zp).
//   Fp8E4m3, Fp8E5m2  (1, 1): the OCP FP8 code.
//   Nvfp4Block        (16, 9): the E4M3 scale, then 8 bytes of E2M1 codes (low nibble first);
//                     value = e2m1 * e4m3 (the packed form has no global scale).
// The decoders compute each value in f32 in the order written above (no fused multiply-add), so
// they equal tests/fixtures/make_packed.py's numpy transcription bit for bit.
#pragma once

#include "rlx/ir/quant_scheme.hpp"

#include <cstdint>
#include <string_view>

namespace rlx::quant {

using ir::QuantFormat;
using ir::QuantScheme;

/// Values and bytes of one block.
struct BlockShape {
  int64_t values = 0, bytes = 0;
};

/// The block of `s`, or an rlx::Error (ErrorKind::Value, naming `what`) for a block size the
/// format cannot take (Int*: positive, Int4Block's even, at most 2^20).
BlockShape block_shape(QuantScheme s, std::string_view what);
/// Bytes of one packed row of k values; an rlx::Error naming `what` when k is not a multiple of
/// the block.
int64_t row_bytes(QuantScheme s, int64_t k, std::string_view what);

/// Decode `count` consecutive blocks starting at `blocks` into out[count * values].
void decode_blocks(QuantScheme s, const uint8_t* blocks, int64_t count, float* out);
/// Encode count blocks of values from in[count * values] (rlx's quantizers, documented in
/// packed_formats.cpp: round-to-nearest choices of scales, not ggml's search-based ones).
void encode_blocks(QuantScheme s, const float* in, int64_t count, uint8_t* blocks);

// ---- Scalar codes
float fp8_e4m3_to_f32(uint8_t code);
float fp8_e5m2_to_f32(uint8_t code);
/// Round to nearest even; saturate to the largest finite value (E4M3 has no infinity: 448, E5M2
/// 57344); NaN to the canonical NaN (E4M3 0x7F, E5M2 0x7E), with the sign of the input.
uint8_t f32_to_fp8_e4m3(float x);
uint8_t f32_to_fp8_e5m2(float x);
/// E2M1 (NVFP4's elements): 0, 0.5, 1, 1.5, 2, 3, 4, 6 and their negatives.
float fp4_e2m1_to_f32(uint8_t code);
uint8_t f32_to_fp4_e2m1(float x);

/// The split (4-input) form of dequant_matmul's weights: one row of W decoded into out[k].
struct SplitWeights {
  QuantScheme scheme;
  int64_t n = 0, k = 0;
  const uint8_t* q = nullptr;       ///< w_q (i8/u8 codes or packed nibbles)
  const float* scale = nullptr;     ///< Int*: [n, k/bs]; FP8: [n] or [1]
  int64_t scale_count = 0;          ///< elements of scale (FP8's per-row or per-tensor)
  const float* zp = nullptr;        ///< Int8BlockAsym, Int4Block: [n, k/bs]
  const uint8_t* scales8 = nullptr; ///< Nvfp4Block: E4M3 codes [n, k/16]
  float global = 1.0f;              ///< Nvfp4Block
};
/// Values [k0, k0 + len) of row `row` (k0, len multiples of the scheme's block) into out[len].
void decode_split(const SplitWeights& w, int64_t row, int64_t k0, int64_t len, float* out);
/// The block (values) of the split form: bs for Int*, 16 for NVFP4, 1 for FP8.
int64_t split_block(QuantScheme s);

/// The weight operands of one dequant_matmul node, either form, as rows to decode.
struct DequantRows {
  QuantScheme scheme;
  int64_t n = 0, k = 0;
  const uint8_t* packed = nullptr; ///< the 2-input form's bytes [n, row_bytes], else null
  int64_t row_bytes = 0, block_bytes = 0;
  int64_t block = 1; ///< values per block: decode's k0 and len are multiples of it
  SplitWeights split;
  /// Values [k0, k0 + len) of row `row` into out[len].
  void decode(int64_t row, int64_t k0, int64_t len, float* out) const;
};
/// weights: the node's operands after x (1 for the packed form, 3 for the split one);
/// scale_count: the elements of the split form's scale operand.
DequantRows dequant_rows(QuantScheme s, int64_t n, int64_t k, const void* const* weights,
                         int64_t num_weights, int64_t scale_count);

} // namespace rlx::quant
