// src/splat/attrs.hpp -- the splatting ops' attribute structs (include/rlx/ir/attrs.def) as the
// kernels' plain parameters (src/splat/render.hpp), for the shape rules, the interpreter and the
// JIT alike.
#pragma once

#include "rlx/ir/attrs.hpp"
#include "splat/render.hpp"

namespace rlx::splat::detail {

inline Params params_of(const ir::GaussianSplatAttrs& a) {
  return {a.width,
          a.height,
          a.tile_size,
          a.radius_scale,
          a.alpha_cutoff,
          a.max_splat_steps,
          a.transmittance_threshold,
          a.max_list_entries};
}

inline BackwardParams params_of(const ir::GaussianSplatBackwardAttrs& a) {
  BackwardParams p;
  p.render = {a.width,
              a.height,
              a.tile_size,
              a.radius_scale,
              a.alpha_cutoff,
              a.max_splat_steps,
              a.transmittance_threshold,
              a.max_list_entries};
  p.loss_grad_clip = a.loss_grad_clip;
  p.sh_band = a.sh_band;
  p.max_anisotropy = a.max_anisotropy;
  return p;
}

} // namespace rlx::splat::detail
