// tests/test_splat.cpp -- the gaussian_splat_* ops and rlx::splat against tests/fixtures/splat/
// (make_splat.py: a numpy renderer written from docs/splatting.md, and central differences in
// f64), on both backends: every fixture image, the decomposed path against the fused one (bit
// for bit), the JIT against the interpreter, gradients through rlx::grad on a Scene pytree and
// through the backward op, and the errors users meet.
#include "support/backends.hpp"
#include "support/check_error.hpp"

#include <rlx/apply.hpp>
#include <rlx/ir/graph.hpp>
#include <rlx/rlx.hpp>
#include <rlx/splat.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

namespace {

using rlx::ErrorKind;
using rlx::Tensor;
using rlx::test::check_error;
using rlx::test::on_both_backends;
namespace ir = rlx::ir;
namespace splat = rlx::splat;

const char* const kInputs[] = {"means",          "log_scales", "rotations",
                               "opacity_logits", "colors_dc",  "sh_rest"};

std::vector<std::string> cases() {
  std::vector<std::string> out;
  for (const auto& e :
       std::filesystem::directory_iterator(std::string(RLX_SOURCE_DIR) + "/tests/fixtures/splat"))
    if (e.is_directory()) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

struct Case {
  rlx::test::Fixture f;
  splat::Scene scene;
  Tensor meta;
  ir::GaussianSplatRenderParams params;
  explicit Case(const std::string& name) : f("splat", name) {
    scene = {f("means"),          f("log_scales"), f("rotations"),
             f("opacity_logits"), f("colors_dc"),  f("sh_rest")};
    meta = f("meta");
    const std::vector<double> a = f("attrs").to_vector<double>();
    params.width = int64_t(a[0]);
    params.height = int64_t(a[1]);
    params.tile_size = int64_t(a[2]);
    params.radius_scale = a[3];
    params.alpha_cutoff = a[4];
    params.max_splat_steps = int64_t(a[5]);
    params.transmittance_threshold = a[6];
  }
};

ir::GaussianSplatInputs inputs_of(std::span<const ir::NodeId> ids) {
  return {ids[0], ids[1], ids[2], ids[3], ids[4], ids[5], ids[6]};
}

enum class Path { Fused, Decomposed };

/// The image of a scene with an explicit meta vector, through one of the Graph builders.
Tensor render(const splat::Scene& s, const Tensor& meta, const ir::GaussianSplatRenderParams& p,
              Path path = Path::Fused) {
  return rlx::apply(
      {s.means, s.log_scales, s.rotations, s.opacity_logits, s.colors_dc, s.sh_rest, meta},
      [&](ir::Graph& g, std::span<const ir::NodeId> ids) {
        return path == Path::Fused ? g.gaussian_splat_render(inputs_of(ids), p)
                                   : g.gaussian_splat_render_decomposed(inputs_of(ids), p);
      });
}

/// max |got - want| / max(1, max |want|), with the shapes equal.
double rel_err(const Tensor& got, const Tensor& want) {
  REQUIRE(got.shape().sizes() == want.shape().sizes());
  const std::vector<float> g = got.to_vector<float>(), w = want.to_vector<float>();
  double scale = 1.0, err = 0.0;
  for (float v : w) scale = std::max(scale, double(std::abs(v)));
  for (std::size_t i = 0; i < g.size(); ++i) err = std::max(err, std::abs(double(g[i]) - w[i]));
  return err / scale;
}

bool same_bits(const Tensor& a, const Tensor& b) {
  const std::vector<float> x = a.to_vector<float>(), y = b.to_vector<float>();
  return x.size() == y.size() && std::memcmp(x.data(), y.data(), x.size() * sizeof(float)) == 0;
}

const std::vector<std::string> kGradCases = {"grad_one", "grad_three", "grad_look_at",
                                             "grad_clamped"};

} // namespace

TEST_CASE("gaussian_splat_render draws every fixture scene as the numpy reference does") {
  const std::vector<std::string> names = cases();
  REQUIRE(names.size() >= 13);
  on_both_backends([&] {
    for (const std::string& name : names) {
      INFO(name);
      Case c(name);
      CHECK(rel_err(render(c.scene, c.meta, c.params), c.f("want_rgba")) < 2e-6);
    }
  });
}

TEST_CASE("the decomposed render (prepare then rasterize) gives the fused render's bits") {
  on_both_backends([] {
    for (const std::string& name : cases()) {
      INFO(name);
      Case c(name);
      CHECK(same_bits(render(c.scene, c.meta, c.params, Path::Decomposed),
                      render(c.scene, c.meta, c.params)));
    }
  });
}

TEST_CASE("the JIT's render and backward (tiles on the thread pool) equal the interpreter's") {
  struct Restore {
    rlx::Backend saved = rlx::default_backend();
    ~Restore() { rlx::set_default_backend(saved); }
  } restore;
  for (const std::string name : {"fifty", "look_at", "grad_look_at"}) {
    INFO(name);
    Case c(name);
    Tensor d = rlx::randn({c.params.height, c.params.width, 4}, 7);
    auto both = [&] {
      auto loss = [&](const splat::Scene& s) { return rlx::sum(render(s, c.meta, c.params) * d); };
      splat::Scene g = rlx::grad(loss)(c.scene);
      return std::pair{render(c.scene, c.meta, c.params), g};
    };
    rlx::set_default_backend(rlx::Backend::Interp);
    auto [img_i, g_i] = both();
    rlx::set_default_backend(rlx::Backend::Jit);
    auto [img_j, g_j] = both();
    CHECK(same_bits(img_i, img_j));
    CHECK(same_bits(g_i.means, g_j.means));
    CHECK(same_bits(g_i.log_scales, g_j.log_scales));
    CHECK(same_bits(g_i.rotations, g_j.rotations));
    CHECK(same_bits(g_i.sh_rest, g_j.sh_rest));
  }
}

TEST_CASE("rlx::grad of a loss on the image matches the fixtures' central differences") {
  on_both_backends([] {
    for (const std::string& name : kGradCases) {
      INFO(name);
      Case c(name);
      Tensor d = c.f("d_rgba");
      auto loss = [&](const splat::Scene& s) { return rlx::sum(render(s, c.meta, c.params) * d); };
      splat::Scene g = rlx::grad(loss)(c.scene);
      const Tensor got[] = {g.means,          g.log_scales, g.rotations,
                            g.opacity_logits, g.colors_dc,  g.sh_rest};
      for (int i = 0; i < 6; ++i) {
        INFO(kInputs[i]);
        const Tensor want = c.f(std::string("want_d_") + kInputs[i]);
        CHECK(rel_err(got[i], want) < 2e-5);
        CHECK(rlx::sum(rlx::abs(got[i])).item<float>() > 0.0f);
      }
    }
  });
}

TEST_CASE("gaussian_splat_render_backward packs the six gradients end to end") {
  on_both_backends([] {
    Case c("grad_three");
    Tensor d = c.f("d_rgba");
    const splat::Scene& s = c.scene;
    Tensor packed = rlx::apply(
        {s.means, s.log_scales, s.rotations, s.opacity_logits, s.colors_dc, s.sh_rest, c.meta, d},
        [&](ir::Graph& g, std::span<const ir::NodeId> ids) {
          return g.gaussian_splat_render_backward(inputs_of(ids), ids[7], {c.params});
        });
    std::vector<Tensor> want;
    for (const char* input : kInputs) want.push_back(c.f(std::string("want_d_") + input).flatten());
    CHECK(rel_err(packed, rlx::concat(want)) < 2e-5);
  });
}

TEST_CASE("the backward's options clip d_rgba, drop SH bands and penalise anisotropy") {
  Case c("grad_look_at");
  const splat::Scene& s = c.scene;
  auto backward = [&](const Tensor& d, ir::GaussianSplatBackwardParams bp) {
    bp.render = c.params;
    return rlx::apply(
        {s.means, s.log_scales, s.rotations, s.opacity_logits, s.colors_dc, s.sh_rest, c.meta, d},
        [&](ir::Graph& g, std::span<const ir::NodeId> ids) {
          return g.gaussian_splat_render_backward(inputs_of(ids), ids[7], bp);
        });
  };
  Tensor d = c.f("d_rgba");
  const int64_t n = 3, rest = n * 15 * 3, off_rest = n * 14;
  // Clipping at 0.1 equals the gradient of the clipped cotangent (clipped in f32 here, in double
  // in the kernel: equal to f32 rounding).
  CHECK(rel_err(backward(d, {{}, 0.1}), backward(rlx::clip(d, -0.1, 0.1), {})) < 1e-6);
  CHECK(rel_err(backward(d, {{}, 0.1}), backward(d, {})) > 1e-3);
  // sh_band 1 keeps band 1's coefficients (rows 0..2) and zeroes bands 2 and 3.
  Tensor full = backward(d, {}), band1 = backward(d, {{}, 0.0, 1});
  Tensor rest_full = full.slice(0, off_rest, off_rest + rest).reshape({n, 15, 3});
  Tensor rest_band1 = band1.slice(0, off_rest, off_rest + rest).reshape({n, 15, 3});
  CHECK(same_bits(rest_band1.slice(1, 0, 3), rest_full.slice(1, 0, 3)));
  CHECK(rlx::sum(rlx::abs(rest_band1.slice(1, 3, 15))).item<float>() == 0.0f);
  CHECK(rlx::sum(rlx::abs(rest_full.slice(1, 3, 15))).item<float>() > 0.0f);
  // max_anisotropy r adds d/d log_scales of max(0, s_max / s_min - r) to a zero cotangent.
  Tensor zero = rlx::zeros({c.params.height, c.params.width, 4});
  const std::vector<float> ls = s.log_scales.to_vector<float>();
  const std::vector<float> g =
      backward(zero, {{}, 0.0, -1, 1.05}).slice(0, 3 * n, 6 * n).to_vector<float>();
  for (int64_t i = 0; i < n; ++i) {
    const float* l = ls.data() + 3 * i;
    const int64_t hi = std::max_element(l, l + 3) - l, lo = std::min_element(l, l + 3) - l;
    const double ratio = std::exp(double(l[hi]) - l[lo]);
    for (int64_t k = 0; k < 3; ++k) {
      const double want = ratio > 1.05 ? (k == hi ? ratio : k == lo ? -ratio : 0.0) : 0.0;
      CHECK(std::abs(g[std::size_t(3 * i + k)] - want) < 1e-5 * std::max(1.0, ratio));
    }
  }
}

TEST_CASE("rlx::splat::render builds the camera's meta vector as make_splat.py does") {
  on_both_backends([] {
    Case c("look_at");
    splat::Camera cam;
    cam.position = {2.0f, 1.0f, -3.0f};
    cam.target = {0.0f, 0.0f, 0.0f};
    cam.up = {0.2f, 1.0f, 0.1f};
    cam.fov_y_degrees = 45.0f;
    cam.near = 0.1f;
    cam.far = 50.0f;
    cam.background = {1.0f, 1.0f, 1.0f};
    cam.width = 20;
    cam.height = 12;
    CHECK(rel_err(splat::meta(cam), c.meta) < 1e-6);
    splat::Params p;
    p.tile_size = 8;
    CHECK(rel_err(splat::render(c.scene, cam, p), c.f("want_rgba")) < 2e-6);
  });
}

TEST_CASE("bad scenes are rlx::Errors naming the op, the shapes and the caller's line") {
  Case c("two_overlapping");
  auto with = [&](splat::Scene s, Tensor meta) {
    return [=] { rlx::eval(render(s, meta, c.params)); };
  };
  auto line_of = [](const std::string& msg) {
    CHECK(msg.find("test_splat.cpp") != std::string::npos);
  };
  splat::Scene s = c.scene;
  s.means = rlx::zeros({2, 2});
  line_of(check_error(with(s, c.meta), ErrorKind::Shape, "gaussian_splat_render: means must be 3"));
  s = c.scene;
  s.sh_rest = rlx::zeros({2, 5, 3});
  line_of(check_error(with(s, c.meta), ErrorKind::Shape, "sh_rest needs 0, 3, 8 or 15 rows"));
  s = c.scene;
  s.opacity_logits = rlx::zeros({3});
  line_of(check_error(with(s, c.meta), ErrorKind::Shape, "opacity_logits must be 2"));
  line_of(check_error(with(c.scene, rlx::zeros({22})), ErrorKind::Shape, "meta must be 23"));
  s = c.scene;
  s.colors_dc = rlx::zeros({2, 3}, rlx::DType::F64);
  line_of(check_error(with(s, c.meta), ErrorKind::Type, "every operand must be f32"));
}

TEST_CASE("run-time errors: full tile lists, a buffer prepare did not write, forward mode") {
  on_both_backends([] {
    Case c("fifty");
    ir::GaussianSplatRenderParams p = c.params;
    p.max_list_entries = 4;
    std::string msg = check_error([&] { rlx::eval(render(c.scene, c.meta, p)); }, ErrorKind::Limit,
                                  "gaussian_splat_render: the tile lists need ");
    CHECK(msg.find("test_splat.cpp") != std::string::npos);
    Tensor junk = rlx::zeros({100});
    check_error(
        [&] {
          rlx::eval(rlx::apply({junk, c.meta}, [&](ir::Graph& g, std::span<const ir::NodeId> ids) {
            return g.gaussian_splat_rasterize(ids[0], ids[1], c.params);
          }));
        },
        ErrorKind::Value, "gaussian_splat_rasterize: the first operand is not a");
  });
  Case c("one");
  check_error(
      [&] {
        auto f = [&](const Tensor& m) {
          splat::Scene s = c.scene;
          s.means = m;
          return render(s, c.meta, c.params);
        };
        rlx::jvp(f, std::tuple{c.scene.means}, std::tuple{rlx::ones_like(c.scene.means)});
      },
      ErrorKind::Unsupported, "gaussian_splat_render has no forward-mode");
  check_error(
      [&] {
        ir::Graph g;
        g.gaussian_splat_render_meta({0, 0, 0}, {0, 1, 0}, {0, 1, 0}, 50.0f, 0.1f, 10.0f, {0, 0, 0},
                                     {16, 16});
      },
      ErrorKind::Value, "gaussian_splat_render_meta: the camera needs");
}
