// tests/test_packed_grad.cpp -- derivatives through packed quantized weights (QLoRA): the VJP of
// dequant_matmul with respect to x is its adjoint form g . W, decoded from the packed bytes, and
// its JVP the same product on the tangent. References are computed here in double from the
// numpy-dequantized weights of tests/fixtures/make_packed.py (compared bit for bit with rlx's
// codecs in test_packed.cpp), or by central differences in f64 on rlx::quant::unpack's values;
// both backends run every check.
#include "support/backends.hpp"
#include "support/check_error.hpp"
#include "support/packed_cases.hpp"

#include <rlx/grad.hpp>
#include <rlx/ir/graph.hpp>
#include <rlx/ir/text.hpp>
#include <rlx/quant_packed.hpp>
#include <rlx/runtime.hpp>
#include <rlx/settings.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <tuple>
#include <vector>

namespace {

using rlx::DType;
using rlx::ErrorKind;
using rlx::Tensor;
using rlx::quant::QuantFormat;
using rlx::quant::QuantScheme;
using rlx::test::check_error;
using rlx::test::on_both_backends;

rlx::test::Fixture case_of(const std::string& name) { return {"packed", name}; }

/// Values in [-1, 1] on a grid of 1/1000, from std::mt19937 (whose sequence the standard fixes).
std::vector<float> uniform(int64_t count, uint32_t seed) {
  std::mt19937 gen(seed);
  std::vector<float> v(static_cast<std::size_t>(count));
  for (float& e : v) e = float(int64_t(gen() % 2001) - 1000) / 1000.0f;
  return v;
}

std::vector<double> doubles(const Tensor& t) { return t.to_vector<double>(); }

/// got [m, k] against g [m, n] . w [n, k] in double. The JIT sums the n products of each value
/// in f32: at most (n + 2) 2^-24 sum_j |g w| away (the standard bound gamma_n, one more rounding
/// for each product); the interpreter accumulates in double, well inside it.
void expect_adjoint(const Tensor& got, const std::vector<float>& g, const Tensor& w, int64_t m,
                    const std::string& what) {
  const int64_t n = w.size(0), k = w.size(1);
  REQUIRE(got.sizes() == std::vector<int64_t>{m, k});
  const std::vector<double> gv = doubles(got), wv = doubles(w);
  const double unit = std::ldexp(1.0, -24) * double(n + 2);
  int64_t wrong = 0;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t c = 0; c < k; ++c) {
      double want = 0, bound = 0;
      for (int64_t j = 0; j < n; ++j) {
        const double p = double(g[std::size_t(i * n + j)]) * wv[std::size_t(j * k + c)];
        want += p;
        bound += std::abs(p);
      }
      const double d = std::abs(gv[std::size_t(i * k + c)] - want);
      if (!(d <= unit * bound + 1e-30)) {
        if (++wrong <= 3)
          MESSAGE(what << "[" << i << ", " << c << "]: " << gv[std::size_t(i * k + c)] << " vs "
                       << want);
      }
    }
  CHECK_MESSAGE(wrong == 0, what << ": " << wrong << " values outside the bound");
}

/// d/dx sum(f(x) * g) = g . W for a product f(x) = x . W^T, checked for x and the decode row x1.
template <class F>
void check_x_gradient(const rlx::test::Fixture& f, const std::vector<std::string>& xs, F product,
                      const std::string& what) {
  const Tensor w = f("unpacked");
  for (const std::string& xn : xs) {
    const Tensor x = f(xn);
    const int64_t m = x.size(0), n = w.size(0);
    const std::vector<float> g = uniform(m * n, uint32_t(m * 31 + n));
    const Tensor gt = Tensor::from_vector(g, {m, n});
    // g is an argument, not a captured constant, so the gradient graph cannot be folded away at
    // compile time and each backend runs its own adjoint kernel.
    auto loss = [&](const Tensor& xx, const Tensor& gg) { return rlx::sum(product(xx) * gg); };
    expect_adjoint(rlx::grad(loss)(x, gt), g, w, m, what + " (" + xn + ")");
    if (rlx::default_backend() == rlx::Backend::Jit) { // the JIT's own kernel computed it
      const auto run = rlx::last_run();
      REQUIRE(run);
      CHECK_MESSAGE(run->describe().find("dequant_matmul") != std::string::npos, run->describe());
    }
  }
}

} // namespace

