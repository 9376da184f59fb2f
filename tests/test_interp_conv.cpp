// tests/test_interp_conv.cpp -- convolution, im2col and pooling kernels against hand-derived
// values, naive references with other loop orders, and the conv/conv-transpose adjoint identity.
#include "support/check_error.hpp"

#include <rlx/interp.hpp>
#include <rlx/ir/infer.hpp>

#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

using namespace rlx;
using namespace rlx::ir;
using rlx::Buffer;

namespace {

using Vec = std::vector<double>;
const double kNaN = std::numeric_limits<double>::quiet_NaN();

Buffer make(DType t, std::vector<int64_t> dims, const Vec& v) {
  return Buffer::from_f64(Shape::of(dims, t), v);
}
Buffer f64(std::vector<int64_t> dims, const Vec& v) { return make(DType::F64, dims, v); }

/// Runs one op on fed inputs "x0", "x1", ... through a graph; the node's shape comes from the
/// shape rule (tests state the expected sizes themselves where they matter).
Buffer run_op(const Op& op, const std::vector<Buffer>& operands) {
  Graph g("conv_test");
  std::vector<NodeId> ids;
  std::vector<Shape> shapes;
  interp::Feed feed;
  for (std::size_t i = 0; i < operands.size(); ++i) {
    std::string name = "x" + std::to_string(i);
    ids.push_back(g.input(name, operands[i].shape()));
    shapes.push_back(operands[i].shape());
    feed.emplace(name, operands[i]);
  }
  g.set_outputs({g.add_node(op, ids, infer_shape(op, shapes).value())});
  return interp::run(g, feed)[0];
}

std::vector<int64_t> dims_of(const Buffer& b) { return b.shape().sizes(); }

/// Exact comparison (NaN equals NaN); reports the first mismatch.
void check_values(const Buffer& b, const Vec& want) {
  Vec got = b.to_f64();
  REQUIRE(got.size() == want.size());
  std::size_t bad = got.size();
  for (std::size_t i = 0; i < got.size() && bad == got.size(); ++i)
    if (!(got[i] == want[i] || (std::isnan(got[i]) && std::isnan(want[i])))) bad = i;
  INFO("first mismatch at flat index " << bad << ": got " << (bad < got.size() ? got[bad] : 0)
                                       << ", want " << (bad < got.size() ? want[bad] : 0));
  CHECK(bad == got.size());
}

/// Deterministic small integers in [-3, 3] (as doubles): every sum below is exact in f32 and
/// f64, so kernels and references may add in different orders and still agree exactly.
Vec random_ints(int64_t count, uint64_t seed) {
  Vec v(static_cast<std::size_t>(count));
  uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
  for (double& x : v) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    x = double(int64_t((s >> 33) % 7) - 3);
  }
  return v;
}

int64_t prod(const std::array<int64_t, 3>& a) { return a[0] * a[1] * a[2]; }

/// A convolution problem in 3 spatial axes; 1-D and 2-D problems use size-1 trailing axes with
/// kernel 1, stride 1, padding 0, dilation 1.
struct Geo {
  int64_t batch = 1, c_in = 1, c_out = 1, groups = 1;
  std::array<int64_t, 3> in{1, 1, 1}, k{1, 1, 1}, s{1, 1, 1}, p{0, 0, 0}, d{1, 1, 1};
  std::array<int64_t, 3> op{0, 0, 0}; // output_padding (transposed only)

  std::array<int64_t, 3> conv_out() const {
    std::array<int64_t, 3> o{};
    for (int i = 0; i < 3; ++i) o[i] = (in[i] + 2 * p[i] - d[i] * (k[i] - 1) - 1) / s[i] + 1;
    return o;
  }
  std::array<int64_t, 3> transposed_out() const {
    std::array<int64_t, 3> o{};
    for (int i = 0; i < 3; ++i)
      o[i] = (in[i] - 1) * s[i] - 2 * p[i] + d[i] * (k[i] - 1) + op[i] + 1;
    return o;
  }
};

/// Reference conv: scatter each input element into every output it reaches
/// (o = (i + p - k*d) / s when that divides exactly).
Vec conv_ref_scatter(const Geo& g, const Vec& x, const Vec& w) {
  auto out = g.conv_out();
  const int64_t cig = g.c_in / g.groups, cog = g.c_out / g.groups;
  Vec y(std::size_t(g.batch * g.c_out * prod(out)), 0.0);
  for (int64_t b = 0; b < g.batch; ++b)
    for (int64_t ic = 0; ic < g.c_in; ++ic)
      for (int64_t i0 = 0; i0 < g.in[0]; ++i0)
        for (int64_t i1 = 0; i1 < g.in[1]; ++i1)
          for (int64_t i2 = 0; i2 < g.in[2]; ++i2) {
            double v =
                x[std::size_t((((b * g.c_in + ic) * g.in[0] + i0) * g.in[1] + i1) * g.in[2] + i2)];
            int64_t grp = ic / cig, icl = ic % cig;
            for (int64_t ocl = 0; ocl < cog; ++ocl)
              for (int64_t k0 = 0; k0 < g.k[0]; ++k0)
                for (int64_t k1 = 0; k1 < g.k[1]; ++k1)
                  for (int64_t k2 = 0; k2 < g.k[2]; ++k2) {
                    std::array<int64_t, 3> i{i0, i1, i2}, kk{k0, k1, k2}, o{};
                    bool ok = true;
                    for (int a = 0; a < 3 && ok; ++a) {
                      int64_t t = i[a] + g.p[a] - kk[a] * g.d[a];
                      ok = t >= 0 && t % g.s[a] == 0 && t / g.s[a] < out[a];
                      o[a] = ok ? t / g.s[a] : 0;
                    }
                    if (!ok) continue;
                    int64_t oc = grp * cog + ocl;
                    double wv = w[std::size_t(
                        (((oc * cig + icl) * g.k[0] + k0) * g.k[1] + k1) * g.k[2] + k2)];
                    y[std::size_t((((b * g.c_out + oc) * out[0] + o[0]) * out[1] + o[1]) * out[2] +
                                  o[2])] += v * wv;
                  }
          }
  return y;
}

