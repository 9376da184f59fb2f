// src/splat/render.cpp -- the Gaussian splatting kernels (src/splat/render.hpp), written from the
// equations of docs/splatting.md (Kerbl et al. 2023, Zwicker et al. 2001). Everything computes in
// double; the per-Gaussian records that compositing reads are rounded to f32 once, in prepare, so
// the fused render and prepare + rasterize see the same values. The backward recomputes each
// pixel's forward pass, then walks its contributors back to front (as the 3DGS reference does),
// accumulating per-list-entry gradients of the 2-D quantities (no two tiles write one slot, so
// tiles run in parallel without atomics), sums them per Gaussian, and chains them through the
// conic, the EWA Jacobian, the covariance, the quaternion, the SH basis and the sigmoid.
#include "splat/render.hpp"

#include "rlx/error.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <numeric>
#include <utility>
#include <vector>

namespace rlx::splat::detail {

namespace {

using V3 = std::array<double, 3>;

V3 sub(const V3& a, const V3& b) { return {a[0] - b[0], a[1] - b[1], a[2] - b[2]}; }
V3 cross(const V3& a, const V3& b) {
  return {a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]};
}
double dot(const V3& a, const V3& b) { return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]; }
V3 normalize(const V3& a) {
  double l = std::sqrt(dot(a, a));
  return {a[0] / l, a[1] / l, a[2] / l};
}

/// The pinhole camera of a meta vector: world-to-camera rows (right, down, forward).
struct Camera {
  double rot[3][3];
  V3 pos;
  double near, far, fx, fy, cx, cy, tan_x, tan_y;
  V3 bg;
};

Camera camera_of(const float* m) {
  Camera c{};
  c.pos = {m[0], m[1], m[2]};
  V3 target{m[3], m[4], m[5]}, up{m[6], m[7], m[8]};
  V3 f = normalize(sub(target, c.pos));
  V3 r = normalize(cross(f, up));
  V3 u = cross(r, f);
  for (int j = 0; j < 3; ++j) {
    c.rot[0][j] = r[j];
    c.rot[1][j] = -u[j];
    c.rot[2][j] = f[j];
  }
  c.near = m[10];
  c.far = m[11];
  c.bg = {m[12], m[13], m[14]};
  c.fx = m[17];
  c.fy = m[18];
  c.cx = m[19];
  c.cy = m[20];
  c.tan_x = m[21];
  c.tan_y = m[22];
  return c;
}

// Real spherical harmonics to degree 3 in the 3DGS reference's order and signs; the constants
// come from their definitions (sqrt((2l+1)/(4 pi) (l-m)!/(l+m)!) times the Legendre factors).
const double kPi = std::acos(-1.0);
const double kC0 = 0.5 / std::sqrt(kPi);
const double kC1 = std::sqrt(3.0 / (4.0 * kPi));
const double kC2[5] = {std::sqrt(15.0 / (4 * kPi)), -std::sqrt(15.0 / (4 * kPi)),
                       std::sqrt(5.0 / (16 * kPi)), -std::sqrt(15.0 / (4 * kPi)),
                       std::sqrt(15.0 / (16 * kPi))};
const double kC3[7] = {-std::sqrt(35.0 / (32 * kPi)), std::sqrt(105.0 / (4 * kPi)),
                       -std::sqrt(21.0 / (32 * kPi)), std::sqrt(7.0 / (16 * kPi)),
                       -std::sqrt(21.0 / (32 * kPi)), std::sqrt(105.0 / (16 * kPi)),
                       -std::sqrt(35.0 / (32 * kPi))};

