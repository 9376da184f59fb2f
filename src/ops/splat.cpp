// src/ops/splat.cpp -- shape rules of the Gaussian splatting family (ops.def's Splat rows; the
// contract is docs/splatting.md): every operand f32, the seven scene operands [N,3], [N,3],
// [N,4], [N], [N,3], [N,K-1,3] (K-1 = 0, 3, 8 or 15) and [23], the image [H,W,4].
#include "infer_common.hpp"
#include "splat/attrs.hpp"
#include "splat/render.hpp"

namespace rlx::ir::detail {

namespace {

namespace sd = rlx::splat::detail;

void need_f32(const Op& op, std::span<const Shape> in) {
  for (const Shape& s : in)
    if (s.dtype() != DType::F32)
      fail(ErrorKind::Type, op.name(), ": every operand must be f32, got ", shapes_str(in));
}

/// dims[axis] of operand i must be `want` (when both are known).
void need_dim(const Op& op, std::span<const Shape> in, std::size_t i, std::size_t axis,
              int64_t want, const char* what) {
  const Dim& d = in[i].dims()[axis];
  if (d.is_static() && d.size() != want)
    shape_error(op, in, what, " must be ", want, " at axis ", axis, ", got ", d.size());
}

void need_rank(const Op& op, std::span<const Shape> in, std::size_t i, std::size_t rank,
               const char* what) {
  if (in[i].rank() != rank)
    shape_error(op, in, what, " must have rank ", rank, ", got ", short_str(in[i]));
}

void check_params(const Op& op, std::span<const Shape> in, const sd::Params& p) {
  if (p.width < 1 || p.height < 1 || p.tile_size < 1)
    shape_error(op, in, "width, height and tile_size must be positive, got ", p.width, ", ",
                p.height, ", ", p.tile_size);
  if (p.max_splat_steps < 0 || p.max_list_entries < 0 || p.max_list_entries > sd::kMaxIndex)
    shape_error(op, in, "max_splat_steps must be >= 0 and max_list_entries in [0, 2^24], got ",
                p.max_splat_steps, " and ", p.max_list_entries);
  if (!(p.radius_scale > 0))
    shape_error(op, in, "radius_scale must be positive, got ", p.radius_scale);
}

/// The scene's N (static) after checking the seven operands.
int64_t check_scene(const Op& op, std::span<const Shape> in) {
  need_f32(op, in);
  need_rank(op, in, 0, 2, "means");
  need_rank(op, in, 1, 2, "log_scales");
  need_rank(op, in, 2, 2, "rotations");
  need_rank(op, in, 3, 1, "opacity_logits");
  need_rank(op, in, 4, 2, "colors_dc");
  need_rank(op, in, 5, 3, "sh_rest");
  need_rank(op, in, 6, 1, "meta");
  const int64_t n = static_size(in[0].dims()[0]);
  if (n > sd::kMaxIndex) shape_error(op, in, "at most 2^24 Gaussians, got ", n);
  need_dim(op, in, 0, 1, 3, "means");
  need_dim(op, in, 1, 0, n, "log_scales");
  need_dim(op, in, 1, 1, 3, "log_scales");
  need_dim(op, in, 2, 0, n, "rotations");
  need_dim(op, in, 2, 1, 4, "rotations");
  need_dim(op, in, 3, 0, n, "opacity_logits");
  need_dim(op, in, 4, 0, n, "colors_dc");
  need_dim(op, in, 4, 1, 3, "colors_dc");
  need_dim(op, in, 5, 0, n, "sh_rest");
  need_dim(op, in, 5, 2, 3, "sh_rest");
  const int64_t rows = static_size(in[5].dims()[1]);
  if (rows != 0 && rows != 3 && rows != 8 && rows != 15)
    shape_error(op, in, "sh_rest needs 0, 3, 8 or 15 rows (SH degree 0 to 3), got ", rows);
  need_dim(op, in, 6, 0, 23, "meta");
  return n;
}

Shape image(const sd::Params& p) {
  return Shape({Dim(p.height), Dim(p.width), Dim(4)}, DType::F32);
}

} // namespace

std::optional<Shape> infer_splat(const Op& op, std::span<const Shape> in) {
  switch (op.kind()) {
  case OpKind::GaussianSplatRender: {
    const sd::Params p = sd::params_of(op.attrs<GaussianSplatAttrs>());
    check_params(op, in, p);
    check_scene(op, in);
    return image(p);
  }
  case OpKind::GaussianSplatPrepare: {
    const sd::Params p = sd::params_of(op.attrs<GaussianSplatAttrs>());
    check_params(op, in, p);
    const int64_t n = check_scene(op, in);
    return Shape({Dim(sd::prepare_size(n, p))}, DType::F32);
  }
  case OpKind::GaussianSplatRasterize: {
    const sd::Params p = sd::params_of(op.attrs<GaussianSplatAttrs>());
    check_params(op, in, p);
    need_f32(op, in);
    need_rank(op, in, 0, 1, "the prepare buffer");
    need_rank(op, in, 1, 1, "meta");
    need_dim(op, in, 1, 0, 23, "meta");
    return image(p);
  }
  case OpKind::GaussianSplatRenderBackward: {
    const sd::BackwardParams p = sd::params_of(op.attrs<GaussianSplatBackwardAttrs>());
    check_params(op, in, p.render);
    const int64_t n = check_scene(op, in.first(7));
    need_f32(op, in);
    need_rank(op, in, 7, 3, "d_rgba");
    need_dim(op, in, 7, 0, p.render.height, "d_rgba");
    need_dim(op, in, 7, 1, p.render.width, "d_rgba");
    need_dim(op, in, 7, 2, 4, "d_rgba");
    if (p.sh_band < -1 || p.sh_band > 3)
      shape_error(op, in, "sh_band must be -1 (all) or 0 to 3, got ", p.sh_band);
    return Shape({Dim(sd::gradient_size(n, static_size(in[5].dims()[1])))}, DType::F32);
  }
  default:
    return std::nullopt;
  }
}

} // namespace rlx::ir::detail