TEST_CASE("the gradient of dequant_matmul with respect to x is g . W decoded from the packed "
          "weight, for every format, the split forms and NVFP4, m = 3 and m = 1, on both "
          "backends") {
  on_both_backends([] {
    for (const auto& [name, scheme] : rlx::test::packed_cases()) {
      CAPTURE(name);
      const auto f = case_of(name);
      const Tensor packed = f("packed");
      check_x_gradient(
          f, {"x", "x1"},
          [&](const Tensor& x) { return rlx::quant::dequant_matmul(x, packed, scheme); }, name);
    }
    for (const auto& [name, scheme] : rlx::test::split_cases()) {
      CAPTURE(name);
      const auto f = case_of(name);
      const Tensor w_q = f("w_q"), scale = f("scale"), zp = f("zp");
      check_x_gradient(
          f, {"x"},
          [&](const Tensor& x) { return rlx::quant::dequant_matmul(x, w_q, scale, zp, scheme); },
          name);
    }
    const auto f = case_of("split_nvfp4");
    const Tensor w_q = f("w_q"), s8 = f("scales8"), glob = f("glob");
    check_x_gradient(
        f, {"x"},
        [&](const Tensor& x) { return rlx::quant::dequant_matmul_nvfp4(x, w_q, s8, glob); },
        "split_nvfp4");
  });
}

TEST_CASE("at m = 1 and m = 6 the gradient of a Q4_0 or Q8_0 product is g . W also across many "
          "blocks and rows, on 1 and 2 threads, on both backends") {
  // 47 blocks a row (k = 1504: the JIT's strips of 8, 4, 2 and 1 blocks, its 256-column chunks
  // at m > 1 and a last one of 7 blocks, and more than one task's 1024 columns) and 37 rows (four
  // tiles of 8 and a partial one); m = 6: one group of four rows of y in registers and two single
  // rows. Shapes the fixtures' 3 blocks, 5 rows and m = 3 do not reach. The reference sums
  // rlx::quant::unpack's values (equal to numpy's bit for bit, test_packed.cpp) in double.
  const int64_t n = 37, k = 1504;
  const Tensor w32 = Tensor::from_vector(uniform(n * k, 5), {n, k});
  const int saved = rlx::num_threads();
  for (const int64_t m : {1, 6}) {
    const Tensor x = Tensor::from_vector(uniform(m * k, 6), {m, k});
    const std::vector<float> g = uniform(m * n, 7);
    const Tensor gt = Tensor::from_vector(g, {m, n});
    for (const QuantFormat format : {QuantFormat::Q4_0, QuantFormat::Q8_0}) {
      const QuantScheme scheme = QuantScheme::of(format);
      const Tensor packed = rlx::quant::pack(w32, scheme);
      const Tensor w = rlx::quant::unpack(packed, scheme, k);
      for (int threads : {1, 2}) {
        rlx::set_num_threads(threads);
        on_both_backends([&] {
          auto loss = [&](const Tensor& xx, const Tensor& gg) {
            return rlx::sum(rlx::quant::dequant_matmul(xx, packed, scheme) * gg);
          };
          expect_adjoint(rlx::grad(loss)(x, gt), g, w, m,
                         std::string(format == QuantFormat::Q4_0 ? "Q4_0" : "Q8_0") + " at m = " +
                             std::to_string(m) + " on " + std::to_string(threads) + " threads");
        });
      }
    }
  }
  rlx::set_num_threads(saved);
}

TEST_CASE("forward mode through dequant_matmul is the same product on the tangent") {
  on_both_backends([] {
    for (const char* name : {"Q4_0", "Q6_K"}) {
      CAPTURE(name);
      const auto f = case_of(name);
      const QuantScheme scheme =
          QuantScheme::of(std::string(name) == "Q4_0" ? QuantFormat::Q4_0 : QuantFormat::Q6_K);
      const Tensor packed = f("packed"), x = f("x"), w = f("unpacked");
      const int64_t m = x.size(0), k = x.size(1), n = w.size(0);
      const std::vector<float> t = uniform(m * k, 11);
      auto fn = [&](const Tensor& xx) { return rlx::quant::dequant_matmul(xx, packed, scheme); };
      auto [y, ty] = rlx::jvp(fn, std::tuple{x}, std::tuple{Tensor::from_vector(t, {m, k})});
      // t . W^T in double, within the f32 accumulation bound of k products.
      const std::vector<double> got = doubles(ty), wv = doubles(w);
      REQUIRE(ty.sizes() == std::vector<int64_t>{m, n});
      const double unit = std::ldexp(1.0, -24) * double(k + 2);
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) {
          double want = 0, bound = 0;
          for (int64_t c = 0; c < k; ++c) {
            const double p = double(t[std::size_t(i * k + c)]) * wv[std::size_t(j * k + c)];
            want += p;
            bound += std::abs(p);
          }
          CHECK(std::abs(got[std::size_t(i * n + j)] - want) <= unit * bound + 1e-30);
        }
    }
  });
}

