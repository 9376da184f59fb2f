// tests/test_vmath.cpp -- the accuracy of the JIT's f32 exp, log, tanh, sigmoid and erf
// (jit/llvm/vmath.cpp) against the interpreter, which computes them in double with libm and
// rounds once (the correctly rounded result but for rare ties): a sweep over every binade,
// subnormals and special values included, with the bounds vmath.cpp states.
#include <rlx/all.hpp>

#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <limits>
#include <string>
#include <vector>

#include <unistd.h>

using rlx::Tensor;

namespace {

/// Floats ordered as integers, so the distance between two finite floats is their ulp distance.
int64_t ordered(float x) {
  auto b = std::bit_cast<int32_t>(x);
  return b < 0 ? int64_t(std::numeric_limits<int32_t>::min()) - b : int64_t(b);
}

/// The ulp distance, or -1 when the two differ in kind (NaN vs number, inf vs finite).
int64_t ulps(float got, float want) {
  if (std::isnan(got) || std::isnan(want)) return std::isnan(got) && std::isnan(want) ? 0 : -1;
  if (std::isinf(got) || std::isinf(want)) return got == want ? 0 : -1;
  int64_t d = ordered(got) - ordered(want);
  return d < 0 ? -d : d;
}

/// Every 257th bit pattern of both signs (all binades, subnormals included), plus the special
/// values and the edges of each function's ranges.
std::vector<float> sweep() {
  std::vector<float> xs;
  for (uint32_t bits = 0; bits < 0x7f800000u; bits += 257) {
    xs.push_back(std::bit_cast<float>(bits));
    xs.push_back(-std::bit_cast<float>(bits));
  }
  const float inf = std::numeric_limits<float>::infinity();
  for (float x : {0.0f,
                  -0.0f,
                  inf,
                  -inf,
                  std::numeric_limits<float>::quiet_NaN(),
                  1.0f,
                  -1.0f,
                  88.72283935546875f,
                  88.7228394f,
                  -87.33654f,
                  -103.972084f,
                  -103.97209f,
                  0.625f,
                  -0.625f,
                  0.62499994f,
                  9.0f,
                  0x1p-126f,
                  0x1p-149f,
                  std::numeric_limits<float>::max(),
                  0.70710677f,
                  0.70710683f})
    xs.push_back(x);
  return xs;
}

struct Result {
  int64_t worst = 0;
  float worst_x = 0, worst_got = 0, worst_want = 0;
  int64_t kind_mismatches = 0;
  std::string first_mismatch;
};

/// `scalar`: evaluate f(x) together with atan(x), in the same fused kernel: atan has no vector
/// implementation, so that kernel is scalar code (the form row kernels and the loop vectorizer
/// use) instead of explicit vectors.
Result compare(const std::function<Tensor(const Tensor&)>& f, const std::vector<float>& xs,
               bool scalar) {
  Tensor x = Tensor::from_vector(xs, {int64_t(xs.size())});
  rlx::set_default_backend(rlx::Backend::Interp);
  std::vector<float> want = f(x).to_vector<float>();
  rlx::set_default_backend(rlx::Backend::Jit);
  Tensor y = f(x);
  if (scalar) {
    Tensor other = rlx::atan(x);
    rlx::eval(y, other);
  }
  std::vector<float> got = y.to_vector<float>();
  Result r;
  for (std::size_t i = 0; i < xs.size(); ++i) {
    int64_t d = ulps(got[i], want[i]);
    if (d < 0) {
      if (r.kind_mismatches++ == 0)
        r.first_mismatch = "x = " + std::to_string(xs[i]) + ": got " + std::to_string(got[i]) +
                           ", want " + std::to_string(want[i]);
    } else if (d > r.worst) {
      r.worst = d;
      r.worst_x = xs[i];
      r.worst_got = got[i];
      r.worst_want = want[i];
    }
  }
  return r;
}

void check_bound(const char* name, const std::function<Tensor(const Tensor&)>& f, int64_t bound) {
  REQUIRE(rlx::backend_available(rlx::Backend::Jit));
  for (bool scalar : {false, true}) {
    Result r = compare(f, sweep(), scalar);
    std::string what = std::string(name) + (scalar ? " (scalar code)" : " (vector code)");
    INFO(what, ": worst ", r.worst, " ulp at x = ", r.worst_x, " (got ", r.worst_got, ", want ",
         r.worst_want, ")");
    INFO(r.first_mismatch);
    CHECK(r.kind_mismatches == 0);
    CHECK(r.worst <= bound);
    MESSAGE(what, ": at most ", r.worst, " ulp from the interpreter (bound ", bound, ")");
  }
}

} // namespace

