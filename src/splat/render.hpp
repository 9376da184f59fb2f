// src/splat/render.hpp -- the 3-D Gaussian splatting kernels on plain buffers (the contract is
// docs/splatting.md): prepare (projection, culling, tile binning, depth sort), rasterize (front-
// to-back compositing per pixel), render (both) and render_backward (the analytic gradient). The
// interpreter runs them with a serial loop, the JIT with tiles and Gaussians spread over its
// thread pool; both compute in double from the same f32 records, so they agree bit for bit.
//
// The prepare buffer (f32, prepare_size floats): a header [N, tiles_x, tiles_y, capacity, used],
// then N records of kRecord floats [mean_x, mean_y, depth, conic_a, conic_b, conic_c, opacity,
// r, g, b, radius, tile_x0, tile_y0, tile_x1, tile_y1, visible], then per tile [start, end) into
// the list, then `capacity` list entries (Gaussian indices, each tile's nearest first). Indices
// and counts are exact in f32 because N and the capacity are at most 2^24.
#pragma once

#include <cstdint>
#include <functional>

namespace rlx::splat::detail {

/// GaussianSplatAttrs (include/rlx/ir/attrs.def) as plain values.
struct Params {
  int64_t width = 0, height = 0, tile_size = 16;
  double radius_scale = 3.0, alpha_cutoff = 1.0 / 255.0;
  int64_t max_splat_steps = 0;
  double transmittance_threshold = 1e-4;
  int64_t max_list_entries = 0;
};
/// GaussianSplatBackwardAttrs.
struct BackwardParams {
  Params render;
  double loss_grad_clip = 0.0;
  int64_t sh_band = -1;
  double max_anisotropy = 0.0;
};

/// The seven operands (contiguous f32) of a scene of n Gaussians with sh_rows rows of sh_rest.
struct SceneView {
  const float *means, *log_scales, *rotations, *opacity_logits, *colors_dc, *sh_rest, *meta;
  int64_t n = 0, sh_rows = 0;
};

/// body(begin, end) over [0, n) in chunks, serially or on a thread pool.
using Body = std::function<void(int64_t, int64_t)>;
using ForRange = std::function<void(int64_t n, const Body& body)>;
void serial_for(int64_t n, const Body& body);

inline constexpr int64_t kHeader = 5;
inline constexpr int64_t kRecord = 16;
/// The largest N and list capacity (indices are stored as f32).
inline constexpr int64_t kMaxIndex = int64_t(1) << 24;

int64_t tiles_x(const Params& p);
int64_t tiles_y(const Params& p);
/// max_list_entries, or for 0 min(N * tiles, kMaxIndex).
int64_t list_capacity(int64_t n, const Params& p);
int64_t prepare_size(int64_t n, const Params& p);
/// Floats of the packed gradient: N (3 + 3 + 4 + 1 + 3) + 3 N sh_rows.
int64_t gradient_size(int64_t n, int64_t sh_rows);

/// The 23-float meta vector (docs/splatting.md) from the camera and the image size.
void make_meta(const float position[3], const float target[3], const float up[3], double fov_y,
               double near, double far, const float background[3], int64_t width, int64_t height,
               float out[23]);

/// Writes prepare_size(n, p) floats to prep. A scene whose tile lists need more than the
/// capacity is an rlx::Error (ErrorKind::Limit) naming `op` and the count needed.
void prepare(const SceneView& s, const Params& p, float* prep, const char* op,
             const ForRange& for_range);
/// An rlx::Error (ErrorKind::Value) naming `op` unless prep (size floats) is a prepare buffer
/// for these parameters: its header, tile ranges and indices consistent, so rasterize reads
/// nothing out of bounds.
void check_prepared(const float* prep, int64_t size, const Params& p, const char* op);
/// The [H, W, 4] image from a prepare buffer and the meta vector.
void rasterize(const float* prep, const float* meta, const Params& p, float* rgba,
               const ForRange& for_range);
/// prepare into a scratch buffer, then rasterize.
void render(const SceneView& s, const Params& p, float* rgba, const char* op,
            const ForRange& for_range);
/// The gradient of sum(d_rgba * render(s)) w.r.t. the six scene inputs, packed (gradient_size).
void render_backward(const SceneView& s, const float* d_rgba, const BackwardParams& p, float* grads,
                     const char* op, const ForRange& for_range);

} // namespace rlx::splat::detail
