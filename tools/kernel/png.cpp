// tools/kernel/png.cpp -- PNG encoding with libpng's simplified write API, and base64.
#include "png.hpp"

#include <png.h>

#include <cstdlib>
#include <memory>
#include <stdexcept>

namespace rlx::kernel {

std::string encode_png(const Image& image) {
  png_image png{};
  png.version = PNG_IMAGE_VERSION;
  png.width = png_uint_32(image.width);
  png.height = png_uint_32(image.height);
  png.format = image.channels == 4   ? PNG_FORMAT_RGBA
               : image.channels == 3 ? PNG_FORMAT_RGB
                                     : PNG_FORMAT_GRAY;
  png_alloc_size_t size = 0;
  png_int_32 stride = png_int_32(image.width * image.channels);
  if (!png_image_write_to_memory(&png, nullptr, &size, 0, image.pixels.data(), stride, nullptr))
    throw std::runtime_error(std::string("libpng: ") + png.message);
  std::string out(size, '\0');
  if (!png_image_write_to_memory(&png, out.data(), &size, 0, image.pixels.data(), stride, nullptr))
    throw std::runtime_error(std::string("libpng: ") + png.message);
  out.resize(size);
  return out;
}

std::string base64(const std::string& bytes) {
  static constexpr char kDigits[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  std::size_t i = 0;
  for (; i + 2 < bytes.size(); i += 3) {
    unsigned v = unsigned(uint8_t(bytes[i])) << 16 | unsigned(uint8_t(bytes[i + 1])) << 8 |
                 unsigned(uint8_t(bytes[i + 2]));
    out += kDigits[v >> 18];
    out += kDigits[(v >> 12) & 63];
    out += kDigits[(v >> 6) & 63];
    out += kDigits[v & 63];
  }
  if (i < bytes.size()) {
    unsigned v = unsigned(uint8_t(bytes[i])) << 16;
    if (i + 1 < bytes.size()) v |= unsigned(uint8_t(bytes[i + 1])) << 8;
    out += kDigits[v >> 18];
    out += kDigits[(v >> 12) & 63];
    out += i + 1 < bytes.size() ? kDigits[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

} // namespace rlx::kernel
