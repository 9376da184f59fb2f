// tests/test_packed.cpp -- packed quantized weights (rlx::quant, the IR's dequant_matmul) and the
// GGUF reader (rlx::gguf), against tests/fixtures/make_packed.py: a numpy transcription of each
// block format written from ggml's, OCP's and NVFP4's descriptions. Packing and unpacking are
// compared bit for bit; products on both backends against numpy's in float64, within the bound
// of f32 accumulation.
#include "support/backends.hpp"
#include "support/check_error.hpp"
#include "support/packed_cases.hpp"

#include "quant/packed_formats.hpp"

#include <rlx/gguf.hpp>
#include <rlx/ir/graph.hpp>
#include <rlx/ir/json.hpp>
#include <rlx/ir/text.hpp>
#include <rlx/quant_packed.hpp>
#include <rlx/settings.hpp>

#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <utility>
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

using rlx::test::PackedCase;
const std::vector<PackedCase>& kCases = rlx::test::packed_cases();

template <class T> std::vector<T> values(const Tensor& t) { return t.to_vector<T>(); }

/// Bitwise equality of two f32 tensors.
void expect_same_bits(const Tensor& got, const Tensor& want, const std::string& what) {
  REQUIRE(got.sizes() == want.sizes());
  std::vector<float> g = values<float>(got), w = values<float>(want);
  int64_t diffs = 0;
  for (std::size_t i = 0; i < w.size(); ++i) diffs += std::memcmp(&g[i], &w[i], 4) != 0;
  CHECK_MESSAGE(diffs == 0, what << ": " << diffs << " values differ");
}

/// got [m, n] f32 against numpy's float64 product. The dequantized weights are exact (the
/// unpack test), so the only error is the f32 accumulation of k products: at most about
/// (k + 1) * 2^-24 * sum |x| |w| (the standard bound gamma_k, with one more rounding for the
/// products); the interpreter accumulates in double and is well inside it.
void expect_product(const Tensor& got, const Tensor& want, const Tensor& abs, int64_t k,
                    const std::string& what) {
  REQUIRE(got.sizes() == want.sizes());
  std::vector<double> g = values<double>(got), w = values<double>(want), a = values<double>(abs);
  const double unit = std::ldexp(1.0, -24) * double(k + 2);
  for (std::size_t i = 0; i < w.size(); ++i)
    CHECK_MESSAGE(std::abs(g[i] - w[i]) <= unit * a[i] + 1e-30,
                  what << "[" << i << "]: " << g[i] << " vs " << w[i]);
}

TEST_CASE("pack writes numpy's bytes and unpack gives numpy's values, bit for bit, for every "
          "format") {
  for (const PackedCase& c : kCases) {
    CAPTURE(c.name);
    auto f = case_of(c.name);
    Tensor w = f("w"), packed = f("packed");
    Tensor mine = rlx::quant::pack(w, c.scheme);
    REQUIRE(mine.sizes() == packed.sizes());
    CHECK(values<uint8_t>(mine) == values<uint8_t>(packed));
    CHECK(rlx::quant::row_bytes(c.scheme, w.size(1)) == packed.size(1));
    expect_same_bits(rlx::quant::unpack(packed, c.scheme, w.size(1)), f("unpacked"), c.name);
  }
}

TEST_CASE("dequant_matmul of packed weights equals numpy's product on both backends, also for "
          "the m = 1 decode shape and k not a multiple of 256") {
  on_both_backends([] {
    for (const PackedCase& c : kCases) {
      CAPTURE(c.name);
      auto f = case_of(c.name);
      Tensor packed = f("packed");
      const int64_t k = f("x").size(1);
      expect_product(rlx::quant::dequant_matmul(f("x"), packed, c.scheme), f("want"), f("abs"), k,
                     c.name);
      expect_product(rlx::quant::dequant_matmul(f("x1"), packed, c.scheme), f("want1"), f("abs1"),
                     k, c.name + " (m = 1)");
    }
  });
}