/// The first `count` basis functions at unit direction d, and their gradients w.r.t. d (the
/// polynomials' partial derivatives; the normalisation is differentiated by the caller).
void sh_basis(const V3& d, int64_t count, double* y, V3* dy) {
  const double x = d[0], yy_ = d[1], z = d[2];
  const double xx = x * x, yy = yy_ * yy_, zz = z * z;
  const double Y = yy_;
  y[0] = kC0;
  dy[0] = {0, 0, 0};
  if (count > 1) {
    y[1] = -kC1 * Y, dy[1] = {0, -kC1, 0};
    y[2] = kC1 * z, dy[2] = {0, 0, kC1};
    y[3] = -kC1 * x, dy[3] = {-kC1, 0, 0};
  }
  if (count > 4) {
    y[4] = kC2[0] * x * Y, dy[4] = {kC2[0] * Y, kC2[0] * x, 0};
    y[5] = kC2[1] * Y * z, dy[5] = {0, kC2[1] * z, kC2[1] * Y};
    y[6] = kC2[2] * (2 * zz - xx - yy), dy[6] = {-2 * kC2[2] * x, -2 * kC2[2] * Y, 4 * kC2[2] * z};
    y[7] = kC2[3] * x * z, dy[7] = {kC2[3] * z, 0, kC2[3] * x};
    y[8] = kC2[4] * (xx - yy), dy[8] = {2 * kC2[4] * x, -2 * kC2[4] * Y, 0};
  }
  if (count > 9) {
    y[9] = kC3[0] * Y * (3 * xx - yy), dy[9] = {kC3[0] * 6 * x * Y, kC3[0] * (3 * xx - 3 * yy), 0};
    y[10] = kC3[1] * x * Y * z, dy[10] = {kC3[1] * Y * z, kC3[1] * x * z, kC3[1] * x * Y};
    y[11] = kC3[2] * Y * (4 * zz - xx - yy);
    dy[11] = {kC3[2] * -2 * x * Y, kC3[2] * (4 * zz - xx - 3 * yy), kC3[2] * 8 * Y * z};
    y[12] = kC3[3] * z * (2 * zz - 3 * xx - 3 * yy);
    dy[12] = {kC3[3] * -6 * x * z, kC3[3] * -6 * Y * z, kC3[3] * (6 * zz - 3 * xx - 3 * yy)};
    y[13] = kC3[4] * x * (4 * zz - xx - yy);
    dy[13] = {kC3[4] * (4 * zz - 3 * xx - yy), kC3[4] * -2 * x * Y, kC3[4] * 8 * x * z};
    y[14] = kC3[5] * z * (xx - yy),
    dy[14] = {kC3[5] * 2 * x * z, kC3[5] * -2 * Y * z, kC3[5] * (xx - yy)};
    y[15] = kC3[6] * x * (xx - 3 * yy),
    dy[15] = {kC3[6] * (3 * xx - 3 * yy), kC3[6] * -6 * x * Y, 0};
  }
}

/// One Gaussian's projection with the intermediates its backward needs.
struct Projected {
  bool visible = false;
  V3 t{};                  // camera coordinates of the mean
  double q[4]{}, qlen = 0; // the normalised quaternion and the input's length
  double rot[3][3]{};      // its rotation matrix
  V3 s{};                  // exp(log_scales)
  double cov3[3][3]{};
  double ux = 0, uy = 0; // x/z, y/z after the 1.3x field-of-view clamp
  bool clamped_x = false, clamped_y = false;
  double tm[2][3]{}; // J R_camera
  double a = 0, b = 0, c = 0, det = 0;
  double conic[3]{};
  double mean[2]{};
  int64_t radius = 0, rect[4]{};
  double opacity = 0;
  V3 dir{};
  double dist = 0;
  double basis[16]{};
  V3 dbasis[16]{};
  double raw_rgb[3]{}, rgb[3]{};
};

int64_t floor_div(double v, int64_t ts) { return int64_t(std::floor(v / double(ts))); }