namespace {

/// The QLoRA loss sum((x . W^T + s (x A) B - t)^2) in f64 on the dequantized W [n, k].
struct LoraRef {
  int64_t m, k, n, r;
  double s;
  std::vector<double> w, t;
  double loss(const std::vector<double>& x, const std::vector<double>& a,
              const std::vector<double>& b) const {
    double total = 0;
    for (int64_t i = 0; i < m; ++i) {
      std::vector<double> xa(static_cast<std::size_t>(r), 0.0);
      for (int64_t q = 0; q < r; ++q)
        for (int64_t c = 0; c < k; ++c)
          xa[std::size_t(q)] += x[std::size_t(i * k + c)] * a[std::size_t(c * r + q)];
      for (int64_t j = 0; j < n; ++j) {
        double y = 0;
        for (int64_t c = 0; c < k; ++c) y += x[std::size_t(i * k + c)] * w[std::size_t(j * k + c)];
        for (int64_t q = 0; q < r; ++q) y += s * xa[std::size_t(q)] * b[std::size_t(q * n + j)];
        const double e = y - t[std::size_t(i * n + j)];
        total += e * e;
      }
    }
    return total;
  }
};

/// Central differences of ref.loss along every element of argument `which` (0 x, 1 A, 2 B). The
/// loss is quadratic in each argument, so the quotient is exact up to f64 rounding.
std::vector<double> central_differences(const LoraRef& ref, std::vector<std::vector<double>> args,
                                        std::size_t which) {
  const double h = 1e-2;
  std::vector<double> d(args[which].size());
  for (std::size_t i = 0; i < d.size(); ++i) {
    const double v = args[which][i];
    args[which][i] = v + h;
    const double up = ref.loss(args[0], args[1], args[2]);
    args[which][i] = v - h;
    const double down = ref.loss(args[0], args[1], args[2]);
    args[which][i] = v;
    d[i] = (up - down) / (2 * h);
  }
  return d;
}

std::vector<double> widen(const std::vector<float>& v) { return {v.begin(), v.end()}; }

} // namespace

TEST_CASE("QLoRA: rlx::grad trains low-rank adapters through a frozen Q4_0 or Q4_K base; the "
          "gradients of x, A and B equal central differences in f64 on the dequantized weight, "
          "on both backends") {
  struct Base {
    const char* name;
    QuantScheme scheme;
    int64_t k;
  };
  for (const Base& base : {Base{"Q4_0", QuantScheme::of(QuantFormat::Q4_0), 64},
                           Base{"Q4_K", QuantScheme::of(QuantFormat::Q4_K), 256}}) {
    CAPTURE(base.name);
    const QuantScheme scheme = base.scheme;
    const int64_t k = base.k;
    const int64_t m = 3, n = 8, r = 2;
    const double s = 0.5;
    const std::vector<float> w0 = uniform(n * k, 1), xv = uniform(m * k, 2), av = uniform(k * r, 3),
                             bv = uniform(r * n, 4), tv = uniform(m * n, 5);
    const Tensor packed = rlx::quant::pack(Tensor::from_vector(w0, {n, k}), scheme);
    const LoraRef ref{m, k, n, r, s, doubles(rlx::quant::unpack(packed, scheme, k)), widen(tv)};
    const std::vector<std::vector<double>> args{widen(xv), widen(av), widen(bv)};
    const std::vector<double> fd[3] = {central_differences(ref, args, 0),
                                       central_differences(ref, args, 1),
                                       central_differences(ref, args, 2)};
    const Tensor t = Tensor::from_vector(tv, {m, n});
    auto loss = [&](const Tensor& x, const Tensor& a, const Tensor& b) {
      const Tensor y =
          rlx::quant::dequant_matmul(x, packed, scheme) + rlx::matmul(rlx::matmul(x, a), b) * s;
      return rlx::sum((y - t).square());
    };
    on_both_backends([&] {
      Tensor x = Tensor::from_vector(xv, {m, k}), a = Tensor::from_vector(av, {k, r}),
             b = Tensor::from_vector(bv, {r, n});
      const auto [gx, ga, gb] = rlx::grad(loss, rlx::argnums<0, 1, 2>)(x, a, b);
      const Tensor got[3] = {gx, ga, gb};
      const char* names[3] = {"d/dx", "d/dA", "d/dB"};
      for (int v = 0; v < 3; ++v) {
        // f32 rounding: y carries at most (k + 2) 2^-24 sum |x w| ~ 1e-3 of the residual's
        // scale before it is multiplied back, so each gradient is within 1e-3 of its largest
        // element (a wrong or missing term is off by about that element).
        const std::vector<double> g = doubles(got[v]);
        REQUIRE(g.size() == fd[v].size());
        double top = 0;
        for (double e : fd[v]) top = std::max(top, std::abs(e));
        REQUIRE(top > 1.0);
        int64_t wrong = 0;
        for (std::size_t i = 0; i < g.size(); ++i)
          wrong += !(std::abs(g[i] - fd[v][i]) <= 1e-3 * top);
        CHECK_MESSAGE(wrong == 0, names[v] << ": " << wrong << " of " << g.size() << " elements");
      }
      // Training: steps of gradient descent on A and B alone (W stays packed and frozen), each
      // sized so its first-order decrease is 1% of the loss, lower the loss every time.
      double before = loss(x, a, b).item<float>();
      for (int step = 0; step < 3; ++step) {
        const auto [da, db] = rlx::grad(loss, rlx::argnums<1, 2>)(x, a, b);
        const double norm2 =
            rlx::sum(da.square()).item<float>() + rlx::sum(db.square()).item<float>();
        const double lr = 0.01 * before / norm2;
        a = a - da * lr;
        b = b - db * lr;
        const double after = loss(x, a, b).item<float>();
        CHECK(after < before);
        before = after;
      }
    });
  }
}