TEST_CASE("at m = 1 a Q4_0 or Q8_0 product equals the sum in double across many blocks and rows, "
          "on 1 and 2 threads, on both backends") {
  // k = 1504 (47 blocks: five of the JIT's 8-block scale groups, a tail of 7, an odd count for
  // its two accumulators) and k = 8480 (265 blocks: more than one 128-block scale run); 37 and 5
  // rows (odd; fewer than the rows a task takes). The fixtures' 3 blocks reach none of these. The
  // reference sums rlx::quant::unpack's values (numpy's, bit for bit: the first test) in double.
  const int saved = rlx::num_threads();
  for (const auto [n, k] : {std::pair<int64_t, int64_t>{37, 1504}, {5, 8480}}) {
    std::mt19937 gen(uint32_t(n * 131 + k));
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    std::vector<float> w32(static_cast<std::size_t>(n * k)), xv(static_cast<std::size_t>(k));
    for (float& v : w32) v = dist(gen);
    for (float& v : xv) v = dist(gen);
    const Tensor x = Tensor::from_vector(xv, {1, k});
    for (const QuantFormat format : {QuantFormat::Q4_0, QuantFormat::Q8_0}) {
      const QuantScheme scheme = QuantScheme::of(format);
      const Tensor packed = rlx::quant::pack(Tensor::from_vector(w32, {n, k}), scheme);
      const std::vector<double> w = values<double>(rlx::quant::unpack(packed, scheme, k));
      std::vector<double> want(static_cast<std::size_t>(n)), abs(static_cast<std::size_t>(n));
      for (int64_t j = 0; j < n; ++j)
        for (int64_t c = 0; c < k; ++c) {
          const double p = double(xv[std::size_t(c)]) * w[std::size_t(j * k + c)];
          want[std::size_t(j)] += p;
          abs[std::size_t(j)] += std::abs(p);
        }
      for (int threads : {1, 2}) {
        rlx::set_num_threads(threads);
        on_both_backends([&] {
          const std::string what = std::string(format == QuantFormat::Q4_0 ? "Q4_0" : "Q8_0") +
                                   " k = " + std::to_string(k) + " on " + std::to_string(threads) +
                                   " threads";
          expect_product(rlx::quant::dequant_matmul(x, packed, scheme),
                         Tensor::from_vector(want, {1, n}), Tensor::from_vector(abs, {1, n}), k,
                         what);
        });
      }
    }
  }
  rlx::set_num_threads(saved);
}

TEST_CASE("the split forms (Int8Block, Int8BlockAsym, Int4Block, FP8 with row scales, NVFP4 "
          "with a global scale) equal numpy's product on both backends") {
  on_both_backends([&] {
    for (const auto& [name, scheme] : rlx::test::split_cases()) {
      CAPTURE(name);
      auto f = case_of(name);
      Tensor x = f("x");
      expect_product(rlx::quant::dequant_matmul(x, f("w_q"), f("scale"), f("zp"), scheme),
                     f("want"), f("abs"), x.size(1), name);
    }
    auto f = case_of("split_nvfp4");
    expect_product(rlx::quant::dequant_matmul_nvfp4(f("x"), f("w_q"), f("scales8"), f("glob")),
                   f("want"), f("abs"), f("x").size(1), "split_nvfp4");
  });
}

TEST_CASE("FP8 E4M3/E5M2 and E2M1 codes decode to the OCP values and round to nearest even with "
          "saturation, as numpy's value tables do") {
  auto f = case_of("codes");
  std::vector<float> e4 = values<float>(f("e4m3_values")), e5 = values<float>(f("e5m2_values"));
  for (int c = 0; c < 256; ++c) {
    CAPTURE(c);
    const float a = rlx::quant::fp8_e4m3_to_f32(uint8_t(c)),
                b = rlx::quant::fp8_e5m2_to_f32(uint8_t(c));
    CHECK(((a == e4[std::size_t(c)]) || (std::isnan(a) && std::isnan(e4[std::size_t(c)]))));
    CHECK(((b == e5[std::size_t(c)]) || (std::isnan(b) && std::isnan(e5[std::size_t(c)]))));
  }
  std::vector<float> probes = values<float>(f("probes"));
  std::vector<uint8_t> c4 = values<uint8_t>(f("e4m3_codes")), c5 = values<uint8_t>(f("e5m2_codes")),
                       c2 = values<uint8_t>(f("e2m1_codes"));
  for (std::size_t i = 0; i < probes.size(); ++i) {
    CAPTURE(probes[i]);
    CHECK(int(rlx::quant::f32_to_fp8_e4m3(probes[i])) == int(c4[i]));
    CHECK(int(rlx::quant::f32_to_fp8_e5m2(probes[i])) == int(c5[i]));
    CHECK(int(rlx::quant::f32_to_fp4_e2m1(probes[i])) == int(c2[i]));
  }
}