Projected project(const SceneView& s, const Camera& cam, const Params& p, int64_t i) {
  Projected r;
  V3 m{s.means[3 * i], s.means[3 * i + 1], s.means[3 * i + 2]};
  V3 rel = sub(m, cam.pos);
  for (int k = 0; k < 3; ++k)
    r.t[k] = cam.rot[k][0] * rel[0] + cam.rot[k][1] * rel[1] + cam.rot[k][2] * rel[2];
  const double x = r.t[0], y = r.t[1], z = r.t[2];
  if (!(z > cam.near) || !(z < cam.far)) return r;
  // The Jacobian at the mean clamped to 1.3x the field of view, so that Gaussians far outside
  // the view do not get huge footprints.
  const double lim_x = 1.3 * cam.tan_x, lim_y = 1.3 * cam.tan_y;
  r.ux = x / z;
  r.uy = y / z;
  r.clamped_x = r.ux < -lim_x || r.ux > lim_x;
  r.clamped_y = r.uy < -lim_y || r.uy > lim_y;
  r.ux = std::clamp(r.ux, -lim_x, lim_x);
  r.uy = std::clamp(r.uy, -lim_y, lim_y);
  const double jac[2][3] = {{cam.fx / z, 0.0, -cam.fx * r.ux / z},
                            {0.0, cam.fy / z, -cam.fy * r.uy / z}};
  const float* qi = s.rotations + 4 * i;
  r.qlen = std::sqrt(double(qi[0]) * qi[0] + double(qi[1]) * qi[1] + double(qi[2]) * qi[2] +
                     double(qi[3]) * qi[3]);
  if (r.qlen == 0.0) {
    r.q[0] = 1.0; // the contract: a zero quaternion is no rotation
  } else {
    for (int k = 0; k < 4; ++k) r.q[k] = qi[k] / r.qlen;
  }
  const double w = r.q[0], qx = r.q[1], qy = r.q[2], qz = r.q[3];
  const double rot[3][3] = {
      {1 - 2 * (qy * qy + qz * qz), 2 * (qx * qy - w * qz), 2 * (qx * qz + w * qy)},
      {2 * (qx * qy + w * qz), 1 - 2 * (qx * qx + qz * qz), 2 * (qy * qz - w * qx)},
      {2 * (qx * qz - w * qy), 2 * (qy * qz + w * qx), 1 - 2 * (qx * qx + qy * qy)}};
  std::memcpy(r.rot, rot, sizeof rot);
  for (int k = 0; k < 3; ++k) r.s[k] = std::exp(double(s.log_scales[3 * i + k]));
  for (int a = 0; a < 3; ++a)
    for (int b = 0; b < 3; ++b) {
      double v = 0;
      for (int k = 0; k < 3; ++k) v += rot[a][k] * r.s[k] * r.s[k] * rot[b][k];
      r.cov3[a][b] = v;
    }
  for (int a = 0; a < 2; ++a)
    for (int b = 0; b < 3; ++b)
      r.tm[a][b] =
          jac[a][0] * cam.rot[0][b] + jac[a][1] * cam.rot[1][b] + jac[a][2] * cam.rot[2][b];
  double cov2[2][2];
  for (int a = 0; a < 2; ++a)
    for (int b = 0; b < 2; ++b) {
      double v = 0;
      for (int k = 0; k < 3; ++k)
        for (int l = 0; l < 3; ++l) v += r.tm[a][k] * r.cov3[k][l] * r.tm[b][l];
      cov2[a][b] = v;
    }
  // The 0.3 px^2 dilation is EWA's low-pass filter: every splat covers about a pixel.
  r.a = cov2[0][0] + 0.3;
  r.b = cov2[0][1];
  r.c = cov2[1][1] + 0.3;
  r.det = r.a * r.c - r.b * r.b;
  if (!(r.det > 0.0)) return r;
  const double mid = 0.5 * (r.a + r.c);
  const double lambda = mid + std::sqrt(std::max(0.1, mid * mid - r.det));
  r.radius = int64_t(std::ceil(p.radius_scale * std::sqrt(lambda)));
  r.mean[0] = cam.fx * x / z + cam.cx;
  r.mean[1] = cam.fy * y / z + cam.cy;
  const int64_t tx = tiles_x(p), ty = tiles_y(p), ts = p.tile_size;
  const double rad = double(r.radius);
  r.rect[0] = std::clamp<int64_t>(floor_div(r.mean[0] - rad, ts), 0, tx);
  r.rect[1] = std::clamp<int64_t>(floor_div(r.mean[1] - rad, ts), 0, ty);
  r.rect[2] = std::clamp<int64_t>(floor_div(r.mean[0] + rad, ts) + 1, 0, tx);
  r.rect[3] = std::clamp<int64_t>(floor_div(r.mean[1] + rad, ts) + 1, 0, ty);
  if (r.radius <= 0 || (r.rect[2] - r.rect[0]) * (r.rect[3] - r.rect[1]) == 0) return r;
  r.conic[0] = r.c / r.det;
  r.conic[1] = -r.b / r.det;
  r.conic[2] = r.a / r.det;
  r.opacity = 1.0 / (1.0 + std::exp(-double(s.opacity_logits[i])));
  r.dist = std::sqrt(dot(rel, rel));
  r.dir = {rel[0] / r.dist, rel[1] / r.dist, rel[2] / r.dist};
  const int64_t count = s.sh_rows + 1;
  sh_basis(r.dir, count, r.basis, r.dbasis);
  for (int ch = 0; ch < 3; ++ch) {
    double v = 0.5 + r.basis[0] * s.colors_dc[3 * i + ch];
    for (int64_t k = 1; k < count; ++k)
      v += r.basis[k] * s.sh_rest[(i * s.sh_rows + k - 1) * 3 + ch];
    r.raw_rgb[ch] = v;
    r.rgb[ch] = std::max(0.0, v);
  }
  r.visible = true;
  return r;
}

/// A pixel's forward pass over its tile's list.
struct PixelResult {
  double rgb[3] = {0, 0, 0};
  double trans = 1.0;
  int64_t end = 0; // the list position after the last contributor
};

struct Splat2d {
  double mx, my, ca, cb, cc, opacity;
  double power, g, alpha;
};

/// The Gaussian at record `rec` seen from pixel (px, py); false when it is skipped.
bool splat_at(const float* rec, double px, double py, const Params& p, Splat2d& o) {
  o.mx = rec[0], o.my = rec[1], o.ca = rec[3], o.cb = rec[4], o.cc = rec[5], o.opacity = rec[6];
  const double dx = o.mx - px, dy = o.my - py;
  o.power = -0.5 * (o.ca * dx * dx + o.cc * dy * dy) - o.cb * dx * dy;
  if (o.power > 0.0) return false;
  o.g = std::exp(o.power);
  o.alpha = std::min(0.99, o.opacity * o.g);
  return !(o.alpha < p.alpha_cutoff);
}

