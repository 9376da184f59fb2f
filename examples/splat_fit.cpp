// examples/splat_fit.cpp -- fits 200 3-D Gaussians to a picture by gradient descent through the
// differentiable splatting renderer (rlx::splat::render; docs/splatting.md). The target is drawn
// procedurally (two discs and a colour ramp on a dark background); the Gaussians start as a
// random grey cloud in front of the camera. One Adam step (the loss's gradient with respect to
// the whole Scene, a pytree, and the rlx::optim update) is traced and compiled once by rlx::jit.
// Writes the start and the end as PNGs (PPMs when built without libpng) into the folder given
// as argv[1] (default: the current one) and exits non-zero unless the loss falls at least 10x.
#include <rlx/rlx.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <tuple>
#include <vector>

#ifdef RLX_HAVE_PNG
#include <png.h>
#endif

using rlx::Tensor;

namespace {

constexpr int64_t kSize = 64, kGaussians = 200;

/// The target RGB [kSize, kSize, 3]: a red disc, a green disc and a blue-to-yellow ramp.
Tensor target_image() {
  std::vector<float> px(std::size_t(kSize * kSize * 3));
  for (int64_t i = 0; i < kSize; ++i)
    for (int64_t j = 0; j < kSize; ++j) {
      float* p = px.data() + (i * kSize + j) * 3;
      const double x = (double(j) + 0.5) / kSize, y = (double(i) + 0.5) / kSize;
      p[0] = 0.08f, p[1] = 0.08f, p[2] = 0.15f;
      if (y > 0.72 && x > 0.1 && x < 0.9) { // the ramp along the bottom
        const double t = (x - 0.1) / 0.8;
        p[0] = float(0.9 * t), p[1] = float(0.8 * t), p[2] = float(0.9 * (1 - t));
      }
      if (std::hypot(x - 0.32, y - 0.35) < 0.2) p[0] = 0.9f, p[1] = 0.15f, p[2] = 0.1f;
      if (std::hypot(x - 0.7, y - 0.4) < 0.16) p[0] = 0.1f, p[1] = 0.8f, p[2] = 0.25f;
    }
  return Tensor::from_vector(px, {kSize, kSize, 3});
}

/// RGB [H, W, 3] floats in [0, 1] to 8-bit pixels.
std::vector<unsigned char> to_bytes(const Tensor& rgb) {
  std::vector<float> v = rgb.to_vector<float>();
  std::vector<unsigned char> out(v.size());
  for (std::size_t i = 0; i < v.size(); ++i)
    out[i] = static_cast<unsigned char>(std::lround(255.0 * std::clamp(double(v[i]), 0.0, 1.0)));
  return out;
}

/// Writes the image as name.png (name.ppm without libpng); returns the path written.
std::string write_image(const std::string& dir, const std::string& name, const Tensor& rgb) {
  const std::vector<unsigned char> px = to_bytes(rgb);
#ifdef RLX_HAVE_PNG
  const std::string path = dir + "/" + name + ".png";
  png_image img{};
  img.version = PNG_IMAGE_VERSION;
  img.width = uint32_t(kSize);
  img.height = uint32_t(kSize);
  img.format = PNG_FORMAT_RGB;
  if (!png_image_write_to_file(&img, path.c_str(), 0, px.data(), 0, nullptr))
    std::fprintf(stderr, "could not write %s: %s\n", path.c_str(), img.message);
#else
  const std::string path = dir + "/" + name + ".ppm";
  if (FILE* f = std::fopen(path.c_str(), "wb")) {
    std::fprintf(f, "P6\n%lld %lld\n255\n", static_cast<long long>(kSize),
                 static_cast<long long>(kSize));
    std::fwrite(px.data(), 1, px.size(), f);
    std::fclose(f);
  }
#endif
  return path;
}

} // namespace

int main(int argc, char** argv) {
  const std::string out_dir = argc > 1 ? argv[1] : ".";
  rlx::splat::Camera cam;
  cam.position = {0.0f, 0.0f, 0.0f};
  cam.target = {0.0f, 0.0f, 1.0f};
  cam.fov_y_degrees = 50.0f;
  cam.width = kSize;
  cam.height = kSize;
  const Tensor target = target_image();

  // A random cloud on the plane z ~ 3, which the view covers for |x|, |y| < 1.4.
  const int64_t n = kGaussians;
  Tensor xy = (rlx::rand({n, 2}, 1) * 2.0f - 1.0f) * 1.3f;
  Tensor z = rlx::rand({n, 1}, 2) * 0.2f + 3.0f;
  rlx::splat::Scene scene{rlx::concat({xy, z}, 1),      rlx::full({n, 3}, -2.6f),
                          rlx::randn({n, 4}, 3),        rlx::full({n}, -1.0f),
                          rlx::randn({n, 3}, 4) * 0.1f, rlx::zeros({n, 0, 3})};
  auto rgb_of = [&](const rlx::splat::Scene& s) {
    return rlx::splat::render(s, cam).slice(2, 0, 3);
  };
  auto loss_of = [&](const rlx::splat::Scene& s) {
    Tensor d = rgb_of(s) - target;
    return rlx::mean(d * d);
  };

  auto opt = rlx::optim::adam(0.02);
  rlx::optim::State state = opt.init(scene);
  auto step = rlx::jit([&](const rlx::splat::Scene& s, const rlx::optim::State& st) {
    auto [l, g] = rlx::value_and_grad(loss_of)(s);
    auto [s2, st2] = opt.update(g, st, s);
    return std::tuple{l, s2, st2};
  });

  const std::string start = write_image(out_dir, "splat_fit_start", rgb_of(scene));
  const int steps = 300;
  float first = loss_of(scene).item<float>(), last = first;
  for (int i = 1; i <= steps; ++i) {
    Tensor l;
    std::tie(l, scene, state) = step(scene, state);
    if (i % 50 == 0) {
      last = l.item<float>();
      std::printf("step %3d  loss %.6f\n", i, double(last));
    }
  }
  last = loss_of(scene).item<float>();
  const std::string end = write_image(out_dir, "splat_fit_end", rgb_of(scene));
  std::printf("loss fell %.1fx in %d Adam steps on %lld Gaussians (%s -> %s, traces: %lld)\n",
              double(first / last), steps, static_cast<long long>(n), start.c_str(), end.c_str(),
              static_cast<long long>(step.stats().traces));
  return first / last >= 10.0f ? 0 : 1;
}
