// src/interp/splat.cpp -- the interpreter's Gaussian splatting kernels: the plain kernels of
// src/splat/render.cpp run serially (the JIT runs the same ones with tiles on its thread pool,
// jit/splat_step.cpp). The shape rules (src/ops/splat.cpp) have checked every operand.
#include "kernels.hpp"

#include "splat/attrs.hpp"
#include "splat/render.hpp"

namespace rlx::interp::detail {

namespace {

namespace sd = rlx::splat::detail;

const float* f32(const Buffer* b) { return reinterpret_cast<const float*>(b->bytes().data()); }
float* f32(Buffer& b) { return reinterpret_cast<float*>(b.bytes().data()); }

sd::SceneView scene_of(Operands in) {
  sd::SceneView s{f32(in[0]), f32(in[1]), f32(in[2]), f32(in[3]),
                  f32(in[4]), f32(in[5]), f32(in[6])};
  s.n = in[0]->shape().sizes()[0];
  s.sh_rows = in[5]->shape().sizes()[1];
  return s;
}

} // namespace

RLX_KERNEL(GaussianSplatRender) {
  Buffer out = Buffer::uninitialized(n.shape);
  sd::render(scene_of(in), sd::params_of(n.op.attrs<ir::GaussianSplatAttrs>()), f32(out),
             "gaussian_splat_render", sd::serial_for);
  return out;
}

RLX_KERNEL(GaussianSplatPrepare) {
  Buffer out = Buffer::uninitialized(n.shape);
  sd::prepare(scene_of(in), sd::params_of(n.op.attrs<ir::GaussianSplatAttrs>()), f32(out),
              "gaussian_splat_prepare", sd::serial_for);
  return out;
}

RLX_KERNEL(GaussianSplatRasterize) {
  const sd::Params p = sd::params_of(n.op.attrs<ir::GaussianSplatAttrs>());
  sd::check_prepared(f32(in[0]), in[0]->shape().sizes()[0], p, "gaussian_splat_rasterize");
  Buffer out = Buffer::uninitialized(n.shape);
  sd::rasterize(f32(in[0]), f32(in[1]), p, f32(out), sd::serial_for);
  return out;
}

RLX_KERNEL(GaussianSplatRenderBackward) {
  Buffer out = Buffer::uninitialized(n.shape);
  sd::render_backward(scene_of(in), f32(in[7]),
                      sd::params_of(n.op.attrs<ir::GaussianSplatBackwardAttrs>()), f32(out),
                      "gaussian_splat_render_backward", sd::serial_for);
  return out;
}

} // namespace rlx::interp::detail
