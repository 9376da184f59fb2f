// tools/kernel/png.hpp -- an rlx::Image as PNG bytes (libpng), and base64 for Jupyter's JSON.
#pragma once

#include <rlx/display.hpp>

#include <string>

namespace rlx::kernel {

/// The PNG file of `image`, 8 bits per sample: 1, 3 or 4 channels give gray, RGB or RGBA.
/// Throws std::runtime_error if libpng fails.
std::string encode_png(const Image& image);

/// RFC 4648 base64 of `bytes`, padded, on one line.
std::string base64(const std::string& bytes);

} // namespace rlx::kernel