TEST_CASE("a derivative with respect to dequant_matmul's weight is an rlx::Error saying it is a "
          "frozen quantized base, naming the caller's line") {
  const auto f = case_of("split_int8");
  const Tensor x = f("x"), w_q = f("w_q"), zp = f("zp");
  auto loss = [&](const Tensor& scale) {
    return rlx::sum(rlx::quant::dequant_matmul(x, w_q, scale, zp, QuantScheme::int8_block(32)));
  };
  const std::string msg = check_error([&] { (void)rlx::grad(loss)(f("scale")).to_vector<float>(); },
                                      ErrorKind::Unsupported, "frozen base");
  CHECK(msg.find("dequant_matmul") != std::string::npos);
  CHECK(msg.find("test_packed_grad.cpp") != std::string::npos);
}

TEST_CASE("dequant_matmul's adjoint form: its shape comes from the weight, it prints and parses "
          "back, and a g whose n differs from W's rows is a shape error") {
  const QuantScheme q4k = QuantScheme::of(QuantFormat::Q4_K);
  rlx::ir::Graph g;
  const int64_t rb = rlx::quant::row_bytes(q4k, 512);
  auto gin = g.input("g", rlx::ir::Shape({2, 3}, DType::F32));
  auto w = g.input("w", rlx::ir::Shape({3, rb}, DType::U8));
  auto y = g.add_inferred(
      rlx::ir::Op(rlx::ir::OpKind::DequantMatMul, rlx::ir::DequantMatMulAttrs{q4k, true}),
      {gin, w});
  CHECK(g.shape(y) == rlx::ir::Shape({2, 512}, DType::F32));
  g.set_outputs({y});
  const std::string text = rlx::ir::to_text(g);
  CAPTURE(text);
  CHECK(text.find("adjoint=true") != std::string::npos);
  CHECK(rlx::ir::parse_text(text) == g);
  auto g4 = g.input("g4", rlx::ir::Shape({2, 4}, DType::F32));
  check_error(
      [&] {
        (void)g.add_inferred(
            rlx::ir::Op(rlx::ir::OpKind::DequantMatMul, rlx::ir::DequantMatMulAttrs{q4k, true}),
            {g4, w});
      },
      ErrorKind::Shape, "adjoint");
  auto ragged = g.input("ragged", rlx::ir::Shape({3, rb - 1}, DType::U8));
  check_error(
      [&] {
        (void)g.add_inferred(
            rlx::ir::Op(rlx::ir::OpKind::DequantMatMul, rlx::ir::DequantMatMulAttrs{q4k, true}),
            {gin, ragged});
      },
      ErrorKind::Shape, "blocks");
}
