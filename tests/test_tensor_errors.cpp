// tests/test_tensor_errors.cpp -- frontend errors name the op, the shapes and the user's line.
#include "support/check_error.hpp"

#include <rlx/all.hpp>

#include <doctest/doctest.h>

using rlx::ErrorKind;
using rlx::Tensor;
using rlx::ir::DType;

namespace {

/// Check that f throws kind with `needle` and that the message names the line of the call
/// (the failing expression is written on that line, inside f).
template <class F>
void check_at(F&& f, ErrorKind kind, const std::string& needle, rlx::Loc at = rlx::Loc::current()) {
  std::string msg = rlx::test::check_error(std::forward<F>(f), kind, needle);
  INFO("message: " << msg);
  CHECK(msg.find("test_tensor_errors.cpp:" + std::to_string(at.line())) != std::string::npos);
}

} // namespace

TEST_CASE("errors: matmul with mismatched contracting dims names both shapes and the line") {
  Tensor a = rlx::ones({2, 3}), b = rlx::ones({4, 5});
  check_at([&] { (void)rlx::matmul(a, b); }, ErrorKind::Shape,
           "matmul: contracting dims differ: f32[2,3] @ f32[4,5] (3 != 4)");
  check_at([&] { (void)a.matmul(b); }, ErrorKind::Shape, "f32[2,3] @ f32[4,5]");
}

TEST_CASE("errors: operators that do not broadcast name the op, the shapes and the line") {
  Tensor a = rlx::ones({4, 15, 384}), b = rlx::ones({4, 15, 383});
  check_at([&] { (void)(a + b); }, ErrorKind::Shape, "f32[4,15,384]");
  check_at([&] { (void)(a * b); }, ErrorKind::Shape, "mul");
  check_at([&] { (void)(a < b); }, ErrorKind::Shape, "lt");
  check_at([&] { (void)rlx::where(a > 0, a, b); }, ErrorKind::Shape, "where");
}

TEST_CASE("errors: the line of a multi-line expression is where the failing operator starts") {
  Tensor a = rlx::ones({3}), b = rlx::ones({4});
  int line = __LINE__ + 4;
  std::string msg = rlx::test::check_error(
      [&] {
        // clang-format off
        (void)(a * 2
               + b);
        // clang-format on
      },
      ErrorKind::Shape, "add: shapes do not broadcast: f32[3] vs f32[4]");
  // The location is the left operand's (`a * 2` starts on `line`).
  CHECK(msg.find("test_tensor_errors.cpp:" + std::to_string(line)) != std::string::npos);
}

TEST_CASE("errors: axes out of range name the axis, the shape and the line") {
  Tensor t = rlx::ones({2, 3});
  check_at([&] { (void)t.sum(2); }, ErrorKind::Value, "axis 2 is out of range for f32[2,3]");
  check_at([&] { (void)rlx::softmax(t, -3); }, ErrorKind::Value, "softmax");
  check_at([&] { (void)t.transpose(0, 5); }, ErrorKind::Value, "transpose");
  check_at([&] { (void)t.squeeze(0); }, ErrorKind::Shape, "does not have size 1");
  check_at([&] { (void)t.sum({1, -1}); }, ErrorKind::Value, "listed twice");
  check_at([&] { (void)t.index({0, 0, 0}); }, ErrorKind::Value, "3 indices for f32[2,3]");
  // operator[] cannot take a location argument; its message still names index and shape.
  rlx::test::check_error([&] { (void)t[5]; }, ErrorKind::Value,
                         "index 5 is out of range for axis 0 of f32[2,3]");
}

TEST_CASE("errors: reshapes that change the element count name both shapes") {
  Tensor t = rlx::ones({2, 3});
  check_at([&] { (void)t.reshape({4, 2}); }, ErrorKind::Shape, "f32[2,3]");
  check_at([&] { (void)t.reshape({-1, 4}); }, ErrorKind::Shape, "reshape");
}

TEST_CASE("errors: scalars that do not fit the tensor's dtype are rejected") {
  Tensor u = rlx::zeros({2}, DType::U8);
  check_at([&] { (void)(u + 300); }, ErrorKind::Value, "does not fit");
  check_at([&] { (void)(u - (-1)); }, ErrorKind::Value, "u8");
}

TEST_CASE("errors: bad arguments of creation functions name the function") {
  check_at([] { (void)rlx::zeros({2, -1}); }, ErrorKind::Shape, "full: negative size");
  check_at([] { (void)rlx::arange(0, 5, 0); }, ErrorKind::Value, "arange");
  check_at([] { (void)rlx::linspace(0, 1, -2); }, ErrorKind::Value, "linspace");
  check_at([] { (void)rlx::randn({2}, 0, DType::I32); }, ErrorKind::Type, "randn");
}

TEST_CASE("errors: layer arguments that do not fit are reported with shapes") {
  Tensor x = rlx::ones({2, 8});
  check_at([&] { (void)rlx::layer_norm(x, rlx::ones({7}), rlx::zeros({8})); }, ErrorKind::Shape,
           "layer_norm");
  Tensor q = rlx::ones({1, 3, 8});
  check_at([&] { (void)rlx::attention(q, q, q, 3); }, ErrorKind::Shape,
           "does not split into 3 heads");
  Tensor img = rlx::ones({1, 3, 5, 5});
  check_at([&] { (void)rlx::conv2d(img, rlx::ones({4, 2, 3, 3})); }, ErrorKind::Shape, "conv2d");
  check_at([&] { (void)rlx::concat({x, rlx::ones({2, 3, 1})}); }, ErrorKind::Shape, "concat");
  check_at([&] { (void)rlx::stack({x, rlx::ones({2, 7})}); }, ErrorKind::Shape,
           "stack: shapes differ");
  check_at([&] { (void)rlx::split(x, {3, 3}, 1); }, ErrorKind::Shape, "sizes sum to 6");
}