TEST_CASE("a k that is not a whole number of blocks is an rlx::Error naming the function, the "
          "format and the caller's line") {
  Tensor w = rlx::ones({2, 64}, DType::F32);
  std::string msg =
      check_error([&] { (void)rlx::quant::pack(w, QuantScheme::of(QuantFormat::Q4_K)); },
                  ErrorKind::Shape, "rlx::quant::pack");
  CHECK(msg.find("Q4_K") != std::string::npos);
  CHECK(msg.find("test_packed.cpp") != std::string::npos);
  Tensor packed = rlx::quant::pack(w, QuantScheme::of(QuantFormat::Q8_0));
  check_error(
      [&] {
        (void)rlx::quant::dequant_matmul(rlx::ones({1, 40}, DType::F32), packed,
                                         QuantScheme::of(QuantFormat::Q8_0));
      },
      ErrorKind::Shape, "dequant_matmul");
  check_error([&] { (void)rlx::quant::pack(w, QuantScheme::int4_block(7)); }, ErrorKind::Value,
              "even");
}

TEST_CASE("dequant_matmul's scheme prints and parses back in the text IR and JSON") {
  for (QuantScheme s : {QuantScheme::int8_block(32), QuantScheme::of(QuantFormat::Q4_K)}) {
    rlx::ir::Graph g;
    const int64_t k = 64;
    auto x = g.input("x", rlx::ir::Shape({2, k}, DType::F32));
    auto w = g.input("w", rlx::ir::Shape({3, rlx::quant::row_bytes(s, 256)}, DType::U8));
    auto xk = g.input("xk", rlx::ir::Shape({2, 256}, DType::F32));
    (void)x;
    auto y = g.dequant_matmul_packed(xk, w, s, rlx::ir::Shape({2, 3}, DType::F32));
    g.set_outputs({y});
    const std::string text = rlx::ir::to_text(g);
    CAPTURE(text);
    CHECK(text.find(s.has_block_size() ? "[Int8Block, 32]" : "Q4_K") != std::string::npos);
    CHECK(rlx::ir::parse_text(text) == g);
    CHECK(rlx::ir::from_json(rlx::ir::to_json(g)) == g);
  }
}

std::string gguf_path() { return std::string(RLX_SOURCE_DIR) + "/tests/fixtures/packed/tiny.gguf"; }

TEST_CASE("the GGUF file loads with its metadata of every type, its tensor infos and its values") {
  rlx::gguf::File f = rlx::gguf::load(gguf_path());
  CHECK(f.version == 3);
  CHECK(f.alignment == 64);
  using VT = rlx::gguf::ValueType;
  REQUIRE(f.find("general.architecture"));
  CHECK(f.find("general.architecture")->s == "rlx-test");
  CHECK(f.find("test.u8")->u == 200);
  CHECK(f.find("test.i8")->i == -100);
  CHECK(f.find("test.u16")->u == 60000);
  CHECK(f.find("test.i16")->i == -30000);
  CHECK(f.find("test.u32")->u == 4000000000u);
  CHECK(f.find("test.i32")->i == -2000000000);
  CHECK(f.find("test.f32")->f == 0.15625);
  CHECK(f.find("test.bool")->b);
  CHECK(f.find("test.string")->s == "h\xc3\xa9llo");
  CHECK(f.find("test.u64")->u == (uint64_t(1) << 63) + 5);
  CHECK(f.find("test.i64")->i == -(int64_t(1) << 62));
  CHECK(f.find("test.f64")->f == -2.5e-300);
  const rlx::gguf::Value* a = f.find("test.array_i32");
  REQUIRE(a);
  CHECK(a->type == VT::Array);
  CHECK(a->array_type == VT::I32);
  REQUIRE(a->array().size() == 3);
  CHECK(a->array()[1].i == -2);
  CHECK(f.find("test.array_str")->array()[1].s == "bc");
  CHECK(f.find("test.array_nested")->array()[0].array()[1].u == 2);
  CHECK(f.find("test.array_nested")->array()[1].array().empty());
  CHECK(f.find("no.such.key") == nullptr);

  REQUIRE(f.tensors.size() == 6);
  const auto& q4 = f.info("blk.0.q4_0");
  CHECK(q4.dims == std::vector<int64_t>{64, 3});
  CHECK(q4.type == 2);
  REQUIRE(q4.scheme);
  CHECK(*q4.scheme == QuantScheme::of(QuantFormat::Q4_0));
  auto want = case_of("gguf");
  for (const auto& [name, stem] :
       std::vector<std::pair<std::string, std::string>>{{"blk.0.q4_0", "blk_0_q4_0"},
                                                        {"blk.0.q8_0", "blk_0_q8_0"},
                                                        {"blk.0.q4_k", "blk_0_q4_k"},
                                                        {"blk.0.q6_k", "blk_0_q6_k"}}) {
    CAPTURE(name);
    const auto& info = f.info(name);
    Tensor packed = f.tensor(name);
    CHECK(packed.dtype() == DType::U8);
    CHECK(packed.shares_memory(f.bytes(info).data())); // 64-byte aligned: no copy
    expect_same_bits(rlx::quant::unpack(packed, *info.scheme, info.dims[0]), want(stem), name);
  }
  expect_same_bits(f.tensor("norm.f32"), want("norm_f32"), "norm.f32");
  Tensor h = f.tensor("bias.f16");
  CHECK(h.dtype() == DType::F16);
  expect_same_bits(h.astype(DType::F32), want("bias_f16"), "bias.f16");
  check_error([&] { (void)f.tensor("missing"); }, ErrorKind::Value, "missing");
  // A tensor outlives its File: the mapping stays alive with it.
  Tensor kept = rlx::gguf::load(gguf_path()).tensor("norm.f32");
  expect_same_bits(kept, want("norm_f32"), "norm.f32 after the File is gone");
}

