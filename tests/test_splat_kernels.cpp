// tests/test_splat_kernels.cpp -- the Gaussian splatting kernels (src/splat/render.cpp) alone,
// on plain buffers, against tests/fixtures/splat/ (make_splat.py's numpy renderer and its
// central differences). It links only the kernels and rlx::Error, so the kernels are checked
// before (and without) the op table, the builders and the backends.
#include "splat/render.hpp"

#include "rlx/error.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;
namespace sd = rlx::splat::detail;

/// A little-endian .npy of f4 or f8 (what make_splat.py writes), as doubles, and its shape.
struct Npy {
  std::vector<int64_t> shape;
  std::vector<double> v;
};

Npy read_npy(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  REQUIRE_MESSAGE(f.good(), p.string());
  char magic[8];
  f.read(magic, 8);
  uint16_t hlen = 0;
  f.read(reinterpret_cast<char*>(&hlen), 2);
  std::string header(hlen, '\0');
  f.read(header.data(), hlen);
  const bool f8 = header.find("<f8") != std::string::npos;
  REQUIRE((f8 || header.find("<f4") != std::string::npos));
  Npy out;
  const auto open = header.find('(', header.find("shape")), close = header.find(')', open);
  std::string dims = header.substr(open + 1, close - open - 1);
  int64_t count = 1;
  for (std::size_t i = 0; i < dims.size();) {
    std::size_t j = dims.find(',', i);
    if (j == std::string::npos) j = dims.size();
    std::string d = dims.substr(i, j - i);
    if (d.find_first_of("0123456789") != std::string::npos) {
      out.shape.push_back(std::stoll(d));
      count *= out.shape.back();
    }
    i = j + 1;
  }
  out.v.resize(std::size_t(count));
  for (auto& x : out.v) {
    if (f8) {
      f.read(reinterpret_cast<char*>(&x), 8);
    } else {
      float y;
      f.read(reinterpret_cast<char*>(&y), 4);
      x = y;
    }
  }
  return out;
}

std::vector<float> as_f32(const Npy& a) { return {a.v.begin(), a.v.end()}; }

const char* const kInputs[] = {"means",          "log_scales", "rotations",
                               "opacity_logits", "colors_dc",  "sh_rest"};

struct Case {
  std::map<std::string, std::vector<float>> in;
  std::map<std::string, Npy> raw;
  sd::Params p;
  sd::SceneView view() const {
    sd::SceneView s{in.at("means").data(),     in.at("log_scales").data(),
                    in.at("rotations").data(), in.at("opacity_logits").data(),
                    in.at("colors_dc").data(), in.at("sh_rest").data(),
                    in.at("meta").data()};
    s.n = raw.at("means").shape[0];
    s.sh_rows = raw.at("sh_rest").shape[1];
    return s;
  }
};

Case load(const std::string& name) {
  fs::path dir = fs::path(RLX_SOURCE_DIR) / "tests" / "fixtures" / "splat" / name;
  Case c;
  for (const auto& e : fs::directory_iterator(dir)) {
    std::string stem = e.path().stem().string();
    c.raw[stem] = read_npy(e.path());
    c.in[stem] = as_f32(c.raw[stem]);
  }
  const auto& a = c.raw.at("attrs").v;
  c.p.width = int64_t(a[0]);
  c.p.height = int64_t(a[1]);
  c.p.tile_size = int64_t(a[2]);
  c.p.radius_scale = a[3];
  c.p.alpha_cutoff = a[4];
  c.p.max_splat_steps = int64_t(a[5]);
  c.p.transmittance_threshold = a[6];
  return c;
}

std::vector<std::string> cases() {
  std::vector<std::string> out;
  for (const auto& e :
       fs::directory_iterator(fs::path(RLX_SOURCE_DIR) / "tests" / "fixtures" / "splat"))
    if (e.is_directory()) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

/// max |got - want| / max(1, max |want|).
double rel_err(const std::vector<float>& got, const std::vector<double>& want) {
  REQUIRE(got.size() == want.size());
  double scale = 1.0, err = 0.0;
  for (double w : want) scale = std::max(scale, std::abs(w));
  for (std::size_t i = 0; i < got.size(); ++i) err = std::max(err, std::abs(got[i] - want[i]));
  return err / scale;
}

} // namespace

TEST_CASE("the render kernel reproduces every fixture image of the numpy reference") {
  const auto names = cases();
  REQUIRE(names.size() >= 13);
  for (const std::string& name : names) {
    INFO(name);
    Case c = load(name);
    std::vector<float> rgba(std::size_t(c.p.width * c.p.height * 4));
    sd::render(c.view(), c.p, rgba.data(), "gaussian_splat_render", sd::serial_for);
    CHECK(rel_err(rgba, c.raw.at("want_rgba").v) < 2e-6);
  }
}

TEST_CASE("prepare then rasterize gives the fused render's bits") {
  for (const std::string& name : cases()) {
    INFO(name);
    Case c = load(name);
    const sd::SceneView s = c.view();
    std::vector<float> fused(std::size_t(c.p.width * c.p.height * 4)), staged(fused.size());
    sd::render(s, c.p, fused.data(), "gaussian_splat_render", sd::serial_for);
    std::vector<float> prep(std::size_t(sd::prepare_size(s.n, c.p)));
    sd::prepare(s, c.p, prep.data(), "gaussian_splat_prepare", sd::serial_for);
    sd::rasterize(prep.data(), s.meta, c.p, staged.data(), sd::serial_for);
    CHECK(std::memcmp(fused.data(), staged.data(), fused.size() * sizeof(float)) == 0);
  }
}

TEST_CASE("the backward kernel matches the fixtures' central differences") {
  for (const std::string name : {"grad_one", "grad_three", "grad_look_at", "grad_clamped"}) {
    INFO(name);
    Case c = load(name);
    const sd::SceneView s = c.view();
    std::vector<float> grads(std::size_t(sd::gradient_size(s.n, s.sh_rows)));
    sd::BackwardParams bp;
    bp.render = c.p;
    sd::render_backward(s, c.in.at("d_rgba").data(), bp, grads.data(),
                        "gaussian_splat_render_backward", sd::serial_for);
    std::size_t off = 0;
    for (const char* input : kInputs) {
      INFO(input);
      const Npy& want = c.raw.at(std::string("want_d_") + input);
      std::vector<float> got(grads.begin() + long(off), grads.begin() + long(off + want.v.size()));
      off += want.v.size();
      CHECK(rel_err(got, want.v) < 2e-5);
      CHECK(std::any_of(got.begin(), got.end(), [](float g) { return g != 0.0f; }));
    }
    CHECK(off == grads.size());
  }
}

TEST_CASE("a scene whose tile lists exceed max_list_entries is an rlx::Error naming the count") {
  Case c = load("fifty");
  c.p.max_list_entries = 3;
  std::vector<float> rgba(std::size_t(c.p.width * c.p.height * 4));
  try {
    sd::render(c.view(), c.p, rgba.data(), "gaussian_splat_render", sd::serial_for);
    FAIL("no error");
  } catch (const rlx::Error& e) {
    CHECK(e.kind() == rlx::ErrorKind::Limit);
    CHECK(std::string(e.what()).find("gaussian_splat_render: the tile lists need") == 0);
  }
}