/// Reference transposed conv: gather, for each output element, the inputs i with
/// i*s - p + k*d == o (weight [C_in, C_out/groups, k...]).
Vec conv_transpose_ref_gather(const Geo& g, const Vec& x, const Vec& w) {
  auto out = g.transposed_out();
  const int64_t cig = g.c_in / g.groups, cog = g.c_out / g.groups;
  Vec y(std::size_t(g.batch * g.c_out * prod(out)), 0.0);
  for (int64_t b = 0; b < g.batch; ++b)
    for (int64_t oc = 0; oc < g.c_out; ++oc)
      for (int64_t o0 = 0; o0 < out[0]; ++o0)
        for (int64_t o1 = 0; o1 < out[1]; ++o1)
          for (int64_t o2 = 0; o2 < out[2]; ++o2) {
            double acc = 0;
            int64_t grp = oc / cog, ocl = oc % cog;
            for (int64_t icl = 0; icl < cig; ++icl)
              for (int64_t k0 = 0; k0 < g.k[0]; ++k0)
                for (int64_t k1 = 0; k1 < g.k[1]; ++k1)
                  for (int64_t k2 = 0; k2 < g.k[2]; ++k2) {
                    std::array<int64_t, 3> o{o0, o1, o2}, kk{k0, k1, k2}, i{};
                    bool ok = true;
                    for (int a = 0; a < 3 && ok; ++a) {
                      int64_t t = o[a] + g.p[a] - kk[a] * g.d[a];
                      ok = t >= 0 && t % g.s[a] == 0 && t / g.s[a] < g.in[a];
                      i[a] = ok ? t / g.s[a] : 0;
                    }
                    if (!ok) continue;
                    int64_t ic = grp * cig + icl;
                    acc += x[std::size_t((((b * g.c_in + ic) * g.in[0] + i[0]) * g.in[1] + i[1]) *
                                             g.in[2] +
                                         i[2])] *
                           w[std::size_t((((ic * cog + ocl) * g.k[0] + k0) * g.k[1] + k1) * g.k[2] +
                                         k2)];
                  }
            y[std::size_t((((b * g.c_out + oc) * out[0] + o0) * out[1] + o1) * out[2] + o2)] = acc;
          }
  return y;
}

