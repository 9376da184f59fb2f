// tests/test_dtype_shape.cpp -- DType facts, Dim/Shape printing and arithmetic, DimBinding.
#include "support/check_error.hpp"

#include <rlx/all.hpp>

using namespace rlx;
using namespace rlx::ir;

TEST_CASE("dtype: sizes and names match RLX's table") {
  CHECK(size_bytes(DType::F32) == 4);
  CHECK(size_bytes(DType::F16) == 2);
  CHECK(size_bytes(DType::BF16) == 2);
  CHECK(size_bytes(DType::F64) == 8);
  CHECK(size_bytes(DType::I8) == 1);
  CHECK(size_bytes(DType::I16) == 2);
  CHECK(size_bytes(DType::I32) == 4);
  CHECK(size_bytes(DType::I64) == 8);
  CHECK(size_bytes(DType::U8) == 1);
  CHECK(size_bytes(DType::U32) == 4);
  CHECK(size_bytes(DType::Bool) == 1);
  CHECK(size_bytes(DType::C64) == 8);
  CHECK(kNumDTypes == 12);
  for (std::size_t i = 0; i < kNumDTypes; ++i) {
    DType t = static_cast<DType>(i);
    CHECK(parse_dtype(dtype_name(t)) == t);
  }
  CHECK_FALSE(parse_dtype("float32").has_value());
}

TEST_CASE("dtype: predicates classify every type") {
  CHECK(is_float(DType::BF16));
  CHECK_FALSE(is_float(DType::C64));
  CHECK(is_complex(DType::C64));
  CHECK(is_int(DType::U32));
  CHECK_FALSE(is_signed(DType::U8));
  CHECK(is_signed(DType::I8));
  CHECK_FALSE(is_int(DType::Bool));
  CHECK(is_bool(DType::Bool));
}

TEST_CASE("dtype: promotion follows the numpy-like rules") {
  CHECK(promote(DType::F32, DType::F32) == DType::F32);
  CHECK(promote(DType::F16, DType::BF16) == DType::F32);
  CHECK(promote(DType::I32, DType::F32) == DType::F32);
  CHECK(promote(DType::I64, DType::F32) == DType::F64);
  CHECK(promote(DType::I8, DType::F16) == DType::F32);
  CHECK(promote(DType::F32, DType::F64) == DType::F64);
  CHECK(promote(DType::I32, DType::I64) == DType::I64);
  CHECK(promote(DType::U8, DType::I8) == DType::I16);
  CHECK(promote(DType::U32, DType::I32) == DType::I64);
  CHECK(promote(DType::Bool, DType::I32) == DType::I32);
  CHECK(promote(DType::F32, DType::C64) == DType::C64);
  // Symmetric for every pair.
  for (std::size_t i = 0; i < kNumDTypes; ++i)
    for (std::size_t j = 0; j < kNumDTypes; ++j)
      CHECK(promote(DType(i), DType(j)) == promote(DType(j), DType(i)));
}

TEST_CASE("shape: prints in IR form and in error form") {
  Shape s({4, 15, 384}, DType::F32);
  CHECK(to_string(s) == "[4, 15, 384] f32");
  CHECK(short_str(s) == "f32[4,15,384]");
  CHECK(to_string(Shape::scalar(DType::I64)) == "[] i64");
  Shape d({Dim::dynamic(sym::kBatch), Dim::dynamic(sym::kSeq), 384}, DType::BF16);
  CHECK(to_string(d) == "[?batch, ?seq, 384] bf16");
  CHECK(short_str(d) == "bf16[?batch,?seq,384]");
}

TEST_CASE("shape: element counts, bytes and dynamic symbols") {
  Shape s({4, 15, 384}, DType::F16);
  CHECK(s.num_elements() == 4 * 15 * 384);
  CHECK(s.size_bytes() == 4 * 15 * 384 * 2);
  CHECK(s.is_static());
  CHECK(s.dim(-1) == Dim(384));
  CHECK(Shape::scalar(DType::F32).num_elements() == 1);
  CHECK(Shape({0, 7}, DType::F32).num_elements() == 0);
  Shape d({Dim::dynamic(sym::kSeq), Dim::dynamic(sym::kBatch), Dim::dynamic(sym::kSeq)},
          DType::F32);
  CHECK_FALSE(d.num_elements().has_value());
  CHECK(d.dynamic_symbols() == std::vector<uint32_t>{sym::kBatch, sym::kSeq});
  CHECK(d.bind(DimBinding::batch_seq(2, 5)) == Shape({5, 2, 5}, DType::F32));
}

TEST_CASE("shape: named symbols are interned once per process") {
  uint32_t a = symbol_id("tokens_test_sym");
  CHECK(symbol_id("tokens_test_sym") == a);
  CHECK(symbol_name(a) == "tokens_test_sym");
  CHECK(Dim::dynamic("tokens_test_sym") == Dim::dynamic(a));
  CHECK(symbol_id("batch") == sym::kBatch);
  CHECK(to_string(Dim::dynamic(uint32_t(900000))) == "?900000");
}

TEST_CASE("shape: bad dimensions are user errors") {
  test::check_error(
      [] {
        Dim d(-1);
        (void)d;
      },
      ErrorKind::Value, "must be >= 0");
  test::check_error(
      [] {
        Dim d(int64_t(1) << 50);
        (void)d;
      },
      ErrorKind::Value, "too large");
  test::check_error([] { (void)symbol_id(""); }, ErrorKind::Value, "must not be empty");
  CHECK_THROWS_AS(Shape({1 << 20, 1 << 20, 1 << 20, 1 << 20}, DType::F32).num_elements(), Error);
}

TEST_CASE("dim binding: batch_seq also binds rows") {
  DimBinding b = DimBinding::batch_seq(3, 7);
  CHECK(b.get(sym::kBatch) == 3);
  CHECK(b.get(sym::kSeq) == 7);
  CHECK(b.get(sym::kRows) == 21);
  CHECK_FALSE(b.get(sym::kPastSeq).has_value());
  CHECK(b.len() == 3);
  DimBinding c;
  c.set("seq", 7).set(sym::kBatch, 3).set(sym::kRows, 21);
  CHECK(b == c);
  test::check_error([] { DimBinding().set(sym::kBatch, -2); }, ErrorKind::Bind, "out of range");
}
