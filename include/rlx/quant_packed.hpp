// include/rlx/quant_packed.hpp -- packed quantized weights on Tensors (rlx::quant): pack a weight
// into one of QuantScheme's formats, unpack it, and multiply by it without unpacking
// (dequant_matmul, the IR's Packed family). A weight W [n, k] (n outputs, k inputs: a linear
// layer's weight as GGUF and PyTorch store it) is packed row by row along k; the block layouts
// are GGUF's (ggml's) for Q4_0 .. Q8_K and rlx's own for the Int*, FP8 and NVFP4 formats
// (docs/quantization.md). x [m, k] times W gives [m, n] = x . W^T, like torch.nn.functional.linear.
#pragma once

#include "rlx/ir/quant_scheme.hpp"
#include "rlx/tensor.hpp"

#include <cstdint>

namespace rlx::quant {

using ir::QuantFormat;
using ir::QuantScheme;

/// Bytes of one packed row of k values; an rlx::Error when k is not a multiple of the scheme's
/// block (32 for Q4_0 .. Q8_0, 256 for the K-quants, 16 for NVFP4, block_size for Int*).
int64_t row_bytes(QuantScheme scheme, int64_t k, Loc loc = Loc::current());

/// Pack w [n, k] (f32; computed now) into u8 [n, row_bytes(k)]. The quantizers choose scales by
/// round to nearest (not llama.cpp's searches), so the bytes are valid GGUF blocks but not the
/// ones llama-quantize would write.
Tensor pack(const Tensor& w, QuantScheme scheme, Loc loc = Loc::current());
/// The f32 values [n, k] of packed u8 [n, row_bytes(k)] (computed now).
Tensor unpack(const Tensor& packed, QuantScheme scheme, int64_t k, Loc loc = Loc::current());

/// x [m, k] (f32) times W^T where W [n, k] is packed ([n, row_bytes(k)] u8): [m, n] f32, W
/// dequantized block by block inside the kernel.
Tensor dequant_matmul(const Tensor& x, const Tensor& packed, QuantScheme scheme,
                      Loc loc = Loc::current());
/// The split form (RLX's dequant_matmul with 4 inputs): Int8Block (w_q i8 [n, k], scale f32
/// [n, k/bs], zp unused), Int8BlockAsym (u8 [n, k], w = (q - zp) * scale), Int4Block (u8 [n, k/2]
/// nibbles, low first), Fp8E4m3/E5m2 (u8 codes [n, k], scale [n] or [1], zp unused).
Tensor dequant_matmul(const Tensor& x, const Tensor& w_q, const Tensor& scale, const Tensor& zp,
                      QuantScheme scheme, Loc loc = Loc::current());
/// NVFP4: codes u8 [n, k/2] (E2M1, low nibble first), block_scales u8 [n, k/16] (E4M3),
/// global_scale f32 [1]; w = e2m1 * e4m3 * global.
Tensor dequant_matmul_nvfp4(const Tensor& x, const Tensor& codes, const Tensor& block_scales,
                            const Tensor& global_scale, Loc loc = Loc::current());

} // namespace rlx::quant
