// src/frontend/ops_spectral.cpp -- Tensor functions of the spectral primitives (lfilter and the
// complex helpers; the transforms are rlx::fft, src/frontend/fft.cpp), and custom_fn.
#include "frontend/impl.hpp"
#include "frontend/ops.hpp"

#include <complex>
#include <numbers>
#include <string_view>
#include <vector>

namespace rlx {

Tensor lfilter(const Tensor& x, const Tensor& b, const Tensor& a, Loc loc) {
  return apply(
      {x, b, a},
      [&](ir::Graph& g, std::span<const ir::NodeId> in) {
        return g.lfilter(in[0], in[1], in[2], std::nullopt, loc);
      },
      loc);
}

Tensor conjugate(const Tensor& z, Loc loc) {
  return detail::apply1(z, [&](ir::Graph& g, ir::NodeId in) { return g.conjugate(in, loc); }, loc);
}

Tensor complex_norm_sq(const Tensor& z, Loc loc) {
  return detail::apply1(
      z, [&](ir::Graph& g, ir::NodeId in) { return g.complex_norm_sq(in, loc); }, loc);
}

namespace {

/// The c64 scalar value i (sign +1) or -i (sign -1).
Tensor unit_imaginary(float sign, const Loc& loc) {
  const std::vector<std::complex<float>> v{{0.0f, sign}};
  return Tensor::from_vector(v, {}, loc);
}

void check_part(const Tensor& t, std::string_view what, const Loc& loc) {
  detail::check_defined(t, what, loc);
  if (t.dtype() != DType::F32 && t.dtype() != DType::F64)
    fail(ErrorKind::Type, what, ": needs f32 or f64 parts, got ", ir::short_str(t.shape()),
         detail::at_loc(loc));
}

} // namespace

// real is a cast (c64 -> f32 keeps the real part); imag and complex multiply by -i or i, which
// is exact for finite parts (an infinite part can make the other one NaN; docs/semantics.md).
Tensor real(const Tensor& z, Loc loc) {
  detail::check_defined(z, "real", loc);
  return ir::is_complex(z.dtype()) ? z.astype(DType::F32, loc) : z;
}

Tensor imag(const Tensor& z, Loc loc) {
  detail::check_defined(z, "imag", loc);
  if (!ir::is_complex(z.dtype())) return zeros_like(z, loc);
  return (z * unit_imaginary(-1.0f, loc)).astype(DType::F32, loc);
}

Tensor complex(const Tensor& re, const Tensor& im, Loc loc) {
  check_part(re, "complex", loc);
  check_part(im, "complex", loc);
  if (re.dtype() != im.dtype() || !(re.shape() == im.shape()))
    fail(ErrorKind::Shape, "complex: re and im need one shape and dtype, got ",
         ir::short_str(re.shape()), " and ", ir::short_str(im.shape()), detail::at_loc(loc));
  return re.astype(DType::C64, loc) + im.astype(DType::C64, loc) * unit_imaginary(1.0f, loc);
}

Tensor complex(const Tensor& re, Loc loc) {
  check_part(re, "complex", loc);
  return re.astype(DType::C64, loc);
}

Tensor angle(const Tensor& z, Loc loc) {
  detail::check_defined(z, "angle", loc);
  constexpr double pi = std::numbers::pi;
  if (!ir::is_complex(z.dtype())) {
    DType t = z.dtype() == DType::F64 ? DType::F64 : DType::F32;
    return where(z < 0, full_like(z.astype(t, loc), pi, loc), zeros_like(z.astype(t, loc), loc),
                 loc);
  }
  // atan2(im, re) in f64, from atan and the quadrant
  Tensor y = imag(z, loc).astype(DType::F64, loc), x = real(z, loc).astype(DType::F64, loc);
  Tensor a = atan(y / x, loc);
  Tensor r = where(x < 0, where(y < 0, a - pi, a + pi, loc), a, loc);
  Tensor on_axis = where(y > 0, full_like(y, pi / 2, loc),
                         where(y < 0, full_like(y, -pi / 2, loc), zeros_like(y, loc), loc), loc);
  return where(x == 0, on_axis, r, loc).astype(DType::F32, loc);
}

Tensor custom_fn(std::span<const Tensor> inputs, ir::Graph fwd_body,
                 std::optional<ir::Graph> vjp_body, std::optional<ir::Graph> jvp_body, Loc loc) {
  return apply(
      inputs,
      [&](ir::Graph& g, std::span<const ir::NodeId> in) {
        return g.custom_fn(std::vector<ir::NodeId>(in.begin(), in.end()), fwd_body, vjp_body,
                           jvp_body, loc);
      },
      loc);
}

} // namespace rlx