PixelResult composite(const float* records, const float* list, int64_t len, double px, double py,
                      const Params& p) {
  PixelResult r;
  int64_t steps = 0;
  for (int64_t k = 0; k < len; ++k) {
    const float* rec = records + int64_t(list[k]) * kRecord;
    Splat2d s;
    if (!splat_at(rec, px, py, p, s)) continue;
    const double test = r.trans * (1.0 - s.alpha);
    if (test < p.transmittance_threshold) break; // early termination: this one no longer shows
    for (int ch = 0; ch < 3; ++ch) r.rgb[ch] += rec[7 + ch] * s.alpha * r.trans;
    r.trans = test;
    r.end = k + 1;
    if (p.max_splat_steps && ++steps == p.max_splat_steps) break;
  }
  return r;
}

struct Layout {
  int64_t n, tx, ty, capacity;
  const float* records;
  const float* ranges;
  const float* list;
};

Layout layout_of(const float* prep) {
  Layout l;
  l.n = int64_t(prep[0]);
  l.tx = int64_t(prep[1]);
  l.ty = int64_t(prep[2]);
  l.capacity = int64_t(prep[3]);
  l.records = prep + kHeader;
  l.ranges = l.records + l.n * kRecord;
  l.list = l.ranges + 2 * l.tx * l.ty;
  return l;
}

/// Calls fn(tile, x0, y0, x1, y1) for tiles [t0, t1).
template <class Fn> void for_tiles(const Params& p, int64_t t0, int64_t t1, Fn fn) {
  const int64_t tx = tiles_x(p), ts = p.tile_size;
  for (int64_t t = t0; t < t1; ++t) {
    const int64_t x0 = (t % tx) * ts, y0 = (t / tx) * ts;
    fn(t, x0, y0, std::min(p.width, x0 + ts), std::min(p.height, y0 + ts));
  }
}

} // namespace

void serial_for(int64_t n, const Body& body) {
  if (n > 0) body(0, n);
}

int64_t tiles_x(const Params& p) { return (p.width + p.tile_size - 1) / p.tile_size; }
int64_t tiles_y(const Params& p) { return (p.height + p.tile_size - 1) / p.tile_size; }

int64_t list_capacity(int64_t n, const Params& p) {
  if (p.max_list_entries > 0) return p.max_list_entries;
  const int64_t t = tiles_x(p) * tiles_y(p);
  return n == 0 ? 0 : std::min(kMaxIndex, t > kMaxIndex / n ? kMaxIndex : n * t);
}

int64_t prepare_size(int64_t n, const Params& p) {
  return kHeader + n * kRecord + 2 * tiles_x(p) * tiles_y(p) + list_capacity(n, p);
}

int64_t gradient_size(int64_t n, int64_t sh_rows) { return n * (14 + 3 * sh_rows); }

void make_meta(const float position[3], const float target[3], const float up[3], double fov_y,
               double near, double far, const float background[3], int64_t width, int64_t height,
               float out[23]) {
  const double tan_y = std::tan(fov_y * std::acos(-1.0) / 360.0);
  const double fy = double(height) / (2.0 * tan_y), fx = fy; // square pixels
  const double v[23] = {position[0],
                        position[1],
                        position[2],
                        target[0],
                        target[1],
                        target[2],
                        up[0],
                        up[1],
                        up[2],
                        fov_y,
                        near,
                        far,
                        background[0],
                        background[1],
                        background[2],
                        double(width),
                        double(height),
                        fx,
                        fy,
                        double(width) / 2.0,
                        double(height) / 2.0,
                        double(width) / (2.0 * fx),
                        tan_y};
  for (int i = 0; i < 23; ++i) out[i] = float(v[i]);
}

