// src/frontend/format.hpp -- torch-style text of a tensor's values (what printing a Tensor shows).
#pragma once

#include "rlx/interp.hpp"

#include <cstdint>
#include <string>

namespace rlx::detail {

/// The knobs of torch.set_printoptions (same names, same defaults).
struct PrintOptions {
  /// Digits after the decimal point of floats (fixed and scientific notation).
  int precision = 4;
  /// Tensors with more elements than this are summarized: each axis shows its first and last
  /// `edgeitems` entries with "..." between them.
  int64_t threshold = 1000;
  int64_t edgeitems = 3;
  /// Rows of the last axis wrap to stay within this many characters (as torch counts them).
  int linewidth = 80;
};

/// The text of a tensor whose values are in `b`, laid out like torch 1.13's print(tensor) with
/// the short shape instead of torch's dtype= suffix:
///
///     tensor([[1.5000, 2.0000],
///             [3.0000, 4.0000]], f32[2,2])
///
/// Floats print fixed with `precision` decimals, or in scientific notation for the whole tensor
/// when their magnitudes call for it; integer-valued floats print as "1.". Integers print plainly,
/// bools as True/False, c64 as 1.0000+2.0000j. Every element is right-aligned to a common width.
std::string format_buffer(const Buffer& b, const PrintOptions& opts = {});

} // namespace rlx::detail
