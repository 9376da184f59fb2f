// src/frontend/display.cpp -- rlx::display through the host's handler, and tensors as 8-bit images.
#include "rlx/display.hpp"

#include "rlx/error.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <mutex>

namespace rlx {

namespace {

std::mutex g_handler_mutex;
DisplayHandler g_handler;

uint8_t float_pixel(double v) {
  if (!(v > 0)) return 0; // NaN too
  if (v >= 1) return 255;
  return uint8_t(std::lround(v * 255));
}

} // namespace

DisplayHandler set_display_handler(DisplayHandler handler) {
  std::lock_guard lock(g_handler_mutex);
  std::swap(g_handler, handler);
  return handler;
}

void display(const Tensor& t, Loc loc) {
  DisplayHandler handler;
  {
    std::lock_guard lock(g_handler_mutex);
    handler = g_handler;
  }
  if (handler) {
    handler(t, loc);
    return;
  }
  std::string text = t.str(loc) + "\n";
  std::fflush(stdout);
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fflush(stdout);
}

bool is_image_like(const Tensor& t) {
  if (!t.defined() || t.is_traced() || ir::is_complex(t.dtype())) return false;
  if (t.ndim() != 2 && t.ndim() != 3) return false;
  Dims s = t.sizes();
  if (s[0] < 1 || s[1] < 1) return false;
  return s.size() == 2 || s[2] == 1 || s[2] == 3 || s[2] == 4;
}

Image to_image(const Tensor& t, Loc loc) {
  if (!is_image_like(t)) {
    std::string what = "an undefined tensor";
    if (t.defined() && t.is_traced()) {
      what = "a traced tensor";
    } else if (t.defined()) {
      what = std::string(ir::dtype_name(t.dtype())) + "[";
      for (std::size_t i = 0; i < t.sizes().size(); ++i)
        what += (i ? "," : "") + std::to_string(t.sizes()[i]);
      what += "]";
    }
    fail(ErrorKind::Shape, "to_image: ", what,
         " is not an image: an image is [H, W] or [H, W, C] with C = 1, 3 or 4 of a real dtype",
         detail::at_loc(loc));
  }
  Dims s = t.sizes();
  Image img;
  img.height = s[0];
  img.width = s[1];
  img.channels = s.size() == 3 ? s[2] : 1;
  img.pixels.resize(std::size_t(img.height * img.width * img.channels));
  // Doubles hold every integer pixel value exactly, and a u64 too large for i64 clamps to 255.
  std::vector<double> v = t.to_vector<double>(loc);
  bool is_float = ir::is_float(t.dtype()), is_bool = ir::is_bool(t.dtype());
  std::transform(v.begin(), v.end(), img.pixels.begin(), [&](double x) {
    if (is_float) return float_pixel(x);
    if (is_bool) return uint8_t(x != 0 ? 255 : 0);
    return uint8_t(std::clamp(x, 0.0, 255.0));
  });
  return img;
}

} // namespace rlx