namespace {

/// Where prepare writes: the buffer and its list capacity, asked for once the lists' size
/// (`used`) is known.
using Alloc = std::function<std::pair<float*, int64_t>(int64_t used)>;

/// prepare's work into the buffer `alloc` gives: the op's output (its capacity fixed by
/// max_list_entries) or, for render and the backward, scratch of exactly the size needed.
void prepare_into(const SceneView& s, const Params& p, const char* op, const ForRange& for_range,
                  const Alloc& alloc) {
  const Camera cam = camera_of(s.meta);
  const int64_t n = s.n, tx = tiles_x(p), ty = tiles_y(p);
  std::vector<float> scratch(std::size_t(n * kRecord));
  float* records = scratch.data();
  for_range(n, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) {
      const Projected r = project(s, cam, p, i);
      float* rec = records + i * kRecord;
      std::fill(rec, rec + kRecord, 0.0f);
      if (!r.visible) continue;
      const double v[kRecord] = {r.mean[0],
                                 r.mean[1],
                                 r.t[2],
                                 r.conic[0],
                                 r.conic[1],
                                 r.conic[2],
                                 r.opacity,
                                 r.rgb[0],
                                 r.rgb[1],
                                 r.rgb[2],
                                 double(r.radius),
                                 double(r.rect[0]),
                                 double(r.rect[1]),
                                 double(r.rect[2]),
                                 double(r.rect[3]),
                                 1.0};
      for (int64_t k = 0; k < kRecord; ++k) rec[k] = float(v[k]);
    }
  });
  // Binning: count per tile, prefix sums, fill, then sort each tile nearest first, ties by
  // index.
  std::vector<int64_t> count(std::size_t(tx * ty) + 1, 0);
  for (int64_t i = 0; i < n; ++i) {
    const float* rec = records + i * kRecord;
    if (rec[15] == 0.0f) continue;
    for (int64_t y = int64_t(rec[12]); y < int64_t(rec[14]); ++y)
      for (int64_t x = int64_t(rec[11]); x < int64_t(rec[13]); ++x)
        ++count[std::size_t(y * tx + x + 1)];
  }
  std::partial_sum(count.begin(), count.end(), count.begin());
  const int64_t used = count.back();
  if (used > list_capacity(n, p))
    fail(ErrorKind::Limit, op, ": the tile lists need ", used, " entries, max_list_entries allows ",
         list_capacity(n, p), " (raise it, or use fewer or smaller Gaussians)");
  const auto [prep, capacity] = alloc(used);
  std::copy(scratch.begin(), scratch.end(), prep + kHeader);
  records = prep + kHeader;
  float* ranges = records + n * kRecord;
  float* list = ranges + 2 * tx * ty;
  std::vector<int64_t> next(count.begin(), count.end() - 1);
  for (int64_t i = 0; i < n; ++i) {
    const float* rec = records + i * kRecord;
    if (rec[15] == 0.0f) continue;
    for (int64_t y = int64_t(rec[12]); y < int64_t(rec[14]); ++y)
      for (int64_t x = int64_t(rec[11]); x < int64_t(rec[13]); ++x)
        list[next[std::size_t(y * tx + x)]++] = float(i);
  }
  for_range(tx * ty, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      float* b = list + count[std::size_t(t)];
      float* e = list + count[std::size_t(t) + 1];
      std::sort(b, e, [&](float ga, float gb) {
        const float da = records[int64_t(ga) * kRecord + 2],
                    db = records[int64_t(gb) * kRecord + 2];
        return da < db || (da == db && ga < gb);
      });
      ranges[2 * t] = float(count[std::size_t(t)]);
      ranges[2 * t + 1] = float(count[std::size_t(t) + 1]);
    }
  });
  std::fill(list + used, list + capacity, 0.0f);
  const float header[kHeader] = {float(n), float(tx), float(ty), float(capacity), float(used)};
  std::copy(header, header + kHeader, prep);
}

/// A prepare buffer in scratch memory, its lists exactly as long as needed.
std::vector<float> prepare_scratch(const SceneView& s, const Params& p, const char* op,
                                   const ForRange& for_range) {
  std::vector<float> buf;
  prepare_into(s, p, op, for_range, [&](int64_t used) {
    buf.resize(std::size_t(kHeader + s.n * kRecord + 2 * tiles_x(p) * tiles_y(p) + used));
    return std::pair{buf.data(), used};
  });
  return buf;
}

} // namespace

void prepare(const SceneView& s, const Params& p, float* prep, const char* op,
             const ForRange& for_range) {
  prepare_into(s, p, op, for_range,
               [&](int64_t) { return std::pair{prep, list_capacity(s.n, p)}; });
}

void check_prepared(const float* prep, int64_t size, const Params& p, const char* op) {
  auto whole = [](float v, double hi) { return v >= 0 && v <= hi && v == std::floor(v); };
  const char* why = nullptr;
  if (size < kHeader || !whole(prep[0], double(kMaxIndex)) || !whole(prep[3], double(kMaxIndex)))
    why = "its header is not one prepare writes";
  else if (int64_t(prep[1]) != tiles_x(p) || int64_t(prep[2]) != tiles_y(p))
    why = "its tile grid differs from these width, height and tile_size";
  else if (int64_t n = int64_t(prep[0]), cap = int64_t(prep[3]);
           size != kHeader + n * kRecord + 2 * tiles_x(p) * tiles_y(p) + cap ||
           !whole(prep[4], double(cap)))
    why = "its size does not match its header";
  if (!why) {
    const Layout l = layout_of(prep);
    const int64_t used = int64_t(prep[4]);
    for (int64_t t = 0; t < l.tx * l.ty && !why; ++t)
      if (!whole(l.ranges[2 * t], double(used)) || !whole(l.ranges[2 * t + 1], double(used)) ||
          l.ranges[2 * t] > l.ranges[2 * t + 1])
        why = "a tile's list range is out of bounds";
    for (int64_t e = 0; e < used && !why; ++e)
      if (!whole(l.list[e], double(l.n - 1))) why = "a list entry is not a Gaussian's index";
  }
  if (why)
    fail(ErrorKind::Value, op, ": the first operand is not a gaussian_splat_prepare buffer for a ",
         p.width, "x", p.height, " image in ", p.tile_size, "-pixel tiles: ", why);
}