std::vector<std::byte> file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<char> c((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::byte> b(c.size());
  std::memcpy(b.data(), c.data(), c.size());
  return b;
}

/// parse either succeeds or throws rlx::Error (ErrorKind::Io); anything else fails the test
/// (and a crash or an out-of-bounds read fails it under ASan).
bool parses(const std::vector<std::byte>& bytes) {
  auto copy = std::make_shared<std::vector<std::byte>>(bytes);
  try {
    rlx::gguf::File f = rlx::gguf::parse(*copy, copy, "corrupt");
    for (const auto& t : f.tensors) (void)f.bytes(t);
    return true;
  } catch (const rlx::Error& e) {
    CHECK(e.kind() == ErrorKind::Io);
    return false;
  }
}

TEST_CASE("corrupted GGUF files (every truncation, flipped bytes, huge counts, bad magic, "
          "offsets out of range) give rlx::Error and never crash") {
  const std::vector<std::byte> good = file_bytes(gguf_path());
  REQUIRE(good.size() > 1000);
  CHECK(parses(good));
  // Every cut before the last tensor's last byte is an error; cuts in the padding after it
  // leave every tensor whole and parse.
  const rlx::gguf::File whole = rlx::gguf::parse(good, nullptr, "good");
  std::size_t end = 0;
  for (const auto& t : whole.tensors)
    end = std::max<std::size_t>(end, whole.data_offset + t.offset + t.bytes);
  int wrong = 0;
  for (std::size_t n = 0; n < good.size(); ++n)
    wrong += parses(std::vector<std::byte>(good.begin(), good.begin() + std::ptrdiff_t(n))) !=
             (n >= end);
  CHECK(wrong == 0);
  std::mt19937 gen(1234);
  for (int trial = 0; trial < 3000; ++trial) {
    std::vector<std::byte> b = good;
    const int flips = 1 + trial % 4;
    for (int i = 0; i < flips; ++i)
      b[gen() % 1024] = std::byte(gen() & 0xFF); // the header and infos live in the first KB
    (void)parses(b);
  }
  auto with = [&](std::size_t at, uint64_t v, std::size_t width) {
    std::vector<std::byte> b = good;
    std::memcpy(b.data() + at, &v, width);
    return b;
  };
  std::string msg;
  try {
    (void)rlx::gguf::parse(with(0, 0x12345678, 4), nullptr, "bad");
  } catch (const rlx::Error& e) {
    msg = e.what();
  }
  CHECK(msg.find("bad magic") != std::string::npos);
  CHECK_FALSE(parses(with(4, 1, 4)));                 // version 1
  CHECK_FALSE(parses(with(8, uint64_t(1) << 60, 8))); // tensor count
  CHECK_FALSE(parses(with(16, ~uint64_t(0), 8)));     // metadata count
  check_error([] { (void)rlx::gguf::load("/nonexistent/x.gguf"); }, ErrorKind::Io, "cannot open");
}

} // namespace
