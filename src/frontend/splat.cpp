// src/frontend/splat.cpp -- rlx::splat (include/rlx/splat.hpp): the Tensor-level renderer, one
// gaussian_splat_render node over the scene's six tensors and the camera's meta constant.
#include "rlx/splat.hpp"
#include "rlx/apply.hpp"

#include "rlx/ir/graph.hpp"

namespace rlx::splat {

namespace {

ir::GaussianSplatRenderParams params_of(const Camera& c, const Params& p) {
  ir::GaussianSplatRenderParams r;
  r.width = c.width;
  r.height = c.height;
  r.tile_size = p.tile_size;
  r.radius_scale = p.radius_scale;
  r.alpha_cutoff = p.alpha_cutoff;
  r.max_splat_steps = p.max_splat_steps;
  r.transmittance_threshold = p.transmittance_threshold;
  r.max_list_entries = p.max_list_entries;
  return r;
}

} // namespace

Tensor meta(const Camera& c, Loc loc) {
  return apply(
      std::span<const Tensor>(),
      [&](ir::Graph& g, std::span<const ir::NodeId>) {
        return g.gaussian_splat_render_meta(c.position, c.target, c.up, c.fov_y_degrees, c.near,
                                            c.far, c.background, params_of(c, {}), loc);
      },
      loc);
}

Tensor render(const Scene& s, const Camera& camera, const Params& params, Loc loc) {
  Tensor m = meta(camera, loc);
  return apply(
      {s.means, s.log_scales, s.rotations, s.opacity_logits, s.colors_dc, s.sh_rest, m},
      [&](ir::Graph& g, std::span<const ir::NodeId> ids) {
        return g.gaussian_splat_render({ids[0], ids[1], ids[2], ids[3], ids[4], ids[5], ids[6]},
                                       params_of(camera, params), loc);
      },
      loc);
}

} // namespace rlx::splat