void rasterize(const float* prep, const float* meta, const Params& p, float* rgba,
               const ForRange& for_range) {
  const Layout l = layout_of(prep);
  const double bg[3] = {meta[12], meta[13], meta[14]};
  for_range(l.tx * l.ty, [&](int64_t t0, int64_t t1) {
    for_tiles(p, t0, t1, [&](int64_t t, int64_t x0, int64_t y0, int64_t x1, int64_t y1) {
      const int64_t start = int64_t(l.ranges[2 * t]), end = int64_t(l.ranges[2 * t + 1]);
      for (int64_t i = y0; i < y1; ++i)
        for (int64_t j = x0; j < x1; ++j) {
          const PixelResult r = composite(l.records, l.list + start, end - start, double(j) + 0.5,
                                          double(i) + 0.5, p);
          float* o = rgba + (i * p.width + j) * 4;
          for (int ch = 0; ch < 3; ++ch) o[ch] = float(r.rgb[ch] + r.trans * bg[ch]);
          o[3] = float(1.0 - r.trans);
        }
    });
  });
}

void render(const SceneView& s, const Params& p, float* rgba, const char* op,
            const ForRange& for_range) {
  const std::vector<float> prep = prepare_scratch(s, p, op, for_range);
  rasterize(prep.data(), s.meta, p, rgba, for_range);
}

namespace {

/// Per list entry: d/d of the record's mean_x, mean_y, conic a, b, c, opacity, r, g, b.
constexpr int kSlot = 9;

/// The backward of one pixel: its forward pass, then its contributors back to front.
void pixel_backward(const Layout& l, int64_t start, int64_t len, double px, double py,
                    const double d_out[4], const double bg[3], const Params& p, double* slots) {
  const float* list = l.list + start;
  const PixelResult fwd = composite(l.records, list, len, px, py, p);
  const double t_final = fwd.trans;
  double trans = t_final;
  double accum[3] = {0, 0, 0}, last_color[3] = {0, 0, 0}, last_alpha = 0;
  const double bg_dot = bg[0] * d_out[0] + bg[1] * d_out[1] + bg[2] * d_out[2];
  for (int64_t k = fwd.end - 1; k >= 0; --k) {
    const float* rec = l.records + int64_t(list[k]) * kRecord;
    Splat2d s;
    if (!splat_at(rec, px, py, p, s)) continue;
    trans /= 1.0 - s.alpha; // the transmittance in front of this Gaussian
    double* slot = slots + (start + k) * kSlot;
    double d_alpha = 0;
    for (int ch = 0; ch < 3; ++ch) {
      const double color = rec[7 + ch];
      slot[6 + ch] += s.alpha * trans * d_out[ch];
      accum[ch] = last_alpha * last_color[ch] + (1.0 - last_alpha) * accum[ch];
      d_alpha += (color - accum[ch]) * d_out[ch];
      last_color[ch] = color;
    }
    d_alpha *= trans;
    // The background behind and the alpha channel (1 - T_final) through T_final.
    d_alpha += (d_out[3] - bg_dot) * t_final / (1.0 - s.alpha);
    last_alpha = s.alpha;
    if (s.opacity * s.g > 0.99) continue; // alpha is clamped: a constant
    slot[5] += s.g * d_alpha;
    const double d_power = s.opacity * s.g * d_alpha;
    const double dx = s.mx - px, dy = s.my - py;
    slot[0] += d_power * -(s.ca * dx + s.cb * dy);
    slot[1] += d_power * -(s.cc * dy + s.cb * dx);
    slot[2] += d_power * -0.5 * dx * dx;
    slot[3] += d_power * -dx * dy;
    slot[4] += d_power * -0.5 * dy * dy;
  }
}

} // namespace