double dot(const Vec& a, const Vec& b) {
  REQUIRE(a.size() == b.size());
  double s = 0;
  for (std::size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

Op conv2d_op(const Geo& g) {
  return Op(OpKind::Conv2d,
            Conv2dAttrs{
                {g.k[0], g.k[1]}, {g.s[0], g.s[1]}, {g.p[0], g.p[1]}, {g.d[0], g.d[1]}, g.groups});
}
Op conv3d_op(const Geo& g) { return Op(OpKind::Conv3d, Conv3dAttrs{g.s, g.p, g.d, g.groups}); }
Op conv_transpose2d_op(const Geo& g) {
  return Op(OpKind::ConvTranspose2d, ConvTranspose2dAttrs{{g.k[0], g.k[1]},
                                                          {g.s[0], g.s[1]},
                                                          {g.p[0], g.p[1]},
                                                          {g.d[0], g.d[1]},
                                                          {g.op[0], g.op[1]},
                                                          g.groups});
}
Op conv_transpose3d_op(const Geo& g) {
  return Op(OpKind::ConvTranspose3d, ConvTranspose3dAttrs{g.s, g.p, g.d, g.op, g.groups});
}
Op conv_transpose1d_op(const Geo& g) {
  return Op(OpKind::ConvTranspose1d,
            ConvTranspose1dAttrs{g.k[0], g.s[0], g.p[0], g.d[0], g.op[0], g.groups});
}

/// NC + the first `rank` spatial sizes.
std::vector<int64_t> nc_dims(int64_t a, int64_t b, const std::array<int64_t, 3>& sp, int rank) {
  std::vector<int64_t> d{a, b};
  for (int i = 0; i < rank; ++i) d.push_back(sp[std::size_t(i)]);
  return d;
}

/// conv2d (rank 2) or conv3d (rank 3) of random data vs the scatter reference, in dtype t.
void check_conv_against_ref(const Geo& g, int rank, DType t, uint64_t seed) {
  INFO("rank " << rank << " groups " << g.groups << " dtype " << dtype_name(t));
  Vec x = random_ints(g.batch * g.c_in * prod(g.in), seed);
  Vec w = random_ints(g.c_out * (g.c_in / g.groups) * prod(g.k), seed + 1);
  Buffer xb = make(t, nc_dims(g.batch, g.c_in, g.in, rank), x);
  Buffer wb = make(t, nc_dims(g.c_out, g.c_in / g.groups, g.k, rank), w);
  Buffer y = run_op(rank == 2 ? conv2d_op(g) : conv3d_op(g), {xb, wb});
  CHECK(dims_of(y) == nc_dims(g.batch, g.c_out, g.conv_out(), rank));
  CHECK(y.dtype() == t);
  check_values(y, conv_ref_scatter(g, x, w));
}

/// A transposed conv of spatial rank 1..3 of random data vs the gather reference.
void check_transpose_against_ref(const Geo& g, int rank, DType t, uint64_t seed) {
  INFO("rank " << rank << " groups " << g.groups << " dtype " << dtype_name(t));
  Vec x = random_ints(g.batch * g.c_in * prod(g.in), seed);
  Vec w = random_ints(g.c_in * (g.c_out / g.groups) * prod(g.k), seed + 1);
  Buffer xb = make(t, nc_dims(g.batch, g.c_in, g.in, rank), x);
  Buffer wb = make(t, nc_dims(g.c_in, g.c_out / g.groups, g.k, rank), w);
  Op op = rank == 1   ? conv_transpose1d_op(g)
          : rank == 2 ? conv_transpose2d_op(g)
                      : conv_transpose3d_op(g);
  Buffer y = run_op(op, {xb, wb});
  CHECK(dims_of(y) == nc_dims(g.batch, g.c_out, g.transposed_out(), rank));
  CHECK(y.dtype() == t);
  check_values(y, conv_transpose_ref_gather(g, x, w));
}

/// <conv(x), y> == <x, conv_transpose(y)> with one weight: the transposed op is the adjoint
/// (input gradient) of the direct one. `g` describes the direct conv; output_padding is chosen
/// so that the transposed output has x's spatial size.
void check_adjoint(Geo g, int rank, uint64_t seed) {
  INFO("rank " << rank << " groups " << g.groups);
  auto out = g.conv_out();
  Geo t = g; // the transposed conv maps conv's output space back to x's
  t.c_in = g.c_out;
  t.c_out = g.c_in;
  t.in = out;
  for (int a = 0; a < 3; ++a)
    t.op[std::size_t(a)] = (g.in[std::size_t(a)] + 2 * g.p[std::size_t(a)] -
                            g.d[std::size_t(a)] * (g.k[std::size_t(a)] - 1) - 1) %
                           g.s[std::size_t(a)];
  REQUIRE(t.transposed_out() == g.in);
  Vec x = random_ints(g.batch * g.c_in * prod(g.in), seed);
  Vec y = random_ints(g.batch * g.c_out * prod(out), seed + 1);
  Vec w = random_ints(g.c_out * (g.c_in / g.groups) * prod(g.k), seed + 2);
  Buffer wb = f64(nc_dims(g.c_out, g.c_in / g.groups, g.k, rank), w);
  Buffer cx = rank == 1 ? Buffer()
                        : run_op(rank == 2 ? conv2d_op(g) : conv3d_op(g),
                                 {f64(nc_dims(g.batch, g.c_in, g.in, rank), x), wb});
  Op top = rank == 1   ? conv_transpose1d_op(t)
           : rank == 2 ? conv_transpose2d_op(t)
                       : conv_transpose3d_op(t);
  Buffer ty = run_op(top, {f64(nc_dims(g.batch, g.c_out, out, rank), y), wb});
  REQUIRE(ty.numel() == int64_t(x.size()));
  // conv1d is not an op; for rank 1 the direct side comes from the (independent) reference.
  Vec conv_x = rank == 1 ? conv_ref_scatter(g, x, w) : cx.to_f64();
  CHECK(dot(conv_x, y) == dot(x, ty.to_f64()));
  CHECK(dot(x, ty.to_f64()) != 0.0); // the identity is not vacuously 0 == 0
}

Vec iota(int64_t n, double start = 1) {
  Vec v(static_cast<std::size_t>(n));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = start + double(i);
  return v;
}

Op pool_op(OpKind k, Ints2 kernel, Ints2 stride, Ints2 pad) {
  return Op(k, Pool2dAttrs{kernel, stride, pad});
}

/// Reference pooling: per output, walk the padded window and look at each position.
Vec pool_ref(bool is_max, const Vec& x, int64_t planes, int64_t h, int64_t w, Ints2 k, Ints2 s,
             Ints2 p) {
  int64_t ho = (h + 2 * p[0] - k[0]) / s[0] + 1, wo = (w + 2 * p[1] - k[1]) / s[1] + 1;
  Vec y;
  for (int64_t pl = 0; pl < planes; ++pl)
    for (int64_t i = 0; i < ho; ++i)
      for (int64_t j = 0; j < wo; ++j) {
        double best = -INFINITY, sum = 0;
        for (int64_t r = i * s[0] - p[0]; r < i * s[0] - p[0] + k[0]; ++r)
          for (int64_t c = j * s[1] - p[1]; c < j * s[1] - p[1] + k[1]; ++c) {
            if (r < 0 || r >= h || c < 0 || c >= w) continue; // padding: skipped by max, 0 in sum
            double v = x[std::size_t((pl * h + r) * w + c)];
            best = std::max(best, v);
            sum += v;
          }
        y.push_back(is_max ? best : sum / double(k[0] * k[1]));
      }
  return y;
}

} // namespace

// ---------------------------------------------------------------------------------- conv2d

TEST_CASE("interp: conv2d of a 3x3 input with a 2x2 kernel matches the hand-written sums") {
  // x = [[1,2,3],[4,5,6],[7,8,9]], w = [[1,2],[3,4]]
  // out[0,0] = 1*1 + 2*2 + 3*4 + 4*5 = 37     out[0,1] = 1*2 + 2*3 + 3*5 + 4*6 = 47
  // out[1,0] = 1*4 + 2*5 + 3*7 + 4*8 = 67     out[1,1] = 1*5 + 2*6 + 3*8 + 4*9 = 77
  for (DType t : {DType::F64, DType::F32}) {
    Buffer y = run_op(Op(OpKind::Conv2d, Conv2dAttrs{{2, 2}}),
                      {make(t, {1, 1, 3, 3}, iota(9)), make(t, {1, 1, 2, 2}, {1, 2, 3, 4})});
    CHECK(dims_of(y) == std::vector<int64_t>{1, 1, 2, 2});
    CHECK(y.dtype() == t);
    check_values(y, {37, 47, 67, 77});
  }
}

TEST_CASE("interp: conv2d with stride 2 and padding 1 sees zeros outside the input") {
  // Output (3 + 2 - 2)/2 + 1 = 2 per axis; windows cover rows/cols {-1,0} and {1,2}.
  // out[0,0] = w[1,1]*x[0,0] = 4*1 = 4
  // out[0,1] = w[1,0]*x[0,1] + w[1,1]*x[0,2] = 3*2 + 4*3 = 18
  // out[1,0] = w[0,1]*x[1,0] + w[1,1]*x[2,0] = 2*4 + 4*7 = 36
  // out[1,1] = 1*5 + 2*6 + 3*8 + 4*9 = 77
  Buffer y = run_op(Op(OpKind::Conv2d, Conv2dAttrs{{2, 2}, {2, 2}, {1, 1}}),
                    {f64({1, 1, 3, 3}, iota(9)), f64({1, 1, 2, 2}, {1, 2, 3, 4})});
  CHECK(dims_of(y) == std::vector<int64_t>{1, 1, 2, 2});
  check_values(y, {4, 18, 36, 77});
}

TEST_CASE("interp: conv2d padding is zeros, so an infinite weight over padding gives NaN") {
  // x = ones(3x3), w = ones(3x3) but w[0,0] = inf, padding 1 (PyTorch gives the same): an output
  // whose window puts w[0,0] over padding (top row, left column) adds 0 * inf = NaN; the others
  // put it over a 1 and sum to inf.
  for (DType t : {DType::F64, DType::F32}) {
    std::vector<double> w(9, 1.0);
    w[0] = INFINITY;
    Buffer y =
        run_op(Op(OpKind::Conv2d, Conv2dAttrs{{3, 3}, {1, 1}, {1, 1}}),
               {make(t, {1, 1, 3, 3}, std::vector<double>(9, 1.0)), make(t, {1, 1, 3, 3}, w)});
    std::vector<double> v = y.to_f64();
    REQUIRE(v.size() == 9);
    for (int64_t i = 0; i < 3; ++i)
      for (int64_t j = 0; j < 3; ++j) {
        double got = v[std::size_t(i * 3 + j)];
        INFO("out[", i, ",", j, "] = ", got);
        if (i == 0 || j == 0)
          CHECK(std::isnan(got));
        else
          CHECK(got == INFINITY);
      }
  }
  // With finite weights padding adds nothing: the stride-2 case below stays exact.
}

TEST_CASE("interp: conv2d with dilation 2 spreads the 2x2 kernel over the 3x3 corners") {
  // One output: 1*x[0,0] + 2*x[0,2] + 3*x[2,0] + 4*x[2,2] = 1 + 6 + 21 + 36 = 64
  Buffer y = run_op(Op(OpKind::Conv2d, Conv2dAttrs{{2, 2}, {1, 1}, {0, 0}, {2, 2}}),
                    {f64({1, 1, 3, 3}, iota(9)), f64({1, 1, 2, 2}, {1, 2, 3, 4})});
  CHECK(dims_of(y) == std::vector<int64_t>{1, 1, 1, 1});
  check_values(y, {64});
}

TEST_CASE("interp: conv2d with 2 groups keeps each group's channels apart") {
  // x channels c0 = [1, 2], c1 = [3, 4] (1x2 images); 1x1 weights: out0 = 10*c0, out1 = 100*c1.
  Buffer y = run_op(Op(OpKind::Conv2d, Conv2dAttrs{{1, 1}, {1, 1}, {0, 0}, {1, 1}, 2}),
                    {f64({1, 2, 1, 2}, {1, 2, 3, 4}), f64({2, 1, 1, 1}, {10, 100})});
  CHECK(dims_of(y) == std::vector<int64_t>{1, 2, 1, 2});
  check_values(y, {10, 20, 300, 400});
}

TEST_CASE("interp: conv2d on multi-channel batches matches a scatter reference") {
  for (DType t : {DType::F64, DType::F32}) {
    Geo g;
    g.batch = 2, g.c_in = 3, g.c_out = 4, g.in = {5, 6, 1}, g.k = {3, 2, 1};
    check_conv_against_ref(g, 2, t, 1);
    g.s = {2, 3, 1}, g.p = {1, 1, 0};
    check_conv_against_ref(g, 2, t, 2);
    g.d = {2, 2, 1}, g.s = {1, 2, 1}, g.p = {2, 0, 0};
    check_conv_against_ref(g, 2, t, 3);
  }
}

TEST_CASE("interp: conv2d with groups 2 and depthwise groups matches a scatter reference") {
  Geo g;
  g.batch = 2, g.c_in = 4, g.c_out = 6, g.groups = 2, g.in = {5, 4, 1}, g.k = {2, 3, 1};
  g.s = {2, 1, 1}, g.p = {1, 1, 0};
  check_conv_against_ref(g, 2, DType::F64, 10);
  // Depthwise: groups = C_in, channel multiplier 2.
  g.c_in = 3, g.c_out = 6, g.groups = 3, g.d = {2, 1, 1};
  check_conv_against_ref(g, 2, DType::F64, 11);
  check_conv_against_ref(g, 2, DType::F32, 12);
}

TEST_CASE("interp: conv2d accumulates f32 in double and rounds once") {
  // A 1x3 kernel of ones over [1, 2^-24, 2^-24]: in f32 arithmetic 1 + 2^-24 rounds back to 1
  // (tie to even) twice; accumulated in double the sum is 1 + 2^-23, exactly an f32.
  const double e = std::ldexp(1.0, -24);
  Buffer y =
      run_op(Op(OpKind::Conv2d, Conv2dAttrs{{1, 3}}), {make(DType::F32, {1, 1, 1, 3}, {1, e, e}),
                                                       make(DType::F32, {1, 1, 1, 3}, {1, 1, 1})});
  check_values(y, {1 + std::ldexp(1.0, -23)});
}

TEST_CASE("interp: conv2d on integers is exact and saturates to the output dtype") {
  // i32: [[1,2],[3,4]] * [[5,6],[7,8]] = 5 + 12 + 21 + 32 = 70
  Buffer y =
      run_op(Op(OpKind::Conv2d, Conv2dAttrs{{2, 2}}),
             {Buffer::from_i64(Shape({1, 1, 2, 2}, DType::I32), std::vector<int64_t>{1, 2, 3, 4}),
              Buffer::from_i64(Shape({1, 1, 2, 2}, DType::I32), std::vector<int64_t>{5, 6, 7, 8})});
  CHECK(y.dtype() == DType::I32);
  CHECK(y.to_i64() == std::vector<int64_t>{70});
  // i8: 100*1 + 100*1 = 200 and -100*1 - 100*1 = -200 saturate to 127 and -128.
  Buffer z = run_op(
      Op(OpKind::Conv2d, Conv2dAttrs{{1, 2}}),
      {Buffer::from_i64(Shape({2, 1, 1, 2}, DType::I8), std::vector<int64_t>{100, 100, -100, -100}),
       Buffer::from_i64(Shape({1, 1, 1, 2}, DType::I8), std::vector<int64_t>{1, 1})});
  CHECK(z.to_i64() == std::vector<int64_t>{127, -128});
  // i64 accumulates in int64, exact beyond 2^53 and wrapping like element-wise integer math:
  // (2^62 + 1)*1 + 1*1 = 2^62 + 2;  2^62 * 4 + 0 * 0 = 2^64 wraps to 0.
  const int64_t big = int64_t(1) << 62;
  Buffer q = run_op(Op(OpKind::Conv2d, Conv2dAttrs{{1, 2}}),
                    {Buffer::i64({2, 1, 1, 2}, std::vector<int64_t>{big + 1, 1, big, 0}),
                     Buffer::i64({1, 1, 1, 2}, std::vector<int64_t>{1, 1})});
  CHECK(q.to_i64() == std::vector<int64_t>{big + 2, big});
  Buffer r = run_op(Op(OpKind::Conv2d, Conv2dAttrs{{1, 2}}),
                    {Buffer::i64({1, 1, 1, 2}, std::vector<int64_t>{big, 0}),
                     Buffer::i64({1, 1, 1, 2}, std::vector<int64_t>{4, 4})});
  CHECK(r.to_i64() == std::vector<int64_t>{0});
}

TEST_CASE("interp: conv2d equals im2col times the flattened weight") {
  Geo g;
  g.batch = 2, g.c_in = 3, g.c_out = 4, g.in = {6, 5, 1}, g.k = {3, 2, 1};
  g.s = {2, 1, 1}, g.p = {1, 1, 0}, g.d = {1, 2, 1};
  Vec x = random_ints(g.batch * g.c_in * prod(g.in), 20);
  Vec w = random_ints(g.c_out * g.c_in * prod(g.k), 21);
  Buffer xb = f64(nc_dims(g.batch, g.c_in, g.in, 2), x);
  Buffer conv = run_op(conv2d_op(g), {xb, f64(nc_dims(g.c_out, g.c_in, g.k, 2), w)});
  Buffer cols = run_op(Op(OpKind::Im2Col, Im2ColAttrs{{3, 2}, {2, 1}, {1, 1}, {1, 2}}), {xb});
  auto out = g.conv_out();
  const int64_t ho = out[0], wo = out[1], ck = g.c_in * g.k[0] * g.k[1];
  CHECK(dims_of(cols) == std::vector<int64_t>{g.batch * ho * wo, ck});
  // cols [N*Ho*Wo, C*kh*kw] @ w.reshape(C_out, -1)^T gives rows (n, ho, wo) x columns oc;
  // conv is [N, C_out, Ho, Wo].
  Vec c = cols.to_f64(), want(std::size_t(g.batch * g.c_out * ho * wo));
  for (int64_t row = 0; row < g.batch * ho * wo; ++row)
    for (int64_t oc = 0; oc < g.c_out; ++oc) {
      double s = 0;
      for (int64_t j = 0; j < ck; ++j)
        s += c[std::size_t(row * ck + j)] * w[std::size_t(oc * ck + j)];
      int64_t n = row / (ho * wo), pos = row % (ho * wo);
      want[std::size_t((n * g.c_out + oc) * ho * wo + pos)] = s;
    }
  check_values(conv, want);
}

// ---------------------------------------------------------------------------------- im2col

TEST_CASE("interp: im2col lays out windows as rows and (c, ki, kj) as columns") {
  // x: 1x2x2x3, c0 = [[1,2,3],[4,5,6]], c1 = [[7,8,9],[10,11,12]]; kernel 2x2, padding (0, 1):
  // output grid 1 x 4 (cols -1..0, 0..1, 1..2, 2..3); each row is c0 window then c1 window.
  Buffer cols = run_op(Op(OpKind::Im2Col, Im2ColAttrs{{2, 2}, {1, 1}, {0, 1}}),
                       {f64({1, 2, 2, 3}, iota(12))});
  CHECK(dims_of(cols) == std::vector<int64_t>{4, 8});
  check_values(cols, {0, 1, 0, 4, 0, 7, 0,  10,  // window at cols -1, 0
                      1, 2, 4, 5, 7, 8, 10, 11,  // cols 0, 1
                      2, 3, 5, 6, 8, 9, 11, 12,  // cols 1, 2
                      3, 0, 6, 0, 9, 0, 12, 0}); // cols 2, 3
}

TEST_CASE("interp: im2col with stride, dilation and batches matches the per-element formula") {
  const int64_t n = 2, c = 2, h = 5, w = 4, kh = 2, kw = 3, sh = 2, sw = 1, ph = 1, pw = 2, dh = 2,
                dw = 1;
  const int64_t ho = (h + 2 * ph - dh * (kh - 1) - 1) / sh + 1; // (5+2-2-1)/2+1 = 3
  const int64_t wo = (w + 2 * pw - dw * (kw - 1) - 1) / sw + 1; // (4+4-2-1)/1+1 = 6
  Vec x = random_ints(n * c * h * w, 30);
  for (DType t : {DType::F64, DType::F32, DType::I64}) {
    Buffer cols = run_op(Op(OpKind::Im2Col, Im2ColAttrs{{kh, kw}, {sh, sw}, {ph, pw}, {dh, dw}}),
                         {make(t, {n, c, h, w}, x)});
    CHECK(dims_of(cols) == std::vector<int64_t>{n * ho * wo, c * kh * kw});
    CHECK(cols.dtype() == t);
    Vec want;
    for (int64_t row = 0; row < n * ho * wo; ++row)
      for (int64_t col = 0; col < c * kh * kw; ++col) {
        int64_t b = row / (ho * wo), i = row / wo % ho, j = row % wo;
        int64_t ch = col / (kh * kw), ki = col / kw % kh, kj = col % kw;
        int64_t r = i * sh - ph + ki * dh, q = j * sw - pw + kj * dw;
        bool inside = r >= 0 && r < h && q >= 0 && q < w;
        want.push_back(inside ? x[std::size_t(((b * c + ch) * h + r) * w + q)] : 0.0);
      }
    check_values(cols, want);
  }
}

TEST_CASE("interp: im2col copies complex elements whole") {
  Buffer x(Shape({1, 1, 1, 2}, DType::C64));
  x.set_c64(0, {1, -1});
  x.set_c64(1, {2, 5});
  Buffer cols = run_op(Op(OpKind::Im2Col, Im2ColAttrs{{1, 2}, {1, 1}, {0, 1}}), {x});
  CHECK(dims_of(cols) == std::vector<int64_t>{3, 2});
  CHECK(cols.get_c64(0) == std::complex<float>(0, 0));
  CHECK(cols.get_c64(1) == std::complex<float>(1, -1));
  CHECK(cols.get_c64(2) == std::complex<float>(1, -1));
  CHECK(cols.get_c64(3) == std::complex<float>(2, 5));
  CHECK(cols.get_c64(4) == std::complex<float>(2, 5));
  CHECK(cols.get_c64(5) == std::complex<float>(0, 0));
}

// ---------------------------------------------------------------------------------- conv3d

TEST_CASE("interp: conv3d of a 2x2x2 cube with a 2x2x2 kernel is the weighted sum") {
  // x = 1..8, w = 1..8: sum of i*i for i = 1..8 = 204.
  Buffer y = run_op(Op(OpKind::Conv3d, Conv3dAttrs{}),
                    {f64({1, 1, 2, 2, 2}, iota(8)), f64({1, 1, 2, 2, 2}, iota(8))});
  CHECK(dims_of(y) == std::vector<int64_t>{1, 1, 1, 1, 1});
  check_values(y, {204});
}

TEST_CASE("interp: conv3d with stride, padding, dilation and groups matches a scatter reference") {
  Geo g;
  g.batch = 2, g.c_in = 2, g.c_out = 3, g.in = {4, 3, 5}, g.k = {2, 2, 3};
  check_conv_against_ref(g, 3, DType::F64, 40);
  g.s = {2, 1, 2}, g.p = {1, 0, 1}, g.d = {1, 2, 1};
  check_conv_against_ref(g, 3, DType::F32, 41);
  g.c_in = 4, g.c_out = 2, g.groups = 2;
  check_conv_against_ref(g, 3, DType::F64, 42);
}

// ---------------------------------------------------------------------------------- transposed

TEST_CASE("interp: conv_transpose2d with stride 2 stamps a scaled kernel per input pixel") {
  // x = [[1,2],[3,4]], w = [[1,2],[3,4]]: each x[i,j] adds x[i,j]*w at rows 2i.., cols 2j..
  Buffer y = run_op(Op(OpKind::ConvTranspose2d, ConvTranspose2dAttrs{{2, 2}, {2, 2}}),
                    {f64({1, 1, 2, 2}, {1, 2, 3, 4}), f64({1, 1, 2, 2}, {1, 2, 3, 4})});
  CHECK(dims_of(y) == std::vector<int64_t>{1, 1, 4, 4});
  check_values(y, {1, 2, 2, 4, //
                   3, 4, 6, 8, //
                   3, 6, 4, 8, //
                   9, 12, 12, 16});
}

TEST_CASE("interp: conv_transpose2d with stride 1 overlaps the stamps") {
  // Output 3x3, the full correlation: out[1,1] = 1*4 + 2*3 + 3*2 + 4*1 = 20, etc.
  Buffer y = run_op(Op(OpKind::ConvTranspose2d, ConvTranspose2dAttrs{{2, 2}}),
                    {f64({1, 1, 2, 2}, {1, 2, 3, 4}), f64({1, 1, 2, 2}, {1, 2, 3, 4})});
  CHECK(dims_of(y) == std::vector<int64_t>{1, 1, 3, 3});
  check_values(y, {1, 4, 4, 6, 20, 16, 9, 24, 16});
}

TEST_CASE("interp: conv_transpose2d padding crops and output_padding extends the far edge") {
  // The stride-2 stamp above is 4x4; padding 1 drops one row/col on each side -> 2x2.
  Buffer y = run_op(Op(OpKind::ConvTranspose2d, ConvTranspose2dAttrs{{2, 2}, {2, 2}, {1, 1}}),
                    {f64({1, 1, 2, 2}, {1, 2, 3, 4}), f64({1, 1, 2, 2}, {1, 2, 3, 4})});
  CHECK(dims_of(y) == std::vector<int64_t>{1, 1, 2, 2});
  check_values(y, {4, 6, 6, 4});
  // output_padding 1 keeps one more row and col at the end: rows/cols 1..3 of the 4x4.
  Buffer z = run_op(
      Op(OpKind::ConvTranspose2d, ConvTranspose2dAttrs{{2, 2}, {2, 2}, {1, 1}, {1, 1}, {1, 1}}),
      {f64({1, 1, 2, 2}, {1, 2, 3, 4}), f64({1, 1, 2, 2}, {1, 2, 3, 4})});
  CHECK(dims_of(z) == std::vector<int64_t>{1, 1, 3, 3});
  check_values(z, {4, 6, 8, 6, 4, 8, 12, 12, 16});
  // Without padding, output_padding adds a row/col that no input reaches: zeros.
  Buffer e = run_op(
      Op(OpKind::ConvTranspose2d, ConvTranspose2dAttrs{{2, 2}, {2, 2}, {0, 0}, {1, 1}, {1, 0}}),
      {f64({1, 1, 2, 2}, {1, 2, 3, 4}), f64({1, 1, 2, 2}, {1, 2, 3, 4})});
  CHECK(dims_of(e) == std::vector<int64_t>{1, 1, 5, 4});
  check_values(e, {1, 2, 2, 4, 3, 4, 6, 8, 3, 6, 4, 8, 9, 12, 12, 16, 0, 0, 0, 0});
}

TEST_CASE("interp: conv_transpose2d with groups uses the [C_in, C_out/groups, kh, kw] weight") {
  // Two groups, one input channel each, two outputs per group, 1x1 kernels:
  // out0 = 1*x0, out1 = 2*x0, out2 = 3*x1, out3 = 4*x1; x0 = [5], x1 = [7].
  Buffer y = run_op(
      Op(OpKind::ConvTranspose2d, ConvTranspose2dAttrs{{1, 1}, {1, 1}, {0, 0}, {1, 1}, {0, 0}, 2}),
      {f64({1, 2, 1, 1}, {5, 7}), f64({2, 2, 1, 1}, {1, 2, 3, 4})});
  CHECK(dims_of(y) == std::vector<int64_t>{1, 4, 1, 1});
  check_values(y, {5, 10, 21, 28});
}

TEST_CASE("interp: conv_transpose1d with stride 2 and with dilation 2 by hand") {
  // x = [1, 2, 3], w = [1, 10]. Stride 2: length (3-1)*2 + 1 + 1 = 6, no overlap.
  Buffer y = run_op(Op(OpKind::ConvTranspose1d, ConvTranspose1dAttrs{2, 2}),
                    {f64({1, 1, 3}, {1, 2, 3}), f64({1, 1, 2}, {1, 10})});
  CHECK(dims_of(y) == std::vector<int64_t>{1, 1, 6});
  check_values(y, {1, 10, 2, 20, 3, 30});
  // Dilation 2, stride 1: length 2 + 2 + 1 = 5; x[i] adds w0 at i and w1 at i + 2:
  // [1, 2, 3 + 10, 20, 30].
  Buffer z = run_op(Op(OpKind::ConvTranspose1d, ConvTranspose1dAttrs{2, 1, 0, 2}),
                    {f64({1, 1, 3}, {1, 2, 3}), f64({1, 1, 2}, {1, 10})});
  CHECK(dims_of(z) == std::vector<int64_t>{1, 1, 5});
  check_values(z, {1, 2, 13, 20, 30});
}

TEST_CASE("interp: conv_transpose1d/2d/3d match a gather reference") {
  for (DType t : {DType::F64, DType::F32}) {
    Geo g1;
    g1.batch = 2, g1.c_in = 4, g1.c_out = 6, g1.groups = 2, g1.in = {5, 1, 1}, g1.k = {3, 1, 1};
    g1.s = {2, 1, 1}, g1.p = {1, 0, 0}, g1.d = {2, 1, 1}, g1.op = {1, 0, 0};
    check_transpose_against_ref(g1, 1, t, 50);

    Geo g2;
    g2.batch = 2, g2.c_in = 3, g2.c_out = 2, g2.in = {3, 4, 1}, g2.k = {3, 2, 1};
    g2.s = {2, 3, 1}, g2.p = {1, 0, 0}, g2.op = {1, 2, 0};
    check_transpose_against_ref(g2, 2, t, 51);
    g2.c_in = 4, g2.c_out = 4, g2.groups = 4, g2.d = {2, 1, 1}, g2.op = {0, 1, 0}; // depthwise
    check_transpose_against_ref(g2, 2, t, 52);

    Geo g3;
    g3.batch = 1, g3.c_in = 2, g3.c_out = 4, g3.groups = 2, g3.in = {2, 3, 2}, g3.k = {2, 2, 3};
    g3.s = {2, 1, 2}, g3.p = {0, 1, 1}, g3.d = {1, 2, 1}, g3.op = {1, 0, 1};
    check_transpose_against_ref(g3, 3, t, 53);
  }
}

TEST_CASE("interp: the transposed convolutions are the adjoints of the direct ones") {
  Geo g1;
  g1.batch = 2, g1.c_in = 4, g1.c_out = 2, g1.groups = 2, g1.in = {9, 1, 1}, g1.k = {3, 1, 1};
  g1.s = {2, 1, 1}, g1.p = {1, 0, 0}, g1.d = {2, 1, 1};
  check_adjoint(g1, 1, 60);

  Geo g2;
  g2.batch = 2, g2.c_in = 3, g2.c_out = 4, g2.in = {7, 6, 1}, g2.k = {3, 2, 1};
  g2.s = {2, 3, 1}, g2.p = {1, 1, 0}, g2.d = {1, 2, 1};
  check_adjoint(g2, 2, 61);
  g2.c_in = 4, g2.c_out = 8, g2.groups = 4; // depthwise, multiplier 2
  check_adjoint(g2, 2, 62);

  Geo g3;
  g3.batch = 1, g3.c_in = 2, g3.c_out = 4, g3.groups = 2, g3.in = {5, 4, 6}, g3.k = {2, 2, 3};
  g3.s = {2, 1, 2}, g3.p = {1, 0, 1}, g3.d = {1, 2, 1};
  check_adjoint(g3, 3, 63);
}

// ---------------------------------------------------------------------------------- pooling

TEST_CASE("interp: max_pool2d with padding ignores the padded positions") {
  // x = -[[1,2,3],[4,5,6],[7,8,9]], kernel 2, stride 2, padding 1: windows rows/cols {-1,0},
  // {1,2}. Padding with zeros would give 0 in the first three windows.
  // out = [max(-1), max(-2,-3), max(-4,-7), max(-5,-6,-8,-9)] = [-1, -2, -4, -5]
  Vec neg = iota(9);
  for (double& v : neg) v = -v;
  Buffer y = run_op(pool_op(OpKind::MaxPool2d, {2, 2}, {2, 2}, {1, 1}), {f64({1, 1, 3, 3}, neg)});
  CHECK(dims_of(y) == std::vector<int64_t>{1, 1, 2, 2});
  check_values(y, {-1, -2, -4, -5});
}

TEST_CASE("interp: avg_pool2d with padding counts the padded zeros in the divisor") {
  // x = [[1..3],[4..6],[7..9]], same windows as above, divisor always 2*2 = 4:
  // [1/4, (2+3)/4, (4+7)/4, (5+6+8+9)/4] = [0.25, 1.25, 2.75, 7]
  for (DType t : {DType::F64, DType::F32}) {
    Buffer y = run_op(pool_op(OpKind::AvgPool2d, {2, 2}, {2, 2}, {1, 1}),
                      {make(t, {1, 1, 3, 3}, iota(9))});
    CHECK(dims_of(y) == std::vector<int64_t>{1, 1, 2, 2});
    check_values(y, {0.25, 1.25, 2.75, 7});
  }
}

TEST_CASE("interp: pooling over odd sizes with stride and padding matches a window walk") {
  const int64_t n = 2, c = 3, h = 5, w = 7;
  Vec x = random_ints(n * c * h * w, 70);
  struct Case {
    Ints2 k, s, p;
  };
  for (Case cs : {Case{{3, 3}, {2, 2}, {1, 1}}, Case{{3, 2}, {1, 3}, {1, 0}},
                  Case{{2, 4}, {3, 2}, {0, 2}}, Case{{5, 1}, {1, 1}, {2, 0}}}) {
    for (DType t : {DType::F64, DType::F32}) {
      INFO("kernel " << cs.k[0] << "x" << cs.k[1] << " dtype " << dtype_name(t));
      Buffer xb = make(t, {n, c, h, w}, x);
      Buffer mx = run_op(pool_op(OpKind::MaxPool2d, cs.k, cs.s, cs.p), {xb});
      Buffer av = run_op(pool_op(OpKind::AvgPool2d, cs.k, cs.s, cs.p), {xb});
      int64_t ho = (h + 2 * cs.p[0] - cs.k[0]) / cs.s[0] + 1;
      int64_t wo = (w + 2 * cs.p[1] - cs.k[1]) / cs.s[1] + 1;
      CHECK(dims_of(mx) == std::vector<int64_t>{n, c, ho, wo});
      CHECK(dims_of(av) == std::vector<int64_t>{n, c, ho, wo});
      check_values(mx, pool_ref(true, x, n * c, h, w, cs.k, cs.s, cs.p));
      // The average rounds once from double: compare against the reference rounded to t.
      Vec want = pool_ref(false, x, n * c, h, w, cs.k, cs.s, cs.p);
      check_values(av, make(t, dims_of(av), want).to_f64());
    }
  }
}

TEST_CASE("interp: max_pool2d propagates NaN and handles infinities") {
  // Windows of 2 over [NaN, 1, -inf, 2]: [NaN, 1] -> NaN, [-inf, 2] -> 2; also [1, NaN] -> NaN.
  Buffer y = run_op(pool_op(OpKind::MaxPool2d, {1, 2}, {1, 2}, {0, 0}),
                    {f64({1, 1, 1, 6}, {kNaN, 1, -INFINITY, 2, 1, kNaN})});
  check_values(y, {kNaN, 2, kNaN});
}

TEST_CASE("interp: pooling on integers is exact; avg truncates toward zero") {
  // max over [1, -5, 7, 3] = 7; avg = 6/4 = 1.5 -> 1; avg of [-1, -2, -3, -4] = -2.5 -> -2.
  Buffer x = Buffer::from_i64(Shape({2, 1, 2, 2}, DType::I32),
                              std::vector<int64_t>{1, -5, 7, 3, -1, -2, -3, -4});
  Buffer mx = run_op(pool_op(OpKind::MaxPool2d, {2, 2}, {1, 1}, {0, 0}), {x});
  Buffer av = run_op(pool_op(OpKind::AvgPool2d, {2, 2}, {1, 1}, {0, 0}), {x});
  CHECK(mx.dtype() == DType::I32);
  CHECK(mx.to_i64() == std::vector<int64_t>{7, -1});
  CHECK(av.to_i64() == std::vector<int64_t>{1, -2});
  // i64 values beyond 2^53 stay exact (no trip through double).
  const int64_t big = (int64_t(1) << 62) + 1;
  Buffer b = Buffer::from_i64(Shape({1, 1, 1, 2}, DType::I64), std::vector<int64_t>{big, big});
  CHECK(run_op(pool_op(OpKind::AvgPool2d, {1, 2}, {1, 1}, {0, 0}), {b}).to_i64() ==
        std::vector<int64_t>{big});
  CHECK(run_op(pool_op(OpKind::MaxPool2d, {1, 2}, {1, 1}, {0, 0}), {b}).to_i64() ==
        std::vector<int64_t>{big});
}

// ---------------------------------------------------------------------------------- edges

TEST_CASE("interp: the conv kernels handle an empty batch") {
  Buffer y = run_op(Op(OpKind::Conv2d, Conv2dAttrs{{2, 2}}),
                    {f64({0, 1, 3, 3}, {}), f64({2, 1, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8})});
  CHECK(dims_of(y) == std::vector<int64_t>{0, 2, 2, 2});
  Buffer t = run_op(Op(OpKind::ConvTranspose1d, ConvTranspose1dAttrs{2}),
                    {f64({0, 1, 3}, {}), f64({1, 1, 2}, {1, 2})});
  CHECK(dims_of(t) == std::vector<int64_t>{0, 1, 4});
}

TEST_CASE("interp: conv and max_pool2d reject complex operands naming the op") {
  Buffer x(Shape({1, 1, 2, 2}, DType::C64)), w(Shape({1, 1, 1, 1}, DType::C64));
  test::check_error([&] { run_op(Op(OpKind::Conv2d, Conv2dAttrs{}), {x, w}); },
                    ErrorKind::Unsupported, "conv2d");
  test::check_error([&] { run_op(Op(OpKind::ConvTranspose2d, ConvTranspose2dAttrs{}), {x, w}); },
                    ErrorKind::Unsupported, "conv_transpose2d");
  test::check_error([&] { run_op(pool_op(OpKind::MaxPool2d, {1, 1}, {1, 1}, {0, 0}), {x}); },
                    ErrorKind::Unsupported, "max_pool2d");
}

TEST_CASE("interp: eval_node rejects operands that do not fit the node instead of reading past") {
  // A node built for a 3x3 input, evaluated on a 2x2 one.
  Graph g("mismatch");
  auto xi = g.input("x", Shape({1, 1, 3, 3}, DType::F64));
  auto wi = g.input("w", Shape({1, 1, 2, 2}, DType::F64));
  NodeId c = g.add_node(Op(OpKind::Conv2d, Conv2dAttrs{{2, 2}}), {xi, wi},
                        Shape({1, 1, 2, 2}, DType::F64));
  Buffer small = f64({1, 1, 2, 2}, {1, 2, 3, 4});
  std::array<const Buffer*, 2> ops{&small, &small};
  test::check_error([&] { interp::eval_node(g.node(c), ops); }, ErrorKind::Runtime, "conv2d");
}
