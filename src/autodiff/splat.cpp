// src/autodiff/splat.cpp -- autodiff of gaussian_splat_render: its VJP is one
// gaussian_splat_render_backward node (the analytic gradient of src/splat/render.cpp), whose
// packed result is cut back into the six scene inputs' cotangents; meta (the camera) gets none.
// Forward mode has no rule: the kernels compute reverse-mode products only.
#include "splat.hpp"

#include <algorithm>

namespace rlx::autodiff::splat {

std::vector<Grad> vjp_render(Builder& b, const Node& n, NodeId dy, std::span<const char> want) {
  const auto& a = n.op.attrs<ir::GaussianSplatAttrs>();
  ir::GaussianSplatBackwardAttrs ba{a.width,
                                    a.height,
                                    a.tile_size,
                                    a.radius_scale,
                                    a.alpha_cutoff,
                                    a.max_splat_steps,
                                    a.transmittance_threshold,
                                    a.max_list_entries};
  std::vector<NodeId> ins(n.inputs.begin(), n.inputs.end());
  ins.push_back(dy);
  NodeId packed = b.op(ir::Op(OpKind::GaussianSplatRenderBackward, ba), ins);
  std::vector<Grad> out(n.inputs.size());
  int64_t offset = 0;
  for (std::size_t i = 0; i + 1 < n.inputs.size(); ++i) {
    const Shape s = b.shape(n.inputs[i]); // a copy: appending nodes moves the graph's storage
    const int64_t len = *s.num_elements();
    if (want[i]) {
      out[i] = b.reshape(b.narrow(packed, 0, offset, len), s.sizes());
    }
    offset += len;
  }
  return out;
}

Grad jvp_render(Builder&, const Node&, std::span<const Grad> t) {
  if (std::none_of(t.begin(), t.end(), [](const Grad& g) { return g.has_value(); }))
    return std::nullopt;
  fail(ErrorKind::Unsupported,
       "autodiff: gaussian_splat_render has no forward-mode (jvp) rule; differentiate it in "
       "reverse mode (vjp, grad)");
}

} // namespace rlx::autodiff::splat
