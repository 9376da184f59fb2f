// include/rlx/splat.hpp -- differentiable 3-D Gaussian splatting on Tensors (rlx::splat): a
// Scene of Gaussians rendered by a pinhole Camera to an RGBA image [H, W, 4] with the
// gaussian_splat_render op (the contract, with every equation, is docs/splatting.md). Scene is a
// pytree (RLX_PYTREE), so rlx::grad and rlx::optim work on it whole; the gradient is the op's
// analytic backward (gaussian_splat_render_backward).
#pragma once

#include "rlx/pytree.hpp"
#include "rlx/tensor.hpp"

#include <array>
#include <cstdint>

namespace rlx::splat {

/// N Gaussians, all f32: means [N,3], log_scales [N,3] (log standard deviations along the
/// Gaussian's axes), rotations [N,4] (quaternions w,x,y,z; normalised by the op), opacity_logits
/// [N] (opacity = sigmoid), colors_dc [N,3] (SH band 0; a plain colour c is (c - 0.5) / Y_0,
/// Y_0 = 1 / (2 sqrt(pi))) and sh_rest [N,K-1,3] (bands 1..degree, K-1 = 0, 3, 8 or 15).
struct Scene {
  Tensor means, log_scales, rotations, opacity_logits, colors_dc, sh_rest;
};
RLX_PYTREE(Scene, means, log_scales, rotations, opacity_logits, colors_dc, sh_rest)

/// A pinhole camera at `position` looking at `target` (x right, y down in the image), and the
/// image it makes.
struct Camera {
  std::array<float, 3> position{0.0f, 0.0f, 0.0f};
  std::array<float, 3> target{0.0f, 0.0f, 1.0f};
  std::array<float, 3> up{0.0f, 1.0f, 0.0f};
  float fov_y_degrees = 50.0f;
  float near = 0.1f, far = 100.0f;
  std::array<float, 3> background{0.0f, 0.0f, 0.0f};
  int64_t width = 0, height = 0;
};

/// The renderer's settings (GaussianSplatRenderParams without the image size).
struct Params {
  int64_t tile_size = 16;
  double radius_scale = 3.0;
  double alpha_cutoff = 1.0 / 255.0;
  int64_t max_splat_steps = 0;
  double transmittance_threshold = 1e-4;
  int64_t max_list_entries = 0;
};

/// The camera's 23-float meta vector (gaussian_splat_render_meta).
Tensor meta(const Camera& camera, Loc loc = Loc::current());
/// The RGBA image [height, width, 4] of the scene. Wrong shapes or dtypes are an rlx::Error
/// naming gaussian_splat_render and the caller's line.
Tensor render(const Scene& scene, const Camera& camera, const Params& params = {},
              Loc loc = Loc::current());

} // namespace rlx::splat