TEST_CASE("vmath: f32 exp is within 1 ulp of the correctly rounded result") {
  check_bound("exp", [](const Tensor& x) { return rlx::exp(x); }, 1);
}

TEST_CASE("vmath: f32 log is within 1 ulp of the correctly rounded result") {
  check_bound("log", [](const Tensor& x) { return rlx::log(x); }, 1);
}

TEST_CASE("vmath: f32 tanh is within 2 ulp of the correctly rounded result") {
  check_bound("tanh", [](const Tensor& x) { return rlx::tanh(x); }, 2);
}

TEST_CASE("vmath: f32 sigmoid is within 2 ulp of the correctly rounded result") {
  check_bound("sigmoid", [](const Tensor& x) { return rlx::sigmoid(x); }, 2);
}

TEST_CASE("vmath: f32 erf is within 2 ulp of the correctly rounded result") {
  check_bound("erf", [](const Tensor& x) { return rlx::erf(x); }, 2);
}

TEST_CASE("vmath: f32 sin is within 1 ulp of the correctly rounded result") {
  check_bound("sin", [](const Tensor& x) { return rlx::sin(x); }, 1);
}

TEST_CASE("vmath: f32 cos is within 1 ulp of the correctly rounded result") {
  check_bound("cos", [](const Tensor& x) { return rlx::cos(x); }, 1);
}

TEST_CASE("vmath: tanh times sigmoid is within 5 ulp of the interpreter's product") {
  // The product of the two quotients takes one division (combine_quotients): three roundings
  // (two products, one division) on top of the functions' own errors. The factors' errors add
  // (2 + 2 ulp), and an ulp of a factor at the bottom of its binade is worth up to two of a
  // product at the top of its own. Measured: 5 ulp at x = -0.0736, the same worst case as
  // with two divisions and a rounded product (5 ulp at x = -0.0719).
  check_bound(
      "tanh(0.5x+0.1)*sigmoid(x)",
      [](const Tensor& x) { return rlx::tanh(x * 0.5f + 0.1f) * rlx::sigmoid(x); }, 5);
}

TEST_CASE("vmath: a product of tanh and sigmoid compiles to one division") {
  REQUIRE(rlx::backend_available(rlx::Backend::Jit));
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("rlx_vmath_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  rlx::DebugOptions saved = rlx::debug_options();
  std::string saved_cache = rlx::disk_cache_dir();
  rlx::set_disk_cache_dir("off");
  rlx::clear_cache();
  rlx::set_debug_options({.dump = "llvm", .dump_dir = dir.string()});
  rlx::set_default_backend(rlx::Backend::Jit);
  Tensor x = Tensor::from_vector(std::vector<float>(100, 0.25f), {100});
  // tanh * sigmoid: one division; tanh * tanh of one value is left alone (the quotient has two
  // uses), as is a quotient times anything else.
  // (The intermediate tensors die inside the lambda, so the kernel stores only the result.)
  Tensor y = [&] { return rlx::tanh(x * 0.5f + 0.1f) * rlx::sigmoid(x) + x * x; }();
  rlx::eval(y);
  rlx::set_debug_options(saved);
  rlx::set_disk_cache_dir(saved_cache.empty() ? "off" : saved_cache);
  std::string ir;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().string().ends_with(".opt.ll")) {
      std::ifstream in(e.path());
      ir += std::string(std::istreambuf_iterator<char>(in), {});
    }
  fs::remove_all(dir);
  REQUIRE(ir.find("define void @rlx_") != std::string::npos);
  std::size_t divisions = 0;
  for (std::size_t at = ir.find("fdiv "); at != std::string::npos; at = ir.find("fdiv ", at + 1))
    ++divisions;
  // The kernel's body exists once (jit/llvm/lower_elementwise.cpp), so one fdiv in the text.
  CHECK(divisions == 1);
}

TEST_CASE("vmath: the ulp measure counts neighbours and tells kinds apart") {
  CHECK(ulps(1.0f, std::nextafter(1.0f, 2.0f)) == 1);
  CHECK(ulps(0.0f, -0.0f) == 0);
  CHECK(ulps(0x1p-149f, -0x1p-149f) == 2);
  CHECK(ulps(std::numeric_limits<float>::infinity(), std::numeric_limits<float>::max()) == -1);
  CHECK(ulps(std::numeric_limits<float>::quiet_NaN(), 1.0f) == -1);
}
