// include/rlx/display.hpp -- show a tensor in the program that hosts rlx code (a notebook kernel
// shows an image-like tensor as a picture), and a tensor's 8-bit pixels for such a host.
#pragma once

#include "rlx/tensor.hpp"

#include <cstdint>
#include <functional>
#include <vector>

namespace rlx {

/// Show `t` through the handler the host installed (rlx-kernel: an image-like tensor as a PNG
/// image with its text, any other tensor as its text); without one, print t.str() and a
/// newline on stdout. Materializes `t`.
void display(const Tensor& t, Loc loc = Loc::current());

/// What display() calls. A host installs one with set_display_handler; `{}` removes it.
using DisplayHandler = std::function<void(const Tensor&, Loc)>;
/// Install `handler` for display() and return the one it replaces.
DisplayHandler set_display_handler(DisplayHandler handler);

/// Whether `t` reads as an image: [H, W] (gray) or [H, W, C] with C = 1 (gray), 3 (RGB) or 4
/// (RGBA), H and W at least 1, of a real dtype (bool, integers, floats; not complex).
bool is_image_like(const Tensor& t);

/// An image's 8-bit pixels, row-major, `channels` bytes per pixel.
struct Image {
  int64_t height = 0;
  int64_t width = 0;
  int64_t channels = 0;
  std::vector<uint8_t> pixels;
};

/// The pixels of an image-like tensor: floats in [0, 1] scale to 0..255 (rounded; outside
/// clamped, NaN as 0), integers are clamped to 0..255, bool is 0 or 255. An rlx::Error naming
/// the shape and dtype when `t` is not image-like.
Image to_image(const Tensor& t, Loc loc = Loc::current());

} // namespace rlx