void render_backward(const SceneView& s, const float* d_rgba, const BackwardParams& bp,
                     float* grads, const char* op, const ForRange& for_range) {
  const Params& p = bp.render;
  const std::vector<float> prep = prepare_scratch(s, p, op, for_range);
  const Layout l = layout_of(prep.data());
  const Camera cam = camera_of(s.meta);
  const int64_t used = int64_t(prep[4]);
  std::vector<double> slots(std::size_t(used * kSlot), 0.0);
  for_range(l.tx * l.ty, [&](int64_t t0, int64_t t1) {
    for_tiles(p, t0, t1, [&](int64_t t, int64_t x0, int64_t y0, int64_t x1, int64_t y1) {
      const int64_t start = int64_t(l.ranges[2 * t]), end = int64_t(l.ranges[2 * t + 1]);
      for (int64_t i = y0; i < y1; ++i)
        for (int64_t j = x0; j < x1; ++j) {
          double d_out[4];
          for (int ch = 0; ch < 4; ++ch) {
            double v = d_rgba[(i * p.width + j) * 4 + ch];
            if (bp.loss_grad_clip > 0) v = std::clamp(v, -bp.loss_grad_clip, bp.loss_grad_clip);
            d_out[ch] = v;
          }
          pixel_backward(l, start, end - start, double(j) + 0.5, double(i) + 0.5, d_out,
                         cam.bg.data(), p, slots.data());
        }
    });
  });
  // Per Gaussian: the sum of its entries' slots (in list order, so the result is the same for
  // any number of threads).
  const int64_t n = s.n;
  std::vector<double> g2(std::size_t(n * kSlot), 0.0);
  for (int64_t e = 0; e < used; ++e) {
    double* dst = g2.data() + int64_t(l.list[e]) * kSlot;
    for (int k = 0; k < kSlot; ++k) dst[k] += slots[std::size_t(e * kSlot + k)];
  }
  const int64_t rows = s.sh_rows;
  float* g_means = grads;
  float* g_scales = g_means + 3 * n;
  float* g_rot = g_scales + 3 * n;
  float* g_opacity = g_rot + 4 * n;
  float* g_dc = g_opacity + n;
  float* g_rest = g_dc + 3 * n;
  std::fill(grads, grads + gradient_size(n, rows), 0.0f);
  for_range(n, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) {
      double d_scale_log[3] = {0, 0, 0};
      if (bp.max_anisotropy > 0) { // the gradient of max(0, s_max / s_min - r)
        const float* ls = s.log_scales + 3 * i;
        const int64_t hi = std::max_element(ls, ls + 3) - ls,
                      lo = std::min_element(ls, ls + 3) - ls;
        const double ratio = std::exp(double(ls[hi]) - double(ls[lo]));
        if (ratio > bp.max_anisotropy && hi != lo) {
          d_scale_log[hi] += ratio;
          d_scale_log[lo] -= ratio;
        }
      }
      const Projected r = project(s, cam, p, i);
      if (r.visible) {
        const double* d = g2.data() + i * kSlot;
        // Opacity through the sigmoid.
        g_opacity[i] = float(d[5] * r.opacity * (1.0 - r.opacity));
        // Colour: the SH coefficients and, through the basis, the viewing direction.
        const int64_t count = rows + 1;
        V3 d_dir{0, 0, 0};
        for (int ch = 0; ch < 3; ++ch) {
          if (r.raw_rgb[ch] < 0.0) continue; // clamped at 0: a constant
          const double dc = d[6 + ch];
          g_dc[3 * i + ch] = float(r.basis[0] * dc);
          for (int64_t k = 1; k < count; ++k) {
            const int64_t band = k < 4 ? 1 : k < 9 ? 2 : 3;
            if (bp.sh_band < 0 || band <= bp.sh_band)
              g_rest[(i * rows + k - 1) * 3 + ch] = float(r.basis[k] * dc);
            const double coef = s.sh_rest[(i * rows + k - 1) * 3 + ch];
            for (int a = 0; a < 3; ++a) d_dir[a] += dc * coef * r.dbasis[k][a];
          }
        }
        V3 d_mean{0, 0, 0};
        const double dd = dot(r.dir, d_dir);
        for (int a = 0; a < 3; ++a) d_mean[a] += (d_dir[a] - r.dir[a] * dd) / r.dist;
        // The conic (inverse of the 2-D covariance): dS2 = -K dK K.
        const double kk[2][2] = {{r.conic[0], r.conic[1]}, {r.conic[1], r.conic[2]}};
        const double gk[2][2] = {{d[2], 0.5 * d[3]}, {0.5 * d[3], d[4]}};
        double g2m[2][2];
        for (int a = 0; a < 2; ++a)
          for (int b = 0; b < 2; ++b) {
            double v = 0;
            for (int k = 0; k < 2; ++k)
              for (int m = 0; m < 2; ++m) v += kk[a][k] * gk[k][m] * kk[m][b];
            g2m[a][b] = -v;
          }
        // Sigma2 = T Sigma T^T (+ 0.3 I): dSigma = T^T G T, dT = 2 G T Sigma.
        double g3[3][3], gt[2][3];
        for (int a = 0; a < 3; ++a)
          for (int b = 0; b < 3; ++b) {
            double v = 0;
            for (int k = 0; k < 2; ++k)
              for (int m = 0; m < 2; ++m) v += r.tm[k][a] * g2m[k][m] * r.tm[m][b];
            g3[a][b] = v;
          }
        for (int a = 0; a < 2; ++a)
          for (int b = 0; b < 3; ++b) {
            double v = 0;
            for (int k = 0; k < 2; ++k)
              for (int m = 0; m < 3; ++m) v += g2m[a][k] * r.tm[k][m] * r.cov3[m][b];
            gt[a][b] = 2 * v;
          }
        // T = J W: dJ = dT W^T; J depends on the camera coordinates t.
        double gj[2][3];
        for (int a = 0; a < 2; ++a)
          for (int b = 0; b < 3; ++b)
            gj[a][b] =
                gt[a][0] * cam.rot[b][0] + gt[a][1] * cam.rot[b][1] + gt[a][2] * cam.rot[b][2];
        const double x = r.t[0], y = r.t[1], z = r.t[2];
        V3 dt{0, 0, 0};
        dt[2] += gj[0][0] * -cam.fx / (z * z) + gj[1][1] * -cam.fy / (z * z);
        dt[2] += gj[0][2] * cam.fx * r.ux / (z * z) + gj[1][2] * cam.fy * r.uy / (z * z);
        if (!r.clamped_x) {
          dt[0] += gj[0][2] * -cam.fx / (z * z);
          dt[2] += gj[0][2] * cam.fx * x / (z * z * z);
        }
        if (!r.clamped_y) {
          dt[1] += gj[1][2] * -cam.fy / (z * z);
          dt[2] += gj[1][2] * cam.fy * y / (z * z * z);
        }
        // The pixel-space mean.
        dt[0] += d[0] * cam.fx / z;
        dt[1] += d[1] * cam.fy / z;
        dt[2] += -d[0] * cam.fx * x / (z * z) - d[1] * cam.fy * y / (z * z);
        for (int a = 0; a < 3; ++a)
          d_mean[a] += cam.rot[0][a] * dt[0] + cam.rot[1][a] * dt[1] + cam.rot[2][a] * dt[2];
        for (int a = 0; a < 3; ++a) g_means[3 * i + a] = float(d_mean[a]);
        // Sigma = M M^T with M = Q S: dM = 2 dSigma M; then S = exp(log_scales) and Q(q).
        double gq[3][3];
        for (int a = 0; a < 3; ++a)
          for (int k = 0; k < 3; ++k) {
            double gm = 0;
            for (int b = 0; b < 3; ++b) gm += 2 * g3[a][b] * r.rot[b][k] * r.s[k];
            d_scale_log[k] += gm * r.rot[a][k] * r.s[k];
            gq[a][k] = gm * r.s[k];
          }
        if (r.qlen > 0) {
          const double w = r.q[0], qx = r.q[1], qy = r.q[2], qz = r.q[3];
          double dq[4];
          dq[0] = 2 * (-qz * gq[0][1] + qy * gq[0][2] + qz * gq[1][0] - qx * gq[1][2] -
                       qy * gq[2][0] + qx * gq[2][1]);
          dq[1] = 2 * (qy * gq[0][1] + qz * gq[0][2] + qy * gq[1][0] - 2 * qx * gq[1][1] -
                       w * gq[1][2] + qz * gq[2][0] + w * gq[2][1] - 2 * qx * gq[2][2]);
          dq[2] = 2 * (-2 * qy * gq[0][0] + qx * gq[0][1] + w * gq[0][2] + qx * gq[1][0] +
                       qz * gq[1][2] - w * gq[2][0] + qz * gq[2][1] - 2 * qy * gq[2][2]);
          dq[3] = 2 * (-2 * qz * gq[0][0] - w * gq[0][1] + qx * gq[0][2] + w * gq[1][0] -
                       2 * qz * gq[1][1] + qy * gq[1][2] + qx * gq[2][0] + qy * gq[2][1]);
          const double proj = r.q[0] * dq[0] + r.q[1] * dq[1] + r.q[2] * dq[2] + r.q[3] * dq[3];
          for (int k = 0; k < 4; ++k) g_rot[4 * i + k] = float((dq[k] - r.q[k] * proj) / r.qlen);
        }
      }
      for (int k = 0; k < 3; ++k) g_scales[3 * i + k] = float(d_scale_log[k]);
    }
  });
}

} // namespace rlx::splat::detail
