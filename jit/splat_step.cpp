// jit/splat_step.cpp -- the Gaussian splatting ops on the JIT (jit/splat_step.hpp): the same
// kernels as the interpreter's (so the results are its bits), their loops over tiles and over
// Gaussians handed to the one thread pool. The backward keeps one gradient slot per tile-list
// entry and sums them in list order, so the result does not depend on the number of threads.
#include "splat_step.hpp"

#include "splat/attrs.hpp"
#include "splat/render.hpp"
#include "thread_pool.hpp"

#include <string>

namespace rlx::jit {

namespace {

namespace sd = rlx::splat::detail;

void pool_for(int64_t n, const sd::Body& body) {
  if (n > 0) threads::parallel_for(n, 1, body);
}

class SplatCall final : public LibraryCall {
public:
  SplatCall(const ir::Graph& g, const ir::Node& n) : kind_(n.op.kind()) {
    if (n.loc.known()) where_ = rlx::detail::cat(" (built at ", n.loc.file, ":", n.loc.line, ")");
    if (kind_ == ir::OpKind::GaussianSplatRenderBackward) {
      backward_ = sd::params_of(n.op.attrs<ir::GaussianSplatBackwardAttrs>());
      params_ = backward_.render;
    } else {
      params_ = sd::params_of(n.op.attrs<ir::GaussianSplatAttrs>());
    }
    if (kind_ == ir::OpKind::GaussianSplatRasterize) {
      prep_size_ = g.shape(n.inputs[0]).sizes()[0];
    } else {
      n_ = g.shape(n.inputs[0]).sizes()[0];
      sh_rows_ = g.shape(n.inputs[5]).sizes()[1];
    }
  }

  void run(const std::byte* const* reads, std::byte* out) const override {
    try {
      run_kernel(reads, out);
    } catch (const Error& e) { // the user's line, as the interpreter's errors name it
      throw Error(e.kind(), e.what() + where_);
    }
  }

private:
  void run_kernel(const std::byte* const* reads, std::byte* out) const {
    auto in = [&](int i) { return reinterpret_cast<const float*>(reads[i]); };
    auto* o = reinterpret_cast<float*>(out);
    if (kind_ == ir::OpKind::GaussianSplatRasterize) {
      sd::check_prepared(in(0), prep_size_, params_, "gaussian_splat_rasterize");
      sd::rasterize(in(0), in(1), params_, o, pool_for);
      return;
    }
    sd::SceneView s{in(0), in(1), in(2), in(3), in(4), in(5), in(6)};
    s.n = n_;
    s.sh_rows = sh_rows_;
    if (kind_ == ir::OpKind::GaussianSplatRender)
      sd::render(s, params_, o, "gaussian_splat_render", pool_for);
    else if (kind_ == ir::OpKind::GaussianSplatPrepare)
      sd::prepare(s, params_, o, "gaussian_splat_prepare", pool_for);
    else
      sd::render_backward(s, in(7), backward_, o, "gaussian_splat_render_backward", pool_for);
  }

  ir::OpKind kind_;
  std::string where_;
  sd::Params params_;
  sd::BackwardParams backward_;
  int64_t n_ = 0, sh_rows_ = 0, prep_size_ = 0;
};

} // namespace

bool splat_handles(const ir::Graph& g, const ir::Node& n) {
  if (ir::op_family(n.op.kind()) != ir::Family::Splat || !n.shape.is_static()) return false;
  for (ir::NodeId in : n.inputs)
    if (!g.shape(in).is_static()) return false;
  return true;
}

std::unique_ptr<LibraryCall> splat_prepare(const ir::Graph& g, const ir::Node& n) {
  return std::make_unique<SplatCall>(g, n);
}

} // namespace rlx::jit
