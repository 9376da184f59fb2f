// src/builders/splat.cpp -- RLX's gaussian_splat_* builders on ops.def's Splat family (the
// contract is docs/splatting.md): render, its two stages, the decomposed pair, the backward and
// the meta vector as a constant.
#include "rlx/ir/graph.hpp"

#include "splat/render.hpp"

#include <cmath>

namespace rlx::ir {

namespace {

GaussianSplatAttrs attrs_of(const GaussianSplatRenderParams& p) {
  return {p.width,
          p.height,
          p.tile_size,
          p.radius_scale,
          p.alpha_cutoff,
          p.max_splat_steps,
          p.transmittance_threshold,
          p.max_list_entries};
}

std::vector<NodeId> operands(const GaussianSplatInputs& s) {
  return {s.means, s.log_scales, s.rotations, s.opacity_logits, s.colors_dc, s.sh_rest, s.meta};
}

} // namespace

NodeId Graph::gaussian_splat_render(GaussianSplatInputs inputs, GaussianSplatRenderParams params,
                                    Loc loc) {
  std::vector<NodeId> ins = operands(inputs);
  for (NodeId id : ins) check_id(id, "gaussian_splat_render");
  return build_inferred(Op(OpKind::GaussianSplatRender, attrs_of(params)), ins, loc);
}

NodeId Graph::gaussian_splat_render_meta(std::array<float, 3> camera_position,
                                         std::array<float, 3> camera_target,
                                         std::array<float, 3> camera_up, float fov_y_degrees,
                                         float near, float far, std::array<float, 3> background,
                                         GaussianSplatRenderParams params, Loc loc) {
  const float dir[3] = {camera_target[0] - camera_position[0],
                        camera_target[1] - camera_position[1],
                        camera_target[2] - camera_position[2]};
  const double cr[3] = {double(dir[1]) * camera_up[2] - double(dir[2]) * camera_up[1],
                        double(dir[2]) * camera_up[0] - double(dir[0]) * camera_up[2],
                        double(dir[0]) * camera_up[1] - double(dir[1]) * camera_up[0]};
  if (std::hypot(dir[0], dir[1], dir[2]) == 0.0 || std::hypot(cr[0], cr[1], cr[2]) == 0.0)
    fail(ErrorKind::Value,
         "gaussian_splat_render_meta: the camera needs a target apart from its position and an "
         "up vector not parallel to the view direction",
         rlx::detail::at_loc(loc));
  if (!(fov_y_degrees > 0 && fov_y_degrees < 180) || !(near > 0 && far > near))
    fail(ErrorKind::Value,
         "gaussian_splat_render_meta: needs 0 < fov_y_degrees < 180 and 0 < near < far, got ",
         fov_y_degrees, ", ", near, ", ", far, rlx::detail::at_loc(loc));
  if (params.width < 1 || params.height < 1)
    fail(ErrorKind::Value, "gaussian_splat_render_meta: width and height must be positive, got ",
         params.width, "x", params.height, rlx::detail::at_loc(loc));
  float meta[23];
  splat::detail::make_meta(camera_position.data(), camera_target.data(), camera_up.data(),
                           fov_y_degrees, near, far, background.data(), params.width, params.height,
                           meta);
  const std::vector<double> values(meta, meta + 23);
  return constant_values(DType::F32, {23}, values, loc);
}

NodeId Graph::gaussian_splat_prepare(GaussianSplatInputs inputs, GaussianSplatRenderParams params,
                                     Loc loc) {
  std::vector<NodeId> ins = operands(inputs);
  for (NodeId id : ins) check_id(id, "gaussian_splat_prepare");
  return build_inferred(Op(OpKind::GaussianSplatPrepare, attrs_of(params)), ins, loc);
}

NodeId Graph::gaussian_splat_rasterize(NodeId prep, NodeId meta, GaussianSplatRenderParams params,
                                       Loc loc) {
  check_id(prep, "gaussian_splat_rasterize");
  check_id(meta, "gaussian_splat_rasterize");
  return build_inferred(Op(OpKind::GaussianSplatRasterize, attrs_of(params)), {prep, meta}, loc);
}

NodeId Graph::gaussian_splat_render_decomposed(GaussianSplatInputs inputs,
                                               GaussianSplatRenderParams params, Loc loc) {
  NodeId prep = gaussian_splat_prepare(inputs, params, loc);
  return gaussian_splat_rasterize(prep, inputs.meta, params, loc);
}

NodeId Graph::gaussian_splat_render_backward(GaussianSplatInputs inputs, NodeId d_loss_rgba,
                                             GaussianSplatBackwardParams params, Loc loc) {
  std::vector<NodeId> ins = operands(inputs);
  ins.push_back(d_loss_rgba);
  for (NodeId id : ins) check_id(id, "gaussian_splat_render_backward");
  const GaussianSplatRenderParams& r = params.render;
  GaussianSplatBackwardAttrs a{r.width,
                               r.height,
                               r.tile_size,
                               r.radius_scale,
                               r.alpha_cutoff,
                               r.max_splat_steps,
                               r.transmittance_threshold,
                               r.max_list_entries,
                               params.loss_grad_clip,
                               params.sh_band,
                               params.max_anisotropy};
  return build_inferred(Op(OpKind::GaussianSplatRenderBackward, a), ins, loc);
}

} // namespace rlx::ir
