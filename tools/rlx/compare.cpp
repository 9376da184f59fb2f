// tools/rlx/compare.cpp -- `rlx compare A.npy B.npy`: numpy.allclose for .npy files (for tests).
#include "args.hpp"
#include "commands.hpp"

#include <rlx/error.hpp>
#include <rlx/io/npy.hpp>

#include <algorithm>
#include <cmath>
#include <complex>
#include <iostream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

namespace rlx::cli {

namespace {

constexpr OptionSpec kCompareOptions[] = {
    {"--help", false, false},
    {"--rtol", true, false},
    {"--atol", true, false},
};

/// The difference of element i, |a - b|, and whether it is within atol + rtol * |b|. NaN equals
/// NaN (numpy's equal_nan) and an infinity equals only itself.
struct ElementDiff {
  double error = 0;
  bool close = true;
};

ElementDiff diff_at(const Buffer& a, const Buffer& b, int64_t i, double rtol, double atol) {
  ir::DType t = a.dtype();
  if (ir::is_int(t) || ir::is_bool(t)) {
    double err = std::fabs(double(a.get_i64(i)) - double(b.get_i64(i)));
    return {err, err <= atol + rtol * std::fabs(double(b.get_i64(i)))};
  }
  std::complex<double> x, y;
  if (ir::is_complex(t)) {
    x = a.get_c64(i);
    y = b.get_c64(i);
  } else {
    x = a.get_f64(i);
    y = b.get_f64(i);
  }
  bool x_nan = std::isnan(x.real()) || std::isnan(x.imag());
  bool y_nan = std::isnan(y.real()) || std::isnan(y.imag());
  if (x_nan || y_nan)
    return {x_nan && y_nan ? 0.0 : std::numeric_limits<double>::infinity(), x_nan && y_nan};
  if (x == y) return {0.0, true}; // equal values, infinities included
  double err = std::abs(x - y);
  if (std::isnan(err)) err = std::numeric_limits<double>::infinity(); // inf - inf
  return {err, err <= atol + rtol * std::abs(y)};
}

/// "[1, 2]": the row-major multi-index of flat index i.
std::string index_str(const ir::Shape& shape, int64_t i) {
  std::vector<int64_t> sizes = shape.sizes();
  std::vector<int64_t> idx(sizes.size());
  for (std::size_t k = sizes.size(); k-- > 0;) {
    idx[k] = sizes[k] ? i % sizes[k] : 0;
    i = sizes[k] ? i / sizes[k] : 0;
  }
  std::string out = "[";
  for (std::size_t k = 0; k < idx.size(); ++k) out += (k ? ", " : "") + std::to_string(idx[k]);
  return out + "]";
}

std::string value_str(const Buffer& b, int64_t i) {
  ir::DType t = b.dtype();
  if (ir::is_int(t) || ir::is_bool(t)) return std::to_string(b.get_i64(i));
  std::ostringstream os;
  os.precision(9);
  if (ir::is_complex(t))
    os << b.get_c64(i);
  else
    os << b.get_f64(i);
  return os.str();
}

} // namespace

int compare_command(std::span<const std::string> args) {
  ParsedArgs a = parse_args(args, kCompareOptions);
  if (a.has("--help")) {
    std::cout << command_usage("compare");
    return 0;
  }
  if (a.positional.size() != 2)
    throw UsageError("expected two .npy files, got " + std::to_string(a.positional.size()));
  double rtol = a.has("--rtol") ? parse_tolerance("--rtol", *a.value("--rtol")) : 1e-5;
  double atol = a.has("--atol") ? parse_tolerance("--atol", *a.value("--atol")) : 1e-8;
  const std::string& path_a = a.positional[0];
  const std::string& path_b = a.positional[1];
  Buffer x = io::load_npy(path_a);
  Buffer y = io::load_npy(path_b);

  std::string both = path_a + " and " + path_b;
  if (x.shape() != y.shape()) {
    std::cerr << "rlx: compare: " << both << " differ: " << path_a << " is "
              << ir::short_str(x.shape()) << ", " << path_b << " is " << ir::short_str(y.shape())
              << "\n";
    return 1;
  }
  double max_error = 0, worst_error = 0;
  int64_t worst = -1, bad = 0; // worst: the out-of-tolerance element with the largest error
  for (int64_t i = 0; i < x.numel(); ++i) {
    ElementDiff d = diff_at(x, y, i, rtol, atol);
    max_error = std::max(max_error, d.error);
    if (d.close) continue;
    ++bad;
    if (worst < 0 || d.error > worst_error) {
      worst_error = d.error;
      worst = i;
    }
  }
  std::ostringstream tol;
  tol << "rtol " << rtol << ", atol " << atol;
  if (bad == 0) {
    std::cout << both << " are close: " << x.numel() << " elements, max abs error " << max_error
              << " (" << tol.str() << ")\n";
    return 0;
  }
  std::cerr << "rlx: compare: " << both << " differ: " << bad << " of " << x.numel()
            << " elements out of tolerance (" << tol.str() << "); max abs error " << max_error
            << "; worst at " << index_str(x.shape(), worst) << ": " << value_str(x, worst) << " vs "
            << value_str(y, worst) << "\n";
  return 1;
}

} // namespace rlx::cli
