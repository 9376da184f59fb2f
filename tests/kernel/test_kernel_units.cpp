// tests/kernel/test_kernel_units.cpp -- rlx-kernel's parts without Jupyter: tensors as images
// (rlx::to_image, rlx::display's handler), PNG encoding and base64.
#include "png.hpp"

#include <rlx/display.hpp>
#include <rlx/error.hpp>

#include <doctest/doctest.h>

#include <cstdio>
#include <string>

using rlx::Tensor;

namespace {

uint32_t big_endian(const std::string& s, std::size_t at) {
  return uint32_t(uint8_t(s[at])) << 24 | uint32_t(uint8_t(s[at + 1])) << 16 |
         uint32_t(uint8_t(s[at + 2])) << 8 | uint32_t(uint8_t(s[at + 3]));
}

} // namespace

TEST_CASE("2-D tensors and 3-D tensors with 1, 3 or 4 channels are image-like; others are not") {
  CHECK(rlx::is_image_like(rlx::ones({4, 5})));
  CHECK(rlx::is_image_like(rlx::ones({4, 5, 1})));
  CHECK(rlx::is_image_like(rlx::ones({4, 5, 3})));
  CHECK(rlx::is_image_like(rlx::ones({4, 5, 4}, rlx::DType::U8)));
  CHECK_FALSE(rlx::is_image_like(rlx::ones({5})));
  CHECK_FALSE(rlx::is_image_like(rlx::ones({4, 5, 2})));
  CHECK_FALSE(rlx::is_image_like(rlx::ones({2, 4, 5, 3})));
  CHECK_FALSE(rlx::is_image_like(rlx::ones({0, 5})));
  CHECK_FALSE(rlx::is_image_like(rlx::ones({4, 5}, rlx::DType::C64)));
  CHECK_FALSE(rlx::is_image_like(Tensor()));
}

TEST_CASE(
    "floats in [0, 1] scale to 0..255, clamped, with NaN as 0; integers clamp; bool is 0 or 255") {
  float nan = std::numeric_limits<float>::quiet_NaN();
  rlx::Image f = rlx::to_image(
      Tensor::from_vector(std::vector<float>{0.f, 0.5f, 1.f, -3.f, 7.f, nan}, {2, 3}));
  CHECK(f.height == 2);
  CHECK(f.width == 3);
  CHECK(f.channels == 1);
  CHECK(f.pixels == std::vector<uint8_t>{0, 128, 255, 0, 255, 0});
  rlx::Image i = rlx::to_image(
      Tensor::from_vector(std::vector<int32_t>{-5, 0, 17, 255, 256, 1000}, {1, 2, 3}));
  CHECK(i.channels == 3);
  CHECK(i.pixels == std::vector<uint8_t>{0, 0, 17, 255, 255, 255});
  rlx::Image b = rlx::to_image(Tensor::from_vector(std::vector<bool>{true, false}, {1, 2}));
  CHECK(b.pixels == std::vector<uint8_t>{255, 0});
}

TEST_CASE("to_image of a tensor that is not an image names its dtype and shape") {
  CHECK_THROWS_WITH_AS(rlx::to_image(rlx::ones({2, 3, 5})),
                       doctest::Contains("to_image: f32[2,3,5] is not an image"), rlx::Error);
}

TEST_CASE("display calls the installed handler, and prints the tensor without one") {
  int calls = 0;
  std::string seen;
  rlx::DisplayHandler old = rlx::set_display_handler([&](const Tensor& t, rlx::Loc) {
    ++calls;
    seen = t.str();
  });
  rlx::display(rlx::ones({2}));
  CHECK(calls == 1);
  CHECK(seen == "tensor([1., 1.], f32[2])");
  rlx::DisplayHandler mine = rlx::set_display_handler(std::move(old));
  CHECK(static_cast<bool>(mine));
  std::FILE* saved = stdout;
  std::FILE* tmp = std::tmpfile();
  REQUIRE(tmp != nullptr);
  stdout = tmp;
  rlx::display(rlx::ones({2}));
  stdout = saved;
  std::rewind(tmp);
  char buf[64] = {};
  std::size_t n = std::fread(buf, 1, sizeof buf - 1, tmp);
  std::fclose(tmp);
  CHECK(std::string(buf, n) == "tensor([1., 1.], f32[2])\n");
  CHECK(calls == 1);
}

TEST_CASE("encode_png writes a PNG whose header has the image's size and color type") {
  rlx::Image rgb{3, 5, 3, std::vector<uint8_t>(3 * 5 * 3, 200)};
  std::string png = rlx::kernel::encode_png(rgb);
  REQUIRE(png.size() > 33);
  CHECK(png.substr(0, 8) == std::string("\x89PNG\r\n\x1a\n", 8));
  CHECK(png.substr(12, 4) == "IHDR");
  CHECK(big_endian(png, 16) == 5);
  CHECK(big_endian(png, 20) == 3);
  CHECK(int(uint8_t(png[24])) == 8); // bits per sample
  CHECK(int(uint8_t(png[25])) == 2); // RGB
  rlx::Image gray{2, 2, 1, {0, 64, 128, 255}};
  CHECK(int(uint8_t(rlx::kernel::encode_png(gray)[25])) == 0);
  rlx::Image rgba{1, 1, 4, {1, 2, 3, 4}};
  CHECK(int(uint8_t(rlx::kernel::encode_png(rgba)[25])) == 6);
}

TEST_CASE("base64 follows RFC 4648's test vectors") {
  using rlx::kernel::base64;
  CHECK(base64("") == "");
  CHECK(base64("f") == "Zg==");
  CHECK(base64("fo") == "Zm8=");
  CHECK(base64("foo") == "Zm9v");
  CHECK(base64("foob") == "Zm9vYg==");
  CHECK(base64("fooba") == "Zm9vYmE=");
  CHECK(base64("foobar") == "Zm9vYmFy");
  CHECK(base64(std::string("\xff\xfe\x00", 3)) == "//4A");
}
